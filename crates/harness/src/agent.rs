//! Which agent runs: the spec a person writes (`baseline`, `replay:DIR`,
//! `scripted:FILE`, `openai:MODEL`, `anthropic:MODEL`) parsed once into an
//! [`AgentSpec`], and the per-task agents the batch runner asks for.

use crate::error::{HarnessError, Result};
use earthverse_agent_controller::limits::{LimitedModel, SharedLimits};
use earthverse_agent_controller::{
    Agent, AgentError, AgentFactory, BaselineModel, ControllerSettings, ReplayModel, TaskInput,
    ToolBox,
};
use earthverse_model_provider::{ChatModel, Endpoint, ProviderSpec, ScriptedModel};
use earthverse_tool_registry::ResearchToolsConfig;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `scripted:FILE`: `{"model_id": ..., "scripts": {TASK_ID: [reply, ...]}}`,
/// each reply the assistant's message (a string, or a JSON object sent as
/// its text); tasks without a script are not run.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct ScriptFile {
    /// The model id its records carry.
    pub model_id: String,
    /// Replies per task id.
    pub scripts: BTreeMap<String, Vec<serde_json::Value>>,
}

impl ScriptFile {
    /// Reads a script file; errors name it.
    pub fn load(path: &Path) -> Result<Self> {
        let spec = format!("scripted:{}", path.display());
        let text = std::fs::read_to_string(path).map_err(|e| HarnessError::Agent {
            spec: spec.clone(),
            reason: format!("reading {}: {e}", path.display()),
        })?;
        serde_json::from_str(&text).map_err(|e| HarnessError::Agent {
            spec,
            reason: format!("{} is not a script file: {e}", path.display()),
        })
    }

    fn model(&self, task_id: &str) -> Option<ScriptedModel> {
        let replies = self.scripts.get(task_id)?;
        Some(ScriptedModel::from_texts(
            self.model_id.clone(),
            replies.iter().map(|r| match r {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            }),
        ))
    }
}

/// The kind of agent.
#[derive(Clone)]
pub enum AgentKind {
    /// The deterministic baseline research policy.
    Baseline,
    /// The recorded runs of one system, `<task_id>.json` each, replayed.
    Replay(PathBuf),
    /// Fixed replies per task.
    Scripted(ScriptFile),
    /// A wire model (or any [`ChatModel`] a harness brings).
    Live(Arc<dyn ChatModel>),
}

impl std::fmt::Debug for AgentKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AgentKind::Baseline => f.write_str("Baseline"),
            AgentKind::Replay(dir) => f.debug_tuple("Replay").field(dir).finish(),
            AgentKind::Scripted(file) => f.debug_tuple("Scripted").field(&file.model_id).finish(),
            AgentKind::Live(model) => f.debug_tuple("Live").field(&model.model_id()).finish(),
        }
    }
}

/// An agent spec, parsed: what runs, the model id its records carry, the
/// default system name (the folder under `--out`), and the research tools'
/// configuration (a replay's file tools refuse what the reference refused).
#[derive(Debug, Clone)]
pub struct AgentSpec {
    /// The agent.
    pub kind: AgentKind,
    /// The model id of its records.
    pub model_id: String,
    /// Default system name.
    pub default_system: String,
    /// Research tools' configuration.
    pub research: ResearchToolsConfig,
}

