//! The forest's yearly loop on the device: a stand kept in device memory (positions, DBH,
//! species and ids, struct of arrays) and the per-cell buffers of a year, with the steps the
//! library's `geofield::forest::simulate` runs on it (`kernels/forest_year.cu`):
//!
//! - [`DeviceStand::occupancy`]: trees and adults per coarse cell;
//! - [`DeviceStand::select`]: a species' trees at or above a DBH, downloaded (the parents: the
//!   host draws their seed production and runs the dispersal);
//! - [`DeviceStand::map_mut`]: a cover's expected-seed map (f32 per cell) for
//!   [`DeviceStand::cells`], which draws each cell's seed count and establishments and appends the
//!   new seedlings to the stand, in cell order;
//! - [`DeviceStand::survive`]: mortality, growth and the survivors compacted in order;
//! - [`DeviceStand::census`]: stage counts and basal areas per species.
//!
//! Every draw is the library's (`geofield::forest::rng`), to the bit: see the kernel file's
//! header. The stand grows as seedlings arrive (capacity × 1.5 when full).

use cudarc::driver::{CudaSlice, LaunchConfig, PushKernelArg};

use super::MODULE;
use crate::context::Gpu;
use crate::error::{CudaError, DriverResultExt, invalid};

const THREADS: u32 = 256;
/// Values per block of the scans (`FY_CHUNK`).
const CHUNK: usize = 256 * 16;
/// Blocks of a census launch: a fixed shape, so its sums are the same every run.
const CENSUS_BLOCKS: usize = 1024;

mod mirror;
mod readout;
mod scan;
mod types;

pub use types::{CellGrid, CellYear, Census, Coarse, Demography, GrowthLaw, HostTrees, SeedLaw};

use mirror::{FyCells, FyCoarse, FySpecies, FySurvive, fy_species};
pub use mirror::{SPILLS_ALLOWED, YEAR_KERNELS, YEAR_STRUCTS, year_struct_sizes};

/// The tree columns of one copy of the stand.
struct Columns {
    x: CudaSlice<f64>,
    y: CudaSlice<f64>,
    dbh: CudaSlice<f64>,
    sp: CudaSlice<u32>,
    id: CudaSlice<u64>,
}

impl Columns {
    fn new(gpu: &Gpu, cap: usize) -> Result<Self, CudaError> {
        Ok(Columns {
            x: gpu.zeros(cap, "tree x")?,
            y: gpu.zeros(cap, "tree y")?,
            dbh: gpu.zeros(cap, "tree DBH")?,
            sp: gpu.zeros(cap, "tree species")?,
            id: gpu.zeros(cap, "tree ids")?,
        })
    }

    fn cap(&self) -> usize {
        self.x.len()
    }
}

/// A stand in device memory and a year's per-cell buffers; see the [module docs](self).
pub struct DeviceStand<'g> {
    gpu: &'g Gpu,
    grid: CellGrid,
    coarse: FyCoarse,
    n_species: usize,
    species: CudaSlice<FySpecies>,
    n: usize,
    trees: Columns,
    spare: Columns,
    all: CudaSlice<u32>,
    adults: CudaSlice<u32>,
    flags: CudaSlice<u32>,
    offs: CudaSlice<u32>,
    maps: [CudaSlice<f32>; 2],
    est: CudaSlice<u32>,
    counts: Vec<CudaSlice<u32>>,
    /// The suitability per cell (one unread value without one).
    suit: CudaSlice<f32>,
    has_suit: bool,
}

fn launch_err(kernel: &str) -> impl FnOnce(cudarc::driver::DriverError) -> CudaError + '_ {
    move |source| CudaError::Driver {
        action: format!("launching {kernel}"),
        source,
    }
}

