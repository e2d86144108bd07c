//! The release gates of Appendix C.7 that a machine can check, as a library.
//!
//! [`validate`] loads nothing itself: it takes a loaded [`Release`] and
//! checks, for every task,
//!
//! - the rubric has 5–8 criteria whose points sum to exactly 20 (and a
//!   stated `total_points`, if any, is 20);
//! - `primary_gt` is present (not `null`, not an empty object or list);
//! - the ground truth's `schema_version` is one the release uses
//!   ([`KNOWN_SCHEMA_VERSIONS`]);
//! - the public question reveals no package path, file name or hidden
//!   artifact name (Appendix E, acceptance check 2), reported as
//!   **warnings** in `leak_warnings` (they do not fail the gates);
//! - every `event_files` record exists in its package with the recorded
//!   byte size and sha256 prefix (files are hashed in parallel with rayon);
//! - every file in a package a task reads is listed by the inventory of
//!   a task reading it (`unlisted_files`: the paper's package manifests
//!   are exhaustive, App. C.7; the walk never follows symlinks, so a
//!   symlink loop is one unlisted entry);
//! - answer units: every scalar leaf of `primary_gt` (§4.1,
//!   [`earthverse_answer_units::count_units`]).
//!
//! and counts the tasks, events and recorded runs. With
//! [`ValidateOptions::regenerate_gt`] it also re-runs every task's
//! `compute_gt.py` (see [`crate::regenerate`]).
//!
//! A `files_missing` entry is **not** a gate failure: the public release
//! replaced some large rasters by previews, and the paper's packages list
//! them anyway. Size or hash mismatches, rubric errors, missing
//! `primary_gt`, unknown schemas, task files that do not load, unlisted
//! files, and (with regeneration) tasks whose ground truth differs or
//! fails are.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use earthverse_package_model::{validate::{validate, ValidateOptions}, Release};
//! let root = tempfile::tempdir()?;
//! std::fs::create_dir_all(root.path().join("tasks"))?;
//! let criteria: Vec<_> = (0..5)
//!     .map(|i| serde_json::json!({"name": format!("c{i}"), "description": "d", "points": 4}))
//!     .collect();
//! let task = serde_json::json!({
//!     "task_id": "CSX-900_Q1", "event_id": "CSX-900",
//!     "question": "Report the peak gust from the package.",
//!     "ground_truth": {"schema_version": "1.0", "primary_gt": {"gust_ms": 61.0, "dates": ["a", "b"]},
//!                      "rubric": {"criteria": criteria, "total_points": 20}},
//!     "event_files": [{"relative_path": "data/report.bin", "bytes": 2,
//!                      "sha256_16": "44136fa355b3678a"}]
//! });
//! std::fs::write(root.path().join("tasks/CSX-900_Q1.json"), task.to_string())?;
//! let package = root.path().join("packages/event_packages/standard_event_packages/packages/CSX-900");
//! std::fs::create_dir_all(package.join("data"))?;
//! std::fs::write(package.join("data/report.bin"), b"{}")?;
//!
//! let report = validate(&Release::load(root.path())?, &ValidateOptions::default())?;
//! assert_eq!((report.tasks, report.events, report.files_present), (1, 1, 1));
//! assert_eq!(report.answer_units_total, 3);
//! assert!(report.passed());
//! # Ok(()) }
//! ```

use crate::error::{PackageError, Result};
use crate::evidence::HIDDEN_ARTIFACTS;
use crate::regenerate::{regenerate_ground_truth, GtRegenerationReport, RegenerateOptions};
use crate::release::{Release, PACKAGE_PATH_PREFIX};
use crate::task::Task;
use rayon::prelude::*;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

/// `ground_truth.schema_version` values the public release uses.
pub const KNOWN_SCHEMA_VERSIONS: [&str; 3] = ["1.0", "2.0", "crossscale_extreme_event_bench_v1"];

/// Number of rubric criteria a task must have (Appendix C.7).
pub const RUBRIC_CRITERIA: std::ops::RangeInclusive<usize> = 5..=8;

/// Points a rubric must sum to (§4.1).
pub const RUBRIC_TOTAL_POINTS: f64 = 20.0;

/// Read buffer for hashing: large reads keep the hash, not the syscalls,
/// the bottleneck.
const HASH_BUFFER_BYTES: usize = 1 << 20;

/// What [`validate`] should do besides the always-on gates.
#[derive(Debug, Clone, Default)]
pub struct ValidateOptions {
    /// Re-run each task's `compute_gt.py` and compare `primary_gt`.
    pub regenerate_gt: bool,
    /// How to run the programs when `regenerate_gt` is set.
    pub regenerate: RegenerateOptions,
}

