//! Task selection: explicit ids, every task, a difficulty-stratified draw,
//! and the two manifests of App. C.5 (the reasoning-effort manifest and
//! the paired manifest drawn from it).

use crate::error::{Error, Result};
use crate::manifest::{EffortDraw, PairedDraw, StratifiedDraw, TaskSelection};
use earthverse_package_model::{load_recorded_runs, RecordedRunEntry, Release, RunStatus};
use earthverse_stats_bootstrap::TaskOutcome;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The outcome of one recorded run of the release from the scores it
/// stores (`answer` = A, `rubric` = P, `unit_accuracy` = U; Core =
/// (A + P)/2), or a failure scored zero when the run did not finish or
/// carries no scores (§4.1). This is the one reading of published scores:
/// `earthverse leaderboard --from-recorded` and `compare` use it too.
///
/// # Errors
/// [`earthverse_stats_bootstrap::Error::ScoreOutOfRange`] when a stored
/// score is not in 0–100.
pub fn recorded_outcome(
    entry: &RecordedRunEntry,
) -> earthverse_stats_bootstrap::Result<TaskOutcome> {
    let run = &entry.run;
    let s = &run.scores;
    // No status, or `ok`: the stored scores count (RunStatus::read).
    let ok = run
        .diagnostics
        .run_status
        .is_none_or(|st| st == RunStatus::Ok);
    let mut outcome = match (ok, s.answer, s.rubric, s.unit_accuracy) {
        (true, Some(a), Some(p), Some(u)) => {
            TaskOutcome::from_scores(&entry.system_id, &entry.task_id, a, p, u)?
        }
        _ => TaskOutcome::failure(&entry.system_id, &entry.task_id),
    };
    outcome.trajectory = run.diagnostics.figures();
    Ok(outcome)
}

/// Per-task published Core of the release's recorded runs: what makes a
/// task "historically difficult" (App. C.5).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskHistory {
    /// Task id → (sum of Core over the systems that ran it, runs).
    cores: BTreeMap<String, (f64, usize)>,
}

impl TaskHistory {
    /// The history of outcomes (each system's run of a task counts once;
    /// a failure counts as Core 0).
    pub fn from_outcomes(outcomes: &[TaskOutcome]) -> Self {
        let mut cores: BTreeMap<String, (f64, usize)> = BTreeMap::new();
        for o in outcomes {
            let entry = cores.entry(o.task.clone()).or_default();
            entry.0 += o.core();
            entry.1 += 1;
        }
        Self { cores }
    }

    /// Reads the recorded runs under `trajectories` (the release's
    /// `exploration/trajectories`) through [`recorded_outcome`].
    ///
    /// # Errors
    /// [`Error::Release`] when a run file does not load; [`Error::Run`]
    /// when its scores are out of range.
    pub fn load(trajectories: &Path) -> Result<Self> {
        let entries = load_recorded_runs(trajectories)?;
        let mut outcomes = Vec::with_capacity(entries.len());
        for entry in &entries {
            outcomes.push(recorded_outcome(entry).map_err(|e| Error::Run {
                path: entry.path.clone(),
                message: e.to_string(),
            })?);
        }
        Ok(Self::from_outcomes(&outcomes))
    }

    /// Mean published Core of a task over the systems that ran it.
    pub fn mean_core(&self, task: &str) -> Option<f64> {
        self.cores
            .get(task)
            .filter(|(_, n)| *n > 0)
            .map(|(sum, n)| sum / *n as f64)
    }

    /// Recorded runs of a task.
    pub fn runs(&self, task: &str) -> usize {
        self.cores.get(task).map_or(0, |(_, n)| *n)
    }

    /// Tasks with at least one recorded run.
    pub fn len(&self) -> usize {
        self.cores.len()
    }

    /// Whether no task has a recorded run.
    pub fn is_empty(&self) -> bool {
        self.cores.is_empty()
    }
}

/// A historically difficult task of an effort manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DifficultTask {
    /// Task id.
    pub task: String,
    /// Its mean published Core.
    pub mean_core: f64,
    /// Recorded runs the mean is over.
    pub runs: usize,
}

