//! Scoring an answer against `primary_gt`: key alignment, matching, ledger.
//!
//! ## Alignment
//! The ground truth is walked from the root. For each object key `k`
//! (normalised with [`crate::normalize_key`]) the answer nodes it points to
//! ("hits") are the first non-empty of: children of the current hits keyed
//! `k`; descendants of the current hits keyed `k`; descendants of the
//! enclosing scope keyed `k`; any node keyed `k` anywhere in the answer. So
//! nesting differences and flattened answers still align.
//!
//! Lists of objects are matched row by row: each ground-truth row takes the
//! unused answer row (array element or object value) with the most matched
//! units (ties prefer the same position). Lists of scalars are matched one to
//! one against the scalar leaves under the hits, in any order.
//!
//! A unit with no hit falls back to a search of the whole answer when its
//! value is distinctive (see [`crate::matching`]); in prose answers, to a
//! search of the text, where a small number must follow its key
//! ([`Rules::prose_numbers_by_key`]).
//!
//! ## Two readings of U (study, "two readings")
//! - `u_all`: matched units over all units of `primary_gt` (the paper's
//!   decomposition).
//! - `u_required` (judge-like): a unit counts in the denominator when the
//!   question names its key (the answer template asks for it; words joined
//!   by spaces or hyphens count too) or when it matched; units under
//!   scoring-metadata keys never count. Units are grouped as the judge
//!   counted them (each scalar, list of scalars, or subtree at depth two,
//!   [`Rules::group_depth`], is one unit, credited with the share of its
//!   counted units matched).
//!   `u_required_leaves` is the same at leaf level.
//!
//! When a key is nowhere in the answer, keys that contain it (or that it
//! contains) as whole words are tried last (`index_value` ↔
//! `physical_index.value`).

use crate::matching::{
    is_canonical_label, is_distinctive, match_scalar, Candidate, Expected, Mode, ProseText,
};
use crate::normalize::{contains_word, key_meaning_words, normalize_key, normalize_text};
use crate::parse::{parse_answer, parse_answer_text, ParseReport, ParsedAnswer};
use crate::units::{is_required, join_key, UnitKind, MAX_DEPTH, META_KEYS};
use crate::values::number_parts;
use crate::{Rules, ScoringContext};
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;

/// One unit of one answer: what was expected, what was found, and why it
/// matched or not.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnitLedgerEntry {
    /// Path of the unit in `primary_gt` (`event_window.start_date`, `rows[1].id`).
    pub path: String,
    /// Path of the group the unit belongs to: the unit itself, its list of
    /// scalars, or its subtree at depth two (see [`UnitScore::u_required`]).
    pub group: String,
    /// Normalised key of the unit (the list's key for list elements).
    pub key: Option<String>,
    /// How the unit was matched.
    pub kind: UnitKind,
    /// True for an element of a list.
    pub list_element: bool,
    /// The expected value.
    pub expected: Value,
    /// Absolute tolerance used for numbers (before the 2% relative allowance).
    pub tolerance: Option<f64>,
    /// The question names the unit's key.
    pub required: bool,
    /// The unit sits under a scoring-metadata key.
    pub meta: bool,
    /// The unit is a row label the question itself gives (a string field of
    /// a list row whose value the question names as a whole word): not an
    /// answer unit, unless nothing else counts (see [`crate::Rules`]).
    pub given: bool,
    /// The answer value compared (the matching one, else the first aligned one).
    pub found: Option<Value>,
    /// Where `found` sits in the answer (`$` is the root).
    pub found_at: Option<String>,
    /// The unit matched.
    pub matched: bool,
    /// The unit counts in the judge-like denominator.
    pub counted: bool,
    /// The rule that decided.
    pub why: String,
    /// Path of an earlier counted unit with the same key and the same
    /// distinctive value: this one repeats it and is not counted again
    /// ([`crate::Rules::merge_repeated_units`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_of: Option<String>,
}

/// The unit score of one answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UnitScore {
    /// All units of `primary_gt` (equals [`crate::count_units`]).
    pub units_total: usize,
    /// Units matched among all units.
    pub units_matched: usize,
    /// Units whose key the question names.
    pub units_required: usize,
    /// Units in the judge-like denominator (required or matched, not meta).
    pub units_counted: usize,
    /// Matched units in the judge-like denominator.
    pub units_counted_matched: usize,
    /// U over all units, 0–100 (0 when there are no units).
    pub u_all: f64,
    /// Judge-like U, 0–100 (0 when nothing counts): over unit groups (each
    /// scalar, list of scalars, or subtree at depth two of `primary_gt` is
    /// one unit credited with the share of its counted units matched); a
    /// unit counts when the question names it or it matched, a group when
    /// one of its units counts; the denominator is at least
    /// [`crate::Rules::min_counted_share`] of all answer groups.
    /// [`TaskScore::u_judge`] takes this reading from its reference.
    pub u_required: f64,
    /// Judge-like U at leaf level: matched over counted units (the
    /// prototype's BEST reading), 0–100.
    pub u_required_leaves: f64,
    /// Groups in the `u_required` denominator.
    pub groups_counted: usize,
    /// Every unit in ground-truth order.
    pub ledger: Vec<UnitLedgerEntry>,
    /// How the answer was read.
    pub parse: ParseReport,
}

