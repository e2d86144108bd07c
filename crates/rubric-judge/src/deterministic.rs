//! The deterministic judge: no model. U comes from a [`UnitScorer`]
//! (normally `answer-units`), H = U, and P from a documented approximation
//! of the task rubric (see [`approximate_rubric`]).

use crate::input::{RunContext, TaskContext};
use crate::judge::Judge;
use crate::record::{AnswerUnitEntry, CriterionEntry, EvaluationRecord, RunStatus, Verdict};
use crate::rubric::{Criterion, Rubric};
use async_trait::async_trait;
use regex::Regex;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// Outcome of unit scoring (§4.1: U = percentage of required units satisfied).
#[derive(Debug, Clone, PartialEq)]
pub struct UnitOutcome {
    /// U, 0–100.
    pub unit_accuracy: f64,
    /// Required units satisfied.
    pub correct: f64,
    /// Required units counted.
    pub total: u64,
    /// Per-unit ledger.
    pub ledger: Vec<AnswerUnitEntry>,
}

/// Scores a final answer's answer units against a task's ground truth.
pub trait UnitScorer: Send + Sync {
    /// Scores `final_answer` for `task`.
    fn score_units(&self, task: &TaskContext, final_answer: &Value) -> UnitOutcome;
}

/// Weight of U in each criterion's approximate credit (the rest comes from
/// the criterion's own anchors and source signals). The published judge's
/// process score follows its unit accuracy closely on the recorded runs
/// (MAE 3.7, r = 0.98; P is above U by 4–7 points on average when U < 40),
/// so U carries most of the weight and the signals only add credit. 0.7
/// was chosen on the dev slice's even-numbered events (P MAE 10.25 against
/// 10.49 for P = U); on the odd ones it is neutral (11.02 against 11.00).
/// Most of the distance to the published P is the distance of our U to the
/// published U. See the `published_agreement` example.
pub const UNIT_WEIGHT: f64 = 0.7;

/// Relative tolerance when matching a number anchor (the answer-units
/// study's 2 %).
pub const ANCHOR_REL_TOLERANCE: f64 = 0.02;

/// Id of the deterministic judge in records.
pub const DETERMINISTIC_JUDGE_ID: &str = "deterministic-v1";

/// The deterministic judge.
#[derive(Debug)]
pub struct DeterministicJudge<S> {
    scorer: S,
}

impl<S: UnitScorer> DeterministicJudge<S> {
    /// A judge using `scorer` for U.
    pub fn new(scorer: S) -> Self {
        Self { scorer }
    }
}

/// The rubric ledger of a rubric with zero points earned.
pub fn empty_rubric_ledger(rubric: &Rubric) -> Vec<CriterionEntry> {
    rubric
        .criteria
        .iter()
        .map(|c| CriterionEntry {
            name: c.name.clone(),
            points_possible: c.points,
            points_earned: 0.0,
            note: String::new(),
        })
        .collect()
}

fn number_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"-?\d[\d,]*(?:\.\d+)?").unwrap_or_else(|_| unreachable!("valid regex"))
    })
}

/// The texts [`number_re`] finds in `s`, in order: scanned by hand when
/// `s` is ASCII (where `\d` is `0-9`), through the regex otherwise.
fn number_matches(s: &str) -> Vec<&str> {
    if !s.is_ascii() {
        return number_re().find_iter(s).map(|m| m.as_str()).collect();
    }
    let b = s.as_bytes();
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let first = if digit(i) {
            i
        } else if b[i] == b'-' && digit(i + 1) {
            i + 1
        } else {
            i += 1;
            continue;
        };
        // `\d[\d,]*(?:\.\d+)?` from the first digit.
        let mut j = first + 1;
        while digit(j) || b.get(j) == Some(&b',') {
            j += 1;
        }
        if b.get(j) == Some(&b'.') && digit(j + 1) {
            j += 2;
            while digit(j) {
                j += 1;
            }
        }
        out.push(&s[i..j]);
        i = j;
    }
    out
}

