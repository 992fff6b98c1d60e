//! `geofield.forest.simulate`: the yearly forest loop from a stem map and a species file, or from
//! a SORTIE-ND parameter file, as `geofield forest` runs it (the same defaults and checks; the
//! model is the library's [`geofield::forest`]).

use std::path::Path;
use std::time::Instant;

use geofield::dispersal::{DisperseOptions, Method, Precision, Stand};
use geofield::forest::experiment::{self, RunId};
use geofield::forest::output::{CountsRow, DensityStack, rows_of};
use geofield::forest::params::ForestParams;
use geofield::forest::simulate::{DispersalMode, SimulateOptions, Timing};
use geofield::forest::trees::Trees;
use geofield_core::{Extent, GridSpec};
use numpy::{PyArray1, PyArrayMethods, PyReadonlyArray1};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::backend::open;
use crate::errors;
use crate::interrupt::run_interruptible;

/// The stem map as Python hands it over: x, y, DBH and species indices.
type TreeArrays<'py> = (
    PyReadonlyArray1<'py, f64>,
    PyReadonlyArray1<'py, f64>,
    PyReadonlyArray1<'py, f64>,
    PyReadonlyArray1<'py, u32>,
);

const METHODS: [Method; 5] = [
    Method::Auto,
    Method::Exact,
    Method::Multires,
    Method::Cutoff,
    Method::NearFar,
];

/// The dispersal method called `s` (the library's names), or an error naming `arg`.
fn method(arg: &str, s: &str) -> PyResult<Method> {
    METHODS.into_iter().find(|m| m.name() == s).ok_or_else(|| {
        let names: Vec<String> = METHODS.iter().map(|m| format!("'{}'", m.name())).collect();
        errors::arg(arg, format!("{s:?} is not one of {}", names.join(", ")))
    })
}

fn mode(s: &str) -> PyResult<DispersalMode> {
    match s {
        "expected" => Ok(DispersalMode::Expected),
        "per-seed" | "per_seed" => Ok(DispersalMode::PerSeed),
        _ => Err(errors::arg(
            "dispersal",
            format!("{s:?} is not one of 'expected', 'per-seed'"),
        )),
    }
}

/// `auto` is `geofield forest`'s default, f32 (the only precision of the GPU's kernels).
fn precision(s: &str) -> PyResult<Precision> {
    Ok(crate::dispersal::precision(s)?.unwrap_or(Precision::F32))
}

