//! A run, set up: a [`RunRequest`] (release, agent, condition, tasks,
//! budgets, output) becomes a [`PreparedRun`] — the task inputs, each task's
//! oracle text (App. A.3.1) and perturbation manifest (App. A.3.3), the tool
//! box of the condition's catalogue (with the domain operations and a
//! required suite's policy, App. A.4), the `python_exec` interpreter and
//! its recorded environment, prices and the batch's shared limits — which
//! [`PreparedRun::run`] hands to the controller's `run_batch`.

use crate::agent::{AgentSpec, Factory};
use crate::error::{HarnessError, Result};
use crate::python::discover;
use earthverse_agent_controller::batch::{
    run_batch, BatchObserver, BatchSettings, BatchSummary, Shard,
};
use earthverse_agent_controller::limits::{LimitsConfig, RequestRate, SharedLimits};
use earthverse_agent_controller::PresentedToolBox;
use earthverse_agent_controller::{
    Condition, ControllerSettings, Price, Protocol, RequiredToolPolicy, RunEnvironment, Solver,
    TaskInput, ToolBox,
};
use earthverse_interventions::{oracle_with_reads, ReferenceReads};
use earthverse_model_provider::Pricing;
use earthverse_package_model::{ensure_output_outside, Overlap, Release};
use earthverse_tool_registry::{Registry, ResearchToolsConfig, Tool, ToolDescriptor};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `--tasks`: comma-separated task ids or glob patterns (`CSX-001*`).
#[derive(Debug, Clone)]
pub struct TaskFilter(globset::GlobSet);

impl TaskFilter {
    /// Parses `CSX-001*,CSX-006_Q1`; a bad pattern is an error naming it.
    pub fn parse(spec: &str) -> Result<Self> {
        let mut set = globset::GlobSetBuilder::new();
        for pattern in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let glob = globset::Glob::new(pattern).map_err(|e| HarnessError::Setting {
                setting: "--tasks",
                reason: format!("`{pattern}`: {e}"),
            })?;
            set.add(glob);
        }
        set.build().map(Self).map_err(|e| HarnessError::Setting {
            setting: "--tasks",
            reason: e.to_string(),
        })
    }

    /// Whether `task_id` matches one of the patterns.
    pub fn matches(&self, task_id: &str) -> bool {
        self.0.is_match(task_id)
    }
}

/// What to run. [`RunRequest::new`] gives the paper's protocol (App. C.2):
/// JSON-in-message tools, the default condition, 4 tasks at once.
#[derive(Debug, Clone)]
pub struct RunRequest {
    /// The agent.
    pub agent: AgentSpec,
    /// Output root; records go to `<out>/<system>/<task_id>/`.
    pub out: PathBuf,
    /// System name (folder under `out`); default the agent's.
    pub system: Option<String>,
    /// Which tasks (default all the agent covers).
    pub tasks: Option<TaskFilter>,
    /// The experimental condition.
    pub condition: Condition,
    /// Tool protocol.
    pub protocol: Protocol,
    /// Tasks run at once (at least 1).
    pub concurrency: usize,
    /// Run only this shard.
    pub shard: Option<Shard>,
    /// Price table (JSON, USD per million tokens) for `cost_usd`.
    pub prices: Option<PathBuf>,
    /// Cost cap of the whole batch (all shards), USD; needs a price.
    pub max_batch_cost: Option<f64>,
    /// Request-rate cap of the whole batch.
    pub max_request_rate: Option<RequestRate>,
    /// Offer the 170 domain operations beside the research tools (§3.4).
    pub domain_ops: bool,
    /// Require a suite's operations (App. A.4; the compliance contract of
    /// App. C.5 through the controller's required-tool policy).
    pub require_suite: Option<String>,
    /// The interpreter of `python_exec` (default: discovered).
    pub python: Option<PathBuf>,
}

impl RunRequest {
    /// A request with the paper's defaults.
    pub fn new(agent: AgentSpec, out: impl Into<PathBuf>) -> Self {
        Self {
            agent,
            out: out.into(),
            system: None,
            tasks: None,
            condition: Condition::default(),
            protocol: Protocol::JsonInMessage,
            concurrency: 4,
            shard: None,
            prices: None,
            max_batch_cost: None,
            max_request_rate: None,
            domain_ops: false,
            require_suite: None,
            python: None,
        }
    }
}

/// A run ready to start.
pub struct PreparedRun {
    inputs: Vec<TaskInput>,
    solver: Arc<dyn Solver>,
    batch: BatchSettings,
    /// What a person should be told before the run starts (a missing
    /// price, a task without an oracle, a Python without numpy), one line
    /// each starting with `note:`.
    pub notes: Vec<String>,
}

