//! Cut cells: the ground as a continuous surface through the DEM, and the open (fluid) fractions
//! of the grid's cells and faces above it (as QES-Winds does for terrain on its Cartesian grid).
//!
//! # The surface
//!
//! The DEM's values are the ground at the column centres. The surface is the bilinear
//! interpolant of those nodes (clamped at the domain's edges: a centre beyond the edge takes
//! its edge neighbour's value), made piecewise linear on a fan of eight triangles per column:
//! the vertices are the column centre, the four edge midpoints (mean of the two centres either
//! side) and the four corners (mean of the four centres around them), where it equals the
//! bilinear surface. Along each column edge, the bilinear surface is linear on each half, so
//! the fan surface *is* the bilinear one on every face of the grid; inside the columns it
//! differs from it by at most |h_xy| Δx²/16 (the bilinear twist over a quarter cell). It is
//! watertight (neighbouring columns share their edge values, computed by one function), exact
//! for any plane, and gives every fraction below in closed form, O(1) per cell: no quadrature.
//!
//! # Fractions
//!
//! - θ_c, the fluid fraction of a cell's volume: Σ over the fan's triangles of
//!   ∫ [ramp(z_top − h) − ramp(z_bottom − h)] dA, over the cell's volume;
//! - x and y faces: the open fraction of the vertical rectangle above the ground, exact for the
//!   piecewise linear ground along the face;
//! - z faces: the fraction of the horizontal face where the ground is below it.
//!
//! Cells with θ < [`THETA_SOLID`] are solid (merged into the ground: the ground moves by less
//! than `THETA_SOLID` of a layer there), so every column is still solid up to its first fluid
//! layer `ground_k`, and θ grows with k. Faces touching a solid cell and the domain bottom are
//! closed (aperture 0).
//!
//! The divergence of a cell is its net outflow over its fluid volume; for the stop test and
//! the reports the volume is taken as max(θ, [`THETA_DIV_FLOOR`]) V, so that a sliver cell
//! (θ → 0) does not multiply its flux imbalance by 1/θ and dominate max |div u|: in cells
//! with θ ≥ the floor the number is the exact fluid divergence, below it an underestimate by
//! at most a factor floor/θ.

use rayon::prelude::*;

/// Cells with a smaller fluid fraction are treated as solid.
pub const THETA_SOLID: f64 = 1e-3;
/// Smallest volume fraction by which a flux imbalance is divided (see the module docs).
pub const THETA_DIV_FLOOR: f64 = 0.1;

/// Fluid fractions of the cells and faces of a [`super::WindGrid`] over its ground surface,
/// in the grid's index order (see [`super::grid`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CutCells {
    /// Fluid fraction of each cell's volume, `nz * rows * cols`; 0 in solid cells.
    pub theta: Vec<f64>,
    /// Open fraction of each x face, `nz * rows * (cols + 1)`.
    pub ax: Vec<f64>,
    /// Open fraction of each y face, `nz * (rows + 1) * cols`.
    pub ay: Vec<f64>,
    /// Open fraction of each z face, `(nz + 1) * rows * cols`.
    pub az: Vec<f64>,
    /// First fluid layer of each column (θ ≥ [`THETA_SOLID`]).
    pub ground_k: Vec<u32>,
}

/// The DEM as a surface: centre values with clamped neighbours.
#[derive(Clone, Copy)]
pub(crate) struct Surface<'a> {
    pub terrain: &'a [f64],
    pub rows: usize,
    pub cols: usize,
}

