//! Strict parsing and validation of a judge model's reply.

use crate::record::{clamp_pct, AnswerUnitEntry, CriterionEntry, Verdict};
use crate::rubric::Rubric;
use serde_json::{Map, Value};

/// A judge reply that passed every check.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedJudgement {
    /// H.
    pub answer_correctness_score: f64,
    /// P, recomputed from the rubric ledger (points earned of 20, as percent).
    pub llm_rubric_score: f64,
    /// Answer-unit ledger.
    pub answer_units: Vec<AnswerUnitEntry>,
    /// Rubric ledger, in rubric order.
    pub rubric_ledger: Vec<CriterionEntry>,
    /// Verdict.
    pub verdict: Verdict,
    /// Critical errors.
    pub critical_errors: Vec<String>,
    /// Missing elements.
    pub missing_elements: Vec<String>,
    /// Unsupported claims.
    pub unsupported_claims: Vec<String>,
    /// One-sentence rationale.
    pub rationale: String,
}

/// Largest gap (percentage points) tolerated between the stated
/// `llm_rubric_score` and the one implied by the rubric ledger.
pub const RUBRIC_SCORE_SLACK: f64 = 2.5;

fn strip_fence(text: &str) -> Option<&str> {
    let t = text.trim();
    let inner = t.strip_prefix("```")?.strip_suffix("```")?;
    let inner = inner.strip_prefix("json").unwrap_or(inner);
    Some(inner.trim())
}

fn string_list(obj: &Map<String, Value>, key: &str) -> Result<Vec<String>, String> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!("`{key}` must hold strings, found {other}")),
            })
            .collect(),
        Some(other) => Err(format!(
            "`{key}` must be an array of strings, found {other}"
        )),
    }
}

fn score(obj: &Map<String, Value>, key: &str) -> Result<f64, String> {
    let v = obj
        .get(key)
        .ok_or_else(|| format!("missing `{key}`"))?
        .as_f64()
        .ok_or_else(|| format!("`{key}` must be a number"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("`{key}` = {v} is outside 0-100"));
    }
    Ok(v)
}

/// Parses a judge reply strictly: the whole reply must be one JSON object
/// (a single fenced ```json block is tolerated), with both scores in
/// 0–100, a non-empty answer-unit ledger of booleans, one rubric-ledger
/// entry per rubric criterion (names as in the rubric, 0 ≤ earned ≤
/// points), a known verdict and a non-empty rationale. The stated rubric
/// score must agree with the ledger within [`RUBRIC_SCORE_SLACK`]; the
/// ledger's value is kept. Returns the reason for the first failed check.
pub fn parse_judge_reply(text: &str, rubric: &Rubric) -> Result<ParsedJudgement, String> {
    let body = strip_fence(text).unwrap_or(text.trim());
    let value: Value =
        serde_json::from_str(body).map_err(|e| format!("reply is not one JSON object: {e}"))?;
    let obj = value
        .as_object()
        .ok_or_else(|| "reply must be a JSON object".to_string())?;
    let h = score(obj, "answer_correctness_score")?;
    let stated_p = score(obj, "llm_rubric_score")?;

    let units = obj
        .get("answer_units")
        .and_then(Value::as_array)
        .ok_or_else(|| "missing `answer_units` array".to_string())?;
    if units.is_empty() {
        return Err("`answer_units` is empty".into());
    }
    let mut answer_units = Vec::with_capacity(units.len());
    for (i, u) in units.iter().enumerate() {
        let u = u
            .as_object()
            .ok_or_else(|| format!("answer_units[{i}] is not an object"))?;
        let satisfied = u
            .get("satisfied")
            .and_then(Value::as_bool)
            .ok_or_else(|| format!("answer_units[{i}].satisfied must be a boolean"))?;
        let unit = match u.get("unit") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            _ => return Err(format!("answer_units[{i}].unit must be a non-empty string")),
        };
        answer_units.push(AnswerUnitEntry {
            unit,
            expected: u.get("expected").cloned(),
            found: u.get("found").cloned(),
            satisfied,
            counted: true,
            note: u
                .get("note")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        });
    }

    let ledger = obj
        .get("rubric_ledger")
        .and_then(Value::as_array)
        .ok_or_else(|| "missing `rubric_ledger` array".to_string())?;
    let mut rubric_ledger = Vec::with_capacity(rubric.criteria.len());
    for criterion in &rubric.criteria {
        let key = criterion.name.trim().to_lowercase();
        let matches: Vec<&Map<String, Value>> = ledger
            .iter()
            .filter_map(Value::as_object)
            .filter(|e| {
                e.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n.trim().to_lowercase() == key)
            })
            .collect();
        let entry = match matches.as_slice() {
            [one] => *one,
            [] => {
                return Err(format!(
                    "rubric_ledger has no entry for criterion {:?}",
                    criterion.name
                ))
            }
            _ => {
                return Err(format!(
                    "rubric_ledger repeats criterion {:?}",
                    criterion.name
                ))
            }
        };
        let earned = entry
            .get("points_earned")
            .and_then(Value::as_f64)
            .ok_or_else(|| format!("points_earned of {:?} must be a number", criterion.name))?;
        if !(0.0..=criterion.points + 1e-9).contains(&earned) {
            return Err(format!(
                "points_earned {earned} of {:?} is outside 0-{}",
                criterion.name, criterion.points
            ));
        }
        rubric_ledger.push(CriterionEntry {
            name: criterion.name.clone(),
            points_possible: criterion.points,
            points_earned: earned,
            note: entry
                .get("note")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        });
    }
    if ledger.len() != rubric.criteria.len() {
        return Err(format!(
            "rubric_ledger has {} entries; the rubric has {} criteria",
            ledger.len(),
            rubric.criteria.len()
        ));
    }
    let total: f64 = rubric_ledger.iter().map(|c| c.points_possible).sum();
    let earned: f64 = rubric_ledger.iter().map(|c| c.points_earned).sum();
    let p = if total > 0.0 {
        100.0 * earned / total
    } else {
        0.0
    };
    if (p - stated_p).abs() > RUBRIC_SCORE_SLACK {
        return Err(format!(
            "llm_rubric_score {stated_p} disagrees with the rubric ledger ({earned} of {total} points = {p:.2})"
        ));
    }
    let verdict_label = obj
        .get("verdict")
        .and_then(Value::as_str)
        .ok_or_else(|| "missing `verdict` string".to_string())?;
    let verdict = Verdict::parse(verdict_label).ok_or_else(|| {
        format!(
            "verdict {verdict_label:?} is not one of correct, mostly_correct, partial, incorrect"
        )
    })?;
    let rationale = match obj.get("rationale") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        _ => return Err("`rationale` must be a non-empty string".into()),
    };
    Ok(ParsedJudgement {
        answer_correctness_score: clamp_pct(h),
        llm_rubric_score: clamp_pct(p),
        answer_units,
        rubric_ledger,
        verdict,
        critical_errors: string_list(obj, "critical_errors")?,
        missing_elements: string_list(obj, "missing_elements")?,
        unsupported_claims: string_list(obj, "unsupported_claims")?,
        rationale,
    })
}
