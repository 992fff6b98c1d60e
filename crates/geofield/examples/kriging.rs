//! Ordinary kriging of scattered samples onto a grid, with the variance, using the library alone.
//!
//! `cargo run --release -p geofield --example kriging`

use geofield::kriging::{self, KrigeParams, Model, SampleSet, Target, Variogram};
use geofield::{BackendChoice, backend};
use geofield_core::{Extent, GridSpec};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let be = backend::select(BackendChoice::Auto)?.backend;
    // Five wells with one surface each (values in metres).
    let set = SampleSet::new(
        vec![15.0, 75.0, 25.0, 85.0, 55.0],
        vec![85.0, 75.0, 25.0, 15.0, 45.0],
        vec![vec![10.0, 12.5, 9.0, 11.0, 10.5]],
    );
    // Exponential model, partial sill 2 m², practical range 60 m, no nugget.
    let vg = Variogram::new(Model::Exponential, 2.0, 60.0, 0.0)?;
    let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 100.0, 100.0)?, 10.0)?;
    // Ordinary global kriging (the default options), with the variance.
    let params = KrigeParams {
        variance: true,
        ..KrigeParams::new(vg, Target::Grid(grid))
    };
    let kriged = kriging::krige(&be, &set, &params)?;
    let pred = &kriged.prediction;
    let var = pred.variance.as_ref().map(|v| &v[0]);
    for row in 0..grid.rows {
        let line: Vec<String> = (0..grid.cols)
            .map(|c| format!("{:5.2}", pred.values[0][row * grid.cols + c]))
            .collect();
        println!("{}", line.join(" "));
    }
    if let Some(v) = var {
        let max = v.iter().copied().fold(0.0f64, f64::max);
        println!("largest kriging variance {max:.3} m²");
    }
    Ok(())
}
