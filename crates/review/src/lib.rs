//! # earthverse-review
//!
//! What a domain expert needs to check the judges (paper §7: no person
//! has checked them): a stratified sample of runs ([`stratified_sample`],
//! strata by system family, Core band and capability), each run's review
//! sheet ([`ReviewRun`]: question, expected units, the answer's values
//! with their ledger source, rubric criteria), an append-only label store
//! ([`append_label`], [`read_labels`]: one JSON line per click, written
//! under an exclusive lock in a single write and synced, so a killed
//! server or a second tab loses nothing), and the agreement of the
//! expert with the published LLM judge, our deterministic judge and our
//! ledger ([`review_agreement`]: Cohen's κ and raw agreement with
//! bootstrap intervals, per unit, per family, per rubric criterion).
//!
//! The web page that collects the labels is served by the `earthverse
//! review` command (a thin layer over this crate).
//!
//! ```
//! use earthverse_review::{stratified_sample, Candidate, Stratum};
//! let c = |s: &str, band: &str| Candidate {
//!     system: s.into(),
//!     task_id: "T1".into(),
//!     stratum: Stratum { system_family: "hosted".into(), core_band: band.into(), capability: "x".into() },
//! };
//! let all = vec![c("a", "<40"), c("b", "<40"), c("c", ">=70")];
//! let sample = stratified_sample(&all, 2, 2026);
//! // one from each stratum before a second from any
//! assert_eq!(sample.len(), 2);
//! assert!(sample.iter().any(|x| x.system == "c"));
//! ```
#![deny(missing_docs)]

mod agreement;
mod error;
mod labels;
mod sample;
mod sheet;

pub use agreement::{review_agreement, AgreementRow, Comparison};
pub use error::{Error, Result};
pub use labels::{
    append_label, check_appendable, latest_labels, read_existing_labels, read_labels, Label,
    LabelKey, Target,
};
pub use sample::{stratified_sample, Candidate, Stratum};
pub use sheet::{review_run, ReviewCriterion, ReviewRun, ReviewStep, ReviewUnit};
