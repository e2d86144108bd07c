//! Every limit of the controller as a setting, with the paper's value as the
//! default (Appendix C.2; `reference-harness.md` "Budgets and context").

use earthverse_model_provider::Sampling;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Execution budgets of one run (paper Appendix C.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Budgets {
    /// Maximum model turns in the research phase (C.2: 48).
    pub max_turns: u32,
    /// Wall-clock budget of the whole task (C.2: 1,800 s).
    pub task_time: Duration,
    /// Time reserved for finalisation (C.2: 120 s), so research stops at
    /// `task_time - finalization_reserve` (1,680 s).
    pub finalization_reserve: Duration,
    /// Timeout of the forced final call (C.2: a separate 120 s).
    pub final_call_timeout: Duration,
    /// Limit of one `python_exec` call (C.2: 60 s). Enforced by the Python
    /// tool; carried here so one settings object describes the run.
    pub python_timeout: Duration,
    /// Maximum characters of one observation message (C.2: 12,000).
    pub observation_max_chars: usize,
    /// Schema repairs allowed per run before the run fails (C.2: 2).
    pub max_repairs: u32,
}

impl Default for Budgets {
    fn default() -> Self {
        Self {
            max_turns: 48,
            task_time: Duration::from_secs(1_800),
            finalization_reserve: Duration::from_secs(120),
            final_call_timeout: Duration::from_secs(120),
            python_timeout: Duration::from_secs(60),
            observation_max_chars: 12_000,
            max_repairs: 2,
        }
    }
}

impl Budgets {
    /// Research time: task time minus the finalisation reserve (1,680 s by default).
    pub fn research_time(&self) -> Duration {
        self.task_time.saturating_sub(self.finalization_reserve)
    }
}

/// Context compaction (`reference-harness.md` "Budgets and context"; C.2
/// "16 recent messages and a 24,000-character research state").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextPolicy {
    /// Messages after the system and task messages kept verbatim (16).
    pub recent_messages: usize,
    /// Maximum characters of the one summary of older observations (24,000).
    pub summary_max_chars: usize,
    /// Maximum characters of one older observation in the summary (1,400).
    pub old_observation_max_chars: usize,
    /// Share of an old observation's budget kept from its head; the rest
    /// comes from its tail (68:32).
    pub head_share: f64,
    /// Cap on recent assistant messages (8,000).
    pub recent_assistant_max_chars: usize,
    /// Cap on recent observations (12,000).
    pub recent_observation_max_chars: usize,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        Self {
            recent_messages: 16,
            summary_max_chars: 24_000,
            old_observation_max_chars: 1_400,
            head_share: 0.68,
            recent_assistant_max_chars: 8_000,
            recent_observation_max_chars: 12_000,
        }
    }
}

/// The final evidence-review phase (Appendix E, REVIEW prompt; Table 3
/// "Interactive with final review"). Off by default: the standard
/// leaderboard rows run without it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewSettings {
    /// Run a review phase after the first final answer.
    pub enabled: bool,
    /// `<<MAX_REVIEW_TURNS>>` of the REVIEW prompt. The paper does not print
    /// the value; 6 is our default.
    pub max_review_turns: u32,
}

impl Default for ReviewSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            max_review_turns: 6,
        }
    }
}

/// The required-tool compliance contract of the professional-environment
/// studies (Appendix A.4, C.5): at least 2 successful, distinct specialist
/// calls, target 3, at most 4 counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequiredToolPolicy {
    /// Specialist tools that count. Empty: every tool the tool box marks as
    /// specialist (`ToolBox::is_specialist`).
    pub specialist_tools: Vec<String>,
    /// Successful distinct calls needed before a final answer is accepted (2).
    pub min_successful: usize,
    /// Target named in the corrective prompt (3).
    pub target: usize,
    /// At most this many calls are counted (4).
    pub max_counted: usize,
    /// What the specialist tools are (e.g. the scientific environment
    /// `xclim`), copied into the run's `required_tools` record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Versions of the environment's libraries and runtimes, detected when
    /// the run was set up (`cdo` → `Climate Data Operators version 2.1.1
    /// ...`), copied into the run's `required_tools` record.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub versions: std::collections::BTreeMap<String, String>,
}

impl Default for RequiredToolPolicy {
    fn default() -> Self {
        Self {
            specialist_tools: Vec::new(),
            min_successful: 2,
            target: 3,
            max_counted: 4,
            label: None,
            versions: std::collections::BTreeMap::new(),
        }
    }
}

