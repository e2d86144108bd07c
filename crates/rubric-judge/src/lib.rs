//! # earthverse-rubric-judge
//!
//! Rubrics (5–8 criteria summing to 20 points, App. E RUBRIC), the
//! [`Judge`] trait with an LLM judge ([`LlmJudge`], the App. E JUDGE prompt
//! through any `ChatModel`, strict JSON, bounded re-asking, on-disk cache)
//! and a deterministic judge ([`DeterministicJudge`]: U from answer units,
//! H = U, a documented rubric approximation), the per-task scores of paper
//! §4.1 — A = min(H, U), Core = (A + P) / 2, Strict@95 — in an
//! [`EvaluationRecord`], pairwise win/tie/loss comparison (Fig. 7), and
//! agreement figures against published scores. Tasks and runs are read
//! through `earthverse-package-model`'s `Task` and `RecordedRun`
//! ([`TaskContext::from_task`], [`RunContext::from_recorded_run`]).
//!
//! ```
//! use earthverse_rubric_judge::task_scores;
//! // H = 90, U = 80, P = 70  →  A = 80, Core = 75.
//! let s = task_scores(90.0, 80.0, 70.0);
//! assert_eq!((s.answer, s.core, s.strict95), (80.0, 75.0, false));
//! ```
#![deny(missing_docs)]

mod batch;
mod cache;
mod deterministic;
mod error;
pub mod evidence;
pub mod families;
mod input;
mod judge;
mod llm;
mod outcome;
mod pairwise;
mod parse;
mod prompt;
mod record;
mod release_scoring;
mod rubric;
mod scoring;
pub mod unit_study;
mod units;

pub use batch::{
    compare_published, done_keys, find_runs, load_tasks, load_tasks_except, read_records, read_run,
    record_line, run_paths, PublishedAgreement, RecordWriter, RunFile,
};
pub use cache::{cache_key, JudgeCache};
pub use deterministic::{
    approximate_rubric, approximate_rubric_prepared, approximate_rubric_weighted,
    criterion_anchors, empty_rubric_ledger, evaluate_deterministic,
    evaluate_deterministic_prepared, evaluate_deterministic_with, Anchor, DeterministicJudge,
    PreparedRubric, RunHaystack, UnitOutcome, UnitScorer, ANCHOR_REL_TOLERANCE,
    DETERMINISTIC_JUDGE_ID, UNIT_WEIGHT,
};
/// Agreement of two paired score series (MAE, bias, Pearson, Spearman,
/// within 5 and 10 points): `earthverse-answer-units`' one agreement module,
/// where an undefined figure is `None`.
pub use earthverse_answer_units::{paired as agreement, PairedAgreement as Agreement};
pub use error::{JudgeError, Result};
pub use input::{RunContext, TaskContext, ToolStep};
pub use judge::{BlockingJudge, Judge};
pub use llm::{JudgeStats, LlmJudge, DEFAULT_MAX_JUDGE_ATTEMPTS, JUDGE_SEED};
pub use outcome::task_outcome;
pub use pairwise::{compare_pair, win_tie_loss, PairOutcome, PairwiseRecord, PAIRWISE_INSTRUCTION};
pub use parse::{parse_judge_reply, ParsedJudgement, RUBRIC_SCORE_SLACK};
pub use prompt::{
    render_judge_user_message, render_run_notes, render_tool_trace, JUDGE_CALIBRATION_CORE,
    JUDGE_OUTPUT_CONTRACT, JUDGE_PROMPT_VERSION, JUDGE_SYSTEM_PROMPT,
};
pub use record::{
    clamp_pct, task_scores, AnswerUnitEntry, CriterionEntry, EvaluationRecord, RunStatus,
    TaskLabels, TaskScores, TrajectoryFigures, Verdict, STRICT_THRESHOLD,
};
pub use release_scoring::{
    drop_in_background, score_release, JudgeCalls, JudgeChoice, ScoreJob, ScoredRelease,
};
pub use rubric::{
    CoverageBand, Criterion, Rubric, RubricReport, COVERAGE_BANDS, MAX_CRITERIA, MIN_CRITERIA,
    RUBRIC_TOTAL_POINTS,
};
pub use scoring::{
    score_batch, BatchScores, ReleaseDeterministicJudge, ScoreInput, ScoreOptions, SCORE_CHUNK,
};
pub use units::{scoring_context, AnswerUnitsScorer, UnitReading};
