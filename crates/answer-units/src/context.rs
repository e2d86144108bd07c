//! What the scorer needs besides the ground truth and the answer.

use crate::matching::Rules;
use crate::normalize::{normalize_key, normalize_text};
use crate::units::QuestionIndex;
use crate::{Error, Result};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, PoisonError};

/// The question (to find which units its answer template asks for) and the
/// task's numeric tolerances keyed by normalised ground-truth key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoringContext {
    /// The public question of the task.
    pub question: String,
    /// Absolute numeric tolerances by normalised key (see [`extract_tolerances`]).
    pub tolerances: BTreeMap<String, f64>,
    /// The matching constants (defaults chosen on the tuning events).
    pub rules: Rules,
    /// The expert solution's Final Answer object
    /// ([`crate::solution_final_answer`]): the reference of the judge-like
    /// reading of [`crate::score_task`] when present.
    pub solution_answer: Option<Value>,
    /// Groups of labels the ground truth declares equivalent
    /// ([`extract_label_aliases`]), each normalised
    /// ([`crate::matching`] compares labels after the same normalisation).
    pub label_aliases: Vec<Vec<String>>,
    /// Question lookups reused by every answer scored with this context.
    pub(crate) cache: QuestionCache,
}

/// What the scorer derives from the question (its prepared forms, and
/// whether it names a key or a value), kept across the answers scored with
/// one context and rebuilt when the question or the rules change. Clones
/// start empty; it never takes part in equality.
#[derive(Default)]
pub(crate) struct QuestionCache {
    inner: Mutex<Option<CachedQuestion>>,
}

struct CachedQuestion {
    question: String,
    loose: bool,
    index: QuestionIndex,
    answers: HashMap<String, bool>,
}

impl QuestionCache {
    fn with<R>(&self, ctx: &ScoringContext, f: impl FnOnce(&mut CachedQuestion) -> R) -> R {
        let mut guard = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let stale = guard
            .as_ref()
            .is_none_or(|c| c.loose != ctx.rules.loose_required || c.question != ctx.question);
        if stale {
            *guard = Some(CachedQuestion {
                question: ctx.question.clone(),
                loose: ctx.rules.loose_required,
                index: QuestionIndex::new(ctx),
                answers: HashMap::new(),
            });
        }
        match guard.as_mut() {
            Some(cached) => f(cached),
            None => unreachable!("filled above"),
        }
    }

    /// A yes/no fact about the question, computed once per `key`.
    pub(crate) fn memo(
        &self,
        ctx: &ScoringContext,
        key: String,
        compute: impl FnOnce(&QuestionIndex) -> bool,
    ) -> bool {
        self.with(ctx, |c| {
            if let Some(&known) = c.answers.get(&key) {
                return known;
            }
            let value = compute(&c.index);
            c.answers.insert(key, value);
            value
        })
    }
}

impl Clone for QuestionCache {
    fn clone(&self) -> Self {
        QuestionCache::default()
    }
}

impl PartialEq for QuestionCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl std::fmt::Debug for QuestionCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QuestionCache")
    }
}

impl ScoringContext {
    /// A context with the question and no task tolerances.
    pub fn new(question: impl Into<String>) -> Self {
        ScoringContext {
            question: question.into(),
            tolerances: BTreeMap::new(),
            rules: Rules::default(),
            solution_answer: None,
            label_aliases: Vec::new(),
            cache: QuestionCache::default(),
        }
    }

    /// Adds the expert solution (markdown): its Final Answer object, if it
    /// has one, becomes the reference of the judge-like reading.
    ///
    /// ```
    /// use earthverse_answer_units::ScoringContext;
    /// let md = "# Final Answer\n```json\n{\"label\": \"pass\"}\n```\n# Key Computations\n";
    /// assert!(ScoringContext::new("q").with_solution(md).solution_answer.is_some());
    /// assert!(ScoringContext::new("q").with_solution("prose only").solution_answer.is_none());
    /// ```
    pub fn with_solution(mut self, solution: &str) -> Self {
        self.solution_answer = crate::solution_final_answer(solution);
        self
    }