/// One file of an `event_files` inventory, as the checks refer to it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ListedFile {
    /// The event (package) id.
    pub event_id: String,
    /// The package-relative path.
    pub relative_path: String,
}

/// A file whose size differs from its inventory record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SizeMismatch {
    /// The event (package) id.
    pub event_id: String,
    /// The package-relative path.
    pub relative_path: String,
    /// The size the inventory records.
    pub expected_bytes: u64,
    /// The size on disk.
    pub actual_bytes: u64,
    /// Whether the gap could be line endings alone: the file is smaller
    /// than recorded by at most its number of LF bytes (a file recorded
    /// with some CRLF lines and published with LF). Informational: the
    /// hash still cannot be verified, so it stays a mismatch.
    pub explainable_by_line_endings: bool,
}

/// A file whose sha256 prefix differs from its inventory record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShaMismatch {
    /// The event (package) id.
    pub event_id: String,
    /// The package-relative path.
    pub relative_path: String,
    /// The prefix the inventory records.
    pub expected_sha256_16: String,
    /// The first 16 hex digits of the file's SHA-256.
    pub actual_sha256_16: String,
}

/// Two tasks of one event that disagree about a file's size or hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InventoryConflict {
    /// The event (package) id.
    pub event_id: String,
    /// The package-relative path.
    pub relative_path: String,
    /// The tasks whose records disagree with the first one seen.
    pub task_ids: Vec<String>,
}

/// Files present in a package that no inventory reading it lists (the
/// paper's package manifests are exhaustive, App. C.7).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnlistedFiles {
    /// The event (package) id.
    pub event_id: String,
    /// The package folder, relative to the release root (an event's
    /// package, or a task's own under `task_packages/`).
    pub package: String,
    /// The tasks whose `event_files` were compared (those reading this package).
    pub task_ids: Vec<String>,
    /// How many entries are not listed.
    pub count: usize,
    /// Their package-relative paths, sorted (a symlink is one entry, never
    /// followed; a name that is not UTF-8 is shown lossily).
    pub paths: Vec<String>,
}

/// A problem with one task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskIssue {
    /// The task id.
    pub task_id: String,
    /// What is wrong.
    pub message: String,
}

/// What kind of thing the public question reveals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeakKind {
    /// A hidden artifact name (`computed_gt.json`, `compute_gt.py`, ...).
    HiddenArtifact,
    /// A package path (`event_packages/...`, `data/<category>/...`,
    /// `metadata/files.csv`, or an inventory path).
    PackagePath,
    /// The file name of an inventory record, with or without its extension.
    FileName,
}

/// A public question that reveals something it should not (Appendix E,
/// acceptance check 2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LeakWarning {
    /// The task id.
    pub task_id: String,
    /// What kind of thing leaks.
    pub kind: LeakKind,
    /// The revealed text, as it appears in the question.
    pub text: String,
}

/// A task or run file that did not load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileLoadError {
    /// The file.
    pub path: String,
    /// The offending field (`.` for the whole document).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

/// The outcome of [`validate`]; `--json` prints it as one document.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ValidationReport {
    /// The release root validated.
    pub release_root: PathBuf,
    /// Tasks that loaded.
    pub tasks: usize,
    /// Events (from tasks and package folders).
    pub events: usize,
    /// Recorded runs that loaded.
    pub recorded_runs: usize,
    /// Task files that did not load (a gate failure).
    pub task_load_errors: Vec<FileLoadError>,
    /// Recorded-run files that did not load (a gate failure).
    pub run_load_errors: Vec<FileLoadError>,
    /// Distinct `(event, relative_path)` inventory records over all tasks.
    pub files_listed: usize,
    /// Of those, files that exist.
    pub files_present: usize,
    /// Listed files absent from their package (reported, not a failure).
    pub files_missing: Vec<ListedFile>,
    /// Present files whose size differs from the record.
    pub size_mismatch: Vec<SizeMismatch>,
    /// Present files whose sha256 prefix differs from the record.
    pub sha_mismatch: Vec<ShaMismatch>,
    /// Present files that match their record only with the other line
    /// endings (recorded with CRLF, published with LF, or the reverse): the
    /// release's inventories were written on Windows and its text files
    /// normalised to LF by git. Reported, not a failure.
    pub line_endings_normalised: Vec<ListedFile>,
    /// Listed paths that escape their package or name a non-file.
    pub unreadable_files: Vec<TaskIssue>,
    /// Tasks of one event that disagree about a file.
    pub inventory_conflicts: Vec<InventoryConflict>,
    /// Packages holding files their tasks' inventories do not list (a
    /// gate failure: the manifests are exhaustive).
    pub unlisted_files: Vec<UnlistedFiles>,
    /// Bytes hashed.
    pub bytes_hashed: u64,
    /// Rubrics that break the 5–8 criteria / 20 points rule.
    pub rubric_errors: Vec<TaskIssue>,
    /// Tasks whose `primary_gt` is null or empty.
    pub primary_gt_missing: Vec<String>,
    /// Tasks with a missing or unknown `schema_version`.
    pub schema_errors: Vec<TaskIssue>,
    /// Public questions that reveal package paths, file names or hidden
    /// artifact names (warnings).
    pub leak_warnings: Vec<LeakWarning>,
    /// Answer units over all tasks (§4.1).
    pub answer_units_total: usize,
    /// Answer units per task.
    pub answer_units_by_task: BTreeMap<String, usize>,
    /// With `--regenerate-gt`: the comparison of regenerated ground truth.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gt_regeneration: Option<GtRegenerationReport>,
    /// The names of the gates that failed (empty when all hold).
    pub failed_gates: Vec<String>,
}