impl<'g> DeviceStand<'g> {
    /// Uploads `trees` (at most `u32::MAX`) with the species' demography, and allocates the
    /// buffers of `grid` (counts kept for every species) and of `coarse`; `suitability` holds one
    /// value per cell when given. Checks the device's free memory first.
    pub fn new(
        gpu: &'g Gpu,
        grid: CellGrid,
        coarse: Coarse,
        species: &[Demography],
        trees: &HostTrees,
        suitability: Option<&[f32]>,
    ) -> Result<Self, CudaError> {
        let n = trees.x_m.len();
        let n_cells = grid.cols.saturating_mul(grid.rows);
        let n_coarse = coarse.cols.saturating_mul(coarse.rows);
        if [
            &trees.y_m.len(),
            &trees.dbh_cm.len(),
            &trees.species.len(),
            &trees.id.len(),
        ]
        .iter()
        .any(|&&l| l != n)
        {
            return Err(invalid("forest_year", "tree columns of different lengths"));
        }
        if n_cells == 0 || n_cells == usize::MAX || n_coarse == 0 || n_coarse == usize::MAX {
            return Err(invalid("forest_year", "an empty or overflowing grid"));
        }
        if species.is_empty() || species.len() > 256 {
            return Err(invalid("forest_year", "between 1 and 256 species"));
        }
        if let Some(&s) = trees.species.iter().find(|&&s| s as usize >= species.len()) {
            return Err(invalid("forest_year", format!("a tree of species {s}")));
        }
        if n > u32::MAX as usize {
            return Err(invalid(
                "forest_year",
                format!("{n} trees: at most 2^32 - 1"),
            ));
        }
        if suitability.is_some_and(|s| s.len() != n_cells) {
            return Err(invalid("forest_year", "the suitability layer's size"));
        }
        let cap = (n + n / 2).max(1 << 16);
        let cell_bytes = n_cells as u64
            * (4 * 3 + 4 * species.len() as u64 + 4 * u64::from(suitability.is_some()));
        let tree_bytes = cap as u64 * (2 * 36 + 8);
        gpu.ensure_free(
            "the forest's stand and per-cell buffers",
            cell_bytes + tree_bytes + 8 * n_coarse as u64,
        )?;
        let _held = gpu.hold();
        let table: Vec<FySpecies> = species.iter().map(fy_species).collect();
        let mut cols = Columns::new(gpu, cap)?;
        {
            let s = gpu.stream();
            let doing = "copying the stand to the device";
            if n > 0 {
                s.memcpy_htod(&trees.x_m, &mut cols.x.slice_mut(0..n))
                    .doing(doing)?;
                s.memcpy_htod(&trees.y_m, &mut cols.y.slice_mut(0..n))
                    .doing(doing)?;
                s.memcpy_htod(&trees.dbh_cm, &mut cols.dbh.slice_mut(0..n))
                    .doing(doing)?;
                s.memcpy_htod(&trees.species, &mut cols.sp.slice_mut(0..n))
                    .doing(doing)?;
                s.memcpy_htod(&trees.id, &mut cols.id.slice_mut(0..n))
                    .doing(doing)?;
            }
        }
        let fc = FyCoarse {
            x_min_m: coarse.x_min_m,
            y_max_m: coarse.y_max_m,
            cell_m: coarse.cell_m,
            cols_f: coarse.cols as f64,
            rows_f: coarse.rows as f64,
            cols: coarse.cols as u64,
            n_cells: n_coarse as u64,
            pad: 0,
        };
        let suit = gpu.upload(suitability.unwrap_or(&[]), "the suitability layer")?;
        Ok(DeviceStand {
            gpu,
            grid,
            coarse: fc,
            n_species: species.len(),
            species: gpu.upload(&table, "the species' demography")?,
            n,
            spare: Columns::new(gpu, cap)?,
            trees: cols,
            all: gpu.zeros(n_coarse, "trees per coarse cell")?,
            adults: gpu.zeros(n_coarse, "adults per coarse cell")?,
            flags: gpu.zeros(cap, "tree flags")?,
            offs: gpu.zeros(cap.max(n_cells), "prefix sums")?,
            maps: [
                gpu.zeros(n_cells, "the canopy parents' map")?,
                gpu.zeros(n_cells, "the gap parents' map")?,
            ],
            est: gpu.zeros(n_cells, "establishments per cell")?,
            counts: (0..species.len())
                .map(|_| gpu.zeros(n_cells, "seed counts per cell"))
                .collect::<Result<_, _>>()?,
            suit,
            has_suit: suitability.is_some(),
        })
    }

    /// Trees in the stand.
    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    fn n_cells(&self) -> usize {
        self.grid.cols * self.grid.rows
    }

    fn cfg(&self, items: usize) -> LaunchConfig {
        let blocks = items
            .div_ceil(THREADS as usize)
            .min(self.gpu.info().multiprocessors.max(1) as usize * 32)
            .max(1) as u32;
        LaunchConfig {
            grid_dim: (blocks, 1, 1),
            block_dim: (THREADS, 1, 1),
            shared_mem_bytes: 0,
        }
    }

