//! The experimental conditions of the paper's controlled studies as typed
//! settings (§5.2, App. A.1–A.2, Tables 3 and 6): answer mode, reasoning
//! effort and sampling, catalogue, tool names, context retention, turn and
//! time budgets. Each has a command-line spelling (`FromStr` and `Display`
//! round-trip) and is recorded in `trajectory.json` under `condition`
//! ([`RunCondition`]) exactly as given.
//!
//! Which numbers the paper fixes and which are ours:
//!
//! | setting | value | source |
//! |---|---|---|
//! | `context=default` | 16 recent messages, 24,000-character state, 1,400 per old observation | App. C.2 |
//! | `context=aggressive` | 4 recent, 6,000-character state, 600 per old observation | ours |
//! | `context=short` | 8 recent, 12,000-character state, 1,000 per old observation | ours |
//! | `context=long` | 32 recent, 48,000-character state, 2,000 per old observation | ours |
//! | `context=full` | every message kept verbatim, never summarised | App. A.2.3 ("full history disables summarization") |
//! | `max_turns` | 12, 24, 48 (default), 96; `none` = wall clock only | Table 6d, App. C.2 |
//! | `task_time_s` | 1,800 | App. C.2 |
//! | `catalogue=fixed:N` | first N tools, research tools first; N ∈ {6, 10, 20, 40, 70, 100, 170} | Table 6a |
//! | `catalogue=topk:K` | research tools + K routed; K ∈ {10, 20} | Table 6b |
//! | `catalogue=dynamic` | research tools + 20 routed again at every step | Table 4b |
//! | `catalogue=expert` | domain operations only, no research tools | Table 6b, App. A.2.2 |
//! | `catalogue=general+expert` | research tools + general domain families + the workflow profile's specialist families | ours (the paper names the suite only) |
//! | `catalogue=compact-meteorology` | research tools + the same 8 meteorological operations for every task | App. A.3.4 fixes one compact shortlist for all tasks; the 8 ([`COMPACT_METEOROLOGY_SUITE`]) are ours |
//! | `catalogue=cue-routed-meteorology` | research tools + at most 3 meteorological operations, BM25 on the question and the package's file paths, positive scores only | App. A.3.4 fixes "at most three" from task and package cues; the routing rule is ours |
//! | `catalogue=atmospheric-python` | research tools + the audited MetPy operations of `earthverse-environments` (rain summary, profiles, kinematics); tool use optional | Table 6b names the suite only; its make-up is ours |
//! | `catalogue=atmospheric-fortran` | research tools + the audited Fortran operations (rain, kinematics, moisture transport); tool use optional | Table 6b names the suite only; its make-up is ours |
//! | reasoning effort | `none`…`xhigh`; Anthropic thinking budgets 1,024…32,768 | Table 3; budgets ours |
//!
//! The paper's registry is 170 tools including its six foundation tools;
//! ours is the six research tools plus 170 domain operations (176), so
//! `fixed:170` leaves out the last six operations and `full` shows all 176.

use crate::settings::{ContextPolicy, ControllerSettings};
use earthverse_model_provider::ReasoningEffort;
use earthverse_package_model::{OracleKind, RunCondition};
#[cfg(doc)]
use earthverse_tool_registry::catalogue::COMPACT_METEOROLOGY_SUITE;
use earthverse_tool_registry::catalogue::{
    CatalogueCondition, CataloguePlan, Naming, CUE_ROUTED_METEOROLOGY_MAX,
};
use serde_json::json;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// A setting that does not parse, with the flag it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {message}")]
pub struct ConditionError {
    /// The setting (`--catalogue`, `--context`, ...).
    pub setting: &'static str,
    /// What is wrong and what is allowed.
    pub message: String,
}

fn bad(setting: &'static str, message: impl Into<String>) -> ConditionError {
    ConditionError {
        setting,
        message: message.into(),
    }
}