    /// Adds groups of equivalent labels (see [`extract_label_aliases`]): a
    /// label of a group is matched by an answer giving any label of the
    /// same group (after normalisation).
    ///
    /// ```
    /// use earthverse_answer_units::{score_answer, ScoringContext};
    /// use serde_json::json;
    /// let gt = json!({"final_label": "dry_smoke_signature"});
    /// let answer = json!({"final_label": "dry_fire_smoke_signature"});
    /// let q = "Return {\"final_label\": \"...\"}";
    /// assert!(!score_answer(&gt, &answer, &ScoringContext::new(q)).ledger[0].matched);
    /// let ctx = ScoringContext::new(q)
    ///     .with_label_aliases([vec!["dry_smoke_signature".to_owned(), "dry_fire_smoke_signature".to_owned()]]);
    /// assert!(score_answer(&gt, &answer, &ctx).ledger[0].matched);
    /// ```
    pub fn with_label_aliases(mut self, groups: impl IntoIterator<Item = Vec<String>>) -> Self {
        for group in groups {
            let mut normalised: Vec<String> = group
                .iter()
                .map(|label| normalize_text(label))
                .filter(|label| !label.is_empty())
                .collect();
            normalised.sort();
            normalised.dedup();
            if normalised.len() > 1 {
                self.label_aliases.push(normalised);
            }
        }
        self
    }

    /// The alias group holding the normalised label `label`, if any.
    pub(crate) fn aliases_of(&self, label: &str) -> Option<&[String]> {
        self.label_aliases
            .iter()
            .find(|group| group.binary_search_by(|l| l.as_str().cmp(label)).is_ok())
            .map(Vec::as_slice)
    }

    /// Adds task tolerances (keys are normalised; invalid values are rejected).
    ///
    /// ```
    /// use earthverse_answer_units::ScoringContext;
    /// let ctx = ScoringContext::new("q").with_tolerances([("Peak Tmax C".to_owned(), 0.2)]).unwrap();
    /// assert_eq!(ctx.tolerances.get("peak_tmax_c"), Some(&0.2));
    /// assert!(ScoringContext::new("q").with_tolerances([("x".to_owned(), -1.0)]).is_err());
    /// ```
    pub fn with_tolerances(
        mut self,
        tolerances: impl IntoIterator<Item = (String, f64)>,
    ) -> Result<Self> {
        for (key, value) in tolerances {
            if !value.is_finite() || value < 0.0 {
                return Err(Error::InvalidTolerance { key, value });
            }
            let nk = normalize_key(&key);
            let slot = self.tolerances.entry(nk).or_insert(value);
            *slot = slot.max(value);
        }
        Ok(self)
    }

    /// The task tolerance for a normalised key: the key itself, else the
    /// longest tolerance key that ends the unit's key after a `_`
    /// (`rain_mm` takes the tolerance given for `mm`).
    pub fn tolerance_for(&self, key: &str) -> Option<f64> {
        if let Some(t) = self.tolerances.get(key) {
            return Some(*t);
        }
        self.tolerances
            .iter()
            .filter(|(k, _)| {
                key.len() > k.len()
                    && key.ends_with(k.as_str())
                    && key.as_bytes()[key.len() - k.len() - 1] == b'_'
            })
            .max_by_key(|(k, _)| k.len())
            .map(|(_, t)| *t)
    }
}

const TOLERANCE_CONTAINERS: &[&str] = &["numeric_tolerances", "tolerances", "tolerance"];
const TOLERANCE_FIELDS: &[&str] = &[
    "tolerance",
    "abs_tolerance",
    "absolute_tolerance",
    "absolute",
    "abs",
    "tol",
];
const NAME_FIELDS: &[&str] = &["key", "name", "metric", "field", "id"];

/// Keys under which a ground truth lists labels it accepts as equivalent
/// (`key_values.aliases: ["dry_hotspot_smoke_transport_signature",
/// "dry_fire_smoke_report_signature", ...]`), normalised.
const ALIAS_CONTAINERS: &[&str] = &[
    "aliases",
    "label_aliases",
    "accepted_labels",
    "accepted_aliases",
    "acceptable_labels",
    "equivalent_labels",
];

/// Longest label (in words) read as an alias: a sentence in such a list
/// ("equivalent short labels are acceptable if ...") is guidance, not a label.
const ALIAS_MAX_WORDS: usize = 6;

/// Reads the groups of equivalent labels a task's `ground_truth` declares:
/// a list of at least two short strings (at most six words each) under a
/// key such as `aliases`, `label_aliases` or `accepted_labels`, at any
/// depth up to four. The published judge credited "accepted equivalents"
/// of a canonical label and named other close labels as critical errors.
/// Pure: reads only the value.
///
/// ```
/// use serde_json::json;
/// let gt = json!({"key_values": {"aliases": ["dry_smoke_signature", "dry_fire_smoke_signature"]},
///                 "primary_gt": {"acceptable_variants": ["Equivalent short labels are acceptable if all ledgers match."]}});
/// let groups = earthverse_answer_units::extract_label_aliases(&gt);
/// assert_eq!(groups, vec![vec!["dry_smoke_signature".to_owned(), "dry_fire_smoke_signature".to_owned()]]);
/// ```
pub fn extract_label_aliases(ground_truth: &Value) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    walk_declarations(ground_truth, 0, &mut |key, value| {
        if !ALIAS_CONTAINERS.contains(&key) {
            return false;
        }
        if let Value::Array(items) = value {
            let labels: Vec<String> = items
                .iter()
                .filter_map(Value::as_str)
                .filter(|s| {
                    let words = s.split_whitespace().count();
                    words > 0 && words <= ALIAS_MAX_WORDS
                })
                .map(str::to_owned)
                .collect();
            if labels.len() > 1 {
                out.push(labels);
            }
        }
        true
    });
    out
}

