//! The crate's error type.

use std::path::PathBuf;

/// Errors of `earthverse-review`. Every variant names the file and line
/// or the run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The label file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The label file.
        path: PathBuf,
        /// The IO error.
        source: std::io::Error,
    },
    /// A line of the label file is not a label.
    #[error("{path}:{line}: not a label: {problem}")]
    MalformedLabel {
        /// The label file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        problem: String,
    },
    /// A label names a run that is not among the runs given.
    #[error("{path}:{line}: unknown run {system}/{task_id} (not under the runs directory)")]
    UnknownRun {
        /// The label file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// System id.
        system: String,
        /// Task id.
        task_id: String,
    },
    /// A statistic could not be computed.
    #[error("agreement: {0}")]
    Stats(#[from] earthverse_stats_bootstrap::Error),
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
