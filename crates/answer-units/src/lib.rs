//! # earthverse-answer-units
//!
//! Answer units (paper §3.3, §4.1): decomposition of `primary_gt` into
//! scalar units, parsing of final answers, deterministic matching with
//! tolerances, and a per-unit ledger. Pure: no IO, no async.
#![deny(missing_docs)]

mod count;

pub use count::count_units;