/// Walks a ground truth to depth four and hands each object entry (its
/// normalised key and value) to `take`; an entry `take` claims (returns
/// `true`) is not walked into. [`extract_tolerances`] and
/// [`extract_label_aliases`] read their declarations this way.
fn walk_declarations(value: &Value, depth: usize, take: &mut impl FnMut(&str, &Value) -> bool) {
    if depth > 4 {
        return;
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                if !take(&normalize_key(k), v) {
                    walk_declarations(v, depth + 1, take);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                walk_declarations(item, depth + 1, take);
            }
        }
        _ => {}
    }
}

/// Reads the numeric tolerances a task's `ground_truth` declares, in every
/// shape the release uses: `numeric_tolerances` / `tolerances` / `tolerance`
/// objects at any depth up to four (under `primary_gt`, `key_values`,
/// `answer_guidance`, ...), whose entries are a number, an object with
/// `tolerance` / `abs_tolerance` / `absolute` (/ `absolute_tolerance`), or
/// an object with `min`/`max` around `expected`/`value`; and the judge
/// anchors' `required_metrics: [{name, tolerance}]`. Keys are normalised;
/// the largest tolerance wins when a key repeats. Pure: reads only the value.
///
/// ```
/// use serde_json::json;
/// let gt = json!({
///     "numeric_tolerances": {"peak_c": {"tolerance": 0.1, "value": 35.5},
///                            "ratio": {"expected": 0.43, "min": 0.42, "max": 0.44}},
///     "primary_gt": {"tolerances": {"rain_mm": 0.2, "path": "exact"}},
///     "judge_anchors": {"required_metrics": [{"name": "count", "tolerance": 1}]}
/// });
/// let t = earthverse_answer_units::extract_tolerances(&gt);
/// assert_eq!(t.get("peak_c"), Some(&0.1));
/// assert!((t["ratio"] - 0.01).abs() < 1e-12);
/// assert_eq!(t.get("rain_mm"), Some(&0.2));
/// assert_eq!(t.get("count"), Some(&1.0));
/// assert!(!t.contains_key("path"));
/// ```
pub fn extract_tolerances(ground_truth: &Value) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    walk_declarations(ground_truth, 0, &mut |key, value| {
        if TOLERANCE_CONTAINERS.contains(&key) {
            if let Value::Object(entries) = value {
                for (name, spec) in entries {
                    if let Some(t) = tolerance_of(spec) {
                        insert(&mut out, name, t);
                    }
                }
            }
            true
        } else if key == "required_metrics" {
            if let Value::Array(items) = value {
                for item in items {
                    let name = NAME_FIELDS
                        .iter()
                        .find_map(|f| item.get(*f).and_then(Value::as_str));
                    if let (Some(name), Some(t)) = (name, tolerance_of(item)) {
                        insert(&mut out, name, t);
                    }
                }
            }
            true
        } else {
            false
        }
    });
    out
}

fn insert(out: &mut BTreeMap<String, f64>, name: &str, t: f64) {
    let slot = out.entry(normalize_key(name)).or_insert(t);
    *slot = slot.max(t);
}

fn tolerance_of(spec: &Value) -> Option<f64> {
    let valid = |x: f64| (x.is_finite() && x >= 0.0).then_some(x);
    match spec {
        Value::Number(n) => n.as_f64().and_then(valid),
        Value::Object(map) => {
            for field in TOLERANCE_FIELDS {
                if let Some(x) = map.get(*field).and_then(Value::as_f64) {
                    return valid(x);
                }
            }
            let centre = map
                .get("expected")
                .or_else(|| map.get("value"))
                .and_then(Value::as_f64)?;
            let lo = map.get("min").and_then(Value::as_f64);
            let hi = map.get("max").and_then(Value::as_f64);
            let spread = match (lo, hi) {
                (Some(lo), Some(hi)) => (centre - lo).abs().max((hi - centre).abs()),
                (Some(lo), None) => (centre - lo).abs(),
                (None, Some(hi)) => (hi - centre).abs(),
                (None, None) => return None,
            };
            valid(spread)
        }
        _ => None,
    }
}
