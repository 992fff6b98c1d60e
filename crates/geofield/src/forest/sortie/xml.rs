//! Reading values out of a SORTIE-ND parameter file's element tree, with errors that name the
//! file, the 1-based line, the element and the species.
//!
//! SORTIE-ND looks a value up as the first element of that name below a scope (a behaviour's
//! parameter block, or the whole document for shared values such as
//! `di_seedDistributionMethod`), and a per-species value as the child of that element whose
//! `species` attribute names the species (`<di_wcsVal species="Fir">100</di_wcsVal>`); the child's
//! own name is not checked. These helpers do the same.

use std::path::Path;

use roxmltree::{Document, Node};

use crate::input_error::{InputError, quote};

/// The range a value must lie in, with the words that say so in an error.
#[derive(Debug, Clone, Copy)]
pub(super) enum Range {
    /// Any finite number.
    Any,
    /// ≥ 0.
    NonNegative,
    /// > 0.
    Positive,
    /// In [0, 1].
    Unit,
    /// |β| ≤ 25 (SORTIE-ND refuses larger values: they overflow (DBH/30)^β).
    Beta,
    /// 0 < θ < 50 (SORTIE-ND's limit for the Weibull exponent).
    Theta,
}

impl Range {
    fn holds(self, v: f64) -> bool {
        match self {
            Range::Any => true,
            Range::NonNegative => v >= 0.0,
            Range::Positive => v > 0.0,
            Range::Unit => (0.0..=1.0).contains(&v),
            Range::Beta => v.abs() <= 25.0,
            Range::Theta => v > 0.0 && v < 50.0,
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Range::Any => "a finite number",
            Range::NonNegative => "a number >= 0",
            Range::Positive => "a number > 0",
            Range::Unit => "a number in [0, 1]",
            Range::Beta => "a number with |beta| <= 25",
            Range::Theta => "a number > 0 and < 50",
        }
    }
}

/// What a per-species lookup found.
enum Found<'a, 'i> {
    /// No element of that name in the scope.
    NoElement,
    /// The element, with no value for the species.
    NoValue(Node<'a, 'i>),
    /// The species' value element.
    Value(Node<'a, 'i>),
}

/// The parsed file, its path for errors, and its species (index = position in
/// `tr_speciesList`).
pub(super) struct Ctx<'a, 'i> {
    pub path: &'a Path,
    pub doc: &'a Document<'i>,
    pub species: Vec<String>,
}

/// The first element named `tag` strictly below `parent`, in document order.
pub(super) fn first<'a, 'i>(parent: Node<'a, 'i>, tag: &str) -> Option<Node<'a, 'i>> {
    parent
        .descendants()
        .skip(1)
        .find(|n| n.is_element() && n.tag_name().name() == tag)
}

/// The element children of `parent` named `tag`.
pub(super) fn children<'a, 'i>(
    parent: Node<'a, 'i>,
    tag: &'static str,
) -> impl Iterator<Item = Node<'a, 'i>> {
    parent
        .children()
        .filter(move |n| n.is_element() && n.tag_name().name() == tag)
}

/// The trimmed text of an element ("" when it has none).
pub(super) fn text<'a>(node: Node<'a, '_>) -> &'a str {
    node.text().unwrap_or("").trim()
}

impl<'a, 'i> Ctx<'a, 'i> {
    /// The 1-based line where `node` starts.
    pub fn line(&self, node: Node) -> u64 {
        u64::from(self.doc.text_pos_at(node.range().start).row)
    }

    /// An error at `node`'s line.
    pub fn err(
        &self,
        node: Node,
        field: impl Into<String>,
        reason: impl Into<String>,
    ) -> InputError {
        InputError::Field {
            path: self.path.to_path_buf(),
            line: self.line(node),
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// A whole-file error.
    pub fn invalid(&self, reason: impl Into<String>) -> InputError {
        InputError::Invalid {
            path: self.path.to_path_buf(),
            reason: reason.into(),
        }
    }

    /// The quoted name of species `sp`.
    pub fn name(&self, sp: usize) -> String {
        quote(self.species.get(sp).map_or("", String::as_str))
    }

    /// `element <tag> species "name"`, the field of a per-species value.
    pub fn species_field(&self, tag: &str, sp: usize) -> String {
        format!("element <{tag}> species {}", self.name(sp))
    }

    /// The index of the species named `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.species.iter().position(|s| s == name)
    }

    /// The number in `node`'s text, finite and in `range`; `field` names it in errors.
    pub fn number(&self, node: Node, field: &str, range: Range) -> Result<f64, InputError> {
        let t = text(node);
        let v = t
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| self.err(node, field, format!("not a number: {}", quote(t))))?;
        if range.holds(v) {
            Ok(v)
        } else {
            Err(self.err(
                node,
                field,
                format!("{v} is out of range: expected {}", range.expected()),
            ))
        }
    }

    /// The whole number in `node`'s text ("2" or "2.0"; SORTIE-ND reads these with `atoi`).
    pub fn integer(&self, node: Node, field: &str) -> Result<i64, InputError> {
        let v = self.number(node, field, Range::Any)?;
        if v.fract() == 0.0 && v.abs() < 9.0e15 {
            Ok(v as i64)
        } else {
            Err(self.err(
                node,
                field,
                format!("not a whole number: {}", quote(text(node))),
            ))
        }
    }

