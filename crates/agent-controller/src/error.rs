//! Errors of the agent-controller crate.

use std::path::PathBuf;

/// Result alias.
pub type Result<T, E = ControllerError> = std::result::Result<T, E>;

/// What can go wrong around a run (a run itself never fails with an error:
/// it ends with a record whose `run_status` says what happened).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControllerError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: std::io::Error,
    },
    /// A JSON file could not be read or written.
    #[error("{path}: invalid JSON: {source}")]
    Json {
        /// The file.
        path: PathBuf,
        /// Cause.
        source: serde_json::Error,
    },
    /// A `--shard K/N` value is malformed.
    #[error("invalid shard `{value}`: {reason} (expected K/N with 0 <= K < N)")]
    Shard {
        /// The value given.
        value: String,
        /// What is wrong.
        reason: String,
    },
    /// Another live process holds the lock of a task.
    #[error("task {task_id} is locked by {holder} ({path})")]
    Locked {
        /// Task id.
        task_id: String,
        /// Lock holder description.
        holder: String,
        /// Lock file.
        path: PathBuf,
    },
    /// Shard directories cannot be merged or checked as asked.
    #[error("merge: {0}")]
    Merge(String),
    /// A global limit of the batch is malformed or its ledger unusable.
    #[error("batch limits: {0}")]
    Limits(String),
    /// The agent for a task could not be built.
    #[error("task {task_id}: cannot build the agent: {message}")]
    Agent {
        /// Task id.
        task_id: String,
        /// Message.
        message: String,
    },
}