/// How the model reaches the evidence (App. A.1, Table 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AnswerMode {
    /// The solver loop with tools (the default).
    Interactive,
    /// The solver loop with the final evidence review (App. E).
    InteractiveReview,
    /// One call, no tools, over a bounded deterministic evidence summary of
    /// the package ([`crate::direct`]).
    CompressedDirect,
    /// One call, no tools, over every readable file serialised within a
    /// token budget ([`crate::direct`]).
    AllTextDirect,
}

impl AnswerMode {
    /// The four modes in the paper's order.
    pub const ALL: [AnswerMode; 4] = [
        AnswerMode::CompressedDirect,
        AnswerMode::AllTextDirect,
        AnswerMode::Interactive,
        AnswerMode::InteractiveReview,
    ];

    /// Whether the mode answers in one call from a fixed serialisation.
    pub fn is_direct(self) -> bool {
        matches!(
            self,
            AnswerMode::CompressedDirect | AnswerMode::AllTextDirect
        )
    }

    /// The command-line and record spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            AnswerMode::Interactive => "interactive",
            AnswerMode::InteractiveReview => "interactive+review",
            AnswerMode::CompressedDirect => "compressed-direct",
            AnswerMode::AllTextDirect => "all-text-direct",
        }
    }
}

/// Context retention before summarisation (Table 6c, App. A.2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContextPreset {
    /// A narrow recent window and a small research state.
    Aggressive,
    /// Half the default window.
    Short,
    /// App. C.2: 16 recent messages, a 24,000-character research state.
    Default,
    /// Twice the default window.
    Long,
    /// No summarisation: every message kept verbatim.
    Full,
}

impl ContextPreset {
    /// The five presets, narrowest first.
    pub const ALL: [ContextPreset; 5] = [
        ContextPreset::Aggressive,
        ContextPreset::Short,
        ContextPreset::Default,
        ContextPreset::Long,
        ContextPreset::Full,
    ];

    /// The command-line and record spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ContextPreset::Aggressive => "aggressive",
            ContextPreset::Short => "short",
            ContextPreset::Default => "default",
            ContextPreset::Long => "long",
            ContextPreset::Full => "full",
        }
    }

    /// The context policy of the preset (numbers in the module table).
    pub fn policy(self) -> ContextPolicy {
        let base = ContextPolicy::default();
        let window = |recent: usize, summary: usize, old: usize| ContextPolicy {
            recent_messages: recent,
            summary_max_chars: summary,
            old_observation_max_chars: old,
            ..base.clone()
        };
        match self {
            ContextPreset::Aggressive => window(4, 6_000, 600),
            ContextPreset::Short => window(8, 12_000, 1_000),
            ContextPreset::Default => base.clone(),
            ContextPreset::Long => window(32, 48_000, 2_000),
            ContextPreset::Full => window(usize::MAX, usize::MAX, usize::MAX),
        }
    }
}

/// The research-turn budget (Table 6d).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TurnBudget {
    /// At most this many research turns (App. C.2: 48).
    Turns(u32),
    /// No turn limit: only the task's wall clock ends research.
    WallClockOnly,
}

impl TurnBudget {
    /// The controller's `max_turns` for this budget.
    pub fn max_turns(self) -> u32 {
        match self {
            TurnBudget::Turns(n) => n,
            TurnBudget::WallClockOnly => u32::MAX,
        }
    }

    fn record(self) -> serde_json::Value {
        match self {
            TurnBudget::Turns(n) => json!(n),
            TurnBudget::WallClockOnly => json!("none"),
        }
    }
}

/// How tools are named to the model (Table 4b, App. A.3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolNames {
    /// The registry's own names (the default).
    Reference,
    /// Names prefixed with their domain; descriptions with intended-use and
    /// exclusion cues.
    Descriptive,
    /// Meaningless names (`tool_007_3fa1`); records keep the real names.
    Opaque,
}

