//! The reference retry policy (`reference-harness.md`, "Model calls"): 2
//! retries with exponential back-off of 1 s then 2 s (capped at 60 s),
//! honouring `Retry-After` on HTTP 429 and 503, and never waiting or calling
//! past the request's deadline. Every retry is logged as a [`RetryAttempt`].

use crate::chat::RetryAttempt;
use crate::error::ProviderError;
use std::future::Future;
use std::time::{Duration, Instant};

/// How a provider retries a failed call.
///
/// The defaults are the reference harness's values; tests shrink
/// [`RetryPolicy::base_backoff`] so they run fast.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (reference: 2).
    pub max_retries: u32,
    /// Wait before the first retry; doubled for each later one (reference: 1 s).
    pub base_backoff: Duration,
    /// Upper bound of any wait, `Retry-After` included (reference: 60 s).
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            base_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The back-off before retry number `retry` (1-based): `base * 2^(retry-1)`,
    /// capped at [`RetryPolicy::max_backoff`].
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 2u32.saturating_pow(retry.saturating_sub(1));
        self.base_backoff
            .checked_mul(factor)
            .unwrap_or(self.max_backoff)
            .min(self.max_backoff)
    }
}

/// Why one attempt failed (internal to providers).
#[derive(Debug, Clone)]
pub(crate) enum AttemptError {
    /// Non-success HTTP status.
    Http {
        status: u16,
        body: String,
        retry_after: Option<Duration>,
    },
    /// Connect/read failure.
    Transport(String),
    /// The per-call timeout (or the deadline) elapsed.
    Timeout(Duration),
    /// Body not understood (truncated JSON, wrong shape).
    Malformed(String),
    /// Request rejected before sending (not retryable).
    Fatal(String),
}

impl AttemptError {
    fn retryable(&self) -> bool {
        match self {
            Self::Http { status, .. } => {
                matches!(status, 408 | 409 | 425 | 429 | 500 | 502 | 503 | 504 | 529)
            }
            Self::Transport(_) | Self::Timeout(_) | Self::Malformed(_) => true,
            Self::Fatal(_) => false,
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Http { status, body, .. } => format!("HTTP {status}: {}", excerpt(body, 300)),
            Self::Transport(m) => format!("transport: {m}"),
            Self::Timeout(d) => format!("timeout after {:.3} s", d.as_secs_f64()),
            Self::Malformed(m) => format!("malformed response: {m}"),
            Self::Fatal(m) => format!("request rejected: {m}"),
        }
    }

    fn into_error(
        self,
        provider: &str,
        attempts: u32,
        retries: Vec<RetryAttempt>,
    ) -> ProviderError {
        let provider = provider.to_string();
        match self {
            Self::Http { status, body, .. } => ProviderError::Http {
                provider,
                status,
                attempts,
                body: excerpt(&body, 2000),
                retries,
            },
            Self::Transport(message) => ProviderError::Transport {
                provider,
                attempts,
                message,
                retries,
            },
            t @ Self::Timeout(_) => ProviderError::Transport {
                provider,
                attempts,
                message: t.describe(),
                retries,
            },
            Self::Malformed(message) => ProviderError::Malformed {
                provider,
                message,
                retries,
            },
            Self::Fatal(message) => ProviderError::Config(format!("{provider}: {message}")),
        }
    }
}

/// Cuts `text` to at most `max` characters.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// Parses a `Retry-After` header: delta seconds or an HTTP date.
pub(crate) fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Some(Duration::from_secs_f64(secs));
        }
        return None;
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

/// Runs `attempt` under `policy`, each attempt bounded by `call_timeout` and
/// by `deadline`. Returns the value and the retry log.
pub(crate) async fn run_with_retries<T, F, Fut>(
    provider: &str,
    policy: &RetryPolicy,
    call_timeout: Duration,
    deadline: Option<Instant>,
    mut attempt: F,
) -> crate::Result<(T, Vec<RetryAttempt>)>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, AttemptError>>,
{
    let mut retries: Vec<RetryAttempt> = Vec::new();
    let mut attempt_no: u32 = 0;
    let mut last_error = String::from("none");
    loop {
        attempt_no += 1;
        let mut limit = call_timeout;
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ProviderError::DeadlineExceeded {
                    provider: provider.to_string(),
                    attempts: attempt_no - 1,
                    last_error,
                    retries,
                });
            }
            limit = limit.min(left);
        }
        let outcome = match tokio::time::timeout(limit, attempt()).await {
            Ok(outcome) => outcome,
            Err(_) => Err(AttemptError::Timeout(limit)),
        };
        let error = match outcome {
            Ok(value) => return Ok((value, retries)),
            Err(error) => error,
        };
        tracing::debug!(provider, attempt = attempt_no, error = %error.describe(), "model call attempt failed");
        last_error = error.describe();
        if !error.retryable() || attempt_no > policy.max_retries {
            return Err(error.into_error(provider, attempt_no, retries));
        }
        let mut wait = policy.backoff(attempt_no);
        if let AttemptError::Http {
            status: 429 | 503,
            retry_after: Some(after),
            ..
        } = &error
        {
            wait = (*after).min(policy.max_backoff);
        }
        if let Some(deadline) = deadline {
            if Instant::now() + wait >= deadline {
                return Err(ProviderError::DeadlineExceeded {
                    provider: provider.to_string(),
                    attempts: attempt_no,
                    last_error,
                    retries,
                });
            }
        }
        retries.push(RetryAttempt {
            attempt: attempt_no,
            error: error.describe(),
            wait_s: wait.as_secs_f64(),
        });
        tokio::time::sleep(wait).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_is_one_then_two_seconds_capped_at_sixty() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.backoff(1), Duration::from_secs(1));
        assert_eq!(policy.backoff(2), Duration::from_secs(2));
        assert_eq!(policy.backoff(7), Duration::from_secs(60));
        assert_eq!(policy.backoff(40), Duration::from_secs(60));
    }

    #[test]
    fn retry_after_parses_seconds_and_dates() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }
}