impl std::fmt::Debug for PreparedRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreparedRun")
            .field("tasks", &self.inputs.len())
            .field("system", &self.batch.system)
            .finish()
    }
}

/// What a run did.
#[derive(Debug)]
pub struct RunOutcome {
    /// The system name.
    pub system: String,
    /// `<out>/<system>`.
    pub system_dir: PathBuf,
    /// The batch runner's summary.
    pub summary: BatchSummary,
    /// The batch's shared limits, when any (their ledger says what a cost
    /// cap stopped).
    pub limits: Option<Arc<SharedLimits>>,
}

impl PreparedRun {
    /// The tasks to run, in release order.
    pub fn tasks(&self) -> impl Iterator<Item = &str> {
        self.inputs.iter().map(|t| t.task_id.as_str())
    }

    /// The system name.
    pub fn system(&self) -> &str {
        &self.batch.system
    }

    /// Runs the batch (resuming: tasks already `ok` are skipped).
    pub async fn run(self, observer: Arc<dyn BatchObserver>) -> Result<RunOutcome> {
        let system_dir = self.batch.system_dir();
        let limits = self.batch.limits.clone();
        let system = self.batch.system.clone();
        let summary = run_batch(self.inputs, self.solver, self.batch, observer).await?;
        Ok(RunOutcome {
            system,
            system_dir,
            summary,
            limits,
        })
    }
}

/// The registry's tool descriptors (research tools and domain operations),
/// for the tool-subset oracle.
pub fn tool_descriptors() -> Result<Vec<ToolDescriptor>> {
    let mut registry = Registry::with_research_tools(ResearchToolsConfig::default());
    register_domain_operations(&mut registry)?;
    Ok(registry.definitions())
}

fn register_domain_operations(registry: &mut Registry) -> Result<()> {
    for tool in earthverse_domain_ops::all_operations() {
        registry.register(tool).map_err(|e| HarnessError::Setting {
            setting: "--domain-ops",
            reason: format!("registering the domain operations: {e}"),
        })?;
    }
    Ok(())
}

/// Opens every file of a task's inventory that exists under its package
/// (package-model's `evidence::first_unopenable`): one that cannot be
/// opened (permission denied, a symlink loop) or whose symlink leads out of
/// the package is [`HarnessError::UnreadableEvidence`], before anything is
/// written. A
/// listed file that is absent is the task's business (a `missing`
/// perturbation removes one on purpose), not an error here.
fn ensure_inventory_readable(task_id: &str, package_root: &Path, inventory: &[&str]) -> Result<()> {
    match earthverse_package_model::evidence::first_unopenable(
        package_root,
        inventory.iter().copied(),
    ) {
        None => Ok(()),
        Some((path, source)) => Err(HarnessError::UnreadableEvidence {
            task_id: task_id.to_string(),
            path,
            source,
        }),
    }
}