impl ToolNames {
    /// The command-line and record spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolNames::Reference => "reference",
            ToolNames::Descriptive => "descriptive",
            ToolNames::Opaque => "opaque",
        }
    }

    /// The registry's naming of this setting.
    pub fn naming(self) -> Naming {
        match self {
            ToolNames::Reference => Naming::Plain,
            ToolNames::Descriptive => Naming::Descriptive,
            ToolNames::Opaque => Naming::Opaque,
        }
    }
}

/// Which tools a run sees (Table 6a–b, Table 4b).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CatalogueSpec {
    /// Every registered tool.
    Full,
    /// The first N tools, research tools first (nested subsets).
    Fixed(usize),
    /// The research tools plus the K tools a BM25 router scores highest
    /// for the task text.
    TopK(usize),
    /// The research tools plus every tool of the best-matching workflow
    /// profile.
    Workflow,
    /// Domain operations only, without the research tools.
    Expert,
    /// The research tools, the general domain families (reports and text,
    /// time series, output assembly) and the workflow profile's specialist
    /// families.
    GeneralExpert,
    /// Domains first; the model opens a domain to see its tools.
    Hierarchical,
    /// The research tools plus 20 routed tools, routed again at every step
    /// on the task and the latest observation.
    Dynamic,
    /// The research tools plus the same compact shortlist of meteorological
    /// operations for every task (App. A.3.4, Table 4d). Tool use stays
    /// optional.
    CompactMeteorology,
    /// The research tools plus at most three meteorological operations
    /// routed on task and package cues (App. A.3.4, Table 4d). Tool use
    /// stays optional.
    CueRoutedMeteorology,
    /// Table 6b's atmospheric Python suite (App. A.2.2, a tool composition):
    /// the research tools plus the audited operations of the real MetPy
    /// (`earthverse-environments`, run in the python_exec sandbox). Tool
    /// use stays optional.
    AtmosphericPython,
    /// Table 6b's atmospheric Fortran suite: the research tools plus the
    /// audited Fortran operations (gfortran, in the sandbox). Tool use
    /// stays optional.
    AtmosphericFortran,
}

/// Tools routed by `catalogue=dynamic` at each step (the paper's Top-20
/// reference router, App. A.3).
pub const DYNAMIC_K: usize = 20;

impl CatalogueSpec {
    /// The scientific environments (`earthverse-environments` names) whose
    /// operations this catalogue offers beside the research tools, without
    /// requiring them (Table 6b's atmospheric suites; App. A.2.2).
    pub fn offered_environments(self) -> &'static [&'static str] {
        match self {
            CatalogueSpec::AtmosphericPython => &["metpy"],
            CatalogueSpec::AtmosphericFortran => &["fortran"],
            _ => &[],
        }
    }

    /// The registry's presentation plan for this catalogue and naming.
    pub fn plan(self, names: ToolNames) -> CataloguePlan {
        let (condition, keep_research_tools) = match self {
            CatalogueSpec::Full => (CatalogueCondition::Full, true),
            CatalogueSpec::Fixed(size) => (CatalogueCondition::Fixed { size }, true),
            CatalogueSpec::TopK(k) => (CatalogueCondition::TopK { k }, true),
            CatalogueSpec::Dynamic => (CatalogueCondition::TopK { k: DYNAMIC_K }, true),
            CatalogueSpec::Workflow => (CatalogueCondition::WorkflowProfile, true),
            CatalogueSpec::Expert => (CatalogueCondition::Full, false),
            CatalogueSpec::GeneralExpert => (CatalogueCondition::GeneralExpert, true),
            CatalogueSpec::Hierarchical => (CatalogueCondition::Hierarchical, true),
            CatalogueSpec::CompactMeteorology => (CatalogueCondition::CompactMeteorology, true),
            // The research tools; the harness pins the suite's operations.
            CatalogueSpec::AtmosphericPython | CatalogueSpec::AtmosphericFortran => (
                CatalogueCondition::Fixed {
                    size: earthverse_tool_registry::RESEARCH_TOOL_NAMES.len(),
                },
                true,
            ),
            CatalogueSpec::CueRoutedMeteorology => (
                CatalogueCondition::CueRoutedMeteorology {
                    max: CUE_ROUTED_METEOROLOGY_MAX,
                },
                true,
            ),
        };
        CataloguePlan {
            condition,
            naming: names.naming(),
            dynamic_descriptions: self == CatalogueSpec::Dynamic,
            keep_research_tools,
            pinned: Vec::new(),
        }
    }
}