/// Scores a final answer (object, array, string or scalar) against
/// `primary_gt`.
///
/// ```
/// use earthverse_answer_units::{score_answer, ScoringContext};
/// use serde_json::json;
/// let gt = json!({"peak_c": 35.5, "label": "very_high", "note": "extra"});
/// let ctx = ScoringContext::new("Return {\"peak_c\": 0, \"label\": \"...\"}");
/// let score = score_answer(&gt, &json!({"result": {"peak_c": "35.52 °C", "label": "low"}}), &ctx);
/// assert_eq!((score.units_total, score.units_matched), (3, 1));
/// assert_eq!(score.units_counted, 2); // "note" is not asked for and did not match
/// assert_eq!(score.u_required, 50.0);
/// assert_eq!(score.ledger[0].found_at.as_deref(), Some("$.result.peak_c"));
/// ```
pub fn score_answer(gt: &Value, answer: &Value, ctx: &ScoringContext) -> UnitScore {
    score_parsed(gt, &parse_answer(answer), ctx)
}

/// Scores a final answer given as text (parsed with [`parse_answer_text`]).
pub fn score_answer_text(gt: &Value, answer: &str, ctx: &ScoringContext) -> UnitScore {
    score_parsed(gt, &parse_answer_text(answer), ctx)
}

/// Scores an already parsed answer.
pub fn score_parsed(gt: &Value, parsed: &ParsedAnswer, ctx: &ScoringContext) -> UnitScore {
    Scorer::for_answer(parsed, ctx).score(gt, &parsed.report)
}

/// Which reference the judge-like reading of a [`TaskScore`] used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JudgeReference {
    /// The expert solution's Final Answer object.
    Solution,
    /// `primary_gt` (the solution has no JSON Final Answer, or none was given).
    PrimaryGt,
}

/// One answer scored against both references of its task.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskScore {
    /// Against `primary_gt`: the units of record (§3.3: 10,879 in the
    /// release), `u_all` and `u_required`.
    pub units: UnitScore,
    /// Against the expert solution's Final Answer
    /// ([`ScoringContext::solution_answer`]), when the context has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solution: Option<UnitScore>,
}

impl TaskScore {
    /// The reference of the judge-like reading.
    pub fn judge_reference(&self) -> JudgeReference {
        if self.solution.is_some() {
            JudgeReference::Solution
        } else {
            JudgeReference::PrimaryGt
        }
    }

    /// The score of the judge-like reading: against the solution's Final
    /// Answer when there is one, else against `primary_gt`.
    pub fn judge_score(&self) -> &UnitScore {
        self.solution.as_ref().unwrap_or(&self.units)
    }

    /// [`TaskScore::judge_score`], taken by value.
    pub fn into_judge_score(self) -> UnitScore {
        self.solution.unwrap_or(self.units)
    }

    /// Judge-like U, 0–100: `u_required` of [`TaskScore::judge_score`].
    /// This is the reading compared with the published `unit_accuracy`.
    pub fn u_judge(&self) -> f64 {
        self.judge_score().u_required
    }
}

/// Scores an answer against `primary_gt` and, when the context carries the
/// expert solution's Final Answer ([`ScoringContext::with_solution`]),
/// against that too, with the same rules. The answer is parsed once.
///
/// The published judge received the question, the structured ground truth
/// and the expert solution (Appendix E) and read the answer as a set of
/// units of the answer contract: "required fields, labels, decisions,
/// values ... Missing required fields are incorrect". The solution's Final
/// Answer is that contract filled in with the reference values, in the
/// shape the question asked for, so the judge-like reading
/// ([`TaskScore::u_judge`]) scores against it; `primary_gt` stays the
/// decomposition of record (`units`).
///
/// ```
/// use earthverse_answer_units::{score_task, JudgeReference, ScoringContext};
/// use serde_json::json;
/// let gt = json!({"answer": "pass", "required_values": {"adv_days": 6.25}});
/// let question = "Return JSON {\"status\": \"\", \"advantage_days\": 0}";
/// let solution = "# Final Answer\n```json\n{\"status\": \"pass\", \"advantage_days\": 6.25}\n```\n";
/// let ctx = ScoringContext::new(question).with_solution(solution);
/// let score = score_task(&gt, &json!({"status": "pass", "advantage_days": 5.0}), &ctx);
/// assert_eq!(score.judge_reference(), JudgeReference::Solution);
/// assert_eq!(score.u_judge(), 50.0);
/// assert_eq!(score.units.units_total, 2);
/// ```
pub fn score_task(gt: &Value, answer: &Value, ctx: &ScoringContext) -> TaskScore {
    let parsed = parse_answer(answer);
    // The answer's index is built once and read for both references.
    let scorer = Scorer::for_answer(&parsed, ctx);
    TaskScore {
        units: scorer.score(gt, &parsed.report),
        solution: ctx.solution_answer.as_ref().map(|reference| {
            let reference = scorer.completed_reference(reference, gt);
            scorer.score(&reference, &parsed.report)
        }),
    }
}

