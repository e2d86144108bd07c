//! Where the outcomes of a leaderboard, comparison or report come from:
//! evaluation records (JSONL written by `earthverse score`, one
//! `EvaluationRecord` per line) or recorded runs (a release's
//! `exploration/trajectories`), whose stored scores are `answer` = A,
//! `rubric` = P, `unit_accuracy` = U and `overall` = Core (§4.1; checked:
//! `overall = (answer + rubric)/2` and `answer ≤ unit_accuracy` on every run
//! of the dev slice). Task labels of recorded runs (capabilities,
//! difficulty, hazard family) come from the release, by default the
//! trajectories folder's grandparent.
//!
//! [`OutcomeSources`] is the shared argument group of `leaderboard`,
//! `compare` and `report` (with the `clap` feature it is their flags).

use crate::{Error, Result};
use earthverse_package_model::{load_recorded_runs, DifficultyLevel, RecordedRunEntry, Release};
use earthverse_report::{CriterionRow, TaskDetail, UnitRow};
use earthverse_rubric_judge::EvaluationRecord;
use earthverse_stats_bootstrap::{fill_missing_as_failures, TaskOutcome};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where outcomes come from: the input group of `leaderboard`, `compare`
/// and `report`.
#[derive(Debug, Clone, Default)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct OutcomeSources {
    /// Evaluation-record files (JSONL from `earthverse score`).
    #[cfg_attr(feature = "clap", arg(value_name = "FILE"))]
    pub files: Vec<PathBuf>,
    /// Read the scores stored in recorded runs under DIR
    /// (`<release>/exploration/trajectories`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR"))]
    pub from_recorded: Option<PathBuf>,
    /// Release root for task labels of recorded runs (default: DIR's
    /// grandparent when DIR ends in `exploration/trajectories`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "ROOT"))]
    pub release: Option<PathBuf>,
    /// Score tasks a system lacks (among all tasks seen) as failures (0).
    #[cfg_attr(feature = "clap", arg(long))]
    pub fill_missing: bool,
    /// Prices for the cost column and Table 11: a model-provider price
    /// table (`{"model": {"prompt": USD/M, "completion": USD/M}}`, billed per
    /// run from prompt and completion tokens) or a flat `{"model": USD/M}`
    /// list price applied to total tokens.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub prices: Option<PathBuf>,
}

