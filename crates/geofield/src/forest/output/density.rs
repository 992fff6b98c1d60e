//! Seed and seedling densities per year and species on a coarser grid, kept for NetCDF.
//!
//! The output grid's cell is k × k cells of the run grid (k ≥ 1), from the run grid's north-west
//! corner: it has ⌈cols/k⌉ × ⌈rows/k⌉ cells, and a block at the east or south edge that holds
//! fewer than k × k run cells covers only those (its density is over their area). For output
//! cell B with real area A_B = n_B c² (n_B run cells of side c), in year t and species s:
//!
//! - `seed_density` = Σ_{cells in B} seeds_s(cell) / A_B, the seeds that landed that year per
//!   m² (0 in year 0, in which nothing is dispersed);
//! - `seedling_density` = #{trees of s at the end of year t whose stage is seedling, standing
//!   in B} / A_B, per m² (a tree belongs to the run cell that holds it, a tree on the east or
//!   south edge to the last column or row; trees off the grid are not counted).
//!
//! Both are kept as `f32` (2 fields × years × species × output cells × 4 bytes, checked against
//! the machine's available memory before anything is allocated) in the file's own order, so
//! the NetCDF writer writes them without a copy.
//!
//! [`write_density_nc`](super::density_nc::write_density_nc) writes them as CF-1.8 NetCDF.

use geofield_core::GridSpec;

use crate::GeofieldError;
use crate::forest::params::{ForestParams, Stage};
use crate::forest::simulate::Year;

/// Seed and seedling densities per year and species (see the module docs).
#[derive(Debug, Clone)]
pub struct DensityStack {
    pub(super) run: GridSpec,
    pub(super) k: usize,
    pub(super) cols: usize,
    pub(super) rows: usize,
    pub(super) species: Vec<String>,
    pub(super) n_years_max: usize,
    pub(super) years: Vec<i32>,
    /// (time, species, y, x), y = 0 the southernmost row of blocks.
    pub(super) seed: Vec<f32>,
    pub(super) seedling: Vec<f32>,
    /// Real area of each output cell in m², same (y, x) order.
    pub(super) area_m2: Vec<f64>,
    /// Why a year was refused, if one was.
    pub(super) problem: Option<String>,
}

/// Bytes a stack of `years` × `species` × `cells` needs: two `f32` fields.
fn stack_bytes(years: usize, species: usize, cells: usize) -> u128 {
    2 * 4 * years as u128 * species as u128 * cells as u128
}

/// Human-readable size.
fn gib(bytes: u128) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

