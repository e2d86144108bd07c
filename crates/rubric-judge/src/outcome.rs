//! An evaluation record as the per-task outcome the statistics read
//! (`earthverse_stats_bootstrap::TaskOutcome`): the one conversion behind
//! `earthverse leaderboard`, `stats`, `study report` and a harness's own
//! tables.

use crate::record::{EvaluationRecord, RunStatus};
use earthverse_package_model::DifficultyLevel;
use earthverse_stats_bootstrap::{TaskOutcome, TrajectoryFigures};

/// The outcome of `record`: a failed run is a failure (every score 0, kept
/// in the denominator, §4.1); otherwise A, P and U as stored, Strict@95 as
/// the record says, the task's labels (difficulty as its level, `L2`…`L5`)
/// and the trajectory figures (total tokens from prompt + completion when
/// only those are known; cost left for a price table to fill).
///
/// # Errors
/// A score outside 0–100.
pub fn task_outcome(
    record: &EvaluationRecord,
) -> Result<TaskOutcome, earthverse_stats_bootstrap::Error> {
    let failed = record.run_status == RunStatus::Error;
    let mut outcome = if failed {
        TaskOutcome::failure(&record.system, &record.task_id)
    } else {
        let mut outcome = TaskOutcome::from_scores(
            &record.system,
            &record.task_id,
            record.answer,
            record.llm_rubric_score,
            record.unit_accuracy,
        )?;
        outcome.strict95 = Some(record.strict95);
        outcome
    };
    outcome.capabilities = record.labels.capabilities.clone();
    outcome.difficulty = record.labels.difficulty.as_deref().map(|label| {
        DifficultyLevel::parse(label).map_or_else(|| label.to_owned(), |l| l.as_str().to_owned())
    });
    outcome.hazard_family = record.labels.hazard_family.clone();
    let t = &record.trajectory;
    outcome.trajectory = TrajectoryFigures {
        total_tokens: t
            .total_tokens
            .or_else(|| Some(t.prompt_tokens? + t.completion_tokens?)),
        cost_usd: None,
        ..t.clone()
    };
    Ok(outcome)
}