    /// Counts the trees and adults of every coarse cell (the start of a year).
    pub fn occupancy(&mut self) -> Result<(), CudaError> {
        let gpu = self.gpu;
        let _held = gpu.hold();
        let s = gpu.stream();
        s.memset_zeros(&mut self.all)
            .doing("zeroing the occupancy")?;
        s.memset_zeros(&mut self.adults)
            .doing("zeroing the occupancy")?;
        if self.n == 0 {
            return Ok(());
        }
        let f = gpu.function(MODULE, "forest_occupancy")?;
        let n = self.n as u64;
        let cfg = self.cfg(self.n);
        let mut b = s.launch_builder(&f);
        b.arg(&self.coarse)
            .arg(&self.trees.x)
            .arg(&self.trees.y)
            .arg(&self.trees.dbh)
            .arg(&self.trees.sp)
            .arg(&self.species)
            .arg(&n)
            .arg(&mut self.all)
            .arg(&mut self.adults);
        // SAFETY: forest_occupancy(FyCoarse, const double* x, y, dbh, const u32* sp, const
        // FySpecies*, u64 n, u32* all, u32* adults) in order and type; the columns hold ≥ n
        // entries, every species index is < the table's length (checked on upload; the
        // kernels write only indices from it), and all/adults hold coarse.n_cells entries, the
        // only indices fy_coarse_of returns.
        unsafe { b.launch(cfg) }.map_err(launch_err("forest_occupancy"))?;
        Ok(())
    }

    /// Adults per coarse cell, as [`Self::occupancy`] counted them.
    pub fn adults_per_coarse_cell(&self) -> Result<Vec<u32>, CudaError> {
        let _held = self.gpu.hold();
        self.gpu
            .download(&self.adults, self.adults.len(), "adults per coarse cell")
    }

    /// The trees of species `s` with DBH ≥ `min_dbh_cm`, in stand order, copied to the host.
    pub fn select(&mut self, s: u32, min_dbh_cm: f64) -> Result<HostTrees, CudaError> {
        let gpu = self.gpu;
        let _held = gpu.hold();
        if self.n == 0 {
            return Ok(HostTrees::default());
        }
        let n = self.n as u64;
        let cfg = self.cfg(self.n);
        {
            let f = gpu.function(MODULE, "forest_select")?;
            let mut b = gpu.stream().launch_builder(&f);
            b.arg(&self.trees.dbh)
                .arg(&self.trees.sp)
                .arg(&n)
                .arg(&s)
                .arg(&min_dbh_cm)
                .arg(&mut self.flags);
            // SAFETY: forest_select(const double* dbh, const u32* sp, u64 n, u32 s, double
            // min_dbh, u32* flag); the columns and flags hold ≥ n entries.
            unsafe { b.launch(cfg) }.map_err(launch_err("forest_select"))?;
        }
        let m = Self::scan(gpu, &self.flags, self.n, &mut self.offs)? as usize;
        let mut out = Columns::new(gpu, m)?;
        self.compact_into(&mut out)?;
        Ok(HostTrees {
            x_m: gpu.download(&out.x, m, "parent x")?,
            y_m: gpu.download(&out.y, m, "parent y")?,
            dbh_cm: gpu.download(&out.dbh, m, "parent DBH")?,
            species: gpu.download(&out.sp, m, "parent species")?,
            id: gpu.download(&out.id, m, "parent ids")?,
        })
    }

    /// The flagged trees (flags and offs of the current stand) into `dst` (held by the caller).
    fn compact_into(&self, dst: &mut Columns) -> Result<(), CudaError> {
        let gpu = self.gpu;
        let f = gpu.function(MODULE, "forest_compact")?;
        let n = self.n as u64;
        let cfg = self.cfg(self.n);
        let mut b = gpu.stream().launch_builder(&f);
        b.arg(&n)
            .arg(&self.flags)
            .arg(&self.offs)
            .arg(&self.trees.x)
            .arg(&self.trees.y)
            .arg(&self.trees.dbh)
            .arg(&self.trees.sp)
            .arg(&self.trees.id)
            .arg(&mut dst.x)
            .arg(&mut dst.y)
            .arg(&mut dst.dbh)
            .arg(&mut dst.sp)
            .arg(&mut dst.id);
        // SAFETY: forest_compact(u64 n, const u32* flag, const u32* off, const double* x, y, dbh,
        // const u32* sp, const u64* id, double* dx, dy, ddbh, u32* dsp, u64* did); the sources,
        // flags and offs hold ≥ n entries (offs: the exclusive sums of flags, from the scan), and
        // dst holds at least the flagged count (the scan's total), the largest index written + 1.
        unsafe { b.launch(cfg) }.map_err(launch_err("forest_compact"))?;
        Ok(())
    }

