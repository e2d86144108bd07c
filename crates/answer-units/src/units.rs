//! Decomposition of `primary_gt` into answer units (paper §3.3, §4.1).

use crate::normalize::{contains_word, normalize_key, tokens};
use crate::values::{dates_in, is_path, number_parts};
use crate::ScoringContext;
use serde::Serialize;
use serde_json::Value;

/// Token count above which a string is long text rather than a label.
pub(crate) const LONG_TEXT_TOKENS: usize = 6;

/// Ground-truth keys whose subtrees describe scoring rather than answers;
/// the judge-like reading skips them (study, "meta keys").
pub(crate) const META_KEYS: &[&str] = &[
    "tolerance",
    "tolerances",
    "numeric_tolerances",
    "acceptable_variants",
    "forbidden_claims",
    "required_claims",
    "canonical_stance",
    "method_notes",
    "do_not_infer",
    "required_elements",
    "rounding",
    "rounding_order",
];

/// Nesting depth beyond which ground truth and answers are not descended.
pub(crate) const MAX_DEPTH: usize = 128;

/// The type of an answer unit, which decides how it is matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum UnitKind {
    /// A JSON number: matched with a tolerance.
    Number,
    /// A short string (at most six content tokens): matched by tokens.
    Label,
    /// A string of more than six content tokens: matched leniently.
    LongText,
    /// `true` / `false`: matched with pass/fail words too.
    Bool,
    /// `null`: matched by null or "n/a"-like answers.
    Null,
    /// A string holding a date (`YYYY-MM-DD`), at most 25 characters.
    Date,
    /// A package file path.
    Path,
}

impl UnitKind {
    /// The kind of a scalar ground-truth value (`None` for containers).
    pub fn of(value: &Value) -> Option<UnitKind> {
        Some(match value {
            Value::Null => UnitKind::Null,
            Value::Bool(_) => UnitKind::Bool,
            Value::Number(_) => UnitKind::Number,
            Value::String(s) => {
                if is_path(s) {
                    UnitKind::Path
                } else if s.len() <= 25 && !dates_in(s).is_empty() {
                    UnitKind::Date
                } else if tokens(s).len() > LONG_TEXT_TOKENS {
                    UnitKind::LongText
                } else {
                    UnitKind::Label
                }
            }
            Value::Object(_) | Value::Array(_) => return None,
        })
    }
}

/// One answer unit: a scalar leaf of `primary_gt`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unit {
    /// JSON-pointer-like path (`event_window.start_date`, `rows[2].id`).
    pub path: String,
    /// The normalised key of the nearest enclosing object key, if any.
    pub key: Option<String>,
    /// The expected value.
    pub value: Value,
    /// How the unit is matched.
    pub kind: UnitKind,
    /// True for an element of a list.
    pub list_element: bool,
    /// Absolute tolerance for numbers: the task's tolerance for this key, or
    /// half a unit of the last written decimal, whichever is larger (the 2%
    /// relative allowance is added when matching).
    pub tolerance: Option<f64>,
    /// True when the question mentions the unit's key (its answer template
    /// asks for it): the units the published judge scored.
    pub required: bool,
    /// True when the unit sits under a scoring-metadata key (`tolerances`,
    /// `acceptable_variants`, ...).
    pub meta: bool,
}

/// Decomposes `primary_gt` into its answer units, in document order. The
/// number of units always equals [`crate::count_units`].
///
/// ```
/// use earthverse_answer_units::{decompose, ScoringContext, UnitKind};
/// let gt = serde_json::json!({"peak_c": 35.5, "dates": ["2021-06-27", "2021-06-29"], "note": null});
/// let ctx = ScoringContext::new("Return {\"peak_c\": 0.0, \"dates\": []}");
/// let units = decompose(&gt, &ctx);
/// assert_eq!(units.len(), 4);
/// assert_eq!(units[0].kind, UnitKind::Number);
/// assert_eq!(units[0].tolerance, Some(0.05));
/// assert!(units[0].required && units[1].required && !units[3].required);
/// assert_eq!(units[2].path, "dates[1]");
/// ```
pub fn decompose(gt: &Value, ctx: &ScoringContext) -> Vec<Unit> {
    let mut out = Vec::new();
    let question = QuestionIndex::new(ctx);
    collect(
        gt, "", None, None, false, false, 0, ctx, &question, &mut out,
    );
    out
}

#[allow(clippy::too_many_arguments)]
fn collect(
    value: &Value,
    path: &str,
    raw_key: Option<&str>,
    key: Option<&str>,
    list_element: bool,
    meta: bool,
    depth: usize,
    ctx: &ScoringContext,
    question_lower: &QuestionIndex,
    out: &mut Vec<Unit>,
) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let nk = normalize_key(k);
                let child_path = join_key(path, k);
                let child_meta = meta || META_KEYS.contains(&nk.as_str());
                if depth >= MAX_DEPTH {
                    continue;
                }
                collect(
                    v,
                    &child_path,
                    Some(k),
                    Some(&nk),
                    false,
                    child_meta,
                    depth + 1,
                    ctx,
                    question_lower,
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                if depth >= MAX_DEPTH {
                    continue;
                }
                let child_path = format!("{path}[{i}]");
                let element = !matches!(v, Value::Object(_) | Value::Array(_));
                collect(
                    v,
                    &child_path,
                    raw_key,
                    key,
                    element,
                    meta,
                    depth + 1,
                    ctx,
                    question_lower,
                    out,
                );
            }
        }
        scalar => {
            let kind = UnitKind::of(scalar).unwrap_or(UnitKind::Label);
            let tolerance = match scalar {
                Value::Number(n) => number_parts(n).map(|(_, d)| {
                    let half = 0.5 * 10f64.powi(-(d as i32));
                    let task = key.and_then(|k| ctx.tolerance_for(k)).unwrap_or(0.0);
                    half.max(task)
                }),
                _ => None,
            };
            out.push(Unit {
                path: path.to_owned(),
                key: key.map(str::to_owned),
                value: scalar.clone(),
                kind,
                list_element,
                tolerance,
                required: is_required(raw_key, key, question_lower),
                meta,
            });
        }
    }
}

/// A unit is required when the question names its key as a whole word; a
/// root-level scalar ground truth is always required.
pub(crate) fn is_required(
    raw_key: Option<&str>,
    key: Option<&str>,
    question: &QuestionIndex,
) -> bool {
    match (raw_key, key) {
        (None, _) => true,
        (Some(raw), nk) => {
            contains_word(&question.lower, raw)
                || nk.is_some_and(|k| {
                    contains_word(&question.lower, k)
                        || (question.loose
                            && !k.is_empty()
                            && question.keyed.contains(&format!("_{k}_")))
                })
        }
    }
}

/// The question prepared for "does it name this key" lookups.
#[derive(Debug, Clone)]
pub(crate) struct QuestionIndex {
    /// Lowercased question.
    pub lower: String,
    /// The question as one normalised key, padded with `_`.
    pub keyed: String,
    /// Whether the loose (words joined by spaces or hyphens) form counts.
    pub loose: bool,
}

impl QuestionIndex {
    pub(crate) fn new(ctx: &ScoringContext) -> Self {
        QuestionIndex {
            lower: ctx.question.to_lowercase(),
            keyed: format!("_{}_", normalize_key(&ctx.question)),
            loose: ctx.rules.loose_required,
        }
    }
}

pub(crate) fn join_key(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}
