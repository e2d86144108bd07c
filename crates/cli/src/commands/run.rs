//! `earthverse run`: run an agent over the tasks of a release (App. C.2, E)
//! with the batch runner of `earthverse-agent-controller` (resume, per-task
//! locks, `--shard K/N`, atomic records, progress bar with cost).

use anyhow::{bail, Context};
use earthverse_agent_controller::batch::{
    run_batch, BatchObserver, BatchSettings, BatchTaskSummary, Shard, TaskStatus,
};
use earthverse_agent_controller::catalogue_view::PresentedToolBox;
use earthverse_agent_controller::cluster::shard_from_env;
use earthverse_agent_controller::limits::{LimitedModel, LimitsConfig, RequestRate, SharedLimits};
use earthverse_agent_controller::{
    Agent, AgentError, AgentFactory, AnswerMode, BaselineModel, CatalogueSpec, Condition,
    ContextPreset, ControllerSettings, Price, Protocol, ReplayModel, Solver, TaskInput, ToolBox,
    ToolNames, TurnBudget,
};
use earthverse_interventions::OracleKind;
use earthverse_model_provider::{
    AnthropicConfig, AnthropicMessages, ChatModel, OpenAiCompatible, OpenAiConfig, Pricing,
    ReasoningEffort, ScriptedModel,
};
use earthverse_package_model::Release;
use earthverse_tool_registry::{Registry, ResearchToolsConfig};
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Arguments of `earthverse run`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Root of a release (holds `tasks/` and `packages/`).
    pub release: PathBuf,
    /// `baseline`, `replay:DIR` (a directory of recorded runs of one system,
    /// `<task_id>.json` each), `scripted:FILE` (fixed replies per task, e.g.
    /// `fixtures/agents/python-demo.json`), `openai:MODEL` or
    /// `anthropic:MODEL`.
    #[arg(long)]
    pub agent: String,
    /// Task filter: comma-separated ids or patterns with `*` (e.g.
    /// `CSX-001*,CSX-006_Q1`).
    #[arg(long)]
    pub tasks: Option<String>,
    /// Tasks run at once.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Run only shard K of N (0 <= K < N), split by a stable hash of the task id.
    #[arg(long, conflicts_with = "shard_from_env")]
    pub shard: Option<String>,
    /// Read the shard from the cluster engine: `SLURM_ARRAY_TASK_ID` /
    /// `SLURM_ARRAY_TASK_COUNT` (a Slurm job array) or `JOB_COMPLETION_INDEX`
    /// (a Kubernetes Indexed Job); `EARTHVERSE_SHARD_COUNT` gives N and
    /// wins over Slurm's count (needed for Kubernetes and for a resubmitted
    /// single index).
    #[arg(long)]
    pub shard_from_env: bool,
    /// Cost cap of the whole batch in USD, shared by every shard writing to
    /// the same `--out` directory (a ledger under a file lock); needs a
    /// price (`--prices`). A shard reaching it stops, keeping its records.
    #[arg(long, value_name = "USD")]
    pub max_batch_cost: Option<f64>,
    /// Request-rate cap of the whole batch, all shards together: `N/s`,
    /// `N/min`, `N/h` or `N/<seconds>s` (e.g. `60/min`).
    #[arg(long, value_name = "N/UNIT")]
    pub max_request_rate: Option<String>,
    /// Base URL of an OpenAI-compatible or Anthropic server (e.g.
    /// `http://127.0.0.1:8080/v1` for vLLM, llama.cpp or Ollama).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Environment variable holding the API key (default `OPENAI_API_KEY` /
    /// `ANTHROPIC_API_KEY`; with `--base-url` and no `--api-key-env`, no key).
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Output directory; records go to `<out>/<system>/<task_id>/`.
    #[arg(long)]
    pub out: PathBuf,
    /// System name (directory under `--out`); default from the agent.
    #[arg(long)]
    pub system: Option<String>,
    /// Tool protocol: `json` (reference JSON-in-message) or `native`.
    #[arg(long, default_value = "json")]
    pub protocol: String,
    /// The experimental condition (App. A.1–A.3; Tables 3, 4, 6).
    #[command(flatten)]
    pub condition: ConditionArgs,
    /// Price table (JSON `{model: {prompt, completion, cached}}` in USD per
    /// million tokens) for `cost_usd`.
    #[arg(long)]
    pub prices: Option<PathBuf>,
    /// Do not draw the progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Offer the 170 domain operations beside the six research tools (§3.4).
    #[arg(long)]
    pub domain_ops: bool,
    /// Python interpreter of `python_exec` (default: `EARTHVERSE_PYTHON`,
    /// else the scientific environment `scripts/python-env.sh` makes, else
    /// `python3`). Its version and library versions go into every record.
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// Professional-environment condition (App. A.4, Table 7): offer the
    /// domain operations and require at least 2 successful, distinct calls
    /// of the named suite's operations (target 3, at most 4 counted) before
    /// a final answer is accepted. Suites: `metpy_like`, `xclim_like`,
    /// `cdo_like` (our Rust operations modelled on those libraries, not the
    /// libraries: see `--require-environment`).
    #[arg(long)]
    pub require_suite: Option<String>,
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
    #[arg(long, value_name = "NAME")]
    pub require_environment: Option<String>,
    /// Unloadable task files: an error, or skipped and named.
    #[command(flatten)]
    pub skip: super::inputs::SkipInvalid,
}

