//! Recorded runs: the trajectory format of
//! `exploration/trajectories/<system>/<task>.json` (every tool call with its
//! arguments and output, the final answer, evidence, and the published judge
//! scores and diagnostics). The diagnostics, status and termination types
//! are `earthverse-run-schema`'s, shared with the run writer.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use earthverse_run_schema::{
    RunDiagnostics, RunStatus, TerminationReason, TokenCount, TrajectoryFigures,
};

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