impl ValidationReport {
    /// Whether every gate holds.
    pub fn passed(&self) -> bool {
        self.failed_gates.is_empty()
    }

    fn compute_failed_gates(&mut self) {
        let mut failed = Vec::new();
        let mut gate = |name: &str, bad: bool| {
            if bad {
                failed.push(name.to_string());
            }
        };
        // A release of no task has nothing to benchmark (issue 49: an
        // empty release used to PASS every gate).
        gate(
            "no_tasks",
            self.tasks == 0 && self.task_load_errors.is_empty(),
        );
        gate("task_load_errors", !self.task_load_errors.is_empty());
        gate("run_load_errors", !self.run_load_errors.is_empty());
        gate("size_mismatch", !self.size_mismatch.is_empty());
        gate("sha_mismatch", !self.sha_mismatch.is_empty());
        gate("unreadable_files", !self.unreadable_files.is_empty());
        gate("inventory_conflicts", !self.inventory_conflicts.is_empty());
        gate("unlisted_files", !self.unlisted_files.is_empty());
        gate("rubric_errors", !self.rubric_errors.is_empty());
        gate("primary_gt_missing", !self.primary_gt_missing.is_empty());
        gate("schema_errors", !self.schema_errors.is_empty());
        if let Some(gt) = &self.gt_regeneration {
            gate("gt_regeneration_differs", !gt.differs.is_empty());
            gate("gt_regeneration_failed", !gt.failed.is_empty());
        }
        self.failed_gates = failed;
    }
}

/// Runs the release gates over `release`.
///
/// Errors only when the release cannot be examined at all (the recorded
/// runs directory is unreadable, or the regeneration export fails); every
/// per-file and per-task problem is a field of the report.
pub fn validate(release: &Release, options: &ValidateOptions) -> Result<ValidationReport> {
    let mut report = ValidationReport {
        release_root: release.root().to_path_buf(),
        tasks: release.tasks().len(),
        events: release.event_ids().len(),
        ..ValidationReport::default()
    };
    report.task_load_errors = release
        .load_errors()
        .iter()
        .map(|e| FileLoadError {
            path: e.path.display().to_string(),
            field: e.field.clone(),
            message: e.message.clone(),
        })
        .collect();
    // Loading the recorded runs (JSON parsing) overlaps with hashing.
    let mut files_report = ValidationReport::default();
    let (runs, ()) = rayon::join(
        || release.recorded_runs_with_errors(),
        || check_files(release, &mut files_report),
    );
    let (runs, run_errors) = runs?;
    report.recorded_runs = runs.len();
    report.run_load_errors = run_errors
        .iter()
        .map(|e| FileLoadError {
            path: e.path.display().to_string(),
            field: e.field.clone(),
            message: e.message.clone(),
        })
        .collect();

    for task in release.tasks() {
        check_rubric(task, &mut report.rubric_errors);
        if is_empty_gt(&task.ground_truth.primary_gt) {
            report.primary_gt_missing.push(task.task_id.clone());
        }
        check_schema(task, &mut report.schema_errors);
        report.leak_warnings.extend(question_leaks(task));
        let units = earthverse_answer_units::count_units(&task.ground_truth.primary_gt);
        report.answer_units_total += units;
        report
            .answer_units_by_task
            .insert(task.task_id.clone(), units);
    }

    report.files_listed = files_report.files_listed;
    report.files_present = files_report.files_present;
    report.files_missing = files_report.files_missing;
    report.size_mismatch = files_report.size_mismatch;
    report.sha_mismatch = files_report.sha_mismatch;
    report.line_endings_normalised = files_report.line_endings_normalised;
    report.unreadable_files = files_report.unreadable_files;
    report.inventory_conflicts = files_report.inventory_conflicts;
    report.unlisted_files = files_report.unlisted_files;
    report.bytes_hashed = files_report.bytes_hashed;

    if options.regenerate_gt {
        report.gt_regeneration = Some(regenerate_ground_truth(release, &options.regenerate)?);
    }
    report.compute_failed_gates();
    tracing::info!(
        tasks = report.tasks,
        failed = ?report.failed_gates,
        "validation finished"
    );
    Ok(report)
}

