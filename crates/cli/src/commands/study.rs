//! `earthverse study run` and `earthverse study report`: a whole controlled
//! study (paper §5.2, App. A.1–A.2; Tables 3, 6, 9, 12) from one manifest.
//!
//! A manifest (TOML or JSON) names a task manifest (ids, all tasks, or a
//! seeded difficulty-stratified draw as App. B describes), a reference
//! condition and the conditions, each with the keys of the `condition`
//! record (`answer_mode`, `reasoning_effort`, `catalogue`, `tool_names`,
//! `context`, `max_turns`, `task_time_s`, `temperature`, `seed`). `run`
//! runs the matrix through the batch runner (resume, per-task locks,
//! `--shard`) into `OUT/runs/<condition>/<task>/`; `report` scores every
//! condition and prints the paper's table shape: Answer, Process, Core,
//! Unit acc., ΔCore against the reference with its paired 95% bootstrap
//! interval (5,000 resamples, seed 2026; App. C.5), Core by capability,
//! and resources (Tables 9 and 12).

use super::run::{Args as RunArgs, ConditionArgs};
use super::score::{run_score, ScoreArgs};
use super::stats::load_records_file;
use anyhow::{bail, Context};
use earthverse_agent_controller::Condition;
use earthverse_package_model::{RecordedRun, Release, RunCondition};
use earthverse_stats_bootstrap::{
    compare, fill_missing_as_failures, leaderboard, slice_table, BootstrapConfig, LeaderboardRow,
    Metric, PairedDelta, SliceBy, SliceTable, TaskOutcome,
};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `earthverse study ...`.
#[derive(Debug, clap::Subcommand)]
pub enum StudyCommand {
    /// Run every condition of a study manifest over its tasks.
    Run(StudyRunArgs),
    /// Score a study's runs and print its table (Tables 3, 6, 9, 12 shape).
    Report(StudyReportArgs),
}

/// Arguments of `earthverse study run`.
#[derive(Debug, clap::Args)]
pub struct StudyRunArgs {
    /// The study manifest (`.toml` or `.json`), e.g. `studies/table6.toml`.
    pub manifest: PathBuf,
    /// The release to run on (overrides the manifest's `release`).
    #[arg(long)]
    pub release: Option<PathBuf>,
    /// The agent, as for `earthverse run` (`baseline`, `scripted:FILE`,
    /// `openai:MODEL`, `anthropic:MODEL`, `replay:DIR`).
    #[arg(long)]
    pub agent: String,
    /// Study directory: `study.json`, `runs/<condition>/<task>/`, scores.
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
}

/// Arguments of `earthverse study report`.
#[derive(Debug, clap::Args)]
pub struct StudyReportArgs {
    /// The study directory written by `study run`.
    pub dir: PathBuf,
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
    /// Report a study with missing runs, each counted as a failure scored
    /// zero (§4.1); without it an incomplete study is refused.
    #[arg(long)]
    pub allow_partial: bool,
}

/// The task manifest of a study.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSelection {
    /// Explicit task ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    /// Every task of the release.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
    /// A seeded difficulty-stratified draw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw: Option<StratifiedDraw>,
}

/// A difficulty-stratified draw (App. B: the study manifests are fixed,
/// difficulty-stratified subsets): `per_level` tasks of each difficulty
/// level, chosen by a ChaCha20 shuffle of the level's sorted ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StratifiedDraw {
    /// Tasks per difficulty level (all of a level when it has fewer).
    pub per_level: usize,
    /// Seed of the draw.
    pub seed: u64,
}

/// A study manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyManifest {
    /// Study name.
    pub name: String,
    /// What it reproduces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Release root (relative to the working directory); `--release`
    /// overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<PathBuf>,
    /// Which tasks.
    pub tasks: TaskSelection,
    /// Name of the reference condition for ΔCore.
    pub reference: String,
    /// The conditions: `name` plus condition keys.
    pub conditions: Vec<StudyCondition>,
}

