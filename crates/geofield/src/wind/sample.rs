//! Sampling a solved wind field for output: velocities at cell centres, and the horizontal wind
//! at a height above the ground (WindNinja's speed and direction grids, and points).
//!
//! Stair steps (the WEST model, `Terrain::Stairs`):
//! - Cell-centred velocities average the two faces of each cell along each axis:
//!   u_c = (u_west + u_east)/2, v_c = (v_north + v_south)/2, w_c = (w_bottom + w_top)/2 (m/s).
//!   `speed` is the horizontal speed hypot(u_c, v_c), as CF's `wind_speed` (wind is the
//!   horizontal air velocity). Solid cells hold NaN.
//! - At height h above the ground of a column (ground elevation g), the target elevation is
//!   z = g + h. u_c and v_c are interpolated linearly in z between the centres of the two fluid
//!   cells around z; below the centre of the column's first fluid cell that cell's value is
//!   used, above the centre of the top cell the top cell's.
//!
//! Cut cells ([`super::cut`]):
//! - A cell's velocity is the mean of its two faces along each axis weighted by their open
//!   fractions (the flux-weighted mean; a closed face does not pull it to zero).
//! - A column's samples are its cells at least half open, each at the height above the ground
//!   at the column centre (the DEM's value there) of the middle of its open part,
//!   z_top − θΔz/2 − g. Below the first sample the wind follows the model's profile down to the
//!   ground (power law u ∝ z^p, log law u ∝ ln((z − d)/z0) with the displacement height d: zero
//!   at d + z0; uniform: constant); between two samples it is interpolated in the profile's
//!   coordinate (z^p or ln z: exact for the profile, where linear interpolation in z would
//!   read a concave log profile low, 0.55 % at 10 m between centres at 7.75 and 13.5 m), linearly
//!   in z for the uniform profile; above the top sample the top cell's.
//!
//! Both: w is interpolated with u and v by the same rule. Speed and direction come from the
//! interpolated (u, v) by [`speed_direction`] (direction: where the wind comes from, degrees
//! clockwise from north), never by interpolating speed and direction themselves. One function,
//! `column_agl`, holds the vertical rule for every output.
//!
//! At a point (x, y) and a height above ground ([`sample_point`]: the masts of `--points-in`,
//! validation masts, and outputs at another resolution, [`surface`]): the four columns around
//! the point are sampled as above at that height above their own ground, then blended
//! bilinearly between their centres (clamped at the edges); at a column centre it is the
//! raster's value.
//!
//! Cost: O(cells) and O(rows × cols × nz) in the worst case, no allocation beyond the outputs.

use rayon::prelude::*;

use super::WindField;
use super::params::{Profile, speed_direction};
use crate::GeofieldError;

/// Velocities at cell centres, `nz * rows * cols` each in cell order (`(k * rows + row) * cols
/// + col`, row 0 north, k = 0 bottom), NaN in solid cells; m/s.
#[derive(Debug, Clone, PartialEq)]
pub struct CellFields {
    /// Eastward.
    pub u: Vec<f64>,
    /// Northward.
    pub v: Vec<f64>,
    /// Upward.
    pub w: Vec<f64>,
    /// Horizontal speed hypot(u, v).
    pub speed: Vec<f64>,
}

/// Check that the face arrays fit the grid, so that indexing below cannot go out of bounds.
fn check_lengths(field: &WindField) -> Result<(), GeofieldError> {
    let g = &field.grid;
    let (rows, cols) = (g.rows(), g.cols());
    let ok = field.u.len() == g.n_u()
        && field.v.len() == g.n_v()
        && field.w.len() == g.n_w()
        && g.terrain_m.len() == rows * cols
        && g.ground_k.len() == rows * cols
        && g.z_faces_m.len() == g.nz + 1
        && g.nz > 0;
    if ok {
        Ok(())
    } else {
        Err(GeofieldError::Invalid(format!(
            "wind field arrays do not fit its {}x{}x{} grid (u {}, v {}, w {} values)",
            g.nz,
            rows,
            cols,
            field.u.len(),
            field.v.len(),
            field.w.len()
        )))
    }
}

