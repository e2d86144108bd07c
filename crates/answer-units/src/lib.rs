//! # earthverse-answer-units
//!
//! Answer units (paper §3.3, §4.1): every scalar leaf of a task's
//! `primary_gt` is a unit. This crate decomposes the ground truth into units
//! ([`decompose`], [`count_units`]), reads a final answer of any shape
//! ([`parse_answer`]; a run that ended on a pending `python_exec` call
//! is read as the variables its code computes, `read_code`, behind the
//! feature `code-reading`, off by default and on in the scorers of
//! `earthverse-rubric-judge` and the CLI), matches
//! unit by unit with documented rules and tolerances ([`score_answer`])
//! and explains every decision in a ledger
//! ([`UnitLedgerEntry`]). Two readings of U come from one reference: over
//! all units (`u_all`) and over the units the question asks for
//! (`u_required`). [`score_task`] also scores the answer against the
//! expert solution's Final Answer ([`solution_final_answer`], which the
//! published judge received, Appendix E): [`TaskScore::u_judge`] is the
//! judge-like reading, compared with the published `unit_accuracy`.
//! Pure: no IO, no async.
//!
//! ```
//! use earthverse_answer_units::{score_answer, strict_at_95, ScoringContext};
//! use serde_json::json;
//!
//! let gt = json!({"event_date": "2024-05-24", "gap_mm": 0.74, "wet_count": 1});
//! let question = "Return JSON: {\"event_date\": \"YYYY-MM-DD\", \"gap_mm\": 0.0, \"wet_count\": 0}";
//! let ctx = ScoringContext::new(question);
//! let answer = json!("```json\n{\"event_date\": \"2024-05-24\", \"gap_mm\": 0.741, \"wet_count\": 2}\n```");
//! let score = score_answer(&gt, &answer, &ctx);
//! assert_eq!(score.units_matched, 2);
//! assert!((score.u_required - 66.666).abs() < 0.01);
//! assert!(!score.ledger[2].matched);
//! assert_eq!(strict_at_95([score.u_required]), 0.0);
//! ```
#![deny(missing_docs)]

mod agreement;
#[cfg(feature = "code-reading")]
mod code_reading;
mod context;
mod count;
mod error;
pub mod matching;
mod normalize;
mod parse;
mod score;
mod solution;
mod units;
mod values;

pub use agreement::{
    agreement, is_tuning_event, mean, paired, pearson, shown, spearman, standard_error,
    system_gap_noise, within, Agreement, PairedAgreement, RunPair, Shown, SystemAgreement,
    SystemGapNoise, MIN_RUNS_FOR_SYSTEM_GAP, UNDEFINED,
};
#[cfg(feature = "code-reading")]
pub use code_reading::{pending_python_code, read_code, CodeReading, SkippedStatement};
pub use context::{extract_label_aliases, extract_tolerances, ScoringContext};
pub use count::count_units;
pub use error::{Error, Result};
pub use matching::Rules;
pub use normalize::{key_meaning_words, normalize_key, normalize_text};
pub use parse::{parse_answer, parse_answer_text, AnswerShape, ParseReport, ParsedAnswer};
pub use score::{
    score_answer, score_answer_text, score_parsed, score_task, strict_at_95, JudgeReference,
    TaskScore, UnitLedgerEntry, UnitScore,
};
pub use solution::solution_final_answer;
pub use units::{decompose, Unit, UnitKind};
pub use values::{dates_in, literal_decimals, number_spans};
