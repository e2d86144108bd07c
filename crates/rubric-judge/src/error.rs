//! Errors of the rubric-judge crate.

use std::path::PathBuf;

/// Result alias.
pub type Result<T, E = JudgeError> = std::result::Result<T, E>;

/// What can go wrong while judging a run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JudgeError {
    /// The chat model behind an LLM judge failed (after its own retries).
    #[error("judge model {model} failed on task {task_id} ({system})")]
    Provider {
        /// Judge model id.
        model: String,
        /// Task id.
        task_id: String,
        /// System whose run was judged.
        system: String,
        /// Underlying provider error.
        #[source]
        source: Box<earthverse_model_provider::ProviderError>,
    },
    /// The judge never produced a valid evaluation record (paper §4.1 reruns
    /// judge failures; we stop after a bounded number of attempts).
    #[error(
        "judge model {model} gave no valid evaluation record for task {task_id} ({system}) \
         after {attempts} attempt(s); last problem: {last_problem}"
    )]
    InvalidJudgeOutput {
        /// Judge model id.
        model: String,
        /// Task id.
        task_id: String,
        /// System whose run was judged.
        system: String,
        /// Attempts made.
        attempts: u32,
        /// Why the last reply was rejected.
        last_problem: String,
    },
    /// A rubric that violates a hard rule (criteria count, point total).
    #[error("rubric of task {task_id} is invalid: {problems:?}")]
    InvalidRubric {
        /// Task id.
        task_id: String,
        /// Every hard-rule violation.
        problems: Vec<String>,
    },
    /// A task or run field the judge needs is missing or malformed.
    #[error("{what} {id}: field `{field}`: {problem}")]
    BadInput {
        /// "task" or "run".
        what: &'static str,
        /// Task id or run path.
        id: String,
        /// Field name.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// A run answers a task the release does not hold.
    #[error("run {} answers task {task_id} which is not in release {}", run.display(), release.display())]
    UnknownTask {
        /// The run file.
        run: PathBuf,
        /// The task id it answers.
        task_id: String,
        /// The release root.
        release: PathBuf,
    },
    /// A task, run or record file could not be read or written.
    #[error("cannot read or write {path}")]
    Io {
        /// File or directory involved.
        path: PathBuf,
        /// Underlying IO error.
        #[source]
        source: std::io::Error,
    },
    /// The on-disk cache could not be read or written.
    #[error("judge cache {path}")]
    Cache {
        /// File or directory involved.
        path: PathBuf,
        /// Underlying IO error.
        #[source]
        source: std::io::Error,
    },
    /// Release or run files could not be loaded.
    #[error("{what} {path}")]
    Package {
        /// What was being done.
        what: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: earthverse_package_model::PackageError,
    },
    /// Run files that do not load or answer no task of the release (the
    /// one rule for unloadable inputs: an error naming each, unless the
    /// caller skips them).
    #[error(
        "units: {} run file(s) under {} do not load or answer no task of the release; \
         fix them, or give --skip-invalid to score the rest and list them:\n{}",
        .runs.len(), .dir.display(), .runs.join("\n")
    )]
    UnloadableRuns {
        /// The runs folder.
        dir: PathBuf,
        /// Each run file and why.
        runs: Vec<String>,
    },
    /// A JSON (de)serialisation problem outside model output parsing.
    #[error("invalid JSON in {context}")]
    Json {
        /// Where.
        context: String,
        /// Underlying error.
        #[source]
        source: serde_json::Error,
    },
}
