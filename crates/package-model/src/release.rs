//! Loading a release: tasks, event packages and recorded runs.
//!
//! The public release layout (the dev slice uses it):
//!
//! ```text
//! <root>/tasks/<task_id>.json
//! <root>/packages/event_packages/standard_event_packages/packages/<event_id>/data/...
//! <root>/exploration/trajectories/<system>/<task_id>.json
//! ```
//!
//! A release may also give one task a package of its own, at
//! `<root>/task_packages/<task_id>/<event_id>/` ([`TASK_PACKAGES_DIR`]):
//! a perturbed release made by `earthverse perturb` does, because the two
//! tasks of one event read different evidence and each gets the
//! perturbation of its own evidence. [`Release::task_package_dir`] is the
//! one rule every reader of a task's package follows.
//!
//! A bad task or run file never stops the rest from loading: it is recorded
//! as a [`LoadError`] naming the file and the JSON field. Whether a command
//! may go on without it is one rule for both: no, unless skipping is asked
//! for ([`Release::require_all_tasks`], [`load_recorded_runs`]).

use crate::error::{PackageError, Result};
use crate::run::{RecordedRun, RunScores};
use crate::task::Task;
use rayon::prelude::*;
use serde::de::DeserializeOwned;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Where event packages live below a release root.
pub const RELEASE_PACKAGES_DIR: &str = "packages/event_packages/standard_event_packages/packages";
/// Where a task's own package lives below a release root, when it has one:
/// `<root>/task_packages/<task_id>/<event_id>/` (the folder keeps the
/// event's name, so tools see the same package id).
pub const TASK_PACKAGES_DIR: &str = "task_packages";
/// The release-relative prefix of a package path as tools and models write it.
pub const PACKAGE_PATH_PREFIX: &str = "event_packages/standard_event_packages/packages";

pub use crate::error::LoadError;

/// Reads and parses one JSON record, naming the field on failure.
pub fn read_json_record<T: DeserializeOwned>(path: &Path) -> std::result::Result<T, LoadError> {
    let bytes = std::fs::read(path).map_err(|e| LoadError {
        path: path.to_path_buf(),
        field: ".".into(),
        message: e.to_string(),
    })?;
    parse_json_record(path, &bytes)
}