fn is_empty_gt(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::Null => true,
        serde_json::Value::Object(map) => map.is_empty(),
        serde_json::Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

fn check_rubric(task: &Task, errors: &mut Vec<TaskIssue>) {
    let rubric = &task.ground_truth.rubric;
    let mut problems = Vec::new();
    let n = rubric.criteria.len();
    if !RUBRIC_CRITERIA.contains(&n) {
        problems.push(format!("{n} criteria (need 5-8)"));
    }
    let sum = rubric.points_sum();
    if (sum - RUBRIC_TOTAL_POINTS).abs() > 1e-9 {
        problems.push(format!("criteria points sum to {sum} (need 20)"));
    }
    if let Some(total) = rubric.total_points {
        if (total - RUBRIC_TOTAL_POINTS).abs() > 1e-9 {
            problems.push(format!("total_points is {total} (need 20)"));
        }
    }
    if !problems.is_empty() {
        errors.push(TaskIssue {
            task_id: task.task_id.clone(),
            message: problems.join("; "),
        });
    }
}

fn check_schema(task: &Task, errors: &mut Vec<TaskIssue>) {
    match task.ground_truth.schema_version.as_deref() {
        Some(v) if KNOWN_SCHEMA_VERSIONS.contains(&v) => {}
        Some(v) => errors.push(TaskIssue {
            task_id: task.task_id.clone(),
            message: format!("unknown schema_version {v:?}"),
        }),
        None => errors.push(TaskIssue {
            task_id: task.task_id.clone(),
            message: "missing ground_truth.schema_version".into(),
        }),
    }
}

/// Whether `c` can continue a path or file-name token.
fn is_token_char(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | '\\')
}

/// Occurrences of `needle` in `haystack` that stand as whole tokens (not
/// inside a longer path or name). ASCII case-insensitive when `fold`.
fn contains_token(haystack: &str, needle: &str, fold: bool) -> bool {
    if needle.is_empty() || needle.len() > haystack.len() {
        return false;
    }
    let (hay, pat) = if fold {
        (haystack.to_ascii_lowercase(), needle.to_ascii_lowercase())
    } else {
        (haystack.to_string(), needle.to_string())
    };
    let mut from = 0;
    while let Some(pos) = hay[from..].find(&pat) {
        let start = from + pos;
        let end = start + pat.len();
        let before_ok = hay[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !is_token_char(c));
        // A trailing full stop or comma ends a sentence, not a name.
        let rest = &hay[end..];
        let after_ok = match rest.chars().next() {
            None => true,
            Some('.' | ',') => rest.chars().nth(1).is_none_or(|c| !is_token_char(c)),
            Some(c) => !is_token_char(c),
        };
        if before_ok && after_ok {
            return true;
        }
        from = start + pat.chars().next().map_or(1, char::len_utf8);
    }
    false
}

/// Whether a file stem is distinctive enough that seeing it in prose is a
/// leak rather than an ordinary word: at least 8 characters and containing
/// an underscore or a digit (`event_reports_003_Locked_anchor`, not `report`).
fn distinctive_stem(stem: &str) -> bool {
    stem.chars().count() >= 8 && stem.chars().any(|c| c == '_' || c.is_ascii_digit())
}