fn date_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"\d{4}-\d{2}-\d{2}").unwrap_or_else(|_| unreachable!("valid regex"))
    })
}

fn ident_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"`([^`]{2,80})`|\b([A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)\b")
            .unwrap_or_else(|_| unreachable!("valid regex"))
    })
}

/// Lower-case, every run of non-alphanumerics (except `.`, `-`) → one space.
fn norm(text: &str) -> String {
    /// Appends one lowercased character: kept when alphanumeric, `.` or
    /// `-`, else one space for a run of others.
    fn keep(ch: char, out: &mut String, space: &mut bool) {
        if ch.is_alphanumeric() || ch == '.' || ch == '-' {
            out.push(ch);
            *space = false;
        } else if !*space {
            out.push(' ');
            *space = true;
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut space = true;
    let mut rest = text;
    while !rest.is_empty() {
        // A run of ASCII is read byte by byte: each byte lowercases to one
        // ASCII character (no lowercase iterator).
        let ascii = rest
            .bytes()
            .position(|b| !b.is_ascii())
            .unwrap_or(rest.len());
        for b in rest[..ascii].bytes() {
            let b = b.to_ascii_lowercase();
            if b.is_ascii_alphanumeric() || b == b'.' || b == b'-' {
                out.push(char::from(b));
                space = false;
            } else if !space {
                out.push(' ');
                space = true;
            }
        }
        rest = &rest[ascii..];
        if let Some(ch) = rest.chars().next() {
            ch.to_lowercase()
                .for_each(|c| keep(c, &mut out, &mut space));
            rest = &rest[ch.len_utf8()..];
        }
    }
    out.trim().to_string()
}

/// One checkable anchor of a criterion.
#[derive(Debug, Clone, PartialEq)]
pub enum Anchor {
    /// A number, with its half-unit from the decimals written.
    Number {
        /// Value.
        value: f64,
        /// Half a unit of the last written decimal.
        half_unit: f64,
    },
    /// A normalised phrase, identifier, label or date.
    Text(String),
}

fn number_anchor(text: &str) -> Option<Anchor> {
    let clean = text.replace(',', "");
    let value: f64 = clean.parse().ok()?;
    let decimals = clean.split('.').nth(1).map_or(0, str::len) as i32;
    Some(Anchor::Number {
        value,
        half_unit: 0.5 * 10f64.powi(-decimals),
    })
}

fn gt_leaves(value: &Value, key: &str, out: &mut Vec<(String, Value)>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                gt_leaves(v, k, out);
            }
        }
        Value::Array(items) => {
            for v in items {
                gt_leaves(v, key, out);
            }
        }
        scalar => out.push((key.to_string(), scalar.clone())),
    }
}

fn value_anchor(value: &Value) -> Option<Anchor> {
    match value {
        Value::Number(n) => {
            let v = n.as_f64()?;
            let text = n.to_string();
            let decimals = text.split('.').nth(1).map_or(0, str::len) as i32;
            Some(Anchor::Number {
                value: v,
                half_unit: 0.5 * 10f64.powi(-decimals),
            })
        }
        Value::String(s) => {
            let n = norm(s);
            (n.len() >= 3 && n.split(' ').count() <= 8).then_some(Anchor::Text(n))
        }
        _ => None,
    }
}