/// Where the run's species come from: a species file's text or a SORTIE-ND file's.
enum Source<'a> {
    Species(&'a str),
    Sortie(&'a str),
}

fn source<'a>(species_toml: Option<&'a str>, sortie_xml: Option<&'a str>) -> PyResult<Source<'a>> {
    match (species_toml, sortie_xml) {
        (Some(t), None) => Ok(Source::Species(t)),
        (None, Some(x)) => Ok(Source::Sortie(x)),
        (Some(_), Some(_)) => Err(errors::arg(
            "sortie",
            "give species or sortie, not both (a SORTIE-ND file carries its species)",
        )),
        (None, None) => Err(errors::arg(
            "species",
            "give a species file (a path, TOML text or a dict), or sortie=",
        )),
    }
}

/// The species names of a species file or a SORTIE-ND file (parsed and checked by the
/// library), for the Python layer to turn tree species names into indices.
#[pyfunction]
#[pyo3(signature = (species_toml, sortie_xml, source_name, ignore_unsupported))]
pub fn forest_species_names(
    species_toml: Option<&str>,
    sortie_xml: Option<&str>,
    source_name: &str,
    ignore_unsupported: bool,
) -> PyResult<Vec<String>> {
    let path = Path::new(source_name);
    let params = match source(species_toml, sortie_xml)? {
        Source::Species(t) => geofield::forest::species_file::parse_forest_species(t, path),
        Source::Sortie(x) => {
            geofield::forest::sortie::parse_sortie(x, path, ignore_unsupported).map(|r| r.params)
        }
    }
    .map_err(errors::input)?;
    Ok(names(&params))
}

fn names(params: &ForestParams) -> Vec<String> {
    params
        .species
        .iter()
        .map(|s| s.name().to_string())
        .collect()
}

/// What the run starts from (`geofield forest`'s setup).
struct Setup {
    params: ForestParams,
    stand: Stand,
    extent: Extent,
    years: i64,
    seed: u64,
    notes: Vec<String>,
}

fn extent_of(e: (f64, f64, f64, f64)) -> PyResult<Extent> {
    Extent::new(e.0, e.1, e.2, e.3).map_err(|e| errors::arg("extent", e))
}

#[allow(clippy::too_many_arguments)]
fn setup(
    from: Source<'_>,
    source_name: &str,
    ignore_unsupported: bool,
    stand: Option<Stand>,
    extent: Option<(f64, f64, f64, f64)>,
    years: Option<i64>,
    seed: Option<u64>,
    torus: bool,
) -> PyResult<Setup> {
    let path = Path::new(source_name);
    let extent = extent.map(extent_of).transpose()?;
    match from {
        Source::Sortie(xml) => {
            let run = geofield::forest::sortie::parse_sortie(xml, path, ignore_unsupported)
                .map_err(errors::input)?;
            let extent = match extent {
                Some(e) => e,
                None => Extent::new(0.0, 0.0, run.plot_len_x_m, run.plot_len_y_m).map_err(|e| {
                    errors::arg("sortie", format!("the plot of the SORTIE-ND file: {e}"))
                })?,
            };
            let mut notes = run.mapping.clone();
            if !run.unsupported.is_empty() {
                notes.push(format!(
                    "not modelled (ignore_unsupported=True): {}",
                    run.unsupported.join(", ")
                ));
            }
            let mut params = run.params;
            params.torus |= torus;
            Ok(Setup {
                params,
                stand: stand.unwrap_or(run.stand),
                extent,
                years: years.or(run.years.map(i64::from)).unwrap_or(30),
                seed: seed.or(run.seed).unwrap_or(1),
                notes,
            })
        }
        Source::Species(text) => {
            let Some(stand) = stand else {
                return Err(errors::arg(
                    "trees",
                    "give the initial stem map (or sortie=, whose tree map is the default)",
                ));
            };
            let Some(extent) = extent else {
                return Err(errors::arg(
                    "extent",
                    "give (x_min, y_min, x_max, y_max), the plot",
                ));
            };
            let mut params = geofield::forest::species_file::parse_forest_species(text, path)
                .map_err(errors::input)?;
            params.torus |= torus;
            Ok(Setup {
                params,
                stand,
                extent,
                years: years.unwrap_or(30),
                seed: seed.unwrap_or(1),
                notes: Vec::new(),
            })
        }
    }
}

/// Run cells per density cell: `density_cell_m` must be a whole multiple of the cell size.
fn density_k(density_cell_m: Option<f64>, cell_size_m: f64) -> PyResult<usize> {
    let Some(c) = density_cell_m else {
        return Ok(1);
    };
    let k = (c / cell_size_m).round();
    if !(c.is_finite() && k >= 1.0 && (k * cell_size_m - c).abs() <= 1e-9 * c) {
        return Err(errors::arg(
            "density_cell_m",
            format!("{c} must be a whole multiple of cell_size_m {cell_size_m}"),
        ));
    }
    Ok(k as usize)
}

/// Everything a run hands back from the worker thread.
struct Outcome {
    finals: Vec<Trees>,
    timing: Timing,
    rows: Vec<CountsRow>,
    recruits: Vec<Vec<u64>>,
    labels: Vec<String>,
    density: DensityStack,
    run_s: f64,
}

/// The native half of `geofield.forest.simulate`: the Python layer has turned the trees into
/// contiguous arrays (species as indices) and the species into TOML text or the SORTIE-ND file
/// into XML text (`source_name` names where it came from, for error messages). Returns a dict:
/// the counts table's columns, the densities (time, species, y, x; row 0 north) and their grid,
/// the final trees of replicate 0 of the first method, and the run's labels, notes and timing.
/// Interruptible (Ctrl-C); `progress` is called with the fraction of the years done.
#[pyfunction]
#[pyo3(signature = (*, trees, species_toml, sortie_xml, source_name, ignore_unsupported, extent, cell_size_m, years, seed, dispersal, method_name, tolerance, replicates, compare, torus, precision_name, backend, density_cell_m, suitability = None, suitability_path = None, progress = None))]
#[allow(clippy::too_many_arguments)]
pub fn forest<'py>(
    py: Python<'py>,
    trees: Option<TreeArrays<'py>>,
    species_toml: Option<&str>,
    sortie_xml: Option<&str>,
    source_name: &str,
    ignore_unsupported: bool,
    extent: Option<(f64, f64, f64, f64)>,
    cell_size_m: f64,
    years: Option<i64>,
    seed: Option<u64>,
    dispersal: &str,
    method_name: &str,
    tolerance: f64,
    replicates: i64,
    compare: Option<Vec<String>>,
    torus: bool,
    precision_name: &str,
    backend: &str,
    density_cell_m: Option<f64>,
    suitability: Option<numpy::PyReadonlyArray1<'py, f64>>,
    suitability_path: Option<&str>,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    // The checks of `geofield forest`, in its order.
    if !(tolerance.is_finite() && tolerance > 0.0 && tolerance < 1.0) {
        return Err(errors::arg(
            "tolerance",
            format!("must be a number in (0, 1), got {tolerance}"),
        ));
    }
    if !(1..=100_000).contains(&replicates) {
        return Err(errors::arg(
            "replicates",
            format!("must be between 1 and 100000, got {replicates}"),
        ));
    }
    let replicates = replicates as u32;
    let mode = mode(dispersal)?;
    let methods: Vec<Method> = match &compare {
        None => vec![method("method", method_name)?],
        Some(c) => {
            if c.len() != 2 {
                return Err(errors::arg(
                    "compare",
                    format!(
                        "takes two methods, the reference first (e.g. ('exact', 'multires')), \
                         got {}",
                        c.len()
                    ),
                ));
            }
            if mode == DispersalMode::PerSeed {
                return Err(errors::arg(
                    "compare",
                    "compares dispersal methods of the expected maps: leave dispersal='expected'",
                ));
            }
            if c[0] == c[1] {
                return Err(errors::arg(
                    "compare",
                    "needs two different methods, e.g. ('exact', 'multires')",
                ));
            }
            c.iter()
                .map(|m| method("compare", m))
                .collect::<PyResult<_>>()?
        }
    };
    let precision = precision(precision_name)?;
    let from = source(species_toml, sortie_xml)?;
    let stand = match &trees {
        Some((x, y, d, s)) => Some(
            Stand::new(
                x.as_slice()?.to_vec(),
                y.as_slice()?.to_vec(),
                d.as_slice()?.to_vec(),
                s.as_slice()?.to_vec(),
            )
            .map_err(|e| errors::arg("trees", e))?,
        ),
        None => None,
    };
    let s = setup(
        from,
        source_name,
        ignore_unsupported,
        stand,
        extent,
        years,
        seed,
        torus,
    )?;
    if !(1..=100_000).contains(&s.years) {
        return Err(errors::arg(
            "years",
            format!("must be between 1 and 100000, got {}", s.years),
        ));
    }
    let n_years = s.years as u32;
    let grid =
        GridSpec::from_extent(s.extent, cell_size_m).map_err(|e| errors::arg("cell_size_m", e))?;
    let k = density_k(density_cell_m, cell_size_m)?;
    let names = names(&s.params);
    let density = DensityStack::new(&grid, k, names.clone(), n_years as usize + 1)
        .map_err(|e| errors::arg("density_cell_m", e))?;
    let trees =
        Trees::from_stand(&s.stand, s.params.species.len()).map_err(|e| errors::arg("trees", e))?;
    let suitability = match (suitability, suitability_path) {
        (Some(v), _) => {
            let v = v.as_slice()?.to_vec();
            if v.len() != grid.n_cells() {
                return Err(errors::arg(
                    "suitability",
                    format!(
                        "{} values for a grid of {} x {} cells",
                        v.len(),
                        grid.rows,
                        grid.cols
                    ),
                ));
            }
            Some(
                geofield::forest::suitability::suitability_values(v, grid.cols)
                    .map_err(|e| errors::arg("suitability", e))?,
            )
        }
        (None, Some(p)) => Some(
            geofield::forest::suitability::read_suitability(std::path::Path::new(p), &grid)
                .map_err(errors::input)?,
        ),
        (None, None) => None,
    };
    let sel = open(backend)?;
    let be = sel.backend.clone();
    let opts = SimulateOptions {
        years: n_years,
        seed: s.seed,
        mode,
        dispersal: DisperseOptions {
            method: methods[0],
            tolerance,
            precision,
            torus: s.params.torus,
            multires_variant_b: false,
        },
        suitability,
    };
    let total_years = (u64::from(replicates) * methods.len() as u64 * u64::from(n_years)) as f64;
    let params = &s.params;
    let out = run_interruptible(py, progress.as_ref(), |cancel, sink| {
        let mut rows: Vec<CountsRow> = Vec::new();
        // Recruits (all species) per method and year, summed over replicates.
        let mut recruits = vec![vec![0u64; n_years as usize + 1]; methods.len()];
        let mut labels = vec![String::new(); methods.len()];
        let mut density = density;
        let mut done = 0u64;
        let t = Instant::now();
        let (finals, timing) = experiment::run(
            &be,
            &grid,
            params,
            &trees,
            &opts,
            &methods,
            replicates,
            cancel,
            &mut |id: RunId, y| {
                if !y.methods.is_empty() && labels[id.method].is_empty() {
                    let mut m = y.methods.clone();
                    m.dedup();
                    labels[id.method] = m.join("/");
                }
                let label = if mode == DispersalMode::PerSeed {
                    "per-seed"
                } else {
                    methods[id.method].name()
                };
                rows.extend(rows_of(y, &names, id.replicate, label));
                recruits[id.method][y.year as usize] +=
                    y.species.iter().map(|x| x.recruits).sum::<u64>();
                if id.method == 0 && id.replicate == 0 {
                    density.push(y, params)?;
                }
                if y.year > 0 {
                    done += 1;
                    sink.set(done as f64 / total_years);
                }
                Ok(())
            },
        )?;
        Ok(Outcome {
            finals,
            timing,
            rows,
            recruits,
            labels,
            density,
            run_s: t.elapsed().as_secs_f64(),
        })
    })?;
    let Outcome {
        finals,
        timing,
        mut rows,
        recruits,
        labels,
        density,
        run_s,
    } = out;
    if let Some(p) = density.problem() {
        return Err(errors::raise(
            errors::Class::Runtime,
            format!("the densities: {p} (a bug in geofield: please report it)"),
        ));
    }
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
    let d = PyDict::new(py);
    counts_columns(py, &d, &rows)?;
    density_arrays(py, &d, &density, &grid)?;
    if let Some(fin) = finals.first() {
        let f = PyDict::new(py);
        f.set_item("x_m", PyArray1::from_slice(py, &fin.x_m))?;
        f.set_item("y_m", PyArray1::from_slice(py, &fin.y_m))?;
        f.set_item("dbh_cm", PyArray1::from_slice(py, &fin.dbh_cm))?;
        f.set_item("species", PyArray1::from_slice(py, &fin.species))?;
        d.set_item("final_trees", f)?;
    }
    d.set_item("names", names)?;
    d.set_item("backend", be.label())?;
    d.set_item("mode", mode.name())?;
    d.set_item("methods", labels)?;
    d.set_item("years", n_years)?;
    d.set_item("seed", s.seed)?;
    d.set_item("replicates", replicates)?;
    d.set_item("torus", s.params.torus)?;
    d.set_item(
        "extent",
        (
            s.extent.x_min_m,
            s.extent.y_min_m,
            s.extent.x_max_m,
            s.extent.y_max_m,
        ),
    )?;
    d.set_item("notes", s.notes)?;
    let t = PyDict::new(py);
    t.set_item("dispersal_s", timing.dispersal_s)?;
    t.set_item("counts_s", timing.counts_s)?;
    t.set_item("establishment_s", timing.establishment_s)?;
    t.set_item("demography_s", timing.demography_s)?;
    t.set_item("run_s", run_s)?;
    d.set_item("timing", t)?;
    if methods.len() == 2 {
        d.set_item(
            "recruit_difference",
            experiment::recruit_differences(&recruits[0], &recruits[1]),
        )?;
    }
    Ok(d)
}