/// Leak check of Appendix E, acceptance check 2: the public question must
/// reveal no package path, file name or hidden artifact name.
///
/// To avoid false positives on ordinary words, names are matched only as
/// whole tokens, hidden artifacts only with their extension or as their
/// non-word stems (`computed_gt`, `compute_gt`, `solution_en`), and a file
/// name without extension only when it is distinctive (see source).
pub fn question_leaks(task: &Task) -> Vec<LeakWarning> {
    let question = task.question.as_str();
    let mut found: BTreeSet<(LeakKind, String)> = BTreeSet::new();
    for name in HIDDEN_ARTIFACTS {
        if contains_token(question, name, true) {
            found.insert((LeakKind::HiddenArtifact, name.to_string()));
        }
    }
    for stem in ["computed_gt", "compute_gt", "solution_en", "question_en"] {
        if contains_token(question, stem, true) && !found.iter().any(|(_, t)| t.starts_with(stem)) {
            found.insert((LeakKind::HiddenArtifact, stem.to_string()));
        }
    }
    for marker in [
        PACKAGE_PATH_PREFIX,
        "event_packages/",
        "standard_event_packages",
        "metadata/files.csv",
        "metadata/event.json",
    ] {
        if question.contains(marker) {
            found.insert((LeakKind::PackagePath, marker.to_string()));
        }
    }
    for word in question.split(|c: char| {
        c.is_whitespace() || matches!(c, '`' | '"' | '\'' | '(' | ')' | '<' | '>' | '[' | ']')
    }) {
        // `data/<something>/...` is how package paths start.
        if let Some(rest) = word.strip_prefix("data/") {
            if rest.contains('/') {
                found.insert((
                    LeakKind::PackagePath,
                    word.trim_end_matches(['.', ',', ':', ';']).to_string(),
                ));
            }
        }
    }
    for record in &task.event_files {
        let rel = record.relative_path.as_str();
        if contains_token(question, rel, false) {
            found.insert((LeakKind::PackagePath, rel.to_string()));
            continue;
        }
        let name = rel.rsplit('/').next().unwrap_or(rel);
        if name.contains('.') && contains_token(question, name, false) {
            found.insert((LeakKind::FileName, name.to_string()));
            continue;
        }
        let stem = name.split_once('.').map_or(name, |(s, _)| s);
        if distinctive_stem(stem) && contains_token(question, stem, false) {
            found.insert((LeakKind::FileName, stem.to_string()));
        }
    }
    found
        .into_iter()
        .map(|(kind, text)| LeakWarning {
            task_id: task.task_id.clone(),
            kind,
            text,
        })
        .collect()
}

/// The expected size and hash of one listed file, and the tasks listing it.
struct Expectation {
    bytes: Option<u64>,
    sha256_16: Option<String>,
    first_task: String,
    conflicting_tasks: Vec<String>,
}

/// What hashing one file found.
enum FileState {
    Missing,
    NotAFile(String),
    Present {
        bytes: u64,
        sha256_16: String,
        path: PathBuf,
    },
}

fn check_files(release: &Release, report: &mut ValidationReport) {
    // Keyed by the package the task reads (its own, in a perturbed
    // release, else its event's), then by the listed file.
    let mut listed: BTreeMap<(PathBuf, ListedFile), Expectation> = BTreeMap::new();
    for task in release.tasks() {
        let package = release.task_package_dir(task);
        for record in &task.event_files {
            let key = (
                package.clone(),
                ListedFile {
                    event_id: task.event_id.clone(),
                    relative_path: record.relative_path.clone(),
                },
            );
            match listed.get_mut(&key) {
                Some(exp) => {
                    if exp.bytes != record.bytes || exp.sha256_16 != record.sha256_16 {
                        exp.conflicting_tasks.push(task.task_id.clone());
                    }
                }
                None => {
                    listed.insert(
                        key,
                        Expectation {
                            bytes: record.bytes,
                            sha256_16: record.sha256_16.clone(),
                            first_task: task.task_id.clone(),
                            conflicting_tasks: Vec::new(),
                        },
                    );
                }
            }
        }
    }
    report.files_listed = listed.len();
    report.unlisted_files = unlisted_files(release, &mut report.unreadable_files);
    let entries: Vec<(&(PathBuf, ListedFile), &Expectation)> = listed.iter().collect();
    let states: Vec<FileState> = entries
        .par_iter()
        .map(|((package, file), _)| inspect_file(package, &file.relative_path))
        .collect();
    for (((_, file), exp), state) in entries.into_iter().zip(states) {
        if !exp.conflicting_tasks.is_empty() {
            let mut task_ids = vec![exp.first_task.clone()];
            task_ids.extend(exp.conflicting_tasks.iter().cloned());
            report.inventory_conflicts.push(InventoryConflict {
                event_id: file.event_id.clone(),
                relative_path: file.relative_path.clone(),
                task_ids,
            });
        }
        match state {
            FileState::Missing => report.files_missing.push(file.clone()),
            FileState::NotAFile(message) => report.unreadable_files.push(TaskIssue {
                task_id: exp.first_task.clone(),
                message: format!("{}/{}: {message}", file.event_id, file.relative_path),
            }),
            FileState::Present {
                bytes,
                sha256_16,
                path,
            } => {
                report.files_present += 1;
                report.bytes_hashed += bytes;
                let size_ok = exp.bytes.is_none_or(|b| b == bytes);
                let sha_ok = exp
                    .sha256_16
                    .as_deref()
                    .is_none_or(|e| sha_matches(e, &sha256_16));
                if !(size_ok && sha_ok) && matches_with_other_line_endings(&path, exp) {
                    report.line_endings_normalised.push(file.clone());
                    continue;
                }
                if let Some(expected) = exp.bytes {
                    if expected != bytes {
                        let explainable_by_line_endings = expected > bytes
                            && count_line_feeds(&path).is_some_and(|lf| expected - bytes <= lf);
                        report.size_mismatch.push(SizeMismatch {
                            event_id: file.event_id.clone(),
                            relative_path: file.relative_path.clone(),
                            expected_bytes: expected,
                            actual_bytes: bytes,
                            explainable_by_line_endings,
                        });
                    }
                }
                if let Some(expected) = &exp.sha256_16 {
                    if !sha_matches(expected, &sha256_16) {
                        report.sha_mismatch.push(ShaMismatch {
                            event_id: file.event_id.clone(),
                            relative_path: file.relative_path.clone(),
                            expected_sha256_16: expected.clone(),
                            actual_sha256_16: sha256_16,
                        });
                    }
                }
            }
        }
    }
}

