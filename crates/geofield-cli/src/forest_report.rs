//! `geofield forest`'s results: one case's output as the MPI ranks send it, and the run's
//! summary (printed, and the `--json` file).

use geofield::forest::output::CountsRow;
use geofield::forest::simulate::Timing;

/// One case's results (see `run`), sent between MPI ranks as JSON.
#[derive(Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct CaseOut {
    pub(crate) rows: Vec<CountsRow>,
    pub(crate) recruits: Vec<u64>,
    pub(crate) label: String,
    pub(crate) timing: Timing,
}

#[derive(serde::Serialize)]
pub(crate) struct Summary {
    pub(crate) backend: String,
    pub(crate) grid: (usize, usize, f64),
    pub(crate) species: Vec<String>,
    pub(crate) initial_trees: usize,
    pub(crate) years: u32,
    pub(crate) seed: u64,
    pub(crate) replicates: u32,
    pub(crate) mode: String,
    pub(crate) methods: Vec<String>,
    pub(crate) final_trees: usize,
    pub(crate) recruits_per_year: Vec<Vec<u64>>,
    pub(crate) recruit_difference_per_year: Option<Vec<f64>>,
    pub(crate) timing: Timing,
    pub(crate) run_s: f64,
    pub(crate) seconds_total: f64,
}

impl Summary {
    pub(crate) fn print(&self, names: &[String], rows: &[CountsRow]) {
        println!(
            "forest: {} x {} cells of {} m, {} species, {} trees, {} years, seed {}, {} replicate(s), {} dispersal ({}), backend {}",
            self.grid.0,
            self.grid.1,
            self.grid.2,
            names.len(),
            self.initial_trees,
            self.years,
            self.seed,
            self.replicates,
            self.mode,
            self.methods.join(" vs "),
            self.backend
        );
        // The last year of replicate 0 of the first method, per species.
        let first = rows.first().map(|r| r.method.clone()).unwrap_or_default();
        println!("  year {} (replicate 0, {first}):", self.years);
        println!(
            "  {:<20} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10}",
            "species", "seeds", "recruits", "seedlings", "saplings", "adults", "BA m2/ha"
        );
        for r in rows
            .iter()
            .filter(|r| r.year == self.years && r.replicate == 0 && r.method == first)
        {
            println!(
                "  {:<20} {:>12} {:>10} {:>10} {:>10} {:>10} {:>10.2}",
                r.species,
                r.seeds,
                r.recruits,
                r.seedlings,
                r.saplings,
                r.adults,
                r.basal_area_m2_per_ha
            );
        }
        if let Some(d) = &self.recruit_difference_per_year {
            let v: Vec<f64> = d.iter().copied().filter(|x| x.is_finite()).collect();
            let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
            let max = v.iter().copied().fold(0.0, f64::max);
            println!(
                "  recruits, {} vs {}: relative difference per year mean {:.2} %, max {:.2} % (the seed paper's Fig. 13: mean 1.9 %, max 3.1 %)",
                self.methods.get(1).map_or("", String::as_str),
                self.methods.first().map_or("", String::as_str),
                100.0 * mean,
                100.0 * max
            );
            let per: Vec<String> = d.iter().map(|x| format!("{:.2}", 100.0 * x)).collect();
            println!("  per year (%): {}", per.join(" "));
        }
        let t = &self.timing;
        println!(
            "  time: {:.2} s (dispersal {:.2} s, counts {:.2} s, establishment {:.2} s, demography {:.2} s)",
            self.run_s, t.dispersal_s, t.counts_s, t.establishment_s, t.demography_s
        );
    }
}