/// The counts table as columns (the CLI's counts.csv: one row per year, replicate, species and
/// method, in run order).
fn counts_columns(py: Python<'_>, d: &Bound<'_, PyDict>, rows: &[CountsRow]) -> PyResult<()> {
    let int = |f: fn(&CountsRow) -> u64| -> Vec<u64> { rows.iter().map(f).collect() };
    d.set_item("year", PyArray1::from_vec(py, int(|r| u64::from(r.year))))?;
    d.set_item(
        "replicate",
        PyArray1::from_vec(py, int(|r| u64::from(r.replicate))),
    )?;
    let species: Vec<&str> = rows.iter().map(|r| r.species.as_str()).collect();
    d.set_item("species", species)?;
    d.set_item("seeds", PyArray1::from_vec(py, int(|r| r.seeds)))?;
    d.set_item("seedlings", PyArray1::from_vec(py, int(|r| r.seedlings)))?;
    d.set_item("saplings", PyArray1::from_vec(py, int(|r| r.saplings)))?;
    d.set_item("adults", PyArray1::from_vec(py, int(|r| r.adults)))?;
    d.set_item("recruits", PyArray1::from_vec(py, int(|r| r.recruits)))?;
    let ba: Vec<f64> = rows.iter().map(|r| r.basal_area_m2_per_ha).collect();
    d.set_item("basal_area_m2_ha", PyArray1::from_vec(py, ba))?;
    let method: Vec<&str> = rows.iter().map(|r| r.method.as_str()).collect();
    d.set_item("method", method)?;
    Ok(())
}

