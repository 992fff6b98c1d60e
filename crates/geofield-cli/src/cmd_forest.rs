//! `geofield forest`: the yearly forest loop (seed production, dispersal, establishment,
//! growth, mortality) from a stem map and a species file, or from a SORTIE-ND parameter file.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, ValueEnum};
use geofield::dispersal::{DisperseOptions, Method, Precision, Stand};
use geofield::forest::experiment;
use geofield::forest::output::{self as fout, CountsRow, DensityStack, StandFrames};
use geofield::forest::params::ForestParams;
use geofield::forest::simulate::{DispersalMode, SimulateOptions, Timing};
use geofield::forest::split::{Exchange, simulate_split};
use geofield::forest::trees::Trees;
use geofield_core::{Extent, GridSpec};

use crate::cmd_disperse::{MethodArg, PrecisionArg};
use crate::ctx::{Ctx, Global};
use crate::forest_report::{CaseOut, Summary};
use crate::outputs::{Kind, Outputs};
use crate::{inputs, output, progress};

#[derive(Clone, Copy, ValueEnum, PartialEq)]
pub enum ModeArg {
    /// The expected density map (any --method, on the GPU when there is one), then random
    /// counts per cell by each species' seed distribution.
    Expected,
    /// Every seed drawn and placed (SORTIE-ND's spatial disperse; the CPU).
    PerSeed,
}

#[derive(Args)]
pub struct ForestArgs {
    /// Initial stem map CSV (x_m, y_m, dbh_cm, species). With --sortie: replaces the file's
    /// tree map.
    #[arg(long)]
    pub trees: Option<PathBuf>,
    /// Species file (TOML): the dispersal keys of `geofield disperse` plus optional
    /// [species.forest] and [forest] tables (establishment, growth, mortality, gap kernel,
    /// masting, seed rain).
    #[arg(long, conflicts_with = "sortie", required_unless_present = "sortie")]
    pub species: Option<PathBuf>,
    /// A SORTIE-ND parameter file (XML): plot, species, tree map and dispersal behaviours.
    #[arg(long)]
    pub sortie: Option<PathBuf>,
    /// Run a SORTIE-ND file whose behaviours geofield does not model (listed) without them.
    #[arg(long, requires = "sortie")]
    pub ignore_unsupported: bool,
    /// Plot extent XMIN,YMIN,XMAX,YMAX in metres (default with --sortie: the file's plot).
    #[arg(long, allow_hyphen_values = true)]
    pub extent: Option<String>,
    /// Seed-grid cell size in metres.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    pub cell_size_m: f64,
    /// Years to simulate (default with --sortie: timesteps x years per timestep; else 30).
    #[arg(long)]
    pub years: Option<u32>,
    /// Random seed (default with --sortie: the file's; else 1).
    #[arg(long)]
    pub seed: Option<u64>,
    /// How seeds reach their cells.
    #[arg(long, value_enum, default_value = "expected")]
    pub dispersal: ModeArg,
    /// Dispersal method of the expected maps (see `geofield disperse --help`).
    #[arg(long, value_enum, default_value = "auto")]
    pub method: MethodArg,
    /// Cutoff and near/far tolerance: error <= tolerance x map maximum.
    #[arg(long, default_value_t = 1e-6)]
    pub tolerance: f64,
    /// Precision of the maps (the GPU computes f32).
    #[arg(long, value_enum, default_value = "f32")]
    pub precision: PrecisionArg,
    /// Seeds leaving the plot re-enter on the other side (default: the species file's
    /// [forest] torus, or on for SORTIE-ND files, whose plots are tori).
    #[arg(long)]
    pub torus: bool,
    /// Independent replicates (seeds derived from --seed).
    #[arg(long, default_value_t = 1)]
    pub replicates: u32,
    /// Run the same random streams with two methods (the first the reference, e.g.
    /// exact,multires) and print the per-year relative difference of recruits (the seed
    /// paper's Fig. 13).
    #[arg(long, value_delimiter = ',', num_args = 1..)]
    pub compare: Vec<MethodArg>,
    /// Per year, species and replicate: seeds, seedlings, saplings, adults, recruits, basal area.
    #[arg(long)]
    pub counts: Option<PathBuf>,
    /// The final stand (replicate 0, first method) as a stem map CSV.
    #[arg(long)]
    pub stand_out: Option<PathBuf>,
    /// Seed and seedling densities per year and species (CF NetCDF; replicate 0, first method).
    #[arg(long)]
    pub density: Option<PathBuf>,
    /// Cell of the density file in metres (a whole multiple of --cell-size-m; default: the
    /// seed grid's).
    #[arg(long)]
    pub density_cell_m: Option<f64>,
    /// Recruits per year and species (mean over replicates; each method of --compare).
    #[arg(long)]
    pub png: Option<PathBuf>,
    /// The stand through the years (replicate 0, first method).
    #[arg(long)]
    pub gif: Option<PathBuf>,
    /// Establishment suitability: a raster on the seed grid (GeoTIFF or ESRI ASCII) whose values
    /// in [0, 1] multiply every species' establishment probability (nodata: 0).
    #[arg(long)]
    pub suitability: Option<PathBuf>,
    /// Trees of species missing from the species file are an error (default: skipped).
    #[arg(long)]
    pub strict: bool,
}

