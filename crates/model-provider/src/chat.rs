//! The provider-neutral chat types and the [`ChatModel`] trait. No wire
//! format of any provider appears here.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::{Duration, Instant};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// System prompt.
    System,
    /// User / harness message (task, observations, repairs).
    User,
    /// The model.
    Assistant,
    /// A native tool result.
    Tool,
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Speaker.
    pub role: Role,
    /// Text content.
    pub content: String,
    /// Native tool calls made by the assistant in this message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For [`Role::Tool`] messages: the id of the call answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    /// A message with text only.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }
    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }
    /// An assistant message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }
}

/// A native tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Provider-assigned id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Arguments object.
    pub arguments: Value,
}

/// A tool offered to the model for native tool calling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}

/// Sampling settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    /// Temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// Maximum completion tokens.
    pub max_tokens: Option<u32>,
    /// Seed, where the backend supports one.
    pub seed: Option<u64>,
    /// Reasoning effort (Table 3: `none`, `low`, `medium`, `high`, `xhigh`);
    /// `None` leaves the backend's default. OpenAI-compatible servers
    /// receive `reasoning_effort`, Anthropic a thinking budget
    /// ([`ReasoningEffort::anthropic_thinking_budget`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
}

/// Reasoning effort of the reasoning-effort study (paper §5.2, App. A.1,
/// Table 3: five settings, `none` to `xhigh`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    /// No additional reasoning.
    None,
    /// Low effort.
    Low,
    /// Medium effort (the paper's setting for Tables 4 and 6).
    Medium,
    /// High effort.
    High,
    /// Extra-high effort.
    Xhigh,
}

impl ReasoningEffort {
    /// The five settings in the paper's order.
    pub const ALL: [ReasoningEffort; 5] = [
        ReasoningEffort::None,
        ReasoningEffort::Low,
        ReasoningEffort::Medium,
        ReasoningEffort::High,
        ReasoningEffort::Xhigh,
    ];

    /// The name used on the command line, in records and as OpenAI's
    /// `reasoning_effort` value.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::None => "none",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
            ReasoningEffort::Xhigh => "xhigh",
        }
    }

    /// Anthropic's extended-thinking budget in tokens for this effort, or
    /// `None` for no thinking. The paper names only the five levels; these
    /// budgets are ours (1,024 is the API's minimum): low 1,024, medium
    /// 4,096, high 16,384, xhigh 32,768.
    pub fn anthropic_thinking_budget(self) -> Option<u32> {
        match self {
            ReasoningEffort::None => None,
            ReasoningEffort::Low => Some(1_024),
            ReasoningEffort::Medium => Some(4_096),
            ReasoningEffort::High => Some(16_384),
            ReasoningEffort::Xhigh => Some(32_768),
        }
    }
}

impl std::fmt::Display for ReasoningEffort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ReasoningEffort {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| {
                format!("reasoning effort must be none, low, medium, high or xhigh, not `{s}`")
            })
    }
}

/// One request to a chat model.
#[derive(Debug, Clone)]
pub struct ChatRequest {
    /// Conversation so far.
    pub messages: Vec<Message>,
    /// Tools for native tool calling (empty: JSON-in-message protocol).
    pub tools: Vec<ToolDefinition>,
    /// Ask the backend for a JSON object reply.
    pub json_mode: bool,
    /// Sampling settings.
    pub sampling: Sampling,
    /// Hard deadline: no attempt or retry may run past it.
    pub deadline: Option<Instant>,
}

impl ChatRequest {
    /// A request with the given messages and default settings.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            tools: Vec::new(),
            json_mode: false,
            sampling: Sampling::default(),
            deadline: None,
        }
    }
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// Natural end.
    Stop,
    /// Token limit.
    Length,
    /// Native tool calls.
    ToolCalls,
    /// Content filter.
    ContentFilter,
    /// Anything else the backend said.
    Other(String),
}

/// Token usage of one call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens.
    pub prompt_tokens: u64,
    /// Completion tokens.
    pub completion_tokens: u64,
    /// Prompt tokens served from a cache.
    pub cached_tokens: u64,
}

impl TokenUsage {
    /// Prompt plus completion tokens.
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// One retry made while serving a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryAttempt {
    /// 1-based attempt number that failed.
    pub attempt: u32,
    /// What went wrong (HTTP status, timeout, parse error).
    pub error: String,
    /// How long the provider waited before the next attempt.
    pub wait_s: f64,
}

/// One response from a chat model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    /// Text content (may be empty when only tool calls came back).
    pub text: String,
    /// Native tool calls.
    pub tool_calls: Vec<ToolCall>,
    /// Finish reason.
    pub finish_reason: FinishReason,
    /// Token usage.
    pub usage: TokenUsage,
    /// Wall time of the whole call, retries included.
    #[serde(with = "duration_secs")]
    pub latency: Duration,
    /// The raw response body of the successful attempt, for audit.
    pub raw: Option<Value>,
    /// Retries made before success.
    pub retries: Vec<RetryAttempt>,
}

/// The model that served a response, as the provider reported it: the
/// served model name (`model` of OpenAI and Anthropic responses, which may
/// name a dated snapshot of the requested model) and OpenAI's
/// `system_fingerprint` where given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServedModel {
    /// `model` of the response body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `system_fingerprint` of the response body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_fingerprint: Option<String>,
}

impl ChatResponse {
    /// The served model and fingerprint from the raw body, when the
    /// provider returned either.
    pub fn served_model(&self) -> Option<ServedModel> {
        let raw = self.raw.as_ref()?;
        let field = |name: &str| raw.get(name).and_then(Value::as_str).map(str::to_string);
        let served = ServedModel {
            model: field("model"),
            system_fingerprint: field("system_fingerprint"),
        };
        (served != ServedModel::default()).then_some(served)
    }
}

mod duration_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Ok(Duration::from_secs_f64(secs.max(0.0)))
    }
}

/// The model swap point. Implementations hide their wire format entirely.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// A stable identifier (e.g. `openai:gpt-4o`), used in run records and caches.
    fn model_id(&self) -> &str;
    /// Sends one request, with the implementation's retry policy.
    async fn chat(&self, request: ChatRequest) -> crate::Result<ChatResponse>;
}
