//! The initial tree map, `<tr_treemap>` (`clTreePopulation::CreateTreesFromTreeMap`).
//!
//! `<tm_treeSettings sp="species name" tp="type code">` says, per species and type, which
//! `<tm_floatCode label="...">N</tm_floatCode>` code carries which value (X, Y, DBH, Diam10,
//! Height); each `<tree sp="species index" tp="type code">` then gives `<fl c="N">value</fl>`.
//! Type codes: 0 seed, 1 seedling, 2 sapling, 3 adult, 4 stump, 5 snag, 6 woody debris.
//! Seedlings have no DBH (SORTIE-ND measures them at 10 cm): they start at the species'
//! `seedling_dbh_cm`. Saplings and adults need a DBH: SORTIE-ND can derive one from Diam10 or
//! Height with its allometry, which geofield does not read. Dead trees are skipped.

use std::collections::HashMap;

use roxmltree::Node;

use super::behaviors::TreeType;
use super::xml::{Ctx, Range, children, first};
use crate::dispersal::Stand;
use crate::input_error::{InputError, quote};

/// The tree values geofield uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Label {
    X,
    Y,
    Dbh,
    /// Diam10 or Height: SORTIE-ND derives a DBH from them with its allometry.
    Allometric,
    Other,
}

impl Label {
    fn of(label: &str) -> Label {
        match label {
            "X" => Label::X,
            "Y" => Label::Y,
            "DBH" => Label::Dbh,
            "Diam10" | "Height" => Label::Allometric,
            _ => Label::Other,
        }
    }
}

/// Float codes per (species, type).
type Settings = HashMap<(usize, i64), HashMap<i64, Label>>;

fn settings(ctx: &Ctx, map: Node) -> Result<Settings, InputError> {
    let mut out: Settings = HashMap::new();
    for s in map
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "tm_treeSettings")
    {
        let field = "element <tm_treeSettings>";
        let name = s.attribute("sp").unwrap_or("");
        let sp = ctx
            .index(name)
            .ok_or_else(|| ctx.err(s, field, format!("unknown species {} in sp", quote(name))))?;
        let tp = type_code(ctx, s, field)?;
        let mut codes = HashMap::new();
        if let Some(fc) = first(s, "tm_floatCodes") {
            for code in children(fc, "tm_floatCode") {
                let label = code.attribute("label").unwrap_or("");
                let n = ctx.integer(
                    code,
                    &format!("element <tm_floatCode label={}>", quote(label)),
                )?;
                codes.insert(n, Label::of(label));
            }
        }
        if out.insert((sp, tp), codes).is_some() {
            return Err(ctx.err(
                s,
                field,
                format!("species {} type {tp} has two settings", quote(name)),
            ));
        }
    }
    Ok(out)
}

/// The `tp` attribute, a type code 0–6.
fn type_code(ctx: &Ctx, node: Node, field: &str) -> Result<i64, InputError> {
    let raw = node.attribute("tp").unwrap_or("");
    raw.trim()
        .parse::<i64>()
        .ok()
        .filter(|&c| TreeType::from_code(c).is_some())
        .ok_or_else(|| {
            ctx.err(
                node,
                field,
                format!(
                    "tp {} is not a tree type: expected 0 (seed) to 6 (woody debris)",
                    quote(raw)
                ),
            )
        })
}