/// One experimental condition: every key optional, absent = the paper's
/// default. [`Condition::apply`] sets the controller's settings and
/// [`Condition::record`] is what `trajectory.json` keeps
/// ([`RunCondition`], its serde form; [`Condition::from_record`] reads it
/// back). With the feature `clap` it is also the command line's flags
/// (`#[command(flatten)]`): a new condition is one field here (with its
/// `apply`, `record` and `from_record` lines) and one key of
/// [`RunCondition`].
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Condition {
    /// Answer mode (App. A.1, Table 3): `interactive` (default),
    /// `interactive+review` (App. E final evidence review),
    /// `compressed-direct` (one call, no tools, over a bounded evidence
    /// summary of the package: 48,000 characters, 2,400 per file) or
    /// `all-text-direct` (one call over every readable file's text within
    /// 320,000 characters).
    #[cfg_attr(feature = "clap", arg(long, value_name = "MODE"))]
    pub answer_mode: Option<AnswerMode>,
    /// Reasoning effort (Table 3): `none`, `low`, `medium`, `high` or
    /// `xhigh`. OpenAI-compatible servers get `reasoning_effort`; Anthropic
    /// a thinking budget of 1,024 / 4,096 / 16,384 / 32,768 tokens (ours).
    #[cfg_attr(feature = "clap", arg(long, value_name = "EFFORT"))]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// Tool catalogue (Table 6a–b, Table 4b); offers the domain operations.
    /// `fixed:N` (first N tools, research tools first, nested: 6, 10, 20,
    /// 40, 70, 100, 170), `full` (all 176), `topk:K` (research tools + K
    /// tools a BM25 router picks for the task; K = 10, 20), `workflow`
    /// (research tools + the best workflow profile's families), `expert`
    /// (domain operations only), `general+expert` (research tools, general
    /// families and the profile's specialist families), `hierarchical`
    /// (domains first, opened with `open_tool_domain`), `dynamic`
    /// (research tools + 20 tools routed again at every step), and the
    /// optional meteorological access of Table 4d (App. A.3.4; tool use
    /// stays optional): `compact-meteorology` (research tools + the same 8
    /// meteorological operations for every task; the list is ours) or
    /// `cue-routed-meteorology` (research tools + at most 3, the paper's
    /// limit, meteorological operations a BM25 router picks from the
    /// question and the package's file paths; operations with no matching
    /// cue are not offered); Table 6b's atmospheric suites (optional use):
    /// `atmospheric-python` (research tools + the real MetPy's audited
    /// operations) or `atmospheric-fortran` (research tools + the Fortran
    /// operations), refused when the environment is not installed.
    #[cfg_attr(feature = "clap", arg(long, value_name = "CATALOGUE"))]
    pub catalogue: Option<CatalogueSpec>,
    /// Tool names (Table 4b): `reference` (registry names), `descriptive`
    /// (domain prefix and intended-use cues) or `opaque` (meaningless
    /// names; records keep the real ones).
    #[cfg_attr(feature = "clap", arg(long, value_name = "NAMES"))]
    pub tool_names: Option<ToolNames>,
    /// Context retained before summarisation (Table 6c): `aggressive` (4
    /// recent messages, 6,000-character state), `short` (8, 12,000),
    /// `default` (App. C.2: 16, 24,000), `long` (32, 48,000) or `full`
    /// (never summarised).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PRESET"))]
    pub context: Option<ContextPreset>,
    /// Research turns (App. C.2: 48; Table 6d: 12, 24, 48, 96), or `none`
    /// for the wall-clock-only mode.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N|none"))]
    pub max_turns: Option<TurnBudget>,
    /// Wall-clock budget of a task in seconds (App. C.2: 1,800).
    #[cfg_attr(
        feature = "clap",
        arg(long = "task-time", value_name = "SECONDS", value_parser = parse_task_time)
    )]
    pub task_time: Option<Duration>,
    /// Sampling temperature sent to the model.
    #[cfg_attr(feature = "clap", arg(long))]
    pub temperature: Option<f64>,
    /// Sampling seed sent to the model (where the backend supports one).
    #[cfg_attr(feature = "clap", arg(long))]
    pub seed: Option<u64>,
    /// Answer-free oracle added to each task message (App. A.3.1, Table 4a):
    /// `relevant-files`, `evidence-map`, `tool-subset` or `plan` (see
    /// `earthverse oracle`). The exact text of each task's oracle goes into
    /// its record's `condition.oracle`; a task without one runs without
    /// it, the reason recorded.
    #[cfg_attr(feature = "clap", arg(long, value_name = "KIND"))]
    pub oracle: Option<OracleKind>,
    /// Professional-environment condition over a real scientific
    /// environment (App. A.4, Table 7; `earthverse_environments`): offer
    /// its audited operations, run in the python_exec sandbox, and require
    /// at least 2 successful, distinct calls of them (target 3, at most 4
    /// counted; App. C.5) before a final answer is accepted. Recorded in
    /// `condition.required_environment`; the run's `required_tools` holds
    /// compliance, attempts, successful calls, failure classes and repair
    /// rounds. Names: metpy, xclim, thermofeel, pyet, climate-indices,
    /// xskillscore, pyextremes, julia, r-climate, cdo, nco, ncl, fortran.
    /// A missing environment is an error saying how to install it.
    #[cfg_attr(
        feature = "clap",
        arg(long = "require-environment", value_name = "NAME")
    )]
    pub required_environment: Option<String>,
}