/// One condition of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyCondition {
    /// Name: a directory name and a table label.
    pub name: String,
    /// The condition's keys (absent = the paper's default).
    #[serde(flatten)]
    pub condition: RunCondition,
}

/// `study.json`: the manifest resolved against a release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedStudy {
    /// Study name.
    pub name: String,
    /// Release root as given.
    pub release: PathBuf,
    /// The task ids, sorted.
    pub tasks: Vec<String>,
    /// Reference condition.
    pub reference: String,
    /// Conditions in manifest order.
    pub conditions: Vec<StudyCondition>,
}

const CONDITION_KEYS: [&str; 11] = [
    "oracle",
    "perturbation",
    "answer_mode",
    "reasoning_effort",
    "catalogue",
    "tool_names",
    "context",
    "max_turns",
    "task_time_s",
    "temperature",
    "seed",
];

/// Reads a manifest, checking every key and value, naming the file and
/// the condition of any problem.
pub fn load_manifest(path: &Path) -> anyhow::Result<StudyManifest> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading study manifest {}", path.display()))?;
    let value: Value = match path.extension().and_then(|e| e.to_str()) {
        Some("json") => serde_json::from_str(&text)
            .with_context(|| format!("{}: not valid JSON", path.display()))?,
        _ => {
            toml::from_str(&text).with_context(|| format!("{}: not valid TOML", path.display()))?
        }
    };
    for (i, entry) in value
        .get("conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = entry.get("name").and_then(Value::as_str).unwrap_or("?");
        for key in entry.as_object().into_iter().flat_map(|m| m.keys()) {
            if key != "name" && !CONDITION_KEYS.contains(&key.as_str()) {
                bail!(
                    "{}: condition {} (`{name}`): unknown key `{key}` (known: name, {})",
                    path.display(),
                    i + 1,
                    CONDITION_KEYS.join(", ")
                );
            }
        }
    }
    let manifest: StudyManifest = serde_json::from_value(value)
        .with_context(|| format!("{}: not a study manifest", path.display()))?;
    check_manifest(&manifest).with_context(|| format!("study manifest {}", path.display()))?;
    Ok(manifest)
}

fn check_manifest(manifest: &StudyManifest) -> anyhow::Result<()> {
    if manifest.conditions.is_empty() {
        bail!("it lists no condition");
    }
    let mut seen = BTreeSet::new();
    for c in &manifest.conditions {
        let safe = !c.name.is_empty()
            && c.name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_.+=".contains(ch));
        if !safe {
            bail!(
                "condition name `{}` must be non-empty ASCII letters, digits or - _ . + =",
                c.name
            );
        }
        if !seen.insert(c.name.as_str()) {
            bail!("condition name `{}` appears twice", c.name);
        }
        Condition::from_record(&c.condition).with_context(|| format!("condition `{}`", c.name))?;
        oracle_of(&c.condition).with_context(|| format!("condition `{}`", c.name))?;
        perturbation_of(&c.condition).with_context(|| format!("condition `{}`", c.name))?;
    }
    if !seen.contains(manifest.reference.as_str()) {
        bail!(
            "the reference `{}` is not one of the conditions",
            manifest.reference
        );
    }
    let t = &manifest.tasks;
    let ways = usize::from(!t.ids.is_empty()) + usize::from(t.all) + usize::from(t.draw.is_some());
    if ways != 1 {
        bail!("[tasks] must give exactly one of `ids`, `all = true` or `draw`");
    }
    Ok(())
}

