//! Anthropic Messages (`/v1/messages`) with native tool use.
//!
//! System messages go to the top-level `system` field; consecutive messages
//! of one role are merged (the API wants user/assistant alternation); tool
//! results travel as `tool_result` blocks in a user turn. The API has no JSON
//! mode, so `json_mode` only relies on the prompt.

use crate::chat::{
    ChatModel, ChatRequest, ChatResponse, FinishReason, Message, Role, TokenUsage, ToolCall,
};
use crate::http::{api_key_from_env, JsonEndpoint};
use crate::openai::DEFAULT_CALL_TIMEOUT;
use crate::retry::{AttemptError, RetryPolicy};
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// The `anthropic-version` header sent.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Settings of an Anthropic Messages endpoint.
#[derive(Debug, Clone)]
pub struct AnthropicConfig {
    /// Model name (e.g. `claude-sonnet-4-5`).
    pub model: String,
    /// Base URL without `/v1` (e.g. `https://api.anthropic.com`); `/v1/messages` is appended.
    pub base_url: String,
    /// Name of the environment variable holding the API key (`x-api-key`);
    /// `None` sends no key (loopback tests).
    pub api_key_env: Option<String>,
    /// `max_tokens` when the request sets none (the API requires one).
    pub default_max_tokens: u32,
    /// Timeout of one attempt.
    pub call_timeout: Duration,
    /// Retry policy (reference defaults).
    pub retry: RetryPolicy,
}

impl AnthropicConfig {
    /// Anthropic itself: base URL from `ANTHROPIC_BASE_URL` (default
    /// `https://api.anthropic.com`), key from `ANTHROPIC_API_KEY`.
    pub fn anthropic(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            base_url: std::env::var("ANTHROPIC_BASE_URL")
                .unwrap_or_else(|_| "https://api.anthropic.com".to_string()),
            api_key_env: Some("ANTHROPIC_API_KEY".to_string()),
            default_max_tokens: 8192,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            retry: RetryPolicy::default(),
        }
    }
}

/// A [`ChatModel`] speaking the Anthropic Messages wire format.
#[derive(Debug, Clone)]
pub struct AnthropicMessages {
    id: String,
    config: AnthropicConfig,
    endpoint: JsonEndpoint,
}

impl AnthropicMessages {
    /// Builds the provider; reads the API key variable now.
    pub fn new(config: AnthropicConfig) -> crate::Result<Self> {
        let mut headers = vec![(
            "anthropic-version".to_string(),
            ANTHROPIC_VERSION.to_string(),
        )];
        if let Some(variable) = &config.api_key_env {
            headers.push(("x-api-key".to_string(), api_key_from_env(variable)?));
        }
        let endpoint = JsonEndpoint::new(&config.base_url, "/v1/messages", headers)?;
        Ok(Self {
            id: format!("anthropic:{}", config.model),
            endpoint,
            config,
        })
    }

    /// The wire body of `request` (exposed for audit and tests).
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.config.model));
        let s = &request.sampling;
        let mut max_tokens = s.max_tokens.unwrap_or(self.config.default_max_tokens);
        let thinking = s
            .reasoning_effort
            .and_then(|e| e.anthropic_thinking_budget());
        if let Some(budget) = thinking {
            // The API requires max_tokens above the thinking budget; the
            // answer keeps its own allowance on top of the budget.
            max_tokens = max_tokens.max(budget + self.config.default_max_tokens);
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
        body.insert("max_tokens".into(), json!(max_tokens));
        let system: Vec<&str> = request
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
            .collect();
        if !system.is_empty() {
            body.insert("system".into(), json!(system.join("\n\n")));
        }
        body.insert("messages".into(), Value::Array(to_wire(&request.messages)));
        // With extended thinking the API accepts only the default
        // temperature and no top_p; the record keeps what was asked.
        if thinking.is_none() {
            if let Some(t) = s.temperature {
                body.insert("temperature".into(), json!(t));
            }
            if let Some(p) = s.top_p {
                body.insert("top_p".into(), json!(p));
            }
        }
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        Value::Object(body)
    }
}

fn blocks_of(message: &Message) -> (&'static str, Vec<Value>) {
    match message.role {
        Role::Assistant => {
            let mut blocks = Vec::new();
            if !message.content.is_empty() {
                blocks.push(json!({"type": "text", "text": message.content}));
            }
            for call in &message.tool_calls {
                blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}));
            }
            ("assistant", blocks)
        }
        Role::Tool => (
            "user",
            vec![json!({"type": "tool_result",
                "tool_use_id": message.tool_call_id.clone().unwrap_or_default(),
                "content": message.content})],
        ),
        Role::User | Role::System => (
            "user",
            vec![json!({"type": "text", "text": message.content})],
        ),
    }
}

fn to_wire(messages: &[Message]) -> Vec<Value> {
    let mut wire: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in messages.iter().filter(|m| m.role != Role::System) {
        let (role, blocks) = blocks_of(message);
        if blocks.is_empty() {
            continue;
        }
        match wire.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => wire.push((role, blocks)),
        }
    }
    wire.into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect()
}

fn parse_response(body: &Value) -> Result<ChatResponse, AttemptError> {
    if body.get("type").and_then(Value::as_str) == Some("error") {
        return Err(AttemptError::Malformed(format!(
            "error object in body: {}",
            body.get("error").cloned().unwrap_or(Value::Null)
        )));
    }
    let content = body
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| AttemptError::Malformed("no `content` array in body".into()))?;
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for (index, block) in content.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("tool_use") => {
                let name = block
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| {
                        AttemptError::Malformed(format!("content[{index}] tool_use has no `name`"))
                    })?
                    .to_string();
                tool_calls.push(ToolCall {
                    id: block
                        .get("id")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| format!("toolu_{index}")),
                    name,
                    arguments: block.get("input").cloned().unwrap_or_else(|| json!({})),
                });
            }
            _ => {}
        }
    }
    let finish_reason = match body.get("stop_reason").and_then(Value::as_str) {
        Some("end_turn") | Some("stop_sequence") | None => FinishReason::Stop,
        Some("max_tokens") => FinishReason::Length,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("refusal") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_string()),
    };
    let usage = body.get("usage");
    let count = |key: &str| {
        usage
            .and_then(|u| u.get(key))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let cached = count("cache_read_input_tokens");
    let usage = TokenUsage {
        prompt_tokens: count("input_tokens") + cached + count("cache_creation_input_tokens"),
        completion_tokens: count("output_tokens"),
        cached_tokens: cached,
    };
    Ok(ChatResponse {
        text,
        tool_calls,
        finish_reason,
        usage,
        latency: Duration::ZERO,
        raw: Some(body.clone()),
        retries: Vec::new(),
    })
}

#[async_trait]
impl ChatModel for AnthropicMessages {
    fn model_id(&self) -> &str {
        &self.id
    }

    async fn chat(&self, request: ChatRequest) -> crate::Result<ChatResponse> {
        let body = self.request_body(&request);
        self.endpoint
            .chat(
                &self.id,
                &self.config.retry,
                self.config.call_timeout,
                request.deadline,
                &body,
                parse_response,
            )
            .await
    }
}
