//! The crate's error type.

/// Errors of `earthverse-report`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The statistics behind a table or plot failed.
    #[error("statistics for the report failed: {0}")]
    Stats(#[from] earthverse_stats_bootstrap::Error),
    /// A plot could not be drawn.
    #[error("drawing the {plot} plot failed: {message}")]
    Plot {
        /// Which plot.
        plot: &'static str,
        /// What went wrong.
        message: String,
    },
    /// There is nothing to report.
    #[error("the report has no task outcomes")]
    Empty,
}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