/// `--task-time SECONDS`: a positive whole number of seconds.
///
/// # Errors
/// The reason, for zero or a value that is not a whole number.
pub fn parse_task_time(text: &str) -> Result<Duration, ConditionError> {
    match text.trim().parse::<u64>() {
        Ok(0) => Err(bad("--task-time", "must be a positive number of seconds")),
        Ok(seconds) => Ok(Duration::from_secs(seconds)),
        Err(_) => Err(bad(
            "--task-time",
            format!("`{text}` is not a whole number of seconds"),
        )),
    }
}

impl Condition {
    /// The answer mode (default interactive).
    pub fn answer_mode(&self) -> AnswerMode {
        self.answer_mode.unwrap_or(AnswerMode::Interactive)
    }

    /// The catalogue plan of this condition, when it changes the catalogue
    /// or the names; `None` keeps the tool box as it is.
    pub fn catalogue_plan(&self) -> Option<CataloguePlan> {
        if self.catalogue.is_none() && self.tool_names.is_none() {
            return None;
        }
        let catalogue = self.catalogue.unwrap_or(CatalogueSpec::Full);
        Some(catalogue.plan(self.tool_names.unwrap_or(ToolNames::Reference)))
    }

    /// Sets `settings` for this condition: review, context policy, budgets,
    /// sampling, and the `condition` record.
    pub fn apply(&self, settings: &mut ControllerSettings) {
        if let Some(mode) = self.answer_mode {
            settings.review.enabled = mode == AnswerMode::InteractiveReview;
            settings.direct = match mode {
                AnswerMode::CompressedDirect => Some(crate::direct::DirectSettings::compressed()),
                AnswerMode::AllTextDirect => Some(crate::direct::DirectSettings::all_text()),
                AnswerMode::Interactive | AnswerMode::InteractiveReview => None,
            };
        }
        if let Some(preset) = self.context {
            settings.context = preset.policy();
        }
        if let Some(budget) = self.max_turns {
            settings.budgets.max_turns = budget.max_turns();
        }
        if let Some(time) = self.task_time {
            settings.budgets.task_time = time;
        }
        if let Some(effort) = self.reasoning_effort {
            settings.sampling.reasoning_effort = Some(effort);
        }
        if let Some(t) = self.temperature {
            settings.sampling.temperature = Some(t);
        }
        if let Some(seed) = self.seed {
            settings.sampling.seed = Some(seed);
        }
        settings.condition = Some(self.record());
    }