/// Whether `inner` is a run of whole `_`-separated words of `outer`:
/// `_{inner}_` is a substring of `_{outer}_` (`peak_c` in `peak_c_local`),
/// tested without building either string.
fn holds_words(outer: &str, inner: &str) -> bool {
    let (o, n) = (outer.as_bytes(), inner.len());
    // Every occurrence, overlapping ones too (`b_b` in `cb_b_b` is whole
    // words only at its second occurrence).
    let finder = memchr::memmem::Finder::new(inner.as_bytes());
    let mut from = 0;
    while let Some(p) = o.get(from..).and_then(|rest| finder.find(rest)) {
        let at = from + p;
        if (at == 0 || o[at - 1] == b'_') && (at + n == o.len() || o[at + n] == b'_') {
            return true;
        }
        from = at + 1;
    }
    false
}

/// Every normalised key of a JSON value, at any depth.
fn collect_keys(value: &Value, out: &mut std::collections::HashSet<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                out.insert(normalize_key(k));
                collect_keys(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_keys(v, out)),
        _ => {}
    }
}

fn summarize(mut ledger: Vec<UnitLedgerEntry>, parse: ParseReport, rules: &Rules) -> UnitScore {
    let min_counted_share = rules.min_counted_share;
    // Row labels given by the question count after all when nothing else
    // does (an answer that only lists them is still scored on them).
    if !ledger.iter().any(|e| e.counted) {
        for e in ledger.iter_mut().filter(|e| e.given) {
            e.counted = !e.meta && (e.required || e.matched);
        }
    }
    if rules.merge_repeated_units {
        merge_repeated_units(&mut ledger);
    }
    let units_total = ledger.len();
    let units_matched = ledger.iter().filter(|e| e.matched).count();
    let units_required = ledger.iter().filter(|e| e.required && !e.meta).count();
    let units_counted = ledger.iter().filter(|e| e.counted).count();
    let units_counted_matched = ledger.iter().filter(|e| e.counted && e.matched).count();
    let pct = |m: usize, n: usize| {
        if n == 0 {
            0.0
        } else {
            100.0 * m as f64 / n as f64
        }
    };
    // Groups: (counted units, matched counted units). Within a group only
    // counted units weigh (a unit the question does not name counts only
    // when matched), which keeps U monotone: removing an answer value never
    // raises it.
    let mut index: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for e in ledger.iter().filter(|e| e.counted) {
        let slot = *index.entry(e.group.as_str()).or_insert_with(|| {
            groups.push((0, 0));
            groups.len() - 1
        });
        groups[slot].0 += 1;
        groups[slot].1 += usize::from(e.matched);
    }
    let counted_groups: Vec<_> = groups.iter().filter(|g| g.0 > 0).collect();
    let groups_counted = counted_groups.len();
    // The denominator never falls below a share of the answer groups of
    // the ground truth (meta and given units aside): an answer that covers
    // only a few of them is not scored on those few alone.
    let all_groups: std::collections::HashSet<&str> = ledger
        .iter()
        .filter(|e| !e.meta && (!e.given || e.counted))
        .map(|e| e.group.as_str())
        .collect();
    let denominator = (groups_counted as f64).max(min_counted_share * all_groups.len() as f64);
    let u_grouped = if groups_counted == 0 || denominator <= 0.0 {
        0.0
    } else {
        100.0
            * counted_groups
                .iter()
                .map(|g| g.1 as f64 / g.0 as f64)
                .sum::<f64>()
            / denominator
    };
    UnitScore {
        units_total,
        units_matched,
        units_required,
        units_counted,
        units_counted_matched,
        u_all: pct(units_matched, units_total),
        u_required: u_grouped,
        u_required_leaves: pct(units_counted_matched, units_counted),
        groups_counted,
        ledger,
        parse,
    }
}

/// Ground truths often restate a value (`process_model.x.window_start`
/// and `scenario_analysis.x.window_start`, a summary repeating a computed
/// metric): the judge reads it once. Units (not meta, not given) with the
/// same key and the same distinctive value (see [`crate::matching`]) are
/// one unit: the first in ground-truth order keeps it, matched when any
/// copy matched and counted when any copy is required or matched; the
/// later copies are marked `repeat_of` and never counted. Which copy keeps
/// the unit does not depend on the answer, so U stays monotone.
fn merge_repeated_units(ledger: &mut [UnitLedgerEntry]) {
    // Keepers per (key, value): each with the unit's path without list
    // indices. Rows of one list (`edges[0].to`, `edges[2].to`) are distinct
    // facts that may share a value; only a copy elsewhere is a repeat.
    let mut keepers: std::collections::HashMap<(String, String), Vec<(String, usize)>> =
        std::collections::HashMap::new();
    for i in 0..ledger.len() {
        let e = &ledger[i];
        let Some(key) = e.key.as_ref() else { continue };
        if e.meta || e.given || !is_distinctive(&e.expected) {
            continue;
        }
        let shape = without_indices(&e.path);
        let same_value = keepers
            .entry((key.clone(), e.expected.to_string()))
            .or_default();
        let Some(k) = same_value
            .iter()
            .find(|(s, _)| *s != shape)
            .map(|&(_, k)| k)
        else {
            same_value.push((shape, i));
            continue;
        };
        let (head, tail) = ledger.split_at_mut(i);
        let (keeper, copy) = (&mut head[k], &mut tail[0]);
        keeper.required |= copy.required;
        if copy.matched && !keeper.matched {
            keeper.matched = true;
            keeper.found = copy.found.clone();
            keeper.found_at = copy.found_at.clone();
            keeper.why = format!("matched at its repeat {}: {}", copy.path, copy.why);
        }
        keeper.counted = keeper.required || keeper.matched;
        copy.counted = false;
        copy.repeat_of = Some(keeper.path.clone());
    }
}