/// Every package a task reads, walked without following symlinks, against
/// the union of the inventories of the tasks reading it (a task's own
/// package against that task's alone). A folder that cannot be read is an
/// `unreadable_files` issue of the first task reading it.
fn unlisted_files(release: &Release, unreadable: &mut Vec<TaskIssue>) -> Vec<UnlistedFiles> {
    let mut packages: BTreeMap<PathBuf, (String, Vec<String>, BTreeSet<String>)> = BTreeMap::new();
    for task in release.tasks() {
        let entry = packages
            .entry(release.task_package_dir(task))
            .or_insert_with(|| (task.event_id.clone(), Vec::new(), BTreeSet::new()));
        entry.1.push(task.task_id.clone());
        entry
            .2
            .extend(task.event_files.iter().map(|r| r.relative_path.clone()));
    }
    let mut found = Vec::new();
    for (package, (event_id, task_ids, listed)) in packages {
        if !package.is_dir() {
            continue;
        }
        let mut paths = Vec::new();
        for entry in walkdir::WalkDir::new(&package)
            .follow_links(false)
            .sort_by_file_name()
        {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    unreadable.push(TaskIssue {
                        task_id: task_ids.first().cloned().unwrap_or_default(),
                        message: format!("{event_id}: {e}"),
                    });
                    continue;
                }
            };
            if entry.file_type().is_dir() {
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(&package) else {
                continue;
            };
            let relative = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            let prefix = format!("{relative}/");
            let is_listed = listed.contains(&relative)
                // A symlinked folder the inventory lists files through.
                || (entry.file_type().is_symlink()
                    && listed.iter().any(|l| l.starts_with(&prefix)));
            if !is_listed {
                paths.push(relative);
            }
        }
        paths.sort();
        if !paths.is_empty() {
            found.push(UnlistedFiles {
                event_id,
                package: package
                    .strip_prefix(release.root())
                    .unwrap_or(&package)
                    .display()
                    .to_string(),
                task_ids,
                count: paths.len(),
                paths,
            });
        }
    }
    found
}

/// Finds and hashes one listed file, refusing paths that leave the package.
fn inspect_file(package: &Path, relative_path: &str) -> FileState {
    let relative = Path::new(relative_path);
    if relative.is_absolute()
        || relative.components().any(|c| {
            !matches!(
                c,
                std::path::Component::Normal(_) | std::path::Component::CurDir
            )
        })
    {
        return FileState::NotAFile("path leaves the package".into());
    }
    let path = package.join(relative);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return FileState::Missing,
        Err(e) => return FileState::NotAFile(e.to_string()),
    };
    if meta.file_type().is_symlink() {
        match (path.canonicalize(), package.canonicalize()) {
            (Ok(target), Ok(root)) if target.starts_with(&root) => {}
            (Err(e), _) if e.kind() == std::io::ErrorKind::NotFound => return FileState::Missing,
            _ => return FileState::NotAFile("symlink leads outside the package".into()),
        }
    }
    match hash_file(&path) {
        Ok((bytes, hex)) => FileState::Present {
            bytes,
            sha256_16: hex[..16].to_string(),
            path,
        },
        Err(PackageError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            FileState::Missing
        }
        Err(e) => FileState::NotAFile(e.to_string()),
    }
}

/// Number of LF bytes in a file.
fn count_line_feeds(path: &Path) -> Option<u64> {
    let bytes = std::fs::read(path).ok()?;
    Some(memchr::memchr_iter(b'\n', &bytes).count() as u64)
}