impl Surface<'_> {
    /// The centre value of (row, col), clamped into the grid.
    #[inline]
    fn at(&self, row: isize, col: isize) -> f64 {
        let r = row.clamp(0, self.rows as isize - 1) as usize;
        let c = col.clamp(0, self.cols as isize - 1) as usize;
        self.terrain[r * self.cols + c]
    }

    /// The ground at grid node (rn, cn): the corner between rows rn − 1, rn and columns
    /// cn − 1, cn (rn in 0..=rows, cn in 0..=cols).
    #[inline]
    pub fn corner(&self, rn: usize, cn: usize) -> f64 {
        let (r, c) = (rn as isize, cn as isize);
        0.25 * ((self.at(r - 1, c - 1) + self.at(r - 1, c)) + (self.at(r, c - 1) + self.at(r, c)))
    }

    /// The ground at the middle of x face (row, i) (the west edge of column i).
    #[inline]
    pub fn x_mid(&self, row: usize, i: usize) -> f64 {
        let (r, c) = (row as isize, i as isize);
        0.5 * (self.at(r, c - 1) + self.at(r, c))
    }

    /// The ground at the middle of y face (r, col) (the north edge of row r).
    #[inline]
    pub fn y_mid(&self, r: usize, col: usize) -> f64 {
        let (r, c) = (r as isize, col as isize);
        0.5 * (self.at(r - 1, c) + self.at(r, c))
    }

    /// The nine fan vertices of a column: centre, then (edge midpoint, next corner) clockwise
    /// from north: N, NE, E, SE, S, SW, W, NW.
    pub fn fan(&self, row: usize, col: usize) -> [f64; 9] {
        [
            self.terrain[row * self.cols + col],
            self.y_mid(row, col),
            self.corner(row, col + 1),
            self.x_mid(row, col + 1),
            self.corner(row + 1, col + 1),
            self.y_mid(row + 1, col),
            self.corner(row + 1, col),
            self.x_mid(row, col),
            self.corner(row, col),
        ]
    }

    /// The ground at (x, y) in column units: `fx`, `fy` in [−½, ½] from the centre of
    /// (row, col), fy positive north. On the fan's triangles (linear on each).
    #[cfg(test)]
    pub fn height_in(&self, row: usize, col: usize, fx: f64, fy: f64) -> f64 {
        let f = self.fan(row, col);
        // Octant: the triangle (centre, edge midpoint, corner) containing (fx, fy).
        let (ax, ay) = (fx.abs(), fy.abs());
        let (mid, corner, along, across) = match (fx >= 0.0, fy >= 0.0, ay >= ax) {
            (_, true, true) => (f[1], if fx >= 0.0 { f[2] } else { f[8] }, ay, ax),
            (_, false, true) => (f[5], if fx >= 0.0 { f[4] } else { f[6] }, ay, ax),
            (true, _, false) => (f[3], if fy >= 0.0 { f[2] } else { f[4] }, ax, ay),
            (false, _, false) => (f[7], if fy >= 0.0 { f[8] } else { f[6] }, ax, ay),
        };
        // Barycentric on (centre (0,0), mid (½,0), corner (½,½)) in (along, across).
        let w_corner = 2.0 * across;
        let w_mid = 2.0 * along - w_corner;
        let w_centre = 1.0 - 2.0 * along;
        w_centre * f[0] + w_mid * mid + w_corner * corner
    }
}

/// Mean over a segment with a linear ground from `a` to `b` of ramp(z − h) (m).
#[inline]
fn seg_ramp(z: f64, a: f64, b: f64) -> f64 {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    if z <= lo {
        0.0
    } else if z >= hi {
        z - 0.5 * (lo + hi)
    } else {
        (z - lo) * (z - lo) / (2.0 * (hi - lo))
    }
}

/// Open fraction of a vertical face between `zb` and `zt` over a ground linear on each half:
/// `a` at one end, `m` at the middle, `b` at the other end.
#[inline]
pub(crate) fn side_aperture(zb: f64, zt: f64, a: f64, m: f64, b: f64) -> f64 {
    let open = 0.5 * (seg_ramp(zt, a, m) - seg_ramp(zb, a, m))
        + 0.5 * (seg_ramp(zt, m, b) - seg_ramp(zb, m, b));
    (open / (zt - zb)).clamp(0.0, 1.0)
}

