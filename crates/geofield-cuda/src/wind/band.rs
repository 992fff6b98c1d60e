//! A band of rows of Sherman's problem on its GPU (the split solve): the band's levels
//! assembled and coarsened alone, level m gathered from every part and the whole level m and
//! below built on every GPU ([`GpuSherman::assemble_band`]), with the same values as
//! [`GpuSherman::assemble`] on the whole problem.

use std::sync::Arc;

use super::assemble::{Faces64, K, RowBand, ShermanGrid, coarsen_levels, coarsen_modes, to_f32_op};
use super::coarsening;
use super::exchange::Exchange;
use super::halo::HaloRows;
use super::hierarchy::{Coarse, Hierarchy, LevelOp};
use super::sherman::{CycleShape, FineOp, GpuSherman};
use crate::context::Gpu;
use crate::error::{CudaError, invalid};

/// Rows `rows` of each of `layers` layers of `per_layer` rows of `width` values (`[k][row][..]`
/// layouts): a band's part of a cell, face or column array (a band's y faces are rows
/// `start..end + 1` of `rows + 1` per layer, both edge faces included).
pub fn layer_rows<T: Copy + Default + Send + Sync>(
    v: &[T],
    layers: usize,
    per_layer: usize,
    width: usize,
    rows: std::ops::Range<usize>,
) -> Vec<T> {
    use rayon::prelude::*;
    let n = rows.len();
    let mut out = vec![T::default(); layers * n * width];
    if width == 0 || n == 0 {
        return out;
    }
    // Row by row on every core: the copy and the fresh pages' first touch divide.
    out.par_chunks_mut(width).enumerate().for_each(|(j, line)| {
        let at = ((j / n) * per_layer + rows.start + j % n) * width;
        line.copy_from_slice(&v[at..at + width]);
    });
    out
}

/// Where a band of rows lies in the whole problem (the split solve): its first row, the whole
/// problem's rows, and how many coarser levels the bands share (m, geofield's
/// `wind::split::plan_bands`): the band is coarsened m times, then level m is gathered whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BandSpec {
    pub first_row: usize,
    pub all_rows: usize,
    pub levels: usize,
}

impl GpuSherman {
    /// A band of rows of Sherman's problem (the split solve, with [`Self::solve_split`]):
    /// `grid` holds the band's rows only (its y faces include both edge faces, which are the
    /// whole problem's interior faces where another band lies beyond), `band` where it lies.
    /// Every part calls this together (collective): the band is coarsened `band.levels` times
    /// on the device, level m's faces are gathered from every part and the whole level m and
    /// its coarser levels are built on every part. The levels and every value are those of
    /// [`Self::assemble`] on the whole problem.
    pub fn assemble_band(
        gpu: &Arc<Gpu>,
        grid: &ShermanGrid,
        shape: CycleShape,
        band: BandSpec,
        ex: &dyn Exchange,
    ) -> Result<Self, CudaError> {
        let _held = gpu.hold();
        // The band's own work (its check, and the band's levels: nearly all of its device
        // memory) before any exchange, then every part learns whether all succeeded: a part
        // failing here (a bad band, the GPU out of memory) fails every part, none waits.
        let local = Self::band_levels(gpu, grid, shape, band);
        let failed = ex.max(f64::from(u8::from(local.is_err()))) > 0.0;
        let levels = match local {
            Err(e) => return Err(e),
            Ok(_) if failed => {
                return Err(invalid(
                    K,
                    "another part of the split solve failed while assembling its band",
                ));
            }
            Ok(v) => v,
        };
        // From here a part fails alone (its GPU out of memory for the whole coarse levels, a
        // failed copy) while the others wait in the next exchange: it abandons the run.
        let joined = Self::join_band(gpu, grid, shape, band, ex, levels);
        if let Err(e) = &joined {
            ex.abandon(&e.to_string());
        }
        joined
    }

