//! `earthverse leaderboard`, `compare` and `report`: evaluation records or
//! recorded runs → `earthverse-stats-bootstrap` tables → text, JSON, JSONL,
//! Parquet or the HTML report of `earthverse-report`.
//!
//! Inputs:
//! - evaluation records (JSONL written by `earthverse score`, one
//!   `EvaluationRecord` per line), given as files;
//! - recorded runs (`--from-recorded DIR`, the release's
//!   `exploration/trajectories`), whose stored scores are `answer` = A,
//!   `rubric` = P, `unit_accuracy` = U and `overall` = Core (checked:
//!   `overall = (answer + rubric)/2` and `answer ≤ unit_accuracy` on every
//!   run of the dev slice). Task labels (capabilities, difficulty, hazard
//!   family) come from the release at `--release ROOT`, by default DIR's
//!   grandparent when DIR ends in `exploration/trajectories`.

use anyhow::{bail, Context};
use earthverse_package_model::{load_recorded_runs, DifficultyLevel, RecordedRunEntry, Release};
use earthverse_report::{CriterionRow, ReportInput, TaskDetail, UnitRow};
use earthverse_rubric_judge::EvaluationRecord;
use earthverse_stats_bootstrap::{
    all_pairs, compare, fill_missing_as_failures, leaderboard, slice_table, BootstrapConfig,
    LeaderboardRow, Metric, MissingPolicy, PairedDelta, PairedScores, SliceBy, TaskOutcome,
};
use earthverse_stats_bootstrap::{win_tie_loss, WinTieLoss};
use serde::Serialize;
use serde_json::{json, Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

/// Where outcomes come from (shared by the three commands).
#[derive(Debug, clap::Args)]
pub struct Sources {
    /// Evaluation-record files (JSONL from `earthverse score`).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Read the scores stored in recorded runs under DIR
    /// (`<release>/exploration/trajectories`).
    #[arg(long, value_name = "DIR")]
    pub from_recorded: Option<PathBuf>,
    /// Release root for task labels of recorded runs (default: DIR's
    /// grandparent when DIR ends in `exploration/trajectories`).
    #[arg(long, value_name = "ROOT")]
    pub release: Option<PathBuf>,
    /// Score tasks a system lacks (among all tasks seen) as failures (0).
    #[arg(long)]
    pub fill_missing: bool,
    /// Prices for the cost column and Table 11: a model-provider price
    /// table (`{"model": {"prompt": USD/M, "completion": USD/M}}`, billed per
    /// run from prompt and completion tokens) or a flat `{"model": USD/M}`
    /// list price applied to total tokens.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
}

/// Grouping of `leaderboard --by`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum By {
    /// Capability tags (Table 8).
    Capability,
    /// Difficulty L2–L5.
    Difficulty,
    /// Hazard family.
    Hazard,
}

impl From<By> for SliceBy {
    fn from(by: By) -> Self {
        match by {
            By::Capability => SliceBy::Capability,
            By::Difficulty => SliceBy::Difficulty,
            By::Hazard => SliceBy::Hazard,
        }
    }
}

/// Arguments of `earthverse leaderboard`.
#[derive(Debug, clap::Args)]
pub struct LeaderboardArgs {
    #[command(flatten)]
    sources: Sources,
    /// Core by capability, difficulty or hazard family instead of Table 2.
    #[arg(long, value_enum)]
    by: Option<By>,
    /// Print JSON (`{rows: [...]}`, plus `slices` with `--by`).
    #[arg(long)]
    json: bool,
    /// Also write the rows to FILE (`.jsonl` or `.parquet`).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Also write the per-task outcomes to FILE (`.jsonl` or `.parquet`).
    #[arg(long, value_name = "FILE")]
    tasks_out: Option<PathBuf>,
}

/// Scores compared by `earthverse compare`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum MetricArg {
    /// Combined Core (default).
    Core,
    /// Answer correctness A.
    Answer,
    /// Process rubric P.
    Process,
    /// Unit accuracy U.
    UnitAccuracy,
    /// Strict@95 (0/100 per task).
    Strict95,
}

impl From<MetricArg> for Metric {
    fn from(m: MetricArg) -> Self {
        match m {
            MetricArg::Core => Metric::Core,
            MetricArg::Answer => Metric::Answer,
            MetricArg::Process => Metric::Process,
            MetricArg::UnitAccuracy => Metric::UnitAccuracy,
            MetricArg::Strict95 => Metric::Strict95,
        }
    }
}