/// The condition flags of `earthverse run` (and of each condition of a
/// study manifest). Every flag left out keeps the paper's default and is
/// absent from the run's `condition` record; every flag given is recorded
/// as written. Which numbers the paper fixes and which are ours:
/// `docs/GUIDE.md` "Experimental conditions" and the
/// `earthverse_agent_controller::conditions` docs.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConditionArgs {
    /// Answer mode (App. A.1, Table 3): `interactive` (default),
    /// `interactive+review` (App. E final evidence review),
    /// `compressed-direct` (one call, no tools, over a bounded evidence
    /// summary of the package: 48,000 characters, 2,400 per file) or
    /// `all-text-direct` (one call over every readable file's text within
    /// 320,000 characters).
    #[arg(long, value_name = "MODE")]
    pub answer_mode: Option<AnswerMode>,
    /// Run the App. E final evidence review (same as
    /// `--answer-mode interactive+review`).
    #[arg(long)]
    pub review: bool,
    /// Reasoning effort (Table 3): `none`, `low`, `medium`, `high` or
    /// `xhigh`. OpenAI-compatible servers get `reasoning_effort`; Anthropic
    /// a thinking budget of 1,024 / 4,096 / 16,384 / 32,768 tokens (ours).
    #[arg(long, value_name = "EFFORT")]
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
    /// cue are not offered).
    #[arg(long, value_name = "CATALOGUE")]
    pub catalogue: Option<CatalogueSpec>,
    /// Tool names (Table 4b): `reference` (registry names), `descriptive`
    /// (domain prefix and intended-use cues) or `opaque` (meaningless
    /// names; records keep the real ones).
    #[arg(long, value_name = "NAMES")]
    pub tool_names: Option<ToolNames>,
    /// Context retained before summarisation (Table 6c): `aggressive` (4
    /// recent messages, 6,000-character state), `short` (8, 12,000),
    /// `default` (App. C.2: 16, 24,000), `long` (32, 48,000) or `full`
    /// (never summarised).
    #[arg(long, value_name = "PRESET")]
    pub context: Option<ContextPreset>,
    /// Research turns (App. C.2: 48; Table 6d: 12, 24, 48, 96), or `none`
    /// for the wall-clock-only mode.
    #[arg(long, value_name = "N|none")]
    pub max_turns: Option<TurnBudget>,
    /// Wall-clock budget of a task in seconds (App. C.2: 1,800).
    #[arg(long, value_name = "SECONDS")]
    pub task_time: Option<u64>,
    /// Sampling temperature sent to the model.
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Sampling seed sent to the model (where the backend supports one).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Answer-free oracle added to each task message (App. A.3.1, Table 4a):
    /// `relevant-files`, `evidence-map`, `tool-subset` or `plan` (see
    /// `earthverse oracle`). The exact text goes into `condition.oracle`;
    /// a task without one runs without it, the reason recorded.
    #[arg(long, value_name = "KIND")]
    pub oracle: Option<OracleKind>,
}

