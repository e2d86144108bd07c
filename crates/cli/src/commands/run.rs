//! `earthverse run`: run an agent over the tasks of a release (App. C.2, E)
//! with the batch runner of `earthverse-agent-controller` (resume, per-task
//! locks, `--shard K/N`, atomic records, progress bar with cost).

use anyhow::{bail, Context};
use earthverse_agent_controller::batch::{BatchObserver, BatchTaskSummary, Shard, TaskStatus};
use earthverse_agent_controller::cluster::shard_from_env;
use earthverse_agent_controller::limits::RequestRate;
use earthverse_agent_controller::{AnswerMode, Condition, Protocol};
use earthverse_harness::{AgentSpec, RunOutcome, RunRequest, TaskFilter};
use earthverse_model_provider::Endpoint;
use earthverse_package_model::Release;
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
    /// The model server: an OpenAI-compatible or Anthropic endpoint (e.g.
    /// `--base-url http://127.0.0.1:8080/v1` for vLLM, llama.cpp or Ollama);
    /// the API key variable defaults to `OPENAI_API_KEY` /
    /// `ANTHROPIC_API_KEY`, and with `--base-url` and no `--api-key-env` no
    /// key is sent.
    #[command(flatten)]
    pub endpoint: Endpoint,
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
    /// a final answer is accepted. Suites: `native_meteo`,
    /// `native_indices`, `native_grid` (our own Rust operations, not MetPy,
    /// xclim or CDO: those are `--require-environment`; the former names
    /// `metpy_like`, `xclim_like`, `cdo_like` still work).
    #[arg(long)]
    pub require_suite: Option<String>,
    /// Unloadable task files: an error, or skipped and named.
    #[command(flatten)]
    pub skip: super::inputs::SkipInvalid,
}

/// The condition flags of `earthverse run` (and of each condition of a
/// study manifest): the library's [`Condition`] itself, plus the
/// `--review` shorthand. Every flag left out keeps the paper's default and
/// is absent from the run's `condition` record; every flag given is
/// recorded as written. Which numbers the paper fixes and which are ours:
/// `docs/GUIDE.md` "Experimental conditions" and the
/// `earthverse_agent_controller::conditions` docs.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ConditionArgs {
    /// The condition.
    #[command(flatten)]
    pub condition: Condition,
    /// Run the App. E final evidence review (same as
    /// `--answer-mode interactive+review`).
    #[arg(long)]
    pub review: bool,
}

impl ConditionArgs {
    /// The typed condition, `--review` folded into the answer mode.
    pub fn condition(&self) -> anyhow::Result<Condition> {
        let mut condition = self.condition.clone();
        condition.answer_mode = match (condition.answer_mode, self.review) {
            (Some(mode), true) if mode != AnswerMode::InteractiveReview => bail!(
                "--review contradicts --answer-mode {mode}; use --answer-mode interactive+review"
            ),
            (None, true) => Some(AnswerMode::InteractiveReview),
            (mode, _) => mode,
        };
        Ok(condition)
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

/// The library request of these arguments: every flag parsed and mapped
/// onto `earthverse_harness::RunRequest` here, in one place.
pub(super) fn request_of(args: &Args) -> anyhow::Result<RunRequest> {
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
    let protocol = match args.protocol.as_str() {
        "json" => Protocol::JsonInMessage,
        "native" => Protocol::NativeTools,
        other => bail!("--protocol must be `json` or `native`, not `{other}`"),
    };
    let agent = AgentSpec::parse(&args.agent, &args.endpoint)?;
    let mut request = RunRequest::new(agent, &args.out);
    request.system = args.system.clone();
    request.tasks = args.tasks.as_deref().map(TaskFilter::parse).transpose()?;
    request.condition = condition;
    request.protocol = protocol;
    request.concurrency = args.concurrency.max(1);
    request.shard = shard;
    request.prices = args.prices.clone();
    request.max_batch_cost = args.max_batch_cost;
    request.max_request_rate = args
        .max_request_rate
        .as_deref()
        .map(str::parse::<RequestRate>)
        .transpose()
        .context("--max-request-rate")?;
    request.domain_ops = args.domain_ops;
    request.require_suite = args.require_suite.clone();
    request.python = args.python.clone();
    Ok(request)
}

async fn run_async(args: Args) -> anyhow::Result<ExitCode> {
    let release = Release::load(&args.release)
        .with_context(|| format!("loading the release at {}", args.release.display()))?;
    let skipped = args.skip.check(&release, "run")?;
    let request = request_of(&args)?;
    let prepared = earthverse_harness::prepare(&release, request).await?;
    for note in &prepared.notes {
        eprintln!("{note}");
    }
    let progress = Arc::new(Progress::new(args.quiet));
    let outcome = prepared.run(progress.clone()).await?;
    progress.finish();
    report_outcome(&outcome, &super::inputs::skipped_note(&skipped))
}

/// Prints a batch's summary line (and what a cost cap stopped) and gives
/// the command's exit code: 4 when a cost cap stopped tasks, 3 when tasks
/// were locked by another process, else 0.
pub(super) fn report_outcome(outcome: &RunOutcome, skipped_note: &str) -> anyhow::Result<ExitCode> {
    let summary = &outcome.summary;
    println!(
        "{}: {} task(s) in shard; ran {} ok, {} error; {} already done; {} locked by another process; cost ${:.4}; records in {}{}",
        outcome.system,
        summary.planned,
        summary.ok,
        summary.error,
        summary.already_done,
        summary.locked,
        summary.cost_usd,
        outcome.system_dir.display(),
        skipped_note
    );
    if summary.unwritten > 0 {
        let tasks: Vec<&str> = summary
            .outcomes
            .iter()
            .filter(|o| o.status == TaskStatus::Unwritten)
            .map(|o| o.task_id.as_str())
            .collect();
        println!(
            "{} run(s) whose record could not be written under {} (see the errors above): {}; \
             free the space or fix the folder and rerun the same command to run them again",
            summary.unwritten,
            outcome.system_dir.display(),
            tasks.join(", ")
        );
        return Ok(ExitCode::from(5));
    }
    if summary.stopped > 0 {
        if let Some(limits) = &outcome.limits {
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

/// The progress bar: done/failed, ETA, running cost.
pub(super) struct Progress {
    bar: ProgressBar,
    state: Mutex<(usize, usize, f64)>,
}

impl Progress {
    pub(super) fn new(quiet: bool) -> Self {
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
    pub(super) fn finish(&self) {
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
            TaskStatus::Error | TaskStatus::Unwritten => state.1 += 1,
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
