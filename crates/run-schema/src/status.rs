//! Whether a run finished and why it ended: the two enums of
//! `diagnostics.run_status` and `diagnostics.termination_reason`.

use serde::{Deserialize, Serialize};

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
    /// `status` is the recorded status as [`RunStatus::read`] reads it.
    pub fn from_recorded(status: Option<Self>, has_final_answer: bool) -> Self {
        match status {
            None | Some(Self::Ok) if has_final_answer => Self::Ok,
            _ => Self::Error,
        }
    }

    /// Reads a recorded status name: `ok` is [`RunStatus::Ok`], an empty
    /// name is no status (`None`), and any other name (`error`, or one
    /// written by another harness such as `timeout`) is
    /// [`RunStatus::Error`]: a run that did not end `ok` failed (§4.1).
    pub fn read(name: &str) -> Option<Self> {
        match name {
            "" => None,
            "ok" => Some(Self::Ok),
            _ => Some(Self::Error),
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
#[allow(clippy::unwrap_used, clippy::expect_used)]
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
        let rule =
            |name: &str, answer: bool| RunStatus::from_recorded(RunStatus::read(name), answer);
        assert_eq!(rule("ok", true), RunStatus::Ok);
        assert_eq!(RunStatus::from_recorded(None, true), RunStatus::Ok);
        assert_eq!(rule("", true), RunStatus::Ok);
        assert_eq!(rule("ok", false), RunStatus::Error);
        assert_eq!(rule("error", true), RunStatus::Error);
        assert_eq!(rule("timeout", true), RunStatus::Error);
    }
}
