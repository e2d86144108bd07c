//! The script ("cassette") format: request matchers and the replies they get.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// A whole script: interactions tried in order for every request.
///
/// For each incoming request the server picks the first interaction whose
/// [`Matcher`] matches and which still has uses left ([`Interaction::times`]),
/// so `[429 once, 200 once]` plays a rate limit followed by a success.
/// A request nothing matches gets HTTP 404 with a JSON error naming the path,
/// so a wrong script fails fast instead of hanging.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// Interactions, in priority order.
    #[serde(default)]
    pub interactions: Vec<Interaction>,
}

impl Script {
    /// A script from interactions.
    pub fn new(interactions: Vec<Interaction>) -> Self {
        Self { interactions }
    }

    /// Parses a script from JSON text.
    pub fn from_json(text: &str) -> crate::Result<Self> {
        serde_json::from_str(text).map_err(|e| crate::LoopbackError::Script {
            message: e.to_string(),
        })
    }
}

/// One matcher and the reply it gets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interaction {
    /// Optional label, echoed in the request log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Which requests this interaction answers.
    #[serde(default, rename = "match")]
    pub matcher: Matcher,
    /// How many requests it answers; 0 means unlimited.
    #[serde(default = "one")]
    pub times: u32,
    /// What is sent back.
    pub reply: Reply,
}

fn one() -> u32 {
    1
}

impl Interaction {
    /// Answers one request (any path) with `reply`.
    pub fn once(reply: Reply) -> Self {
        Self {
            name: None,
            matcher: Matcher::default(),
            times: 1,
            reply,
        }
    }

    /// Answers every request (any path) with `reply`.
    pub fn always(reply: Reply) -> Self {
        Self {
            times: 0,
            ..Self::once(reply)
        }
    }

    /// Restricts the interaction to one request path.
    pub fn on_path(mut self, path: impl Into<String>) -> Self {
        self.matcher.path = Some(path.into());
        self
    }

    /// Restricts the interaction to bodies containing `needle`.
    pub fn when_body_contains(mut self, needle: impl Into<String>) -> Self {
        self.matcher.body_contains.push(needle.into());
        self
    }
}

/// Conditions on a request; all given ones must hold.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Matcher {
    /// Exact request path (e.g. `/v1/chat/completions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Substrings that must all occur in the raw request body.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub body_contains: Vec<String>,
    /// Header values that must be present (names lower-case).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

/// What the server sends back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// HTTP status (default 200).
    #[serde(default = "ok_status")]
    pub status: u16,
    /// Extra headers, e.g. `{"retry-after": "1"}`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Wait this long before answering (simulates a slow model / timeout).
    #[serde(default)]
    pub delay_ms: u64,
    /// Send only the first N bytes of the body (truncated JSON), with a
    /// matching `content-length`, so the HTTP exchange is valid but the JSON is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncate_at: Option<usize>,
    /// The body.
    pub body: Body,
}

fn ok_status() -> u16 {
    200
}

impl Reply {
    /// A 200 reply with `body`.
    pub fn ok(body: Body) -> Self {
        Self {
            status: 200,
            headers: BTreeMap::new(),
            delay_ms: 0,
            truncate_at: None,
            body,
        }
    }

    /// An error status with a JSON error body.
    pub fn error(status: u16, message: &str) -> Self {
        Self {
            status,
            ..Self::ok(Body::Json {
                value: json!({"error": {"message": message, "type": "loopback_error"}}),
            })
        }
    }

    /// Adds a header.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers
            .insert(name.to_ascii_lowercase(), value.to_string());
        self
    }

    /// Delays the reply.
    pub fn delayed_ms(mut self, delay_ms: u64) -> Self {
        self.delay_ms = delay_ms;
        self
    }

    /// Truncates the body after `bytes` bytes.
    pub fn truncated_at(mut self, bytes: usize) -> Self {
        self.truncate_at = Some(bytes);
        self
    }
}

/// A tool call inside a scripted reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptToolCall {
    /// Call id (default `call_<index>` / `toolu_<index>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Arguments object.
    #[serde(default)]
    pub arguments: Value,
}

/// Token usage of a scripted reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptUsage {
    /// Prompt / input tokens.
    #[serde(default)]
    pub prompt_tokens: u64,
    /// Completion / output tokens.
    #[serde(default)]
    pub completion_tokens: u64,
    /// Cached prompt tokens.
    #[serde(default)]
    pub cached_tokens: u64,
}