/// A ledger path without its list indices (`rows[2].v[1]` → `rows.v`).
fn without_indices(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut depth = 0usize;
    for ch in path.chars() {
        match ch {
            '[' => depth += 1,
            ']' => depth = depth.saturating_sub(1),
            _ if depth == 0 => out.push(ch),
            _ => {}
        }
    }
    out
}

/// Strict@95 (§4.1): the percentage of scores (0–100 scale) at or above 95.
/// Returns 0 for no scores.
///
/// ```
/// assert_eq!(earthverse_answer_units::strict_at_95([100.0, 95.0, 94.9, 10.0]), 50.0);
/// ```
pub fn strict_at_95(scores: impl IntoIterator<Item = f64>) -> f64 {
    let (mut hit, mut n) = (0usize, 0usize);
    for s in scores {
        n += 1;
        if s >= 95.0 {
            hit += 1;
        }
    }
    if n == 0 {
        0.0
    } else {
        100.0 * hit as f64 / n as f64
    }
}

struct Node<'a> {
    value: &'a Value,
    /// The value with its text forms cached for matching.
    cand: Candidate<'a>,
    key: Option<String>,
    /// [`key_meaning_words`] of `key`, made on first use (every key of the
    /// reference asks it of the same answer nodes).
    meaning: std::cell::OnceCell<Vec<String>>,
    path: String,
    /// One past the last descendant (preorder).
    end: usize,
    children: Vec<usize>,
}

impl Node<'_> {
    fn meaning_words(&self, key: &str) -> &[String] {
        self.meaning.get_or_init(|| key_meaning_words(key))
    }

    fn is_scalar(&self) -> bool {
        !matches!(self.value, Value::Object(_) | Value::Array(_))
    }
}

#[derive(Clone)]
struct GtPos<'g> {
    path: String,
    /// Path of the answer-unit group this position belongs to (see `group_of`).
    group: Option<String>,
    raw_key: Option<&'g str>,
    key: Option<String>,
    meta: bool,
    list_element: bool,
    /// This position is an object element of a list (a row).
    row_element: bool,
    /// This position is a field of a row.
    row_field: bool,
    /// This position lies inside a ground-truth row being aligned with one
    /// answer row: keys are looked up inside that row only.
    within_row: bool,
    depth: usize,
}

struct Scorer<'a> {
    nodes: Vec<Node<'a>>,
    prose: Option<ProseText>,
    ctx: &'a ScoringContext,
}

impl<'a> Scorer<'a> {
    /// The answer's index: its nodes (structured answers) or its text.
    fn for_answer(parsed: &'a ParsedAnswer, ctx: &'a ScoringContext) -> Self {
        let mut scorer = Scorer {
            nodes: Vec::new(),
            prose: None,
            ctx,
        };
        match &parsed.json {
            Some(json) => {
                scorer.build(json, None, "$".to_owned(), 0);
            }
            None => {
                let prose = ProseText::new(&parsed.text);
                if !prose.is_empty() {
                    scorer.prose = Some(prose);
                }
            }
        }
        scorer
    }

    /// Scores the indexed answer against one reference (its dotted-path
    /// keys read as the answer's are).
    fn score(&self, gt: &Value, report: &ParseReport) -> UnitScore {
        let gt = crate::parse::ground_truth_with_key_paths_expanded(gt);
        let gt = gt.as_ref();
        let root: Vec<usize> = if self.nodes.is_empty() {
            Vec::new()
        } else {
            vec![0]
        };
        let mut ledger = Vec::new();
        let at = GtPos {
            path: String::new(),
            group: None,
            raw_key: None,
            key: None,
            meta: false,
            list_element: false,
            row_element: false,
            row_field: false,
            within_row: false,
            depth: 0,
        };
        self.walk(gt, &at, &root, &root, &mut ledger);
        summarize(ledger, report.clone(), &self.ctx.rules)
    }

    fn build(
        &mut self,
        value: &'a Value,
        key: Option<String>,
        path: String,
        depth: usize,
    ) -> usize {
        let index = self.nodes.len();
        self.nodes.push(Node {
            value,
            cand: Candidate::new(value),
            key,
            meaning: std::cell::OnceCell::new(),
            path,
            end: index + 1,
            children: Vec::new(),
        });
        let mut children = Vec::new();
        if depth < MAX_DEPTH {
            match value {
                Value::Object(map) => {
                    for (k, v) in map {
                        let child_path = format!("{}.{}", self.nodes[index].path, k);
                        children.push(self.build(v, Some(normalize_key(k)), child_path, depth + 1));
                    }
                }
                Value::Array(items) => {
                    for (i, v) in items.iter().enumerate() {
                        let child_path = format!("{}[{i}]", self.nodes[index].path);
                        children.push(self.build(v, None, child_path, depth + 1));
                    }
                }
                _ => {}
            }
        }
        let end = self.nodes.len();
        let node = &mut self.nodes[index];
        node.end = end;
        node.children = children;
        index
    }