/// Parses one JSON record from bytes, naming the field on failure.
pub fn parse_json_record<T: DeserializeOwned>(
    path: &Path,
    bytes: &[u8],
) -> std::result::Result<T, LoadError> {
    // Fast path: a plain parse. Only a failing record is parsed again with
    // path tracking, to name the field at fault.
    if let Ok(value) = serde_json::from_slice::<T>(bytes) {
        return Ok(value);
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let mut track = serde_path_to_error::Track::new();
    let tracked = serde_path_to_error::Deserializer::new(&mut deserializer, &mut track);
    match T::deserialize(tracked).and_then(|v| deserializer.end().map(|()| v)) {
        Ok(value) => Ok(value),
        Err(error) => {
            let field = track.path().to_string();
            Err(LoadError {
                path: path.to_path_buf(),
                field: if field.is_empty() { ".".into() } else { field },
                message: error.to_string(),
            })
        }
    }
}

/// A loaded release: its tasks, the event packages beside them, and the
/// files that failed to load.
#[derive(Debug, Clone)]
pub struct Release {
    root: PathBuf,
    packages_root: PathBuf,
    tasks: Vec<Task>,
    event_ids: Vec<String>,
    load_errors: Vec<LoadError>,
}

impl Release {
    /// [`Release::load`] of the release layout (`tasks/*.json` beside
    /// `packages/`), without the authoring-layout check.
    pub(crate) fn load_release_layout(root: &Path) -> Result<Release> {
        let tasks_dir = root.join("tasks");
        if !tasks_dir.is_dir() {
            return Err(PackageError::Layout {
                path: tasks_dir,
                message: "missing tasks/ directory".into(),
            });
        }
        let mut files = Vec::new();
        let mut load_errors = Vec::new();
        for entry in std::fs::read_dir(&tasks_dir).map_err(|e| PackageError::io(&tasks_dir, e))? {
            let entry = entry.map_err(|e| PackageError::io(&tasks_dir, e))?;
            let path = entry.path();
            if path.extension().is_none_or(|x| x != "json") {
                continue;
            }
            // A `*.json` that is not a readable file (a symlink loop, a
            // dangling symlink, a folder) is a task file that did not load,
            // never silently left out.
            match std::fs::metadata(&path) {
                Ok(meta) if meta.is_file() => files.push(path),
                Ok(_) => load_errors.push(LoadError {
                    path,
                    field: ".".into(),
                    message: "not a regular file".into(),
                }),
                Err(e) => load_errors.push(LoadError {
                    path,
                    field: ".".into(),
                    message: e.to_string(),
                }),
            }
        }
        files.sort();
        let mut tasks = Vec::with_capacity(files.len());
        // Parsed in parallel, kept in file order.
        let parsed: Vec<_> = files
            .par_iter()
            .map(|path| read_json_record::<Task>(path))
            .collect();
        for result in parsed {
            match result {
                Ok(task) => tasks.push(task),
                Err(e) => load_errors.push(e),
            }
        }
        load_errors.sort_by(|a, b| a.path.cmp(&b.path));
        for e in &load_errors {
            tracing::warn!(error = %e, "task file not loaded");
        }
        Ok(Release::from_parts(
            root.to_path_buf(),
            root.join(RELEASE_PACKAGES_DIR),
            tasks,
            load_errors,
        ))
    }

    /// Builds a release from already-loaded parts. Event ids are those of
    /// the tasks plus every package directory present under `packages_root`.
    pub fn from_parts(
        root: PathBuf,
        packages_root: PathBuf,
        mut tasks: Vec<Task>,
        load_errors: Vec<LoadError>,
    ) -> Release {
        tasks.sort_by(|a, b| a.task_id.cmp(&b.task_id));
        let mut events: BTreeSet<String> = tasks.iter().map(|t| t.event_id.clone()).collect();
        if let Ok(entries) = std::fs::read_dir(&packages_root) {
            for entry in entries.flatten() {
                if entry.path().is_dir() {
                    if let Some(name) = entry.file_name().to_str() {
                        events.insert(name.to_string());
                    }
                }
            }
        }
        Release {
            root,
            packages_root,
            tasks,
            event_ids: events.into_iter().collect(),
            load_errors,
        }
    }

    /// The release root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory holding one folder per event package.
    pub fn packages_root(&self) -> &Path {
        &self.packages_root
    }

    /// All tasks that loaded, sorted by task id.
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// The task with this id.
    pub fn task(&self, task_id: &str) -> Option<&Task> {
        self.tasks
            .binary_search_by(|t| t.task_id.as_str().cmp(task_id))
            .ok()
            .map(|i| &self.tasks[i])
    }

    /// The tasks of one event.
    pub fn tasks_for_event<'a>(&'a self, event_id: &'a str) -> impl Iterator<Item = &'a Task> + 'a {
        self.tasks.iter().filter(move |t| t.event_id == event_id)
    }

    /// Event ids (from tasks and package folders), sorted.
    pub fn event_ids(&self) -> &[String] {
        &self.event_ids
    }

    /// The package directory of an event (it may not exist).
    pub fn package_dir(&self, event_id: &str) -> PathBuf {
        self.packages_root.join(event_id)
    }

    /// The package a task reads: its own package
    /// (`<root>/task_packages/<task_id>/<event_id>/`) when the release gives
    /// it one, else its event's package. Every reader of a task's package
    /// (the run, validation, ground-truth regeneration) goes through here.
    pub fn task_package_dir(&self, task: &Task) -> PathBuf {
        let own = self
            .root
            .join(TASK_PACKAGES_DIR)
            .join(&task.task_id)
            .join(&task.event_id);
        if own.is_dir() {
            own
        } else {
            self.package_dir(&task.event_id)
        }
    }

    /// Whether any task of the release has a package of its own.
    pub fn has_task_packages(&self) -> bool {
        self.tasks.iter().any(|t| {
            self.root
                .join(TASK_PACKAGES_DIR)
                .join(&t.task_id)
                .join(&t.event_id)
                .is_dir()
        })
    }

    /// Files that failed to load.
    pub fn load_errors(&self) -> &[LoadError] {
        &self.load_errors
    }

    /// The one rule for unloadable tasks, the same as for run files: a
    /// command that runs or scores the release's tasks needs every task
    /// file to load, so any that did not is an error naming each file and
    /// field ([`PackageError::UnloadableTasks`]). Skipping them is opt-in
    /// (the CLI's `--skip-invalid`): the caller then names the skipped
    /// files ([`Release::load_errors`]) in its summary.
    pub fn require_all_tasks(&self) -> Result<()> {
        if self.load_errors.is_empty() {
            Ok(())
        } else {
            Err(PackageError::UnloadableTasks {
                errors: self.load_errors.clone(),
            })
        }
    }

    /// The `exploration/trajectories` directory of the release.
    pub fn trajectories_dir(&self) -> PathBuf {
        self.root.join("exploration").join("trajectories")
    }

    /// All recorded runs under `exploration/trajectories`. A file that
    /// fails to load is an error naming it (the one rule of run discovery,
    /// see [`load_recorded_runs`]); skipping bad files is opt-in
    /// ([`Release::recorded_runs_with_errors`]). No trajectories directory
    /// means no runs.
    pub fn recorded_runs(&self) -> Result<Vec<RecordedRunEntry>> {
        let dir = self.trajectories_dir();
        if !dir.is_dir() {
            return Ok(Vec::new());
        }
        load_recorded_runs(&dir)
    }

    /// All recorded runs, skipping the files that fail to load: they are
    /// returned, and each is named in a warning.
    pub fn recorded_runs_with_errors(&self) -> Result<(Vec<RecordedRunEntry>, Vec<LoadError>)> {
        let dir = self.trajectories_dir();
        if !dir.is_dir() {
            return Ok((Vec::new(), Vec::new()));
        }
        load_recorded_runs_with_errors(&dir)
    }
}