/// A reply body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Body {
    /// Any JSON value, sent as is.
    Json {
        /// The value.
        value: Value,
    },
    /// Raw text, sent as is (`text/plain`).
    Raw {
        /// The text.
        text: String,
    },
    /// An OpenAI `chat.completion` object built from these fields.
    Openai {
        /// Assistant text (`null` when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// Native tool calls.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ScriptToolCall>,
        /// Finish reason (default `stop`, or `tool_calls` when there are calls).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        finish_reason: Option<String>,
        /// Usage.
        #[serde(default)]
        usage: ScriptUsage,
    },
    /// An Anthropic Messages `message` object built from these fields.
    Anthropic {
        /// Text block (omitted when absent).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// `tool_use` blocks.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_uses: Vec<ScriptToolCall>,
        /// Stop reason (default `end_turn`, or `tool_use` when there are calls).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_reason: Option<String>,
        /// Usage.
        #[serde(default)]
        usage: ScriptUsage,
    },
}

impl Body {
    /// An OpenAI reply holding `content`.
    pub fn openai_text(content: impl Into<String>) -> Self {
        Self::Openai {
            content: Some(content.into()),
            tool_calls: Vec::new(),
            finish_reason: None,
            usage: ScriptUsage {
                prompt_tokens: 100,
                completion_tokens: 20,
                cached_tokens: 0,
            },
        }
    }

    /// An Anthropic reply holding `text`.
    pub fn anthropic_text(text: impl Into<String>) -> Self {
        Self::Anthropic {
            text: Some(text.into()),
            tool_uses: Vec::new(),
            stop_reason: None,
            usage: ScriptUsage {
                prompt_tokens: 100,
                completion_tokens: 20,
                cached_tokens: 0,
            },
        }
    }

    /// The body bytes and content type.
    pub fn render(&self, model: &str) -> (Vec<u8>, &'static str) {
        match self {
            Self::Json { value } => (value.to_string().into_bytes(), "application/json"),
            Self::Raw { text } => (text.clone().into_bytes(), "text/plain"),
            Self::Openai {
                content,
                tool_calls,
                finish_reason,
                usage,
            } => {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        json!({"id": c.id.clone().unwrap_or_else(|| format!("call_{i}")),
                               "type": "function",
                               "function": {"name": c.name, "arguments": c.arguments.to_string()}})
                    })
                    .collect();
                let finish = finish_reason.clone().unwrap_or_else(|| {
                    if calls.is_empty() {
                        "stop"
                    } else {
                        "tool_calls"
                    }
                    .to_string()
                });
                let mut message = json!({"role": "assistant", "content": content});
                if !calls.is_empty() {
                    message["tool_calls"] = Value::Array(calls);
                }
                let value = json!({
                    "id": "chatcmpl-loopback",
                    "object": "chat.completion",
                    "created": 0,
                    "model": model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {
                        "prompt_tokens": usage.prompt_tokens,
                        "completion_tokens": usage.completion_tokens,
                        "total_tokens": usage.prompt_tokens + usage.completion_tokens,
                        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens}
                    }
                });
                (value.to_string().into_bytes(), "application/json")
            }
            Self::Anthropic {
                text,
                tool_uses,
                stop_reason,
                usage,
            } => {
                let mut blocks = Vec::new();
                if let Some(text) = text {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for (i, c) in tool_uses.iter().enumerate() {
                    blocks.push(json!({"type": "tool_use",
                        "id": c.id.clone().unwrap_or_else(|| format!("toolu_{i}")),
                        "name": c.name, "input": c.arguments}));
                }
                let stop = stop_reason.clone().unwrap_or_else(|| {
                    if tool_uses.is_empty() {
                        "end_turn"
                    } else {
                        "tool_use"
                    }
                    .to_string()
                });
                let value = json!({
                    "id": "msg_loopback",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks,
                    "stop_reason": stop,
                    "stop_sequence": null,
                    "usage": {
                        "input_tokens": usage.prompt_tokens.saturating_sub(usage.cached_tokens),
                        "output_tokens": usage.completion_tokens,
                        "cache_read_input_tokens": usage.cached_tokens,
                        "cache_creation_input_tokens": 0
                    }
                });
                (value.to_string().into_bytes(), "application/json")
            }
        }
    }
}
