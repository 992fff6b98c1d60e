//! Synthetic terrain and weather stations for the wind field's tests, demos and benchmarks.
//!
//! Terrain on a grid of `cols × rows` square cells, centred on the domain centre (x_c, y_c),
//! with dx = x − x_c, r² = dx² + dy² (metres), plain elevation b and relief height H:
//!
//! | kind | elevation h(x, y) | width parameter (default) |
//! | --- | --- | --- |
//! | gaussian hill | b + H exp(−r²/2σ²) | σ (an eighth of the shorter side) |
//! | ridge | b + H L²/(dx² + L²), Witch of Agnesi, crest running north–south | L (a tenth of the width) |
//! | valley | b + H (1 − exp(−dx²/2σ²)), axis running north–south | σ (an eighth of the width) |
//! | flat | b | – |
//!
//! The note's linear-theory checks use these shapes: the fractional speed-up over the crest is
//! √(π/8)·H/σ for the hill and H/L for the ridge (notes/wind-field.md §7).
//!
//! Stations: the first stands upwind of the centre, 3/8 of the shorter side away, reporting
//! exactly the given wind; the others are placed uniformly at random in the middle 80 % of the
//! domain, with speed × U(0.9, 1.1) and direction ± U(0, 10)°, from a seeded PCG generator.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64;

use crate::GeofieldError;
use crate::wind::{Stability, Station};
use geofield_core::{GridSpec, Raster, RasterData};

/// Shape of synthetic terrain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TerrainKind {
    GaussianHill,
    Ridge,
    Valley,
    Flat,
}

impl TerrainKind {
    /// The kind's name: `gaussian-hill`, `ridge`, `valley` or `flat`.
    pub fn name(&self) -> &'static str {
        match self {
            TerrainKind::GaussianHill => "gaussian-hill",
            TerrainKind::Ridge => "ridge",
            TerrainKind::Valley => "valley",
            TerrainKind::Flat => "flat",
        }
    }
}

/// Whether `epsg` is a UTM zone (WGS 84, ETRS89 or NAD83 variants), whose valid eastings centre
/// on 500 000 m.
pub fn is_utm(epsg: u16) -> bool {
    matches!(epsg, 32601..=32660 | 32701..=32760 | 25828..=25838 | 26901..=26923 | 3154..=3160)
}

/// The south-west corner of a synthetic DEM `width_m` wide, from the coordinates given: in a
/// UTM zone ([`is_utm`]) a missing easting centres the grid on the zone's central meridian
/// (500 000 m) and a missing northing is 5 000 000 m; otherwise a missing coordinate is 0. The
/// flag is true where a CRS other than UTM is given with neither coordinate: the corner (0, 0)
/// may lie where that CRS is not valid.
pub fn terrain_origin(
    x_min_m: Option<f64>,
    y_min_m: Option<f64>,
    crs_epsg: Option<u16>,
    width_m: f64,
) -> ((f64, f64), bool) {
    match (x_min_m, y_min_m, crs_epsg) {
        (x, y, Some(code)) if is_utm(code) => (
            (
                x.unwrap_or((500_000.0 - 0.5 * width_m).round()),
                y.unwrap_or(5_000_000.0),
            ),
            false,
        ),
        (None, None, Some(_)) => ((0.0, 0.0), true),
        (x, y, _) => ((x.unwrap_or(0.0), y.unwrap_or(0.0)), false),
    }
}

/// A synthetic DEM: the grid and the shape (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct TerrainSpec {
    pub kind: TerrainKind,
    pub cols: usize,
    pub rows: usize,
    pub cell_size_m: f64,
    /// South-west corner of the grid (m).
    pub x_min_m: f64,
    pub y_min_m: f64,
    /// Elevation of the plain (m).
    pub base_m: f64,
    /// Height of the hill or ridge, depth of the valley (m), ≥ 0.
    pub height_m: f64,
    /// σ (hill, valley) or L (ridge) in metres; `None` for the default.
    pub width_m: Option<f64>,
}

impl TerrainSpec {
    /// The grid, row 0 north.
    pub fn grid(&self) -> Result<GridSpec, GeofieldError> {
        let bad = |m: String| Err(GeofieldError::Invalid(m));
        if self.cols == 0 || self.rows == 0 {
            return bad(format!(
                "a terrain needs at least one column and row, got {} x {}",
                self.cols, self.rows
            ));
        }
        if !(self.cell_size_m.is_finite() && self.cell_size_m > 0.0) {
            return bad(format!(
                "the cell size must be a positive number of metres, got {}",
                self.cell_size_m
            ));
        }
        for (name, v) in [
            ("x_min_m", self.x_min_m),
            ("y_min_m", self.y_min_m),
            ("base_m", self.base_m),
        ] {
            if !v.is_finite() {
                return bad(format!("{name} must be a finite number, got {v}"));
            }
        }
        if !(self.height_m.is_finite() && self.height_m >= 0.0) {
            return bad(format!(
                "the relief height must be >= 0 m, got {}",
                self.height_m
            ));
        }
        if let Some(w) = self.width_m
            && !(w.is_finite() && w > 0.0)
        {
            return bad(format!(
                "the width must be a positive number of metres, got {w}"
            ));
        }
        Ok(GridSpec {
            x_min_m: self.x_min_m,
            y_max_m: self.y_min_m + self.rows as f64 * self.cell_size_m,
            cell_size_m: self.cell_size_m,
            cols: self.cols,
            rows: self.rows,
        })
    }

