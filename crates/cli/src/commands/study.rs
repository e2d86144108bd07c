//! `earthverse study run` and `earthverse study report`: a controlled study
//! (paper §5.2, App. A; Tables 3, 4, 6) from one manifest. Manifests, task
//! draws, shared runs, diagnostics and the report are `earthverse-study`'s;
//! the tables are rendered by `earthverse-report`; the conditions run
//! through `earthverse_study::run_study`; the runs are scored by
//! `earthverse_study::score_study`. Here: the arguments and
//! printing.

use super::run::{Args as RunArgs, ConditionArgs, Progress};
use anyhow::Context;
use earthverse_agent_controller::batch::BatchObserver;
use earthverse_harness::RunOutcome;
use earthverse_model_provider::Endpoint;
use earthverse_package_model::Release;
use earthverse_rubric_judge::JudgeChoice;
use earthverse_stats_bootstrap::BootstrapConfig;
use earthverse_study::{
    build_report, load_manifest, read_study, score_study, study_diagnostics, study_not_applicable,
    ReportSettings, StudyObserver, StudyRunSettings,
};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

/// `earthverse study ...`.
#[derive(Debug, clap::Subcommand)]
pub enum StudyCommand {
    /// Run every condition of a study manifest over its tasks.
    Run(StudyRunArgs),
    /// Score a study's runs and print its table (Tables 3, 4, 6 shape).
    Report(StudyReportArgs),
}

/// Arguments of `earthverse study run`.
#[derive(Debug, clap::Args)]
pub struct StudyRunArgs {
    /// The study manifest (`.toml` or `.json`), e.g. `studies/table6-system-ablations.toml`.
    pub manifest: PathBuf,
    /// The release to run on (overrides the manifest's `release`).
    #[arg(long)]
    pub release: Option<PathBuf>,
    /// The agent, as for `earthverse run` (`baseline`, `scripted:FILE`,
    /// `openai:MODEL`, `anthropic:MODEL`, `replay:DIR`).
    #[arg(long)]
    pub agent: String,
    /// Study directory: `studies/<study>.json`, `runs/<condition>/<task>/`,
    /// scores. Several studies may share one; identical conditions share
    /// their runs.
    #[arg(long)]
    pub out: PathBuf,
    /// Tasks run at once within a condition.
    #[arg(long, default_value_t = 4)]
    pub concurrency: usize,
    /// Run only shard K of N of every condition (stable hash of the task id).
    #[arg(long)]
    pub shard: Option<String>,
    /// The model server (as for `earthverse run`).
    #[command(flatten)]
    pub endpoint: Endpoint,
    /// Tool protocol: `json` (reference) or `native`.
    #[arg(long, default_value = "json")]
    pub protocol: String,
    /// Price table for `cost_usd` (as for `earthverse run`).
    #[arg(long)]
    pub prices: Option<PathBuf>,
    /// Python interpreter of `python_exec`.
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// Do not draw progress bars.
    #[arg(long)]
    pub quiet: bool,
    /// Take the shard from the cluster's environment (Slurm array or
    /// Kubernetes Indexed Job), as `earthverse run --shard-from-env`.
    #[arg(long)]
    pub shard_from_env: bool,
    /// Cost cap in USD of each condition's batch, shared by all shards.
    #[arg(long, value_name = "USD")]
    pub max_batch_cost: Option<f64>,
    /// Request-rate cap of each condition's batch (`N/s`, `N/min`, ...).
    #[arg(long, value_name = "N/UNIT")]
    pub max_request_rate: Option<String>,
    /// Unloadable task files: an error, or skipped and named in the
    /// summary and in the study's report.
    #[command(flatten)]
    pub skip: super::inputs::SkipInvalid,
}