impl ConditionArgs {
    /// The typed condition.
    pub fn condition(&self) -> anyhow::Result<Condition> {
        let answer_mode = match (self.answer_mode, self.review) {
            (Some(mode), true) if mode != AnswerMode::InteractiveReview => bail!(
                "--review contradicts --answer-mode {mode}; use --answer-mode interactive+review"
            ),
            (None, true) => Some(AnswerMode::InteractiveReview),
            (mode, _) => mode,
        };
        if self.task_time == Some(0) {
            bail!("--task-time must be a positive number of seconds");
        }
        Ok(Condition {
            answer_mode,
            reasoning_effort: self.reasoning_effort,
            catalogue: self.catalogue,
            tool_names: self.tool_names,
            context: self.context,
            max_turns: self.max_turns,
            task_time: self.task_time.map(Duration::from_secs),
            temperature: self.temperature,
            seed: self.seed,
        })
    }

    /// The flags of a typed condition (for study manifests).
    pub fn from_condition(condition: &Condition) -> Self {
        Self {
            answer_mode: condition.answer_mode,
            review: false,
            reasoning_effort: condition.reasoning_effort,
            catalogue: condition.catalogue,
            tool_names: condition.tool_names,
            context: condition.context,
            max_turns: condition.max_turns,
            task_time: condition.task_time.map(|t| t.as_secs()),
            temperature: condition.temperature,
            seed: condition.seed,
            oracle: None,
        }
    }
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(run_async(args))
}

enum AgentKind {
    Baseline,
    Replay(PathBuf),
    Scripted(ScriptFile),
    Live(Arc<dyn ChatModel>),
}

/// `--agent scripted:FILE`: `{"model_id": ..., "scripts": {TASK_ID: [reply,
/// ...]}}`, each reply the assistant's message (a string, or a JSON object
/// sent as its text); tasks without a script are not run.
#[derive(Debug, serde::Deserialize)]
struct ScriptFile {
    model_id: String,
    scripts: std::collections::BTreeMap<String, Vec<serde_json::Value>>,
}