/// One recorded run and where it came from.
#[derive(Debug, Clone)]
pub struct RecordedRunEntry {
    /// The system id (the folder name).
    pub system_id: String,
    /// The task id (from the record).
    pub task_id: String,
    /// The file.
    pub path: PathBuf,
    /// The parsed run.
    pub run: RecordedRun,
}

/// Loads recorded runs from a `trajectories` directory
/// (`<dir>/<system>/<task>.json`), one system's directory
/// (`<dir>/<task>.json`), or an `exploration` directory holding
/// `trajectories/`, sorted by system, then task id. The files are those of
/// [`run_file_paths`] (every `*.json` below the directory); a file's system
/// is the first directory below it on the file's path.
///
/// **Run discovery has one rule** (here, and in `earthverse-rubric-judge`'s
/// `find_runs`): a run file that fails to load is an error naming the file
/// and the JSON field ([`PackageError::Json`]; with several bad files, the
/// first in path order). Skipping bad files is opt-in:
/// [`load_recorded_runs_with_errors`] returns them and names each in a
/// warning.
pub fn load_recorded_runs(dir: &Path) -> Result<Vec<RecordedRunEntry>> {
    let (runs, errors) = load_recorded(dir)?;
    refuse_bad(runs, errors)
}

/// Like [`load_recorded_runs`], but a file that fails to load is skipped:
/// it is returned and named in a warning (the opt-in form of the rule).
pub fn load_recorded_runs_with_errors(
    dir: &Path,
) -> Result<(Vec<RecordedRunEntry>, Vec<LoadError>)> {
    let (runs, errors) = load_recorded(dir)?;
    Ok((runs, warn_skipped(errors)))
}