/// Sets up `request` over `release`: refuses an output on an input, picks
/// the tasks, records each task's perturbation manifest and oracle, writes
/// the public questions (`<out>/.questions/`, which `python_exec` may
/// read; never the task files), and builds the tool box and settings.
/// Every inventoried file of the chosen tasks must open
/// ([`HarnessError::UnreadableEvidence`]).
pub async fn prepare(release: &Release, request: RunRequest) -> Result<PreparedRun> {
    let root = release.root().to_path_buf();
    let replay_dir = match &request.agent.kind {
        crate::agent::AgentKind::Replay(dir) => dir.clone(),
        _ => root.clone(),
    };
    ensure_output_outside(
        &request.out,
        &[
            ("the release", &root),
            ("the release's packages", release.packages_root()),
            ("the replayed runs", &replay_dir),
        ],
        Overlap::Outside,
    )?;
    // A required scientific environment is detected before anything is
    // written: a missing one is refused with how to install it.
    let environment = required_environment(&request).await?;
    let offered = offered_environments(&request).await?;
    let mut notes = Vec::new();
    let condition = &request.condition;
    let mut settings = ControllerSettings::default();
    condition.apply(&mut settings);
    settings.protocol = request.protocol;
    let agent = request.agent;
    if let Some(prices) = &request.prices {
        let table = Pricing::from_path(prices).map_err(|e| HarnessError::Setting {
            setting: "--prices",
            reason: format!("{}: {e}", prices.display()),
        })?;
        match table.price(&agent.model_id) {
            Some(p) => {
                settings.price = Some(Price {
                    input_per_mtok: p.prompt,
                    cached_input_per_mtok: p.cached.unwrap_or(p.prompt),
                    output_per_mtok: p.completion,
                })
            }
            None => notes.push(format!(
                "note: {} has no price for `{}`; cost_usd stays null",
                prices.display(),
                agent.model_id
            )),
        }
    }
    let system = request
        .system
        .clone()
        .unwrap_or_else(|| agent.default_system.clone());

    // Tasks: the release's, filtered; a replay or script runs only its own.
    let questions_dir = request.out.join(".questions");
    let mut questions = Vec::new();
    let mut inputs = Vec::new();
    for task in release.tasks() {
        if request
            .tasks
            .as_ref()
            .is_some_and(|f| !f.matches(&task.task_id))
            || !agent.covers(&task.task_id)
        {
            continue;
        }
        // Python may read the public question, never the task file (which
        // holds the solution and ground truth).
        let question_path = questions_dir.join(format!("{}.md", task.task_id));
        questions.push((question_path.clone(), task.question.as_str()));
        let package_root = release.task_package_dir(task);
        ensure_inventory_readable(&task.task_id, &package_root, &task.inventory_paths())?;
        inputs.push(TaskInput {
            task_id: task.task_id.clone(),
            event_id: task.event_id.clone(),
            question: task.question.clone(),
            package_root,
            question_path: Some(question_path),
            scratch_dir: request.out.join("scratch"),
        });
    }
    let perturbations = perturbations_of(&root, &inputs);
    let oracles = match condition.oracle {
        Some(kind) => oracles_of(
            release,
            kind,
            &inputs,
            request.python.as_deref(),
            &mut notes,
        )?,
        None => BTreeMap::new(),
    };
    if inputs.is_empty() {
        return Err(HarnessError::NoTasks { release: root });
    }
    // Question files are written once the task list is known not to be
    // empty: a refused run leaves no output folder behind, and neither
    // does one whose questions cannot be written (a full disk): what was
    // made here is removed.
    let fresh_out = !request.out.exists();
    let written = std::fs::create_dir_all(&questions_dir)
        .map_err(|source| (questions_dir.clone(), source))
        .and_then(|()| {
            questions.iter().try_for_each(|(path, question)| {
                std::fs::write(path, question).map_err(|source| (path.clone(), source))
            })
        });
    if let Err((path, source)) = written {
        let _ = std::fs::remove_dir_all(if fresh_out {
            &request.out
        } else {
            &questions_dir
        });
        return Err(HarnessError::Io { path, source });
    }

    // The interpreter python_exec runs, recorded in every run (App. C.2:
    // 60 s per Python call, from the same settings object).
    let mut research = agent.research.clone();
    let python = discover(request.python.clone())?;
    notes.extend(python.notes);
    research.python.interpreter = python.config.interpreter;
    research.python.limits.wall = settings.budgets.python_timeout;
    settings.environment = Some(RunEnvironment {
        python: python.environment,
        served_model: None,
    });
    let tools = tool_box(
        &request.condition,
        request.domain_ops,
        request.require_suite.as_deref(),
        environment,
        offered,
        research,
        &mut settings,
    )?;
    let mut batch = BatchSettings::new(&request.out, &system);
    batch.concurrency = request.concurrency.max(1);
    batch.shard = request.shard;
    batch.limits = batch_limits(
        &batch,
        request.max_batch_cost,
        request.max_request_rate,
        settings.price,
    )?;
    let solver: Arc<dyn Solver> = Arc::new(Factory {
        kind: agent.kind,
        limits: batch.limits.clone(),
        tools,
        settings,
        model_id: agent.model_id,
        oracles,
        perturbations,
    });
    Ok(PreparedRun {
        inputs,
        solver,
        batch,
        notes,
    })
}