impl DensityStack {
    /// A stack for up to `n_years_max` years of `species` on blocks of `k` × `k` cells of
    /// `run_grid`. Refuses, before allocating, a stack larger than the machine's available
    /// memory (the message gives the size and the smallest k that would fit).
    ///
    /// ```
    /// use geofield::forest::output::DensityStack;
    /// use geofield_core::{Extent, GridSpec};
    ///
    /// let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 50.0, 30.0)?, 1.0)?;
    /// let stack = DensityStack::new(&grid, 4, vec!["ABLA".into(), "PICO".into()], 11)?;
    /// assert_eq!(stack.shape(), (13, 8)); // ⌈50/4⌉ columns, ⌈30/4⌉ rows
    /// assert!(DensityStack::new(&grid, 0, vec!["ABLA".into()], 11).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(
        run_grid: &GridSpec,
        k: usize,
        species: Vec<String>,
        n_years_max: usize,
    ) -> Result<Self, GeofieldError> {
        if k == 0 || n_years_max == 0 || species.is_empty() {
            return Err(GeofieldError::Invalid(format!(
                "a density stack needs a block of at least 1 cell, at least 1 year and 1 \
                 species, got k = {k}, {n_years_max} years, {} species",
                species.len()
            )));
        }
        let (cols, rows) = (run_grid.cols.div_ceil(k), run_grid.rows.div_ceil(k));
        let cells = cols * rows;
        let need = stack_bytes(n_years_max, species.len(), cells);
        let limit = geofield_core::memory::memory_limit_bytes();
        if need > limit {
            let side = run_grid.cols.max(run_grid.rows).max(1);
            let fits = (k + 1..=side).find(|&k2| {
                let c = run_grid.cols.div_ceil(k2) * run_grid.rows.div_ceil(k2);
                stack_bytes(n_years_max, species.len(), c) <= limit
            });
            let advice = match fits {
                Some(k2) => format!(
                    "use a coarser density cell: {k2} run cells ({} m) would fit",
                    k2 as f64 * run_grid.cell_size_m
                ),
                None => "use fewer years or a smaller extent".to_string(),
            };
            return Err(GeofieldError::Invalid(format!(
                "the seed and seedling densities of {n_years_max} years x {} species on \
                 {cols} x {rows} cells of {} m (2 f32 fields) would need {}, more than the {} \
                 of memory available: {advice}",
                species.len(),
                k as f64 * run_grid.cell_size_m,
                gib(need),
                gib(limit)
            )));
        }
        let n = n_years_max * species.len() * cells;
        let mut seed = Vec::new();
        let mut seedling = Vec::new();
        let reserved = seed.try_reserve_exact(n).and(seedling.try_reserve_exact(n));
        if reserved.is_err() {
            return Err(GeofieldError::Invalid(format!(
                "cannot allocate {} for the seed and seedling densities: use a coarser density \
                 cell",
                gib(need)
            )));
        }
        let c2 = run_grid.cell_size_m * run_grid.cell_size_m;
        let area_m2 = (0..cells)
            .map(|i| {
                let (j, x) = (i / cols, i % cols);
                let by = rows - 1 - j;
                let real = |block: usize, n: usize| (n - block * k).min(k);
                (real(by, run_grid.rows) * real(x, run_grid.cols)) as f64 * c2
            })
            .collect();
        Ok(DensityStack {
            run: *run_grid,
            k,
            cols,
            rows,
            species,
            n_years_max,
            years: Vec::with_capacity(n_years_max.min(1 << 20)),
            seed,
            seedling,
            area_m2,
            problem: None,
        })
    }

    /// Output grid size as (cols, rows).
    pub fn shape(&self) -> (usize, usize) {
        (self.cols, self.rows)
    }

    /// Side of an output cell in m (k times the run cell).
    pub fn cell_size_m(&self) -> f64 {
        self.k as f64 * self.run.cell_size_m
    }

    /// The species names, in order.
    pub fn species(&self) -> &[String] {
        &self.species
    }

    /// The years pushed so far, in order.
    pub fn years(&self) -> &[i32] {
        &self.years
    }

    /// Why a pushed year was refused (then [`write_density_nc`](super::write_density_nc) refuses the stack), if one was.
    pub fn problem(&self) -> Option<&str> {
        self.problem.as_deref()
    }

    /// Seed density of the `t`-th year pushed and species `s`, rows from the south.
    pub fn seed_density(&self, t: usize, s: usize) -> Option<&[f32]> {
        self.plane(&self.seed, t, s)
    }

    /// Seedling density of the `t`-th year pushed and species `s`, rows from the south.
    pub fn seedling_density(&self, t: usize, s: usize) -> Option<&[f32]> {
        self.plane(&self.seedling, t, s)
    }

    fn plane<'a>(&self, v: &'a [f32], t: usize, s: usize) -> Option<&'a [f32]> {
        let n = self.cols * self.rows;
        if s >= self.species.len() {
            return None;
        }
        let at = (t * self.species.len() + s) * n;
        v.get(at..at + n)
    }

    /// The output cell (south-first order) of run cell (row, col).
    #[inline]
    fn block(&self, row: usize, col: usize) -> usize {
        (self.rows - 1 - row / self.k) * self.cols + col / self.k
    }

    /// Add the densities of `year`. A year that does not fit (more years than the stack was made
    /// for, species or seed counts of another shape) is not added, and the reason is kept for
    /// [`DensityStack::problem`] and [`write_density_nc`](super::write_density_nc); an error is
    /// only one fetching the year's seeds or trees (from the GPU).
    ///
    /// ```
    /// use geofield::forest::output::DensityStack;
    /// use geofield::forest::params::{ForestParams, ForestSpecies};
    /// use geofield::forest::simulate::{SpeciesYear, Year};
    /// use geofield::forest::trees::Trees;
    /// use geofield_core::{Extent, GridSpec};
    ///
    /// let grid = GridSpec::from_extent(Extent::new(0.0, 0.0, 4.0, 2.0)?, 1.0)?;
    /// let params = ForestParams {
    ///     species: geofield::synth::sbs_species().into_iter().take(1)
    ///         .map(ForestSpecies::with_defaults).collect(),
    ///     max_gap_density: 0, gap_cell_m: 8.0, torus: false,
    /// };
    /// let mut stack = DensityStack::new(&grid, 2, vec!["ABLA".into()], 1)?;
    /// let trees = Trees { x_m: vec![0.5], y_m: vec![1.5], dbh_cm: vec![0.1], species: vec![0],
    ///     id: vec![0] };
    /// let seeds = vec![vec![8, 0, 0, 0, 0, 0, 0, 4]];
    /// stack.push(&Year::new(1, vec![SpeciesYear::default()], vec![], &seeds, &trees), &params)?;
    /// assert_eq!(stack.seed_density(0, 0), Some(&[2.0f32, 1.0][..]));
    /// assert_eq!(stack.seedling_density(0, 0), Some(&[0.25f32, 0.0][..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push(&mut self, year: &Year, params: &ForestParams) -> Result<(), GeofieldError> {
        if self.problem.is_some() {
            return Ok(());
        }
        let seeds = year.seeds()?;
        if let Err(reason) = self.check(year.year, seeds, params) {
            self.problem = Some(reason);
            return Ok(());
        }
        let n_sp = self.species.len();
        let n = self.cols * self.rows;
        let mut sums = vec![0.0f64; n];
        for s in 0..n_sp {
            sums.iter_mut().for_each(|v| *v = 0.0);
            if let Some(counts) = seeds.get(s) {
                for (i, &c) in counts.iter().enumerate() {
                    let b = self.block(i / self.run.cols, i % self.run.cols);
                    sums[b] += f64::from(c);
                }
            }
            self.seed
                .extend(sums.iter().zip(&self.area_m2).map(|(v, a)| (v / a) as f32));
        }
        let mut counts = vec![0.0f64; n_sp * n];
        let t = year.trees()?;
        for i in 0..t.len() {
            let s = t.species[i] as usize;
            let Some(sp) = params.species.get(s) else {
                continue;
            };
            if sp.stage(t.dbh_cm[i]) != Stage::Seedling {
                continue;
            }
            if let Some((r, c)) = self.run.cell_of(t.x_m[i], t.y_m[i]) {
                counts[s * n + self.block(r, c)] += 1.0;
            }
        }
        for chunk in counts.chunks_exact(n) {
            self.seedling
                .extend(chunk.iter().zip(&self.area_m2).map(|(v, a)| (v / a) as f32));
        }
        self.years
            .push(i32::try_from(year.year).unwrap_or(i32::MAX));
        Ok(())
    }

    /// Why `year` cannot be added, if it cannot.
    fn check(&self, year: u32, seeds: &[Vec<u32>], params: &ForestParams) -> Result<(), String> {
        let n_sp = self.species.len();
        if self.years.len() >= self.n_years_max {
            return Err(format!(
                "year {} is one more than the {} years the density stack was made for",
                year, self.n_years_max
            ));
        }
        if params.species.len() != n_sp {
            return Err(format!(
                "year {}: the parameters have {} species, the density stack {n_sp}",
                year,
                params.species.len()
            ));
        }
        let cells = self.run.n_cells();
        if !seeds.is_empty() && (seeds.len() != n_sp || seeds.iter().any(|v| v.len() != cells)) {
            return Err(format!(
                "year {}: seed counts of {} species with {:?} cells, expected {n_sp} species \
                 of {cells} cells",
                year,
                seeds.len(),
                seeds.iter().map(Vec::len).collect::<Vec<_>>()
            ));
        }
        Ok(())
    }

    /// Centres (west to east) and bounds of the output columns.
    pub(super) fn x_axis(&self) -> (Vec<f64>, Vec<f64>) {
        let (x0, x_max, d) = (self.run.x_min_m, self.run.x_max_m(), self.cell_size_m());
        let centres: Vec<f64> = (0..self.cols).map(|i| x0 + (i as f64 + 0.5) * d).collect();
        let bounds = (0..self.cols)
            .flat_map(|i| [x0 + i as f64 * d, (x0 + (i + 1) as f64 * d).min(x_max)])
            .collect();
        (centres, bounds)
    }

    /// Centres (south to north) and bounds of the output rows.
    pub(super) fn y_axis(&self) -> (Vec<f64>, Vec<f64>) {
        let (y_max, y_min, d) = (self.run.y_max_m, self.run.y_min_m(), self.cell_size_m());
        let by = |j: usize| (self.rows - 1 - j) as f64;
        let centres: Vec<f64> = (0..self.rows).map(|j| y_max - (by(j) + 0.5) * d).collect();
        let bounds = (0..self.rows)
            .flat_map(|j| [(y_max - (by(j) + 1.0) * d).max(y_min), y_max - by(j) * d])
            .collect();
        (centres, bounds)
    }
}

#[cfg(test)]
#[path = "density_tests.rs"]
mod tests;
