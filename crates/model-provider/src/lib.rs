//! # earthverse-model-provider
//!
//! The model swap point: a small async chat trait whose request and response
//! types hide every wire format, with OpenAI-compatible, Anthropic, replay,
//! scripted and baseline implementations.
#![deny(missing_docs)]

pub mod chat;
mod error;

pub use chat::{
    ChatModel, ChatRequest, ChatResponse, FinishReason, Message, RetryAttempt, Role, Sampling,
    TokenUsage, ToolCall, ToolDefinition,
};
pub use error::{ProviderError, Result};
