//! Recorded runs: the trajectory format of
//! `exploration/trajectories/<system>/<task>.json` (every tool call with its
//! arguments and output, the final answer, evidence, and the published judge
//! scores and diagnostics).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One recorded run of one system on one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRun {
    /// The task, e.g. `CSX-001_Q1`.
    pub task_id: String,
    /// The system (model) id, e.g. `claude-haiku-4-5`.
    pub model_id: String,
    /// Display name of the system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The published judge scores.
    #[serde(default)]
    pub scores: RunScores,
    /// Run diagnostics.
    #[serde(default)]
    pub diagnostics: RunDiagnostics,
    /// Every tool call, in order.
    #[serde(default)]
    pub tool_calls: Vec<RecordedToolCall>,
    /// Evidence list `[{claim, source_file, support_type}]`.
    #[serde(default)]
    pub evidence: Vec<Value>,
    /// Reasoning summary lines.
    #[serde(default)]
    pub reasoning_summary: Vec<Value>,
    /// Unsupported or unresolved items.
    #[serde(default)]
    pub unsupported_or_unresolved: Vec<Value>,
    /// The final answer: an object, or a string when the system did not
    /// produce parseable JSON.
    #[serde(default)]
    pub final_answer: Value,
    /// The judge's rationale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_rationale: Option<Value>,
    /// The experimental condition of the run (ours; absent from the public
    /// records, whose runs all use the paper's default condition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<crate::RunCondition>,
    /// Fields this type does not model, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RecordedRun {
    /// The package-relative or release-relative source files cited in
    /// `evidence[].source_file`.
    pub fn evidence_files(&self) -> Vec<&str> {
        self.evidence
            .iter()
            .filter_map(|e| e.get("source_file").and_then(Value::as_str))
            .collect()
    }
}

/// Published scores of a recorded run (paper §4.1): `answer` and `rubric`
/// on 0–100, unit accuracy, answer units correct/total, rubric points.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunScores {
    /// Overall score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overall: Option<f64>,
    /// Answer score (0–100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<f64>,
    /// Rubric score (0–100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric: Option<f64>,
    /// Unit accuracy (0–100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit_accuracy: Option<f64>,
    /// Answer units judged correct.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_units_correct: Option<u64>,
    /// Answer units in the ground truth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_units_total: Option<u64>,
    /// Rubric points earned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric_points_earned: Option<f64>,
    /// Rubric points available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric_points_total: Option<f64>,
    /// Verdict, e.g. `correct`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Fields this type does not model, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Diagnostics of a recorded run. Fields whose type varies on the release
/// (`termination_reason` may be null, `total_tokens` may be a string) are
/// kept as JSON with typed accessors.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunDiagnostics {
    /// `ok`, or the failure status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_status: Option<String>,
    /// Wall-clock latency in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_s: Option<f64>,
    /// Tool calls made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u64>,
    /// Model rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_rounds: Option<u64>,
    /// File reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_reads: Option<u64>,
    /// Distinct evidence files touched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unique_evidence_files: Option<u64>,
    /// Python calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_calls: Option<u64>,
    /// Tool errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_errors: Option<u64>,
    /// Prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Fields this type does not model or whose type varies
    /// (`termination_reason`, `total_tokens`), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RunDiagnostics {
    /// Why the run ended, when recorded.
    pub fn termination_reason(&self) -> Option<&str> {
        self.extra.get("termination_reason").and_then(Value::as_str)
    }

    /// [`Self::termination_reason`] as the shared enum.
    pub fn termination(&self) -> Option<TerminationReason> {
        self.termination_reason().map(TerminationReason::from_name)
    }

    /// Total tokens, accepting a number or a numeric string.
    pub fn total_tokens(&self) -> Option<u64> {
        match self.extra.get("total_tokens")? {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
}

/// One recorded tool call, with the original harness's tool names
/// (`list_package_files`, `read_text_file`, `search_package_files`,
/// `summarize_table_or_json`, `python_exec`, `inspect_image`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedToolCall {
    /// 1-based step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// Tool name.
    pub tool: String,
    /// Whether the call succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    /// The model's stated reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Arguments as given.
    #[serde(default)]
    pub args: Value,
    /// Output `{text, truncated, original_chars}`.
    #[serde(default)]
    pub output: Value,
    /// Fields this type does not model (`code`, `stdout`, `stderr`,
    /// `returncode`, `warnings`, `evidence_files`), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RecordedToolCall {
    /// The output text (`output.text`), when present.
    pub fn output_text(&self) -> Option<&str> {
        self.output.get("text").and_then(Value::as_str)
    }

    /// A field of `extra` holding `{text, ...}` (e.g. `stdout`), as text.
    pub fn stream_text(&self, field: &str) -> Option<&str> {
        self.extra
            .get(field)
            .and_then(|v| v.get("text"))
            .and_then(Value::as_str)
    }
}

/// Whether a solver run finished (§4.1: a failed run scores zero and stays
/// in the denominator). One type for the writer (`agent-controller`'s
/// `trajectory.json`), the readers (this crate, the judges) and the
/// statistics; serialised as `"ok"` / `"error"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// The run ended with an answer (possibly a budget fallback).
    Ok,
    /// The run failed; every score is zero.
    Error,
}