    /// The `condition` object of the run record: each given key in its
    /// command-line spelling.
    pub fn record(&self) -> RunCondition {
        RunCondition {
            answer_mode: self.answer_mode.map(|m| m.to_string()),
            reasoning_effort: self.reasoning_effort.map(|e| e.to_string()),
            catalogue: self.catalogue.map(|c| c.to_string()),
            tool_names: self.tool_names.map(|n| n.to_string()),
            context: self.context.map(|c| c.to_string()),
            max_turns: self.max_turns.map(TurnBudget::record),
            task_time_s: self.task_time.map(|t| t.as_secs()),
            review: self
                .answer_mode
                .filter(|m| !m.is_direct())
                .map(|m| m == AnswerMode::InteractiveReview),
            temperature: self.temperature,
            seed: self.seed,
            oracle: None,
            perturbation: None,
            required_environment: self.required_environment.clone(),
        }
    }

    /// The condition a run record names (the inverse of
    /// [`Condition::record`] for the keys this type holds).
    pub fn from_record(record: &RunCondition) -> Result<Self, ConditionError> {
        fn parse<T: FromStr<Err = ConditionError>>(
            v: &Option<String>,
        ) -> Result<Option<T>, ConditionError> {
            v.as_deref().map(str::parse).transpose()
        }
        let max_turns = match &record.max_turns {
            None => None,
            Some(serde_json::Value::String(s)) => Some(s.parse()?),
            Some(other) => Some(other.to_string().parse()?),
        };
        let mut condition = Condition {
            answer_mode: parse(&record.answer_mode)?,
            reasoning_effort: record
                .reasoning_effort
                .as_deref()
                .map(|s| s.parse().map_err(|m: String| bad("--reasoning-effort", m)))
                .transpose()?,
            catalogue: parse(&record.catalogue)?,
            tool_names: parse(&record.tool_names)?,
            context: parse(&record.context)?,
            max_turns,
            task_time: record.task_time_s.map(Duration::from_secs),
            temperature: record.temperature,
            seed: record.seed,
            oracle: oracle_of(record.oracle.as_ref())?,
            required_environment: record.required_environment.clone(),
        };
        if condition.answer_mode.is_none() && record.review == Some(true) {
            condition.answer_mode = Some(AnswerMode::InteractiveReview);
        }
        Ok(condition)
    }
}

/// The oracle kind a record names: a kind name (a study manifest's
/// `oracle = "plan"`) or a run record's `{"kind": ..., "text": ...}`.
fn oracle_of(value: Option<&serde_json::Value>) -> Result<Option<OracleKind>, ConditionError> {
    let kind = match value {
        None => return Ok(None),
        Some(serde_json::Value::String(kind)) => kind.as_str(),
        Some(other) => match other.get("kind").and_then(serde_json::Value::as_str) {
            Some(kind) => kind,
            None => {
                return Err(bad(
                    "--oracle",
                    format!("must be a kind name or an object with a `kind`, not {other}"),
                ))
            }
        },
    };
    kind.parse()
        .map(Some)
        .map_err(|m: String| bad("--oracle", m))
}

macro_rules! spelled {
    ($ty:ty, $flag:literal, $all:expr) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $ty {
            type Err = ConditionError;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $all.into_iter().find(|v| v.as_str() == s).ok_or_else(|| {
                    let names: Vec<&str> = $all.iter().map(|v| v.as_str()).collect();
                    bad($flag, format!("`{s}` is not one of {}", names.join(", ")))
                })
            }
        }
    };
}

spelled!(AnswerMode, "--answer-mode", AnswerMode::ALL);
spelled!(ContextPreset, "--context", ContextPreset::ALL);
spelled!(
    ToolNames,
    "--tool-names",
    [
        ToolNames::Reference,
        ToolNames::Descriptive,
        ToolNames::Opaque
    ]
);

