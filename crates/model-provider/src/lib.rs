//! # earthverse-model-provider
//!
//! The model swap point: a small async chat trait ([`ChatModel`]) whose
//! request and response types hide every wire format, with these
//! implementations:
//!
//! - [`OpenAiCompatible`]: OpenAI-compatible `/chat/completions` (OpenAI,
//!   vLLM, llama.cpp, Ollama), JSON-in-message protocol or native tools;
//! - [`AnthropicMessages`]: Anthropic Messages with native tool use;
//! - [`ScriptedModel`]: a fixed sequence of responses, for tests and examples.
//!
//! The crate depends on no release crate: implementing [`ChatModel`] pulls
//! in no PDF, HTML or zip reader. The replay of recorded runs and the
//! baseline research policy, which read the release, live beside the
//! controller (`earthverse_agent_controller::agents`).
//!
//! [`Pricing`] turns [`TokenUsage`] into USD. [`from_spec`] (with
//! [`ProviderSpec`] and [`Endpoint`]) builds a wire model from the
//! `openai:MODEL` / `anthropic:MODEL` specs the CLI and harnesses take.
//!
//! Wire providers retry as the reference harness does ([`RetryPolicy`]: 2
//! retries, back-off 1 s then 2 s capped at 60 s, `Retry-After` on 429/503,
//! never past the request deadline), and log every retry in
//! [`ChatResponse::retries`] or in the error ([`ProviderError::retries`]).
//!
//! ```
//! use earthverse_model_provider::{ChatModel, ChatRequest, Message, ScriptedModel};
//! # tokio_test_block(async {
//! let model = ScriptedModel::from_texts("scripted", [r#"{"action":"final_answer","final_answer":{}}"#]);
//! let reply = model.chat(ChatRequest::new(vec![Message::user("hi")])).await.unwrap();
//! assert!(reply.text.contains("final_answer"));
//! assert!(model.chat(ChatRequest::new(vec![])).await.is_err()); // script exhausted
//! # });
//! # fn tokio_test_block<F: std::future::Future>(f: F) -> F::Output {
//! #     tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
//! # }
//! ```
#![deny(missing_docs)]

pub mod anthropic;
pub mod chat;
mod error;
mod http;
pub mod openai;
pub mod pricing;
pub mod retry;
pub mod scripted;
pub mod spec;

pub use anthropic::{AnthropicConfig, AnthropicMessages};
pub use chat::{
    ChatModel, ChatRequest, ChatResponse, FinishReason, Message, ReasoningEffort, RetryAttempt,
    Role, Sampling, ServedModel, TokenUsage, ToolCall, ToolDefinition,
};
pub use error::{ProviderError, Result};
pub use openai::{OpenAiCompatible, OpenAiConfig};
pub use pricing::{ModelPrice, Pricing};
pub use retry::RetryPolicy;
pub use scripted::{ScriptStep, ScriptedModel};
pub use spec::{from_spec, Endpoint, Provider, ProviderSpec};
