//! The `diagnostics` object of a run record.

use crate::{RunStatus, TerminationReason, TrajectoryFigures};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// `diagnostics` of a run record: the one type our runner writes into
/// `trajectory.json` and every reader reads, ours or a public recorded run.
///
/// Fields are in the order of the public records (which is the order our
/// runner writes them in), followed by ours (`cached_tokens`, `cost_usd`,
/// `error`). Every field is optional on reading, because recorded runs of
/// other harnesses may lack some; our runner fills every public one. What is
/// read is written back unchanged:
///
/// - an absent field stays absent; `termination_reason` is the exception:
///   it is always written, `null` when unknown (as the public records and
///   our runner hold it);
/// - `cost_usd` keeps absent (public records) apart from `null` (our runner,
///   no price known): `None` is absent, `Some(None)` is `null`;
/// - `total_tokens` keeps a string as a string ([`TokenCount`]);
/// - fields this type does not model are kept verbatim in `extra`.
///
/// A `run_status` other than `ok` reads as [`RunStatus::Error`] and an
/// empty one as no status ([`RunStatus::read`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunDiagnostics {
    /// `ok`, or `error` for a failed run (§4.1: it scores zero).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "read_status"
    )]
    pub run_status: Option<RunStatus>,
    /// Why the run ended: `model_final`, `round_limit`,
    /// `research_time_limit`, those with `_fallback`; for failed runs
    /// `format_error`, `model_error` or `controller_error`. `null` when
    /// unknown.
    #[serde(default)]
    pub termination_reason: Option<TerminationReason>,
    /// Wall time of the run in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_s: Option<f64>,
    /// Tool calls made, failed ones included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u64>,
    /// Successful model calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_rounds: Option<u64>,
    /// Calls of `read_text_file`, `summarize_table_or_json`, `inspect_image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_reads: Option<u64>,
    /// Distinct evidence paths over all calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unique_evidence_files: Option<u64>,
    /// Calls of `python_exec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python_calls: Option<u64>,
    /// Calls with `ok: false`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_errors: Option<u64>,
    /// Prompt tokens over all model calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// Completion tokens over all model calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u64>,
    /// Prompt plus completion tokens, as recorded (some public records hold
    /// a string); read it with [`RunDiagnostics::total_tokens`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<TokenCount>,
    /// Prompt tokens served from a provider cache (ours).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Cost from the price table (ours): `Some(None)` is `null`, no price
    /// known; `None` is absent, as in the public records. Read it with
    /// [`RunDiagnostics::cost`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub cost_usd: Option<Option<f64>>,
    /// Why a failed run failed (ours).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Fields this type does not model, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A recorded token count: a number, or the string some public records
/// hold instead (kept as written, so a record reads and writes back
/// unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TokenCount {
    /// A number.
    Count(u64),
    /// A string, numeric or not (`""` on some public records).
    Text(String),
}

impl TokenCount {
    /// The count: the number, or a string that parses as one.
    pub fn value(&self) -> Option<u64> {
        match self {
            Self::Count(n) => Some(*n),
            Self::Text(s) => s.trim().parse().ok(),
        }
    }
}

impl RunDiagnostics {
    /// Why the run ended, as the recorded name.
    pub fn termination_reason(&self) -> Option<&str> {
        self.termination_reason
            .as_ref()
            .map(TerminationReason::as_str)
    }

    /// Why the run ended.
    pub fn termination(&self) -> Option<TerminationReason> {
        self.termination_reason.clone()
    }

    /// Total tokens, accepting a number or a numeric string.
    pub fn total_tokens(&self) -> Option<u64> {
        self.total_tokens.as_ref().and_then(TokenCount::value)
    }

    /// Cost in USD, when known.
    pub fn cost(&self) -> Option<f64> {
        self.cost_usd.flatten()
    }

    /// The trajectory figures of the run. The cost is left out (`None`):
    /// it is not a figure of the score records, and the aggregation fills
    /// it from a price table.
    pub fn figures(&self) -> TrajectoryFigures {
        TrajectoryFigures {
            model_rounds: self.model_rounds,
            tool_calls: self.tool_calls,
            file_reads: self.file_reads,
            unique_evidence_files: self.unique_evidence_files,
            python_calls: self.python_calls,
            tool_errors: self.tool_errors,
            latency_s: self.latency_s,
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            total_tokens: self.total_tokens(),
            termination_reason: self.termination(),
            cost_usd: None,
        }
    }
}

/// `run_status` through [`RunStatus::read`]; `null` is no status.
fn read_status<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<RunStatus>, D::Error> {
    let name = Option::<std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
    Ok(name.as_deref().and_then(RunStatus::read))
}

/// A field that is present: `null` is `Some(None)` (absent is the
/// `default`, `None`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn public_records_read_and_write_back_unchanged() {
        for record in [
            json!({"run_status": "ok", "termination_reason": "completed", "latency_s": 12.5,
                   "tool_calls": 4, "model_rounds": 5, "file_reads": 2, "unique_evidence_files": 2,
                   "python_calls": 1, "tool_errors": 0, "prompt_tokens": 900,
                   "completion_tokens": 100, "total_tokens": ""}),
            json!({"termination_reason": null, "total_tokens": "123", "tool_calls": 2, "harness": {"v": 1}}),
            json!({"run_status": "error", "termination_reason": "model_error", "cost_usd": null,
                   "error": "boom"}),
        ] {
            let d: RunDiagnostics = serde_json::from_value(record.clone()).unwrap();
            assert_eq!(serde_json::to_value(&d).unwrap(), record);
        }
    }

    #[test]
    fn accessors_read_the_recorded_values() {
        let d: RunDiagnostics = serde_json::from_value(json!({
            "run_status": "timeout", "termination_reason": "round_limit",
            "total_tokens": " 77 ", "cost_usd": 0.25, "model_rounds": 3
        }))
        .unwrap();
        assert_eq!(d.run_status, Some(RunStatus::Error));
        assert_eq!(d.termination(), Some(TerminationReason::RoundLimit));
        assert_eq!(d.termination_reason(), Some("round_limit"));
        assert_eq!(d.total_tokens(), Some(77));
        assert_eq!(d.cost(), Some(0.25));
        let f = d.figures();
        assert_eq!(f.model_rounds, Some(3));
        assert_eq!(f.total_tokens, Some(77));
        assert_eq!(f.cost_usd, None);
        let empty: RunDiagnostics = serde_json::from_value(json!({"run_status": ""})).unwrap();
        assert_eq!(empty.run_status, None);
        assert_eq!(empty.cost_usd, None);
        let null_cost: RunDiagnostics = serde_json::from_value(json!({"cost_usd": null})).unwrap();
        assert_eq!(null_cost.cost_usd, Some(None));
    }

    #[test]
    fn a_bad_field_type_is_refused_naming_the_field() {
        let err = serde_json::from_value::<RunDiagnostics>(json!({"tool_calls": "many"}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("u64") || err.contains("integer"), "{err}");
    }
}
