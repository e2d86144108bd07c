//! # earthverse-evidence-ledger
//!
//! The claim–evidence ledger the paper recommends (App. B.3): for each
//! answer unit of a run, where the value the answer gives entered the
//! investigation, and, for each unsatisfied unit, which error family
//! (Figs. 8–10) explains it. It joins two things the workspace already
//! has: the unit ledger of `earthverse-answer-units` (which values are
//! right or wrong) and the trajectory's observations (what the agent saw
//! and computed). Pure: no IO, no async; the same inputs always give the
//! same ledger.
//!
//! ## Input
//! [`Observation`]s — `{step, tool, kind, files, text}` — in any order
//! (read in step order), the task prompt, the reference analysis' files
//! ([`reference_files`]) and a run's [`UnitLedgerEntry`] list (either
//! reading: against `primary_gt` or against the expert solution's Final
//! Answer). The `earthverse` CLI converts the release's recorded runs.
//!
//! ## Provenance ([`ClaimStatus`])
//! The claim's value is the answer's aligned value (`found`), else, for a
//! prose answer that matched, the expected value; a number inside a short
//! string (`"14.1 °C-days"`) is that number. A number `x` is looked for
//! in the prompt and then in every observation in step order, by tiers:
//! 1. at the answer's written precision (`|y − x| ≤` half a unit of `x`'s
//!    last decimal; a whole number only as itself), with at least half of
//!    the key's words (3 letters or more) on the line before it (at most
//!    120 bytes back);
//! 2. at that precision, without the key;
//! 3. within the unit's tolerance (answer-units' rule,
//!    [`earthverse_answer_units::matching::number_matches`]: max(2 %, the
//!    unit's absolute tolerance)), with the key;
//! 4. within the tolerance, without the key;
//! 5. a unit or scale conversion of an observed number at `x`'s precision
//!    (×/÷100, ×/÷1000; °F↔°C, K↔°C when the key names a temperature;
//!    m/s↔km/h, kt↔km/h, kt↔m/s when it names a speed; mi↔km, in↔mm, ft↔m
//!    when it names a length or depth), with the key's words before it,
//!    for answers of 3 significant digits or more: `transformed`.
//!
//! The first hit of the best tier decides: found in the prompt, `given`;
//! in a read or search output, `observed`; in the output of code or a
//! domain operation, `computed` (with the files that code read). Dates
//! are looked for as `YYYY-MM-DD` text, paths as a step that read the
//! file (else a text naming it), labels as text ignoring ASCII case (`_` and spaces
//! interchangeable, 3 characters or more). Booleans, `null` and long text
//! are `judgement` (conclusions, not traced); no value is `missing`;
//! anything not found is `unsupported`.
//!
//! **Small integers and near values.** A whole number below 100 (`1`,
//! `3`, `24`) is in almost every observation, and a number within 2 % of
//! the answer turns up by chance in any long table. Both are traced like
//! any number, but a trace without the key's words on the line before it
//! (tiers 2 and 4 for small integers, tier 4 for the rest) is
//! [`Strength::Weak`] and does not count in [`SystemSummary::traced_share`]
//! (`traced_share_with_weak` counts it); small integers are never traced
//! through a conversion.
//!
//! **Replaced values.** Numbers that follow every word of the claim's key
//! on their line (the first number after the mention), seen before the
//! active value's step and different from it beyond the tolerance, are
//! listed as [`Replaced`]: values the run superseded.
//!
//! ## Error families ([`ErrorFamily`])
//! Only counted, unsatisfied units get one; the first rule that applies:
//! 1. `missing`: no value (or no number where a number was expected);
//! 2. for a non-numeric expected value: a path → `wrong_source`, a date →
//!    `window_or_subset`, anything else → `label_mismatch`;
//! 3. `unit_or_scale`: a conversion above (whose unit words fit the key)
//!    or a scale slip (×/÷10, ×/÷10⁶: `1.23 million`) of the answer's
//!    number is within 2 % of the expected one (not when the expected
//!    value is a whole number below 100: a count);
//! 4. `rounding_or_precision`: the expected number rounded to the
//!    answer's written decimals is the answer, or the answer is off by
//!    one unit of its last decimal;
//! 5. `unsupported`: the value is not traced;
//! 6. `computed`: the code read only files outside the reference
//!    analysis → `wrong_source`, else `arithmetic` (right or inline inputs);
//! 7. `observed`/`transformed`: from a file outside the reference
//!    analysis → `wrong_source`; from a reference file →
//!    `window_or_subset` (the right file, a value it holds at another time
//!    or place); from a search snippet → `other`;
//! 8. `other` (a value only given by the prompt, no reference files known).
//!
//! ## Run-level families ([`RunFamily`])
//! [`diagnose_run`] widens the diagnosis from units to runs (§D.2, Figs.
//! 8–10): budget exhaustion, premature stopping, tool failure, failed
//! recovery, schema errors against the task's [`answer_contract`],
//! missing outputs, and the numeric, label and unit errors carried up
//! from the claims; each with its evidence steps, one primary family by a
//! documented precedence. [`judge_kinds`] reads the published judge's
//! typed `critical_errors` prefixes for comparison ([`ErrorKind`]).
//!
//! ```
//! use earthverse_answer_units::{score_answer, ScoringContext};
//! use earthverse_evidence_ledger::{ClaimStatus, ErrorFamily, Observation, ObservationKind, TraceIndex};
//! use serde_json::json;
//!
//! let gt = json!({"peak_c": 41.4, "hot_days": 5});
//! let question = "Return {\"peak_c\": 0, \"hot_days\": 0}";
//! let score = score_answer(&gt, &json!({"peak_c": 41.4, "hot_days": 4}), &ScoringContext::new(question));
//! let observations = vec![Observation {
//!     step: 3,
//!     tool: "python_exec".into(),
//!     kind: ObservationKind::Computed,
//!     files: vec!["data/physical_hazard/open_meteo.json".into()],
//!     text: "Peak: 41.4 C\nHot days: 4".into(),
//! }];
//! let reference = vec!["data/physical_hazard/open_meteo.json".to_owned()];
//! let index = TraceIndex::new(question, &observations, &reference);
//! let claims = index.claims(&score.ledger);
//! assert_eq!(claims[0].status, ClaimStatus::Computed);
//! assert_eq!(claims[0].source.as_ref().map(|s| s.step), Some(3));
//! assert_eq!(claims[1].error_family, Some(ErrorFamily::Arithmetic));
//! ```
#![deny(missing_docs)]

