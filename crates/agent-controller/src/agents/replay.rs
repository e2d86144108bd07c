//! Replays a recorded run (the `exploration/trajectories` format): turn by
//! turn it emits the recorded tool calls, in order, as reference JSON-protocol
//! actions, then the recorded final answer, so the controller executes every
//! call through the real tool registry. This is how a user re-scores or
//! re-analyses the published systems offline.
//!
//! `python_exec` calls whose arguments keep only a preview of the code
//! (`code_preview`, `code_chars`, `code_sha1`) are replayed with the preview
//! as `code`: it is all the release keeps, so such calls may not reproduce.

use async_trait::async_trait;
use earthverse_model_provider::scripted::text_response;
use earthverse_model_provider::ProviderError;
use earthverse_model_provider::{ChatModel, ChatRequest, ChatResponse, FinishReason, ToolCall};
use earthverse_package_model::RecordedRun;
use serde_json::{json, Map, Value};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A [`ChatModel`] that replays one [`RecordedRun`].
#[derive(Debug)]
pub struct ReplayModel {
    id: String,
    run: RecordedRun,
    next: AtomicUsize,
}

impl ReplayModel {
    /// Replays `run`; the model id is `replay:<system id>`.
    pub fn new(run: RecordedRun) -> Self {
        Self {
            id: format!("replay:{}", run.model_id),
            run,
            next: AtomicUsize::new(0),
        }
    }

    /// Reads a trajectory file and replays it.
    pub fn from_path(path: &Path) -> earthverse_model_provider::Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ProviderError::Config(format!("reading {}: {e}", path.display())))?;
        let run: RecordedRun = serde_json::from_str(&text).map_err(|e| {
            ProviderError::Config(format!("{} is not a recorded run: {e}", path.display()))
        })?;
        Ok(Self::new(run))
    }

    /// The run being replayed (e.g. to compare tool outputs with the recording).
    pub fn recorded(&self) -> &RecordedRun {
        &self.run
    }

    /// The number of turns this model will answer: one per recorded tool
    /// call, plus the final answer.
    pub fn turns(&self) -> usize {
        self.run.tool_calls.len() + 1
    }

    /// The JSON-protocol action of turn `index` (0-based), if any.
    pub fn action(&self, index: usize) -> Option<Value> {
        if let Some(call) = self.run.tool_calls.get(index) {
            return Some(json!({
                "action": "tool_call",
                "tool": call.tool,
                "args": replay_args(&call.tool, &call.args, &call.extra),
                "reason": call.reason.clone().unwrap_or_default(),
            }));
        }
        if index == self.run.tool_calls.len() {
            return Some(json!({
                "action": "final_answer",
                "final_answer": self.run.final_answer,
                "evidence": self.run.evidence,
                "reasoning_summary": self.run.reasoning_summary,
                "unsupported_or_unresolved": self.run.unsupported_or_unresolved,
            }));
        }
        None
    }
}

/// Arguments to replay: as recorded, except `python_exec` calls recorded
/// with a code preview only get `code` from it.
fn replay_args(tool: &str, args: &Value, extra: &Map<String, Value>) -> Value {
    if tool != "python_exec" || args.get("code").is_some() {
        return args.clone();
    }
    let code = args
        .get("code_preview")
        .and_then(Value::as_str)
        .or_else(|| {
            extra
                .get("code")
                .and_then(|c| c.get("text"))
                .and_then(Value::as_str)
        })
        .unwrap_or_default();
    json!({ "code": code })
}

#[async_trait]
impl ChatModel for ReplayModel {
    fn model_id(&self) -> &str {
        &self.id
    }

    async fn chat(&self, request: ChatRequest) -> earthverse_model_provider::Result<ChatResponse> {
        let index = self.next.fetch_add(1, Ordering::SeqCst);
        let Some(action) = self.action(index) else {
            return Err(ProviderError::Exhausted {
                provider: self.id.clone(),
                used: index,
            });
        };
        let native = !request.tools.is_empty() && action["action"] == "tool_call";
        if native {
            let name = action["tool"].as_str().unwrap_or_default().to_string();
            return Ok(ChatResponse {
                tool_calls: vec![ToolCall {
                    id: format!("replay_{}", index + 1),
                    name,
                    arguments: action["args"].clone(),
                }],
                finish_reason: FinishReason::ToolCalls,
                ..text_response(String::new())
            });
        }
        Ok(text_response(action.to_string()))
    }
}