#[inline]
fn sort3(a: f64, b: f64, c: f64) -> (f64, f64, f64) {
    let (a, b) = if a <= b { (a, b) } else { (b, a) };
    let (b, c) = if b <= c { (b, c) } else { (c, b) };
    let (a, b) = if a <= b { (a, b) } else { (b, a) };
    (a, b, c)
}

/// Over a triangle of unit area with a linear ground (vertex values h1 ≤ h2 ≤ h3):
/// ∫ ramp(z − h) dA (m) and the area fraction where h < z.
#[inline]
fn tri_volume_area(z: f64, h1: f64, h2: f64, h3: f64) -> (f64, f64) {
    if z <= h1 {
        (0.0, 0.0)
    } else if z >= h3 {
        (z - (h1 + h2 + h3) / 3.0, 1.0)
    } else if z <= h2 {
        let d = (h2 - h1) * (h3 - h1);
        let s = z - h1;
        (s * s * s / (3.0 * d), s * s / d)
    } else {
        let d = (h3 - h1) * (h3 - h2);
        let s = h3 - z;
        (
            z - (h1 + h2 + h3) / 3.0 + s * s * s / (3.0 * d),
            1.0 - s * s / d,
        )
    }
}

/// A column's fan as eight sorted triangles.
struct Fan {
    tris: [(f64, f64, f64); 8],
    min: f64,
    max: f64,
}

impl Fan {
    fn new(f: [f64; 9]) -> Self {
        let mut tris = [(0.0, 0.0, 0.0); 8];
        for (t, tri) in tris.iter_mut().enumerate() {
            // Triangles (centre, vertex t+1, vertex t+2) with vertices 1..8 cyclic.
            let a = f[1 + t];
            let b = f[1 + (t + 1) % 8];
            *tri = sort3(f[0], a, b);
        }
        let min = f.iter().copied().fold(f64::INFINITY, f64::min);
        let max = f.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Self { tris, min, max }
    }

    /// Fluid fraction of the layer [zb, zt].
    fn theta(&self, zb: f64, zt: f64) -> f64 {
        if zb >= self.max {
            return 1.0;
        }
        if zt <= self.min {
            return 0.0;
        }
        let mut s = 0.0;
        for &(a, b, c) in &self.tris {
            s += tri_volume_area(zt, a, b, c).0 - tri_volume_area(zb, a, b, c).0;
        }
        (s / (8.0 * (zt - zb))).clamp(0.0, 1.0)
    }

    /// Fraction of the column's area where the ground is below z.
    fn area_below(&self, z: f64) -> f64 {
        if z >= self.max {
            return 1.0;
        }
        if z <= self.min {
            return 0.0;
        }
        let s: f64 = self
            .tris
            .iter()
            .map(|&(a, b, c)| tri_volume_area(z, a, b, c).1)
            .sum();
        (s / 8.0).clamp(0.0, 1.0)
    }
}

