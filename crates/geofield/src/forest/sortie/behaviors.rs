//! SORTIE-ND's `<behaviorList>`: each `<behavior>` with its `behaviorName`, `version`,
//! `listPosition` and `<applyTo species=".." type=".."/>` pairs, and which of them geofield
//! models.

use roxmltree::Node;

use super::xml::{Ctx, children, first, text};
use crate::forest::params::Stage;
use crate::input_error::{InputError, quote};

/// SORTIE-ND's tree types: the `type` names of `<applyTo>` and the `tp` codes of a tree map
/// (`clTreePopulation::iTreeType`, in this order from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TreeType {
    Seed,
    Seedling,
    Sapling,
    Adult,
    Stump,
    Snag,
    WoodyDebris,
}

impl TreeType {
    const ALL: [TreeType; 7] = [
        TreeType::Seed,
        TreeType::Seedling,
        TreeType::Sapling,
        TreeType::Adult,
        TreeType::Stump,
        TreeType::Snag,
        TreeType::WoodyDebris,
    ];

    /// The name SORTIE-ND writes in `<applyTo type="...">`.
    pub fn name(self) -> &'static str {
        match self {
            TreeType::Seed => "Seed",
            TreeType::Seedling => "Seedling",
            TreeType::Sapling => "Sapling",
            TreeType::Adult => "Adult",
            TreeType::Stump => "Stump",
            TreeType::Snag => "Snag",
            TreeType::WoodyDebris => "Woody_debris",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The type of tree-map code `tp`.
    pub fn from_code(code: i64) -> Option<Self> {
        usize::try_from(code)
            .ok()
            .and_then(|i| Self::ALL.get(i).copied())
    }

    /// Our stage for a living tree type.
    pub fn stage(self) -> Option<Stage> {
        match self {
            TreeType::Seedling => Some(Stage::Seedling),
            TreeType::Sapling => Some(Stage::Sapling),
            TreeType::Adult => Some(Stage::Adult),
            _ => None,
        }
    }
}

/// What geofield does with a behaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// `NonGapDisperse` (gap = false) or `GapDisperse` (gap = true).
    Spatial { gap: bool },
    /// `MastingSpatialDisperse`.
    Masting,
    /// `NonSpatialDisperse`.
    Rain,
    /// `Establishment`: every seed of the species becomes a seedling.
    Establishment,
    /// `StochasticMortality`: a constant annual probability per species.
    Mortality,
    /// `ConstRadialGrowth` (and its "diam only" form): a constant radial increment.
    Growth,
    /// Anything else.
    Unsupported,
}

impl Kind {
    fn of(name: &str) -> Kind {
        match name {
            "NonGapDisperse" => Kind::Spatial { gap: false },
            "GapDisperse" => Kind::Spatial { gap: true },
            "MastingSpatialDisperse" => Kind::Masting,
            "NonSpatialDisperse" => Kind::Rain,
            "Establishment" => Kind::Establishment,
            "StochasticMortality" => Kind::Mortality,
            "ConstRadialGrowth" | "ConstRadialGrowth diam only" => Kind::Growth,
            _ => Kind::Unsupported,
        }
    }

    /// Whether SORTIE-ND counts it among the dispersal behaviours that share the seed
    /// distribution method (its name contains "disperse").
    pub fn disperses(self) -> bool {
        matches!(self, Kind::Spatial { .. } | Kind::Masting | Kind::Rain)
    }
}

/// One `<behavior>`.
pub(super) struct Behavior<'a, 'i> {
    pub name: String,
    pub version: String,
    pub position: i64,
    pub kind: Kind,
    pub node: Node<'a, 'i>,
    /// (species, type, the `<applyTo>` element), in file order, duplicates dropped.
    pub apply: Vec<(usize, TreeType, Node<'a, 'i>)>,
}

impl<'a, 'i> Behavior<'a, 'i> {
    /// "GapDisperse (listPosition 2)", for messages.
    pub fn who(&self) -> String {
        format!("{} (listPosition {})", self.name, self.position)
    }

    /// The name of its parameter block: SORTIE-ND's XML root for the behaviour followed by the
    /// list position (`GapDisperse2`; both forms of `ConstRadialGrowth` use
    /// `ConstRadialGrowth<N>`).
    pub fn block_name(&self) -> String {
        let root = match self.kind {
            Kind::Growth => "ConstRadialGrowth",
            _ => self.name.as_str(),
        };
        format!("{root}{}", self.position)
    }

    /// Its parameter block (the first element of that name anywhere in the file, as SORTIE-ND
    /// looks it up); a missing block is an error at the `<behavior>`.
    pub fn block(&self, ctx: &Ctx<'a, 'i>) -> Result<Node<'a, 'i>, InputError> {
        let name = self.block_name();
        first(ctx.doc.root(), &name).ok_or_else(|| {
            ctx.err(
                self.node,
                format!("element <{name}>"),
                format!("missing: the parameters of {}", self.who()),
            )
        })
    }

    /// The distinct species it applies to, in file order.
    pub fn species(&self) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for (sp, _, _) in &self.apply {
            if !out.contains(sp) {
                out.push(*sp);
            }
        }
        out
    }
}

/// Every `<behavior>` of the first `<behaviorList>` (none when the file has no list).
pub(super) fn read<'a, 'i>(ctx: &Ctx<'a, 'i>) -> Result<Vec<Behavior<'a, 'i>>, InputError> {
    let Some(list) = first(ctx.doc.root(), "behaviorList") else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for node in children(list, "behavior") {
        let name = first(node, "behaviorName")
            .map(text)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ctx.err(node, "element <behavior>", "missing: <behaviorName>"))?
            .to_string();
        let field = format!("element <behavior> {}", quote(&name));
        let version = first(node, "version").map(text).unwrap_or("").to_string();
        let pos = first(node, "listPosition").ok_or_else(|| {
            ctx.err(
                node,
                field.clone(),
                "missing: <listPosition> (it names the parameter block)",
            )
        })?;
        let position = ctx.integer(pos, &format!("element <listPosition> of {}", quote(&name)))?;
        let mut apply: Vec<(usize, TreeType, Node)> = Vec::new();
        for a in children(node, "applyTo") {
            let species = a.attribute("species").unwrap_or("");
            let sp = ctx.index(species).ok_or_else(|| {
                ctx.err(
                    a,
                    field.clone(),
                    format!("<applyTo> names unknown species {}", quote(species)),
                )
            })?;
            let type_name = a.attribute("type").unwrap_or("");
            let ty = TreeType::from_name(type_name).ok_or_else(|| {
                let names: Vec<&str> = TreeType::ALL.iter().map(|t| t.name()).collect();
                ctx.err(
                    a,
                    field.clone(),
                    format!(
                        "<applyTo> has unknown type {}: expected one of {}",
                        quote(type_name),
                        names.join(", ")
                    ),
                )
            })?;
            if !apply.iter().any(|(s, t, _)| *s == sp && *t == ty) {
                apply.push((sp, ty, a));
            }
        }
        out.push(Behavior {
            kind: Kind::of(&name),
            name,
            version,
            position,
            node,
            apply,
        });
    }
    Ok(out)
}
