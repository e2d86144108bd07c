//! The study report as data: one row per condition with its scores, ΔCore
//! against the reference with its paired bootstrap interval (App. C.5),
//! win / tie / loss against the reference (Fig. 7's rule, see
//! `earthverse_stats_bootstrap::win_tie_loss`), trajectory diagnostics
//! (Tables 9, 10, 12, 13), and Core by capability (Tables 4 and 6).

use crate::condition::ResolvedStudy;
use crate::diagnostics::Diagnostics;
use crate::error::{Error, Result};
use earthverse_package_model::RunCondition;
use earthverse_stats_bootstrap::{
    balanced_all, compare, fill_missing_as_failures, leaderboard, slice_table, win_tie_loss,
    BalancedShares, BootstrapConfig, LeaderboardRow, Metric, PairedDelta, SliceBy, SliceTable,
    TaskOutcome, WinTieLoss, PAIRWISE_TIE_MARGIN,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One condition's line of the study table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConditionRow {
    /// Condition name.
    pub condition: String,
    /// The paper's row it reproduces, when the manifest says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The condition record.
    pub settings: RunCondition,
    /// The folder of its runs (another condition's when shared).
    pub runs: String,
    /// Scores (Answer, Process, Core, Unit acc., Strict@95; failures).
    pub scores: LeaderboardRow,
    /// Tasks the row is scored on: the study's, or the condition's
    /// compatible manifest (App. C.5, Table 7).
    #[serde(default)]
    pub tasks: usize,
    /// The condition's own compatible manifest was drawn (its tasks are
    /// not the study's; ΔCore pairs with the reference on them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub own_manifest: bool,
    /// Runs of the manifest missing, counted as failures.
    pub missing_runs: usize,
    /// Tasks of the manifest this condition does not apply to (a
    /// perturbation with no valid target): out of its pairs and its means.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_applicable: usize,
    /// ΔCore against the reference with its paired interval (`None` for
    /// the reference itself).
    pub delta_core: Option<PairedDelta>,
    /// Win / tie / loss on Core against the reference (`None` for the
    /// reference itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_reference: Option<WinTieLoss>,
    /// Trajectory diagnostics, per-task means.
    pub resources: Diagnostics,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyReport {
    /// Study name.
    pub study: String,
    /// What it reproduces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Tasks in the manifest.
    pub tasks: usize,
    /// Task files of the release that did not load and were skipped
    /// (`study run --skip-invalid`): outside `tasks`, named here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_task_files: Vec<String>,
    /// Reference condition.
    pub reference: String,
    /// Tie margin of the win / tie / loss shares, in Core points.
    pub tie_margin: f64,
    /// One row per condition, in manifest order.
    pub rows: Vec<ConditionRow>,
    /// Conditions whose compatible manifest is empty (no task of the
    /// release holds the environment's inputs): not run, no row.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub no_compatible_task: Vec<String>,
    /// Core by capability (Tables 4 and 6).
    pub core_by_capability: SliceTable,
    /// Opponent-balanced win / tie / loss of every condition against all
    /// the others (Fig. 7), when asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pairwise: Vec<BalancedShares>,
}

/// How to build the report.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportSettings {
    /// The paired bootstrap (App. C.5: 5,000 resamples, seed 2026).
    pub bootstrap: BootstrapConfig,
    /// Tie margin of win / tie / loss, in Core points.
    pub tie_margin: f64,
    /// Also compute the opponent-balanced shares of all pairs.
    pub all_pairs: bool,
    /// Count missing runs as failures instead of refusing the report.
    pub allow_partial: bool,
    /// Tasks left out of a condition's pairs, by condition name: those a
    /// perturbation condition's perturbation does not apply to (task →
    /// reason; [`crate::not_applicable_tasks`]). Such a task is neither a
    /// run nor a failure of that condition.
    pub not_applicable: BTreeMap<String, BTreeMap<String, String>>,
}

impl Default for ReportSettings {
    fn default() -> Self {
        Self {
            bootstrap: BootstrapConfig::default(),
            tie_margin: PAIRWISE_TIE_MARGIN,
            all_pairs: false,
            allow_partial: false,
            not_applicable: BTreeMap::new(),
        }
    }
}

/// The diagnostics of every condition of a study over its own tasks
/// ([`ResolvedStudy::condition_tasks`]), by condition name.
///
/// # Errors
/// As [`Diagnostics::of_dir`].
pub fn study_diagnostics(
    dir: &Path,
    study: &ResolvedStudy,
) -> Result<BTreeMap<String, Diagnostics>> {
    study
        .conditions
        .iter()
        .map(|c| {
            Diagnostics::of_dir(&dir.join("runs").join(&c.runs), study.condition_tasks(c))
                .map(|d| (c.condition.name.clone(), d))
        })
        .collect()
}

/// The outcomes of the runs of `folder` on `tasks`, named `name`, without
/// the `excluded` tasks, missing runs filled in as failures (`all`: also
/// when the folder has no outcome at all); the number missing and the
/// number of tasks.
fn outcomes_on(
    scored: &BTreeMap<String, Vec<TaskOutcome>>,
    folder: &str,
    name: &str,
    tasks: &[String],
    excluded: Option<&BTreeMap<String, String>>,
    all: bool,
) -> (Vec<TaskOutcome>, usize, usize) {
    let wanted: BTreeSet<&str> = tasks
        .iter()
        .map(String::as_str)
        .filter(|t| excluded.is_none_or(|x| !x.contains_key(*t)))
        .collect();
    let mut mine: Vec<TaskOutcome> = scored
        .get(folder)
        .into_iter()
        .flatten()
        .filter(|o| wanted.contains(o.task.as_str()))
        .cloned()
        .collect();
    for o in &mut mine {
        o.system = name.to_string();
    }
    let applicable: Vec<String> = wanted.iter().map(|t| t.to_string()).collect();
    let missing = if all {
        fill_missing(&mut mine, name, &applicable)
    } else {
        fill_missing_as_failures(&mut mine, &applicable)
    };
    (mine, missing, applicable.len())
}