/// (u, v, w) at the centre of cell (k, row, col): the faces' mean, aperture-weighted with cut
/// cells.
fn velocity_at(field: &WindField, k: usize, row: usize, col: usize) -> [f64; 3] {
    let (rows, cols) = (field.grid.rows(), field.grid.cols());
    let plane = rows * cols;
    let iu = (k * rows + row) * (cols + 1) + col;
    let iv = (k * (rows + 1) + row) * cols + col;
    let iw = k * plane + row * cols + col;
    match &field.grid.cut {
        None => [
            0.5 * (field.u[iu] + field.u[iu + 1]),
            0.5 * (field.v[iv] + field.v[iv + cols]),
            0.5 * (field.w[iw] + field.w[iw + plane]),
        ],
        Some(c) => [
            weighted(field.u[iu], c.ax[iu], field.u[iu + 1], c.ax[iu + 1]),
            weighted(field.v[iv], c.ay[iv], field.v[iv + cols], c.ay[iv + cols]),
            weighted(field.w[iw], c.az[iw], field.w[iw + plane], c.az[iw + plane]),
        ],
    }
}

/// (a x + b y)/(a + b), 0 when both weights are 0.
#[inline]
fn weighted(x: f64, a: f64, y: f64, b: f64) -> f64 {
    if a + b > 0.0 {
        (a * x + b * y) / (a + b)
    } else {
        0.0
    }
}

/// Cell-centred u, v, w and horizontal speed (see the module docs).
pub fn cell_centred(field: &WindField) -> Result<CellFields, GeofieldError> {
    check_lengths(field)?;
    let g = &field.grid;
    let (rows, cols, nz) = (g.rows(), g.cols(), g.nz);
    let n = g.n_cells();
    let mut out = CellFields {
        u: vec![f64::NAN; n],
        v: vec![f64::NAN; n],
        w: vec![f64::NAN; n],
        speed: vec![f64::NAN; n],
    };
    for k in 0..nz {
        for row in 0..rows {
            for col in 0..cols {
                if g.is_solid(k, row, col) {
                    continue;
                }
                let i = g.cell(k, row, col);
                let [u, v, w] = velocity_at(field, k, row, col);
                out.u[i] = u;
                out.v[i] = v;
                out.w[i] = w;
                out.speed[i] = u.hypot(v);
            }
        }
    }
    Ok(out)
}

/// Check a height above ground.
fn check_height(height_m: f64) -> Result<(), GeofieldError> {
    if height_m.is_finite() && height_m > 0.0 {
        Ok(())
    } else {
        Err(GeofieldError::Invalid(format!(
            "the height above ground must be a positive number of metres, got {height_m}"
        )))
    }
}

/// The wind at one point, see [`sample_point`].
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct PointSample {
    /// Eastward, northward, upward velocity (m/s).
    pub u: f64,
    pub v: f64,
    pub w: f64,
    /// Horizontal speed hypot(u, v) (m/s).
    pub speed: f64,
    /// Where the wind comes from, degrees clockwise from north ([`speed_direction`]).
    pub direction: f64,
    /// Ground elevation under the point (m), bilinear between column centres like the wind.
    pub ground_m: f64,
}