impl ScriptFile {
    fn load(path: &std::path::Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("--agent scripted: reading {}", path.display()))?;
        serde_json::from_str(&text)
            .with_context(|| format!("--agent scripted: {} is not a script file", path.display()))
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

struct Factory {
    kind: AgentKind,
    limits: Option<Arc<SharedLimits>>,
    tools: Arc<dyn ToolBox>,
    settings: ControllerSettings,
    model_id: String,
    /// `condition.oracle` of each task under `--oracle`.
    oracles: std::collections::BTreeMap<String, serde_json::Value>,
    /// `condition.perturbation` of each task of a perturbed release.
    perturbations: std::collections::BTreeMap<String, serde_json::Value>,
}

impl AgentFactory for Factory {
    fn agent(&self, task: &TaskInput) -> Result<Agent, AgentError> {
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

async fn run_async(args: Args) -> anyhow::Result<ExitCode> {
    let release = Release::load(&args.release)
        .with_context(|| format!("loading the release at {}", args.release.display()))?;
    let replay_dir = args
        .agent
        .strip_prefix("replay:")
        .map(std::path::Path::new)
        .unwrap_or(&args.release);
    super::inputs::refuse_output_on_inputs(
        "--out",
        &args.out,
        &[
            ("the release", &args.release),
            ("the release's packages", release.packages_root()),
            ("the replayed runs", replay_dir),
        ],
        earthverse_package_model::Overlap::Outside,
    )?;
    let skipped = args.skip.check(&release, "run")?;
    let shard = if args.shard_from_env {
        let shard = shard_from_env(|var| std::env::var(var).ok())?;
        eprintln!(
            "run: shard {}/{} (--shard-from-env)",
            shard.index, shard.count
        );
        Some(shard)
    } else {
        args.shard
            .as_deref()
            .map(str::parse::<Shard>)
            .transpose()
            .context("--shard")?
    };
    let condition = args.condition.condition()?;
    // The required scientific environment, detected before anything is
    // written: a missing one is refused with how to install it.
    let env_tools = required_environment(&args).await?;
    let mut settings = ControllerSettings::default();
    condition.apply(&mut settings);
    settings.protocol = match args.protocol.as_str() {
        "json" => Protocol::JsonInMessage,
        "native" => Protocol::NativeTools,
        other => bail!("--protocol must be `json` or `native`, not `{other}`"),
    };

    let (kind, model_id, default_system, research_config) = parse_agent(&args)?;
    if let Some(prices) = &args.prices {
        let table = Pricing::from_path(prices)?;
        if let Some(p) = table.price(&model_id) {
            settings.price = Some(Price {
                input_per_mtok: p.prompt,
                cached_input_per_mtok: p.cached.unwrap_or(p.prompt),
                output_per_mtok: p.completion,
            });
        } else {
            eprintln!(
                "note: {} has no price for `{model_id}`; cost_usd stays null",
                prices.display()
            );
        }
    }
    let system = args.system.clone().unwrap_or(default_system);

    // Tasks: the release's, filtered; a replay runs only recorded tasks.
    let filter = args.tasks.as_deref().map(TaskFilter::new);
    // Question files are written once the task list is known not to be
    // empty: a refused run leaves no output folder behind.
    let questions_dir = args.out.join(".questions");
    let mut questions = Vec::new();
    let mut inputs = Vec::new();
    for task in release.tasks() {
        if filter.as_ref().is_some_and(|f| !f.matches(&task.task_id)) {
            continue;
        }
        match &kind {
            AgentKind::Replay(dir) if !dir.join(format!("{}.json", task.task_id)).is_file() => {
                continue
            }
            AgentKind::Scripted(file) if !file.scripts.contains_key(&task.task_id) => continue,
            _ => {}
        }
        // Python may read the public question, never the task file (which
        // holds the solution and ground truth).
        let question_path = questions_dir.join(format!("{}.md", task.task_id));
        questions.push((question_path.clone(), task.question.as_str()));
        inputs.push(TaskInput {
            task_id: task.task_id.clone(),
            event_id: task.event_id.clone(),
            question: task.question.clone(),
            package_root: release.task_package_dir(task),
            question_path: Some(question_path),
            scratch_dir: args.out.join("scratch"),
        });
    }
    // A perturbed release (App. A.3.3): each task's manifest is recorded.
    let perturbations: std::collections::BTreeMap<String, serde_json::Value> = inputs
        .iter()
        .filter_map(|input| {
            let manifest =
                earthverse_interventions::perturb::read_manifest(&args.release, &input.task_id)?;
            Some((input.task_id.clone(), serde_json::to_value(manifest).ok()?))
        })
        .collect();
    // Oracles (App. A.3.1): the leak-checked text is recorded in the run's
    // condition, and the controller shows it after the question (routing
    // on the question alone).
    let mut oracles = std::collections::BTreeMap::new();
    if let Some(kind) = args.condition.oracle {
        let tools = super::oracle::tool_descriptors()?;
        let reads = earthverse_interventions::ReferenceReads::for_oracle(
            &release,
            kind,
            Some(&inputs.iter().map(|i| i.task_id.clone()).collect()),
            args.python.as_deref(),
        );
        for input in &inputs {
            let Some(task) = release.task(&input.task_id) else {
                continue;
            };
            let task_reads = reads.as_ref().map(|r| r.of(task));
            let record = match earthverse_interventions::oracle_with_reads(
                task,
                kind,
                &tools,
                task_reads.as_ref(),
            ) {
                Ok(o) => serde_json::json!({"kind": kind.as_str(), "text": o.text}),
                Err(e) => {
                    eprintln!("note: {e}; the task runs without an oracle");
                    serde_json::json!({"kind": kind.as_str(), "text": null, "reason": e.to_string()})
                }
            };
            oracles.insert(input.task_id.clone(), record);
        }
    }
    if inputs.is_empty() {
        bail!(
            "no task of {} matches the filter and agent",
            args.release.display()
        );
    }
    std::fs::create_dir_all(&questions_dir)
        .with_context(|| format!("creating {}", questions_dir.display()))?;
    for (path, question) in &questions {
        std::fs::write(path, question).with_context(|| format!("writing {}", path.display()))?;
    }

    // The interpreter python_exec runs, recorded in every run (App. C.2:
    // 60 s per Python call, from the same settings object).
    let mut research_config = research_config;
    let (python, environment) = super::python_env::discover(args.python.clone())?;
    research_config.python.interpreter = python.interpreter;
    research_config.python.limits.wall = settings.budgets.python_timeout;
    settings.environment = Some(earthverse_agent_controller::RunEnvironment {
        python: environment,
        served_model: None,
    });
    let mut registry = Registry::with_research_tools(research_config);
    let mut catalogue_plan = condition.catalogue_plan();
    // A required environment's operations are always shown (App. A.4).
    if let (Some(plan), Some((_, tools))) = (catalogue_plan.as_mut(), env_tools.as_ref()) {
        plan.pinned = tools
            .iter()
            .map(|t| earthverse_tool_registry::Tool::name(t.as_ref()).to_string())
            .collect();
    }
    if args.domain_ops || args.require_suite.is_some() || catalogue_plan.is_some() {
        for tool in earthverse_domain_ops::all_operations() {
            registry
                .register(tool)
                .context("registering the domain operations")?;
        }
    }
    if let Some(name) = &args.require_suite {
        let suite = earthverse_domain_ops::suites::suite(name).with_context(|| {
            let names: Vec<&str> = earthverse_domain_ops::suites::SUITES
                .iter()
                .map(|s| s.name)
                .collect();
            format!(
                "--require-suite: unknown suite `{name}` (known: {})",
                names.join(", ")
            )
        })?;
        settings.required_tools = Some(earthverse_agent_controller::RequiredToolPolicy {
            specialist_tools: suite.operations.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        });
    }
    if let Some((slug, env_tools)) = env_tools {
        let names: Vec<String> = env_tools
            .iter()
            .map(|t| earthverse_tool_registry::Tool::name(t.as_ref()).to_string())
            .collect();
        for tool in env_tools {
            registry
                .register(tool)
                .context("registering the environment's operations")?;
        }
        settings.required_tools = Some(earthverse_agent_controller::RequiredToolPolicy {
            specialist_tools: names,
            label: Some(slug.to_string()),
            ..Default::default()
        });
        settings
            .condition
            .get_or_insert_with(Default::default)
            .required_environment = Some(slug.to_string());
    }
    let tools: Arc<dyn ToolBox> = match catalogue_plan {
        Some(plan) => Arc::new(PresentedToolBox::new(Arc::new(registry), plan)),
        None => Arc::new(registry),
    };
    let mut batch = BatchSettings::new(&args.out, &system);
    batch.concurrency = args.concurrency.max(1);
    batch.shard = shard;
    batch.limits = batch_limits(&args, &batch, settings.price)?;
    let solver: Arc<dyn Solver> = Arc::new(Factory {
        kind,
        limits: batch.limits.clone(),
        tools,
        settings,
        model_id,
        oracles,
        perturbations,
    });
    let progress = Arc::new(Progress::new(args.quiet));
    let summary = run_batch(inputs, solver, batch.clone(), progress.clone()).await?;
    progress.finish();
    println!(
        "{}: {} task(s) in shard; ran {} ok, {} error; {} already done; {} locked by another process; cost ${:.4}; records in {}{}",
        system,
        summary.planned,
        summary.ok,
        summary.error,
        summary.already_done,
        summary.locked,
        summary.cost_usd,
        batch.system_dir().display(),
        super::inputs::skipped_note(&skipped)
    );
    if summary.stopped > 0 {
        if let Some(limits) = &batch.limits {
            let ledger = limits.ledger()?;
            println!(
                "stopped by the batch cost cap: {} task(s) not run; the batch spent ${:.6} over {} request(s) (ledger {})",
                summary.stopped,
                ledger.spent_usd,
                ledger.settled_requests,
                limits.ledger_path().display()
            );
        }
        return Ok(ExitCode::from(4));
    }
    Ok(if summary.locked > 0 {
        ExitCode::from(3)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--max-batch-cost` and `--max-request-rate`: limits over the ledger in
/// the system directory every shard of the batch shares.
fn batch_limits(
    args: &Args,
    batch: &BatchSettings,
    price: Option<Price>,
) -> anyhow::Result<Option<Arc<SharedLimits>>> {
    if args.max_batch_cost.is_none() && args.max_request_rate.is_none() {
        return Ok(None);
    }
    let rate = args
        .max_request_rate
        .as_deref()
        .map(str::parse::<RequestRate>)
        .transpose()
        .context("--max-request-rate")?;
    let config = LimitsConfig {
        cost_cap_usd: args.max_batch_cost,
        rate,
        price,
    };
    let limits = SharedLimits::new(batch.system_dir(), config).context("--max-batch-cost")?;
    Ok(Some(Arc::new(limits)))
}

fn parse_agent(args: &Args) -> anyhow::Result<(AgentKind, String, String, ResearchToolsConfig)> {
    let (kind, rest) = args
        .agent
        .split_once(':')
        .unwrap_or((args.agent.as_str(), ""));
    Ok(match kind {
        "baseline" => (
            AgentKind::Baseline,
            "baseline".into(),
            "baseline".into(),
            ResearchToolsConfig::default(),
        ),
        "replay" => {
            let dir = PathBuf::from(rest);
            if !dir.is_dir() {
                bail!(
                    "--agent replay:DIR: {} is not a directory of recorded runs",
                    dir.display()
                );
            }
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "replay".into());
            (
                AgentKind::Replay(dir),
                format!("replay:{name}"),
                format!("replay-{name}"),
                // File tools refuse what the reference refused.
                ResearchToolsConfig::reference(),
            )
        }
        "scripted" if !rest.is_empty() => {
            let file = ScriptFile::load(std::path::Path::new(rest))?;
            let id = file.model_id.clone();
            (
                AgentKind::Scripted(file),
                id.clone(),
                id,
                ResearchToolsConfig::default(),
            )
        }
        "openai" if !rest.is_empty() => {
            let mut config = match &args.base_url {
                Some(url) => OpenAiConfig::local(rest, url.clone()),
                None => OpenAiConfig::openai(rest),
            };
            if let Some(var) = &args.api_key_env {
                config.api_key_env = Some(var.clone());
            }
            let model = OpenAiCompatible::new(config)?;
            let id = model.model_id().to_string();
            (
                AgentKind::Live(Arc::new(model)),
                id,
                format!("openai-{rest}"),
                ResearchToolsConfig::default(),
            )
        }
        "anthropic" if !rest.is_empty() => {
            let mut config = AnthropicConfig::anthropic(rest);
            if let Some(url) = &args.base_url {
                config.base_url = url.clone();
                if args.api_key_env.is_none() {
                    config.api_key_env = None;
                }
            }
            if let Some(var) = &args.api_key_env {
                config.api_key_env = Some(var.clone());
            }
            let model = AnthropicMessages::new(config)?;
            let id = model.model_id().to_string();
            (
                AgentKind::Live(Arc::new(model)),
                id,
                format!("anthropic-{rest}"),
                ResearchToolsConfig::default(),
            )
        }
        _ => bail!(
            "--agent must be baseline, replay:DIR, scripted:FILE, openai:MODEL or anthropic:MODEL, not `{}`",
            args.agent
        ),
    })
}

/// `--tasks`: comma-separated ids or `*` patterns.
struct TaskFilter(Vec<String>);

impl TaskFilter {
    fn new(spec: &str) -> Self {
        Self(
            spec.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect(),
        )
    }
    fn matches(&self, id: &str) -> bool {
        self.0.iter().any(|p| wildcard(p, id))
    }
}

fn wildcard(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == text;
    }
    let mut rest = text;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// The progress bar: done/failed, ETA, running cost.
struct Progress {
    bar: ProgressBar,
    state: Mutex<(usize, usize, f64)>,
}

impl Progress {
    fn new(quiet: bool) -> Self {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::new(0)
        };
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} eta {eta} {msg}",
        ) {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(250));
        Self {
            bar,
            state: Mutex::new((0, 0, 0.0)),
        }
    }
    fn finish(&self) {
        self.bar.finish();
    }
}

impl BatchObserver for Progress {
    fn planned(&self, tasks: usize, already_done: usize) {
        self.bar.set_length(tasks as u64);
        self.bar.set_position(0);
        self.bar.set_message(format!("{already_done} already done"));
    }
    fn finished(&self, outcome: &BatchTaskSummary) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        match outcome.status {
            TaskStatus::Error => state.1 += 1,
            _ => state.0 += 1,
        }
        state.2 += outcome.cost_usd.unwrap_or(0.0);
        self.bar.inc(1);
        self.bar.set_message(format!(
            "done {} failed {} cost ${:.4}",
            state.0, state.1, state.2
        ));
    }
}

/// The tools of `--require-environment`, after detecting the environment
/// with the interpreter python_exec will use; `None` without the flag.
async fn required_environment(
    args: &Args,
) -> anyhow::Result<Option<(&'static str, Vec<Arc<dyn earthverse_tool_registry::Tool>>)>> {
    let Some(name) = &args.require_environment else {
        return Ok(None);
    };
    let (mut config, _) = earthverse_tool_registry::PythonConfig::discover(args.python.clone());
    config.limits.wall = earthverse_agent_controller::ControllerSettings::default()
        .budgets
        .python_timeout;
    let settings = Arc::new(earthverse_environments::EnvironmentSettings {
        python: config,
        path: None,
    });
    let tools = earthverse_environments::tools(name, settings)
        .await
        .context("--require-environment")?;
    let slug = earthverse_environments::environment(name)
        .map(|e| e.slug)
        .unwrap_or("unknown");
    Ok(Some((slug, tools)))
}