/// A resolved task manifest: the ids, and for the App. C.5 draws how each
/// was chosen (recorded in the study file for audit).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskDraw {
    /// The task ids, sorted.
    pub tasks: Vec<String>,
    /// The historically difficult part, lowest mean Core first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub difficult: Vec<DifficultTask>,
    /// The seeded part, in draw order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drawn: Vec<String>,
    /// Task files of the release that did not load and were skipped
    /// (`--skip-invalid`), each as `FILE: field `F`: what`: not in
    /// `tasks`, but named in every report of the study so its denominator
    /// never shrinks silently.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_task_files: Vec<String>,
}

/// Resolves a selection against a release; the App. C.5 ways need the
/// recorded runs' `history`.
///
/// # Errors
/// [`Error::Selection`] for an unknown id, an empty result, a missing
/// history, or an unresolved `paired.from`.
pub fn select_tasks(
    release: &Release,
    history: Option<&TaskHistory>,
    selection: &TaskSelection,
) -> Result<TaskDraw> {
    let need_history = || {
        history.ok_or_else(|| Error::Selection {
            message: "this selection needs the release's recorded runs \
                      (exploration/trajectories) for the tasks' published Core"
                .into(),
        })
    };
    let mut draw = if selection.all {
        TaskDraw {
            tasks: release.tasks().iter().map(|t| t.task_id.clone()).collect(),
            ..TaskDraw::default()
        }
    } else if let Some(d) = &selection.draw {
        TaskDraw {
            tasks: stratified(release, d),
            ..TaskDraw::default()
        }
    } else if let Some(e) = &selection.effort {
        draw_effort(release, need_history()?, e)?
    } else if let Some(p) = &selection.paired {
        draw_paired(release, need_history()?, p)?
    } else {
        let known: BTreeSet<&str> = release.tasks().iter().map(|t| t.task_id.as_str()).collect();
        for id in &selection.ids {
            if !known.contains(id.as_str()) {
                return Err(Error::Selection {
                    message: format!("task `{id}` of [tasks].ids is not in the release"),
                });
            }
        }
        TaskDraw {
            tasks: selection.ids.clone(),
            ..TaskDraw::default()
        }
    };
    draw.tasks.sort();
    draw.tasks.dedup();
    if draw.tasks.is_empty() {
        return Err(Error::Selection {
            message: "the task selection names no task".into(),
        });
    }
    Ok(draw)
}

/// [`select_tasks`] on the release at `root`, reading the published scores
/// of its recorded runs (`root/exploration/trajectories`) when the
/// selection needs them.
///
/// # Errors
/// As [`TaskHistory::load`] and [`select_tasks`].
pub fn select_release_tasks(
    release: &Release,
    root: &Path,
    selection: &TaskSelection,
) -> Result<TaskDraw> {
    let history = if selection.needs_history() {
        Some(TaskHistory::load(
            &root.join("exploration").join("trajectories"),
        )?)
    } else {
        None
    };
    select_tasks(release, history.as_ref(), selection)
}

fn stratified(release: &Release, draw: &StratifiedDraw) -> Vec<String> {
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
    let mut rng = ChaCha20Rng::seed_from_u64(draw.seed);
    let mut chosen = Vec::new();
    for ids in by_level.values_mut() {
        ids.sort();
        ids.shuffle(&mut rng);
        chosen.extend(ids.iter().take(draw.per_level).cloned());
    }
    chosen
}