/// The trees of the map (none when the file has no `<tr_treemap>`), with the mapping lines.
pub(super) fn read(
    ctx: &Ctx,
    plot_len_m: [f64; 2],
    seedling_dbh_cm: &[f64],
) -> Result<(Stand, Vec<String>), InputError> {
    let Some(map) = first(ctx.doc.root(), "tr_treemap") else {
        return Ok((
            Stand::default(),
            vec!["tree map: none (no tr_treemap): the stand starts empty".into()],
        ));
    };
    let settings = settings(ctx, map)?;
    let n_species = ctx.species.len();
    let (mut x, mut y, mut dbh, mut species) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut counts: HashMap<&'static str, usize> = HashMap::new();
    for t in map
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "tree")
    {
        let field = "element <tree>";
        let raw = t.attribute("sp").unwrap_or("");
        let sp = raw
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|&s| s < n_species)
            .ok_or_else(|| {
                ctx.err(
                    t,
                    field,
                    format!(
                        "sp {} is not a species index: expected 0 to {} (the order of tr_speciesList)",
                        quote(raw),
                        n_species - 1
                    ),
                )
            })?;
        let tp = type_code(ctx, t, field)?;
        let ty = TreeType::from_code(tp).unwrap_or(TreeType::Seed);
        let codes = settings.get(&(sp, tp)).ok_or_else(|| {
            ctx.err(
                t,
                field,
                format!(
                    "no <tm_treeSettings sp={} tp=\"{tp}\"> says what its values are",
                    ctx.name(sp)
                ),
            )
        })?;
        let (mut tx, mut ty_m, mut td, mut allometric) = (None, None, None, false);
        for fl in children(t, "fl") {
            let c = fl.attribute("c").unwrap_or("");
            let label = c
                .trim()
                .parse::<i64>()
                .ok()
                .and_then(|c| codes.get(&c))
                .ok_or_else(|| {
                    ctx.err(
                        fl,
                        "element <fl>",
                        format!(
                            "float code {} is not in the tree settings of its species and type",
                            quote(c)
                        ),
                    )
                })?;
            let what = match label {
                Label::X => &mut tx,
                Label::Y => &mut ty_m,
                Label::Dbh => &mut td,
                Label::Allometric => {
                    allometric = true;
                    continue;
                }
                Label::Other => continue,
            };
            *what = Some(ctx.number(fl, "element <fl>", Range::Any)?);
        }
        let kind = match ty {
            TreeType::Seedling => "seedlings",
            TreeType::Sapling => "saplings",
            TreeType::Adult => "adults",
            _ => {
                *counts.entry("dead or seed entries skipped").or_insert(0) += 1;
                continue;
            }
        };
        let (Some(tx), Some(tym)) = (tx, ty_m) else {
            return Err(ctx.err(t, field, "missing: its X or Y"));
        };
        for (v, len, axis) in [(tx, plot_len_m[0], "X"), (tym, plot_len_m[1], "Y")] {
            if !(0.0..=len).contains(&v) {
                return Err(ctx.err(
                    t,
                    field,
                    format!("{axis} {v} m is outside the plot (0 to {len} m)"),
                ));
            }
        }
        let d = match (ty, td) {
            (TreeType::Seedling, _) => seedling_dbh_cm.get(sp).copied().unwrap_or(0.1),
            (_, Some(d)) if d >= 0.0 => d,
            (_, Some(d)) => {
                return Err(ctx.err(t, field, format!("DBH {d} cm is negative")));
            }
            (_, None) if allometric => {
                return Err(ctx.err(
                    t,
                    field,
                    "a sapling or adult given by Diam10 or Height only: SORTIE-ND derives its DBH with its allometry, which geofield does not read; give the DBH",
                ));
            }
            (_, None) => return Err(ctx.err(t, field, "missing: its DBH")),
        };
        *counts.entry(kind).or_insert(0) += 1;
        x.push(tx);
        y.push(tym);
        dbh.push(d);
        species.push(sp as u32);
    }
    let stand = Stand::new(x, y, dbh, species).map_err(|e| ctx.invalid(e))?;
    let mut parts: Vec<String> = [
        "seedlings",
        "saplings",
        "adults",
        "dead or seed entries skipped",
    ]
    .iter()
    .filter_map(|k| counts.get(k).map(|n| format!("{n} {k}")))
    .collect();
    if parts.is_empty() {
        parts.push("no trees".into());
    }
    let mut lines = vec![format!(
        "tree map: {} trees -> stand ({})",
        stand.len(),
        parts.join(", ")
    )];
    if counts.contains_key("seedlings") {
        lines.push(
            "tree map: seedlings have no DBH in SORTIE-ND -> the species' seedling_dbh_cm".into(),
        );
    }
    Ok((stand, lines))
}