/// The wind at (`x_m`, `y_m`) and `height_agl_m` above the ground: in each of the four columns
/// around the point, the column's (u, v, w) at that height above its own ground (the vertical
/// rule of [`at_height_agl`], see the module docs), then bilinear between the column
/// centres (clamped to the outer centres within half a cell of the edge). `None` outside the
/// grid. At a column centre this is exactly that column's value.
///
/// ```
/// use geofield::Backend;
/// use geofield::wind::{self, Levels, Profile, WindGrid, WindOptions};
/// use geofield_core::GridSpec;
///
/// // Flat ground, a domain-average 6 m/s from the south at 10 m, the same at every height.
/// let plan = GridSpec { x_min_m: 0.0, y_max_m: 200.0, cell_size_m: 25.0, cols: 8, rows: 8 };
/// let grid = WindGrid::new(plan, vec![50.0; 64], &Levels::Uniform { nz: 6, dz_m: 10.0 })?;
/// let st = wind::domain_average(&plan, 6.0, 180.0, 10.0);
/// let opts = WindOptions { profile: Profile::Uniform, ..Default::default() };
/// let field = wind::compute(&Backend::Cpu, grid, &[st], &opts)?;
/// let mast = wind::sample_point(&field, 63.0, 118.0, 20.0)?.expect("inside the grid");
/// assert!((mast.speed - 6.0).abs() < 1e-9 && (mast.v - 6.0).abs() < 1e-9);
/// assert!(wind::sample_point(&field, 500.0, 118.0, 20.0)?.is_none());
/// # Ok::<(), geofield::GeofieldError>(())
/// ```
pub fn sample_point(
    field: &WindField,
    x_m: f64,
    y_m: f64,
    height_agl_m: f64,
) -> Result<Option<PointSample>, GeofieldError> {
    check_height(height_agl_m)?;
    check_lengths(field)?;
    let g = &field.grid;
    let p = &g.plan;
    if !(x_m.is_finite() && y_m.is_finite() && p.extent().contains(x_m, y_m)) {
        return Ok(None);
    }
    let (rows, cols) = (g.rows(), g.cols());
    // Fractional column and row of the point between centres, clamped at the outer centres.
    let frac = |f: f64, n: usize| {
        let f = f.clamp(0.0, (n - 1) as f64);
        let i0 = (f.floor() as usize).min(n - 1);
        (i0, (i0 + 1).min(n - 1), f - i0 as f64)
    };
    let (c0, c1, tx) = frac((x_m - p.x_min_m) / p.cell_size_m - 0.5, cols);
    let (r0, r1, ty) = frac((p.y_max_m - y_m) / p.cell_size_m - 0.5, rows);
    let mut acc = [0.0; 4];
    for (r, wr) in [(r0, 1.0 - ty), (r1, ty)] {
        for (c, wc) in [(c0, 1.0 - tx), (c1, tx)] {
            let wgt = wr * wc;
            if wgt == 0.0 {
                continue;
            }
            let s = column_agl(field, r, c, height_agl_m);
            for i in 0..3 {
                acc[i] += wgt * s[i];
            }
            acc[3] += wgt * g.terrain_m[r * cols + c];
        }
    }
    let (speed, direction) = speed_direction(acc[0], acc[1]);
    Ok(Some(PointSample {
        u: acc[0],
        v: acc[1],
        w: acc[2],
        speed,
        direction,
        ground_m: acc[3],
    }))
}

/// Horizontal wind at `height_m` above the ground of every column: (speed in m/s, direction in
/// degrees), `rows * cols` each, row 0 north. See the module docs for the interpolation.
pub fn at_height_agl(
    field: &WindField,
    height_m: f64,
) -> Result<(Vec<f64>, Vec<f64>), GeofieldError> {
    check_height(height_m)?;
    check_lengths(field)?;
    let g = &field.grid;
    let (rows, cols) = (g.rows(), g.cols());
    let mut speed = vec![0.0; rows * cols];
    let mut direction = vec![0.0; rows * cols];
    speed
        .par_chunks_mut(cols)
        .zip(direction.par_chunks_mut(cols))
        .enumerate()
        .for_each(|(row, (sp, dir))| {
            for col in 0..cols {
                let [u, v, _] = column_agl(field, row, col, height_m);
                (sp[col], dir[col]) = speed_direction(u, v);
            }
        });
    Ok((speed, direction))
}

