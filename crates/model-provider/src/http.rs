//! The shared HTTP plumbing of the wire providers: one reqwest client on
//! rustls (ring), one POST attempt mapped to [`AttemptError`], and
//! [`JsonEndpoint`], the chat call under the retry policy.

use crate::chat::ChatResponse;
use crate::error::ProviderError;
use crate::retry::{parse_retry_after, run_with_retries, AttemptError, RetryPolicy};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Where a wire provider posts: the HTTP client, the endpoint URL and the
/// headers every request carries.
#[derive(Debug, Clone)]
pub(crate) struct JsonEndpoint {
    client: reqwest::Client,
    url: String,
    headers: Vec<(String, String)>,
}

impl JsonEndpoint {
    /// The endpoint `path` under `base_url` (trailing slashes ignored),
    /// which must start with `http://` or `https://`.
    pub(crate) fn new(
        base_url: &str,
        path: &str,
        headers: Vec<(String, String)>,
    ) -> crate::Result<Self> {
        let base = base_url.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(ProviderError::Config(format!(
                "base_url `{base_url}` must start with http:// or https://"
            )));
        }
        Ok(JsonEndpoint {
            client: build_client()?,
            url: format!("{base}{path}"),
            headers,
        })
    }

    /// One chat call: posts `body` under `retry`, each attempt bounded by
    /// `call_timeout` and `deadline`, reads every 2xx body with `parse`, and
    /// stamps the latency of the whole call and the retry log on the
    /// response.
    pub(crate) async fn chat(
        &self,
        provider: &str,
        retry: &RetryPolicy,
        call_timeout: Duration,
        deadline: Option<Instant>,
        body: &Value,
        parse: fn(&Value) -> Result<ChatResponse, AttemptError>,
    ) -> crate::Result<ChatResponse> {
        let started = Instant::now();
        let (mut response, retries) =
            run_with_retries(provider, retry, call_timeout, deadline, || async {
                parse(&post_json(&self.client, &self.url, &self.headers, body).await?)
            })
            .await?;
        response.latency = started.elapsed();
        response.retries = retries;
        Ok(response)
    }
}

/// Builds the reqwest client. reqwest is built with rustls without a default
/// crypto provider, so the ring provider is installed process-wide first
/// (a no-op when some provider is already installed).
fn build_client() -> crate::Result<reqwest::Client> {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing the race to another thread that installs one is fine.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    reqwest::Client::builder()
        .build()
        .map_err(|e| ProviderError::Config(format!("building the HTTP client: {e}")))
}

/// One POST of a JSON body; returns the parsed JSON body of a 2xx answer.
async fn post_json(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_joins_the_path_and_refuses_a_base_url_without_http() -> crate::Result<()> {
        let endpoint =
            JsonEndpoint::new("http://127.0.0.1:9/v1//", "/chat/completions", Vec::new())?;
        assert_eq!(endpoint.url, "http://127.0.0.1:9/v1/chat/completions");
        for bad in ["127.0.0.1:9/v1", "ftp://host/v1", ""] {
            let outcome = JsonEndpoint::new(bad, "/v1/messages", Vec::new());
            assert!(
                matches!(&outcome, Err(ProviderError::Config(message))
                    if message.contains(&format!("base_url `{bad}`"))),
                "{bad}: {outcome:?}"
            );
        }
        Ok(())
    }
}
