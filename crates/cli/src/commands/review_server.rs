//! The review page's server: axum on 127.0.0.1, one page with its script
//! inline (nothing loaded from elsewhere), `GET /api/session` (the sheets
//! and the labels already given) and `POST /api/label` (one label,
//! appended to the label file before the answer; `earthverse-review`'s
//! store). Thin: it checks that a label names a run and an item of the
//! sample, stamps reviewer and time, and stores it.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use earthverse_review::{append_label, latest_labels, read_labels, Label, ReviewRun, Target};
use serde::Deserialize;
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

/// What the server serves.
pub struct Settings {
    /// The sample's sheets.
    pub runs: Vec<ReviewRun>,
    /// The label file.
    pub labels: PathBuf,
    /// The reviewer's name.
    pub reviewer: String,
    /// Port (0: any free port).
    pub port: u16,
    /// Labels already in the file.
    pub resumed: usize,
}

const PAGE: &str = include_str!("review.html");

/// A label as the page posts it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelIn {
    system: String,
    task_id: String,
    target: Target,
    key: String,
    #[serde(default)]
    correct: Option<bool>,
    #[serde(default)]
    family: Option<String>,
    #[serde(default)]
    points: Option<f64>,
}

/// Serves until interrupted.
pub fn serve(settings: Settings) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", settings.port)).await?;
        let addr = listener.local_addr()?;
        println!(
            "review: http://{addr}/ ({} runs; labels appended to {}; {} earlier labels)",
            settings.runs.len(),
            settings.labels.display(),
            settings.resumed
        );
        std::io::stdout().flush()?;
        let app = Router::new()
            .route("/", get(page))
            .route("/api/session", get(session))
            .route("/api/label", post(label))
            .with_state(Arc::new(settings));
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(())
    })
}

async fn page() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        PAGE,
    )
        .into_response()
}

fn error(status: StatusCode, message: String) -> Response {
    (status, Json(json!({ "error": message }))).into_response()
}

async fn session(State(s): State<Arc<Settings>>) -> Response {
    let path = s.labels.clone();
    let labels = match tokio::task::spawn_blocking(move || read_labels(&path)).await {
        Ok(Ok(l)) => l,
        Ok(Err(e)) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let mine: Vec<&Label> = latest_labels(&labels)
        .into_values()
        .map(|(_, l)| l)
        .filter(|l| l.reviewer == s.reviewer)
        .collect();
    Json(json!({ "reviewer": s.reviewer, "runs": s.runs, "labels": mine })).into_response()
}

async fn label(State(s): State<Arc<Settings>>, Json(input): Json<LabelIn>) -> Response {
    let Some(run) = s
        .runs
        .iter()
        .find(|r| r.system == input.system && r.task_id == input.task_id)
    else {
        return error(
            StatusCode::BAD_REQUEST,
            format!("unknown run {}/{}", input.system, input.task_id),
        );
    };
    let known = match input.target {
        Target::Unit => run.units.iter().any(|u| u.path == input.key),
        Target::Rubric => run.criteria.iter().any(|c| c.name == input.key),
    };
    if !known {
        return error(
            StatusCode::BAD_REQUEST,
            format!(
                "run {}/{} has no {:?} `{}`",
                input.system, input.task_id, input.target, input.key
            ),
        );
    }
    let label = Label {
        reviewer: s.reviewer.clone(),
        time: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        system: input.system,
        task_id: input.task_id,
        target: input.target,
        key: input.key,
        correct: input.correct,
        family: input.family,
        points: input.points,
    };
    let path = s.labels.clone();
    let stored = label.clone();
    match tokio::task::spawn_blocking(move || append_label(&path, &stored)).await {
        Ok(Ok(())) => Json(json!({ "ok": true, "label": label })).into_response(),
        Ok(Err(e)) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}