impl RunStatus {
    /// The one reading rule for a recorded run: `ok` (or no status at all,
    /// as in some public records) with a final answer is [`RunStatus::Ok`];
    /// any other status, or no final answer, is [`RunStatus::Error`].
    pub fn from_recorded(status: Option<&str>, has_final_answer: bool) -> Self {
        match status {
            None | Some("") | Some("ok") if has_final_answer => Self::Ok,
            _ => Self::Error,
        }
    }

    /// `"ok"` or `"error"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Error => "error",
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a run ended (`diagnostics.termination_reason`), serialised as the
/// reference runner's names: `model_final`, `round_limit`,
/// `research_time_limit`, the latter two with `_fallback` when the forced
/// final call gave no usable answer, and for failed runs `format_error`,
/// `model_error`, `controller_error`. A name written by another harness is
/// kept as [`TerminationReason::Other`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TerminationReason {
    /// The model gave its final answer.
    ModelFinal,
    /// The research turn budget ran out (48 turns, App. C.2).
    RoundLimit,
    /// The research time ran out (1,680 s, App. C.2).
    ResearchTimeLimit,
    /// The turn budget ran out and the forced final call gave no usable
    /// answer: the fallback answer was recorded.
    RoundLimitFallback,
    /// Likewise for the research time.
    ResearchTimeLimitFallback,
    /// More unusable replies than schema repairs allowed (2).
    FormatError,
    /// The model provider failed.
    ModelError,
    /// The controller could not run the task.
    ControllerError,
    /// A name this type does not know, kept verbatim.
    Other(String),
}

impl TerminationReason {
    /// Reads a recorded name.
    pub fn from_name(name: &str) -> Self {
        match name {
            "model_final" => Self::ModelFinal,
            "round_limit" => Self::RoundLimit,
            "research_time_limit" => Self::ResearchTimeLimit,
            "round_limit_fallback" => Self::RoundLimitFallback,
            "research_time_limit_fallback" => Self::ResearchTimeLimitFallback,
            "format_error" => Self::FormatError,
            "model_error" => Self::ModelError,
            "controller_error" => Self::ControllerError,
            other => Self::Other(other.to_string()),
        }
    }

    /// The recorded name.
    pub fn as_str(&self) -> &str {
        match self {
            Self::ModelFinal => "model_final",
            Self::RoundLimit => "round_limit",
            Self::ResearchTimeLimit => "research_time_limit",
            Self::RoundLimitFallback => "round_limit_fallback",
            Self::ResearchTimeLimitFallback => "research_time_limit_fallback",
            Self::FormatError => "format_error",
            Self::ModelError => "model_error",
            Self::ControllerError => "controller_error",
            Self::Other(name) => name,
        }
    }

    /// The recorded name, owned.
    pub fn name(&self) -> String {
        self.as_str().to_string()
    }

    /// The reason recorded when this budget ran out and the forced final
    /// call gave no usable answer (`round_limit` -> `round_limit_fallback`);
    /// other reasons are returned as they are.
    pub fn fallback(self) -> Self {
        match self {
            Self::RoundLimit => Self::RoundLimitFallback,
            Self::ResearchTimeLimit => Self::ResearchTimeLimitFallback,
            other => other,
        }
    }

    /// Whether a budget (turns or time) ended the research phase.
    pub fn is_budget(&self) -> bool {
        matches!(
            self,
            Self::RoundLimit
                | Self::ResearchTimeLimit
                | Self::RoundLimitFallback
                | Self::ResearchTimeLimitFallback
        )
    }

    /// Whether the run failed (`format_error`, `model_error`,
    /// `controller_error`).
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            Self::FormatError | Self::ModelError | Self::ControllerError
        )
    }
}

impl std::fmt::Display for TerminationReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for TerminationReason {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TerminationReason {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Ok(Self::from_name(&name))
    }
}

#[cfg(test)]
mod status_tests {
    use super::*;

    #[test]
    fn termination_names_round_trip() {
        for name in [
            "model_final",
            "round_limit",
            "research_time_limit",
            "round_limit_fallback",
            "research_time_limit_fallback",
            "format_error",
            "model_error",
            "controller_error",
            "stopped_by_operator",
            "model_final_fallback",
        ] {
            let reason = TerminationReason::from_name(name);
            assert_eq!(reason.name(), name);
            let json = serde_json::to_string(&reason).unwrap_or_default();
            assert_eq!(json, format!("\"{name}\""));
        }
        assert_eq!(
            TerminationReason::RoundLimit.fallback(),
            TerminationReason::from_name("round_limit_fallback")
        );
        assert!(matches!(
            TerminationReason::from_name("model_final_fallback"),
            TerminationReason::Other(_)
        ));
    }

    #[test]
    fn the_reading_rule_of_run_status() {
        assert_eq!(RunStatus::from_recorded(Some("ok"), true), RunStatus::Ok);
        assert_eq!(RunStatus::from_recorded(None, true), RunStatus::Ok);
        assert_eq!(RunStatus::from_recorded(Some(""), true), RunStatus::Ok);
        assert_eq!(
            RunStatus::from_recorded(Some("ok"), false),
            RunStatus::Error
        );
        assert_eq!(
            RunStatus::from_recorded(Some("error"), true),
            RunStatus::Error
        );
        assert_eq!(
            RunStatus::from_recorded(Some("timeout"), true),
            RunStatus::Error
        );
    }
}