/// What the run starts from.
struct Setup {
    params: ForestParams,
    stand: Stand,
    extent: Extent,
    years: u32,
    seed: u64,
    inputs_note: Vec<String>,
}

fn setup(a: &ForestArgs) -> Result<Setup> {
    let extent = a.extent.as_deref().map(inputs::parse_extent).transpose()?;
    if let Some(path) = &a.sortie {
        let run = geofield::forest::sortie::read_sortie(path, a.ignore_unsupported)?;
        let extent = match extent {
            Some(e) => e,
            None => Extent::new(0.0, 0.0, run.plot_len_x_m, run.plot_len_y_m)
                .context("the plot of the SORTIE-ND file")?,
        };
        let species: Vec<_> = run
            .params
            .species
            .iter()
            .map(|s| s.canopy.clone())
            .collect();
        let stand = match &a.trees {
            Some(t) => inputs::read_trees(t, &species, &extent, a.strict)?.0,
            None => run.stand.clone(),
        };
        let mut notes = run.mapping.clone();
        if !run.unsupported.is_empty() {
            notes.push(format!(
                "not modelled (--ignore-unsupported): {}",
                run.unsupported.join(", ")
            ));
        }
        let mut params = run.params;
        params.torus |= a.torus;
        return Ok(Setup {
            params,
            stand,
            extent,
            years: a.years.or(run.years).unwrap_or(30),
            seed: a.seed.or(run.seed).unwrap_or(1),
            inputs_note: notes,
        });
    }
    let (Some(species_path), Some(trees)) = (&a.species, &a.trees) else {
        bail!("give --trees and --species, or --sortie");
    };
    let Some(extent) = extent else {
        bail!("give --extent XMIN,YMIN,XMAX,YMAX (the plot)");
    };
    let mut params = geofield::forest::species_file::read_forest_species(species_path)?;
    params.torus |= a.torus;
    let species: Vec<_> = params.species.iter().map(|s| s.canopy.clone()).collect();
    let (stand, report) = inputs::read_trees(trees, &species, &extent, a.strict)?;
    let mut notes = Vec::new();
    if report.unknown_species > 0 || report.outside_extent > 0 {
        notes.push(format!(
            "skipped {} trees of unknown species and {} outside --extent",
            report.unknown_species, report.outside_extent
        ));
    }
    Ok(Setup {
        params,
        stand,
        extent,
        years: a.years.unwrap_or(30),
        seed: a.seed.unwrap_or(1),
        inputs_note: notes,
    })
}

fn method(m: MethodArg) -> Method {
    match m {
        MethodArg::Exact => Method::Exact,
        MethodArg::Multires => Method::Multires,
        MethodArg::Cutoff => Method::Cutoff,
        MethodArg::Nearfar => Method::NearFar,
        MethodArg::Auto => Method::Auto,
    }
}