mod contract;
mod family;
mod files;
mod judge_kind;
mod model;
mod run_family;
mod summary;
mod trace;
mod values;

pub use contract::{answer_contract, answer_object, check_contract, BreachKind, ContractBreach};
pub use earthverse_answer_units::UnitLedgerEntry;
pub use files::reference_files;
pub use judge_kind::{diagnosed_kinds, judge_kind, judge_kinds, ErrorKind};
pub use model::{
    Claim, ClaimStatus, ErrorFamily, Observation, ObservationKind, Replaced, RunLedger, Source,
    Strength,
};
pub use run_family::{
    diagnose_run, FamilyHit, RunDiagnosis, RunFacts, RunFamily, StepFact, Termination,
    PAPER_TURN_BUDGET,
};
pub use summary::{summarize, SystemSummary};
pub use trace::{same_file, TraceIndex, SMALL_INTEGER_LIMIT};

/// Builds the ledger of one reading of a run in one call (see
/// [`TraceIndex`] to read several unit ledgers of the same run).
pub fn build_ledger(
    question: &str,
    observations: &[Observation],
    reference_files: &[String],
    units: &[UnitLedgerEntry],
    cited: &[String],
) -> RunLedger {
    TraceIndex::new(question, observations, reference_files).ledger(units, cited)
}
