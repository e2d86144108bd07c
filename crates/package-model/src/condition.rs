//! The experimental condition of a run, as `trajectory.json` records it
//! (`condition`): the settings of the paper's controlled studies (App. A.1
//! to A.3; Tables 3, 4 and 6) under which the run was made.
//!
//! Every key is optional and an absent key means the paper's default (the
//! standard leaderboard protocol of §4.2 and App. C.2: interactive answer
//! mode, the model's default reasoning effort, the full catalogue with the
//! registry's own names, the default context policy of 16 recent messages
//! and a 24,000-character research state, 48 turns, 1,800 s, no review, no
//! oracle, the unperturbed release). Values are written as they were given
//! on the command line (`"catalogue": "topk:20"`, `"context": "short"`,
//! `"max_turns": 12`), so a record names its condition in the same words a
//! user types to reproduce it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `condition` of a run record. Absent keys mean the paper's default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunCondition {
    /// `interactive`, `interactive+review`, `compressed-direct` or
    /// `all-text-direct` (App. A.1, Table 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_mode: Option<String>,
    /// `none`, `low`, `medium`, `high` or `xhigh` (Table 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    /// `fixed:N`, `full`, `topk:K`, `workflow`, `expert`, `general+expert`,
    /// `hierarchical` or `dynamic` (Table 6a–b, Table 4b).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalogue: Option<String>,
    /// `reference`, `descriptive` or `opaque` (Table 4b).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_names: Option<String>,
    /// `aggressive`, `short`, `default`, `long` or `full` (Table 6c).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The research-turn budget, or `"none"` for the wall-clock-only mode
    /// (Table 6d).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<Value>,
    /// The task's wall-clock budget in seconds (App. C.2: 1,800).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_time_s: Option<u64>,
    /// Whether the final evidence review ran (App. E).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<bool>,
    /// Sampling temperature sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Sampling seed sent to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// The answer-free oracle injected into the task message (App. A.3.1),
    /// with its kind and exact text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oracle: Option<Value>,
    /// The evidence perturbation of the release the run read (App. A.3.3),
    /// from its `perturbation.json` manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perturbation: Option<Value>,
    /// The scientific environment whose specialist calls the run had to
    /// make (App. A.4, Table 7), as `--require-environment` named it
    /// (`metpy`, `r-climate`, `cdo`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_environment: Option<String>,
}

impl RunCondition {
    /// Whether every key is absent: the paper's default condition.
    pub fn is_default(&self) -> bool {
        self == &Self::default()
    }

    /// A short, stable label of the condition for tables and directory
    /// names: `key=value` pairs joined by `,` in key order, or `default`.
    pub fn label(&self) -> String {
        let value = serde_json::to_value(self).unwrap_or(Value::Null);
        let Some(map) = value.as_object().filter(|m| !m.is_empty()) else {
            return "default".into();
        };
        map.iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Which oracle (App. A.3.1; Table 4a).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OracleKind {
    /// The files the reference analysis uses.
    RelevantFiles,
    /// Those files with source roles, and the quantities to derive.
    EvidenceMap,
    /// The useful tool classes and operations.
    ToolSubset,
    /// A short answer-free plan.
    Plan,
}

impl OracleKind {
    /// The four kinds.
    pub const ALL: [OracleKind; 4] = [
        OracleKind::RelevantFiles,
        OracleKind::EvidenceMap,
        OracleKind::ToolSubset,
        OracleKind::Plan,
    ];

    /// The command-line and record spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            OracleKind::RelevantFiles => "relevant-files",
            OracleKind::EvidenceMap => "evidence-map",
            OracleKind::ToolSubset => "tool-subset",
            OracleKind::Plan => "plan",
        }
    }
}

impl std::fmt::Display for OracleKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for OracleKind {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                format!("oracle kind must be relevant-files, evidence-map, tool-subset or plan, not `{s}`")
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_round_trips_and_absent_keys_stay_absent() {
        let text = r#"{"answer_mode":"compressed-direct","catalogue":"topk:20","context":"short","max_turns":12}"#;
        let condition: RunCondition = serde_json::from_str(text).unwrap();
        assert_eq!(condition.catalogue.as_deref(), Some("topk:20"));
        assert_eq!(condition.max_turns, Some(serde_json::json!(12)));
        assert_eq!(serde_json::to_string(&condition).unwrap(), text);
        assert_eq!(
            condition.label(),
            "answer_mode=compressed-direct,catalogue=topk:20,context=short,max_turns=12"
        );
        assert!(RunCondition::default().is_default());
        assert_eq!(RunCondition::default().label(), "default");
        assert_eq!(
            serde_json::to_string(&RunCondition::default()).unwrap(),
            "{}"
        );
    }
}
