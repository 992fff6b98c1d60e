//! `<plot>` (lengths, timesteps, years per timestep, random seed), the species list and the
//! "Dispersed Seeds" grid's cell size.

use std::path::Path;

use roxmltree::Document;

use super::Reader;
use super::xml::{Ctx, Range, children, first};
use crate::input_error::{InputError, quote};

/// SORTIE-ND's grid cell side when the file does not set it (m).
pub(super) const DEFAULT_CELL_M: f64 = 8.0;

/// The species of `<tr_speciesList>`, in order.
pub(super) fn species_list(doc: &Document, path: &Path) -> Result<Vec<String>, InputError> {
    let ctx = Ctx {
        path,
        doc,
        species: Vec::new(),
    };
    let list = first(doc.root(), "tr_speciesList").ok_or_else(|| {
        ctx.invalid("no <tr_speciesList>: a SORTIE-ND parameter file names its species in <trees><tr_speciesList>")
    })?;
    let mut out: Vec<String> = Vec::new();
    for s in children(list, "tr_species") {
        let name = s.attribute("speciesName").ok_or_else(|| {
            ctx.err(
                s,
                "element <tr_species>",
                "missing: the speciesName attribute",
            )
        })?;
        if out.iter().any(|n| n == name) {
            return Err(ctx.err(
                s,
                "element <tr_species>",
                format!("species {} is listed twice", quote(name)),
            ));
        }
        out.push(name.to_string());
    }
    if out.is_empty() {
        return Err(ctx.err(list, "element <tr_speciesList>", "no <tr_species>"));
    }
    Ok(out)
}

impl Reader<'_, '_, '_> {
    /// `<plot>`: lengths, timesteps, years per timestep, random seed.
    pub(super) fn plot(&mut self) -> Result<(), InputError> {
        let ctx = self.ctx;
        let plot = first(ctx.doc.root(), "plot")
            .ok_or_else(|| ctx.invalid("no <plot>: the file gives no plot size"))?;
        for (i, tag) in ["plot_lenX", "plot_lenY"].into_iter().enumerate() {
            let node = first(plot, tag).ok_or_else(|| {
                ctx.err(
                    plot,
                    format!("element <{tag}>"),
                    "missing: the plot's length in m",
                )
            })?;
            self.plot_len_m[i] = ctx.number(node, &format!("element <{tag}>"), Range::Positive)?;
        }
        let count = |tag: &str| -> Result<Option<u32>, InputError> {
            let Some(node) = first(plot, tag) else {
                return Ok(None);
            };
            let field = format!("element <{tag}>");
            let v = ctx.integer(node, &field)?;
            u32::try_from(v)
                .ok()
                .filter(|&v| v > 0)
                .map(Some)
                .ok_or_else(|| ctx.err(node, field, format!("{v} must be a whole number >= 1")))
        };
        self.years_per_timestep = count("yearsPerTimestep")?.unwrap_or(1);
        let timesteps = count("timesteps")?;
        self.years = match timesteps {
            Some(t) => Some(t.checked_mul(self.years_per_timestep).ok_or_else(|| {
                ctx.invalid(format!(
                    "timesteps {t} x yearsPerTimestep {} is too many years",
                    self.years_per_timestep
                ))
            })?),
            None => None,
        };
        if let Some(node) = first(plot, "randomSeed") {
            let v = ctx.integer(node, "element <randomSeed>")?;
            self.seed = (v != 0).then_some(v.unsigned_abs());
        }
        let [x, y] = self.plot_len_m;
        self.mapping.push(format!(
            "plot: {x} m x {y} m (plot_lenX, plot_lenY), a torus as in SORTIE-ND"
        ));
        self.mapping.push(match (timesteps, self.years) {
            (Some(t), Some(years)) => format!(
                "run: {t} timesteps x {} years = {years} years; geofield runs yearly with the annual rates (SORTIE-ND multiplies seeds, growth and mortality per timestep)",
                self.years_per_timestep
            ),
            _ => "run: no <timesteps>; the number of years is up to the caller".into(),
        });
        self.mapping.push(match self.seed {
            Some(s) => format!("randomSeed -> seed {s}"),
            None => "randomSeed absent or 0 (SORTIE-ND seeds from the clock): no seed".into(),
        });
        Ok(())
    }

    /// The "Dispersed Seeds" grid's cell size: the gap (and neighbour) cells.
    pub(super) fn grid(&mut self) -> Result<(), InputError> {
        let ctx = self.ctx;
        let grid = ctx.doc.descendants().find(|n| {
            n.is_element()
                && n.tag_name().name() == "grid"
                && n.attribute("gridName") == Some("Dispersed Seeds")
        });
        let cell = |tag: &str| -> Result<Option<f64>, InputError> {
            match grid.and_then(|g| first(g, tag)) {
                Some(n) => ctx
                    .number(
                        n,
                        &format!("element <{tag}> of grid \"Dispersed Seeds\""),
                        Range::Positive,
                    )
                    .map(Some),
                None => Ok(None),
            }
        };
        let (x, y) = (cell("ma_lengthXCells")?, cell("ma_lengthYCells")?);
        self.gap_cell_m = x.unwrap_or(DEFAULT_CELL_M);
        let mut line = match x {
            Some(v) => format!("gap cells: {v} m (\"Dispersed Seeds\" ma_lengthXCells)"),
            None => format!(
                "gap cells: {DEFAULT_CELL_M} m (SORTIE-ND's default; the file sets no \"Dispersed Seeds\" cell size)"
            ),
        };
        if let Some(y) = y
            && y != self.gap_cell_m
        {
            line.push_str(&format!(
                "; SORTIE-ND's cells are {y} m in Y, geofield's are square"
            ));
        }
        self.mapping.push(line);
        Ok(())
    }
}
