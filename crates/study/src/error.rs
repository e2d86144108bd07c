//! The crate's error type.

use std::path::PathBuf;

/// Errors of `earthverse-study`. Every variant names the file, the
/// condition and the key it concerns where there is one.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A folder of the study's runs could not be scored.
    #[error("scoring the runs of runs/{folder}: {message}")]
    Scoring {
        /// The folder under `runs/`.
        folder: String,
        /// What went wrong.
        message: String,
    },
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A file is not valid TOML or JSON, or not of the expected shape.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A condition of a manifest has a key no condition knows.
    #[error(
        "{path}: condition {index} (`{condition}`): unknown key `{key}` (known: name, {known})"
    )]
    UnknownKey {
        /// The manifest.
        path: PathBuf,
        /// 1-based position of the condition.
        index: usize,
        /// The condition's name.
        condition: String,
        /// The unknown key.
        key: String,
        /// The keys a condition may have, comma separated.
        known: String,
    },
    /// A condition's value is not one the runner accepts.
    #[error("{path}: condition `{condition}`: {key}: {message}")]
    BadCondition {
        /// The manifest (empty when the manifest was not read from a file).
        path: PathBuf,
        /// The condition's name.
        condition: String,
        /// The key (`catalogue`, `oracle`, ...) or the flag it maps to.
        key: String,
        /// What is wrong and what is allowed.
        message: String,
    },
    /// The manifest as a whole is not usable (no condition, duplicate
    /// names, an unknown reference, not exactly one task selection, ...).
    #[error("{path}: {message}")]
    InvalidManifest {
        /// The manifest.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A task selection cannot be resolved against the release.
    #[error("task selection: {message}")]
    Selection {
        /// What is wrong.
        message: String,
    },
    /// A study directory holds something that does not fit the study.
    #[error("study directory {dir}: {message}")]
    StudyDir {
        /// The study directory.
        dir: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A recorded run or a run of the study could not be read.
    #[error("{path}: {message}")]
    Run {
        /// The run file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The release or its recorded runs could not be loaded.
    #[error(transparent)]
    Release(#[from] earthverse_package_model::PackageError),
    /// The statistics refused the outcomes.
    #[error(transparent)]
    Stats(#[from] earthverse_stats_bootstrap::Error),
    /// A condition has missing runs and partial reports were not allowed.
    #[error(
        "condition {condition} lacks {missing} of {tasks} runs: finish it with `earthverse study run` \
         (it resumes), or report with --allow-partial to count them as failures"
    )]
    MissingRuns {
        /// The condition.
        condition: String,
        /// Runs missing.
        missing: usize,
        /// Tasks of the manifest.
        tasks: usize,
    },
    /// The study's tasks could not be drawn from the release.
    #[error("drawing the study's tasks from {}", release.display())]
    Draw {
        /// The release root.
        release: PathBuf,
        /// Why.
        #[source]
        source: Box<Error>,
    },
    /// A condition's batch could not be set up or run.
    #[error(transparent)]
    Harness(#[from] earthverse_harness::HarnessError),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.into();
    move |source| Error::Io { path, source }
}