impl fmt::Display for TurnBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TurnBudget::Turns(n) => write!(f, "{n}"),
            TurnBudget::WallClockOnly => f.write_str("none"),
        }
    }
}

impl FromStr for TurnBudget {
    type Err = ConditionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "none" {
            return Ok(TurnBudget::WallClockOnly);
        }
        match s.parse::<u32>() {
            Ok(n) if n > 0 => Ok(TurnBudget::Turns(n)),
            _ => Err(bad(
                "--max-turns",
                format!("`{s}` is not a positive number of turns or `none` (wall clock only)"),
            )),
        }
    }
}

impl fmt::Display for CatalogueSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogueSpec::Full => f.write_str("full"),
            CatalogueSpec::Fixed(n) => write!(f, "fixed:{n}"),
            CatalogueSpec::TopK(k) => write!(f, "topk:{k}"),
            CatalogueSpec::Workflow => f.write_str("workflow"),
            CatalogueSpec::Expert => f.write_str("expert"),
            CatalogueSpec::GeneralExpert => f.write_str("general+expert"),
            CatalogueSpec::Hierarchical => f.write_str("hierarchical"),
            CatalogueSpec::Dynamic => f.write_str("dynamic"),
            CatalogueSpec::CompactMeteorology => f.write_str("compact-meteorology"),
            CatalogueSpec::CueRoutedMeteorology => f.write_str("cue-routed-meteorology"),
            CatalogueSpec::AtmosphericPython => f.write_str("atmospheric-python"),
            CatalogueSpec::AtmosphericFortran => f.write_str("atmospheric-fortran"),
        }
    }
}