    /// [`Self::assemble_band`] after every part built its band's levels: level m whole on
    /// every part, its coarser levels, and the band's hierarchy.
    #[allow(clippy::type_complexity)]
    fn join_band(
        gpu: &Arc<Gpu>,
        grid: &ShermanGrid,
        shape: CycleShape,
        band: BandSpec,
        ex: &dyn Exchange,
        levels: (FineOp, Vec<LevelOp>, RowBand, Vec<u32>, Faces64),
    ) -> Result<Self, CudaError> {
        let (cols, nz) = (grid.cols, grid.nz);
        let (fine, ops, rband, col_w, level_m) = levels;
        let (mrows, mcols) = (ops[band.levels].rows, ops[band.levels].cols);
        // Level m whole, from every band's faces.
        let part_rows: Vec<usize> = ex
            .all_gather(&[mrows as f64])
            .into_iter()
            .map(|r| r as usize)
            .collect();
        let whole_rows: usize = part_rows.iter().sum();
        if whole_rows != rband.all_w.len() {
            return Err(invalid(
                K,
                format!(
                    "the bands' level {} holds {whole_rows} rows, the whole level {}",
                    band.levels,
                    rband.all_w.len()
                ),
            ));
        }
        let mut mine = gpu.download(&level_m.kx, level_m.kx.len(), "a band's coarse faces")?;
        mine.extend(gpu.download(&level_m.ky, level_m.ky.len(), "a band's coarse faces")?);
        mine.extend(gpu.download(&level_m.kz, level_m.kz.len(), "a band's coarse faces")?);
        drop(level_m);
        let all = ex.all_gather(&mine);
        drop(mine);
        let (kx, ky, kz) = join_bands(&all, &part_rows, mcols, nz);
        let mut whole = Faces64 {
            kx: gpu.upload(&kx, "whole coarse x conductances")?,
            ky: gpu.upload(&ky, "whole coarse y conductances")?,
            kz: gpu.upload(&kz, "whole coarse z conductances")?,
            diag: gpu.zeros::<f64>(nz * whole_rows * mcols, "whole coarse diagonal")?,
        };
        // The diagonal from the joined faces (mode 3 reads only the coarse faces).
        let (fkx, fky, fkz) = (
            gpu.upload(&kx[..1], "unused")?,
            gpu.upload(&ky[..1], "unused")?,
            gpu.upload(&kz[..1], "unused")?,
        );
        coarsen_modes(
            gpu,
            nz,
            (whole_rows, mcols),
            (whole_rows, mcols),
            (&fkx, &fky),
            (&fkx, &fky, &fkz),
            &mut whole,
            3..4,
        )?;
        let mut whole_ops = vec![to_f32_op(
            gpu,
            nz,
            &whole.kx,
            &whole.ky,
            &whole.kz,
            &whole.diag,
            whole_rows,
            mcols,
        )?];
        let whole_band = RowBand {
            first: 0,
            rows: whole_rows,
            ..rband
        };
        let (below, _) = coarsen_levels(
            gpu,
            nz,
            (&whole.kx, &whole.ky, &whole.kz),
            whole_band,
            col_w,
            None,
        )?;
        whole_ops.extend(below);
        drop(whole);
        let coarse = Coarse {
            whole: Hierarchy::from_device(gpu, whole_ops, shape)?,
            part_rows,
            part: ex.part(),
        };
        let mg = Hierarchy::band(gpu, ops, shape, coarse)?;
        let mut s = Self::from_device(gpu, fine, mg)?;
        s.halo = Some(HaloRows::new(gpu, nz, cols)?);
        Ok(s)
    }

    /// A band's own levels: checked, assembled and coarsened `band.levels` times on its GPU.
    /// Returns the finest level, the f32 levels 0..=m, level m's rows and columns' widths, and
    /// level m's f64 faces.
    #[allow(clippy::type_complexity)]
    fn band_levels(
        gpu: &Gpu,
        grid: &ShermanGrid,
        shape: CycleShape,
        band: BandSpec,
    ) -> Result<(FineOp, Vec<LevelOp>, RowBand, Vec<u32>, Faces64), CudaError> {
        let (rows, cols, nz) = (grid.rows, grid.cols, grid.nz);
        let unit = 1usize.checked_shl(band.levels as u32).unwrap_or(0);
        let last = band.first_row + rows == band.all_rows;
        if band.levels == 0
            || unit == 0
            || !band.first_row.is_multiple_of(unit)
            || band.first_row + rows > band.all_rows
            || (!last && !rows.is_multiple_of(unit))
            || rows < unit
        {
            return Err(invalid(
                K,
                format!(
                    "band of rows {}..{} of {} cannot be coarsened {} times alone (bands start \
                     and, but for the last, end at multiples of 2^m rows)",
                    band.first_row,
                    band.first_row + rows,
                    band.all_rows,
                    band.levels
                ),
            ));
        }
        let fine = Self::finest(gpu, grid, shape)?;
        let mut ops = vec![to_f32_op(
            gpu, nz, &fine.kx, &fine.ky, &fine.kz, &fine.diag, rows, cols,
        )?];
        let mut rband = RowBand {
            all_w: vec![1; band.all_rows],
            first: band.first_row,
            rows,
        };
        let (coarse, level_m) = coarsen_levels(
            gpu,
            nz,
            (&fine.kx, &fine.ky, &fine.kz),
            rband.clone(),
            vec![1; cols],
            Some(band.levels),
        )?;
        ops.extend(coarse);
        let mut col_w = vec![1u32; cols];
        for _ in 0..band.levels {
            rband = rband.coarsen().0;
            col_w = coarsening::coarse_widths(&col_w);
        }
        let Some(level_m) = level_m else {
            return Err(invalid(K, "no coarse level"));
        };
        Ok((fine, ops, rband, col_w, level_m))
    }
}