fn load_recorded(dir: &Path) -> Result<(Vec<RecordedRunEntry>, Vec<LoadError>)> {
    load_run_files(dir, |system_id, path, run: RecordedRun| RecordedRunEntry {
        system_id,
        task_id: run.task_id.clone(),
        path,
        run,
    })
}

/// The strict form of the rule: the first bad file is the error.
fn refuse_bad<E>(entries: Vec<E>, errors: Vec<LoadError>) -> Result<Vec<E>> {
    match errors.into_iter().next() {
        Some(first) => Err(first.into()),
        None => Ok(entries),
    }
}

/// The opt-in form: every skipped file is named in a warning.
fn warn_skipped(errors: Vec<LoadError>) -> Vec<LoadError> {
    for e in &errors {
        tracing::warn!(file = %e.path.display(), error = %e, "recorded run skipped");
    }
    errors
}

/// What answer scoring reads of a recorded run: the task, the final answer
/// and the published scores. Parsing only these fields (the tool calls and
/// their outputs are skipped without being kept) makes loading all runs of
/// a release several times cheaper than [`RecordedRun`].
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
pub struct RecordedAnswer {
    /// The task, e.g. `CSX-001_Q1`.
    pub task_id: String,
    /// The published judge scores.
    #[serde(default)]
    pub scores: RunScores,
    /// The final answer: an object, or a string when the system did not
    /// produce parseable JSON.
    #[serde(default)]
    pub final_answer: serde_json::Value,
}

/// One recorded run's answer and where it came from.
#[derive(Debug, Clone)]
pub struct RecordedAnswerEntry {
    /// The system id (the folder name).
    pub system_id: String,
    /// The file.
    pub path: PathBuf,
    /// The task, final answer and published scores.
    pub answer: RecordedAnswer,
}

/// Loads the answers and published scores of recorded runs (the same
/// directories and order as [`load_recorded_runs_with_errors`]), without
/// the rest of each run; a file that fails to load is skipped, returned
/// and named in a warning (the opt-in form of the rule of
/// [`load_recorded_runs`]).
pub fn load_recorded_answers_with_errors(
    dir: &Path,
) -> Result<(Vec<RecordedAnswerEntry>, Vec<LoadError>)> {
    let (answers, errors) = load_run_files(dir, |system_id, path, answer: RecordedAnswer| {
        RecordedAnswerEntry {
            system_id,
            path,
            answer,
        }
    })?;
    Ok((answers, warn_skipped(errors)))
}

/// Finds the run files below `dir` (see [`load_recorded_runs`]), parses
/// them in parallel as `T`, builds entries with `make` and sorts them by
/// system, then task id. Files that fail to load come back in file order
/// (the callers apply the rule of [`load_recorded_runs`]).
fn load_run_files<T, E>(
    dir: &Path,
    make: impl Fn(String, PathBuf, T) -> E + Sync,
) -> Result<(Vec<E>, Vec<LoadError>)>
where
    T: DeserializeOwned + Send,
    E: Send + RunEntryKey,
{
    let nested = dir.join("trajectories");
    let dir = if nested.is_dir() {
        nested
    } else {
        dir.to_path_buf()
    };
    let files: Vec<(String, PathBuf)> = run_file_paths(&dir)?
        .into_iter()
        .map(|path| (system_of(&dir, &path), path))
        .collect();
    // Parsed in parallel, kept in file order.
    let parsed: Vec<std::result::Result<E, LoadError>> = files
        .into_par_iter()
        .map(|(system_id, path)| read_json_record::<T>(&path).map(|v| make(system_id, path, v)))
        .collect();
    let mut runs = Vec::with_capacity(parsed.len());
    let mut errors = Vec::new();
    for result in parsed {
        match result {
            Ok(entry) => runs.push(entry),
            Err(e) => errors.push(e),
        }
    }
    runs.sort_by(|a, b| a.key().cmp(&b.key()));
    Ok((runs, errors))
}

