//! The crate's error type.

use std::path::PathBuf;

/// Errors of `earthverse-outcomes`: each names the file or folder at fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Neither record files nor recorded runs were given.
    #[error("give evaluation-record files or --from-recorded DIR")]
    NoSources,
    /// An input file or folder does not exist.
    #[error("{what} {path} does not exist")]
    Missing {
        /// What the input is.
        what: &'static str,
        /// The path given.
        path: PathBuf,
    },
    /// An evaluation-record file holds no records.
    #[error("{path} holds no evaluation records")]
    NoRecords {
        /// The file.
        path: PathBuf,
    },
    /// A folder holds no recorded runs.
    #[error("no recorded runs under {dir}")]
    NoRecordedRuns {
        /// The folder.
        dir: PathBuf,
    },
    /// Evaluation records (or run records) could not be read.
    #[error("reading {what} from {path}")]
    Records {
        /// What was read.
        what: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<earthverse_rubric_judge::JudgeError>,
    },
    /// One evaluation record does not make an outcome.
    #[error("{path}: record of {system} on {task}")]
    Record {
        /// The records file.
        path: PathBuf,
        /// The record's system.
        system: String,
        /// The record's task.
        task: String,
        /// Why.
        #[source]
        source: Box<earthverse_stats_bootstrap::Error>,
    },
    /// Recorded runs could not be loaded.
    #[error("loading recorded runs from {dir}")]
    RecordedRuns {
        /// The folder.
        dir: PathBuf,
        /// Why.
        #[source]
        source: Box<earthverse_package_model::PackageError>,
    },
    /// A recorded run's stored scores are not scores.
    #[error("scores of {path}")]
    RecordedScores {
        /// The run file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<earthverse_stats_bootstrap::Error>,
    },
    /// The release for task labels did not load.
    #[error("loading the release at {root} for task labels")]
    Release {
        /// The release root.
        root: PathBuf,
        /// Why.
        #[source]
        source: Box<earthverse_package_model::PackageError>,
    },
    /// A file could not be read.
    #[error("reading {what} {path}")]
    Read {
        /// What the file is.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A price file is neither flat prices nor a price table.
    #[error("{path}: neither {{model: USD/M}} nor a model-provider price table")]
    Prices {
        /// The price file.
        path: PathBuf,
        /// Why the price table did not parse.
        #[source]
        source: Box<earthverse_model_provider::ProviderError>,
    },
    /// A condition given as one input holds several systems.
    #[error("{path} holds {} systems ({}); name the systems to compare with --in {path}", .systems.len(), .systems.join(", "))]
    SeveralSystems {
        /// The input.
        path: PathBuf,
        /// The systems in it.
        systems: Vec<String>,
    },
    /// The two conditions of a comparison have the same name.
    #[error("conditions A and B have the same name {name}")]
    SameName {
        /// The name.
        name: String,
    },
    /// A table could not be made.
    #[error("output {path}: {message}")]
    Table {
        /// The output.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// Writing an output failed (nothing was left behind).
    #[error(transparent)]
    Write(Box<earthverse_package_model::OutputError>),
}

impl From<earthverse_package_model::OutputError> for Error {
    fn from(error: earthverse_package_model::OutputError) -> Self {
        Error::Write(Box::new(error))
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
