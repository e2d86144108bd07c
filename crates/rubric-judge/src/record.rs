//! The evaluation record (paper App. E, JUDGE prompt, "EVALUATION RECORD")
//! and the per-task scores of §4.1.

use earthverse_evidence_ledger::Claim;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Verdict of a judge, the four labels of the published judge records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Everything required is right.
    Correct,
    /// Small deviations.
    MostlyCorrect,
    /// Part of the obligations met.
    Partial,
    /// Wrong or missing.
    Incorrect,
}

impl Verdict {
    /// The verdict band of an answer score A on 0–100: ≥ 95 correct, ≥ 75
    /// mostly correct, ≥ 30 partial, else incorrect. Used by the
    /// deterministic judge (the LLM judge states its own verdict).
    pub fn from_answer_score(answer: f64) -> Self {
        if answer >= 95.0 {
            Verdict::Correct
        } else if answer >= 75.0 {
            Verdict::MostlyCorrect
        } else if answer >= 30.0 {
            Verdict::Partial
        } else {
            Verdict::Incorrect
        }
    }

    /// Parses the label a judge wrote (case and separators ignored).
    pub fn parse(label: &str) -> Option<Self> {
        let norm: String = label
            .trim()
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        match norm.as_str() {
            "correct" => Some(Verdict::Correct),
            "mostly_correct" => Some(Verdict::MostlyCorrect),
            "partial" | "partially_correct" => Some(Verdict::Partial),
            "incorrect" | "wrong" => Some(Verdict::Incorrect),
            _ => None,
        }
    }
}

/// Whether the solver run finished (paper §4.1: solver failures score zero
/// and stay in the denominator): the one type the run writer and every
/// reader share.
pub use earthverse_package_model::RunStatus;

/// One answer unit of the ledger: a required field, value, label, ordering
/// or conclusion and whether the final answer satisfied it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerUnitEntry {
    /// Key path of the unit in `primary_gt` (e.g. `event_window.start_date`),
    /// or the judge's own name for it.
    pub unit: String,
    /// Expected value from the ground truth, when known.
    #[serde(
        default,
        deserialize_with = "present_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub expected: Option<Value>,
    /// What the answer gave, when found (`null` when the answer gave
    /// `null`; absent when nothing was found).
    #[serde(
        default,
        deserialize_with = "present_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub found: Option<Value>,
    /// Whether the unit is satisfied.
    pub satisfied: bool,
    /// Whether the unit counts in U (required units only).
    #[serde(default = "default_true")]
    pub counted: bool,
    /// Short explanation (rule used, tolerance, mismatch).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

fn default_true() -> bool {
    true
}

/// A field that is present holds a value, `null` included: `"found": null`
/// (the answer gave `null`) reads back as `Some(Null)`, not as absent, so a
/// record read and written again (resuming a score file) keeps its bytes.
fn present_value<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// One rubric criterion of the ledger: points earned of the criterion's
/// points (the criteria of a valid rubric sum to 20).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CriterionEntry {
    /// Criterion name, as in the rubric.
    pub name: String,
    /// Points the criterion is worth.
    pub points_possible: f64,
    /// Points earned, 0 ≤ earned ≤ possible.
    pub points_earned: f64,
    /// Why (judge's words, or the deterministic rule's evidence).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
}

/// Figures of the run's trajectory copied into the record so that
/// aggregation needs no second file (Table 2's trajectory columns; they
/// never enter the score, §4.1): the one type shared with the run
/// diagnostics and the leaderboard (`earthverse-run-schema`).
pub use earthverse_package_model::TrajectoryFigures;

/// Task labels copied into the record for slicing (Table 8, difficulty and
/// hazard-family slices).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskLabels {
    /// Event id (`CSX-NNN`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// Hazard family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hazard_family: Option<String>,
    /// Difficulty label (e.g. `L2_quantitative_event_diagnosis`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    /// Capability tags (`dimensions`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub capabilities: Vec<String>,
    /// Task type (`numeric`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
}

/// One evaluation of one run: the paper's JUDGE evaluation record (App. E)
/// plus the §4.1 per-task scores. Serialised one per line (JSONL) by
/// `earthverse score`. Field names are stable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluationRecord {
    /// Task id (`CSX-NNN_Qk`).
    pub task_id: String,
    /// System (model or agent) whose run was judged.
    pub system: String,
    /// Which judge produced the record (`deterministic-v1`, `openai:gpt-4.1`).
    pub judge: String,
    /// Solver run status; `error` scores zero everywhere.
    pub run_status: RunStatus,
    /// H: holistic answer-correctness score, 0–100.
    pub answer_correctness_score: f64,
    /// P: process score from the task's 20-point rubric, 0–100.
    pub llm_rubric_score: f64,
    /// U: percentage of required answer units satisfied, 0–100.
    pub unit_accuracy: f64,
    /// Required units satisfied (may be fractional for the LLM judge's own counts).
    pub answer_units_correct: f64,
    /// Required units counted.
    pub answer_units_total: u64,
    /// A = min(H, U) (§4.1, Eq. 2).
    pub answer: f64,
    /// Core = (A + P) / 2 (§4.1, Eq. 2).
    pub core: f64,
    /// Strict@95: U ≥ 95 (§4.1).
    pub strict95: bool,
    /// Rubric points earned (of `rubric_points_total`, 20 for a valid rubric).
    pub rubric_points_earned: f64,
    /// Rubric points available.
    pub rubric_points_total: f64,
    /// Per-unit answer ledger.
    pub answer_units: Vec<AnswerUnitEntry>,
    /// Per-criterion rubric ledger.
    pub rubric_ledger: Vec<CriterionEntry>,
    /// Verdict.
    pub verdict: Verdict,
    /// Critical errors.
    #[serde(default)]
    pub critical_errors: Vec<String>,
    /// Missing elements.
    #[serde(default)]
    pub missing_elements: Vec<String>,
    /// Unsupported claims.
    #[serde(default)]
    pub unsupported_claims: Vec<String>,
    /// One sentence explaining the score pair.
    pub rationale: String,
    /// Task labels for slicing.
    #[serde(default)]
    pub labels: TaskLabels,
    /// Trajectory figures of the run.
    #[serde(default)]
    pub trajectory: TrajectoryFigures,
    /// Judge calls made for this record (0 when served from cache or deterministic).
    #[serde(default)]
    pub judge_attempts: u32,
    /// sha256 of everything the judge saw plus the judge id (cache key).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub judge_input_sha256: String,
    /// The claim–evidence ledger of the run's answer units (provenance of
    /// each value and the error family of each unsatisfied unit), filled by
    /// `earthverse score`; absent in records written before it existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<Claim>,
}