/// The task ids a selection names in `release`, sorted.
pub fn select_tasks(release: &Release, selection: &TaskSelection) -> anyhow::Result<Vec<String>> {
    let known: BTreeSet<&str> = release.tasks().iter().map(|t| t.task_id.as_str()).collect();
    let mut ids: Vec<String> = if selection.all {
        known.iter().map(|s| s.to_string()).collect()
    } else if let Some(draw) = &selection.draw {
        let mut by_level: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for task in release.tasks() {
            let level = task
                .difficulty_level()
                .map_or_else(|| "unlabelled".to_string(), |l| l.as_str().to_string());
            by_level
                .entry(level)
                .or_default()
                .push(task.task_id.clone());
        }
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(draw.seed);
        let mut chosen = Vec::new();
        for ids in by_level.values_mut() {
            ids.sort();
            ids.shuffle(&mut rng);
            chosen.extend(ids.iter().take(draw.per_level).cloned());
        }
        chosen
    } else {
        for id in &selection.ids {
            if !known.contains(id.as_str()) {
                bail!("task `{id}` of [tasks].ids is not in the release");
            }
        }
        selection.ids.clone()
    };
    ids.sort();
    ids.dedup();
    if ids.is_empty() {
        bail!("the task selection names no task");
    }
    Ok(ids)
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
    let resolved = ResolvedStudy {
        name: manifest.name.clone(),
        release: release_root.clone(),
        tasks: select_tasks(&release, &manifest.tasks)?,
        reference: manifest.reference.clone(),
        conditions: manifest.conditions.clone(),
    };
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("creating {}", args.out.display()))?;
    let study_file = args.out.join("study.json");
    if study_file.is_file() {
        let previous = read_study(&args.out)?;
        if previous != resolved {
            bail!(
                "{} holds a different study (name, release, tasks or conditions changed); \
                 use a new --out directory",
                study_file.display()
            );
        }
    } else {
        earthverse_agent_controller::record::write_json_atomic(&study_file, &resolved)?;
    }
    eprintln!(
        "study {}: {} condition(s) x {} task(s) into {}",
        resolved.name,
        resolved.conditions.len(),
        resolved.tasks.len(),
        args.out.display()
    );
    let mut worst = ExitCode::SUCCESS;
    for c in &resolved.conditions {
        let condition = Condition::from_record(&c.condition)?;
        eprintln!("study {}: condition {}", resolved.name, c.name);
        // A perturbation condition runs on a perturbed copy of the
        // manifest's tasks, made once under OUT/releases/<kind>.
        let condition_release = match perturbation_of(&c.condition)? {
            None => release_root.clone(),
            Some(kind) => {
                let path = args.out.join("releases").join(kind.as_str());
                if !path.join("perturbations").is_dir() {
                    let _ = std::fs::remove_dir_all(&path);
                    let tasks: BTreeSet<String> = resolved.tasks.iter().cloned().collect();
                    earthverse_interventions::perturb_release(
                        &release,
                        kind,
                        STUDY_PERTURBATION_SEED,
                        &path,
                        Some(&tasks),
                    )
                    .with_context(|| format!("perturbing the release for condition {}", c.name))?;
                }
                path
            }
        };
        let run_args = RunArgs {
            release: condition_release,
            agent: args.agent.clone(),
            tasks: Some(resolved.tasks.join(",")),
            concurrency: args.concurrency,
            shard: args.shard.clone(),
            base_url: args.base_url.clone(),
            api_key_env: args.api_key_env.clone(),
            out: args.out.join("runs"),
            system: Some(c.name.clone()),
            protocol: args.protocol.clone(),
            condition: ConditionArgs {
                oracle: oracle_of(&c.condition)?,
                ..ConditionArgs::from_condition(&condition)
            },
            prices: args.prices.clone(),
            quiet: args.quiet,
            domain_ops: false,
            python: args.python.clone(),
            require_suite: None,
            shard_from_env: args.shard_from_env,
            max_batch_cost: args.max_batch_cost,
            max_request_rate: args.max_request_rate.clone(),
        };
        let code = super::run::run(run_args)
            .with_context(|| format!("study {}: condition {}", resolved.name, c.name))?;
        if code != ExitCode::SUCCESS {
            worst = code;
        }
    }
    Ok(worst)
}

