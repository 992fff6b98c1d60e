//! `geofield demo`: every capability on built-in synthetic data of modest size, on the auto
//! backend; writes outputs and PNGs into a folder and prints what it did and how long it took.

mod flock;
mod forest;
mod forest_years;
mod kriging;
mod wind;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;
use geofield::backend;

use crate::ctx::{Ctx, Global};

#[derive(Args)]
pub struct DemoArgs {
    /// Folder for the outputs (created if missing).
    #[arg(long, default_value = "geofield-demo")]
    pub out: PathBuf,
}

/// One line of the closing table: what ran, how long it took, what it gave.
struct Step {
    what: String,
    seconds: f64,
    result: String,
}

impl Step {
    /// A step that started at `t` and ends now.
    fn since(what: &str, t: Instant, result: String) -> Step {
        Step {
            what: what.into(),
            seconds: t.elapsed().as_secs_f64(),
            result,
        }
    }
}

/// The one CRS of every demo output: NAD83 / UTM zone 10N. The demo's coordinates (eastings
/// from 500 000 m, northings from 6 000 000 m) lie on the zone's central meridian (123 W) at
/// about 54 N, in British Columbia's sub-boreal spruce zone that the synthetic stand imitates.
pub const DEMO_CRS: u16 = 26910;

pub fn run(a: &DemoArgs, ctx: &Ctx) -> Result<()> {
    ctx.refuse_unused(&[Global::Json, Global::Crs, Global::Compress])?;
    std::fs::create_dir_all(&a.out)
        .with_context(|| format!("cannot create folder {}", a.out.display()))?;
    let sel = backend::select(ctx.backend_choice()?)?;
    let be = sel.backend.clone();
    println!(
        "geofield demo: backend {} ({})",
        be.label(),
        be.device_name()
    );
    if let Some(r) = &sel.fallback_reason {
        println!("  (CPU fallback: {r})");
    }
    let mut steps = Vec::new();
    forest::run(&a.out, &be, &mut steps)?;
    flock::run(&a.out, &be, &mut steps)?;
    kriging::run(&a.out, &be, &mut steps)?;
    wind::run(&a.out, &be, &mut steps)?;

    println!("\n{:<24} {:>9}  result", "step", "time (s)");
    for s in &steps {
        println!("{:<24} {:>9.3}  {}", s.what, s.seconds, s.result);
    }
    println!(
        "\noutputs in {}/ (open seeds.tif in QGIS; every output is in EPSG:{DEMO_CRS}, NAD83 / UTM zone 10N)",
        a.out.display()
    );
    Ok(())
}
