//! A custom model provider: [`LocalFunctionModel`] implements
//! [`ChatModel`] over a plain Rust function of the conversation, and
//! [`heat_ledger_policy`] is such a function for the heat-ledger task of
//! the fixtures (`FIX-001_Q1`). The logic of the `custom_provider` example.
//!
//! The policy is a hand-written research procedure, not a general agent:
//! it lists the package, reads the event anchor and the station CSV through
//! the real tools, computes the ledger from what the tools returned, and
//! submits it in the final-answer JSON contract of App. E.

use async_trait::async_trait;
use earthverse_agent_controller::{Controller, ControllerSettings, RunRecord, TaskInput};
use earthverse_model_provider::{
    ChatModel, ChatRequest, ChatResponse, FinishReason, Message, Role, TokenUsage,
};
use earthverse_package_model::Release;
use earthverse_tool_registry::{Registry, ResearchToolsConfig};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// A chat model whose replies come from a local function of the messages.
pub struct LocalFunctionModel<F> {
    id: String,
    reply: F,
}

impl<F> LocalFunctionModel<F>
where
    F: Fn(&[Message]) -> String + Send + Sync,
{
    /// A model called `id` answering with `reply`.
    pub fn new(id: impl Into<String>, reply: F) -> Self {
        Self {
            id: id.into(),
            reply,
        }
    }
}

#[async_trait]
impl<F> ChatModel for LocalFunctionModel<F>
where
    F: Fn(&[Message]) -> String + Send + Sync,
{
    fn model_id(&self) -> &str {
        &self.id
    }

    async fn chat(&self, request: ChatRequest) -> earthverse_model_provider::Result<ChatResponse> {
        let started = Instant::now();
        let text = (self.reply)(&request.messages);
        let prompt_chars: usize = request.messages.iter().map(|m| m.content.len()).sum();
        Ok(ChatResponse {
            // Token counts are estimated at 4 characters per token.
            usage: TokenUsage {
                prompt_tokens: (prompt_chars / 4) as u64,
                completion_tokens: (text.len() / 4) as u64,
                cached_tokens: 0,
            },
            text,
            tool_calls: Vec::new(),
            finish_reason: FinishReason::Stop,
            latency: started.elapsed(),
            raw: None,
            retries: Vec::new(),
        })
    }
}

/// The tool envelopes seen so far, parsed from the controller's
/// observation messages (`Observation for step N (tool):\n{json}`).
pub fn observations(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .filter(|m| m.role == Role::User && m.content.starts_with("Observation for step"))
        .filter_map(|m| m.content.split_once('\n'))
        .filter_map(|(_, body)| serde_json::from_str(body).ok())
        .collect()
}

fn tool_call(tool: &str, args: Value, reason: &str) -> String {
    json!({"action": "tool_call", "tool": tool, "args": args, "reason": reason}).to_string()
}

fn give_up(why: &str) -> String {
    json!({
        "action": "final_answer",
        "final_answer": {},
        "unsupported_or_unresolved": [why],
        "confidence": 0.0
    })
    .to_string()
}

