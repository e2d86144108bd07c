//! # earthverse-outcomes
//!
//! Task outcomes (`earthverse-stats-bootstrap`'s
//! [`TaskOutcome`](earthverse_stats_bootstrap::TaskOutcome)) from the
//! two places results live, and flat tables of them:
//!
//! - **evaluation records**, the JSONL that `earthverse score` (and
//!   `rubric_judge::score_batch`) writes, one `EvaluationRecord` per line:
//!   [`load_records_file`], [`from_records`];
//! - **recorded runs**, a release's `exploration/trajectories`, whose stored
//!   scores are read as published (§4.1): [`load_recorded`], labelled with
//!   the release's capabilities, difficulty and hazard family;
//! - [`OutcomeSources`], the input group of `leaderboard`, `compare` and
//!   `report` (their flags with the `clap` feature), loads any mix of both,
//!   fills missing tasks as failures when asked and applies prices;
//! - [`write_table`] writes any serialisable rows as JSONL or Parquet,
//!   atomically; [`task_rows`] is the per-task table.
//!
//! Rendering (text tables, HTML) is `earthverse-report`'s; this crate only
//! reads and writes.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use earthverse_outcomes::{load_records_file, task_rows, write_table};
//! let dir = tempfile::tempdir()?;
//! // A records file with one record of one system on one task.
//! let record = earthverse_rubric_judge::EvaluationRecord::solver_failure(
//!     "T1", "alpha", "deterministic", Vec::new(), "it crashed",
//! );
//! let records = dir.path().join("scores.jsonl");
//! std::fs::write(&records, format!("{}\n", serde_json::to_string(&record)?))?;
//! let loaded = load_records_file(&records)?;
//! assert_eq!(loaded.outcomes.len(), 1);
//! assert!(loaded.outcomes[0].failed); // a failed run stays in the denominator as 0
//! let table = dir.path().join("tasks.parquet");
//! write_table(&table, &task_rows(&loaded.outcomes))?;
//! assert!(std::fs::read(&table)?.starts_with(b"PAR1"));
//! // Bad input names the file.
//! let missing = load_records_file(&dir.path().join("nope.jsonl")).unwrap_err();
//! assert!(missing.to_string().contains("nope.jsonl"));
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod error;
mod sources;
mod tables;

pub use error::{Error, Result};
pub use sources::{
    attach_answers, from_records, infer_release, load_condition, load_recorded, load_records_file,
    outcome_of_recorded, paired_conditions, LoadedOutcomes, OutcomeSources,
};
pub use tables::{task_rows, write_table, TaskRow};
