//! # earthverse-package-model
//!
//! The data model of the EarthVerse benchmark (paper §3.3, Appendix C.7, E):
//! tasks, ground truth, rubrics, events, file inventories, recorded runs,
//! loaders for the public release and the authoring layout, content
//! sniffing, text extraction and **safe evidence access** (the only way any
//! other crate turns a model-supplied path into a file).
//!
//! Depends on no other earthverse crate except `answer-units` (unit
//! counting in [`validate`]) and `run-schema` (the diagnostics, status and
//! termination types of a run record, shared with the run writer).
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use earthverse_package_model::{evidence, sniff, text, Release};
//!
//! // A one-task release in the public layout.
//! let root = tempfile::tempdir()?;
//! std::fs::create_dir_all(root.path().join("tasks"))?;
//! std::fs::write(
//!     root.path().join("tasks/CSX-900_Q1.json"),
//!     r#"{"task_id": "CSX-900_Q1", "event_id": "CSX-900", "hazard_family": "tropical_cyclone",
//!         "question": "What was the peak gust?", "schema_note": "kept",
//!         "ground_truth": {"schema_version": "1.0", "primary_gt": {"peak_gust_ms": 61.0},
//!           "numeric_tolerances": {"peak_gust_ms": {"tolerance": 0.5, "value": 61.0}},
//!           "rubric": {"criteria": [{"name": "gust", "description": "d", "points": 20}], "total_points": 20}}}"#,
//! )?;
//! let package = root.path().join("packages/event_packages/standard_event_packages/packages/CSX-900");
//! std::fs::create_dir_all(package.join("data"))?;
//! std::fs::write(package.join("data/report.bin"), br#"{"gust_ms": 61.0}"#)?;
//!
//! let release = Release::load(root.path())?;
//! assert!(release.load_errors().is_empty());
//! let task = release.task("CSX-900_Q1").ok_or("task missing")?;
//! assert_eq!(task.extra["schema_note"], "kept"); // unknown fields survive
//! assert_eq!(task.ground_truth.tolerances()["peak_gust_ms"].accepts(61.3, None), Some(true));
//!
//! // Evidence access: release-relative paths resolve, hidden artifacts never do.
//! let file = evidence::resolve(
//!     &release.package_dir("CSX-900"),
//!     "event_packages/standard_event_packages/packages/CSX-900/data/report.bin",
//! )?;
//! assert_eq!(file.package_relative, "data/report.bin");
//! assert!(evidence::resolve(&release.package_dir("CSX-900"), "data/../../x").is_err());
//! assert!(evidence::resolve(&release.package_dir("CSX-900"), "data/Computed_GT.json").is_err());
//!
//! // The `.bin` is JSON, judged from its content.
//! let (kind, body) = text::read_text_file(&file.absolute)?;
//! assert_eq!(kind, sniff::FileKind::Json);
//! assert!(body.contains("gust_ms"));
//! # Ok(()) }
//! ```
//!
//! ## Public API
//!
//! The data model is at the crate root: [`Release`] (loading, tasks,
//! events, packages, load errors), [`Task`] and its [`GroundTruth`],
//! [`Rubric`] and [`Tolerance`]s, the recorded runs ([`RecordedRun`],
//! [`load_recorded_runs`]), the labels ([`HazardFamily`],
//! [`DifficultyLevel`], ...) and a run's [`RunCondition`]. The modules that
//! are public are families of functions used by name:
//! [`evidence`] (the only path from a model-supplied path to a file),
//! [`output`] (outputs never on inputs; the one atomic writer), [`sniff`]
//! and [`text`] (content sniffing, text extraction), [`validate`] (the
//! release gates), [`regenerate`] and [`authoring`] (the authoring layout),
//! and [`reference_reads`] (the files a task's reference analysis opens).
//! Everything else is private.
#![deny(missing_docs)]

pub mod authoring;
mod condition;
mod error;
pub mod evidence;
mod labels;
mod open;
pub mod output;
mod pdf_salvage;
pub mod reference_reads;
pub mod regenerate;
mod release;
mod run;
pub mod sniff;
mod task;
pub mod text;
pub mod validate;

pub use authoring::{export_authoring, load_authoring, DataMode, ExportFilter, ExportSummary};
pub use condition::{OracleKind, RunCondition};
pub use error::{PackageError, Result};
pub use evidence::{resolve, AccessError, ResolvedPath};
pub use labels::{CapabilityDimension, DifficultyLevel, EvaluationMode, HazardFamily};
pub use output::{ensure_output_outside, OutputError, Overlap};
pub use release::{
    load_recorded_answers_with_errors, load_recorded_runs, load_recorded_runs_with_errors,
    parse_json_record, read_json_record, run_file_paths, LoadError, RecordedAnswer,
    RecordedAnswerEntry, RecordedRunEntry, Release, PACKAGE_PATH_PREFIX, RELEASE_PACKAGES_DIR,
    TASK_PACKAGES_DIR,
};
pub use run::{
    RecordedRun, RecordedToolCall, RunDiagnostics, RunScores, RunStatus, TerminationReason,
    TokenCount, TrajectoryFigures,
};
pub use sniff::{sniff_bytes, sniff_file, FileKind};
pub use task::{Criterion, Event, FileRecord, GroundTruth, Rubric, Task, Tolerance, ToleranceRule};
pub use text::{extract_text, read_text_file};