/// [`fill_missing_as_failures`] for one system, also when it has no
/// outcome at all.
fn fill_missing(outcomes: &mut Vec<TaskOutcome>, name: &str, tasks: &[String]) -> usize {
    if outcomes.is_empty() {
        outcomes.extend(tasks.iter().map(|t| TaskOutcome::failure(name, t)));
        return tasks.len();
    }
    fill_missing_as_failures(outcomes, tasks)
}

/// Builds the report of `study` from the scored outcomes of each folder of
/// runs (`scored`, by folder; a folder may hold tasks of other studies,
/// only the manifest's count) and their diagnostics (by condition,
/// [`study_diagnostics`]). Every condition is scored on the whole manifest
/// (its compatible manifest when it has one): a missing run is a failure
/// scored zero, in the denominator (§4.1), and refused unless
/// `allow_partial`.
///
/// # Errors
/// [`Error::MissingRuns`]; [`Error::Stats`] when the statistics refuse the
/// outcomes.
pub fn build_report(
    study: &ResolvedStudy,
    scored: &BTreeMap<String, Vec<TaskOutcome>>,
    diagnostics: &BTreeMap<String, Diagnostics>,
    settings: &ReportSettings,
) -> Result<StudyReport> {
    let tasks = study.tasks();
    let mut outcomes = Vec::new();
    let mut missing_of = BTreeMap::new();
    for c in &study.conditions {
        let name = &c.condition.name;
        // Tasks the condition does not apply to leave its pairs.
        let excluded = settings.not_applicable.get(name);
        let (mine, missing, applicable) = outcomes_on(
            scored,
            &c.runs,
            name,
            study.condition_tasks(c),
            excluded,
            false,
        );
        if missing > 0 && !settings.allow_partial {
            return Err(Error::MissingRuns {
                condition: name.clone(),
                missing,
                tasks: applicable,
            });
        }
        missing_of.insert(name.clone(), missing);
        outcomes.extend(mine);
    }
    copy_labels(&mut outcomes);
    let board = leaderboard(&outcomes)?;
    let reference = study.condition(&study.reference);
    let mut rows = Vec::new();
    for c in &study.conditions {
        let name = &c.condition.name;
        let Some(scores) = board.iter().find(|r| &r.system == name).cloned() else {
            continue;
        };
        let own = study.condition_tasks(c) != tasks;
        // A condition with its own manifest pairs with the reference's runs
        // of its own tasks (the reference's folder holds them).
        let paired: Vec<TaskOutcome> = match reference {
            Some(r) if own && name != &study.reference => {
                let (ref_outcomes, missing, n) = outcomes_on(
                    scored,
                    &r.runs,
                    &study.reference,
                    study.condition_tasks(c),
                    None,
                    true,
                );
                if missing > 0 && !settings.allow_partial {
                    return Err(Error::MissingRuns {
                        condition: format!("{} (on the tasks of {name})", study.reference),
                        missing,
                        tasks: n,
                    });
                }
                outcomes
                    .iter()
                    .filter(|o| &o.system == name)
                    .cloned()
                    .chain(ref_outcomes)
                    .collect()
            }
            _ => Vec::new(),
        };
        let pairs = if paired.is_empty() {
            &outcomes
        } else {
            &paired
        };
        let (delta_core, vs_reference) = if name == &study.reference {
            (None, None)
        } else {
            (
                Some(compare(
                    pairs,
                    name,
                    &study.reference,
                    Metric::Core,
                    &settings.bootstrap,
                )?),
                Some(win_tie_loss(
                    pairs,
                    name,
                    &study.reference,
                    Metric::Core,
                    settings.tie_margin,
                )?),
            )
        };
        rows.push(ConditionRow {
            condition: name.clone(),
            description: c.condition.description.clone(),
            settings: c.condition.condition.clone(),
            runs: c.runs.clone(),
            scores,
            tasks: study.condition_tasks(c).len(),
            own_manifest: own,
            missing_runs: missing_of.get(name).copied().unwrap_or(0),
            not_applicable: settings.not_applicable.get(name).map_or(0, BTreeMap::len),
            delta_core,
            vs_reference,
            resources: diagnostics.get(name).cloned().unwrap_or_default(),
        });
    }
    let pairwise = if settings.all_pairs && study.conditions.len() > 1 {
        balanced_all(&outcomes, Metric::Core, settings.tie_margin)?
    } else {
        Vec::new()
    };
    Ok(StudyReport {
        study: study.name.clone(),
        description: study.description.clone(),
        tasks: tasks.len(),
        skipped_task_files: study.draw.skipped_task_files.clone(),
        reference: study.reference.clone(),
        tie_margin: settings.tie_margin,
        rows,
        no_compatible_task: study
            .conditions
            .iter()
            .filter(|c| {
                c.environment_manifest
                    .as_ref()
                    .is_some_and(|m| m.tasks.is_empty())
            })
            .map(|c| c.condition.name.clone())
            .collect(),
        core_by_capability: slice_table(&outcomes, SliceBy::Capability)?,
        pairwise,
    })
}

fn is_zero(n: &usize) -> bool {
    *n == 0
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