    fn keyed_children(&self, hits: &[usize], key: &str) -> Vec<usize> {
        let mut out = Vec::new();
        for &h in hits {
            let node = &self.nodes[h];
            for &c in &node.children {
                if self.nodes[c].key.as_deref() == Some(key) {
                    push_unique(&mut out, c);
                }
                // Children of the objects inside an array hit.
                if matches!(node.value, Value::Array(_)) {
                    for &cc in &self.nodes[c].children {
                        if self.nodes[cc].key.as_deref() == Some(key) {
                            push_unique(&mut out, cc);
                        }
                    }
                }
            }
        }
        out
    }

    fn keyed_descendants(&self, roots: &[usize], key: &str) -> Vec<usize> {
        let mut out = Vec::new();
        for &r in roots {
            for i in r + 1..self.nodes[r].end {
                if self.nodes[i].key.as_deref() == Some(key) {
                    out.push(i);
                }
            }
        }
        sorted_unique(out)
    }

    fn lookup(&self, key: &str, hits: &[usize], scope: &[usize], within_row: bool) -> Vec<usize> {
        let found = self.keyed_children(hits, key);
        if !found.is_empty() {
            return found;
        }
        let found = self.keyed_descendants(hits, key);
        if !found.is_empty() {
            return found;
        }
        let found = self.keyed_descendants(scope, key);
        if !found.is_empty() || self.nodes.is_empty() || within_row {
            return found;
        }
        let found = self.keyed_descendants(&[0], key);
        if !found.is_empty() || !self.ctx.rules.fuzzy_keys || key.len() < 4 {
            return found;
        }
        // Last resort: a key in the current scope that contains the ground
        // truth's key as whole words, or is contained in it
        // (`index_value` ↔ `value` under `physical_index`, `peak_c` ↔ `peak_c_local`).
        let mut out = Vec::new();
        for &r in scope {
            for i in r + 1..self.nodes[r].end {
                if let Some(k) = self.nodes[i].key.as_deref() {
                    if k.len() >= 4 && (holds_words(k, key) || holds_words(key, k)) {
                        out.push(i);
                    }
                }
            }
        }
        if out.is_empty() && self.ctx.rules.key_word_subset {
            return self.word_subset_keys(key, scope);
        }
        sorted_unique(out)
    }

    /// [`Rules::key_word_subset`]: the nodes under the one key in `scope`
    /// whose meaning words hold all of `key`'s. Nothing when no key or more
    /// than one key qualifies.
    fn word_subset_keys(&self, key: &str, scope: &[usize]) -> Vec<usize> {
        let wanted = key_meaning_words(key);
        if wanted.is_empty() || wanted.iter().map(String::len).sum::<usize>() < 4 {
            return Vec::new();
        }
        let mut chosen: Option<&str> = None;
        let mut out = Vec::new();
        for &r in scope {
            for i in r + 1..self.nodes[r].end {
                let Some(k) = self.nodes[i].key.as_deref() else {
                    continue;
                };
                if chosen == Some(k) {
                    out.push(i);
                    continue;
                }
                let words = self.nodes[i].meaning_words(k);
                if wanted.iter().all(|w| words.contains(w)) {
                    if chosen.is_some() {
                        return Vec::new();
                    }
                    chosen = Some(k);
                    out.push(i);
                }
            }
        }
        sorted_unique(out)
    }

    /// The lists directly inside the answer lists `hits`: the one at
    /// `position` where each has one there, else all of them.
    fn inner_lists(&self, hits: &[usize], position: usize) -> Vec<usize> {
        let is_list = |i: usize| matches!(self.nodes[i].value, Value::Array(_));
        let mut at_position = Vec::new();
        let mut any = Vec::new();
        for &h in hits.iter().filter(|&&h| is_list(h)) {
            let children = &self.nodes[h].children;
            if let Some(&c) = children.get(position).filter(|&&c| is_list(c)) {
                at_position.push(c);
            }
            any.extend(children.iter().copied().filter(|&c| is_list(c)));
        }
        if at_position.is_empty() {
            any
        } else {
            at_position
        }
    }

