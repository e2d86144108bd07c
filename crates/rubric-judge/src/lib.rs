//! # earthverse-rubric-judge
//!
//! Rubrics (5–8 criteria summing to 20 points), the `Judge` trait with LLM
//! and deterministic judges, and the per-task scores of paper §4.1:
//! A = min(H, U), Core = (A + P) / 2, Strict@95.
//!
//! ```
//! use earthverse_rubric_judge::task_scores;
//! // H = 90, U = 80, P = 70  →  A = 80, Core = 75.
//! let s = task_scores(90.0, 80.0, 70.0);
//! assert_eq!((s.answer, s.core, s.strict95), (80.0, 75.0, false));
//! ```
#![deny(missing_docs)]

mod error;
mod record;

pub use error::{JudgeError, Result};
pub use record::{
    clamp_pct, task_scores, AnswerUnitEntry, CriterionEntry, EvaluationRecord, RunStatus,
    TaskLabels, TaskScores, TrajectoryFigures, Verdict, STRICT_THRESHOLD,
};
