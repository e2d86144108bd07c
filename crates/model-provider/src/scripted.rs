//! A model that plays back a fixed sequence of responses: for tests,
//! examples and controller benchmarks (zero latency).

use crate::chat::{ChatModel, ChatRequest, ChatResponse, FinishReason, TokenUsage, ToolCall};
use crate::error::ProviderError;
use async_trait::async_trait;
use std::sync::Mutex;
use std::time::Duration;

/// One step of a script.
#[derive(Debug, Clone)]
pub enum ScriptStep {
    /// Reply with this response.
    Reply(ChatResponse),
    /// Fail with a transport error carrying this message (as a real provider
    /// would after exhausting its retries).
    Fail(String),
}

impl ScriptStep {
    /// A text reply (finish reason `stop`, zero usage).
    pub fn text(text: impl Into<String>) -> Self {
        Self::Reply(text_response(text.into()))
    }

    /// A native tool-call reply.
    pub fn tool_calls(calls: Vec<ToolCall>) -> Self {
        Self::Reply(ChatResponse {
            text: String::new(),
            tool_calls: calls,
            finish_reason: FinishReason::ToolCalls,
            usage: TokenUsage::default(),
            latency: Duration::ZERO,
            raw: None,
            retries: Vec::new(),
        })
    }
}

/// A plain text response with no usage, used by the offline models.
/// A plain text reply (finish reason `stop`, no usage): what scripted and
/// replayed models return.
pub fn text_response(text: String) -> ChatResponse {
    ChatResponse {
        text,
        tool_calls: Vec::new(),
        finish_reason: FinishReason::Stop,
        usage: TokenUsage::default(),
        latency: Duration::ZERO,
        raw: None,
        retries: Vec::new(),
    }
}

#[derive(Debug, Default)]
struct State {
    next: usize,
    seen: Vec<ChatRequest>,
}

/// Plays [`ScriptStep`]s in order; after the last one it either repeats the
/// script from the start ([`ScriptedModel::cycle`]) or fails with
/// [`ProviderError::Exhausted`].
#[derive(Debug)]
pub struct ScriptedModel {
    id: String,
    steps: Vec<ScriptStep>,
    cycle: bool,
    record: bool,
    state: Mutex<State>,
}

impl ScriptedModel {
    /// A model with the given id and steps.
    pub fn new(id: impl Into<String>, steps: Vec<ScriptStep>) -> Self {
        Self {
            id: id.into(),
            steps,
            cycle: false,
            record: false,
            state: Mutex::new(State::default()),
        }
    }

    /// A model replying with these texts in order.
    pub fn from_texts<I, S>(id: impl Into<String>, texts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::new(id, texts.into_iter().map(ScriptStep::text).collect())
    }

    /// Repeat the script forever instead of failing when it runs out
    /// (e.g. a model that never calls final).
    pub fn cycle(mut self) -> Self {
        self.cycle = true;
        self
    }

    /// Keep a copy of every request received (see [`ScriptedModel::requests`]).
    pub fn record_requests(mut self) -> Self {
        self.record = true;
        self
    }

    /// The requests received so far (empty unless recording was asked for).
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.state
            .lock()
            .map(|s| s.seen.clone())
            .unwrap_or_default()
    }

    /// How many responses were served.
    pub fn calls(&self) -> usize {
        self.state.lock().map(|s| s.next).unwrap_or(0)
    }
}

#[async_trait]
impl ChatModel for ScriptedModel {
    fn model_id(&self) -> &str {
        &self.id
    }

    async fn chat(&self, request: ChatRequest) -> crate::Result<ChatResponse> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| ProviderError::Config(format!("{}: state lock poisoned", self.id)))?;
        let index = state.next;
        let step = if self.cycle && !self.steps.is_empty() {
            self.steps.get(index % self.steps.len())
        } else {
            self.steps.get(index)
        };
        let Some(step) = step.cloned() else {
            return Err(ProviderError::Exhausted {
                provider: self.id.clone(),
                used: index,
            });
        };
        state.next += 1;
        if self.record {
            state.seen.push(request);
        }
        match step {
            ScriptStep::Reply(response) => Ok(response),
            ScriptStep::Fail(message) => Err(ProviderError::Transport {
                provider: self.id.clone(),
                attempts: 1,
                message,
                retries: Vec::new(),
            }),
        }
    }
}