/// The seed and seedling densities as (time, species, y, x) arrays with row 0 north (the stack
/// keeps rows from the south), their years and their grid `(x_min, y_max, cell, rows, cols)`
/// (blocks from the run grid's north-west corner).
fn density_arrays(
    py: Python<'_>,
    d: &Bound<'_, PyDict>,
    stack: &DensityStack,
    run: &GridSpec,
) -> PyResult<()> {
    let (cols, rows) = stack.shape();
    let (n_t, n_s) = (stack.years().len(), stack.species().len());
    let north_first = |plane: fn(&DensityStack, usize, usize) -> Option<&[f32]>| {
        let mut v = Vec::with_capacity(n_t * n_s * rows * cols);
        for t in 0..n_t {
            for s in 0..n_s {
                if let Some(p) = plane(stack, t, s) {
                    for row in p.chunks_exact(cols.max(1)).rev() {
                        v.extend_from_slice(row);
                    }
                }
            }
        }
        v
    };
    let shape = [n_t, n_s, rows, cols];
    let seed = north_first(DensityStack::seed_density);
    let seedling = north_first(DensityStack::seedling_density);
    d.set_item("seed_density", PyArray1::from_vec(py, seed).reshape(shape)?)?;
    d.set_item(
        "seedling_density",
        PyArray1::from_vec(py, seedling).reshape(shape)?,
    )?;
    d.set_item("time", stack.years().to_vec())?;
    d.set_item(
        "density_grid",
        (run.x_min_m, run.y_max_m, stack.cell_size_m(), rows, cols),
    )?;
    Ok(())
}