/// Whether a recorded sha256 prefix (any case, at least 8 hex digits)
/// agrees with a computed 16-digit prefix.
fn sha_matches(expected: &str, actual16: &str) -> bool {
    let expected = expected.trim().to_ascii_lowercase();
    expected.len() >= 8
        && if expected.len() <= actual16.len() {
            actual16.starts_with(&expected)
        } else {
            expected.starts_with(actual16)
        }
}

/// Line-ending conversion applied while hashing.
#[derive(Clone, Copy)]
enum LineEndings {
    /// Every LF not preceded by CR becomes CRLF.
    ToCrlf,
    /// Every CRLF becomes LF.
    ToLf,
}

/// Whether the file matches its record's size and hash after converting
/// its line endings one way or the other (only tried after a mismatch).
fn matches_with_other_line_endings(path: &Path, exp: &Expectation) -> bool {
    [LineEndings::ToCrlf, LineEndings::ToLf]
        .into_iter()
        .any(|mode| {
            hash_file_converted(path, mode).is_ok_and(|(bytes, hex)| {
                exp.bytes.is_none_or(|b| b == bytes)
                    && exp
                        .sha256_16
                        .as_deref()
                        .is_none_or(|e| sha_matches(e, &hex[..16]))
            })
        })
}

/// Size and hex SHA-256 of a file's bytes after a line-ending conversion.
fn hash_file_converted(path: &Path, mode: LineEndings) -> Result<(u64, String)> {
    let mut file = std::fs::File::open(path).map_err(|e| PackageError::io(path, e))?;
    HASH_BUFFER.with(|cell| {
        let mut buffer = cell.borrow_mut();
        if buffer.len() < HASH_BUFFER_BYTES {
            buffer.resize(HASH_BUFFER_BYTES, 0);
        }
        let mut hasher = Sha256::new();
        let mut total = 0u64;
        // The last byte of the previous block (CR handling across blocks), and
        // for ToLf a CR held back until we see whether LF follows.
        let mut previous: u8 = 0;
        let mut held_cr = false;
        loop {
            let n = file
                .read(&mut buffer)
                .map_err(|e| PackageError::io(path, e))?;
            if n == 0 {
                break;
            }
            let block = &buffer[..n];
            let mut start = 0;
            for (i, &byte) in block.iter().enumerate() {
                match mode {
                    LineEndings::ToCrlf => {
                        let before = if i == 0 { previous } else { block[i - 1] };
                        if byte == b'\n' && before != b'\r' {
                            hasher.update(&block[start..i]);
                            hasher.update(b"\r");
                            total += (i - start) as u64 + 1;
                            start = i;
                        }
                    }
                    LineEndings::ToLf => {
                        if held_cr {
                            held_cr = false;
                            if byte != b'\n' {
                                hasher.update(b"\r");
                                total += 1;
                            }
                        }
                        if byte == b'\r' {
                            hasher.update(&block[start..i]);
                            total += (i - start) as u64;
                            start = i + 1;
                            held_cr = true;
                        }
                    }
                }
            }
            hasher.update(&block[start..]);
            total += (n - start) as u64;
            previous = block[n - 1];
        }
        if held_cr {
            hasher.update(b"\r");
            total += 1;
        }
        Ok((total, hex::encode(hasher.finalize())))
    })
}

/// [`hash_file`] over many files in parallel (rayon's global pool), in order.
pub fn hash_files_parallel(paths: &[PathBuf]) -> Vec<Result<(u64, String)>> {
    paths.par_iter().map(|p| hash_file(p)).collect()
}