impl FromStr for CatalogueSpec {
    type Err = ConditionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let number = |text: &str, what: &str| {
            text.parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    bad(
                        "--catalogue",
                        format!("`{s}`: {what} must be a positive number"),
                    )
                })
        };
        Ok(match s.split_once(':') {
            Some(("fixed", n)) => CatalogueSpec::Fixed(number(n, "N")?),
            Some(("topk", k)) => CatalogueSpec::TopK(number(k, "K")?),
            None if s == "full" => CatalogueSpec::Full,
            None if s == "workflow" => CatalogueSpec::Workflow,
            None if s == "expert" => CatalogueSpec::Expert,
            None if s == "general+expert" => CatalogueSpec::GeneralExpert,
            None if s == "hierarchical" => CatalogueSpec::Hierarchical,
            None if s == "dynamic" => CatalogueSpec::Dynamic,
            None if s == "compact-meteorology" => CatalogueSpec::CompactMeteorology,
            None if s == "cue-routed-meteorology" => CatalogueSpec::CueRoutedMeteorology,
            None if s == "atmospheric-python" => CatalogueSpec::AtmosphericPython,
            None if s == "atmospheric-fortran" => CatalogueSpec::AtmosphericFortran,
            _ => {
                return Err(bad(
                    "--catalogue",
                    format!(
                        "`{s}` is not one of fixed:N, full, topk:K, workflow, expert, \
                         general+expert, hierarchical, dynamic, compact-meteorology, \
                         cue-routed-meteorology, atmospheric-python, atmospheric-fortran"
                    ),
                ))
            }
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_round_trips() {
        for s in [
            "fixed:6",
            "fixed:170",
            "full",
            "topk:20",
            "workflow",
            "expert",
            "general+expert",
            "hierarchical",
            "dynamic",
            "compact-meteorology",
            "cue-routed-meteorology",
            "atmospheric-python",
            "atmospheric-fortran",
        ] {
            assert_eq!(s.parse::<CatalogueSpec>().unwrap().to_string(), s);
        }
        for mode in AnswerMode::ALL {
            assert_eq!(mode.to_string().parse::<AnswerMode>().unwrap(), mode);
        }
        for preset in ContextPreset::ALL {
            assert_eq!(preset.to_string().parse::<ContextPreset>().unwrap(), preset);
        }
        assert_eq!(
            "none".parse::<TurnBudget>().unwrap(),
            TurnBudget::WallClockOnly
        );
        assert_eq!("12".parse::<TurnBudget>().unwrap(), TurnBudget::Turns(12));
    }

    #[test]
    fn bad_values_name_the_flag_and_the_choices() {
        let err = "topk:0".parse::<CatalogueSpec>().unwrap_err();
        assert_eq!(err.setting, "--catalogue");
        let err = "medium".parse::<ContextPreset>().unwrap_err().to_string();
        assert!(
            err.contains("--context") && err.contains("aggressive"),
            "{err}"
        );
        assert!("0".parse::<TurnBudget>().is_err());
    }

    #[test]
    fn presets_widen_monotonically_and_default_is_the_papers() {
        let policies: Vec<ContextPolicy> = ContextPreset::ALL.iter().map(|p| p.policy()).collect();
        for pair in policies.windows(2) {
            assert!(pair[0].recent_messages < pair[1].recent_messages);
            assert!(pair[0].summary_max_chars < pair[1].summary_max_chars);
        }
        assert_eq!(ContextPreset::Default.policy(), ContextPolicy::default());
        assert_eq!(ContextPolicy::default().recent_messages, 16);
        assert_eq!(ContextPolicy::default().summary_max_chars, 24_000);
    }

    #[test]
    fn a_condition_applies_its_settings_and_records_what_was_given() {
        let condition = Condition {
            answer_mode: Some(AnswerMode::InteractiveReview),
            reasoning_effort: Some(ReasoningEffort::High),
            catalogue: Some(CatalogueSpec::TopK(20)),
            context: Some(ContextPreset::Short),
            max_turns: Some(TurnBudget::Turns(12)),
            ..Condition::default()
        };
        let mut settings = ControllerSettings::default();
        condition.apply(&mut settings);
        assert!(settings.review.enabled);
        assert_eq!(settings.budgets.max_turns, 12);
        assert_eq!(settings.context, ContextPreset::Short.policy());
        assert_eq!(
            settings.sampling.reasoning_effort,
            Some(ReasoningEffort::High)
        );
        let record = settings.condition.clone().unwrap();
        assert_eq!(
            serde_json::to_value(&record).unwrap(),
            json!({"answer_mode": "interactive+review", "reasoning_effort": "high",
                   "catalogue": "topk:20", "context": "short", "max_turns": 12, "review": true})
        );
        assert_eq!(Condition::from_record(&record).unwrap(), condition);
        let plan = condition.catalogue_plan().unwrap();
        assert_eq!(plan.condition, CatalogueCondition::TopK { k: 20 });
        assert!(Condition::default().catalogue_plan().is_none());
    }

    #[test]
    fn the_oracle_kind_is_read_from_a_manifest_or_a_run_record() {
        let manifest: RunCondition = serde_json::from_str(r#"{"oracle":"plan"}"#).unwrap();
        let record: RunCondition =
            serde_json::from_str(r#"{"oracle":{"kind":"evidence-map","text":"..."}}"#).unwrap();
        assert_eq!(
            Condition::from_record(&manifest).unwrap().oracle,
            Some(OracleKind::Plan)
        );
        assert_eq!(
            Condition::from_record(&record).unwrap().oracle,
            Some(OracleKind::EvidenceMap)
        );
        let wrong: RunCondition = serde_json::from_str(r#"{"oracle":"answers"}"#).unwrap();
        let err = Condition::from_record(&wrong).unwrap_err();
        assert_eq!(err.setting, "--oracle");
        assert!(err.message.contains("`answers`"), "{err}");
    }

    #[test]
    fn task_time_is_a_positive_whole_number_of_seconds() {
        assert_eq!(parse_task_time("90").unwrap(), Duration::from_secs(90));
        assert!(parse_task_time("0")
            .unwrap_err()
            .message
            .contains("positive"));
        assert!(parse_task_time("1.5")
            .unwrap_err()
            .message
            .contains("`1.5`"));
    }
}