impl OutcomeSources {
    /// Every input path of the sources, each named by its flag (for the
    /// output-on-input check of the writers).
    pub fn input_paths(&self) -> Vec<(&'static str, &Path)> {
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

    /// Loads every source: the record files, the recorded runs, missing
    /// tasks as failures when asked, and the prices.
    pub fn load(&self) -> Result<LoadedOutcomes> {
        let mut loaded = LoadedOutcomes::default();
        for file in &self.files {
            loaded.extend(load_records_file(file)?);
        }
        if let Some(dir) = &self.from_recorded {
            loaded.extend(load_recorded(dir, self.release.as_deref())?);
        }
        if self.files.is_empty() && self.from_recorded.is_none() {
            return Err(Error::NoSources);
        }
        if self.fill_missing {
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
        if let Some(path) = &self.prices {
            loaded.apply_prices(path)?;
        }
        Ok(loaded)
    }
}

/// Outcomes and drill-down details from any source.
#[derive(Debug, Default)]
pub struct LoadedOutcomes {
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

impl LoadedOutcomes {
    /// Adds another source's outcomes, details, descriptions and usage.
    pub fn extend(&mut self, other: LoadedOutcomes) {
        self.outcomes.extend(other.outcomes);
        self.details.extend(other.details);
        self.source.extend(other.source);
        self.usage.extend(other.usage);
    }

    /// Applies a price file: per-run costs from a model-provider table, or
    /// flat list prices applied to total tokens.
    pub fn apply_prices(&mut self, path: &Path) -> Result<()> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
            what: "prices",
            path: path.to_path_buf(),
            source,
        })?;
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
        let table = earthverse_model_provider::Pricing::from_json(&text).map_err(|source| {
            Error::Prices {
                path: path.to_path_buf(),
                source: Box::new(source),
            }
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

    /// The outcomes of a single-condition input, renamed to `name`; an
    /// input that holds several systems is an error naming them (compare
    /// them by system name instead).
    pub fn into_condition(mut self, name: &str, path: &Path) -> Result<Vec<TaskOutcome>> {
        let systems: BTreeSet<&str> = self.outcomes.iter().map(|o| o.system.as_str()).collect();
        if systems.len() > 1 {
            return Err(Error::SeveralSystems {
                path: path.to_path_buf(),
                systems: systems.into_iter().map(str::to_owned).collect(),
            });
        }
        for o in &mut self.outcomes {
            o.system = name.to_owned();
        }
        Ok(self.outcomes)
    }
}

fn difficulty_level(label: &str) -> String {
    DifficultyLevel::parse(label).map_or_else(|| label.to_owned(), |l| l.as_str().to_owned())
}

/// A JSON value as table text: strings as they are, anything else as JSON.
pub(crate) fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Converts evaluation records (rubric-judge) to outcomes and details;
/// `path` names the file they came from in errors and in the source list.
pub fn from_records(records: Vec<EvaluationRecord>, path: &Path) -> Result<LoadedOutcomes> {
    let mut loaded = LoadedOutcomes::default();
    for r in records {
        let outcome =
            earthverse_rubric_judge::task_outcome(&r).map_err(|source| Error::Record {
                path: path.to_path_buf(),
                system: r.system.clone(),
                task: r.task_id.clone(),
                source: Box::new(source),
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
pub fn load_records_file(path: &Path) -> Result<LoadedOutcomes> {
    if !path.is_file() {
        return Err(Error::Missing {
            what: "evaluation-record file",
            path: path.to_path_buf(),
        });
    }
    let records = earthverse_rubric_judge::read_records(path).map_err(|source| Error::Records {
        what: "evaluation records",
        path: path.to_path_buf(),
        source: Box::new(source),
    })?;
    if records.is_empty() {
        return Err(Error::NoRecords {
            path: path.to_path_buf(),
        });
    }
    from_records(records, path)
}

/// The release root implied by a trajectories directory
/// (`ROOT/exploration/trajectories` or `ROOT/exploration`).
pub fn infer_release(dir: &Path) -> Option<PathBuf> {
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

fn release_labels(root: &Path) -> Result<BTreeMap<String, Labels>> {
    let release = Release::load(root).map_err(|source| Error::Release {
        root: root.to_path_buf(),
        source: Box::new(source),
    })?;
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
pub fn outcome_of_recorded(entry: &RecordedRunEntry) -> Result<TaskOutcome> {
    earthverse_study::recorded_outcome(entry).map_err(|source| Error::RecordedScores {
        path: entry.path.clone(),
        source: Box::new(source),
    })
}

/// Reads the scores stored in recorded runs, labelled from the release
/// (`release`, or the one [`infer_release`] finds; without either the
/// slices are empty and a warning says so).
pub fn load_recorded(dir: &Path, release: Option<&Path>) -> Result<LoadedOutcomes> {
    if !dir.is_dir() {
        return Err(Error::Missing {
            what: "recorded-runs directory",
            path: dir.to_path_buf(),
        });
    }
    let entries = load_recorded_runs(dir).map_err(|source| Error::RecordedRuns {
        dir: dir.to_path_buf(),
        source: Box::new(source),
    })?;
    if entries.is_empty() {
        return Err(Error::NoRecordedRuns {
            dir: dir.to_path_buf(),
        });
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
    let mut loaded = LoadedOutcomes::default();
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

/// Loads a condition given as a path: a JSONL file of evaluation records
/// or a folder of recorded runs.
pub fn load_condition(path: &Path, release: Option<&Path>) -> Result<LoadedOutcomes> {
    if path.is_dir() {
        load_recorded(path, release)
    } else {
        load_records_file(path)
    }
}

/// Fills each detail's final answer from the run records under `dir`
/// (the report's drill-down shows them).
pub fn attach_answers(details: &mut [TaskDetail], dir: &Path) -> Result<()> {
    let runs = earthverse_rubric_judge::find_runs(dir).map_err(|source| Error::Records {
        what: "runs",
        path: dir.to_path_buf(),
        source: Box::new(source),
    })?;
    let answers: BTreeMap<(String, String), String> = runs
        .into_iter()
        .map(|rf| {
            let text = match &rf.run.final_answer {
                Value::String(s) => s.clone(),
                other => serde_json::to_string_pretty(other).unwrap_or_default(),
            };
            ((rf.run.system, rf.run.task_id), text)
        })
        .collect();
    for d in details {
        if let Some(a) = answers.get(&(d.system.clone(), d.task.clone())) {
            d.answer = Some(a.clone());
        }
    }
    Ok(())
}

/// The outcomes of two conditions to compare, and their names. Each of `a`
/// and `b` is a system found in `pool` or, when no system of the pool has
/// that name and the path exists, a records file or recorded-runs folder
/// holding one system, named after the file's stem.
pub fn paired_conditions(
    pool: &LoadedOutcomes,
    a: &str,
    b: &str,
    release: Option<&Path>,
) -> Result<(Vec<TaskOutcome>, String, String)> {
    let from_path =
        |name: &str| Path::new(name).exists() && pool.outcomes.iter().all(|o| o.system != name);
    let stem = |name: &str| {
        Path::new(name)
            .file_stem()
            .map_or_else(|| name.to_owned(), |s| s.to_string_lossy().into_owned())
    };
    let mut outcomes = Vec::new();
    for name in [a, b] {
        if from_path(name) {
            let path = Path::new(name);
            outcomes.extend(load_condition(path, release)?.into_condition(&stem(name), path)?);
        } else {
            outcomes.extend(pool.outcomes.iter().filter(|o| o.system == name).cloned());
        }
    }
    let names: BTreeSet<&str> = outcomes.iter().map(|o| o.system.as_str()).collect();
    let label = |name: &str| {
        if Path::new(name).exists() && !names.contains(name) {
            stem(name)
        } else {
            name.to_owned()
        }
    };
    let (la, lb) = (label(a), label(b));
    if la == lb {
        return Err(Error::SameName { name: la });
    }
    Ok((outcomes, la, lb))
}