thread_local! {
    /// One read buffer per hashing thread, allocated once: a fresh 1 MiB
    /// buffer per file costs more than hashing the release's many small files.
    static HASH_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The size and full lowercase hex SHA-256 of a file, read in 1 MiB blocks.
pub fn hash_file(path: &Path) -> Result<(u64, String)> {
    let mut file = std::fs::File::open(path).map_err(|e| PackageError::io(path, e))?;
    if !file
        .metadata()
        .map_err(|e| PackageError::io(path, e))?
        .is_file()
    {
        return Err(PackageError::io(
            path,
            std::io::Error::other("not a regular file"),
        ));
    }
    HASH_BUFFER.with(|cell| {
        let mut buffer = cell.borrow_mut();
        if buffer.len() < HASH_BUFFER_BYTES {
            buffer.resize(HASH_BUFFER_BYTES, 0);
        }
        let mut hasher = Sha256::new();
        let mut total = 0u64;
        loop {
            let n = file
                .read(&mut buffer[..])
                .map_err(|e| PackageError::io(path, e))?;
            if n == 0 {
                break;
            }
            total += n as u64;
            hasher.update(&buffer[..n]);
        }
        Ok((total, hex::encode(hasher.finalize())))
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn task_with(question: &str, paths: &[&str]) -> Task {
        let files: Vec<_> = paths
            .iter()
            .map(|p| serde_json::json!({"relative_path": p}))
            .collect();
        serde_json::from_value(serde_json::json!({
            "task_id": "T_Q1", "event_id": "T",
            "question": question,
            "ground_truth": {"primary_gt": {"a": 1}, "rubric": {"criteria": []}},
            "event_files": files,
        }))
        .unwrap()
    }

    fn leaks(question: &str, paths: &[&str]) -> Vec<(LeakKind, String)> {
        question_leaks(&task_with(question, paths))
            .into_iter()
            .map(|w| (w.kind, w.text))
            .collect()
    }

    #[test]
    fn ordinary_prose_does_not_leak() {
        let files = [
            "data/event_reports/report.pdf",
            "data/other/review.txt",
            "data/physical_hazard/physical_hazard_001_Open-Meteo_historical_archive.json",
        ];
        for question in [
            "Write a short report and review the evidence; use package data.",
            "Review the JSON you return. Compute the GT carefully.",
            "Use the physical hazard files and the Open-Meteo archive.",
            "Report.pdf-like phrasing: the report, a review, the data/ folder.",
        ] {
            assert_eq!(leaks(question, &files), vec![], "{question}");
        }
    }

    #[test]
    fn paths_names_and_hidden_artifacts_leak() {
        let files = ["data/physical_hazard/physical_hazard_001_Open-Meteo_archive.json"];
        let cases: [(&str, (LeakKind, &str)); 6] = [
            (
                "Read computed_gt.json first.",
                (LeakKind::HiddenArtifact, "computed_gt.json"),
            ),
            (
                "See Review.JSON.",
                (LeakKind::HiddenArtifact, "review.json"),
            ),
            (
                "Open data/physical_hazard/physical_hazard_001_Open-Meteo_archive.json now.",
                (
                    LeakKind::PackagePath,
                    "data/physical_hazard/physical_hazard_001_Open-Meteo_archive.json",
                ),
            ),
            (
                "Open `physical_hazard_001_Open-Meteo_archive.json`.",
                (
                    LeakKind::FileName,
                    "physical_hazard_001_Open-Meteo_archive.json",
                ),
            ),
            (
                "The physical_hazard_001_Open-Meteo_archive series.",
                (LeakKind::FileName, "physical_hazard_001_Open-Meteo_archive"),
            ),
            (
                "Look in event_packages/standard_event_packages/packages/T.",
                (LeakKind::PackagePath, "event_packages/"),
            ),
        ];
        for (question, (kind, text)) in cases {
            let found = leaks(question, &files);
            assert!(
                found.contains(&(kind, text.to_string())),
                "{question}: {found:?}"
            );
        }
    }

    #[test]
    fn line_ending_conversions_hash_the_converted_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.json");
        let cases: [(&[u8], &[u8], &[u8]); 4] = [
            (b"a\nb\r\nc\n", b"a\r\nb\r\nc\r\n", b"a\nb\nc\n"),
            (b"\r\r\n\r", b"\r\r\n\r", b"\r\n\r"),
            (b"", b"", b""),
            (b"no newline", b"no newline", b"no newline"),
        ];
        for (raw, crlf, lf) in cases {
            std::fs::write(&path, raw).unwrap();
            for (mode, expected) in [(LineEndings::ToCrlf, crlf), (LineEndings::ToLf, lf)] {
                let (n, hex) = hash_file_converted(&path, mode).unwrap();
                assert_eq!(n, expected.len() as u64);
                assert_eq!(hex, hex::encode(Sha256::digest(expected)));
            }
        }
    }

    #[test]
    fn sha_prefixes() {
        assert!(sha_matches("44136FA355B3678A", "44136fa355b3678a"));
        assert!(sha_matches("44136fa3", "44136fa355b3678a"));
        assert!(!sha_matches("", "44136fa355b3678a"));
        assert!(!sha_matches("44136fa355b3678b", "44136fa355b3678a"));
    }

    #[test]
    fn token_boundaries() {
        assert!(contains_token("see a.json.", "a.json", false));
        assert!(!contains_token("see ba.json", "a.json", false));
        assert!(!contains_token("see a.json5", "a.json", false));
        assert!(contains_token("(a.json)", "a.json", false));
        assert!(!contains_token("", "a", false));
    }
}
