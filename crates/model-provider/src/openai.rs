//! OpenAI-compatible `/chat/completions` over reqwest: works with OpenAI and
//! with vLLM, llama.cpp's server and Ollama (all speak this wire format).
//!
//! Both protocols of the reference are supported and chosen per request:
//! the JSON-in-message protocol (no tools; `json_mode` adds
//! `response_format: {"type": "json_object"}`) and native tool calling
//! (tools become `tools`, replies' `tool_calls` become [`ToolCall`]s).

use crate::chat::{
    ChatModel, ChatRequest, ChatResponse, FinishReason, Message, Role, TokenUsage, ToolCall,
};
use crate::http::{api_key_from_env, JsonEndpoint};
use crate::retry::{AttemptError, RetryPolicy};
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use std::time::Duration;

/// Default per-call timeout. The paper fixes none; 600 s keeps one call
/// well inside the 1,800 s task budget, and the task deadline bounds it anyway.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(600);

/// Settings of an OpenAI-compatible endpoint.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Model name sent as `model` (e.g. `gpt-4o`, or the name a local server expects).
    pub model: String,
    /// Base URL up to and including `/v1` (e.g. `https://api.openai.com/v1`,
    /// `http://127.0.0.1:8080/v1`). `/chat/completions` is appended.
    pub base_url: String,
    /// Name of the environment variable holding the API key; `None` sends no
    /// `Authorization` header (local servers).
    pub api_key_env: Option<String>,
    /// Timeout of one attempt.
    pub call_timeout: Duration,
    /// Retry policy (reference defaults).
    pub retry: RetryPolicy,
    /// Send system messages as a prefix of the first user message instead,
    /// for servers whose chat template drops or rejects the system role
    /// (e.g. Gemma under llama-cpp-python's `gemma` format). Default `false`.
    pub fold_system_into_user: bool,
    /// `max_tokens` sent when the request sets none (`None`: send none).
    pub default_max_tokens: Option<u32>,
    /// Ask for a JSON object reply (`response_format`) on every request
    /// without tools, even when the request does not set `json_mode`: small
    /// local models need the server's JSON grammar to follow the protocol.
    pub force_json_mode: bool,
}

impl OpenAiConfig {
    /// OpenAI itself: base URL from `OPENAI_BASE_URL` (default
    /// `https://api.openai.com/v1`), key from `OPENAI_API_KEY`. Also serves
    /// any OpenAI-compatible server (vLLM, llama.cpp, Ollama) by setting
    /// `OPENAI_BASE_URL`; `EARTHVERSE_OPENAI_FOLD_SYSTEM=1` turns on
    /// [`OpenAiConfig::fold_system_into_user`].
    pub fn openai(model: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            base_url: std::env::var("OPENAI_BASE_URL")
                .unwrap_or_else(|_| "https://api.openai.com/v1".to_string()),
            api_key_env: Some("OPENAI_API_KEY".to_string()),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            retry: RetryPolicy::default(),
            fold_system_into_user: std::env::var("EARTHVERSE_OPENAI_FOLD_SYSTEM")
                .is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes")),
            default_max_tokens: std::env::var("EARTHVERSE_OPENAI_MAX_TOKENS")
                .ok()
                .and_then(|v| v.trim().parse().ok()),
            force_json_mode: std::env::var("EARTHVERSE_OPENAI_JSON_MODE")
                .is_ok_and(|v| matches!(v.trim(), "1" | "true" | "yes")),
        }
    }

    /// A local or self-hosted server (vLLM, llama.cpp, Ollama) at `base_url`, no key.
    pub fn local(model: impl Into<String>, base_url: impl Into<String>) -> Self {
        Self {
            model: model.into(),
            base_url: base_url.into(),
            api_key_env: None,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            retry: RetryPolicy::default(),
            fold_system_into_user: false,
            default_max_tokens: None,
            force_json_mode: false,
        }
    }
}

/// A [`ChatModel`] speaking the OpenAI chat-completions wire format.
#[derive(Debug, Clone)]
pub struct OpenAiCompatible {
    id: String,
    config: OpenAiConfig,
    endpoint: JsonEndpoint,
}

impl OpenAiCompatible {
    /// Builds the provider; reads the API key variable now, so a missing key
    /// is reported before any run starts.
    pub fn new(config: OpenAiConfig) -> crate::Result<Self> {
        let mut headers = Vec::new();
        if let Some(variable) = &config.api_key_env {
            let key = api_key_from_env(variable)?;
            headers.push(("authorization".to_string(), format!("Bearer {key}")));
        }
        let endpoint = JsonEndpoint::new(&config.base_url, "/chat/completions", headers)?;
        Ok(Self {
            id: format!("openai:{}", config.model),
            endpoint,
            config,
        })
    }

    /// Replaces the identifier reported by [`ChatModel::model_id`].
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = id.into();
        self
    }

    /// The wire body of `request` (exposed for audit and tests).
    pub fn request_body(&self, request: &ChatRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), json!(self.config.model));
        let messages: Vec<Value> = if self.config.fold_system_into_user {
            fold_system(&request.messages)
                .iter()
                .map(message_to_wire)
                .collect()
        } else {
            request.messages.iter().map(message_to_wire).collect()
        };
        body.insert("messages".into(), Value::Array(messages));
        let s = &request.sampling;
        if let Some(t) = s.temperature {
            body.insert("temperature".into(), json!(t));
        }
        if let Some(p) = s.top_p {
            body.insert("top_p".into(), json!(p));
        }
        if let Some(m) = s.max_tokens.or(self.config.default_max_tokens) {
            body.insert("max_tokens".into(), json!(m));
        }
        if let Some(seed) = s.seed {
            body.insert("seed".into(), json!(seed));
        }
        if let Some(effort) = s.reasoning_effort {
            body.insert("reasoning_effort".into(), json!(effort.as_str()));
        }
        let json_mode =
            request.json_mode || (self.config.force_json_mode && request.tools.is_empty());
        if json_mode {
            body.insert("response_format".into(), json!({"type": "json_object"}));
        }
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": t.parameters}})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        Value::Object(body)
    }
}