/// The cut-cell geometry of a grid: `z_faces_m` (nz + 1 face elevations) over `terrain_m`
/// (rows × cols centre elevations, row 0 north). O(cells), parallel over layers.
pub fn compute(terrain_m: &[f64], rows: usize, cols: usize, z_faces_m: &[f64]) -> CutCells {
    let nz = z_faces_m.len() - 1;
    let s = Surface {
        terrain: terrain_m,
        rows,
        cols,
    };
    let plane = rows * cols;
    let fans: Vec<Fan> = (0..plane)
        .into_par_iter()
        .map(|rc| Fan::new(s.fan(rc / cols, rc % cols)))
        .collect();
    // Each column's ground range, apart from the fans: most cells are whole or solid, and their
    // test then reads 16 bytes per column instead of a fan's 208.
    let bounds: Vec<(f64, f64)> = fans.par_iter().map(|f| (f.min, f.max)).collect();
    let mut theta = vec![0.0; nz * plane];
    theta.par_chunks_mut(plane).enumerate().for_each(|(k, p)| {
        let (zb, zt) = (z_faces_m[k], z_faces_m[k + 1]);
        for ((t, fan), &(lo, hi)) in p.iter_mut().zip(&fans).zip(&bounds) {
            *t = if zb >= hi {
                1.0
            } else if zt <= lo {
                0.0
            } else {
                fan.theta(zb, zt)
            };
        }
    });
    // First fluid layer: θ grows with k in a column.
    let ground_k: Vec<u32> = (0..plane)
        .into_par_iter()
        .map(|rc| {
            (0..nz)
                .find(|&k| theta[k * plane + rc] >= THETA_SOLID)
                .unwrap_or(nz) as u32
        })
        .collect();
    theta.par_chunks_mut(plane).enumerate().for_each(|(k, p)| {
        for (t, &g) in p.iter_mut().zip(&ground_k) {
            if (k as u32) < g {
                *t = 0.0;
            }
        }
    });
    let fluid = |k: usize, row: usize, col: usize| (k as u32) >= ground_k[row * cols + col];
    // The ground along each x face (north corner, middle, south corner) and y face (west
    // corner, middle, east corner), with its highest value, once per face column.
    let side = |a: f64, m: f64, b: f64| (a, m, b, a.max(m).max(b));
    let x_ground: Vec<(f64, f64, f64, f64)> = (0..rows * (cols + 1))
        .into_par_iter()
        .map(|j| {
            let (row, i) = (j / (cols + 1), j % (cols + 1));
            side(s.corner(row, i), s.x_mid(row, i), s.corner(row + 1, i))
        })
        .collect();
    let y_ground: Vec<(f64, f64, f64, f64)> = (0..(rows + 1) * cols)
        .into_par_iter()
        .map(|j| {
            let (r, col) = (j / cols, j % cols);
            side(s.corner(r, col), s.y_mid(r, col), s.corner(r, col + 1))
        })
        .collect();
    let mut ax = vec![0.0; nz * rows * (cols + 1)];
    ax.par_chunks_mut(cols + 1)
        .enumerate()
        .for_each(|(kr, line)| {
            let (k, row) = (kr / rows, kr % rows);
            let (zb, zt) = (z_faces_m[k], z_faces_m[k + 1]);
            for (i, a) in line.iter_mut().enumerate() {
                let open = (i == 0 || fluid(k, row, i - 1)) && (i == cols || fluid(k, row, i));
                if open {
                    let (n, m, so, hi) = x_ground[row * (cols + 1) + i];
                    *a = if zb >= hi {
                        1.0
                    } else {
                        side_aperture(zb, zt, n, m, so)
                    };
                }
            }
        });
    let mut ay = vec![0.0; nz * (rows + 1) * cols];
    ay.par_chunks_mut(cols).enumerate().for_each(|(kr, line)| {
        let (k, r) = (kr / (rows + 1), kr % (rows + 1));
        let (zb, zt) = (z_faces_m[k], z_faces_m[k + 1]);
        for (col, a) in line.iter_mut().enumerate() {
            let open = (r == 0 || fluid(k, r - 1, col)) && (r == rows || fluid(k, r, col));
            if open {
                let (w, m, e, hi) = y_ground[r * cols + col];
                *a = if zb >= hi {
                    1.0
                } else {
                    side_aperture(zb, zt, w, m, e)
                };
            }
        }
    });
    let mut az = vec![0.0; (nz + 1) * plane];
    az.par_chunks_mut(plane).enumerate().for_each(|(k, p)| {
        if k == 0 {
            return;
        }
        let z = z_faces_m[k];
        for (rc, a) in p.iter_mut().enumerate() {
            if (k as u32) > ground_k[rc] {
                *a = if z >= bounds[rc].1 {
                    1.0
                } else {
                    fans[rc].area_below(z)
                };
            }
        }
    });
    CutCells {
        theta,
        ax,
        ay,
        az,
        ground_k,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::needless_range_loop)]
mod tests {
    use super::*;

