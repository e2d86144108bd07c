//! Trajectory figures of one run.

use crate::TerminationReason;
use serde::{Deserialize, Serialize};

/// Figures of a run's trajectory (Table 2's trajectory columns, App. D.3):
/// reported beside the scores, never entering them (§4.1). The one type of
/// the score records (`trajectory` of every `earthverse score` line, copied
/// from the run's diagnostics by [`crate::RunDiagnostics::figures`] so that
/// aggregation needs no second file) and of the leaderboard's per-task
/// outcomes. Absent figures are absent in JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrajectoryFigures {
    /// Model rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_rounds: Option<u64>,
    /// Tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u64>,
    /// File reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_reads: Option<u64>,
    /// Distinct evidence files touched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unique_evidence_files: Option<u64>,
    /// Python executions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_calls: Option<u64>,
    /// Tool errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_errors: Option<u64>,
    /// Wall time of the run in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_s: Option<f64>,
    /// Prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Completion tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Total tokens (prompt + completion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// Termination reason (`model_final`, `round_limit`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_reason: Option<TerminationReason>,
    /// Cost of the run in USD, when known (filled by the aggregation from a
    /// price table; score records leave it out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}
