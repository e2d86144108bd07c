//! The HTTP server: every non-`/_loopback` request is matched against the script.

use crate::script::{Reply, Script};
use axum::body::{Body as HttpBody, Bytes};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use serde::Serialize;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request the server received, as listed by `GET /_loopback/requests`.
#[derive(Debug, Clone, Serialize)]
pub struct LoggedRequest {
    /// HTTP method.
    pub method: String,
    /// Request path.
    pub path: String,
    /// Selected headers (authorization, x-api-key, anthropic-version, content-type).
    pub headers: serde_json::Map<String, Value>,
    /// Body parsed as JSON, or as a string when it is not JSON.
    pub body: Value,
    /// Index of the interaction that answered, if any.
    pub interaction: Option<usize>,
    /// Its name, if it has one.
    pub interaction_name: Option<String>,
    /// When it arrived, in milliseconds since the Unix epoch (wall clock).
    pub received_unix_ms: u64,
}

#[derive(Debug)]
struct State {
    script: Script,
    used: Vec<u32>,
    log: Vec<LoggedRequest>,
}

type Shared = Arc<Mutex<State>>;

/// Binds `addr` (use port 0 for any free port) and returns the bound
/// address and the server future.
pub async fn bind(
    script: Script,
    addr: SocketAddr,
) -> crate::Result<(
    SocketAddr,
    impl std::future::Future<Output = std::io::Result<()>>,
)> {
    let used = vec![0; script.interactions.len()];
    let state: Shared = Arc::new(Mutex::new(State {
        script,
        used,
        log: Vec::new(),
    }));
    let app = Router::new()
        .route("/_loopback/requests", get(requests))
        .fallback(handle)
        .with_state(state);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| crate::LoopbackError::Io {
            context: format!("binding {addr}"),
            source,
        })?;
    let bound = listener
        .local_addr()
        .map_err(|source| crate::LoopbackError::Io {
            context: "reading the bound address".into(),
            source,
        })?;
    Ok((bound, async move { axum::serve(listener, app).await }))
}

async fn requests(axum::extract::State(state): axum::extract::State<Shared>) -> Response {
    let log = match state.lock() {
        Ok(s) => json!(s.log),
        Err(_) => json!({"error": "state lock poisoned"}),
    };
    json_response(StatusCode::OK, &log)
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    let mut response = Response::new(HttpBody::from(value.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn handle(
    axum::extract::State(state): axum::extract::State<Shared>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let text = String::from_utf8_lossy(&body).into_owned();
    let parsed: Value = serde_json::from_str(&text).unwrap_or_else(|_| Value::String(text.clone()));
    let model = parsed
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("loopback")
        .to_string();
    let mut logged_headers = serde_json::Map::new();
    for name in [
        "authorization",
        "x-api-key",
        "anthropic-version",
        "content-type",
    ] {
        if let Some(v) = headers.get(name).and_then(|v| v.to_str().ok()) {
            logged_headers.insert(name.to_string(), json!(v));
        }
    }
    let chosen: Option<(usize, Option<String>, Reply)> = {
        let Ok(mut s) = state.lock() else {
            return json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &json!({"error": "state lock poisoned"}),
            );
        };
        let mut found = None;
        for (index, interaction) in s.script.interactions.iter().enumerate() {
            let used = s.used.get(index).copied().unwrap_or(0);
            if interaction.times != 0 && used >= interaction.times {
                continue;
            }
            let m = &interaction.matcher;
            if m.path.as_deref().is_some_and(|p| p != path) {
                continue;
            }
            if !m.body_contains.iter().all(|needle| text.contains(needle)) {
                continue;
            }
            if !m.headers.iter().all(|(name, value)| {
                headers
                    .get(name.as_str())
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|v| v == value)
            }) {
                continue;
            }
            found = Some((index, interaction.name.clone(), interaction.reply.clone()));
            break;
        }
        if let Some((index, _, _)) = &found {
            if let Some(slot) = s.used.get_mut(*index) {
                *slot += 1;
            }
        }
        s.log.push(LoggedRequest {
            method: method.to_string(),
            path: path.clone(),
            headers: logged_headers,
            body: parsed,
            interaction: found.as_ref().map(|f| f.0),
            interaction_name: found.as_ref().and_then(|f| f.1.clone()),
            received_unix_ms: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
        });
        found
    };
    let Some((index, _, reply)) = chosen else {
        tracing::warn!(%path, "no interaction matches");
        return json_response(
            StatusCode::NOT_FOUND,
            &json!({"error": {"type": "loopback_no_match",
                "message": format!("no scripted interaction matches {method} {path}")}}),
        );
    };
    tracing::debug!(%path, index, "serving scripted reply");
    if reply.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(reply.delay_ms)).await;
    }
    let (mut bytes, content_type) = reply.body.render(&model);
    if let Some(cut) = reply.truncate_at {
        bytes.truncate(cut);
    }
    let mut response = Response::new(HttpBody::from(bytes));
    *response.status_mut() =
        StatusCode::from_u16(reply.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static(content_type),
    );
    for (name, value) in &reply.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}