/// Moves system messages into the first user message (as a prefix).
fn fold_system(messages: &[Message]) -> Vec<Message> {
    let system: Vec<&str> = messages
        .iter()
        .filter(|m| m.role == Role::System)
        .map(|m| m.content.as_str())
        .collect();
    let mut out: Vec<Message> = messages
        .iter()
        .filter(|m| m.role != Role::System)
        .cloned()
        .collect();
    if system.is_empty() {
        return out;
    }
    let prefix = system.join("\n\n");
    match out.iter_mut().find(|m| m.role == Role::User) {
        Some(first) => first.content = format!("{prefix}\n\n{}", first.content),
        None => out.insert(0, Message::user(prefix)),
    }
    out
}

fn message_to_wire(message: &Message) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
    };
    let mut wire = Map::new();
    wire.insert("role".into(), json!(role));
    if message.role == Role::Assistant && !message.tool_calls.is_empty() {
        let calls: Vec<Value> = message
            .tool_calls
            .iter()
            .map(|c| {
                json!({"id": c.id, "type": "function", "function": {
                    "name": c.name, "arguments": c.arguments.to_string()}})
            })
            .collect();
        wire.insert("tool_calls".into(), Value::Array(calls));
        if message.content.is_empty() {
            wire.insert("content".into(), Value::Null);
        } else {
            wire.insert("content".into(), json!(message.content));
        }
    } else {
        wire.insert("content".into(), json!(message.content));
    }
    if let Some(id) = &message.tool_call_id {
        wire.insert("tool_call_id".into(), json!(id));
    }
    Value::Object(wire)
}

/// Parses a chat-completions body into a provider-neutral response.
pub(crate) fn parse_response(body: &Value) -> Result<ChatResponse, AttemptError> {
    if let Some(error) = body.get("error") {
        return Err(AttemptError::Malformed(format!(
            "error object in body: {error}"
        )));
    }
    let choice = body
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| AttemptError::Malformed("no `choices[0]` in body".into()))?;
    let message = choice
        .get("message")
        .ok_or_else(|| AttemptError::Malformed("no `choices[0].message` in body".into()))?;
    let text = match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    };
    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").and_then(Value::as_array) {
        for (index, call) in calls.iter().enumerate() {
            let function = call.get("function").ok_or_else(|| {
                AttemptError::Malformed(format!("tool_calls[{index}] has no `function`"))
            })?;
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    AttemptError::Malformed(format!("tool_calls[{index}].function has no `name`"))
                })?
                .to_string();
            let arguments = match function.get("arguments") {
                Some(Value::String(s)) if s.trim().is_empty() => json!({}),
                // Models sometimes emit invalid JSON arguments: keep the raw
                // string so the controller can report it to the model.
                Some(Value::String(s)) => {
                    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
                }
                Some(other) => other.clone(),
                None => json!({}),
            };
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| format!("call_{index}"));
            tool_calls.push(ToolCall {
                id,
                name,
                arguments,
            });
        }
    }
    let finish_reason = match choice.get("finish_reason").and_then(Value::as_str) {
        Some("stop") | None => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        Some("tool_calls") | Some("function_call") => FinishReason::ToolCalls,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_string()),
    };
    let usage = body.get("usage");
    let count = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let usage = TokenUsage {
        prompt_tokens: count(usage.and_then(|u| u.get("prompt_tokens"))),
        completion_tokens: count(usage.and_then(|u| u.get("completion_tokens"))),
        cached_tokens: count(
            usage
                .and_then(|u| u.get("prompt_tokens_details"))
                .and_then(|d| d.get("cached_tokens")),
        ),
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
impl ChatModel for OpenAiCompatible {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fold_system_prefixes_the_first_user_message() -> crate::Result<()> {
        let mut config = OpenAiConfig::local("m", "http://127.0.0.1:1/v1");
        config.fold_system_into_user = true;
        let model = OpenAiCompatible::new(config)?;
        let request = ChatRequest::new(vec![
            Message::system("rules"),
            Message::user("task"),
            Message::assistant("a"),
            Message::user("obs"),
        ]);
        let body = model.request_body(&request);
        let roles: Vec<&str> = body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["role"].as_str())
            .collect();
        assert_eq!(roles, vec!["user", "assistant", "user"]);
        assert_eq!(body["messages"][0]["content"], "rules\n\ntask");
        assert_eq!(body["messages"][2]["content"], "obs");
        assert!(body.get("max_tokens").is_none());
        Ok(())
    }

    #[test]
    fn default_max_tokens_applies_only_when_the_request_sets_none() -> crate::Result<()> {
        let mut config = OpenAiConfig::local("m", "http://127.0.0.1:1/v1");
        config.default_max_tokens = Some(384);
        let model = OpenAiCompatible::new(config)?;
        let mut request = ChatRequest::new(vec![Message::user("x")]);
        assert_eq!(model.request_body(&request)["max_tokens"], 384);
        request.sampling.max_tokens = Some(10);
        assert_eq!(model.request_body(&request)["max_tokens"], 10);
        assert!(model
            .request_body(&request)
            .get("response_format")
            .is_none());
        let mut config = OpenAiConfig::local("m", "http://127.0.0.1:1/v1");
        config.force_json_mode = true;
        let forced = OpenAiCompatible::new(config)?;
        assert_eq!(
            forced.request_body(&request)["response_format"],
            json!({"type": "json_object"})
        );
        Ok(())
    }
}
