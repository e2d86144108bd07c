//! The crate's error: an environment that is missing or unknown.

/// Why an environment cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EnvironmentError {
    /// No environment has this name.
    #[error("unknown scientific environment `{name}` (known: {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// The known command-line spellings.
        known: String,
    },
    /// The environment is not installed here: what is missing and how to
    /// install it. Never replaced by another implementation.
    #[error(
        "scientific environment {environment} is not available: {missing}; to install: {hint}"
    )]
    Missing {
        /// The paper's name.
        environment: String,
        /// What detection did not find (library and version, binary, file).
        missing: String,
        /// How to install it (`scripts/bootstrap.sh`, `scripts/python-env.sh`).
        hint: String,
    },
}

/// Result alias.
pub type Result<T> = std::result::Result<T, EnvironmentError>;