/// Arguments of `earthverse compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// First condition: a records file / recorded-runs directory, or a
    /// system id found in `--in` / `--from-recorded`.
    a: Option<String>,
    /// Second condition, as A.
    b: Option<String>,
    /// Records files holding the systems named by A and B.
    #[arg(long = "in", value_name = "FILE")]
    inputs: Vec<PathBuf>,
    /// Recorded runs holding the systems named by A and B.
    #[arg(long, value_name = "DIR")]
    from_recorded: Option<PathBuf>,
    /// Release root for recorded runs' task labels.
    #[arg(long, value_name = "ROOT")]
    release: Option<PathBuf>,
    /// Compare every pair of systems from one shared resample matrix over
    /// the tasks all of them ran (instead of A and B).
    #[arg(long)]
    all_pairs: bool,
    /// With `--all-pairs`: score a task a system did not run as a failure
    /// (0) instead of keeping only the tasks every system ran.
    #[arg(long)]
    zero_fill: bool,
    /// Score compared.
    #[arg(long, value_enum, default_value = "core")]
    metric: MetricArg,
    /// Bootstrap resamples (App. C.5: 5,000).
    #[arg(long, default_value_t = earthverse_stats_bootstrap::PAPER_RESAMPLES)]
    resamples: usize,
    /// ChaCha20 seed (App. C.5: 2026).
    #[arg(long, default_value_t = earthverse_stats_bootstrap::PAPER_SEED)]
    seed: u64,
    /// Confidence level.
    #[arg(long, default_value_t = earthverse_stats_bootstrap::PAPER_CONFIDENCE)]
    confidence: f64,
    /// Tie margin of the win / tie / loss shares of A against B, in points
    /// of the metric (ours; Fig. 7 gives no rule for scores).
    #[arg(long, default_value_t = earthverse_stats_bootstrap::PAIRWISE_TIE_MARGIN)]
    tie_margin: f64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Also write the differences to FILE (`.jsonl` or `.parquet`).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Arguments of `earthverse report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    #[command(flatten)]
    sources: Sources,
    /// Where to write the HTML page.
    #[arg(long, value_name = "OUT")]
    html: PathBuf,
    /// Page title.
    #[arg(long, default_value = "EarthVerse results")]
    title: String,
    /// Bootstrap resamples of the forest plot.
    #[arg(long, default_value_t = earthverse_stats_bootstrap::PAPER_RESAMPLES)]
    resamples: usize,
    /// Seed of the forest plot.
    #[arg(long, default_value_t = earthverse_stats_bootstrap::PAPER_SEED)]
    seed: u64,
    /// Directory of the scored runs: their final answers are shown on the
    /// runs' own pages (the pages exist for records carrying claims).
    #[arg(long, value_name = "DIR")]
    runs: Option<PathBuf>,
    /// Draw Figs. 8–10 from run-level failure families of the runs
    /// (`--runs`, else `--from-recorded`) against the release (`--release`,
    /// else the runs directory's grandparent).
    #[arg(long)]
    families: bool,
}

impl Sources {
    /// Every input path of the sources (files, recorded runs, release).
    fn input_paths(&self) -> Vec<(&'static str, &Path)> {
        let mut inputs: Vec<(&'static str, &Path)> = self
            .files
            .iter()
            .map(|f| ("an input records file", f.as_path()))
            .collect();
        if let Some(dir) = &self.from_recorded {
            inputs.push(("--from-recorded", dir));
        }
        if let Some(root) = &self.release {
            inputs.push(("--release", root));
        }
        if let Some(prices) = &self.prices {
            inputs.push(("--prices", prices));
        }
        inputs
    }
}

/// Refuses each given output that lands on one of the inputs.
fn refuse_outputs(
    outputs: &[(&str, Option<&Path>)],
    inputs: &[(&str, &Path)],
) -> anyhow::Result<()> {
    for (flag, path) in outputs {
        if let Some(path) = path {
            super::inputs::refuse_output_on_inputs(
                flag,
                path,
                inputs,
                earthverse_package_model::Overlap::Outside,
            )?;
        }
    }
    Ok(())
}

/// Outcomes and drill-down details from any source.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Per-task outcomes.
    pub outcomes: Vec<TaskOutcome>,
    /// Drill-down details.
    pub details: Vec<TaskDetail>,
    /// Human description of the inputs.
    pub source: Vec<String>,
    /// Prompt and completion tokens of each run, by (system, task).
    pub usage: BTreeMap<(String, String), (u64, u64)>,
    /// Flat list prices (USD per million tokens) by system.
    pub flat_prices: BTreeMap<String, f64>,
}

impl Loaded {
    fn extend(&mut self, other: Loaded) {
        self.outcomes.extend(other.outcomes);
        self.details.extend(other.details);
        self.source.extend(other.source);
        self.usage.extend(other.usage);
    }

    /// Applies a price file: per-run costs from a model-provider table, or
    /// flat list prices applied to total tokens.
    fn apply_prices(&mut self, path: &Path) -> anyhow::Result<()> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading prices {}", path.display()))?;
        if let Ok(flat) = serde_json::from_str::<BTreeMap<String, f64>>(&text) {
            self.flat_prices = flat;
            for o in &mut self.outcomes {
                if let (Some(price), Some(tokens)) =
                    (self.flat_prices.get(&o.system), o.trajectory.total_tokens)
                {
                    o.trajectory.cost_usd = Some(tokens as f64 * price / 1e6);
                }
            }
            return Ok(());
        }
        let table = earthverse_model_provider::Pricing::from_json(&text).with_context(|| {
            format!(
                "{}: neither {{model: USD/M}} nor a model-provider price table",
                path.display()
            )
        })?;
        for o in &mut self.outcomes {
            if let Some(&(prompt_tokens, completion_tokens)) =
                self.usage.get(&(o.system.clone(), o.task.clone()))
            {
                let usage = earthverse_model_provider::TokenUsage {
                    prompt_tokens,
                    completion_tokens,
                    cached_tokens: 0,
                };
                o.trajectory.cost_usd = table.cost(&o.system, &usage);
            }
        }
        Ok(())
    }
}

fn difficulty_level(label: &str) -> String {
    DifficultyLevel::parse(label).map_or_else(|| label.to_owned(), |l| l.as_str().to_owned())
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Converts evaluation records (rubric-judge) to outcomes and details.
pub fn from_records(records: Vec<EvaluationRecord>, path: &Path) -> anyhow::Result<Loaded> {
    let mut loaded = Loaded::default();
    for r in records {
        let outcome = earthverse_rubric_judge::task_outcome(&r).with_context(|| {
            format!(
                "{}: record of {} on {}",
                path.display(),
                r.system,
                r.task_id
            )
        })?;
        let t = &r.trajectory;
        if let (Some(p), Some(c)) = (t.prompt_tokens, t.completion_tokens) {
            loaded
                .usage
                .insert((r.system.clone(), r.task_id.clone()), (p, c));
        }
        loaded.details.push(TaskDetail {
            system: r.system.clone(),
            task: r.task_id.clone(),
            verdict: serde_json::to_value(r.verdict).ok().map(|v| text_of(&v)),
            rationale: (!r.rationale.is_empty()).then(|| r.rationale.clone()),
            units: r
                .answer_units
                .iter()
                .map(|u| UnitRow {
                    unit: u.unit.clone(),
                    expected: u.expected.as_ref().map(text_of).unwrap_or_default(),
                    found: u.found.as_ref().map(text_of).unwrap_or_default(),
                    satisfied: u.satisfied,
                    note: u.note.clone(),
                })
                .collect(),
            criteria: r
                .rubric_ledger
                .iter()
                .map(|c| CriterionRow {
                    name: c.name.clone(),
                    earned: c.points_earned,
                    possible: c.points_possible,
                    note: c.note.clone(),
                })
                .collect(),
            claims: r.claims.clone(),
            answer: None,
        });
        loaded.outcomes.push(outcome);
    }
    loaded.source.push(path.display().to_string());
    Ok(loaded)
}

/// Reads one JSONL file of evaluation records.
pub fn load_records_file(path: &Path) -> anyhow::Result<Loaded> {
    if !path.is_file() {
        bail!("evaluation-record file {} does not exist", path.display());
    }
    let records = earthverse_rubric_judge::read_records(path)
        .with_context(|| format!("reading evaluation records from {}", path.display()))?;
    if records.is_empty() {
        bail!("{} holds no evaluation records", path.display());
    }
    from_records(records, path)
}

/// The release root implied by a trajectories directory.
fn infer_release(dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    match name(&dir).as_deref() {
        Some("trajectories") => {
            let parent = dir.parent()?;
            (name(parent).as_deref() == Some("exploration"))
                .then(|| parent.parent().map(Path::to_path_buf))?
        }
        Some("exploration") => dir.parent().map(Path::to_path_buf),
        _ => None,
    }
}

/// Task labels (capabilities, difficulty, hazard family) by task id.
#[derive(Debug, Clone, Default)]
struct Labels {
    capabilities: Vec<String>,
    difficulty: Option<String>,
    hazard_family: Option<String>,
}

fn release_labels(root: &Path) -> anyhow::Result<BTreeMap<String, Labels>> {
    let release = Release::load(root)
        .with_context(|| format!("loading the release at {} for task labels", root.display()))?;
    Ok(release
        .tasks()
        .iter()
        .map(|t| {
            let mut capabilities: Vec<String> = t
                .dimensions
                .iter()
                .flatten()
                .chain(t.primary_dimension.iter())
                .map(|d| d.as_str().to_owned())
                .collect();
            capabilities.sort();
            capabilities.dedup();
            let labels = Labels {
                capabilities,
                difficulty: t.difficulty.as_deref().map(difficulty_level),
                hazard_family: t.hazard_family.as_ref().map(|h| h.as_str().to_owned()),
            };
            (t.task_id.clone(), labels)
        })
        .collect())
}

/// Converts one recorded run: the stored scores, or a failure (all zeros)
/// when the run did not finish or carries no scores
/// (`earthverse_study::recorded_outcome`, the one reading of published
/// scores, which the study's task draw uses too).
pub fn outcome_of_recorded(entry: &RecordedRunEntry) -> anyhow::Result<TaskOutcome> {
    earthverse_study::recorded_outcome(entry)
        .with_context(|| format!("scores of {}", entry.path.display()))
}

/// Reads the scores stored in recorded runs, labelled from the release.
pub fn load_recorded(dir: &Path, release: Option<&Path>) -> anyhow::Result<Loaded> {
    if !dir.is_dir() {
        bail!("recorded-runs directory {} does not exist", dir.display());
    }
    let entries = load_recorded_runs(dir)
        .with_context(|| format!("loading recorded runs from {}", dir.display()))?;
    if entries.is_empty() {
        bail!("no recorded runs under {}", dir.display());
    }
    let root = release
        .map(Path::to_path_buf)
        .or_else(|| infer_release(dir));
    let labels = match &root {
        Some(root) => release_labels(root)?,
        None => {
            tracing::warn!(dir = %dir.display(), "no release root given or inferred: slices will be empty");
            BTreeMap::new()
        }
    };
    let mut loaded = Loaded::default();
    for entry in &entries {
        let mut outcome = outcome_of_recorded(entry)?;
        let d = &entry.run.diagnostics;
        if let (Some(p), Some(c)) = (d.prompt_tokens, d.completion_tokens) {
            loaded
                .usage
                .insert((entry.system_id.clone(), entry.task_id.clone()), (p, c));
        }
        if let Some(l) = labels.get(&entry.task_id) {
            outcome.capabilities = l.capabilities.clone();
            outcome.difficulty = l.difficulty.clone();
            outcome.hazard_family = l.hazard_family.clone();
        }
        let s = &entry.run.scores;
        let mut notes = Vec::new();
        if let (Some(c), Some(t)) = (s.answer_units_correct, s.answer_units_total) {
            notes.push(format!("{c} of {t} answer units"));
        }
        if let (Some(e), Some(t)) = (s.rubric_points_earned, s.rubric_points_total) {
            notes.push(format!("{e} of {t} rubric points"));
        }
        if let Some(r) = entry
            .run
            .judge_rationale
            .as_ref()
            .and_then(|j| j.get("one_sentence_rationale"))
            .and_then(Value::as_str)
        {
            notes.push(r.to_owned());
        }
        loaded.details.push(TaskDetail {
            system: entry.system_id.clone(),
            task: entry.task_id.clone(),
            verdict: s.verdict.clone(),
            rationale: (!notes.is_empty()).then(|| notes.join("; ")),
            units: Vec::new(),
            criteria: Vec::new(),
            claims: Vec::new(),
            answer: None,
        });
        loaded.outcomes.push(outcome);
    }
    loaded
        .source
        .push(format!("recorded runs in {}", dir.display()));
    Ok(loaded)
}

fn load_sources(sources: &Sources) -> anyhow::Result<Loaded> {
    let mut loaded = Loaded::default();
    for file in &sources.files {
        loaded.extend(load_records_file(file)?);
    }
    if let Some(dir) = &sources.from_recorded {
        loaded.extend(load_recorded(dir, sources.release.as_deref())?);
    }
    if sources.files.is_empty() && sources.from_recorded.is_none() {
        bail!("give evaluation-record files or --from-recorded DIR");
    }
    if sources.fill_missing {
        let tasks: Vec<String> = loaded
            .outcomes
            .iter()
            .map(|o| o.task.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let added = fill_missing_as_failures(&mut loaded.outcomes, &tasks);
        tracing::info!(added, "missing tasks scored as failures");
    }
    if let Some(path) = &sources.prices {
        loaded.apply_prices(path)?;
    }
    Ok(loaded)
}

/// One flat row of the per-task table (for JSONL / Parquet).
#[derive(Debug, Serialize)]
struct TaskRow<'a> {
    system: &'a str,
    task: &'a str,
    answer: f64,
    process: f64,
    core: f64,
    unit_accuracy: f64,
    strict95: bool,
    failed: bool,
    capabilities: String,
    difficulty: Option<&'a str>,
    hazard_family: Option<&'a str>,
    rounds: Option<f64>,
    tool_calls: Option<f64>,
    reads: Option<f64>,
    files: Option<f64>,
    python_calls: Option<f64>,
    latency_s: Option<f64>,
    tokens: Option<f64>,
}

/// A count figure as the float of the task table.
fn as_f64(value: Option<u64>) -> Option<f64> {
    value.map(|v| v as f64)
}

fn task_rows(outcomes: &[TaskOutcome]) -> Vec<TaskRow<'_>> {
    outcomes
        .iter()
        .map(|o| TaskRow {
            system: &o.system,
            task: &o.task,
            answer: o.metric(Metric::Answer),
            process: o.metric(Metric::Process),
            core: o.core(),
            unit_accuracy: o.metric(Metric::UnitAccuracy),
            strict95: o.is_strict95(),
            failed: o.failed,
            capabilities: o.capabilities.join(";"),
            difficulty: o.difficulty.as_deref(),
            hazard_family: o.hazard_family.as_deref(),
            rounds: as_f64(o.trajectory.model_rounds),
            tool_calls: as_f64(o.trajectory.tool_calls),
            reads: as_f64(o.trajectory.file_reads),
            files: as_f64(o.trajectory.unique_evidence_files),
            python_calls: as_f64(o.trajectory.python_calls),
            latency_s: o.trajectory.latency_s,
            tokens: as_f64(o.trajectory.total_tokens),
        })
        .collect()
}

/// Writes flat rows as JSONL or Parquet, chosen by the file extension.
pub fn write_table<T: Serialize>(path: &Path, rows: &[T]) -> anyhow::Result<()> {
    let values: Vec<Map<String, Value>> = rows
        .iter()
        .map(|r| match serde_json::to_value(r) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => bail!("internal: a table row is not an object"),
            Err(e) => Err(e.into()),
        })
        .collect::<anyhow::Result<_>>()?;
    match path.extension().and_then(|e| e.to_str()) {
        Some("jsonl") | Some("json") => {
            let mut text = String::new();
            for v in &values {
                text.push_str(&serde_json::to_string(v)?);
                text.push('\n');
            }
            super::inputs::write_atomic(path, |file| {
                std::io::Write::write_all(file, text.as_bytes())?;
                Ok(())
            })
        }
        Some("parquet") => write_parquet(path, &values),
        _ => bail!(
            "output {}: use a .jsonl or .parquet extension",
            path.display()
        ),
    }
}

/// Column types inferred from flat JSON rows: all-bool → Boolean, all
/// integers → Int64, all numbers → Float64, otherwise Utf8 (nested values as
/// JSON text). Nulls are allowed in every column.
fn write_parquet(path: &Path, rows: &[Map<String, Value>]) -> anyhow::Result<()> {
    use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    let keys: Vec<String> = rows
        .first()
        .map(|r| r.keys().cloned().collect())
        .unwrap_or_default();
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for key in &keys {
        let cells: Vec<&Value> = rows
            .iter()
            .map(|r| r.get(key).unwrap_or(&Value::Null))
            .collect();
        let present = || cells.iter().filter(|v| !v.is_null());
        let (dtype, array): (DataType, ArrayRef) = if present().all(|v| v.is_boolean()) {
            (
                DataType::Boolean,
                Arc::new(cells.iter().map(|v| v.as_bool()).collect::<BooleanArray>()),
            )
        } else if present().all(|v| v.is_i64()) {
            (
                DataType::Int64,
                Arc::new(cells.iter().map(|v| v.as_i64()).collect::<Int64Array>()),
            )
        } else if present().all(|v| v.is_number()) {
            (
                DataType::Float64,
                Arc::new(cells.iter().map(|v| v.as_f64()).collect::<Float64Array>()),
            )
        } else {
            (
                DataType::Utf8,
                Arc::new(
                    cells
                        .iter()
                        .map(|v| (!v.is_null()).then(|| text_of(v)))
                        .collect::<StringArray>(),
                ),
            )
        };
        fields.push(Field::new(key, dtype, true));
        columns.push(array);
    }
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .with_context(|| format!("building the Parquet table for {}", path.display()))?;
    super::inputs::write_atomic(path, |file| {
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None)?;
        writer.write(&batch)?;
        writer.close()?;
        Ok(())
    })
}

fn f2(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".to_owned(), |v| format!("{v:.digits$}"))
}

/// Writes command output to stdout; a closed pipe (`| head`) is not an error.
fn emit(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

fn print_leaderboard(out: &mut String, rows: &[LeaderboardRow]) {
    const HEADERS: [&str; LeaderboardRow::CELLS] = [
        "System",
        "Runs",
        "Answer",
        "Process",
        "Core",
        "Strict@95",
        "Unit acc",
        "Rounds",
        "Tools",
        "Reads",
        "Files",
        "Python",
        "Latency",
        "Tokens(k)",
    ];
    // Widths of the numeric columns (right-aligned); the system column
    // is as wide as the longest name.
    const WIDTHS: [usize; LeaderboardRow::CELLS] = [0, 5, 7, 7, 7, 9, 8, 7, 6, 6, 6, 6, 8, 8];
    let system_width = rows
        .iter()
        .map(|r| r.system.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let mut line = |cells: &[String]| {
        let _ = write!(out, "{:<system_width$}", cells[0]);
        for (cell, width) in cells.iter().zip(WIDTHS).skip(1) {
            let _ = write!(out, " {cell:>width$}");
        }
        out.push('\n');
    };
    line(&HEADERS.map(str::to_owned));
    for r in rows {
        line(&r.cells("-"));
    }
}

/// Runs `earthverse leaderboard`.
pub fn run_leaderboard(args: LeaderboardArgs) -> anyhow::Result<ExitCode> {
    refuse_outputs(
        &[
            ("--out", args.out.as_deref()),
            ("--tasks-out", args.tasks_out.as_deref()),
        ],
        &args.sources.input_paths(),
    )?;
    let mut out = String::new();
    let loaded = load_sources(&args.sources)?;
    let rows = leaderboard(&loaded.outcomes)?;
    let slices = args
        .by
        .map(|by| slice_table(&loaded.outcomes, by.into()))
        .transpose()?;
    if let Some(path) = &args.out {
        write_table(path, &rows)?;
    }
    if let Some(path) = &args.tasks_out {
        write_table(path, &task_rows(&loaded.outcomes))?;
    }
    let costs = match &args.sources.prices {
        Some(_) => Some(earthverse_stats_bootstrap::cost_table(
            &loaded.outcomes,
            &loaded.flat_prices,
        )?),
        None => None,
    };
    if args.json {
        let mut doc = json!({ "rows": rows, "source": loaded.source });
        if let Some(c) = &costs {
            doc["cost"] = serde_json::to_value(c)?;
        }
        if let Some(s) = &slices {
            doc["slices"] = serde_json::to_value(s)?;
        }
        let _ = writeln!(out, "{}", serde_json::to_string_pretty(&doc)?);
    } else if let Some(table) = &slices {
        let width = table
            .rows
            .iter()
            .map(|r| r.system.len())
            .max()
            .unwrap_or(6)
            .max(6);
        let _ = write!(out, "{:<width$}", "System");
        for c in &table.columns {
            let _ = write!(
                out,
                " {:>14}",
                earthverse_report::plots::short_capability(c)
            );
        }
        let _ = writeln!(out);
        for row in &table.rows {
            let _ = write!(out, "{:<width$}", row.system);
            for cell in &row.cells {
                let _ = write!(
                    out,
                    " {:>14}",
                    cell.map_or("-".to_owned(), |c| format!("{:.2} ({})", c.core, c.n))
                );
            }
            let _ = writeln!(out);
        }
    } else {
        print_leaderboard(&mut out, &rows);
        if let Some(costs) = &costs {
            let _ = writeln!(out, "\nEvaluation cost (Table 11)");
            let _ = writeln!(
                out,
                "{:<24} {:>7} {:>14} {:>12} {:>12}",
                "System", "Core", "Tokens/task(k)", "Price(USD/M)", "Cost(USD)"
            );
            for c in costs {
                let _ = writeln!(
                    out,
                    "{:<24} {:>7.2} {:>14.1} {:>12} {:>12.2}",
                    c.system,
                    c.core,
                    c.tokens_per_task_k,
                    f2(c.price_usd_per_m, 2),
                    c.cost_usd
                );
            }
        }
    }
    emit(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Loads a condition given as a path: a JSONL file or a recorded-runs dir.
fn load_condition(path: &Path, release: Option<&Path>) -> anyhow::Result<Loaded> {
    if path.is_dir() {
        load_recorded(path, release)
    } else {
        load_records_file(path)
    }
}

/// Renames every outcome of a single-condition input to `name`.
fn as_condition(mut loaded: Loaded, name: &str, path: &Path) -> anyhow::Result<Vec<TaskOutcome>> {
    let systems: BTreeSet<&str> = loaded.outcomes.iter().map(|o| o.system.as_str()).collect();
    if systems.len() > 1 {
        bail!(
            "{} holds {} systems ({}); name the systems to compare with --in {}",
            path.display(),
            systems.len(),
            systems.into_iter().collect::<Vec<_>>().join(", "),
            path.display()
        );
    }
    for o in &mut loaded.outcomes {
        o.system = name.to_owned();
    }
    Ok(loaded.outcomes)
}

fn print_delta(out: &mut String, d: &PairedDelta, metric: &str) {
    let _ = writeln!(
            out,
        "{} − {}: Δ{metric} = {:+.2}  {:.0}% CI [{:+.2}, {:+.2}]  (n = {} paired tasks, {} resamples, seed {}; means {:.2} vs {:.2})",
        d.a, d.b, d.delta, d.confidence * 100.0, d.ci_low, d.ci_high, d.n_tasks, d.resamples, d.seed, d.mean_a, d.mean_b
    );
}

/// Runs `earthverse compare`.
pub fn run_compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let mut inputs: Vec<(&str, &Path)> =
        args.inputs.iter().map(|f| ("--in", f.as_path())).collect();
    for (name, cond) in [("A", &args.a), ("B", &args.b)] {
        if let Some(c) = cond {
            inputs.push((name, Path::new(c.as_str())));
        }
    }
    if let Some(dir) = &args.from_recorded {
        inputs.push(("--from-recorded", dir));
    }
    if let Some(root) = &args.release {
        inputs.push(("--release", root));
    }
    refuse_outputs(&[("--out", args.out.as_deref())], &inputs)?;
    let mut out = String::new();
    let config = BootstrapConfig {
        resamples: args.resamples,
        seed: args.seed,
        confidence: args.confidence,
    };
    let metric: Metric = args.metric.into();
    let metric_name = serde_json::to_value(metric)?
        .as_str()
        .unwrap_or("score")
        .to_owned();
    let mut pool = Loaded::default();
    for file in &args.inputs {
        pool.extend(load_records_file(file)?);
    }
    if let Some(dir) = &args.from_recorded {
        pool.extend(load_recorded(dir, args.release.as_deref())?);
    }
    let mut shares: Option<WinTieLoss> = None;
    let deltas = if args.all_pairs {
        if pool.outcomes.is_empty() {
            bail!("--all-pairs needs --in FILE... or --from-recorded DIR");
        }
        let policy = if args.zero_fill {
            MissingPolicy::ZeroFill
        } else {
            MissingPolicy::CommonTasks
        };
        let scores = PairedScores::from_outcomes(&pool.outcomes, None, metric, policy)?;
        tracing::info!(tasks = scores.tasks().len(), "tasks shared by every system");
        all_pairs(&scores, &config)?
    } else {
        let (Some(a), Some(b)) = (&args.a, &args.b) else {
            bail!("give two conditions A and B, or --all-pairs");
        };
        let mut outcomes = Vec::new();
        for name in [a, b] {
            let path = Path::new(name);
            if path.exists() && pool.outcomes.iter().all(|o| &o.system != name) {
                let label = path
                    .file_stem()
                    .map_or_else(|| name.clone(), |s| s.to_string_lossy().into_owned());
                outcomes.extend(as_condition(
                    load_condition(path, args.release.as_deref())?,
                    &label,
                    path,
                )?);
            } else {
                outcomes.extend(pool.outcomes.iter().filter(|o| &o.system == name).cloned());
            }
        }
        let names: Vec<String> = outcomes
            .iter()
            .map(|o| o.system.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let label = |name: &String| {
            let path = Path::new(name);
            if path.exists() && !names.contains(name) {
                path.file_stem()
                    .map_or_else(|| name.clone(), |s| s.to_string_lossy().into_owned())
            } else {
                name.clone()
            }
        };
        let (la, lb) = (label(a), label(b));
        if la == lb {
            bail!("conditions A and B have the same name {la}");
        }
        let delta = compare(&outcomes, &la, &lb, metric, &config)
            .with_context(|| format!("comparing {la} with {lb}"))?;
        shares = Some(
            win_tie_loss(&outcomes, &la, &lb, metric, args.tie_margin)
                .with_context(|| format!("win / tie / loss of {la} against {lb}"))?,
        );
        vec![delta]
    };
    if let Some(path) = &args.out {
        write_table(path, &deltas)?;
    }
    if args.json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&match &shares {
                None => json!({ "metric": metric_name, "pairs": deltas }),
                Some(w) => json!({ "metric": metric_name, "pairs": deltas, "win_tie_loss": w }),
            })?
        );
    } else {
        for d in &deltas {
            print_delta(&mut out, d, &metric_name);
        }
        if let Some(w) = &shares {
            let _ = writeln!(
                out,
                "{} vs {}: win {:.1}%  tie {:.1}%  loss {:.1}%  net {:+.1}  ({} wins, {} ties, {} losses over {} paired tasks; tie within {} points)",
                w.a, w.b, w.win, w.tie, w.loss, w.net, w.wins, w.ties, w.losses, w.tasks, w.margin
            );
        }
    }
    emit(&out)?;
    Ok(ExitCode::SUCCESS)
}

/// Runs `earthverse report`.
pub fn run_report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let mut inputs = args.sources.input_paths();
    if let Some(dir) = &args.runs {
        inputs.push(("--runs", dir));
    }
    refuse_outputs(&[("--html", Some(args.html.as_path()))], &inputs)?;
    let loaded = load_sources(&args.sources)?;
    let mut input = ReportInput::new(args.title);
    input.source = loaded.source.join(", ");
    input.outcomes = loaded.outcomes;
    input.details = loaded.details;
    if let Some(dir) = &args.runs {
        let runs = earthverse_rubric_judge::find_runs(dir)
            .with_context(|| format!("reading runs under {}", dir.display()))?;
        let answers: BTreeMap<(String, String), String> = runs
            .into_iter()
            .map(|rf| {
                let text = match &rf.run.final_answer {
                    serde_json::Value::String(s) => s.clone(),
                    other => serde_json::to_string_pretty(other).unwrap_or_default(),
                };
                ((rf.run.system, rf.run.task_id), text)
            })
            .collect();
        for d in &mut input.details {
            if let Some(a) = answers.get(&(d.system.clone(), d.task.clone())) {
                d.answer = Some(a.clone());
            }
        }
    }
    if args.families {
        let Some(dir) = args.runs.as_ref().or(args.sources.from_recorded.as_ref()) else {
            anyhow::bail!("--families needs --runs DIR or --from-recorded DIR");
        };
        let root = match &args.sources.release {
            Some(r) => r.clone(),
            None => dir
                .parent()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
                .context("--families: give --release ROOT")?,
        };
        input.families = Some(super::families::report_figures(&root, dir)?);
    }
    let flat_prices = loaded.flat_prices;
    input.bootstrap = BootstrapConfig {
        resamples: args.resamples,
        seed: args.seed,
        ..BootstrapConfig::default()
    };
    input.prices_usd_per_m = flat_prices;
    let html = earthverse_report::render_html(&input)?;
    super::inputs::write_atomic(&args.html, |file| {
        std::io::Write::write_all(file, html.as_bytes())?;
        Ok(())
    })?;
    eprintln!("wrote {}", args.html.display());
    Ok(ExitCode::SUCCESS)
}