/// The kind a manifest condition names for `key` (`oracle = "plan"`,
/// `perturbation = "missing"`).
fn kind_of<K: std::str::FromStr<Err = String>>(
    key: &str,
    value: &Option<Value>,
) -> anyhow::Result<Option<K>> {
    match value {
        None => Ok(None),
        Some(Value::String(kind)) => Ok(Some(kind.parse().map_err(anyhow::Error::msg)?)),
        Some(other) => bail!("{key} must be a kind name, not {other}"),
    }
}

/// The oracle kind of a manifest condition.
fn oracle_of(
    condition: &RunCondition,
) -> anyhow::Result<Option<earthverse_interventions::OracleKind>> {
    kind_of("oracle", &condition.oracle)
}

/// The perturbation of a manifest condition.
fn perturbation_of(
    condition: &RunCondition,
) -> anyhow::Result<Option<earthverse_interventions::PerturbationKind>> {
    kind_of("perturbation", &condition.perturbation)
}

/// Seed of the perturbed releases a study makes (App. C.5's seed).
pub const STUDY_PERTURBATION_SEED: u64 = 2026;

fn read_study(dir: &Path) -> anyhow::Result<ResolvedStudy> {
    let path = dir.join("study.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading {} (is this a study directory?)", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{}: not a study file", path.display()))
}

/// Per-task means of one condition's trajectories (Tables 9 and 12).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// Runs found.
    pub runs: usize,
    /// Model rounds.
    pub rounds: f64,
    /// Tool calls.
    pub tool_calls: f64,
    /// Share of tool calls that returned normally, in percent (`None`
    /// without calls).
    pub tool_success_pct: Option<f64>,
    /// `list_package_files` calls.
    pub lists: f64,
    /// `search_package_files` calls.
    pub searches: f64,
    /// File reads (`read_text_file`, `summarize_table_or_json`,
    /// `inspect_image`).
    pub reads: f64,
    /// Distinct evidence files.
    pub files: f64,
    /// `python_exec` calls.
    pub python_calls: f64,
    /// Prompt tokens.
    pub prompt_tokens: f64,
    /// Completion tokens.
    pub completion_tokens: f64,
    /// Total tokens.
    pub total_tokens: f64,
    /// Latency in seconds.
    pub latency_s: f64,
}

/// The resources of the runs of `tasks` under `dir` (`<task>/trajectory.json`).
pub fn resources(dir: &Path, tasks: &[String]) -> anyhow::Result<Resources> {
    let mut sums = Resources::default();
    let (mut calls_ok, mut calls_all) = (0usize, 0usize);
    for task in tasks {
        let path = dir.join(task).join("trajectory.json");
        if !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let run: RecordedRun = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a run record", path.display()))?;
        let d = &run.diagnostics;
        let count = |names: &[&str]| {
            run.tool_calls
                .iter()
                .filter(|c| names.contains(&c.tool.as_str()))
                .count() as f64
        };
        sums.runs += 1;
        sums.rounds += d.model_rounds.unwrap_or(0) as f64;
        sums.tool_calls += run.tool_calls.len() as f64;
        calls_all += run.tool_calls.len();
        calls_ok += run.tool_calls.iter().filter(|c| c.ok == Some(true)).count();
        sums.lists += count(&["list_package_files"]);
        sums.searches += count(&["search_package_files"]);
        sums.reads += count(&["read_text_file", "summarize_table_or_json", "inspect_image"]);
        sums.files += d.unique_evidence_files.unwrap_or(0) as f64;
        sums.python_calls += count(&["python_exec"]);
        sums.prompt_tokens += d.prompt_tokens.unwrap_or(0) as f64;
        sums.completion_tokens += d.completion_tokens.unwrap_or(0) as f64;
        sums.total_tokens += d.total_tokens().unwrap_or(0) as f64;
        sums.latency_s += d.latency_s.unwrap_or(0.0);
    }
    let n = sums.runs.max(1) as f64;
    Ok(Resources {
        runs: sums.runs,
        rounds: sums.rounds / n,
        tool_calls: sums.tool_calls / n,
        tool_success_pct: (calls_all > 0).then(|| 100.0 * calls_ok as f64 / calls_all as f64),
        lists: sums.lists / n,
        searches: sums.searches / n,
        reads: sums.reads / n,
        files: sums.files / n,
        python_calls: sums.python_calls / n,
        prompt_tokens: sums.prompt_tokens / n,
        completion_tokens: sums.completion_tokens / n,
        total_tokens: sums.total_tokens / n,
        latency_s: sums.latency_s / n,
    })
}

