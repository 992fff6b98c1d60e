//! `geofield krige --simulate N`: conditional Gaussian simulation with the kriging's samples,
//! variogram and options ([`geofield::kriging::simulate`]); --out receives the N realisations,
//! --png the first one, --json a summary.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, bail};
use geofield::BackendSelection;
use geofield::kriging::io::{write_map, write_simulations_nc};
use geofield::kriging::{self, KrigeOptions, KrigeParams, SampleSet, SimParams, SurfaceFit};
use geofield::kriging::{Simulated, Variogram};
use geofield_core::{Raster, RasterData};
use geofield_io::Colormap;

use crate::cmd_krige::KrigeArgs;
use crate::ctx::Ctx;
use crate::outputs::Outputs;
use crate::{krige_in, krige_out, output, progress};

/// What the kriging's preparation gave.
pub(crate) struct Job<'a> {
    pub sel: &'a BackendSelection,
    pub set: &'a SampleSet,
    pub params: &'a KrigeParams,
    pub fits: Vec<SurfaceFit>,
    pub crs: Option<u16>,
    pub start: Instant,
}

#[derive(serde::Serialize)]
struct Summary {
    command: &'static str,
    version: &'static str,
    samples: String,
    sample_rows: usize,
    variable: String,
    simulation: SimParams,
    cols: usize,
    rows: usize,
    cell_size_m: f64,
    backend: String,
    device: String,
    backend_fallback_reason: Option<String>,
    evaluated: String,
    options: KrigeOptions,
    variograms: Vec<Variogram>,
    fits: Vec<SurfaceFit>,
    seconds_unconditional: f64,
    seconds_conditioning: f64,
    device_seconds: Option<f64>,
    /// Reading the samples, fitting, opening the backend.
    seconds_prepare: f64,
    seconds_simulation: f64,
    seconds_total: f64,
    outputs: Vec<String>,
}

pub(crate) fn run(
    a: &KrigeArgs,
    ctx: &Ctx,
    n: usize,
    job: Job<'_>,
    mut outs: Outputs,
) -> Result<()> {
    let Job {
        sel,
        set,
        params,
        fits,
        crs,
        start,
    } = job;
    if set.surfaces.len() != 1 {
        bail!(
            "--simulate takes one value column; --values names {}",
            set.surfaces.len()
        );
    }
    let sim = SimParams {
        realisations: n,
        seed: a.seed.unwrap_or(0),
        modes: a.modes.unwrap_or(1000),
    };
    let be = &sel.backend;
    let pb = progress::bar(1000, ctx.quiet(), "simulating");
    let began = Instant::now();
    let progress = |f: f64| pb.set_position((f * 1000.0) as u64);
    let s =
        kriging::simulate_with_progress(be, set, params, &sim, &progress, &geofield::Cancel::new());
    pb.finish_and_clear();
    let s = s.map_err(|e| krige_in::krige_error(e, a))?;
    let done = Instant::now();
    let grid = s
        .grid
        .ok_or_else(|| anyhow::anyhow!("the simulation has no grid"))?;
    println!(
        "{} realisations of {} x {} = {} nodes of {} m from {} samples; backend {} ({}), {}; \
         unconditional fields {:.3} s, conditioning (kriging) {:.3} s",
        n,
        grid.cols,
        grid.rows,
        grid.n_cells(),
        grid.cell_size_m,
        set.len(),
        be.label(),
        be.device_name(),
        s.evaluated,
        s.seconds_unconditional,
        s.seconds_conditioning
    );
    let units = a.units.clone().unwrap_or_else(|| "unknown".into());
    let variable = set.surfaces[0].name.clone();
    let method = krige_out::provenance(a, &params.variograms);
    let compression = ctx.compression()?;
    let mut written =
        ctx.with_all_cores(|| write(a, &mut outs, &s, set, &units, crs, compression, &method))?;
    if let Some(p) = ctx.json() {
        let summary = Summary {
            command: "krige --simulate",
            version: env!("CARGO_PKG_VERSION"),
            samples: a.samples.display().to_string(),
            sample_rows: set.len(),
            variable,
            simulation: sim,
            cols: grid.cols,
            rows: grid.rows,
            cell_size_m: grid.cell_size_m,
            backend: be.label(),
            device: be.device_name(),
            backend_fallback_reason: sel.fallback_reason.clone(),
            evaluated: s.evaluated.clone(),
            options: params.options,
            variograms: params.variograms.clone(),
            fits,
            seconds_unconditional: s.seconds_unconditional,
            seconds_conditioning: s.seconds_conditioning,
            device_seconds: s.device_seconds,
            seconds_prepare: (began - start).as_secs_f64(),
            seconds_simulation: (done - began).as_secs_f64(),
            seconds_total: start.elapsed().as_secs_f64(),
            outputs: written.iter().map(|p| p.display().to_string()).collect(),
        };
        written.push(outs.write_json(p, &summary)?);
    }
    outs.commit()?;
    println!("wrote {}", output::joined(&written));
    Ok(())
}

/// --out (the realisations) and --png (the first one).
#[allow(clippy::too_many_arguments)]
fn write(
    a: &KrigeArgs,
    outs: &mut Outputs,
    s: &Simulated,
    set: &SampleSet,
    units: &str,
    crs: Option<u16>,
    compression: geofield_io::geotiff::Compression,
    method: &[(&str, String)],
) -> Result<Vec<PathBuf>> {
    let local = a.neighbors.is_some();
    let nc = a
        .out
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("nc"));
    let mut written = if nc {
        let prov = output::provenance(method);
        let variable = &set.surfaces[0].name;
        vec![outs.write_one(&a.out, |p| {
            Ok(write_simulations_nc(p, s, variable, units, crs, &prov)?)
        })?]
    } else {
        let r = s.to_raster()?;
        outs.write(&a.out, |p| {
            output::write_raster_with(
                p,
                &r,
                units,
                "conditional simulation",
                (crs, compression),
                method,
                local,
            )
        })?
    };
    if let (Some(p), Some(grid)) = (&a.png, s.grid) {
        let first = s.realisation(0).to_vec();
        let cmap = Colormap::from_name(&a.colormap).unwrap_or(Colormap::Viridis);
        let r = Raster::new(grid, vec!["sim_1".into()], RasterData::F64(first))?;
        let title = format!(
            "conditional simulation 1 of {} (wells marked)",
            s.values.len()
        );
        written.push(outs.write_one(p, |f| Ok(write_map(f, &r, &title, units, set, cmap)?))?);
    }
    Ok(written)
}