/// The §4.1 scores of one task from H, U and P (all 0–100).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TaskScores {
    /// A = min(H, U).
    pub answer: f64,
    /// Core = (A + P) / 2.
    pub core: f64,
    /// U ≥ 95.
    pub strict95: bool,
}

/// Strict@95 threshold on U (§4.1): the statistics crate's one constant.
pub use earthverse_stats_bootstrap::STRICT_THRESHOLD;

/// Computes A = min(H, U), Core = (A + P) / 2 and Strict@95 = U ≥ 95
/// (paper §4.1, Eq. 2). Inputs are clamped to 0–100; NaN counts as 0.
///
/// ```
/// let s = earthverse_rubric_judge::task_scores(98.0, 100.0, 97.5);
/// assert_eq!(s.answer, 98.0);
/// assert_eq!(s.core, 97.75);
/// assert!(s.strict95);
/// ```
pub fn task_scores(h: f64, u: f64, p: f64) -> TaskScores {
    let h = clamp_pct(h);
    let u = clamp_pct(u);
    let p = clamp_pct(p);
    let answer = h.min(u);
    TaskScores {
        answer,
        core: (answer + p) / 2.0,
        strict95: u >= STRICT_THRESHOLD,
    }
}

/// Clamps a percentage to 0–100 (NaN → 0).
pub fn clamp_pct(x: f64) -> f64 {
    if x.is_nan() {
        0.0
    } else {
        x.clamp(0.0, 100.0)
    }
}

impl EvaluationRecord {
    /// Recomputes `answer`, `core` and `strict95` from H, U and P.
    pub fn recompute_scores(&mut self) {
        let s = task_scores(
            self.answer_correctness_score,
            self.unit_accuracy,
            self.llm_rubric_score,
        );
        self.answer = s.answer;
        self.core = s.core;
        self.strict95 = s.strict95;
    }

    /// The record of a failed solver run: every score zero (§4.1), the
    /// rubric ledger with zero points, the run kept in the denominator.
    pub fn solver_failure(
        task_id: &str,
        system: &str,
        judge: &str,
        rubric_ledger: Vec<CriterionEntry>,
        reason: &str,
    ) -> Self {
        let total = rubric_ledger.iter().map(|c| c.points_possible).sum();
        EvaluationRecord {
            task_id: task_id.to_string(),
            system: system.to_string(),
            judge: judge.to_string(),
            run_status: RunStatus::Error,
            answer_correctness_score: 0.0,
            llm_rubric_score: 0.0,
            unit_accuracy: 0.0,
            answer_units_correct: 0.0,
            answer_units_total: 0,
            answer: 0.0,
            core: 0.0,
            strict95: false,
            rubric_points_earned: 0.0,
            rubric_points_total: total,
            answer_units: Vec::new(),
            rubric_ledger: rubric_ledger
                .into_iter()
                .map(|mut c| {
                    c.points_earned = 0.0;
                    c
                })
                .collect(),
            verdict: Verdict::Incorrect,
            critical_errors: vec![format!("solver run failed: {reason}")],
            missing_elements: Vec::new(),
            unsupported_claims: Vec::new(),
            rationale: format!("The solver run failed ({reason}), so every score is zero."),
            labels: TaskLabels::default(),
            trajectory: TrajectoryFigures::default(),
            judge_attempts: 0,
            judge_input_sha256: String::new(),
            claims: Vec::new(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::AnswerUnitEntry;

    /// An entry read from its JSON and written again keeps its bytes: a
    /// `null` the answer gave stays `null`, an absent value stays absent.
    #[test]
    fn answer_unit_entries_keep_their_bytes_through_a_round_trip() {
        for line in [
            r#"{"unit":"a","expected":250.0,"found":null,"satisfied":false,"counted":false,"note":"aligned value differs"}"#,
            r#"{"unit":"b","expected":null,"found":"x","satisfied":false,"counted":true}"#,
            r#"{"unit":"c","expected":1,"satisfied":false,"counted":true,"note":"missing"}"#,
            r#"{"unit":"d","satisfied":true,"counted":true}"#,
        ] {
            let entry: AnswerUnitEntry = serde_json::from_str(line).unwrap();
            assert_eq!(serde_json::to_string(&entry).unwrap(), line);
        }
        let given_null: AnswerUnitEntry =
            serde_json::from_str(r#"{"unit":"a","found":null,"satisfied":false}"#).unwrap();
        assert_eq!(given_null.found, Some(serde_json::Value::Null));
        let absent: AnswerUnitEntry =
            serde_json::from_str(r#"{"unit":"a","satisfied":false}"#).unwrap();
        assert_eq!(absent.found, None);
    }
}