/// Anchors of a criterion: numbers (except bare integers below 10),
/// dates, back-ticked or snake_case identifiers in its description and
/// full-credit conditions, and
/// the `primary_gt` values whose key the criterion names.
pub fn criterion_anchors(criterion: &Criterion, primary_gt: &Value) -> Vec<Anchor> {
    let text = format!(
        "{} {} {}",
        criterion.name, criterion.description, criterion.full_credit
    );
    let mut anchors = Vec::new();
    let mut seen = BTreeSet::new();
    let mut push = |a: Anchor, seen: &mut BTreeSet<String>| {
        if seen.insert(format!("{a:?}")) {
            anchors.push(a);
        }
    };
    let dates: Vec<String> = date_re()
        .find_iter(&text)
        .map(|m| m.as_str().to_string())
        .collect();
    for d in &dates {
        push(Anchor::Text(d.clone()), &mut seen);
    }
    let without_dates = date_re().replace_all(&text, " ");
    let without_idents = ident_re().replace_all(&without_dates, " ");
    for m in number_re().find_iter(&without_idents) {
        let s = m.as_str();
        if !s.contains('.')
            && s.replace(',', "")
                .parse::<i64>()
                .is_ok_and(|n| n.abs() < 10)
        {
            continue;
        }
        if let Some(a) = number_anchor(s) {
            push(a, &mut seen);
        }
    }
    let lower = text.to_lowercase();
    for cap in ident_re().captures_iter(&without_dates) {
        let ident = cap.get(1).or_else(|| cap.get(2)).map_or("", |m| m.as_str());
        let n = norm(ident);
        if n.len() >= 4 {
            push(Anchor::Text(n), &mut seen);
        }
    }
    let mut leaves = Vec::new();
    gt_leaves(primary_gt, "", &mut leaves);
    for (key, value) in leaves {
        if key.len() >= 4 && lower.contains(&key.to_lowercase()) {
            if let Some(a) = value_anchor(&value) {
                push(a, &mut seen);
            }
        }
    }
    anchors
}

/// What the run shows: normalised text of the final answer, evidence
/// claims, reasoning summary and Python stdout, its numbers, and the
/// basenames of every file it touched.
#[derive(Debug, Clone, Default)]
pub struct RunHaystack {
    text: String,
    numbers: Vec<f64>,
    touched: BTreeSet<String>,
}