/// How tool actions travel between controller and model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protocol {
    /// The reference protocol: one JSON object per assistant message
    /// (`{"action":"tool_call",...}` or `{"action":"final_answer",...}`).
    #[default]
    JsonInMessage,
    /// Provider-native tool calling; the final answer arrives as a call of
    /// a `final_answer` tool or as a final-answer JSON object in text.
    NativeTools,
}

/// Price of one million tokens, for the run's `cost_usd`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// USD per million uncached prompt tokens.
    pub input_per_mtok: f64,
    /// USD per million cached prompt tokens.
    pub cached_input_per_mtok: f64,
    /// USD per million completion tokens.
    pub output_per_mtok: f64,
}

impl Price {
    /// Cost of a usage total.
    pub fn cost(&self, prompt: u64, cached: u64, completion: u64) -> f64 {
        let uncached = prompt.saturating_sub(cached) as f64;
        (uncached * self.input_per_mtok
            + cached as f64 * self.cached_input_per_mtok
            + completion as f64 * self.output_per_mtok)
            / 1_000_000.0
    }
}

/// All settings of a [`crate::Controller`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControllerSettings {
    /// Budgets (App. C.2).
    pub budgets: Budgets,
    /// Context compaction.
    pub context: ContextPolicy,
    /// Final evidence review (App. E).
    pub review: ReviewSettings,
    /// Required-tool policy (App. A.4); `None` = no requirement.
    pub required_tools: Option<RequiredToolPolicy>,
    /// Wire protocol for tool actions.
    pub protocol: Protocol,
    /// Ask the backend for JSON-object replies (`response_format`).
    pub json_mode: bool,
    /// Sampling settings passed through to the model.
    pub sampling: Sampling,
    /// `model_id` written in the record; default: the model's own id.
    pub model_id: Option<String>,
    /// `model_name` written in the record; default: the model id.
    pub model_name: Option<String>,
    /// Price for `cost_usd`; `None` writes `cost_usd: null`.
    pub price: Option<Price>,
    /// Characters of each tool output kept in `trajectory.json` (the public
    /// records keep a 1,720-character preview followed by
    /// `\n...[TRUNCATED]...`); `None` keeps full outputs. The model always
    /// sees the full observation (up to `observation_max_chars`), and
    /// `raw_conversation.json` keeps it.
    pub record_output_chars: Option<usize>,
    /// What the tools run on, copied into every `trajectory.json`
    /// (`environment`); `None` writes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<RunEnvironment>,
    /// The experimental condition, copied into every `trajectory.json`
    /// (`condition`); `None` writes nothing (set by
    /// [`crate::conditions::Condition::apply`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<earthverse_package_model::RunCondition>,
    /// A direct answer mode (App. A.1): one call over a fixed package
    /// serialisation, no tools. `None` runs the interactive loop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct: Option<DirectSettings>,
}

impl Default for ControllerSettings {
    fn default() -> Self {
        Self {
            budgets: Budgets::default(),
            context: ContextPolicy::default(),
            review: ReviewSettings::default(),
            required_tools: None,
            protocol: Protocol::default(),
            json_mode: false,
            sampling: Sampling::default(),
            model_id: None,
            model_name: None,
            price: None,
            record_output_chars: Some(1_720),
            environment: None,
            condition: None,
            direct: None,
        }
    }
}

/// Which serialisation a direct run receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DirectMode {
    /// A bounded evidence summary of every file.
    Compressed,
    /// Every readable file's text within a budget.
    AllText,
}

/// Settings of a direct run.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DirectSettings {
    /// Which serialisation.
    pub mode: DirectMode,
    /// Characters of the whole serialisation.
    pub budget_chars: usize,
    /// Characters of one file's entry.
    pub per_file_chars: usize,
}

impl DirectSettings {
    /// Compressed direct: 48,000 characters in all, 2,400 per file.
    pub fn compressed() -> Self {
        Self {
            mode: DirectMode::Compressed,
            budget_chars: 48_000,
            per_file_chars: 2_400,
        }
    }

    /// All-text direct: 320,000 characters in all, no per-file cap.
    pub fn all_text() -> Self {
        Self {
            mode: DirectMode::AllText,
            budget_chars: 320_000,
            per_file_chars: usize::MAX,
        }
    }
}

/// What a run's tools ran on, recorded so that a result can be traced to
/// the interpreter and libraries that produced it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, Default)]
pub struct RunEnvironment {
    /// The interpreter `python_exec` ran and the versions of the scientific
    /// packages it offered (`earthverse_sandbox::probe_environment`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<earthverse_tool_registry::sandbox::PythonEnvironment>,
    /// The model that served the run, as the provider reported it in its
    /// first response that names one (served model, `system_fingerprint`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_model: Option<earthverse_model_provider::ServedModel>,
}