    /// The width parameter in use (σ or L), in metres.
    pub fn width_or_default_m(&self) -> f64 {
        let w = self.cols as f64 * self.cell_size_m;
        let h = self.rows as f64 * self.cell_size_m;
        self.width_m.unwrap_or(match self.kind {
            TerrainKind::GaussianHill => w.min(h) / 8.0,
            TerrainKind::Ridge => w / 10.0,
            TerrainKind::Valley | TerrainKind::Flat => w / 8.0,
        })
    }
}

/// The grid and its elevations (m), `rows * cols`, row 0 north.
pub fn terrain(spec: &TerrainSpec) -> Result<(GridSpec, Vec<f64>), GeofieldError> {
    let grid = spec.grid()?;
    let (xc, yc) = centre(&grid);
    let (b, hh, s) = (spec.base_m, spec.height_m, spec.width_or_default_m());
    let mut z = Vec::with_capacity(grid.n_cells());
    for row in 0..grid.rows {
        for col in 0..grid.cols {
            let (x, y) = grid.cell_centre(row, col);
            let (dx, dy) = (x - xc, y - yc);
            z.push(match spec.kind {
                TerrainKind::GaussianHill => b + hh * (-(dx * dx + dy * dy) / (2.0 * s * s)).exp(),
                TerrainKind::Ridge => b + hh * s * s / (dx * dx + s * s),
                TerrainKind::Valley => b + hh * (1.0 - (-dx * dx / (2.0 * s * s)).exp()),
                TerrainKind::Flat => b,
            });
        }
    }
    Ok((grid, z))
}

/// Elevations `z` (m, from [`terrain`]) on `grid` as a one-band f32 raster named `elevation`.
pub fn dem_raster(grid: GridSpec, z: &[f64]) -> Result<Raster, GeofieldError> {
    Ok(Raster::new(
        grid,
        vec!["elevation".into()],
        RasterData::F32(z.iter().map(|&v| v as f32).collect()),
    )?)
}

fn centre(grid: &GridSpec) -> (f64, f64) {
    (
        grid.x_min_m + 0.5 * grid.width_m(),
        grid.y_min_m() + 0.5 * grid.height_m(),
    )
}

/// What the synthetic stations report.
#[derive(Debug, Clone, PartialEq)]
pub struct StationSpec {
    pub count: usize,
    pub speed_m_per_s: f64,
    /// Where the wind comes from, degrees clockwise from north.
    pub direction_deg: f64,
    pub height_agl_m: f64,
    pub stability: Option<Stability>,
    pub seed: u64,
}

/// `spec.count` stations on `grid` (see the module docs), ids `s01`, `s02`, ...
pub fn stations(grid: &GridSpec, spec: &StationSpec) -> Result<Vec<Station>, GeofieldError> {
    let bad = |m: String| Err(GeofieldError::Invalid(m));
    if spec.count == 0 {
        return bad("at least one station is needed".into());
    }
    if !(spec.speed_m_per_s.is_finite() && spec.speed_m_per_s >= 0.0) {
        return bad(format!(
            "the station speed must be >= 0 m/s, got {}",
            spec.speed_m_per_s
        ));
    }
    if !(spec.direction_deg.is_finite() && (0.0..=360.0).contains(&spec.direction_deg)) {
        return bad(format!(
            "the direction must be in [0, 360] degrees, got {}",
            spec.direction_deg
        ));
    }
    if !(spec.height_agl_m.is_finite() && spec.height_agl_m > 0.0) {
        return bad(format!(
            "the station height must be > 0 m above ground, got {}",
            spec.height_agl_m
        ));
    }
    let (xc, yc) = centre(grid);
    let d = 0.375 * grid.width_m().min(grid.height_m());
    let t = spec.direction_deg.to_radians();
    let digits = spec.count.to_string().len().max(2);
    let mk = |i: usize, x_m: f64, y_m: f64, speed: f64, dir: f64| Station {
        id: format!("s{:0digits$}", i + 1),
        x_m,
        y_m,
        height_agl_m: spec.height_agl_m,
        speed_m_per_s: speed,
        direction_deg: dir,
        stability: spec.stability,
    };
    let mut out = vec![mk(
        0,
        xc + d * t.sin(),
        yc + d * t.cos(),
        spec.speed_m_per_s,
        spec.direction_deg,
    )];
    let mut rng = Pcg64::seed_from_u64(spec.seed);
    for i in 1..spec.count {
        let x = grid.x_min_m + grid.width_m() * (0.1 + 0.8 * rng.random::<f64>());
        let y = grid.y_min_m() + grid.height_m() * (0.1 + 0.8 * rng.random::<f64>());
        let speed = spec.speed_m_per_s * (0.9 + 0.2 * rng.random::<f64>());
        let dir = (spec.direction_deg + 20.0 * rng.random::<f64>() - 10.0).rem_euclid(360.0);
        out.push(mk(i, x, y, speed, dir));
    }
    Ok(out)
}