/// The condition's tool box: the research tools, the domain operations when
/// asked for (or needed by a catalogue or a required suite), the required
/// suite's policy, presented through the catalogue.
fn tool_box(
    condition: &Condition,
    domain_ops: bool,
    require_suite: Option<&str>,
    environment: Option<RequiredEnvironment>,
    offered: Vec<Arc<dyn Tool>>,
    research: ResearchToolsConfig,
    settings: &mut ControllerSettings,
) -> Result<Arc<dyn ToolBox>> {
    let mut registry = Registry::with_research_tools(research);
    let mut catalogue_plan = condition.catalogue_plan();
    // A required environment's operations are always shown (App. A.4), and
    // so are those of an atmospheric suite (Table 6b).
    if let Some(plan) = catalogue_plan.as_mut() {
        let required = environment.iter().flat_map(|(_, _, tools)| tools);
        plan.pinned = required
            .chain(&offered)
            .map(|t| t.name().to_string())
            .collect();
    }
    for tool in offered {
        registry.register(tool).map_err(|e| HarnessError::Setting {
            setting: "--catalogue",
            reason: format!("registering the suite's operations: {e}"),
        })?;
    }
    if domain_ops || require_suite.is_some() || catalogue_plan.is_some() {
        register_domain_operations(&mut registry)?;
    }
    if let Some(name) = require_suite {
        let suite = earthverse_domain_ops::suites::suite(name).ok_or_else(|| {
            let names: Vec<&str> = earthverse_domain_ops::suites::SUITES
                .iter()
                .map(|s| s.name)
                .collect();
            HarnessError::Setting {
                setting: "--require-suite",
                reason: format!(
                    "unknown suite `{name}` (known: {}; the real MetPy, xclim, CDO, ... are \
                     --require-environment)",
                    names.join(", ")
                ),
            }
        })?;
        settings.required_tools = Some(RequiredToolPolicy {
            specialist_tools: suite.operations.iter().map(|s| s.to_string()).collect(),
            // The suite's current name, however it was written (a former
            // name is an alias).
            label: Some(suite.name.to_string()),
            ..Default::default()
        });
    }
    if let Some((slug, versions, tools)) = environment {
        let names: Vec<String> = tools.iter().map(|t| t.name().to_string()).collect();
        for tool in tools {
            registry.register(tool).map_err(|e| HarnessError::Setting {
                setting: "--require-environment",
                reason: format!("registering the environment's operations: {e}"),
            })?;
        }
        settings.required_tools = Some(RequiredToolPolicy {
            specialist_tools: names,
            label: Some(slug.to_string()),
            versions,
            ..Default::default()
        });
        // Recorded by the environment's own name, however it was written.
        settings
            .condition
            .get_or_insert_with(Default::default)
            .required_environment = Some(slug.to_string());
    }
    Ok(match catalogue_plan {
        Some(plan) => Arc::new(PresentedToolBox::new(Arc::new(registry), plan)),
        None => Arc::new(registry),
    })
}

