//! The crate's error type.

/// Errors of `earthverse-stats-bootstrap`. Every variant names what was wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A score is outside 0–100 or not finite.
    #[error("task {task} of system {system}: {field} = {value} is not a score in 0..=100")]
    ScoreOutOfRange {
        /// System id.
        system: String,
        /// Task id.
        task: String,
        /// Field name (`answer`, `process`, `unit_accuracy`, `holistic`).
        field: &'static str,
        /// The offending value.
        value: f64,
    },
    /// The same (system, task) pair appears twice.
    #[error("system {system} has two outcomes for task {task}")]
    DuplicateOutcome {
        /// System id.
        system: String,
        /// Task id.
        task: String,
    },
    /// A system named in a comparison has no outcomes.
    #[error("system {system} has no task outcomes")]
    UnknownSystem {
        /// System id.
        system: String,
    },
    /// A paired comparison has no task in common.
    #[error("systems {systems} share no task, so no paired comparison is possible")]
    NoCommonTasks {
        /// The systems, comma separated.
        systems: String,
    },
    /// A paired matrix lacks the score of a system on a task (policy `Require`).
    #[error(
        "system {system} has no outcome for task {task}; pairing needs every system on every task"
    )]
    MissingPairedTask {
        /// System id.
        system: String,
        /// Task id.
        task: String,
    },
    /// A bootstrap configuration value is unusable.
    #[error("invalid bootstrap configuration: {reason}")]
    InvalidConfig {
        /// Why it is unusable.
        reason: String,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