    /// Where the answer puts the ground truth's top-level `answer` when it
    /// has no key `answer`: its text fields under keys the question names
    /// (the answer template's own name for the answer, such as `diagnosis`
    /// or `final_label`) and the ground truth does not have.
    fn template_answer_fields(&self, gt_root: &serde_json::Map<String, Value>) -> Vec<usize> {
        let gt_keys: std::collections::HashSet<String> =
            gt_root.keys().map(|k| normalize_key(k)).collect();
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(n.value, Value::String(_)))
            .filter_map(|(i, n)| n.key.as_deref().map(|k| (i, k)))
            .filter(|(_, k)| !gt_keys.contains(*k) && self.question_names(k, Some(k)))
            .map(|(i, _)| i)
            .collect()
    }

    /// The judge-like reference: the solution's Final Answer, completed
    /// (under [`Rules::template_keys_from_gt`]) with the top-level
    /// `primary_gt` entries whose key the question names and the Final
    /// Answer lacks at any depth.
    fn completed_reference<'r>(&self, solution: &'r Value, gt: &Value) -> Cow<'r, Value> {
        let (true, Value::Object(reference), Value::Object(gt_root)) =
            (self.ctx.rules.template_keys_from_gt, solution, gt)
        else {
            return Cow::Borrowed(solution);
        };
        let mut present = std::collections::HashSet::new();
        collect_keys(solution, &mut present);
        let missing: Vec<(&String, &Value)> = gt_root
            .iter()
            .filter(|(k, _)| {
                let nk = normalize_key(k);
                !present.contains(&nk) && self.question_names(k, Some(&nk))
            })
            .collect();
        if missing.is_empty() {
            return Cow::Borrowed(solution);
        }
        let mut completed = reference.clone();
        for (k, v) in missing {
            completed.insert(k.clone(), v.clone());
        }
        Cow::Owned(Value::Object(completed))
    }

    /// Whether the question names a key (raw and normalised): depends only
    /// on the question, so asked once per context.
    fn question_names(&self, raw: &str, key: Option<&str>) -> bool {
        let ctx = self.ctx;
        ctx.cache.memo(
            ctx,
            format!("key\u{0}{raw}\u{0}{}", key.unwrap_or("")),
            |q| is_required(Some(raw), key, q),
        )
    }

    fn scalar_leaves(&self, hits: &[usize]) -> Vec<usize> {
        let mut out = Vec::new();
        for &h in hits {
            for i in h..self.nodes[h].end {
                if self.nodes[i].is_scalar() {
                    out.push(i);
                }
            }
        }
        sorted_unique(out)
    }

    fn walk(
        &self,
        gt: &Value,
        at: &GtPos<'_>,
        hits: &[usize],
        scope: &[usize],
        out: &mut Vec<UnitLedgerEntry>,
    ) {
        if at.depth > MAX_DEPTH {
            return;
        }
        if at.group.is_none() && starts_group(gt, at.depth, self.ctx.rules.group_depth) {
            let mut grouped = at.clone();
            grouped.group = Some(at.path.clone());
            return self.walk(gt, &grouped, hits, scope, out);
        }
        match gt {
            Value::Object(map) => {
                let sc = if hits.is_empty() { scope } else { hits };
                for (k, v) in map {
                    let nk = normalize_key(k);
                    let meta = at.meta || META_KEYS.contains(&nk.as_str());
                    let child_hits = self.lookup(&nk, hits, sc, at.within_row);
                    let child = GtPos {
                        path: join_key(&at.path, k),
                        group: at.group.clone(),
                        raw_key: Some(k),
                        key: Some(nk),
                        meta,
                        list_element: false,
                        row_element: false,
                        row_field: at.row_element,
                        within_row: at.within_row,
                        depth: at.depth + 1,
                    };
                    if child_hits.is_empty()
                        && at.depth == 0
                        && child.key.as_deref() == Some("answer")
                        && v.is_string()
                        && self.ctx.rules.answer_from_template_keys
                    {
                        let fields = self.template_answer_fields(map);
                        if !fields.is_empty() {
                            let entry = self.score_scalar(v, &child, &fields);
                            if entry.matched {
                                out.push(entry);
                                continue;
                            }
                        }
                    }
                    self.walk(v, &child, &child_hits, sc, out);
                }
            }
            Value::Array(items) => self.walk_array(items, at, hits, scope, out),
            scalar => {
                let entry = self.score_scalar(scalar, at, hits);
                out.push(entry);
            }
        }
    }

    fn walk_array(
        &self,
        items: &[Value],
        at: &GtPos<'_>,
        hits: &[usize],
        scope: &[usize],
        out: &mut Vec<UnitLedgerEntry>,
    ) {
        let sc = if hits.is_empty() { scope } else { hits };
        // Candidate answer rows for object elements.
        // Each row with its position in the answer's array (for ties).
        let mut rows = Vec::new();
        let mut row_positions: Vec<Option<usize>> = Vec::new();
        for &h in hits {
            let node = &self.nodes[h];
            match node.value {
                Value::Array(_) => {
                    for (position, &c) in node.children.iter().enumerate() {
                        if matches!(self.nodes[c].value, Value::Object(_)) && !rows.contains(&c) {
                            rows.push(c);
                            row_positions.push(Some(position));
                        }
                    }
                }
                Value::Object(_) => {
                    let before = rows.len();
                    for &c in &node.children {
                        if matches!(self.nodes[c].value, Value::Object(_)) && !rows.contains(&c) {
                            rows.push(c);
                            row_positions.push(None);
                        }
                    }
                    if rows.len() == before && !rows.contains(&h) {
                        rows.push(h);
                        row_positions.push(None);
                    }
                }
                _ => {}
            }
        }
        let mut used_rows = vec![false; rows.len()];
        // Scalar elements match scalar leaves; where the list also holds
        // rows, not the leaves inside the answer list's rows (those are the
        // rows' fields).
        let mut leaves = self.scalar_leaves(hits);
        if items.iter().any(Value::is_object) {
            leaves.retain(|&l| {
                !rows
                    .iter()
                    .zip(&row_positions)
                    .any(|(&r, p)| p.is_some() && r < l && l < self.nodes[r].end)
            });
        }
        let mut used_leaves = vec![false; leaves.len()];
        for (i, item) in items.iter().enumerate() {
            let mut element = at.clone();
            element.path = format!("{}[{i}]", at.path);
            element.depth = at.depth + 1;
            element.row_element = matches!(item, Value::Object(_));
            element.row_field = false;
            match item {
                Value::Object(_) => {
                    let mut best: Option<(usize, usize, Vec<UnitLedgerEntry>)> = None;
                    for (j, &row) in rows.iter().enumerate() {
                        if used_rows[j] {
                            continue;
                        }
                        let mut trial = Vec::new();
                        let within = GtPos {
                            within_row: true,
                            ..element.clone()
                        };
                        self.walk(item, &within, &[row], &[row], &mut trial);
                        // Rows are chosen by the units matched inside them
                        // (not by values found elsewhere in the answer).
                        let row_path = self.nodes[row].path.as_str();
                        let inside = |at: &str| {
                            at.strip_prefix(row_path)
                                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
                        };
                        let matched = trial
                            .iter()
                            .filter(|e| e.matched && e.found_at.as_deref().is_some_and(inside))
                            .count();
                        let better = match &best {
                            None => matched > 0,
                            Some((_, m, _)) => {
                                matched > *m || (matched == *m && row_positions[j] == Some(i))
                            }
                        };
                        if better {
                            best = Some((j, matched, trial));
                        }
                    }
                    match best {
                        Some((j, _, trial)) => {
                            used_rows[j] = true;
                            out.extend(trial);
                        }
                        None => self.walk(item, &element, &[], sc, out),
                    }
                }
                Value::Array(_) => {
                    // A list inside a list: align it with the answer's list
                    // at the same position, else with any inner list.
                    let inner = self.inner_lists(hits, i);
                    let inner_hits = if inner.is_empty() { hits } else { &inner };
                    self.walk(item, &element, inner_hits, scope, out)
                }
                scalar => {
                    element.list_element = true;
                    let expected = self.expected(scalar, &element);
                    let mode = Mode {
                        aligned: true,
                        rules: &self.ctx.rules,
                    };
                    let mut entry = None;
                    for (j, &leaf) in leaves.iter().enumerate() {
                        if used_leaves[j] {
                            continue;
                        }
                        if let Some(why) = match_scalar(&expected, &self.nodes[leaf].cand, mode) {
                            used_leaves[j] = true;
                            entry = Some(self.entry(&expected, &element, Some(leaf), true, why));
                            break;
                        }
                    }
                    let entry = match entry {
                        Some(e) => e,
                        None if hits.is_empty() => self.fallback(scalar, &element),
                        None => {
                            let shown = leaves.first().copied();
                            self.entry(
                                &expected,
                                &element,
                                shown,
                                false,
                                "no matching element under the aligned key".to_owned(),
                            )
                        }
                    };
                    out.push(entry);
                }
            }
        }
    }

    fn expected<'g>(&self, value: &'g Value, at: &GtPos<'_>) -> Expected<'g>
    where
        'a: 'g,
    {
        let (abs_tolerance, half_unit) = match value {
            Value::Number(n) => {
                let half = number_parts(n).map_or(0.0, |(_, d)| 0.5 * 10f64.powi(-(d as i32)));
                let task = at
                    .key
                    .as_deref()
                    .and_then(|k| self.ctx.tolerance_for(k))
                    .unwrap_or(0.0);
                (half.max(task), half)
            }
            _ => (0.0, 0.0),
        };
        let mut expected = Expected::of_value(value, abs_tolerance, half_unit);
        if let Some(label) = value
            .as_str()
            .filter(|_| !self.ctx.label_aliases.is_empty())
        {
            expected.aliases = self.ctx.aliases_of(&normalize_text(label));
        }
        expected.canonical_label = self.ctx.rules.canonical_labels_exact
            && at
                .key
                .as_deref()
                .is_some_and(|k| is_canonical_label(k, value));
        expected
    }

    fn score_scalar(&self, value: &Value, at: &GtPos<'_>, hits: &[usize]) -> UnitLedgerEntry {
        if hits.is_empty() {
            return self.fallback(value, at);
        }
        let expected = self.expected(value, at);
        let leaves = self.scalar_leaves(hits);
        let mode = Mode {
            aligned: true,
            rules: &self.ctx.rules,
        };
        for &leaf in &leaves {
            if let Some(why) = match_scalar(&expected, &self.nodes[leaf].cand, mode) {
                return self.entry(&expected, at, Some(leaf), true, why);
            }
        }
        let why = if leaves.is_empty() {
            "aligned key holds no scalar value".to_owned()
        } else {
            "aligned value differs".to_owned()
        };
        self.entry(&expected, at, leaves.first().copied(), false, why)
    }

    fn fallback(&self, value: &Value, at: &GtPos<'_>) -> UnitLedgerEntry {
        let expected = self.expected(value, at);
        if let Some(prose) = &self.prose {
            let found = prose.find(&expected).or_else(|| match at.key.as_deref() {
                Some(key) if self.ctx.rules.prose_numbers_by_key => {
                    prose.find_by_key(&expected, key)
                }
                _ => None,
            });
            return match found {
                Some(why) => self.entry(&expected, at, None, true, why),
                None => self.entry(
                    &expected,
                    at,
                    None,
                    false,
                    "not found in prose answer".to_owned(),
                ),
            };
        }
        if self.nodes.is_empty() {
            return self.entry(&expected, at, None, false, "empty answer".to_owned());
        }
        if !is_distinctive(value) {
            return self.entry(
                &expected,
                at,
                None,
                false,
                "key not in answer (value not distinctive enough to search)".to_owned(),
            );
        }
        let mode = Mode {
            aligned: false,
            rules: &self.ctx.rules,
        };
        for (i, node) in self.nodes.iter().enumerate() {
            if !node.is_scalar() {
                continue;
            }
            if let Some(why) = match_scalar(&expected, &node.cand, mode) {
                return self.entry(
                    &expected,
                    at,
                    Some(i),
                    true,
                    format!("value found elsewhere in answer: {why}"),
                );
            }
        }
        self.entry(
            &expected,
            at,
            None,
            false,
            "key not in answer and value not found elsewhere".to_owned(),
        )
    }

    fn entry(
        &self,
        expected: &Expected<'_>,
        at: &GtPos<'_>,
        found: Option<usize>,
        matched: bool,
        why: String,
    ) -> UnitLedgerEntry {
        // Whether the question names the key, and whether it gives a row
        // label, depend only on the question: asked once per context.
        let ctx = self.ctx;
        let required = at
            .raw_key
            .is_none_or(|raw| self.question_names(raw, at.key.as_deref()));
        let value = expected.value;
        let tolerance = matches!(value, Value::Number(_)).then_some(expected.abs_tolerance);
        let given = ctx.rules.skip_given_row_labels
            && at.row_field
            && !at.list_element
            && value.as_str().is_some_and(|s| {
                !s.trim().is_empty()
                    && ctx.cache.memo(ctx, format!("value\u{0}{s}"), |q| {
                        contains_word(&q.lower, s)
                    })
            });
        UnitLedgerEntry {
            path: at.path.clone(),
            group: at.group.clone().unwrap_or_else(|| at.path.clone()),
            key: at.key.clone(),
            kind: expected.kind,
            list_element: at.list_element,
            expected: value.clone(),
            tolerance,
            required,
            meta: at.meta,
            given,
            found: found.map(|i| self.nodes[i].value.clone()),
            found_at: found.map(|i| self.nodes[i].path.clone()),
            matched,
            counted: !at.meta && !given && (required || matched),
            why,
            repeat_of: None,
        }
    }
}