    /// Fluid fraction of [zb, zt] over a ground linear across a unit interval from h0 to h1
    /// (exact: the mean of the clamped open height).
    fn linear_fraction(zb: f64, zt: f64, h0: f64, h1: f64) -> f64 {
        (seg_ramp(zt, h0, h1) - seg_ramp(zb, h0, h1)) / (zt - zb)
    }

    /// Fraction of a unit interval where a ground linear from h0 to h1 is below z.
    fn linear_below(z: f64, h0: f64, h1: f64) -> f64 {
        let (lo, hi) = if h0 <= h1 { (h0, h1) } else { (h1, h0) };
        if z <= lo {
            0.0
        } else if z >= hi {
            1.0
        } else {
            (z - lo) / (hi - lo)
        }
    }

    #[test]
    fn triangle_volume_is_the_integral_of_the_area() {
        // d/dz of the volume is the area below z; checked by central differences.
        let (h1, h2, h3) = (1.0, 2.5, 4.0);
        for i in 1..50 {
            let z = 0.5 + 0.08 * i as f64;
            let e = 1e-6;
            let dv = (tri_volume_area(z + e, h1, h2, h3).0 - tri_volume_area(z - e, h1, h2, h3).0)
                / (2.0 * e);
            assert!(
                (dv - tri_volume_area(z, h1, h2, h3).1).abs() < 1e-8,
                "z {z}"
            );
        }
        // Continuity at the vertices and the mean height above the top.
        assert!(tri_volume_area(1.0, h1, h2, h3).0.abs() < 1e-15);
        assert!((tri_volume_area(5.0, h1, h2, h3).0 - (5.0 - 2.5)).abs() < 1e-12);
    }

