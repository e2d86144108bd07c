//! Errors of the model-provider crate.

use crate::chat::RetryAttempt;

/// Result alias.
pub type Result<T, E = ProviderError> = std::result::Result<T, E>;

/// What can go wrong when talking to a model.
///
/// Errors that end a call after retries carry the retry log (`retries`), so a
/// run record shows every attempt even when the call failed.
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
        /// Retries made before giving up.
        retries: Vec<RetryAttempt>,
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
        /// Retries made before giving up.
        retries: Vec<RetryAttempt>,
    },
    /// The body could not be understood (truncated or not the expected shape),
    /// after all retries.
    #[error("{provider}: malformed response: {message}")]
    Malformed {
        /// Provider id.
        provider: String,
        /// Message.
        message: String,
        /// Retries made before giving up.
        retries: Vec<RetryAttempt>,
    },
    /// The task deadline passed (or would pass during the next back-off)
    /// before a response arrived.
    #[error("{provider}: deadline exceeded after {attempts} attempt(s); last error: {last_error}")]
    DeadlineExceeded {
        /// Provider id.
        provider: String,
        /// Attempts made.
        attempts: u32,
        /// The last error seen, or `none` when no attempt could start.
        last_error: String,
        /// Retries made before giving up.
        retries: Vec<RetryAttempt>,
    },
    /// A scripted or replayed model has nothing left to say.
    #[error("{provider}: script exhausted after {used} response(s)")]
    Exhausted {
        /// Provider id.
        provider: String,
        /// Responses used.
        used: usize,
    },
    /// A limit shared by a whole batch (its cost cap) refused the request
    /// before it was sent.
    #[error("{provider}: {message}")]
    LimitReached {
        /// Provider id.
        provider: String,
        /// Which limit, and where it stands.
        message: String,
    },
    /// Configuration problem (missing API key variable, bad URL, bad file).
    #[error("configuration: {0}")]
    Config(String),
}

impl ProviderError {
    /// The retry log of a failed call (empty for errors without retries).
    pub fn retries(&self) -> &[RetryAttempt] {
        match self {
            Self::Http { retries, .. }
            | Self::Transport { retries, .. }
            | Self::Malformed { retries, .. }
            | Self::DeadlineExceeded { retries, .. } => retries,
            Self::Exhausted { .. } | Self::LimitReached { .. } | Self::Config(_) => &[],
        }
    }
}