/// The demo's wind case (`geofield demo`): a 6 km × 6 km valley (base 400 m, 150 m deep) at
/// 50 m (120 × 120 columns, south-west corner at (500 000, 6 000 000) m) with three stations
/// of 6 m/s from 250° at 10 m above ground (seed 7).
pub fn demo_valley() -> Result<(GridSpec, Vec<f64>, Vec<Station>), GeofieldError> {
    let spec = TerrainSpec {
        kind: TerrainKind::Valley,
        cols: 120,
        rows: 120,
        cell_size_m: 50.0,
        x_min_m: 500_000.0,
        y_min_m: 6_000_000.0,
        base_m: 400.0,
        height_m: 150.0,
        width_m: None,
    };
    let (plan, dem) = terrain(&spec)?;
    let st = stations(
        &plan,
        &StationSpec {
            count: 3,
            speed_m_per_s: 6.0,
            direction_deg: 250.0,
            height_agl_m: 10.0,
            stability: None,
            seed: 7,
        },
    )?;
    Ok((plan, dem, st))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn spec(kind: TerrainKind) -> TerrainSpec {
        TerrainSpec {
            kind,
            cols: 41,
            rows: 21,
            cell_size_m: 10.0,
            x_min_m: 1000.0,
            y_min_m: 2000.0,
            base_m: 100.0,
            height_m: 50.0,
            width_m: None,
        }
    }

    #[test]
    fn shapes_peak_and_dip_where_they_should() {
        let (g, z) = terrain(&spec(TerrainKind::GaussianHill)).unwrap();
        assert_eq!((g.cols, g.rows, g.y_max_m), (41, 21, 2210.0));
        let centre = 10 * 41 + 20;
        assert!((z[centre] - 150.0).abs() < 1e-9);
        assert!(z.iter().all(|&h| (100.0..=150.0 + 1e-9).contains(&h)));
        assert!(z[0] < 100.1);
        let (_, r) = terrain(&spec(TerrainKind::Ridge)).unwrap();
        // Constant along the crest (north-south), half height at dx = L = 41 m.
        assert!((r[20] - r[20 * 41 + 20]).abs() < 1e-12 && (r[20] - 150.0).abs() < 1e-9);
        let (_, v) = terrain(&spec(TerrainKind::Valley)).unwrap();
        assert!((v[centre] - 100.0).abs() < 1e-9 && v[10 * 41] > 140.0);
        let (_, f) = terrain(&spec(TerrainKind::Flat)).unwrap();
        assert!(f.iter().all(|&h| h == 100.0));
        let mut s = spec(TerrainKind::Flat);
        s.cols = 0;
        assert!(terrain(&s).is_err());
        s.cols = 3;
        s.height_m = -1.0;
        assert!(terrain(&s).is_err());
    }

    #[test]
    fn stations_start_upwind_and_stay_inside() {
        let g = spec(TerrainKind::Flat).grid().unwrap();
        let st = StationSpec {
            count: 5,
            speed_m_per_s: 5.0,
            direction_deg: 270.0,
            height_agl_m: 10.0,
            stability: Some(Stability::C),
            seed: 3,
        };
        let s = stations(&g, &st).unwrap();
        assert_eq!(s.len(), 5);
        assert_eq!(s[0].id, "s01");
        // From the west: the first station is west of the centre (1205, 2105).
        assert!((s[0].x_m - (1205.0 - 0.375 * 210.0)).abs() < 1e-9);
        assert!((s[0].y_m - 2105.0).abs() < 1e-9);
        for x in &s {
            assert!(g.extent().contains(x.x_m, x.y_m));
            assert!((4.5..=5.5).contains(&x.speed_m_per_s));
        }
        assert_eq!(stations(&g, &st).unwrap(), s);
        assert!(
            stations(
                &g,
                &StationSpec {
                    count: 0,
                    ..st.clone()
                }
            )
            .is_err()
        );
        assert!(
            stations(
                &g,
                &StationSpec {
                    speed_m_per_s: -1.0,
                    ..st.clone()
                }
            )
            .is_err()
        );
    }
}
