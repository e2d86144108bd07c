//! Scoring recorded runs and turning the records into the paper's tables:
//! the logic of the `score_recorded_runs` and `paired_comparison` examples.

use anyhow::Context;
use earthverse_rubric_judge::{
    find_runs, load_tasks, AnswerUnitsScorer, DeterministicJudge, EvaluationRecord, Judge,
    UnitReading,
};
use earthverse_stats_bootstrap::{
    compare, leaderboard, BootstrapConfig, LeaderboardRow, Metric, PairedDelta, TaskOutcome,
};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Where a release keeps its recorded runs (`exploration/trajectories`).
pub fn recorded_runs_dir(release: &Path) -> PathBuf {
    release.join("exploration").join("trajectories")
}

/// The deterministic judge (no model): U from answer units, H = U, P from
/// the rubric approximation.
pub fn deterministic_judge() -> DeterministicJudge<AnswerUnitsScorer> {
    DeterministicJudge::new(AnswerUnitsScorer {
        reading: UnitReading::Judge,
    })
}

/// Scores every run found under `runs_dir` against the tasks of `release`
/// with `judge`, in path order.
///
/// # Errors
/// Unreadable tasks or runs, a run of a task the release lacks, or a judge
/// error.
pub async fn score_runs(
    release: &Path,
    runs_dir: &Path,
    judge: &dyn Judge,
) -> anyhow::Result<Vec<EvaluationRecord>> {
    let tasks =
        load_tasks(release).with_context(|| format!("loading tasks of {}", release.display()))?;
    let runs =
        find_runs(runs_dir).with_context(|| format!("reading runs in {}", runs_dir.display()))?;
    let mut records = Vec::with_capacity(runs.len());
    for rf in &runs {
        let task = tasks.get(&rf.run.task_id).with_context(|| {
            format!(
                "{} answers task {} which {} lacks",
                rf.path.display(),
                rf.run.task_id,
                release.display()
            )
        })?;
        records.push(judge.evaluate(task, &rf.run).await?);
    }
    Ok(records)
}

/// One evaluation record as a statistics outcome (a failed run scores zero
/// and stays in the denominator, §4.1).
///
/// # Errors
/// A score outside 0–100.
pub fn outcome_of(record: &EvaluationRecord) -> anyhow::Result<TaskOutcome> {
    // The library's one conversion (labels and trajectory figures included).
    Ok(earthverse_rubric_judge::task_outcome(record)?)
}

/// Outcomes of many records.
///
/// # Errors
/// As [`outcome_of`].
pub fn outcomes_of(records: &[EvaluationRecord]) -> anyhow::Result<Vec<TaskOutcome>> {
    records.iter().map(outcome_of).collect()
}

/// The leaderboard (Table 2 columns) of the records, best Core first.
///
/// # Errors
/// Duplicate (system, task) records or invalid scores.
pub fn leaderboard_of(records: &[EvaluationRecord]) -> anyhow::Result<Vec<LeaderboardRow>> {
    Ok(leaderboard(&outcomes_of(records)?)?)
}

/// A plain-text leaderboard: one line per system.
pub fn format_leaderboard(rows: &[LeaderboardRow]) -> String {
    let mut out = format!(
        "{:<28} {:>4} {:>7} {:>7} {:>7} {:>7} {:>9}\n",
        "system", "runs", "A", "P", "Core", "U", "Strict@95"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:<28} {:>4} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>8.1}%",
            r.system, r.runs, r.answer, r.process, r.core, r.unit_acc, r.strict95
        );
    }
    out
}

/// The paired bootstrap of ΔCore = Core(a) − Core(b) over the tasks both
/// systems ran, with the paper's 5,000 resamples and seed 2026 (App. C.5).
///
/// # Errors
/// An unknown system, no common task, or invalid scores.
pub fn paired_core(records: &[EvaluationRecord], a: &str, b: &str) -> anyhow::Result<PairedDelta> {
    let outcomes = outcomes_of(records)?;
    Ok(compare(
        &outcomes,
        a,
        b,
        Metric::Core,
        &BootstrapConfig::default(),
    )?)
}

/// One line describing a paired delta.
pub fn format_delta(d: &PairedDelta) -> String {
    format!(
        "ΔCore({} − {}) = {:+.2} [{:.0}% CI {:+.2}, {:+.2}] over {} paired tasks ({} resamples, seed {})",
        d.a,
        d.b,
        d.delta,
        100.0 * d.confidence,
        d.ci_low,
        d.ci_high,
        d.n_tasks,
        d.resamples,
        d.seed
    )
}
