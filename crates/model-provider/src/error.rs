//! Errors of the model-provider crate.

/// Result alias.
pub type Result<T, E = ProviderError> = std::result::Result<T, E>;

/// What can go wrong when talking to a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// The backend answered with an HTTP error after all retries.
    #[error("{provider}: HTTP {status} after {attempts} attempt(s): {body}")]
    Http {
        /// Provider id.
        provider: String,
        /// Status code.
        status: u16,
        /// Attempts made.
        attempts: u32,
        /// Body excerpt.
        body: String,
    },
    /// Transport error (connect, timeout) after all retries.
    #[error("{provider}: transport error after {attempts} attempt(s): {message}")]
    Transport {
        /// Provider id.
        provider: String,
        /// Attempts made.
        attempts: u32,
        /// Message.
        message: String,
    },
    /// The body could not be understood.
    #[error("{provider}: malformed response: {message}")]
    Malformed {
        /// Provider id.
        provider: String,
        /// Message.
        message: String,
    },
    /// The task deadline passed before a response arrived.
    #[error("{provider}: deadline exceeded")]
    DeadlineExceeded {
        /// Provider id.
        provider: String,
    },
    /// A scripted or replayed model has nothing left to say.
    #[error("{provider}: script exhausted after {used} response(s)")]
    Exhausted {
        /// Provider id.
        provider: String,
        /// Responses used.
        used: usize,
    },
    /// Configuration problem (missing API key variable, bad URL).
    #[error("configuration: {0}")]
    Config(String),
}
