//! `earthverse study run` and `earthverse study report`: a controlled study
//! (paper §5.2, App. A; Tables 3, 4, 6) from one manifest. Manifests, task
//! draws, shared runs, diagnostics and the report are `earthverse-study`'s;
//! the tables are rendered by `earthverse-report`. Here: the arguments,
//! running each condition through `earthverse run`, and scoring each folder
//! of runs through `earthverse score`.

use super::run::{Args as RunArgs, ConditionArgs};
use super::score::{run_score, ScoreArgs};
use super::stats::load_records_file;
use anyhow::{bail, Context};
use earthverse_agent_controller::Condition;
use earthverse_package_model::Release;
use earthverse_stats_bootstrap::BootstrapConfig;
use earthverse_study::{
    build_report, load_manifest, not_applicable_tasks, oracle_of, perturbation_of,
    perturbed_release, read_study, resolve_study, select_release_tasks, study_diagnostics,
    study_not_applicable, write_study, ReportSettings,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;

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
    /// Base URL of the model server (as for `earthverse run`).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Environment variable holding the API key.
    #[arg(long)]
    pub api_key_env: Option<String>,
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
    /// Base URL of the judge endpoint.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Environment variable holding the judge's API key.
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Print the report as JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Also write the report as a self-contained HTML page.
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Bootstrap resamples (App. C.5: 5,000).
    #[arg(long, default_value_t = earthverse_stats_bootstrap::PAPER_RESAMPLES)]
    pub resamples: usize,
    /// Bootstrap seed (App. C.5: 2026).
    #[arg(long, default_value_t = earthverse_stats_bootstrap::PAPER_SEED)]
    pub seed: u64,
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

/// Runs `earthverse study run`.
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
    let mut draw = select_release_tasks(&release, &release_root, &manifest.tasks)
        .with_context(|| format!("drawing the study's tasks from {}", release_root.display()))?;
    draw.skipped_task_files = skipped.iter().map(ToString::to_string).collect();
    let study = resolve_study(&args.out, &manifest, &release_root, &args.agent, draw)?;
    write_study(&args.out, &study)?;
    let tasks = study.tasks();
    eprintln!(
        "study {}: {} condition(s) x {} task(s) into {}{}",
        study.name,
        study.conditions.len(),
        tasks.len(),
        args.out.display(),
        super::inputs::skipped_note(&skipped)
    );
    let mut worst = ExitCode::SUCCESS;
    let mut done = BTreeSet::new();
    for c in &study.conditions {
        let name = &c.condition.name;
        let shared = format!(" reuses the runs of runs/{}", c.runs);
        let note = if c.is_shared() { shared.as_str() } else { "" };
        eprintln!("study {}: condition {name}{note}", study.name);
        if !done.insert(c.runs.clone()) {
            continue;
        }
        let record = &c.condition.condition;
        let condition = Condition::from_record(record)?;
        let (condition_release, run_tasks) =
            match perturbation_of(record).map_err(anyhow::Error::msg)? {
                None => (release_root.clone(), tasks.to_vec()),
                Some(kind) => {
                    let path = perturbed_release(&args.out, &release, kind, tasks)?;
                    // Tasks with no valid target leave this condition's pairs.
                    let excluded = not_applicable_tasks(&path, tasks);
                    if !excluded.is_empty() {
                        eprintln!(
                            "study {}: condition {name}: {} of {} task(s) not applicable \
                             (left out of its pairs; reasons in {}/perturbations/)",
                            study.name,
                            excluded.len(),
                            tasks.len(),
                            path.display()
                        );
                    }
                    let kept: Vec<String> = tasks
                        .iter()
                        .filter(|t| !excluded.contains_key(*t))
                        .cloned()
                        .collect();
                    (path, kept)
                }
            };
        if run_tasks.is_empty() {
            continue;
        }
        let run_args = RunArgs {
            release: condition_release,
            agent: args.agent.clone(),
            tasks: Some(run_tasks.join(",")),
            concurrency: args.concurrency,
            shard: args.shard.clone(),
            base_url: args.base_url.clone(),
            api_key_env: args.api_key_env.clone(),
            out: args.out.join("runs"),
            system: Some(c.runs.clone()),
            protocol: args.protocol.clone(),
            condition: ConditionArgs {
                oracle: oracle_of(record).map_err(anyhow::Error::msg)?,
                ..ConditionArgs::from_condition(&condition)
            },
            prices: args.prices.clone(),
            quiet: args.quiet,
            domain_ops: false,
            python: args.python.clone(),
            require_suite: None,
            require_environment: record.required_environment.clone(),
            shard_from_env: args.shard_from_env,
            max_batch_cost: args.max_batch_cost,
            max_request_rate: args.max_request_rate.clone(),
            skip: args.skip,
        };
        let code = super::run::run(run_args)
            .with_context(|| format!("study {}: condition {name}", study.name))?;
        if code != ExitCode::SUCCESS {
            worst = code;
        }
    }
    Ok(worst)
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
    let folders: BTreeSet<&str> = study.conditions.iter().map(|c| c.runs.as_str()).collect();
    let mut scored = BTreeMap::new();
    for folder in folders {
        let runs = args.dir.join("runs").join(folder);
        if !runs.is_dir() {
            continue;
        }
        let scores = args.dir.join("scores").join(format!("{folder}.jsonl"));
        std::fs::create_dir_all(args.dir.join("scores"))
            .with_context(|| format!("creating {}", args.dir.join("scores").display()))?;
        let code = run_score(ScoreArgs {
            release_root: study.release.clone(),
            runs,
            judge: args.judge.clone(),
            base_url: args.base_url.clone(),
            api_key_env: args.api_key_env.clone(),
            cache: Some(args.dir.join("judge-cache")),
            out: scores.clone(),
            restart: false,
            jobs: 4,
            max_judge_attempts: earthverse_rubric_judge::DEFAULT_MAX_JUDGE_ATTEMPTS,
            units: "judge".into(),
            compare_published: false,
            compare_json: None,
            quiet: true,
            // A folder may hold planned runs of another study; whether
            // this study's own runs are all there is build_report's check.
            allow_partial: true,
            // The task files `study run` skipped are named in the report.
            skip: super::inputs::SkipInvalid {
                skip_invalid: !study.draw.skipped_task_files.is_empty(),
            },
        })
        .with_context(|| format!("scoring the runs of runs/{folder}"))?;
        if code != ExitCode::SUCCESS {
            bail!("scoring runs/{folder} did not finish; rerun the report");
        }
        if scores.is_file() && std::fs::metadata(&scores)?.len() > 0 {
            scored.insert(folder.to_string(), load_records_file(&scores)?.outcomes);
        }
    }
    let settings = ReportSettings {
        bootstrap: BootstrapConfig {
            resamples: args.resamples,
            seed: args.seed,
            ..BootstrapConfig::default()
        },
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
        super::inputs::write_atomic(path, |file| {
            std::io::Write::write_all(file, html.as_bytes())?;
            Ok(())
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