    /// Cover `cover`'s (0 canopy, 1 gap) map, f32 per cell, for [`Self::cells`].
    pub fn map_mut(&mut self, cover: usize) -> &mut CudaSlice<f32> {
        &mut self.maps[cover.min(1)]
    }

    /// Copies rows of a host map into cover `cover`'s map from grid row `row0` on.
    pub fn upload_map_rows(
        &mut self,
        cover: usize,
        row0: usize,
        rows: &[f32],
    ) -> Result<(), CudaError> {
        let start = row0.saturating_mul(self.grid.cols);
        let end = start.saturating_add(rows.len());
        if end > self.n_cells() {
            return Err(invalid("forest_cells", "map rows beyond the grid"));
        }
        let gpu = self.gpu;
        let _held = gpu.hold();
        gpu.stream()
            .memcpy_htod(rows, &mut self.maps[cover.min(1)].slice_mut(start..end))
            .doing("copying a seed map to the device")
    }

    /// Species `y.species`' cells this year: each cell's expected seeds from the maps `y.maps`
    /// names, the survival to the landing cover (by the adults of [`Self::occupancy`]), the
    /// tail and the rain; its seed count (kept: [`Self::counts`]) and establishments; the new
    /// seedlings appended to the stand in cell order with ids from `y.first_id`. Returns the
    /// seeds and the new seedlings.
    pub fn cells(&mut self, y: &CellYear) -> Result<(u64, u64), CudaError> {
        let s = usize::from(y.species);
        if s >= self.n_species {
            return Err(invalid("forest_cells", format!("species {s}")));
        }
        let (kind, a) = match y.law {
            SeedLaw::Deterministic => (0u32, 0.0),
            SeedLaw::Poisson => (1, 0.0),
            SeedLaw::NegativeBinomial { clumping } => (2, clumping),
            SeedLaw::Normal { sd } => (3, sd),
            SeedLaw::Lognormal { sigma } => (4, sigma),
        };
        let g = self.grid;
        let n_cells = self.n_cells();
        let p = FyCells {
            coarse: self.coarse,
            x_min_m: g.x_min_m,
            y_max_m: g.y_max_m,
            cell_m: g.cell_m,
            area: g.cell_m * g.cell_m,
            keep: y.keep,
            tail: y.tail,
            rain: y.rain.unwrap_or(0.0),
            dist_a: a,
            p_est: y.establishment,
            seedling_dbh_cm: y.seedling_dbh_cm,
            cols: g.cols as u64,
            n_cells: n_cells as u64,
            key0: y.seed as u32,
            key1: (y.seed >> 32) as u32,
            year: y.year,
            species: u32::from(y.species),
            dist_kind: kind,
            has_map0: u32::from(y.maps[0]),
            has_map1: u32::from(y.maps[1]),
            has_landing: u32::from(y.landing),
            has_rain: u32::from(y.rain.is_some()),
            has_suit: u32::from(self.has_suit),
            max_gap_density: y.max_gap_density,
            pad: 0,
        };
        let gpu = self.gpu;
        let _held = gpu.hold();
        let cfg = self.cfg(n_cells);
        {
            let f = gpu.function(MODULE, "forest_cells")?;
            let mut b = gpu.stream().launch_builder(&f);
            b.arg(&p)
                .arg(&self.maps[0])
                .arg(&self.maps[1])
                .arg(&self.adults)
                .arg(&self.suit)
                .arg(&mut self.counts[s])
                .arg(&mut self.est);
            // SAFETY: forest_cells(FyCells, const float* map0, map1, const u32* adults, const
            // float* suit, u32* counts, u32* est); the maps, counts and est hold n_cells values,
            // adults coarse.n_cells (the indices fy_coarse_of returns), suit n_cells when
            // has_suit (else one value, never read).
            unsafe { b.launch(cfg) }.map_err(launch_err("forest_cells"))?;
        }
        let seeds = self.sum(s)?;
        let born = Self::scan(gpu, &self.est, n_cells, &mut self.offs)? as usize;
        if born == 0 {
            return Ok((seeds, 0));
        }
        let need = self.n.checked_add(born).filter(|&t| t <= u32::MAX as usize);
        let Some(need) = need else {
            return Err(invalid(
                "forest_place",
                format!(
                    "{} trees and {born} new seedlings: more than 2^32 - 1",
                    self.n
                ),
            ));
        };
        self.reserve(need)?;
        {
            let f = gpu.function(MODULE, "forest_place")?;
            let (base, first) = (self.n as u64, y.first_id);
            let mut b = gpu.stream().launch_builder(&f);
            b.arg(&p)
                .arg(&self.counts[s])
                .arg(&self.offs)
                .arg(&self.suit)
                .arg(&base)
                .arg(&first)
                .arg(&mut self.trees.x)
                .arg(&mut self.trees.y)
                .arg(&mut self.trees.dbh)
                .arg(&mut self.trees.sp)
                .arg(&mut self.trees.id);
            // SAFETY: forest_place(FyCells, const u32* counts, const u32* off, const float*
            // suit, u64 base, u64 first_id, double* x, y, dbh, u32* sp, u64* id); counts and off
            // hold n_cells values (off: the exclusive sums of the establishments the same draws
            // give), and the columns hold ≥ base + born entries (reserved), the largest index
            // written + 1.
            unsafe { b.launch(cfg) }.map_err(launch_err("forest_place"))?;
        }
        self.n = need;
        Ok((seeds, born as u64))
    }