/// (u, v, w) at `height_m` above the ground at the centre of column (row, col): the one vertical
/// rule of every output (see the module docs).
fn column_agl(field: &WindField, row: usize, col: usize, height_m: f64) -> [f64; 3] {
    let g = &field.grid;
    let (cols, nz) = (g.cols(), g.nz);
    let c = row * cols + col;
    let first = (g.ground_k[c] as usize).min(nz - 1);
    let Some(cut) = &g.cut else {
        let z = g.terrain_m[c] + height_m;
        // The first fluid layer whose centre is at or above z.
        let above = (first..nz).find(|&k| g.z_centre_m(k) >= z);
        return match above {
            Some(k) if k == first => velocity_at(field, k, row, col),
            None => velocity_at(field, nz - 1, row, col),
            Some(k) => {
                let (z0, z1) = (g.z_centre_m(k - 1), g.z_centre_m(k));
                let t = (z - z0) / (z1 - z0);
                lerp(
                    velocity_at(field, k - 1, row, col),
                    velocity_at(field, k, row, col),
                    t,
                )
            }
        };
    };
    let ground = g.terrain_m[c];
    let plane = g.rows() * cols;
    let floor = field.min_height_agl_m;
    // Samples: cells at least half open, at the middle of their open part above the ground.
    let k1 = (first..nz)
        .find(|&k| cut.theta[k * plane + c] >= 0.5)
        .unwrap_or(nz - 1);
    let z_of = |k: usize| {
        let z = g.z_faces_m[k + 1] - 0.5 * cut.theta[k * plane + c] * g.dz_m(k) - ground;
        z.max(floor)
    };
    let class = field
        .stability
        .get(c)
        .copied()
        .unwrap_or(super::Stability::D);
    // The profile's coordinate: u is linear in it (None: uniform, no shape).
    let shape = |z: f64| -> Option<f64> {
        match field.profile {
            Profile::Power => Some(z.max(floor).powf(class.power_exponent())),
            Profile::Log { roughness_m } => Some(
                ((z - field.displacement_m).max(floor.max(1.5 * roughness_m)) / roughness_m).ln(),
            ),
            Profile::Uniform => None,
        }
    };
    let z1 = z_of(k1);
    let s1 = velocity_at(field, k1, row, col);
    if height_m <= z1 {
        return match (shape(height_m), shape(z1)) {
            (Some(a), Some(b)) if b > 0.0 => s1.map(|x| x * a / b),
            _ => s1,
        };
    }
    let mut lower = (z1, s1);
    for k in k1 + 1..nz {
        let zk = z_of(k);
        let sk = velocity_at(field, k, row, col);
        if height_m <= zk && zk > lower.0 {
            let linear = (height_m - lower.0) / (zk - lower.0);
            let t = match (shape(height_m), shape(lower.0), shape(zk)) {
                (Some(a), Some(b), Some(c)) if c > b => (a - b) / (c - b),
                _ => linear,
            };
            return lerp(lower.1, sk, t);
        }
        lower = (zk, sk);
    }
    lower.1
}

/// a + t (b − a), per component.
fn lerp(a: [f64; 3], b: [f64; 3], t: f64) -> [f64; 3] {
    [0, 1, 2].map(|i| a[i] + t * (b[i] - a[i]))
}

/// Speed and direction at a height above ground on an output grid.
#[derive(Debug, Clone, PartialEq)]
pub struct Surface {
    /// The output grid: the field's, or cells of the requested size from its north-west corner.
    pub plan: geofield_core::GridSpec,
    /// Horizontal speed (m/s), `plan.rows * plan.cols`, row 0 north.
    pub speed: Vec<f64>,
    /// Where the wind comes from (degrees clockwise from north).
    pub direction: Vec<f64>,
}