fn collect_strings(value: &Value, out: &mut String) {
    match value {
        Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        Value::Object(map) => {
            for (k, v) in map {
                out.push_str(k);
                out.push(' ');
                collect_strings(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        other => {
            out.push_str(&other.to_string());
            out.push('\n');
        }
    }
}

fn basename(path: &str) -> String {
    path.rsplit(['/', '\\'])
        .next()
        .unwrap_or(path)
        .to_lowercase()
}

impl RunHaystack {
    /// Builds the haystack of a run.
    pub fn of(run: &RunContext) -> Self {
        let mut raw = String::new();
        collect_strings(&run.final_answer, &mut raw);
        for v in run
            .evidence
            .iter()
            .chain(&run.reasoning_summary)
            .chain(&run.unsupported_or_unresolved)
        {
            collect_strings(v, &mut raw);
        }
        let mut touched = BTreeSet::new();
        for step in &run.tool_trace {
            if step.ok {
                raw.push_str(&step.stdout);
                raw.push('\n');
            }
            for f in &step.evidence_files {
                touched.insert(basename(f));
            }
            if let Some(p) = step.args.get("path").and_then(Value::as_str) {
                touched.insert(basename(p));
            }
        }
        for e in &run.evidence {
            if let Some(p) = e.get("source_file").and_then(Value::as_str) {
                touched.insert(basename(p));
            }
        }
        let numbers = number_matches(&raw)
            .into_iter()
            .filter_map(|m| m.replace(',', "").parse().ok())
            .collect();
        RunHaystack {
            text: format!(" {} ", norm(&raw)),
            numbers,
            touched,
        }
    }

    /// Whether the run shows `anchor`.
    pub fn contains(&self, anchor: &Anchor) -> bool {
        match anchor {
            Anchor::Number { value, half_unit } => {
                let tol = (ANCHOR_REL_TOLERANCE * value.abs()).max(*half_unit) + 1e-9;
                self.numbers.iter().any(|x| (x - value).abs() <= tol)
            }
            // (a match as a whole word, ` t `, is also a match of `t`)
            Anchor::Text(t) => self.text.contains(t.as_str()),
        }
    }

    /// Share of `paths` (by basename) the run touched, or `None` if empty.
    pub fn touched_share(&self, paths: &[String]) -> Option<f64> {
        if paths.is_empty() {
            return None;
        }
        let hit = paths
            .iter()
            .filter(|p| self.touched.contains(&basename(p)))
            .count();
        Some(hit as f64 / paths.len() as f64)
    }
}

const SOURCE_WORDS: [&str; 7] = [
    "source", "file", "record", "report", "path", "package", "evidence",
];

fn source_paths(ground_truth: &Value) -> Vec<String> {
    let mut out = BTreeSet::new();
    if let Some(files) = ground_truth
        .pointer("/provenance/source_files")
        .and_then(Value::as_array)
    {
        for f in files.iter().filter_map(Value::as_str) {
            if f.starts_with("data/") {
                out.insert(f.to_string());
            }
        }
    }
    out.into_iter().collect()
}

/// The deterministic rubric approximation. For each criterion with points
/// p, credit = p × max(U/100, w·U/100 + (1 − w)·s) with w = [`UNIT_WEIGHT`] and s the
/// mean of the criterion's available signals:
/// - anchor share: the share of the criterion's anchors
///   ([`criterion_anchors`]) that the run shows ([`RunHaystack`]) — values,
///   labels, dates and identifiers the criterion names;
/// - source share (criteria naming sources, files, records, reports,
///   paths, package or evidence): the share of the ground truth's data
///   source files the trajectory touched.
///
/// A criterion with no signal gets p × U/100. Returns the ledger (in
/// rubric order).
pub fn approximate_rubric(
    task: &TaskContext,
    run: &RunContext,
    unit_accuracy: f64,
) -> Vec<CriterionEntry> {
    approximate_rubric_weighted(task, run, unit_accuracy, UNIT_WEIGHT)
}

/// [`approximate_rubric`] with an explicit weight of U (0–1), for studies.
pub fn approximate_rubric_weighted(
    task: &TaskContext,
    run: &RunContext,
    unit_accuracy: f64,
    unit_weight: f64,
) -> Vec<CriterionEntry> {
    approximate_rubric_prepared(&PreparedRubric::new(task), run, unit_accuracy, unit_weight)
}

/// The part of [`approximate_rubric`] that depends on the task only (each
/// criterion's anchors, whether it names sources, the ground truth's source
/// files): built once per task and read for every run of it.
#[derive(Debug, Clone)]
pub struct PreparedRubric {
    criteria: Vec<PreparedCriterion>,
    sources: Vec<String>,
}

#[derive(Debug, Clone)]
struct PreparedCriterion {
    name: String,
    points: f64,
    anchors: Vec<Anchor>,
    names_sources: bool,
}

impl PreparedRubric {
    /// Prepares the rubric of `task`.
    pub fn new(task: &TaskContext) -> Self {
        let criteria = task
            .rubric
            .criteria
            .iter()
            .map(|c| {
                let text = format!("{} {}", c.name, c.description).to_lowercase();
                PreparedCriterion {
                    name: c.name.clone(),
                    points: c.points,
                    anchors: criterion_anchors(c, &task.primary_gt),
                    names_sources: SOURCE_WORDS.iter().any(|w| text.contains(w)),
                }
            })
            .collect();
        PreparedRubric {
            criteria,
            sources: source_paths(&task.ground_truth),
        }
    }
}

/// [`approximate_rubric_weighted`] with the task's part prepared once.
pub fn approximate_rubric_prepared(
    prepared: &PreparedRubric,
    run: &RunContext,
    unit_accuracy: f64,
    unit_weight: f64,
) -> Vec<CriterionEntry> {
    let hay = RunHaystack::of(run);
    let u = unit_accuracy / 100.0;
    prepared
        .criteria
        .iter()
        .map(|c| {
            let anchors = &c.anchors;
            let mut signals = Vec::new();
            let mut notes = Vec::new();
            if !anchors.is_empty() {
                let found = anchors.iter().filter(|a| hay.contains(a)).count();
                signals.push(found as f64 / anchors.len() as f64);
                notes.push(format!("anchors {found}/{}", anchors.len()));
            }
            if c.names_sources {
                if let Some(share) = hay.touched_share(&prepared.sources) {
                    signals.push(share);
                    notes.push(format!("sources touched {:.0}%", 100.0 * share));
                }
            }
            let fraction = if signals.is_empty() {
                notes.push("no anchors: U only".into());
                u
            } else {
                let s = signals.iter().sum::<f64>() / signals.len() as f64;
                // Shown work adds credit; it never takes away from U.
                u.max(unit_weight * u + (1.0 - unit_weight) * s)
            };
            let earned = (c.points * fraction.clamp(0.0, 1.0) * 100.0).round() / 100.0;
            CriterionEntry {
                name: c.name.clone(),
                points_possible: c.points,
                points_earned: earned.min(c.points),
                note: notes.join("; "),
            }
        })
        .collect()
}

#[async_trait]
impl<S: UnitScorer> Judge for DeterministicJudge<S> {
    fn judge_id(&self) -> &str {
        DETERMINISTIC_JUDGE_ID
    }

    async fn evaluate(
        &self,
        task: &TaskContext,
        run: &RunContext,
    ) -> crate::Result<EvaluationRecord> {
        Ok(evaluate_deterministic(&self.scorer, task, run))
    }
}

/// The synchronous core of [`DeterministicJudge`].
pub fn evaluate_deterministic<S: UnitScorer + ?Sized>(
    scorer: &S,
    task: &TaskContext,
    run: &RunContext,
) -> EvaluationRecord {
    evaluate_deterministic_with(task, run, || scorer.score_units(task, &run.final_answer))
}

/// [`evaluate_deterministic`] with the units of an answer that was scored
/// elsewhere: `units` is called once, and only for a run that finished
/// (a failed run scores zero without it).
pub fn evaluate_deterministic_with(
    task: &TaskContext,
    run: &RunContext,
    units: impl FnOnce() -> UnitOutcome,
) -> EvaluationRecord {
    evaluate_deterministic_prepared(task, &PreparedRubric::new(task), run, units)
}

/// [`evaluate_deterministic_with`] with the task's rubric prepared once
/// ([`PreparedRubric::new`]) for all of its runs.
pub fn evaluate_deterministic_prepared(
    task: &TaskContext,
    rubric: &PreparedRubric,
    run: &RunContext,
    units: impl FnOnce() -> UnitOutcome,
) -> EvaluationRecord {
    if run.run_status == RunStatus::Error {
        let mut record = EvaluationRecord::solver_failure(
            &task.task_id,
            &run.system,
            DETERMINISTIC_JUDGE_ID,
            empty_rubric_ledger(&task.rubric),
            &run.figures
                .termination_reason
                .as_ref()
                .map_or_else(|| "run_status error".to_string(), |t| t.name()),
        );
        record.labels = task.labels.clone();
        record.trajectory = run.figures.clone();
        return record;
    }
    let units = units();
    let ledger = approximate_rubric_prepared(rubric, run, units.unit_accuracy, UNIT_WEIGHT);
    let earned: f64 = ledger.iter().map(|c| c.points_earned).sum();
    let total: f64 = ledger.iter().map(|c| c.points_possible).sum();
    let p = if total > 0.0 {
        100.0 * earned / total
    } else {
        0.0
    };
    let missing: Vec<String> = units
        .ledger
        .iter()
        .filter(|e| e.counted && !e.satisfied && e.found.is_none())
        .map(|e| e.unit.clone())
        .collect();
    let wrong: Vec<String> = units
        .ledger
        .iter()
        .filter(|e| e.counted && !e.satisfied && e.found.is_some())
        .map(|e| {
            format!(
                "{}: expected {}, found {}",
                e.unit,
                e.expected.as_ref().map_or("?".into(), Value::to_string),
                e.found.as_ref().map_or("?".into(), Value::to_string)
            )
        })
        .collect();
    let mut record = EvaluationRecord {
        task_id: task.task_id.clone(),
        system: run.system.clone(),
        judge: DETERMINISTIC_JUDGE_ID.into(),
        run_status: RunStatus::Ok,
        answer_correctness_score: units.unit_accuracy,
        llm_rubric_score: p,
        unit_accuracy: units.unit_accuracy,
        answer_units_correct: units.correct,
        answer_units_total: units.total,
        answer: 0.0,
        core: 0.0,
        strict95: false,
        rubric_points_earned: earned,
        rubric_points_total: total,
        answer_units: units.ledger,
        rubric_ledger: ledger,
        verdict: Verdict::from_answer_score(units.unit_accuracy),
        critical_errors: wrong,
        missing_elements: missing,
        unsupported_claims: Vec::new(),
        rationale: format!(
            "Deterministic scoring: {} of {} required answer units matched (U = H = {:.1}) and the rubric approximation gives {:.2} of {:.0} points.",
            units.correct, units.total, units.unit_accuracy, earned, total
        ),
        labels: task.labels.clone(),
        trajectory: run.figures.clone(),
        judge_attempts: 0,
        judge_input_sha256: String::new(),
        claims: Vec::new(),
    };
    record.recompute_scores();
    record
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod number_scanner_tests {
    use super::*;

    /// xorshift64*: a fixed, dependency-free sequence of draws below `n`.
    fn xorshift(seed: u64, multiplier: u64) -> impl FnMut(usize) -> usize {
        let mut state = seed;
        move |n| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(multiplier) >> 33) as usize % n
        }
    }

    /// The ASCII scanner finds the regex's matches on 20,000 random
    /// strings built from the characters the regex cares about.
    #[test]
    fn number_matches_agree_with_the_regex() {
        let alphabet = b"0123456789,,..--+ ab";
        let mut next = xorshift(0x9E37_79B9_7F4A_7C15, 0x2545_F491_4F6C_DD1D);
        let mut found = 0;
        for _ in 0..20_000 {
            let len = next(24);
            let s: String = (0..len)
                .map(|_| alphabet[next(alphabet.len())] as char)
                .collect();
            let regex: Vec<&str> = number_re().find_iter(&s).map(|m| m.as_str()).collect();
            let ours = number_matches(&s);
            assert_eq!(ours, regex, "{s:?}");
            found += ours.len();
        }
        assert!(found > 10_000, "the strings held numbers: {found}");
    }

    /// `norm` as it was written, one `char` at a time.
    fn norm_by_chars(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut space = true;
        let mut keep = |ch: char, out: &mut String| {
            if ch.is_alphanumeric() || ch == '.' || ch == '-' {
                out.push(ch);
                space = false;
            } else if !space {
                out.push(' ');
                space = true;
            }
        };
        for ch in text.chars() {
            ch.to_lowercase().for_each(|c| keep(c, &mut out));
        }
        out.trim().to_string()
    }

    /// The byte-wise ASCII path of `norm` equals the per-character rule on
    /// 20,000 random strings mixing ASCII with letters whose lowercase
    /// differs in length (`İ`), symbols (`°`, `−`) and non-Latin digits.
    #[test]
    fn norm_equals_the_per_character_rule() {
        let alphabet: Vec<char> = "aZ09.-_ ,\t\nÉİß°−٣Ωx".chars().collect();
        let mut next = xorshift(0x2545_F491_4F6C_DD1D, 0x9E37_79B9_7F4A_7C15);
        for _ in 0..20_000 {
            let len = next(24);
            let s: String = (0..len).map(|_| alphabet[next(alphabet.len())]).collect();
            assert_eq!(norm(&s), norm_by_chars(&s), "{s:?}");
        }
    }
}