impl AgentSpec {
    /// Parses `baseline`, `replay:DIR`, `scripted:FILE`, `openai:MODEL` or
    /// `anthropic:MODEL` (wire models reached through `endpoint`).
    pub fn parse(spec: &str, endpoint: &Endpoint) -> Result<Self> {
        let (kind, rest) = spec.split_once(':').unwrap_or((spec, ""));
        Ok(match kind {
            "baseline" => Self {
                kind: AgentKind::Baseline,
                model_id: "baseline".into(),
                default_system: "baseline".into(),
                research: ResearchToolsConfig::default(),
            },
            "replay" => {
                let dir = PathBuf::from(rest);
                if !dir.is_dir() {
                    return Err(HarnessError::Agent {
                        spec: spec.into(),
                        reason: format!("{} is not a directory of recorded runs", dir.display()),
                    });
                }
                let name = dir
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| "replay".into());
                Self {
                    kind: AgentKind::Replay(dir),
                    model_id: format!("replay:{name}"),
                    default_system: format!("replay-{name}"),
                    research: ResearchToolsConfig::reference(),
                }
            }
            "scripted" if !rest.is_empty() => {
                let file = ScriptFile::load(Path::new(rest))?;
                let id = file.model_id.clone();
                Self {
                    kind: AgentKind::Scripted(file),
                    model_id: id.clone(),
                    default_system: id,
                    research: ResearchToolsConfig::default(),
                }
            }
            _ => {
                let provider = |source| HarnessError::Provider {
                    spec: spec.into(),
                    source,
                };
                let Some(parsed) = ProviderSpec::parse(spec).map_err(provider)? else {
                    return Err(HarnessError::Agent {
                        spec: spec.into(),
                        reason: "expected baseline, replay:DIR, scripted:FILE, openai:MODEL or anthropic:MODEL".into(),
                    });
                };
                let model = parsed.build(endpoint).map_err(provider)?;
                Self::live(model, parsed.slug())
            }
        })
    }

    /// A harness's own model, run under `system`.
    pub fn live(model: Arc<dyn ChatModel>, system: impl Into<String>) -> Self {
        Self {
            model_id: model.model_id().to_string(),
            kind: AgentKind::Live(model),
            default_system: system.into(),
            research: ResearchToolsConfig::default(),
        }
    }

    /// Whether this agent has something to run for `task_id` (a replay
    /// only its recorded tasks, a script only its scripted ones).
    pub fn covers(&self, task_id: &str) -> bool {
        match &self.kind {
            AgentKind::Replay(dir) => dir.join(format!("{task_id}.json")).is_file(),
            AgentKind::Scripted(file) => file.scripts.contains_key(task_id),
            AgentKind::Baseline | AgentKind::Live(_) => true,
        }
    }
}

/// The per-task agents of one run: the spec's model (behind the batch's
/// shared limits), the tool box, and the settings with each task's own
/// oracle and perturbation recorded in its `condition`.
pub(crate) struct Factory {
    pub kind: AgentKind,
    pub limits: Option<Arc<SharedLimits>>,
    pub tools: Arc<dyn ToolBox>,
    pub settings: ControllerSettings,
    pub model_id: String,
    /// `condition.oracle` of each task.
    pub oracles: BTreeMap<String, serde_json::Value>,
    /// `condition.perturbation` of each task of a perturbed release.
    pub perturbations: BTreeMap<String, serde_json::Value>,
}

impl AgentFactory for Factory {
    fn agent(&self, task: &TaskInput) -> std::result::Result<Agent, AgentError> {
        let mut settings = self.settings.clone();
        if let Some(perturbation) = self.perturbations.get(&task.task_id) {
            settings
                .condition
                .get_or_insert_with(Default::default)
                .perturbation = Some(perturbation.clone());
        }
        if let Some(oracle) = self.oracles.get(&task.task_id) {
            settings
                .condition
                .get_or_insert_with(Default::default)
                .oracle = Some(oracle.clone());
        }
        let model: Arc<dyn ChatModel> = match &self.kind {
            AgentKind::Baseline => Arc::new(BaselineModel::new()),
            AgentKind::Live(model) => model.clone(),
            AgentKind::Scripted(file) => {
                Arc::new(
                    file.model(&task.task_id)
                        .ok_or_else(|| AgentError::NoAgentForTask {
                            task_id: task.task_id.clone(),
                            reason: "the script file has no replies for it".into(),
                        })?,
                )
            }
            AgentKind::Replay(dir) => {
                let path = dir.join(format!("{}.json", task.task_id));
                let replay = ReplayModel::from_path(&path)?;
                // A replay must be able to issue every recorded call.
                settings.budgets.max_turns =
                    settings.budgets.max_turns.max(replay.turns() as u32 + 1);
                settings.model_id = Some(replay.recorded().model_id.clone());
                settings.model_name = replay.recorded().model_name.clone();
                Arc::new(replay)
            }
        };
        let model: Arc<dyn ChatModel> = match &self.limits {
            Some(limits) => Arc::new(LimitedModel::new(model, limits.clone())),
            None => model,
        };
        Ok(Agent {
            model,
            tools: self.tools.clone(),
            settings,
        })
    }

    fn model_id(&self) -> String {
        self.model_id.clone()
    }
}