/// Where a judge-like answer unit starts (study, "each depth-2 subtree is one
/// fractional unit"): a scalar; a list of scalars; an object or list at
/// depth two or more (the root is depth 0).
fn starts_group(gt: &Value, depth: usize, group_depth: usize) -> bool {
    match gt {
        Value::Object(_) => depth >= group_depth,
        Value::Array(items) => {
            depth >= group_depth
                || items
                    .iter()
                    .all(|v| !matches!(v, Value::Object(_) | Value::Array(_)))
        }
        _ => true,
    }
}

fn sorted_unique(mut out: Vec<usize>) -> Vec<usize> {
    out.sort_unstable();
    out.dedup();
    out
}

fn push_unique(out: &mut Vec<usize>, i: usize) {
    if !out.contains(&i) {
        out.push(i);
    }
}

#[cfg(test)]
mod tests {
    use super::holds_words;

    /// The definition `holds_words` replaces: `_{inner}_` within `_{outer}_`.
    fn by_padding(outer: &str, inner: &str) -> bool {
        format!("_{outer}_").contains(&format!("_{inner}_"))
    }

    #[test]
    fn holds_words_is_padded_containment() {
        let words = ["a", "b", "_", "ab", "b_b", "peak", "c", "local", "__"];
        // Every string of up to three of the pieces, against every other.
        let mut strings: Vec<String> = vec![String::new()];
        for _ in 0..3 {
            let longer: Vec<String> = strings
                .iter()
                .flat_map(|s| words.iter().map(move |w| format!("{s}{w}")))
                .collect();
            strings.extend(longer);
        }
        strings.sort();
        strings.dedup();
        let mut agreed = 0usize;
        for outer in &strings {
            for inner in strings.iter().filter(|s| !s.is_empty()) {
                assert_eq!(
                    holds_words(outer, inner),
                    by_padding(outer, inner),
                    "outer {outer:?}, inner {inner:?}"
                );
                agreed += 1;
            }
        }
        assert!(agreed > 100_000, "{agreed} pairs compared");
        // The overlapping case a non-overlapping search would miss.
        assert!(holds_words("cb_b_b", "b_b"));
        assert!(holds_words("peak_c_local", "peak_c"));
        assert!(!holds_words("peak_cx", "peak_c"));
    }
}