/// The whole level's faces from every band's (`all`: each band's x, y and z faces in turn,
/// bands in order, `part_rows` rows each), `[k][row][...]` layouts: x and z faces band after
/// band in each layer; y faces likewise, a band's first face being the last face of the band
/// above.
fn join_bands(
    all: &[f64],
    part_rows: &[usize],
    cols: usize,
    nz: usize,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let rows: usize = part_rows.iter().sum();
    let mut kx = vec![0.0; nz * rows * (cols + 1)];
    let mut ky = vec![0.0; nz * (rows + 1) * cols];
    let mut kz = vec![0.0; (nz + 1) * rows * cols];
    let (mut at, mut row0) = (0, 0);
    for (p, &r) in part_rows.iter().enumerate() {
        let (nx, ny, nzf) = (
            nz * r * (cols + 1),
            nz * (r + 1) * cols,
            (nz + 1) * r * cols,
        );
        let (bx, by, bz) = (
            &all[at..at + nx],
            &all[at + nx..at + nx + ny],
            &all[at + nx + ny..at + nx + ny + nzf],
        );
        for k in 0..nz {
            let w = cols + 1;
            kx[(k * rows + row0) * w..][..r * w].copy_from_slice(&bx[k * r * w..][..r * w]);
            let skip = usize::from(p > 0);
            let faces = r + 1 - skip;
            ky[(k * (rows + 1) + row0 + skip) * cols..][..faces * cols]
                .copy_from_slice(&by[(k * (r + 1) + skip) * cols..][..faces * cols]);
        }
        for k in 0..=nz {
            kz[(k * rows + row0) * cols..][..r * cols]
                .copy_from_slice(&bz[k * r * cols..][..r * cols]);
        }
        at += nx + ny + nzf;
        row0 += r;
    }
    (kx, ky, kz)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Distinct values: the index.
    fn seq(n: usize) -> Vec<f64> {
        (0..n).map(|i| i as f64).collect()
    }

    #[test]
    fn bands_joined_are_the_whole_level() {
        let (rows, cols, nz) = (11, 5, 3);
        let (kx, ky, kz) = (
            seq(nz * rows * (cols + 1)),
            seq(nz * (rows + 1) * cols),
            seq((nz + 1) * rows * cols),
        );
        let part_rows = [4, 4, 3];
        let mut all = Vec::new();
        let mut r0 = 0;
        for &r in &part_rows {
            all.extend(layer_rows(&kx, nz, rows, cols + 1, r0..r0 + r));
            all.extend(layer_rows(&ky, nz, rows + 1, cols, r0..r0 + r + 1));
            all.extend(layer_rows(&kz, nz + 1, rows, cols, r0..r0 + r));
            r0 += r;
        }
        assert_eq!(join_bands(&all, &part_rows, cols, nz), (kx, ky, kz));
    }

    #[test]
    fn a_band_has_its_rows_and_both_edge_faces() {
        let (rows, cols, nz) = (9, 4, 2);
        let cv = seq(nz * (rows + 1) * cols);
        let cells = seq(nz * rows * cols);
        let band = layer_rows(&cv, nz, rows + 1, cols, 3..8);
        assert_eq!(band.len(), nz * 5 * cols);
        // Layer 1, band face 0 (the north edge of whole row 3) and band face 4 (the south
        // edge of whole row 6).
        assert_eq!(band[5 * cols], cv[(rows + 1 + 3) * cols]);
        assert_eq!(band[(5 + 4) * cols + 2], cv[(rows + 1 + 7) * cols + 2]);
        let c = layer_rows(&cells, nz, rows, cols, 3..7);
        assert_eq!(c[(4 + 2) * cols + 1], cells[(rows + 5) * cols + 1]);
    }
}