    /// The value element of species `sp` in the first `<tag>` below `scope`. A value with no
    /// `species` attribute, or a species given twice, is an error.
    fn lookup(
        &self,
        scope: Node<'a, 'i>,
        tag: &str,
        sp: usize,
    ) -> Result<Found<'a, 'i>, InputError> {
        let Some(element) = first(scope, tag) else {
            return Ok(Found::NoElement);
        };
        let mut found: Option<Node<'a, 'i>> = None;
        for child in element.children().filter(Node::is_element) {
            let Some(name) = child.attribute("species") else {
                return Err(self.err(
                    child,
                    format!("element <{tag}>"),
                    format!(
                        "<{}> has no species attribute: per-species values are written <{} species=\"...\">",
                        child.tag_name().name(),
                        child.tag_name().name()
                    ),
                ));
            };
            if self.index(name) != Some(sp) {
                continue;
            }
            if let Some(earlier) = found {
                return Err(self.err(
                    child,
                    self.species_field(tag, sp),
                    format!("given twice (also at line {})", self.line(earlier)),
                ));
            }
            found = Some(child);
        }
        Ok(match found {
            Some(v) => Found::Value(v),
            None => Found::NoValue(element),
        })
    }

    /// Species `sp`'s value in `<tag>` below `scope`, None when absent.
    pub fn opt(
        &self,
        scope: Node<'a, 'i>,
        tag: &str,
        sp: usize,
        range: Range,
    ) -> Result<Option<f64>, InputError> {
        match self.lookup(scope, tag, sp)? {
            Found::Value(v) => self
                .number(v, &self.species_field(tag, sp), range)
                .map(Some),
            Found::NoElement | Found::NoValue(_) => Ok(None),
        }
    }

    /// The error for a value `who` needs and the lookup did not find.
    fn missing(&self, found: Found, scope: Node, tag: &str, sp: usize, who: &str) -> InputError {
        let field = self.species_field(tag, sp);
        match found {
            Found::NoValue(e) | Found::Value(e) => self.err(
                e,
                field,
                format!("missing: {who} needs a value for every species it applies to"),
            ),
            Found::NoElement => self.err(
                scope,
                field,
                format!(
                    "missing: {who} needs <{tag}> for every species it applies to, and <{}> has none",
                    scope.tag_name().name()
                ),
            ),
        }
    }

    /// Species `sp`'s value in `<tag>` below `scope`, required by `who` (a behaviour, for the
    /// message). A missing element is reported at `scope`'s line, a missing value at the
    /// element's.
    pub fn need(
        &self,
        scope: Node<'a, 'i>,
        tag: &str,
        sp: usize,
        who: &str,
        range: Range,
    ) -> Result<f64, InputError> {
        match self.lookup(scope, tag, sp)? {
            Found::Value(v) => self.number(v, &self.species_field(tag, sp), range),
            other => Err(self.missing(other, scope, tag, sp, who)),
        }
    }

    /// Species `sp`'s whole number in `<tag>` below `scope`, required by `who`.
    pub fn need_integer(
        &self,
        scope: Node<'a, 'i>,
        tag: &str,
        sp: usize,
        who: &str,
    ) -> Result<i64, InputError> {
        match self.lookup(scope, tag, sp)? {
            Found::Value(v) => self.integer(v, &self.species_field(tag, sp)),
            other => Err(self.missing(other, scope, tag, sp, who)),
        }
    }

    /// Species `sp`'s whole-number code in `<tag>` below `scope`, one of `allowed`.
    pub fn need_code(
        &self,
        scope: Node<'a, 'i>,
        tag: &str,
        sp: usize,
        who: &str,
        allowed: &[(i64, &str)],
    ) -> Result<i64, InputError> {
        let field = self.species_field(tag, sp);
        let node = match self.lookup(scope, tag, sp)? {
            Found::Value(v) => v,
            other => return Err(self.missing(other, scope, tag, sp, who)),
        };
        let v = self.integer(node, &field)?;
        if allowed.iter().any(|(c, _)| *c == v) {
            Ok(v)
        } else {
            let list: Vec<String> = allowed.iter().map(|(c, m)| format!("{c} ({m})")).collect();
            Err(self.err(
                node,
                field,
                format!("unknown code {v}: expected {}", list.join(", ")),
            ))
        }
    }

    /// Every `species="..."` attribute (and the `sp` attribute of `<tm_treeSettings>`) must
    /// name a species of `tr_speciesList`.
    pub fn check_species_names(&self) -> Result<(), InputError> {
        for n in self.doc.descendants().filter(Node::is_element) {
            let attr = match n.tag_name().name() {
                "tm_treeSettings" => "sp",
                _ => "species",
            };
            if let Some(name) = n.attribute(attr)
                && self.index(name).is_none()
            {
                let known: Vec<String> = self.species.iter().map(|s| quote(s)).collect();
                return Err(self.err(
                    n,
                    format!("element <{}>", n.tag_name().name()),
                    format!(
                        "unknown species {}: the species of <tr_speciesList> are {}",
                        quote(name),
                        known.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }
}