/// One condition's line of the study table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConditionRow {
    /// Condition name.
    pub condition: String,
    /// The condition record.
    pub settings: RunCondition,
    /// Scores (Answer, Process, Core, Unit acc., Strict@95; failures).
    pub scores: LeaderboardRow,
    /// ΔCore against the reference with its paired interval (`None` for
    /// the reference itself).
    pub delta_core: Option<PairedDelta>,
    /// Trajectory resources.
    pub resources: Resources,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyReport {
    /// Study name.
    pub study: String,
    /// Tasks in the manifest.
    pub tasks: usize,
    /// Reference condition.
    pub reference: String,
    /// One row per condition, in manifest order.
    pub rows: Vec<ConditionRow>,
    /// Core by capability (Table 6 shape).
    pub core_by_capability: SliceTable,
}

/// Scores every condition of the study in `dir` and builds its report.
/// Missing runs count as failures scored zero (§4.1).
pub fn build_report(args: &StudyReportArgs) -> anyhow::Result<StudyReport> {
    let study = read_study(&args.dir)?;
    let mut outcomes: Vec<TaskOutcome> = Vec::new();
    let mut resource_rows = BTreeMap::new();
    for c in &study.conditions {
        let runs = args.dir.join("runs").join(&c.name);
        resource_rows.insert(c.name.clone(), resources(&runs, &study.tasks)?);
        let mut condition_outcomes = if runs.is_dir() {
            let scores = args.dir.join("scores").join(format!("{}.jsonl", c.name));
            if let Some(parent) = scores.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            let code = run_score(ScoreArgs {
                release_root: study.release.clone(),
                runs: runs.clone(),
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
                allow_partial: args.allow_partial,
            })
            .with_context(|| format!("scoring condition {}", c.name))?;
            if code != ExitCode::SUCCESS {
                bail!(
                    "scoring condition {} did not finish; rerun the report",
                    c.name
                );
            }
            if scores.is_file() && std::fs::metadata(&scores)?.len() > 0 {
                load_records_file(&scores)?.outcomes
            } else {
                Vec::new()
            }
        } else {
            Vec::new()
        };
        let manifest_tasks: BTreeSet<&str> = study.tasks.iter().map(String::as_str).collect();
        condition_outcomes.retain(|o| manifest_tasks.contains(o.task.as_str()));
        for o in &mut condition_outcomes {
            o.system = c.name.clone();
        }
        // Every condition is scored on the whole manifest: a missing run
        // is a failure, scored zero, in the denominator (§4.1).
        let missing = fill_missing_as_failures(&mut condition_outcomes, &study.tasks);
        if missing > 0 && !args.allow_partial {
            bail!(
                "condition {} lacks {missing} of {} runs: finish it with `earthverse study run` \
                 (it resumes), or report with --allow-partial to count them as failures",
                c.name,
                study.tasks.len()
            );
        }
        if missing > 0 {
            eprintln!(
                "study report: condition {} lacks {missing} of {} runs; they count as failures",
                c.name,
                study.tasks.len()
            );
        }
        outcomes.extend(condition_outcomes);
    }
    copy_labels(&mut outcomes);
    let config = BootstrapConfig {
        resamples: args.resamples,
        seed: args.seed,
        ..BootstrapConfig::default()
    };
    let board = leaderboard(&outcomes)?;
    let mut rows = Vec::new();
    for c in &study.conditions {
        let scores = board
            .iter()
            .find(|r| r.system == c.name)
            .cloned()
            .with_context(|| format!("no scores for condition {}", c.name))?;
        let delta_core = if c.name == study.reference {
            None
        } else {
            Some(
                compare(&outcomes, &c.name, &study.reference, Metric::Core, &config)
                    .with_context(|| format!("ΔCore of {} against {}", c.name, study.reference))?,
            )
        };
        rows.push(ConditionRow {
            condition: c.name.clone(),
            settings: c.condition.clone(),
            scores,
            delta_core,
            resources: resource_rows.remove(&c.name).unwrap_or_default(),
        });
    }
    Ok(StudyReport {
        study: study.name,
        tasks: study.tasks.len(),
        reference: study.reference,
        rows,
        core_by_capability: slice_table(&outcomes, SliceBy::Capability)?,
    })
}