/// Arguments of `earthverse study report`.
#[derive(Debug, clap::Args)]
pub struct StudyReportArgs {
    /// The study directory written by `study run`.
    pub dir: PathBuf,
    /// Which study of the directory (needed when it holds several).
    #[arg(long)]
    pub study: Option<String>,
    /// Judge for the scores (as for `earthverse score`).
    #[arg(long, default_value = "deterministic")]
    pub judge: String,
    /// The judge's endpoint.
    #[command(flatten)]
    pub endpoint: Endpoint,
    /// Print the report as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write the report as a self-contained HTML page.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// The paired bootstrap of the report's differences.
    #[command(flatten)]
    pub bootstrap: BootstrapConfig,
    /// Tie margin of win / tie / loss, in Core points (ours; Fig. 7).
    #[arg(long, default_value_t = earthverse_stats_bootstrap::PAIRWISE_TIE_MARGIN)]
    pub tie_margin: f64,
    /// Also print the opponent-balanced win / tie / loss of every condition
    /// against all the others (Fig. 7).
    #[arg(long)]
    pub all_pairs: bool,
    /// Report a study with missing runs, each counted as a failure scored
    /// zero (§4.1); without it an incomplete study is refused.
    #[arg(long)]
    pub allow_partial: bool,
}

/// Runs `earthverse study run`: the arguments mapped onto the library's
/// [`run_study`] (the same mapping as `earthverse run`'s), its notes and
/// each condition's summary printed.
pub fn run_study(args: StudyRunArgs) -> anyhow::Result<ExitCode> {
    let manifest = load_manifest(&args.manifest)?;
    let release_root = args
        .release
        .clone()
        .or_else(|| manifest.release.clone())
        .context("no release: give --release or `release` in the manifest")?;
    let release = Release::load(&release_root)
        .with_context(|| format!("loading the release at {}", release_root.display()))?;
    super::inputs::refuse_output_on_inputs(
        "--out",
        &args.out,
        &[
            ("the release", &release_root),
            ("the release's packages", release.packages_root()),
        ],
        earthverse_package_model::Overlap::Outside,
    )?;
    let skipped = args.skip.check(&release, "study run")?;
    let run_args = RunArgs {
        release: release_root.clone(),
        agent: args.agent.clone(),
        tasks: None,
        concurrency: args.concurrency,
        shard: args.shard.clone(),
        endpoint: args.endpoint.clone(),
        out: args.out.join("runs"),
        system: None,
        protocol: args.protocol.clone(),
        condition: ConditionArgs::default(),
        prices: args.prices.clone(),
        quiet: args.quiet,
        domain_ops: false,
        python: args.python.clone(),
        require_suite: None,
        shard_from_env: args.shard_from_env,
        max_batch_cost: args.max_batch_cost,
        max_request_rate: args.max_request_rate.clone(),
        skip: args.skip,
    };
    let settings = StudyRunSettings {
        release_root,
        out: args.out.clone(),
        agent_name: args.agent.clone(),
        template: super::run::request_of(&run_args)?,
        skipped_task_files: skipped.iter().map(ToString::to_string).collect(),
    };
    let printer = StudyPrinter {
        quiet: args.quiet,
        worst: Mutex::new(Ok(ExitCode::SUCCESS)),
        skipped_note: super::inputs::skipped_note(&skipped),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let outcome = runtime.block_on(earthverse_study::run_study(
        &manifest, &release, settings, &printer,
    ));
    let name = &manifest.name;
    outcome.with_context(|| format!("study {name}"))?;
    printer
        .worst
        .into_inner()
        .map_err(|_| anyhow::anyhow!("study {name}: a condition's summary panicked"))?
}

/// Prints a study run's notes to stderr and each condition's summary as
/// `earthverse run` does, keeping the worst exit code.
struct StudyPrinter {
    quiet: bool,
    worst: Mutex<anyhow::Result<ExitCode>>,
    skipped_note: String,
}

impl StudyObserver for StudyPrinter {
    fn note(&self, line: &str) {
        eprintln!("{line}");
    }
    fn batch_observer(&self, _condition: &str) -> Arc<dyn BatchObserver> {
        Arc::new(Progress::new(self.quiet))
    }
    fn condition_finished(&self, _condition: &str, outcome: &RunOutcome) {
        let code = super::run::report_outcome(outcome, &self.skipped_note);
        if let Ok(mut worst) = self.worst.lock() {
            match (&*worst, code) {
                (Err(_), _) => {}
                (_, Err(e)) => *worst = Err(e),
                (Ok(w), Ok(c)) if *w == ExitCode::SUCCESS && c != ExitCode::SUCCESS => {
                    *worst = Ok(c)
                }
                _ => {}
            }
        }
    }
}

/// Runs `earthverse study report`: scores each folder of runs the study
/// reads (once, however many conditions share it), then builds, prints and
/// optionally writes the report.
pub fn report_study(args: StudyReportArgs) -> anyhow::Result<ExitCode> {
    let study = read_study(&args.dir, args.study.as_deref())?;
    super::inputs::refuse_output_on_inputs(
        "DIR",
        &args.dir,
        &[("the study's release", &study.release)],
        earthverse_package_model::Overlap::Outside,
    )?;
    if let Some(html) = &args.html {
        super::inputs::refuse_output_on_inputs(
            "--html",
            html,
            &[
                ("the study's release", &study.release),
                ("the study's runs", &args.dir.join("runs")),
                ("the study's records", &args.dir.join("studies")),
            ],
            earthverse_package_model::Overlap::Outside,
        )?;
    }
    // The study's task files that `study run` skipped are named in the
    // report; any other unloadable task file is an error.
    let release = Release::load(&study.release)
        .with_context(|| format!("loading the study's release {}", study.release.display()))?;
    let skipped = super::inputs::SkipInvalid {
        skip_invalid: !study.draw.skipped_task_files.is_empty(),
    }
    .check(&release, "study report")?;
    let judge = match super::score::judge_model(&args.judge, &args.endpoint)? {
        None => JudgeChoice::Deterministic,
        Some(model) => JudgeChoice::Llm {
            model,
            cache_dir: args.dir.join("judge-cache"),
            max_attempts: earthverse_rubric_judge::DEFAULT_MAX_JUDGE_ATTEMPTS,
        },
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let skipped_files: Vec<PathBuf> = skipped.iter().map(|e| e.path.clone()).collect();
    let scored = runtime.block_on(score_study(
        &args.dir,
        &study,
        &release,
        judge,
        &skipped_files,
    ))?;
    let settings = ReportSettings {
        bootstrap: args.bootstrap,
        tie_margin: args.tie_margin,
        all_pairs: args.all_pairs,
        allow_partial: args.allow_partial,
        not_applicable: study_not_applicable(&args.dir, &study)?,
    };
    let diagnostics = study_diagnostics(&args.dir, &study)?;
    let report = build_report(&study, &scored, &diagnostics, &settings)?;
    for r in report.rows.iter().filter(|r| r.not_applicable > 0) {
        eprintln!(
            "study report: condition {}: {} of {} tasks not applicable, left out of its pairs",
            r.condition, r.not_applicable, report.tasks
        );
    }
    for r in report.rows.iter().filter(|r| r.missing_runs > 0) {
        eprintln!(
            "study report: condition {} lacks {} of {} runs; they count as failures",
            r.condition, r.missing_runs, report.tasks
        );
    }
    if let Some(path) = &args.html {
        let html = earthverse_report::render_study_html(&report);
        earthverse_package_model::output::write_atomic(path, |file| {
            std::io::Write::write_all(file, html.as_bytes())
        })?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", earthverse_report::render_study_text(&report));
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `earthverse study`.
pub fn run(command: StudyCommand) -> anyhow::Result<ExitCode> {
    match command {
        StudyCommand::Run(args) => run_study(args),
        StudyCommand::Report(args) => report_study(args),
    }
}
