//! Errors of the domain operations.

use serde_json::Value;

/// Result alias.
pub type Result<T, E = DomainError> = std::result::Result<T, E>;

/// What can go wrong in a domain operation. `NotApplicable` is not a
/// failure: it is the justified scientific refusal of paper App. A.4.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DomainError {
    /// A required argument is absent.
    #[error("{operation}: missing required argument `{argument}`")]
    MissingArgument {
        /// Operation.
        operation: String,
        /// Argument.
        argument: String,
    },
    /// An argument has the wrong type or value.
    #[error("{operation}: argument `{argument}`: {message}")]
    BadArgument {
        /// Operation.
        operation: String,
        /// Argument.
        argument: String,
        /// What is wrong.
        message: String,
    },
    /// A package file could not be read or does not hold what was asked.
    #[error("input `{file}`: {message}")]
    Input {
        /// Package-relative file (as requested when it could not be resolved).
        file: String,
        /// What is wrong.
        message: String,
    },
    /// The record cannot support the method (too short, variable absent,
    /// wrong time step, CRS, geometry).
    #[error("not applicable: {message}")]
    NotApplicable {
        /// Machine-readable reason, e.g. `{"record_too_short": {"have": 7, "need": 30}}`.
        reason: Value,
        /// Human-readable explanation.
        message: String,
    },
    /// The computation failed (no convergence, degenerate input).
    #[error("{operation}: {message}")]
    Compute {
        /// Operation.
        operation: String,
        /// What failed.
        message: String,
    },
    /// The operation needs a cargo feature this build lacks.
    #[error(
        "{operation}: this build lacks the `{feature}` feature (enable it to read this format)"
    )]
    FeatureDisabled {
        /// Operation.
        operation: String,
        /// Feature name.
        feature: &'static str,
    },
}

impl DomainError {
    /// Adds the operation and argument names to an input error.
    pub fn in_argument(self, operation: &str, argument: &str) -> Self {
        match self {
            DomainError::Input { file, message } => DomainError::Input {
                file,
                message: format!("{operation} `{argument}`: {message}"),
            },
            other => other,
        }
    }

    /// A computation failure.
    pub fn compute(operation: &str, message: impl Into<String>) -> Self {
        DomainError::Compute {
            operation: operation.to_string(),
            message: message.into(),
        }
    }
}
