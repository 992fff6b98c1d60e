//! Stratigraphy from kriged surfaces (the paper's 2.5-D stratum model, its Fig. 4).
//!
//! Surfaces are elevations (metres, z up) ordered from the top of the model to its bottom.
//! Kriging each surface on its own can make two of them cross where the wells are far apart;
//! [`resolve_crossings`] clips every surface to lie at or below the one above it (the upper
//! surface wins, as erosion would have it) and counts the nodes it changed.
//!
//! [`voxelise`] turns the surfaces into a 3-D voxel model of layer indices: 0 above the top
//! surface, i between surface i − 1 and surface i (i = 1..H−1, layer i lies under surface
//! i − 1), H below the bottom surface. A voxel belongs to the layer its centre falls in; a
//! missing (NaN) surface value is skipped at that column.

use crate::GeofieldError;

/// Clips each surface to the one above (`surfaces[h][node]`, top first); returns, per surface,
/// the number of nodes changed (0 for the top one). NaN values are left alone and do not clip.
pub fn resolve_crossings(surfaces: &mut [Vec<f64>]) -> Vec<usize> {
    let mut changed = vec![0; surfaces.len()];
    if surfaces.is_empty() {
        return changed;
    }
    let nodes = surfaces[0].len();
    for j in 0..nodes {
        let mut above = f64::INFINITY;
        for (h, s) in surfaces.iter_mut().enumerate() {
            let v = s[j];
            if v.is_nan() {
                continue;
            }
            if v > above {
                s[j] = above;
                changed[h] += 1;
            } else {
                above = v;
            }
        }
    }
    changed
}

/// A voxel model: `layers[(k·rows + row)·cols + col]`, k = 0 the bottom slab.
#[derive(Clone, Debug, PartialEq)]
pub struct VoxelModel {
    pub rows: usize,
    pub cols: usize,
    pub nz: usize,
    /// Elevation of the bottom of slab 0 (metres).
    pub z_bottom_m: f64,
    pub dz_m: f64,
    pub layers: Vec<u8>,
}

/// The voxel model of `surfaces` (each rows × cols, row-major, top surface first) with slabs of
/// `dz_m` spanning from one slab under the lowest value to one slab over the highest.
/// `max_voxels` bounds the size (an error beyond it).
pub fn voxelise(
    surfaces: &[Vec<f64>],
    rows: usize,
    cols: usize,
    dz_m: f64,
    max_voxels: usize,
) -> Result<VoxelModel, GeofieldError> {
    if !(dz_m.is_finite() && dz_m > 0.0) {
        return Err(GeofieldError::Invalid(format!(
            "dz = {dz_m} must be finite and > 0"
        )));
    }
    if surfaces.is_empty() || surfaces.len() > 254 {
        return Err(GeofieldError::Invalid(format!(
            "{} surfaces: a voxel model needs 1 to 254",
            surfaces.len()
        )));
    }
    let cells = rows * cols;
    if surfaces.iter().any(|s| s.len() != cells) {
        return Err(GeofieldError::Invalid(
            "every surface must have rows × cols values".into(),
        ));
    }
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in surfaces.iter().flatten().filter(|v| v.is_finite()) {
        lo = lo.min(*v);
        hi = hi.max(*v);
    }
    if !lo.is_finite() {
        return Err(GeofieldError::Invalid(
            "the surfaces have no finite value".into(),
        ));
    }
    let z_bottom_m = ((lo / dz_m).floor() - 1.0) * dz_m;
    let z_top = ((hi / dz_m).ceil() + 1.0) * dz_m;
    let nz = ((z_top - z_bottom_m) / dz_m).round() as usize;
    let voxels = nz
        .checked_mul(cells)
        .filter(|&v| v <= max_voxels)
        .ok_or_else(|| {
            GeofieldError::Invalid(format!(
                "the voxel model would have {nz} x {rows} x {cols} voxels (more than {max_voxels}); \
                 use a larger voxel height (dz_m) or cell size"
            ))
        })?;
    let mut layers = vec![0u8; voxels];
    for k in 0..nz {
        let zc = z_bottom_m + (k as f64 + 0.5) * dz_m;
        let slab = &mut layers[k * cells..(k + 1) * cells];
        for (j, out) in slab.iter_mut().enumerate() {
            // Surfaces above the voxel centre.
            let n = surfaces.iter().filter(|s| s[j] >= zc).count();
            *out = n as u8;
        }
    }
    Ok(VoxelModel {
        rows,
        cols,
        nz,
        z_bottom_m,
        dz_m,
        layers,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::needless_range_loop)]
    use super::*;

    #[test]
    fn crossings_are_clipped_to_the_surface_above_and_counted() {
        let mut s = vec![
            vec![10.0, 10.0, 10.0, f64::NAN],
            vec![5.0, 12.0, 9.0, 7.0],
            vec![6.0, 11.0, 1.0, 8.0],
        ];
        let changed = resolve_crossings(&mut s);
        assert_eq!(changed, vec![0, 1, 3]);
        assert_eq!(s[1], vec![5.0, 10.0, 9.0, 7.0]);
        assert_eq!(s[2], vec![5.0, 10.0, 1.0, 7.0]);
        assert!(s[0][3].is_nan());
        for j in 0..4 {
            for h in 1..3 {
                assert!(s[h][j] <= s[h - 1][j] || s[h - 1][j].is_nan());
            }
        }
    }

    #[test]
    fn voxels_take_the_layer_of_their_centre() {
        // One column: surfaces at 10, 4, 0 with dz = 1.
        let s = vec![vec![10.0], vec![4.0], vec![0.0]];
        let m = voxelise(&s, 1, 1, 1.0, 1000).unwrap();
        assert_eq!(m.z_bottom_m, -1.0);
        assert_eq!(m.nz, 12);
        for k in 0..m.nz {
            let zc = m.z_bottom_m + (k as f64 + 0.5);
            let want = if zc > 10.0 {
                0
            } else if zc > 4.0 {
                1
            } else if zc > 0.0 {
                2
            } else {
                3
            };
            assert_eq!(m.layers[k], want, "slab {k} at {zc}");
        }
        assert!(voxelise(&s, 1, 1, 0.001, 1000).is_err());
        assert!(voxelise(&s, 1, 1, 0.0, 1000).is_err());
    }
}
