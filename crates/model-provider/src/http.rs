//! The shared HTTP plumbing of the wire providers: one reqwest client on
//! rustls (ring), and one POST attempt mapped to [`AttemptError`].

use crate::error::ProviderError;
use crate::retry::{parse_retry_after, AttemptError};
use serde_json::Value;

/// Builds the reqwest client. reqwest is built with rustls without a default
/// crypto provider, so the ring provider is installed process-wide first
/// (a no-op when some provider is already installed).
pub(crate) fn build_client() -> crate::Result<reqwest::Client> {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing the race to another thread that installs one is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    reqwest::Client::builder()
        .build()
        .map_err(|e| ProviderError::Config(format!("building the HTTP client: {e}")))
}

/// One POST of a JSON body; returns the parsed JSON body of a 2xx answer.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    url: &str,
    headers: &[(String, String)],
    body: &Value,
) -> Result<Value, AttemptError> {
    let mut request = client.post(url).json(body);
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let response = request.send().await.map_err(|e| {
        if e.is_builder() {
            AttemptError::Fatal(format!("{url}: {e}"))
        } else {
            AttemptError::Transport(format!("{url}: {}", error_chain(&e)))
        }
    })?;
    let status = response.status();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    let bytes = response.bytes().await.map_err(|e| {
        AttemptError::Transport(format!("{url}: reading body: {}", error_chain(&e)))
    })?;
    if !status.is_success() {
        return Err(AttemptError::Http {
            status: status.as_u16(),
            body: String::from_utf8_lossy(&bytes).into_owned(),
            retry_after,
        });
    }
    serde_json::from_slice(&bytes).map_err(|e| {
        AttemptError::Malformed(format!(
            "{url}: body is not JSON ({e}); {} bytes: {}",
            bytes.len(),
            crate::retry::excerpt(&String::from_utf8_lossy(&bytes), 200)
        ))
    })
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(inner) = source {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// Reads an API key from the named environment variable.
pub(crate) fn api_key_from_env(variable: &str) -> crate::Result<String> {
    match std::env::var(variable) {
        Ok(key) if !key.trim().is_empty() => Ok(key.trim().to_string()),
        _ => Err(ProviderError::Config(format!(
            "environment variable {variable} (API key) is not set or empty"
        ))),
    }
}