    /// The sum of species `s`' seed counts.
    fn sum(&self, s: usize) -> Result<u64, CudaError> {
        Ok(Self::block_sums(self.gpu, &self.counts[s], self.n_cells())?
            .iter()
            .sum())
    }

    /// Room for `need` trees (the columns and the flags grow by half again when short).
    fn reserve(&mut self, need: usize) -> Result<(), CudaError> {
        if need <= self.trees.cap() {
            return Ok(());
        }
        let gpu = self.gpu;
        let cap = (need + need / 2).min(u32::MAX as usize);
        gpu.ensure_free("the growing stand", cap as u64 * (2 * 36 + 8))?;
        let mut grown = Columns::new(gpu, cap)?;
        let n = self.n;
        let s = gpu.stream();
        let doing = "growing the stand";
        if n > 0 {
            s.memcpy_dtod(&self.trees.x.slice(0..n), &mut grown.x.slice_mut(0..n))
                .doing(doing)?;
            s.memcpy_dtod(&self.trees.y.slice(0..n), &mut grown.y.slice_mut(0..n))
                .doing(doing)?;
            s.memcpy_dtod(&self.trees.dbh.slice(0..n), &mut grown.dbh.slice_mut(0..n))
                .doing(doing)?;
            s.memcpy_dtod(&self.trees.sp.slice(0..n), &mut grown.sp.slice_mut(0..n))
                .doing(doing)?;
            s.memcpy_dtod(&self.trees.id.slice(0..n), &mut grown.id.slice_mut(0..n))
                .doing(doing)?;
        }
        self.trees = grown;
        self.spare = Columns::new(gpu, cap)?;
        self.flags = gpu.zeros(cap, "tree flags")?;
        if self.offs.len() < cap {
            self.offs = gpu.zeros(cap, "prefix sums")?;
        }
        Ok(())
    }

    /// Mortality and growth of `year`: the first `existing` trees were counted by this year's
    /// [`Self::occupancy`]; survivors keep their order.
    pub fn survive(&mut self, existing: usize, seed: u64, year: u32) -> Result<(), CudaError> {
        if self.n == 0 {
            return Ok(());
        }
        let gpu = self.gpu;
        let _held = gpu.hold();
        let p = FySurvive {
            coarse: self.coarse,
            n: self.n as u64,
            existing: existing as u64,
            key0: seed as u32,
            key1: (seed >> 32) as u32,
            year,
            pad: 0,
        };
        let cfg = self.cfg(self.n);
        {
            let f = gpu.function(MODULE, "forest_survive")?;
            let mut b = gpu.stream().launch_builder(&f);
            b.arg(&p)
                .arg(&self.trees.x)
                .arg(&self.trees.y)
                .arg(&mut self.trees.dbh)
                .arg(&self.trees.sp)
                .arg(&self.trees.id)
                .arg(&self.all)
                .arg(&self.species)
                .arg(&mut self.flags);
            // SAFETY: forest_survive(FySurvive, const double* x, y, double* dbh, const u32* sp,
            // const u64* id, const u32* all, const FySpecies*, u32* keep); the columns and flags
            // hold ≥ n entries, all coarse.n_cells, species indices < the table's length.
            unsafe { b.launch(cfg) }.map_err(launch_err("forest_survive"))?;
        }
        let m = Self::scan(gpu, &self.flags, self.n, &mut self.offs)? as usize;
        let mut dst = std::mem::replace(&mut self.spare, Columns::new(gpu, 1)?);
        self.compact_into(&mut dst)?;
        self.spare = std::mem::replace(&mut self.trees, dst);
        self.n = m;
        Ok(())
    }
}
