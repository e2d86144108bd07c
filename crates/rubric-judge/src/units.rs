//! U from the `answer-units` crate (paper §4.1).

use crate::deterministic::{UnitOutcome, UnitScorer};
use crate::input::TaskContext;
use crate::record::AnswerUnitEntry;
use earthverse_answer_units::{extract_label_aliases, score_task, ScoringContext};
use serde_json::Value;

/// Which reading of U to report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnitReading {
    /// The judge-like reading (default): `u_required` against the expert
    /// solution's Final Answer when it has a JSON one (the answer contract
    /// filled in, which the published judge received, Appendix E), else
    /// against `primary_gt`. Closest to the published `unit_accuracy`.
    #[default]
    Judge,
    /// Units of `primary_gt` the question asks for (plus matched ones),
    /// scoring metadata skipped (`u_required` against `primary_gt` only).
    Required,
    /// Every scalar leaf of `primary_gt` (the paper's 10,879-unit count).
    All,
}

/// The one scoring context of a task, used by the deterministic judge,
/// `earthverse units`, `earthverse score`, the evidence ledger and the
/// benches: the question, the tolerances the ground truth declares
/// ([`TaskContext::tolerances`]), its label aliases and the expert solution
/// (for the judge-like reading).
pub fn scoring_context(task: &TaskContext) -> ScoringContext {
    let base = ScoringContext::new(task.question.clone());
    let context = match base
        .clone()
        .with_tolerances(task.tolerances.iter().cloned())
    {
        Ok(context) => context,
        Err(err) => {
            tracing::warn!(task_id = %task.task_id, %err, "tolerances ignored");
            base
        }
    };
    context
        .with_label_aliases(extract_label_aliases(&task.ground_truth))
        .with_solution(&task.solution)
}

/// The [`UnitScorer`] backed by `earthverse_answer_units::score_answer`,
/// with the question and the task's tolerances as context.
#[derive(Debug, Clone, Copy, Default)]
pub struct AnswerUnitsScorer {
    /// Reading of U.
    pub reading: UnitReading,
}

impl UnitScorer for AnswerUnitsScorer {
    fn score_units(&self, task: &TaskContext, final_answer: &Value) -> UnitOutcome {
        self.outcome(score_task(
            &task.primary_gt,
            final_answer,
            &scoring_context(task),
        ))
    }
}

impl AnswerUnitsScorer {
    /// The outcome of this reading from an answer already scored with
    /// `score_task` (what [`UnitScorer::score_units`] returns), so that a
    /// caller that also needs the [`TaskScore`](earthverse_answer_units::TaskScore)
    /// (e.g. for the claim ledger) scores each answer once.
    pub fn outcome(&self, task_score: earthverse_answer_units::TaskScore) -> UnitOutcome {
        let score = match self.reading {
            UnitReading::Judge => task_score.into_judge_score(),
            UnitReading::Required | UnitReading::All => task_score.units,
        };
        let (u, correct, total) = match self.reading {
            UnitReading::Judge | UnitReading::Required => (
                score.u_required,
                score.units_counted_matched,
                score.units_counted,
            ),
            UnitReading::All => (score.u_all, score.units_matched, score.units_total),
        };
        let ledger = score
            .ledger
            .into_iter()
            .map(|e| AnswerUnitEntry {
                unit: e.path,
                expected: Some(e.expected),
                found: e.found,
                satisfied: e.matched,
                counted: match self.reading {
                    UnitReading::Judge | UnitReading::Required => e.counted,
                    UnitReading::All => true,
                },
                note: e.why,
            })
            .collect();
        UnitOutcome {
            unit_accuracy: u,
            correct: correct as f64,
            total: total as u64,
            ledger,
        }
    }
}
