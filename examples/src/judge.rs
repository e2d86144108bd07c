//! A custom judge: [`AllOrNothingJudge`] implements the rubric-judge
//! [`Judge`] trait with a stricter reading of the answer — full marks only
//! when every required answer unit is right (U = 100), else zero — and
//! keeps the deterministic judge's process score. The logic of the
//! `custom_judge` example.

use async_trait::async_trait;
use earthverse_rubric_judge::{
    evaluate_deterministic, AnswerUnitsScorer, EvaluationRecord, Judge, RunContext, TaskContext,
    UnitReading,
};

/// Id written into the records of [`AllOrNothingJudge`].
pub const ALL_OR_NOTHING_ID: &str = "all-or-nothing-v1";

/// H = 100 when every required unit is satisfied, else 0; U and P as the
/// deterministic judge computes them; A, Core and Strict@95 recomputed.
#[derive(Debug, Default)]
pub struct AllOrNothingJudge;

#[async_trait]
impl Judge for AllOrNothingJudge {
    fn judge_id(&self) -> &str {
        ALL_OR_NOTHING_ID
    }

    async fn evaluate(
        &self,
        task: &TaskContext,
        run: &RunContext,
    ) -> earthverse_rubric_judge::Result<EvaluationRecord> {
        let scorer = AnswerUnitsScorer {
            reading: UnitReading::Judge,
        };
        // Failed runs come back as zero-score records from the deterministic core.
        let mut record = evaluate_deterministic(&scorer, task, run);
        record.judge = ALL_OR_NOTHING_ID.to_owned();
        record.answer_correctness_score = if record.unit_accuracy >= 100.0 {
            100.0
        } else {
            0.0
        };
        record.rationale = format!(
            "All or nothing: {} of {} required units right.",
            record.answer_units_correct, record.answer_units_total
        );
        record.recompute_scores();
        Ok(record)
    }
}