/// The heat ledger of `FIX-001_Q1` computed from the anchor JSON text and
/// the station CSV text (columns `date,tmax_c,tmin_c,...,qc_flag`).
pub fn heat_ledger(anchor_path: &str, anchor: &str, csv_path: &str, csv: &str) -> Option<Value> {
    let anchor: Value = serde_json::from_str(anchor).ok()?;
    let start = anchor["temporal_window"]["start_date"].as_str()?;
    let end = anchor["temporal_window"]["end_date"].as_str()?;
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next()?.split(',').collect();
    let col = |name: &str| header.iter().position(|h| h.trim() == name);
    let (date_i, tmax_i, tmin_i, qc_i) = (
        col("date")?,
        col("tmax_c")?,
        col("tmin_c")?,
        col("qc_flag")?,
    );
    let mut rows = Vec::new();
    for line in lines {
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let date = *cells.get(date_i)?;
        if date < start || date > end {
            continue;
        }
        let tmax: f64 = cells.get(tmax_i)?.parse().ok()?;
        let tmin: f64 = cells.get(tmin_i)?.parse().ok()?;
        rows.push((date, tmax, tmin, *cells.get(qc_i)?));
    }
    let round1 = |x: f64| (x * 10.0).round() / 10.0;
    let peak = rows.iter().max_by(|a, b| a.1.total_cmp(&b.1))?;
    let hottest = rows.windows(3).max_by(|a, b| {
        let mean = |w: &[(&str, f64, f64, &str)]| w.iter().map(|r| r.1).sum::<f64>();
        mean(a).total_cmp(&mean(b))
    })?;
    Some(json!({
        "answer_type": "heat_window_ledger",
        "days_tmax_ge_35c": rows.iter().filter(|r| r.1 >= 35.0).count(),
        "event_window": {"days": rows.len(), "end_date": end, "start_date": start},
        "event_window_source": anchor_path,
        "heat_load_gt35c_c_days": round1(rows.iter().map(|r| (r.1 - 35.0).max(0.0)).sum()),
        "hottest_3day_window": {
            "end_date": hottest[2].0,
            "mean_tmax_c": round1(hottest.iter().map(|r| r.1).sum::<f64>() / 3.0),
            "start_date": hottest[0].0
        },
        "peak_tmax_c": peak.1,
        "peak_tmax_date": peak.0,
        "suspect_qc_dates": rows.iter().filter(|r| r.3 != "ok").map(|r| r.0).collect::<Vec<_>>(),
        "temperature_source": csv_path,
        "warm_nights_tmin_ge_23c": rows.iter().filter(|r| r.2 >= 23.0).count()
    }))
}

/// A research procedure for the heat-ledger task as a function of the
/// conversation: list, read the anchor, read the CSV, answer.
pub fn heat_ledger_policy(messages: &[Message]) -> String {
    let seen = observations(messages);
    let files: Vec<String> = seen
        .first()
        .and_then(|o| o["output"]["files"].as_array())
        .map(|files| {
            files
                .iter()
                .filter_map(|f| f["package_relative_path"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let anchor = files.iter().find(|f| f.contains("anchor"));
    let csv = files
        .iter()
        .find(|f| f.ends_with(".csv") && f.contains("temperature"));
    match (seen.len(), anchor, csv) {
        (0, _, _) => tool_call("list_package_files", json!({}), "see the evidence"),
        (_, None, _) | (_, _, None) => give_up("no event anchor or station CSV in the package"),
        (1, Some(anchor), _) => tool_call(
            "read_text_file",
            json!({"path": anchor}),
            "official event window",
        ),
        (2, _, Some(csv)) => tool_call(
            "read_text_file",
            json!({"path": csv}),
            "daily station temperatures",
        ),
        (_, Some(anchor), Some(csv)) => {
            let text = |o: &Value| o["output"]["text"].as_str().unwrap_or_default().to_owned();
            match heat_ledger(anchor, &text(&seen[1]), csv, &text(&seen[2])) {
                Some(answer) => json!({
                    "action": "final_answer",
                    "final_answer": answer,
                    "evidence": [anchor, csv],
                    "reasoning_summary": ["Filtered the station series to the anchor's inclusive window and computed the ledger."],
                    "confidence": 0.9
                })
                .to_string(),
                None => give_up("the anchor or the CSV could not be parsed"),
            }
        }
    }
}

/// Runs task `task_id` of the release at `release_root` with `model`,
/// our [`Controller`] and the real research-tool [`Registry`]; scratch files
/// go to `scratch`.
///
/// # Errors
/// Unreadable release, unknown task, or an unwritable scratch directory.
pub async fn run_task(
    release_root: &Path,
    task_id: &str,
    model: Arc<dyn ChatModel>,
    scratch: &Path,
) -> anyhow::Result<RunRecord> {
    let release = Release::load(release_root)?;
    let task = release
        .task(task_id)
        .ok_or_else(|| anyhow::anyhow!("{} has no task {task_id}", release_root.display()))?;
    std::fs::create_dir_all(scratch)?;
    let question_path = scratch.join(format!("{task_id}.md"));
    std::fs::write(&question_path, &task.question)?;
    let input = TaskInput {
        task_id: task.task_id.clone(),
        event_id: task.event_id.clone(),
        question: task.question.clone(),
        package_root: release.package_dir(&task.event_id),
        question_path: Some(question_path),
        scratch_dir: scratch.join("scratch"),
    };
    let tools = Arc::new(Registry::with_research_tools(ResearchToolsConfig::default()));
    let controller = Controller::new(model, tools, ControllerSettings::default());
    Ok(controller.run_task(&input).await)
}