/// Speed and direction `height_m` above the ground on a grid of `cell_size_m` cells (WindNinja's
/// output resolution). `None`, or the field's own cell size, gives the field's columns
/// ([`at_height_agl`]). Another size gives a grid from the field's north-west corner with
/// ⌊width / cell⌋ × ⌊height / cell⌋ cells (a last partial cell is left out; at least one),
/// each the wind at its centre by [`sample_point`] (bilinear between column centres, never
/// by interpolating speed or direction), so coarser and finer outputs are both point samples
/// of one field.
pub fn surface(
    field: &WindField,
    height_m: f64,
    cell_size_m: Option<f64>,
) -> Result<Surface, GeofieldError> {
    let p = field.grid.plan;
    let cell = match cell_size_m {
        Some(c) if !(c.is_finite() && c > 0.0) => {
            return Err(GeofieldError::InvalidParameter {
                name: "output cell_size_m".into(),
                value: crate::error::shown(c),
                expected: "a positive length in metres".into(),
            });
        }
        Some(c) if (c - p.cell_size_m).abs() > 1e-9 * p.cell_size_m => c,
        _ => {
            let (speed, direction) = at_height_agl(field, height_m)?;
            return Ok(Surface {
                plan: p,
                speed,
                direction,
            });
        }
    };
    let (width, height) = (p.cols as f64 * p.cell_size_m, p.rows as f64 * p.cell_size_m);
    let count = |len: f64| ((len / cell) * (1.0 + 1e-12)).floor();
    let (cols, rows) = (count(width), count(height));
    if cols < 1.0 || rows < 1.0 {
        return Err(GeofieldError::InvalidParameter {
            name: "output cell_size_m".into(),
            value: crate::error::shown(cell),
            expected: format!("at most the domain's size ({width} x {height} m)"),
        });
    }
    // Bounded by the field's cells times (field cell / output cell)²; refuse an output more
    // than 4096 times the field's cells before allocating it.
    if cols * rows > 4096.0 * (p.cols * p.rows) as f64 {
        return Err(GeofieldError::InvalidParameter {
            name: "output cell_size_m".into(),
            value: crate::error::shown(cell),
            expected: format!(
                "at least 1/64 of the field's cell size ({} m)",
                p.cell_size_m
            ),
        });
    }
    let plan = geofield_core::GridSpec {
        x_min_m: p.x_min_m,
        y_max_m: p.y_max_m,
        cell_size_m: cell,
        cols: cols as usize,
        rows: rows as usize,
    };
    check_height(height_m)?;
    check_lengths(field)?;
    let mut speed = vec![0.0; plan.cols * plan.rows];
    let mut direction = vec![0.0; plan.cols * plan.rows];
    speed
        .par_chunks_mut(plan.cols)
        .zip(direction.par_chunks_mut(plan.cols))
        .enumerate()
        .for_each(|(row, (sp, dir))| {
            for col in 0..plan.cols {
                let (x, y) = plan.cell_centre(row, col);
                // Checked above: the sampler cannot fail; a centre outside the grid is NaN.
                let pt = sample_point(field, x, y, height_m).ok().flatten();
                (sp[col], dir[col]) = pt.map_or((f64::NAN, f64::NAN), |p| (p.speed, p.direction));
            }
        });
    Ok(Surface {
        plan,
        speed,
        direction,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::wind::{Levels, SolveReport, Stability, WindGrid};
    use geofield_core::GridSpec;

    /// A 3 x 2 (cols x rows) grid of 10 m cells, four 10 m layers; column (0, 1) has a step.
    fn grid() -> WindGrid {
        let plan = GridSpec {
            x_min_m: 0.0,
            y_max_m: 20.0,
            cell_size_m: 10.0,
            cols: 3,
            rows: 2,
        };
        let terrain = vec![100.0, 112.0, 100.0, 100.0, 100.0, 100.0];
        WindGrid::new(plan, terrain, &Levels::Uniform { nz: 4, dz_m: 10.0 }).unwrap()
    }

    /// Faces from functions of the face-centre elevation; zero on faces touching solid cells.
    fn field(fu: impl Fn(f64) -> f64, fv: impl Fn(f64) -> f64) -> WindField {
        let g = grid();
        let (rows, cols, nz) = (g.rows(), g.cols(), g.nz);
        let mut u = vec![0.0; g.n_u()];
        let mut v = vec![0.0; g.n_v()];
        for k in 0..nz {
            let z = g.z_centre_m(k);
            for row in 0..rows {
                for i in 0..=cols {
                    let solid =
                        (i > 0 && g.is_solid(k, row, i - 1)) || (i < cols && g.is_solid(k, row, i));
                    u[(k * rows + row) * (cols + 1) + i] = if solid { 0.0 } else { fu(z) };
                }
            }
            for r in 0..=rows {
                for col in 0..cols {
                    let solid =
                        (r > 0 && g.is_solid(k, r - 1, col)) || (r < rows && g.is_solid(k, r, col));
                    v[(k * (rows + 1) + r) * cols + col] = if solid { 0.0 } else { fv(z) };
                }
            }
        }
        let w = vec![0.0; g.n_w()];
        WindField {
            stability: vec![Stability::D; rows * cols],
            grid: g,
            u,
            v,
            w,
            ignored_stations: vec![],
            report: SolveReport::default(),
            profile: crate::wind::Profile::Power,
            min_height_agl_m: 1.0,
            displacement_m: 0.0,
        }
    }

    #[test]
    fn uniform_flow_gives_its_speed_and_direction_everywhere() {
        // u = v = 3 m/s blows to the north-east: from the south-west, 225°.
        let f = field(|_| 3.0, |_| 3.0);
        let c = cell_centred(&f).unwrap();
        let g = &f.grid;
        for k in 0..g.nz {
            for row in 0..g.rows() {
                for col in 0..g.cols() {
                    let i = g.cell(k, row, col);
                    // At k = 0 the solid cell (0, 0, 1) closes one face of its neighbours.
                    let expect = match (k, row, col) {
                        (0, 0, 1) => (f64::NAN, f64::NAN),
                        (0, 0, 0) | (0, 0, 2) => (1.5, 3.0),
                        (0, 1, 1) => (3.0, 1.5),
                        _ => (3.0, 3.0),
                    };
                    if expect.0.is_nan() {
                        assert!(g.is_solid(k, row, col));
                        assert!(c.u[i].is_nan() && c.w[i].is_nan() && c.speed[i].is_nan());
                    } else {
                        assert_eq!((c.u[i], c.v[i], c.w[i]), (expect.0, expect.1, 0.0));
                        assert_eq!(c.speed[i], expect.0.hypot(expect.1));
                    }
                }
            }
        }
        // Sampled above the first layer every column sees the uniform flow.
        let (s, d) = at_height_agl(&f, 25.0).unwrap();
        for (sp, dir) in s.iter().zip(&d) {
            assert!((sp - 18f64.sqrt()).abs() < 1e-12, "{sp}");
            assert!((dir - 225.0).abs() < 1e-9, "{dir}");
        }
    }

    #[test]
    fn linear_profiles_interpolate_exactly_and_clamp_outside() {
        // u = 0.1 (z - 100), v = -0.05 (z - 100): centres at 105, 115, 125, 135 m.
        let f = field(|z| 0.1 * (z - 100.0), |z| -0.05 * (z - 100.0));
        let (s, d) = at_height_agl(&f, 12.0).unwrap();
        // Flat column (1, 2): z = 112, between 105 and 115: u = 1.2, v = -0.6 exactly.
        let c = 3 + 2;
        let (su, sv) = (1.2f64, -0.6f64);
        assert!((s[c] - su.hypot(sv)).abs() < 1e-12, "{}", s[c]);
        assert!((d[c] - speed_direction(su, sv).1).abs() < 1e-9);
        // Below the first centre: that cell's value (flat column at 2 m: the 105 m cell).
        let (s2, _) = at_height_agl(&f, 2.0).unwrap();
        assert!((s2[c] - 0.5f64.hypot(0.25)).abs() < 1e-12);
        // The stepped column (ground 112 m, first fluid centre 115 m): 2 m above ground is
        // 114 m, below 115: the 115 m cell.
        let (s3, _) = at_height_agl(&f, 2.0).unwrap();
        assert!((s3[1] - 1.5f64.hypot(0.75)).abs() < 1e-12, "{}", s3[1]);
        // Above the top centre (135 m): the top cell.
        let (s4, _) = at_height_agl(&f, 500.0).unwrap();
        assert!((s4[c] - 3.5f64.hypot(1.75)).abs() < 1e-12);
        assert!(at_height_agl(&f, 0.0).is_err() && at_height_agl(&f, f64::NAN).is_err());
    }

    #[test]
    fn zero_wind_is_calm_and_bad_lengths_are_errors() {
        let f = field(|_| 0.0, |_| 0.0);
        let (s, d) = at_height_agl(&f, 10.0).unwrap();
        assert!(s.iter().all(|&x| x == 0.0) && d.iter().all(|&x| x == 0.0));
        let mut bad = f.clone();
        bad.u.pop();
        assert!(cell_centred(&bad).is_err() && at_height_agl(&bad, 10.0).is_err());
    }
}
