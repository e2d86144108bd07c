//! The crate's error type.

/// Errors of the answer-units crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A tolerance was negative or not finite.
    #[error("invalid tolerance {value} for key `{key}`: must be finite and ≥ 0")]
    InvalidTolerance {
        /// The key the tolerance was given for.
        key: String,
        /// The rejected value.
        value: f64,
    },
}

/// Result alias of the answer-units crate.
pub type Result<T> = std::result::Result<T, Error>;