/// Failures filled in for missing runs carry no labels; give them the
/// task's labels from any scored run of the same task.
fn copy_labels(outcomes: &mut [TaskOutcome]) {
    let labelled: BTreeMap<String, TaskOutcome> = outcomes
        .iter()
        .filter(|o| !o.capabilities.is_empty() || o.difficulty.is_some())
        .map(|o| (o.task.clone(), o.clone()))
        .collect();
    for o in outcomes.iter_mut() {
        if o.capabilities.is_empty() && o.difficulty.is_none() {
            if let Some(source) = labelled.get(&o.task) {
                o.capabilities = source.capabilities.clone();
                o.difficulty = source.difficulty.clone();
                o.hazard_family = source.hazard_family.clone();
            }
        }
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{v:.digits$}"))
}

/// The report as text tables.
pub fn render_text(report: &StudyReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Study {}: {} tasks per condition; ΔCore against {} with paired 95% bootstrap CI",
        report.study, report.tasks, report.reference
    );
    let _ = writeln!(
        out,
        "\n{:<28} {:>7} {:>8} {:>7} {:>9} {:>8} {:>18} {:>5}",
        "Condition", "Answer", "Process", "Core", "Unit acc.", "ΔCore", "95% CI", "fail"
    );
    for r in &report.rows {
        let (delta, ci) = match &r.delta_core {
            Some(d) => (
                format!("{:+.2}", d.delta),
                format!("[{:+.2}, {:+.2}]", d.ci_low, d.ci_high),
            ),
            None => ("ref".to_string(), String::new()),
        };
        let _ = writeln!(
            out,
            "{:<28} {:>7.2} {:>8.2} {:>7.2} {:>9.2} {:>8} {:>18} {:>5}",
            r.condition,
            r.scores.answer,
            r.scores.process,
            r.scores.core,
            r.scores.unit_acc,
            delta,
            ci,
            r.scores.failures
        );
    }
    let _ = writeln!(
        out,
        "\n{:<28} {:>6} {:>6} {:>7} {:>5} {:>6} {:>5} {:>5} {:>6} {:>9} {:>9} {:>9} {:>8}",
        "Resources (per task)",
        "Rounds",
        "Calls",
        "OK %",
        "Lists",
        "Search",
        "Reads",
        "Files",
        "Python",
        "Prompt",
        "Complet.",
        "Total",
        "Lat. s"
    );
    for r in &report.rows {
        let x = &r.resources;
        let _ = writeln!(
            out,
            "{:<28} {:>6.2} {:>6.2} {:>7} {:>5.2} {:>6.2} {:>5.2} {:>5.2} {:>6.2} {:>9.0} {:>9.0} {:>9.0} {:>8.2}",
            r.condition,
            x.rounds,
            x.tool_calls,
            opt(x.tool_success_pct, 2),
            x.lists,
            x.searches,
            x.reads,
            x.files,
            x.python_calls,
            x.prompt_tokens,
            x.completion_tokens,
            x.total_tokens,
            x.latency_s
        );
    }
    let table = &report.core_by_capability;
    if !table.columns.is_empty() {
        let _ = write!(out, "\n{:<28}", "Core by capability");
        for c in &table.columns {
            let _ = write!(out, " {:>14}", truncate(c, 14));
        }
        let _ = writeln!(out);
        for c in &report.rows {
            let Some(row) = table.rows.iter().find(|r| r.system == c.condition) else {
                continue;
            };
            let _ = write!(out, "{:<28}", row.system);
            for cell in &row.cells {
                let _ = write!(out, " {:>14}", opt(cell.map(|c| c.core), 2));
            }
            let _ = writeln!(out);
        }
    }
    out
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The report as one self-contained HTML page (no scripts, no external
/// resources).
pub fn render_html(report: &StudyReport) -> String {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Study {0}</title>\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin:1em 0}}\
         td,th{{border:1px solid #ccc;padding:.25em .5em;text-align:right}}td:first-child,th:first-child{{text-align:left}}</style>\
         </head><body><h1>Study {0}</h1><p>{1} tasks per condition; ΔCore against <b>{2}</b> \
         with paired 95% bootstrap intervals (App. C.5).</p>",
        esc(&report.study),
        report.tasks,
        esc(&report.reference)
    );
    html.push_str("<table><tr><th>Condition</th><th>Answer</th><th>Process</th><th>Core</th><th>Unit acc.</th><th>ΔCore</th><th>95% CI</th><th>Failures</th></tr>");
    for r in &report.rows {
        let (delta, ci) = match &r.delta_core {
            Some(d) => (
                format!("{:+.2}", d.delta),
                format!("[{:+.2}, {:+.2}]", d.ci_low, d.ci_high),
            ),
            None => ("reference".into(), String::new()),
        };
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&r.condition),
            r.scores.answer,
            r.scores.process,
            r.scores.core,
            r.scores.unit_acc,
            delta,
            ci,
            r.scores.failures
        );
    }
    html.push_str("</table><table><tr><th>Resources per task</th><th>Rounds</th><th>Tool calls</th><th>Success %</th><th>Lists</th><th>Searches</th><th>Reads</th><th>Files</th><th>Python</th><th>Prompt</th><th>Completion</th><th>Total</th><th>Latency (s)</th></tr>");
    for r in &report.rows {
        let x = &r.resources;
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.0}</td><td>{:.0}</td><td>{:.0}</td><td>{:.2}</td></tr>",
            esc(&r.condition),
            x.rounds,
            x.tool_calls,
            opt(x.tool_success_pct, 2),
            x.lists,
            x.searches,
            x.reads,
            x.files,
            x.python_calls,
            x.prompt_tokens,
            x.completion_tokens,
            x.total_tokens,
            x.latency_s
        );
    }
    html.push_str("</table>");
    let table = &report.core_by_capability;
    if !table.columns.is_empty() {
        html.push_str("<table><tr><th>Core by capability</th>");
        for c in &table.columns {
            let _ = write!(html, "<th>{}</th>", esc(c));
        }
        html.push_str("</tr>");
        for c in &report.rows {
            let Some(row) = table.rows.iter().find(|r| r.system == c.condition) else {
                continue;
            };
            let _ = write!(html, "<tr><td>{}</td>", esc(&row.system));
            for cell in &row.cells {
                let _ = write!(html, "<td>{}</td>", opt(cell.map(|c| c.core), 2));
            }
            html.push_str("</tr>");
        }
        html.push_str("</table>");
    }
    html.push_str("</body></html>\n");
    html
}

/// Runs `earthverse study report`.
pub fn report_study(args: StudyReportArgs) -> anyhow::Result<ExitCode> {
    let report = build_report(&args)?;
    if let Some(path) = &args.html {
        std::fs::write(path, render_html(&report))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render_text(&report));
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