pub fn run(a: &ForestArgs, ctx: &Ctx) -> Result<()> {
    let start = Instant::now();
    ctx.refuse_unused(&[Global::Compress])?;
    let mut outs = Outputs::new();
    for (flag, p) in [
        ("--trees", &a.trees),
        ("--species", &a.species),
        ("--sortie", &a.sortie),
    ] {
        if let Some(p) = p {
            outs.input(flag, p);
        }
    }
    outs.plan_opt("--counts", a.counts.as_deref(), Kind::File)?;
    outs.plan_opt("--stand-out", a.stand_out.as_deref(), Kind::File)?;
    outs.plan_opt("--density", a.density.as_deref(), Kind::File)?;
    outs.plan_opt("--png", a.png.as_deref(), Kind::File)?;
    outs.plan_opt("--gif", a.gif.as_deref(), Kind::File)?;
    outs.plan_opt("--json", ctx.json(), Kind::File)?;
    if a.density_cell_m.is_some() && a.density.is_none() {
        bail!("--density-cell-m sets the cell of --density: give --density");
    }
    if !(a.tolerance.is_finite() && a.tolerance > 0.0 && a.tolerance < 1.0) {
        bail!(
            "--tolerance must be a number in (0, 1), got {}",
            a.tolerance
        );
    }
    if a.replicates == 0 || a.replicates > 100_000 {
        bail!(
            "--replicates must be between 1 and 100000, got {}",
            a.replicates
        );
    }
    let mode = match a.dispersal {
        ModeArg::Expected => DispersalMode::Expected,
        ModeArg::PerSeed => DispersalMode::PerSeed,
    };
    let methods: Vec<Method> = if a.compare.is_empty() {
        vec![method(a.method)]
    } else {
        if a.compare.len() != 2 {
            bail!("--compare takes two methods, the reference first (e.g. exact,multires)");
        }
        if mode == DispersalMode::PerSeed {
            bail!(
                "--compare compares dispersal methods of the expected maps: leave out --dispersal per-seed"
            );
        }
        if a.compare[0] == a.compare[1] {
            bail!("--compare needs two different methods, e.g. exact,multires");
        }
        a.compare.iter().map(|&m| method(m)).collect()
    };
    let crs = ctx.crs_epsg()?;
    // The backend (a GPU's context takes a tenth of a second or more to start) opens while the
    // inputs are read.
    let (s, sel) = std::thread::scope(|scope| {
        let opening = scope.spawn(|| ctx.open_backend());
        let s = setup(a);
        let sel = opening
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("opening the backend panicked")));
        (s, sel)
    });
    let s = s?;
    let sel = sel?;
    if s.years == 0 || s.years > 100_000 {
        bail!("--years must be between 1 and 100000, got {}", s.years);
    }
    let grid = GridSpec::from_extent(s.extent, a.cell_size_m)
        .context("the seed grid of --extent at cell size --cell-size-m")?;
    let density_k = match a.density_cell_m {
        None => 1,
        Some(c) => {
            let k = (c / a.cell_size_m).round();
            if !(c.is_finite() && k >= 1.0 && (k * a.cell_size_m - c).abs() <= 1e-9 * c) {
                bail!(
                    "--density-cell-m {c} must be a whole multiple of --cell-size-m {}",
                    a.cell_size_m
                );
            }
            k as usize
        }
    };
    let names: Vec<String> = s
        .params
        .species
        .iter()
        .map(|x| x.name().to_string())
        .collect();
    let mut density = match &a.density {
        Some(_) => Some(
            DensityStack::new(&grid, density_k, names.clone(), s.years as usize + 1)
                .context("--density")?,
        ),
        None => None,
    };
    let suitability = match &a.suitability {
        Some(p) => Some(geofield::forest::suitability::read_suitability(p, &grid)?),
        None => None,
    };
    let mut frames = a.gif.as_ref().map(|_| StandFrames::new(&grid, names.len()));
    for n in &s.inputs_note {
        ctx.note(n);
    }
    let be = &sel.backend;
    let precision = match a.precision {
        PrecisionArg::F32 => Precision::F32,
        PrecisionArg::F64 => Precision::F64,
    };
    let trees = Trees::from_stand(&s.stand, s.params.species.len())?;
    let opts = SimulateOptions {
        years: s.years,
        seed: s.seed,
        mode,
        dispersal: DisperseOptions {
            method: methods[0],
            tolerance: a.tolerance,
            precision,
            torus: s.params.torus,
            multires_variant_b: false,
        },
        suitability,
    };
    let n_cases = methods.len() * a.replicates as usize;
    let pb = progress::bar(n_cases as u64 * u64::from(s.years), ctx.quiet(), "years");
    let never = geofield::Cancel::new();
    let mut first_final: Option<Trees> = None;
    let mut last_year = String::new();
    let t = Instant::now();
    let whole_seeds = density.is_some();
    // GEOFIELD_MPI_FAIL=year:Y: the last rank's observer fails in year Y of a stand split
    // over the ranks (how the tests check that one rank's failure ends the whole job).
    let fail_year = std::env::var("GEOFIELD_MPI_FAIL")
        .ok()
        .and_then(|f| f.strip_prefix("year:").and_then(|y| y.parse::<u32>().ok()));
    // One case (a method and a replicate, in `experiment::run`'s order): its counts rows,
    // recruits per year, method label and timing. Case 0 also feeds the density stack and the
    // GIF and keeps its final stand; under MPI it runs on rank 0, which writes the outputs.
    // With `split`, the one case runs split by rows over the ranks (every rank runs it, rank 0
    // writes).
    let mut run_case =
        |c: usize, split: Option<&dyn Exchange>| -> Result<CaseOut, geofield::GeofieldError> {
            let id = experiment::case_id(c, a.replicates);
            let mut out = CaseOut {
                recruits: vec![0; s.years as usize + 1],
                ..CaseOut::default()
            };
            let writer = split.is_none_or(|x| x.part() == 0);
            let failing = split.is_some_and(|x| x.part() + 1 == x.parts());
            let mut on_year = |y: &geofield::forest::simulate::Year<'_>| {
                if !y.methods.is_empty() && out.label.is_empty() {
                    let mut m = y.methods.clone();
                    m.dedup();
                    out.label = m.join("/");
                }
                let label = if mode == DispersalMode::PerSeed {
                    "per-seed"
                } else {
                    methods[id.method].name()
                };
                out.rows
                    .extend(fout::rows_of(y, &names, id.replicate, label));
                out.recruits[y.year as usize] += y.species.iter().map(|x| x.recruits).sum::<u64>();
                if failing && fail_year == Some(y.year) {
                    return Err(geofield::GeofieldError::Invalid(
                        "injected failure (GEOFIELD_MPI_FAIL)".into(),
                    ));
                }
                if c == 0 && writer {
                    if let Some(d) = density.as_mut() {
                        d.push(y, &s.params)?;
                    }
                    if let Some(f) = frames.as_mut() {
                        f.push(y, &s.params)?;
                    }
                }
                if y.year > 0 {
                    pb.inc(1);
                    let n: u64 = y
                        .species
                        .iter()
                        .map(|x| x.seedlings + x.saplings + x.adults)
                        .sum();
                    last_year = format!("year {}: {} trees", y.year, n);
                    pb.set_message(last_year.clone());
                }
                Ok(())
            };
            let (fin, timing) = match split {
                // The whole seeds only where the density stack needs them (gathered every year).
                Some(x) => simulate_split(
                    be,
                    &grid,
                    &s.params,
                    trees.clone(),
                    &opts,
                    x,
                    whole_seeds,
                    &never,
                    &mut on_year,
                )?,
                None => experiment::run_case(
                    be,
                    &grid,
                    &s.params,
                    &trees,
                    &opts,
                    &methods,
                    a.replicates,
                    c,
                    &never,
                    &mut on_year,
                )?,
            };
            out.timing = timing;
            if c == 0 {
                first_final = Some(fin);
            }
            Ok(out)
        };
    let cases: Vec<CaseOut> = {
        #[cfg(feature = "mpi")]
        match ctx.split() {
            // One case in expected mode: the stand split by rows over the ranks.
            Some(r) if n_cases == 1 && mode == DispersalMode::Expected => {
                if std::env::var("GEOFIELD_MPI_FAIL")
                    .ok()
                    .and_then(|f| f.parse::<usize>().ok())
                    == Some(r.rank())
                {
                    bail!("injected failure before the work (GEOFIELD_MPI_FAIL)");
                }
                r.start(Ok(()))?;
                let out = run_case(0, Some(r))?;
                if r.rank() != 0 {
                    pb.finish_and_clear();
                    return Ok(());
                }
                vec![out]
            }
            Some(r) => {
                if n_cases == 1 && r.rank() == 0 {
                    // Printed under -q too: the ranks the user asked for would idle unexplained.
                    eprintln!(
                        "note: per-seed dispersal is not split by rows (every seed of every \
                         parent is drawn wherever it lands): rank 0 runs the one case; spread \
                         --replicates over the ranks"
                    );
                }
                // GEOFIELD_MPI_FAIL=R (rank R fails before the work) or case:C (the rank that
                // runs case C fails there): how the tests check that one rank's failure ends the
                // whole job.
                let inject = std::env::var("GEOFIELD_MPI_FAIL").unwrap_or_default();
                let fail_case = inject
                    .strip_prefix("case:")
                    .and_then(|c| c.parse::<usize>().ok());
                if inject.parse::<usize>().ok() == Some(r.rank()) {
                    bail!("injected failure before the work (GEOFIELD_MPI_FAIL)");
                }
                let got = r.ensemble(n_cases, &mut |c| {
                    if fail_case == Some(c) {
                        return Err(geofield::GeofieldError::Invalid(
                            "injected failure (GEOFIELD_MPI_FAIL)".into(),
                        ));
                    }
                    let out = run_case(c, None)?;
                    serde_json::to_vec(&out).map_err(|e| {
                        geofield::GeofieldError::Invalid(format!("case {c}'s results: {e}"))
                    })
                })?;
                let Some(bytes) = got else {
                    // Rank 0 writes the outputs.
                    pb.finish_and_clear();
                    return Ok(());
                };
                bytes
                    .iter()
                    .map(|b| serde_json::from_slice(b))
                    .collect::<Result<_, _>>()
                    .context("the ranks' results")?
            }
            None => (0..n_cases)
                .map(|c| run_case(c, None))
                .collect::<Result<_, _>>()?,
        }
        #[cfg(not(feature = "mpi"))]
        {
            (0..n_cases)
                .map(|c| run_case(c, None))
                .collect::<Result<_, _>>()?
        }
    };
    // The cases in order, as one process runs them.
    let mut rows: Vec<CountsRow> = Vec::new();
    // Recruits (all species) per method and year, summed over replicates.
    let mut recruits = vec![vec![0u64; s.years as usize + 1]; methods.len()];
    let mut labels = vec![String::new(); methods.len()];
    let mut timing = Timing::default();
    for (c, out) in cases.into_iter().enumerate() {
        let id = experiment::case_id(c, a.replicates);
        rows.extend(out.rows);
        for (sum, r) in recruits[id.method].iter_mut().zip(&out.recruits) {
            *sum += r;
        }
        if labels[id.method].is_empty() {
            labels[id.method] = out.label;
        }
        timing.dispersal_s += out.timing.dispersal_s;
        timing.counts_s += out.timing.counts_s;
        timing.establishment_s += out.timing.establishment_s;
        timing.demography_s += out.timing.demography_s;
    }
    let finals: Vec<Trees> = first_final.into_iter().collect();
    let run_s = t.elapsed().as_secs_f64();
    pb.finish_and_clear();
    // `auto` becomes the method(s) it chose.
    if mode == DispersalMode::Expected {
        for r in rows.iter_mut() {
            if let Some(m) = methods.iter().position(|m| m.name() == r.method)
                && !labels[m].is_empty()
            {
                r.method = labels[m].clone();
            }
        }
    }
    // Outputs.
    let method_desc = format!(
        "forest: {} dispersal, method {}, {} years, seed {}, {} replicate(s)",
        mode.name(),
        labels.join(" vs "),
        s.years,
        s.seed,
        a.replicates
    );
    let provenance = output::provenance(&[("method", method_desc.clone())]);
    let mut written = Vec::new();
    if let Some(p) = &a.counts {
        written.push(outs.write_one(p, |f| Ok(fout::write_counts_csv(f, &rows)?))?);
    }
    if let (Some(p), Some(fin)) = (&a.stand_out, finals.first()) {
        let species: Vec<_> = s.params.species.iter().map(|x| x.canopy.clone()).collect();
        written.push(outs.write_one(p, |f| {
            Ok(geofield::dispersal::io::write_stand(
                f,
                &fin.to_stand(),
                &species,
            )?)
        })?);
    }
    if let (Some(p), Some(d)) = (&a.density, &density) {
        written.push(outs.write_one(p, |f| Ok(fout::write_density_nc(f, d, crs, &provenance)?))?);
    }
    if let Some(p) = &a.png {
        written.push(outs.write_one(p, |f| Ok(fout::write_counts_png(f, &rows, "recruits")?))?);
    }
    if let (Some(p), Some(fr)) = (&a.gif, &frames) {
        written.push(outs.write_one(p, |f| Ok(fr.write_gif(f)?))?);
    }
    let compare =
        (methods.len() == 2).then(|| experiment::recruit_differences(&recruits[0], &recruits[1]));
    let summary = Summary {
        backend: be.label(),
        grid: (grid.cols, grid.rows, grid.cell_size_m),
        species: names.clone(),
        initial_trees: trees.len(),
        years: s.years,
        seed: s.seed,
        replicates: a.replicates,
        mode: mode.name().to_string(),
        methods: labels.clone(),
        final_trees: finals.first().map_or(0, Trees::len),
        recruits_per_year: recruits.clone(),
        recruit_difference_per_year: compare.clone(),
        timing,
        run_s,
        seconds_total: 0.0,
    };
    summary.print(&names, &rows);
    if let Some(p) = ctx.json() {
        let mut summary = summary;
        summary.seconds_total = start.elapsed().as_secs_f64();
        written.push(outs.write_json(p, &summary)?);
    }
    outs.commit()?;
    println!(
        "wrote {} ({:.2} s in all)",
        if written.is_empty() {
            "nothing".to_string()
        } else {
            output::joined(&written)
        },
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
