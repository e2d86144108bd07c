//! The [`Judge`] trait.

use crate::error::Result;
use crate::input::{RunContext, TaskContext};
use crate::record::EvaluationRecord;
use async_trait::async_trait;

/// Turns one run of one task into an [`EvaluationRecord`] (paper App. E,
/// JUDGE). Object-safe: `Box<dyn Judge>` works.
///
/// Implementations must score a failed solver run
/// ([`crate::RunStatus::Error`]) as zero without consulting any model
/// (§4.1: solver failures receive zero and stay in the denominator).
#[async_trait]
pub trait Judge: Send + Sync {
    /// A stable id written into every record (`deterministic-v1`,
    /// `openai:gpt-4.1`, ...).
    fn judge_id(&self) -> &str;

    /// Evaluates `run` against `task`.
    async fn evaluate(&self, task: &TaskContext, run: &RunContext) -> Result<EvaluationRecord>;

    /// The synchronous form of this judge, for one that computes without
    /// waiting on anything (the deterministic judge): [`crate::score_batch`]
    /// then scores a batch's runs on all cores instead of as concurrent
    /// calls. `None` (the default): the judge has only the async form.
    fn blocking(&self) -> Option<&dyn BlockingJudge> {
        None
    }
}

/// A judge that evaluates on the calling thread ([`Judge::blocking`]); its
/// records are those [`Judge::evaluate`] gives.
pub trait BlockingJudge: Send + Sync {
    /// Evaluates `run` against `task` now.
    fn evaluate_now(&self, task: &TaskContext, run: &RunContext) -> Result<EvaluationRecord>;
}