/// A required environment: its name, the versions detection found, and
/// its tools.
type RequiredEnvironment = (&'static str, BTreeMap<String, String>, Vec<Arc<dyn Tool>>);

/// The tools of the condition's required environment, after detecting it
/// with the interpreter `python_exec` will use; `None` without one.
async fn required_environment(request: &RunRequest) -> Result<Option<RequiredEnvironment>> {
    let Some(name) = &request.condition.required_environment else {
        return Ok(None);
    };
    let (mut config, _) = earthverse_tool_registry::PythonConfig::discover(request.python.clone());
    config.limits.wall = ControllerSettings::default().budgets.python_timeout;
    let settings = Arc::new(earthverse_environments::EnvironmentSettings {
        python: config,
        path: None,
    });
    let (detected, tools) = earthverse_environments::load(name, settings)
        .await
        .map_err(|e| HarnessError::Setting {
            setting: "--require-environment",
            reason: e.to_string(),
        })?;
    let slug = earthverse_environments::environment(name).map_or("unknown", |e| e.slug);
    Ok(Some((slug, detected.versions, tools)))
}

/// The tools of the environments a catalogue offers without requiring them
/// (Table 6b's atmospheric suites), after detecting each: a missing one is
/// refused with how to install it, never replaced.
async fn offered_environments(request: &RunRequest) -> Result<Vec<Arc<dyn Tool>>> {
    let names = request
        .condition
        .catalogue
        .map_or(&[][..], |c| c.offered_environments());
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let (mut config, _) = earthverse_tool_registry::PythonConfig::discover(request.python.clone());
    config.limits.wall = ControllerSettings::default().budgets.python_timeout;
    let settings = Arc::new(earthverse_environments::EnvironmentSettings {
        python: config,
        path: None,
    });
    let mut tools = Vec::new();
    for name in names {
        tools.extend(
            earthverse_environments::tools(name, settings.clone())
                .await
                .map_err(|e| HarnessError::Setting {
                    setting: "--catalogue",
                    reason: e.to_string(),
                })?,
        );
    }
    Ok(tools)
}

/// A perturbed release (App. A.3.3): each task's manifest, recorded in its
/// run's `condition.perturbation`.
fn perturbations_of(root: &Path, inputs: &[TaskInput]) -> BTreeMap<String, serde_json::Value> {
    inputs
        .iter()
        .filter_map(|input| {
            let manifest = earthverse_interventions::perturb::read_manifest(root, &input.task_id)?;
            Some((input.task_id.clone(), serde_json::to_value(manifest).ok()?))
        })
        .collect()
}

/// Oracles (App. A.3.1): the leak-checked text of each task, recorded in
/// its run's condition; the controller shows it after the question
/// (routing on the question alone). A task without one runs without it,
/// the reason recorded and noted.
fn oracles_of(
    release: &Release,
    kind: earthverse_package_model::OracleKind,
    inputs: &[TaskInput],
    python: Option<&Path>,
    notes: &mut Vec<String>,
) -> Result<BTreeMap<String, serde_json::Value>> {
    let tools = tool_descriptors()?;
    let selected: BTreeSet<String> = inputs.iter().map(|i| i.task_id.clone()).collect();
    let reads = ReferenceReads::for_oracle(release, kind, Some(&selected), python);
    let mut oracles = BTreeMap::new();
    for input in inputs {
        let Some(task) = release.task(&input.task_id) else {
            continue;
        };
        let task_reads = reads.as_ref().map(|r| r.of(task));
        let record = match oracle_with_reads(task, kind, &tools, task_reads.as_ref()) {
            Ok(o) => serde_json::json!({"kind": kind.as_str(), "text": o.text}),
            Err(e) => {
                notes.push(format!("note: {e}; the task runs without an oracle"));
                serde_json::json!({"kind": kind.as_str(), "text": null, "reason": e.to_string()})
            }
        };
        oracles.insert(input.task_id.clone(), record);
    }
    Ok(oracles)
}

/// `max_batch_cost` and `max_request_rate`: limits over the ledger in the
/// system directory every shard of the batch shares.
fn batch_limits(
    batch: &BatchSettings,
    cost_cap_usd: Option<f64>,
    rate: Option<RequestRate>,
    price: Option<Price>,
) -> Result<Option<Arc<SharedLimits>>> {
    if cost_cap_usd.is_none() && rate.is_none() {
        return Ok(None);
    }
    let config = LimitsConfig {
        cost_cap_usd,
        rate,
        price,
    };
    let limits =
        SharedLimits::new(batch.system_dir(), config).map_err(|e| HarnessError::Setting {
            setting: "--max-batch-cost",
            reason: e.to_string(),
        })?;
    Ok(Some(Arc::new(limits)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_inventoried_file_that_does_not_open_stops_the_run_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        std::fs::write(dir.path().join("data/ok.csv"), "a\n1\n").unwrap();
        // A symlink loop: it does not open, even for root (a file of mode
        // 000 does, for root; the CLI fault matrix tests that one).
        std::os::unix::fs::symlink("loop.csv", dir.path().join("data/loop.csv")).unwrap();
        // Listed but absent (a `missing` perturbation): not this check's error.
        let fine = ["data/ok.csv", "data/gone.csv"];
        ensure_inventory_readable("T_Q1", dir.path(), &fine).unwrap();
        let err = ensure_inventory_readable("T_Q1", dir.path(), &["data/ok.csv", "data/loop.csv"])
            .unwrap_err();
        let text = err.to_string();
        assert!(
            matches!(err, HarnessError::UnreadableEvidence { .. })
                && text.contains("task T_Q1")
                && text.contains(&dir.path().join("data/loop.csv").display().to_string()),
            "{text}"
        );
    }

    /// A listed file whose symlink leads outside the package (the agent's
    /// tools would refuse it) stops the run naming it; a symlink inside the
    /// package is fine.
    #[test]
    fn an_inventoried_symlink_out_of_the_package_stops_the_run() {
        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("package");
        std::fs::create_dir_all(package.join("data")).unwrap();
        std::fs::write(dir.path().join("outside.csv"), "a\n1\n").unwrap();
        std::fs::write(package.join("data/ok.csv"), "a\n1\n").unwrap();
        std::os::unix::fs::symlink("ok.csv", package.join("data/inside.csv")).unwrap();
        std::os::unix::fs::symlink(dir.path().join("outside.csv"), package.join("data/out.csv"))
            .unwrap();
        ensure_inventory_readable("T_Q1", &package, &["data/ok.csv", "data/inside.csv"]).unwrap();
        let err = ensure_inventory_readable("T_Q1", &package, &["data/out.csv"]).unwrap_err();
        let text = format!("{err}: {}", std::error::Error::source(&err).unwrap());
        assert!(
            text.contains("data/out.csv") && text.contains("outside the package"),
            "{text}"
        );
    }
}