/// Every `*.json` file below `dir`, recursively, sorted by path: the one
/// file listing of run discovery, used by [`load_recorded_runs`] (and its
/// `_with_errors` forms) and by `earthverse-rubric-judge`'s `find_runs`, so
/// both see the same files in the same order. A directory that cannot be
/// read is an error naming it.
pub fn run_file_paths(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    push_json_files(dir, &mut out)?;
    Ok(out)
}

fn push_json_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut items = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| PackageError::io(dir, e))? {
        items.push(entry.map_err(|e| PackageError::io(dir, e))?.path());
    }
    items.sort();
    for path in items {
        if path.is_dir() {
            push_json_files(&path, out)?;
        } else if path.extension().is_some_and(|x| x == "json") {
            out.push(path);
        }
    }
    Ok(())
}

/// The system a run file belongs to: the first directory below `dir` on its
/// path (`<dir>/<system>/<task>.json`), or `dir`'s own name for a file
/// directly in it (one system's directory).
fn system_of(dir: &Path, path: &Path) -> String {
    let below = path.strip_prefix(dir).unwrap_or(path);
    let mut parts = below.components();
    match (parts.next(), parts.next()) {
        (Some(system), Some(_)) => system.as_os_str().to_string_lossy().into_owned(),
        _ => dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    }
}

/// The (system, task) order of loaded run entries.
trait RunEntryKey {
    fn key(&self) -> (&str, &str);
}

impl RunEntryKey for RecordedRunEntry {
    fn key(&self) -> (&str, &str) {
        (self.system_id.as_str(), self.task_id.as_str())
    }
}

impl RunEntryKey for RecordedAnswerEntry {
    fn key(&self) -> (&str, &str) {
        (self.system_id.as_str(), self.answer.task_id.as_str())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod discovery_tests {
    use super::*;

    fn write_runs(dir: &Path) {
        let system = dir.join("sys-a");
        std::fs::create_dir_all(&system).unwrap_or_default();
        let good = r#"{"task_id": "CSX-1_Q1", "model_id": "sys-a", "final_answer": {"v": 1},
                       "diagnostics": {"run_status": "ok", "tool_calls": 2}}"#;
        std::fs::write(system.join("CSX-1_Q1.json"), good).unwrap_or_default();
        // `tool_calls` must be a count: this file does not fit.
        let bad = r#"{"task_id": "CSX-2_Q1", "model_id": "sys-a", "final_answer": {},
                      "diagnostics": {"tool_calls": "many"}}"#;
        std::fs::write(system.join("CSX-2_Q1.json"), bad).unwrap_or_default();
    }

    #[test]
    fn a_bad_run_file_is_an_error_naming_it_and_skipping_is_opt_in() {
        let dir = tempfile::tempdir().expect("temp dir");
        write_runs(dir.path());
        let err = load_recorded_runs(dir.path()).expect_err("bad file refused");
        let text = err.to_string();
        assert!(text.contains("CSX-2_Q1.json"), "{text}");
        assert!(text.contains("tool_calls"), "{text}");

        let (runs, skipped) = load_recorded_runs_with_errors(dir.path()).expect("skipping form");
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].task_id, "CSX-1_Q1");
        assert_eq!(runs[0].run.diagnostics.tool_calls, Some(2));
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].path.ends_with("sys-a/CSX-2_Q1.json"));

        let (answers, skipped) =
            load_recorded_answers_with_errors(dir.path()).expect("answers skip too");
        // The answer reader does not read diagnostics: both files load.
        assert_eq!((answers.len(), skipped.len()), (2, 0));
    }
}