/// The reasoning-effort manifest of App. C.5.
///
/// - **Historically difficult**: the `difficult` tasks of the release with
///   the lowest mean published Core over the systems of the recorded runs
///   ([`TaskHistory`]; a failed run counts 0), ties broken by task id.
///   Tasks without any recorded run have no history and are never counted
///   difficult.
/// - **Random draw from the rest**: the other tasks in id order, shuffled
///   by ChaCha20 seeded with `seed` (`seed_from_u64`), then taken in that
///   order preferring distinct events: first every task whose event is not
///   yet in the manifest (the difficult part's events included), one per
///   event, then the others, until `random` are taken.
///
/// # Errors
/// [`Error::Selection`] when the release has fewer tasks than asked for.
pub fn draw_effort(
    release: &Release,
    history: &TaskHistory,
    effort: &EffortDraw,
) -> Result<TaskDraw> {
    let mut ranked: Vec<(f64, &str)> = release
        .tasks()
        .iter()
        .filter_map(|t| Some((history.mean_core(&t.task_id)?, t.task_id.as_str())))
        .collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    if ranked.len() < effort.difficult {
        return Err(Error::Selection {
            message: format!(
                "effort.difficult = {} but only {} tasks of the release have recorded runs",
                effort.difficult,
                ranked.len()
            ),
        });
    }
    let difficult: Vec<DifficultTask> = ranked
        .iter()
        .take(effort.difficult)
        .map(|(core, task)| DifficultTask {
            task: task.to_string(),
            mean_core: *core,
            runs: history.runs(task),
        })
        .collect();
    let chosen: BTreeSet<&str> = difficult.iter().map(|d| d.task.as_str()).collect();
    let rest: Vec<&str> = release
        .tasks()
        .iter()
        .map(|t| t.task_id.as_str())
        .filter(|id| !chosen.contains(id))
        .collect();
    let drawn = draw_distinct_events(
        release,
        &rest,
        &chosen,
        effort.random,
        effort.seed,
        "effort",
    )?;
    let mut tasks: Vec<String> = chosen.iter().map(|s| s.to_string()).collect();
    tasks.extend(drawn.iter().cloned());
    tasks.sort();
    Ok(TaskDraw {
        tasks,
        difficult,
        drawn,
        skipped_task_files: Vec::new(),
    })
}

/// The paired manifest of App. C.5, drawn from the effort manifest: the
/// effort manifest's tasks in id order, shuffled by ChaCha20 seeded with
/// `seed`, taken preferring distinct events (as [`draw_effort`]'s random
/// part) until `count` are taken.
///
/// # Errors
/// [`Error::Selection`] when `effort` is unresolved or the effort
/// manifest has fewer than `count` tasks.
pub fn draw_paired(
    release: &Release,
    history: &TaskHistory,
    paired: &PairedDraw,
) -> Result<TaskDraw> {
    let Some(effort) = &paired.effort else {
        return Err(Error::Selection {
            message: "paired: the effort manifest is not resolved (give `effort`, or read the \
                      manifest with load_manifest to resolve `from`)"
                .into(),
        });
    };
    let mut source = draw_effort(release, history, effort)?.tasks;
    source.sort();
    let pool: Vec<&str> = source.iter().map(String::as_str).collect();
    let drawn = draw_distinct_events(
        release,
        &pool,
        &BTreeSet::new(),
        paired.count,
        paired.seed,
        "paired",
    )?;
    let mut tasks = drawn.clone();
    tasks.sort();
    Ok(TaskDraw {
        tasks,
        difficult: Vec::new(),
        drawn,
        skipped_task_files: Vec::new(),
    })
}

/// `count` of `pool` (in id order) after a ChaCha20 shuffle, preferring
/// tasks whose event is not yet represented (in `already` or earlier in
/// the draw).
fn draw_distinct_events(
    release: &Release,
    pool: &[&str],
    already: &BTreeSet<&str>,
    count: usize,
    seed: u64,
    what: &str,
) -> Result<Vec<String>> {
    if pool.len() < count {
        return Err(Error::Selection {
            message: format!(
                "{what}: {count} tasks asked for, only {} to draw from",
                pool.len()
            ),
        });
    }
    let event_of: BTreeMap<&str, &str> = release
        .tasks()
        .iter()
        .map(|t| (t.task_id.as_str(), t.event_id.as_str()))
        .collect();
    let mut order: Vec<&str> = pool.to_vec();
    order.sort_unstable();
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    order.shuffle(&mut rng);
    let mut events: BTreeSet<&str> = already
        .iter()
        .filter_map(|t| event_of.get(t).copied())
        .collect();
    let mut taken: Vec<&str> = Vec::with_capacity(count);
    let mut later: Vec<&str> = Vec::new();
    for task in order {
        if taken.len() == count {
            break;
        }
        let event = event_of.get(task).copied().unwrap_or(task);
        if events.insert(event) {
            taken.push(task);
        } else {
            later.push(task);
        }
    }
    let missing = count - taken.len();
    taken.extend(later.into_iter().take(missing));
    Ok(taken.into_iter().map(str::to_string).collect())
}
