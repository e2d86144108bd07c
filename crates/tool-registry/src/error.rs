//! The crate's error type.

use std::path::PathBuf;

/// Errors of the tool registry (registration, configuration, sandbox set-up).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A tool with this name is already registered.
    #[error("a tool named `{name}` is already registered")]
    DuplicateTool {
        /// The clashing name.
        name: String,
    },
    /// A tool's JSON Schema does not compile.
    #[error("the argument schema of tool `{name}` is invalid: {message}")]
    InvalidSchema {
        /// Tool name.
        name: String,
        /// Why it does not compile.
        message: String,
    },
    /// An IO error on a path.
    #[error("io error on {}: {source}", path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The Python sandbox could not be prepared.
    #[error("python sandbox unavailable: {message}")]
    SandboxUnavailable {
        /// What is missing.
        message: String,
    },
    /// A catalogue / routing configuration is invalid.
    #[error("invalid catalogue configuration: {message}")]
    Catalogue {
        /// What is wrong.
        message: String,
    },
}

/// The crate's result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;