    #[test]
    fn plane_ground_fractions_match_closed_forms() {
        // Ground rising 0.3 m per m to the east, 0.1 m per m to the south (x east, y north):
        // h = 100 + 0.3 x − 0.1 y with columns of 10 m; centres at x = 5 + 10 c, y = −5 − 10 r.
        let (rows, cols, dx) = (4usize, 5usize, 10.0);
        let h = |x: f64, y: f64| 100.0 + 0.3 * x - 0.1 * y;
        let mut t = Vec::new();
        for r in 0..rows {
            for c in 0..cols {
                t.push(h(5.0 + dx * c as f64, -5.0 - dx * r as f64));
            }
        }
        let z: Vec<f64> = (0..=12).map(|k| 100.0 + 2.0 * k as f64).collect();
        let g = compute(&t, rows, cols, &z);
        let s = Surface {
            terrain: &t,
            rows,
            cols,
        };
        // Interior columns see the plane itself (clamping only changes the edge columns).
        for r in 1..rows - 1 {
            for c in 1..cols - 1 {
                let (x0, y0) = (dx * c as f64, -dx * r as f64);
                // Fan heights equal the plane anywhere in the column.
                for (fx, fy) in [(0.1, 0.4), (-0.45, -0.2), (0.3, -0.3), (0.0, 0.0)] {
                    let want = h(x0 + dx * (0.5 + fx), y0 - dx * (0.5 - fy));
                    assert!((s.height_in(r, c, fx, fy) - want).abs() < 1e-10);
                }
                for k in 0..12 {
                    let th = g.theta[(k * rows + r) * cols + c];
                    // Reference: fine midpoint quadrature of the exact 1-D fraction along x
                    // (the plane is linear in x on each line y = const).
                    let n = 2000;
                    let mut want = 0.0;
                    for j in 0..n {
                        let y = y0 - dx * (j as f64 + 0.5) / n as f64;
                        want += linear_fraction(z[k], z[k + 1], h(x0, y), h(x0 + dx, y));
                    }
                    want /= n as f64;
                    if k < g.ground_k[r * cols + c] as usize {
                        assert!(want < THETA_SOLID && th == 0.0);
                    } else {
                        // Quadrature error: the integrand's slope is at most 1/(2 m) per
                        // m in y over 10 m lines; midpoint error ≤ (Δy)² × |f''| / 24 with
                        // kinks bounded by the slope jump × Δy / 8: < 1e-5 for n = 2000.
                        assert!((th - want).abs() < 1e-5, "k {k} ({r},{c}): {th} vs {want}");
                    }
                    // West x face: the ground along it is linear in y from the corner values.
                    let ax = g.ax[(k * rows + r) * (cols + 1) + c];
                    let (ya, yb) = (y0, y0 - dx);
                    let want_x = linear_fraction(z[k], z[k + 1], h(x0, ya), h(x0, yb));
                    let fluid_both = k >= g.ground_k[r * cols + c] as usize
                        && k >= g.ground_k[r * cols + c - 1] as usize;
                    if fluid_both {
                        assert!((ax - want_x).abs() < 1e-12, "{ax} vs {want_x}");
                    } else {
                        assert_eq!(ax, 0.0);
                    }
                    // North y face: ground linear in x along it.
                    let ay = g.ay[(k * (rows + 1) + r) * cols + c];
                    let want_y = linear_fraction(z[k], z[k + 1], h(x0, y0), h(x0 + dx, y0));
                    let fluid_both = k >= g.ground_k[r * cols + c] as usize
                        && k >= g.ground_k[(r - 1) * cols + c] as usize;
                    if fluid_both {
                        assert!((ay - want_y).abs() < 1e-12, "{ay} vs {want_y}");
                    }
                }
                for k in 1..=12 {
                    // Bottom face k: the fraction of the column where the plane is below z_k;
                    // exact along each x line (linear ground), midpoint rule in y.
                    let n = 2000;
                    let mut want = 0.0;
                    for j in 0..n {
                        let y = y0 - dx * (j as f64 + 0.5) / n as f64;
                        want += linear_below(z[k], h(x0, y), h(x0 + dx, y));
                    }
                    want /= n as f64;
                    let a = g.az[(k * rows + r) * cols + c];
                    if k > g.ground_k[r * cols + c] as usize {
                        // Midpoint rule in y on a piecewise linear function of y (slope
                        // ≤ 0.1/0.3 per m): the kinks err by ≤ slope jump × Δy² / 8 ≈ 1e-6.
                        assert!((a - want).abs() < 1e-5, "k {k}: {a} vs {want}");
                    } else {
                        assert_eq!(a, 0.0);
                    }
                }
            }
        }
    }

    #[test]
    fn flat_ground_at_any_elevation_gives_full_cells_and_faces() {
        for base in [0.0, 123.456, 2875.3] {
            let t = vec![base; 12];
            let z: Vec<f64> = (0..=5).map(|k| base + 3.0 * k as f64).collect();
            let g = compute(&t, 3, 4, &z);
            assert!(g.theta.iter().all(|&x| x == 1.0));
            assert!(g.ax.iter().chain(&g.ay).all(|&x| x == 1.0));
            assert!(g.ground_k.iter().all(|&k| k == 0));
            for (i, &a) in g.az.iter().enumerate() {
                assert_eq!(a, if i < 12 { 0.0 } else { 1.0 });
            }
        }
    }

    #[test]
    fn neighbouring_columns_share_their_face_ground() {
        // Random-ish terrain: the fan of each column meets its neighbour's on the shared edge.
        let (rows, cols) = (5usize, 6usize);
        let t: Vec<f64> = (0..rows * cols)
            .map(|i| 50.0 + ((i * 37) % 11) as f64 * 1.7)
            .collect();
        let s = Surface {
            terrain: &t,
            rows,
            cols,
        };
        for r in 0..rows {
            for c in 0..cols - 1 {
                for fy in [-0.5, -0.2, 0.0, 0.3, 0.5] {
                    let a = s.height_in(r, c, 0.5, fy);
                    let b = s.height_in(r, c + 1, -0.5, fy);
                    assert!((a - b).abs() < 1e-12);
                }
            }
        }
    }
}
