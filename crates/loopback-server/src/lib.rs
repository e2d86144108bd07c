//! # earthverse-loopback-server
//!
//! A real HTTP server on 127.0.0.1 that speaks OpenAI-compatible
//! `/v1/chat/completions` and Anthropic `/v1/messages` from a [`Script`]
//! ("cassette") of request matchers and replies. Replies can be rate limits
//! with `Retry-After`, server errors, slow answers beyond a client timeout,
//! truncated JSON, prose instead of JSON, or a model that never finishes:
//! everything a provider and a controller must survive, offline and exact.
//!
//! Tests start it in their own process with [`start`]: it serves on its own
//! thread and tokio runtime, reports its port, and stops when the returned
//! [`LoopbackServer`] is dropped. It is a real TCP peer, so a CLI the test
//! runs as a subprocess reaches it too. `GET /_loopback/requests` (or
//! [`LoopbackServer::requests`]) lists the requests it received. No binary
//! is built or located.
//!
//! ```
//! use earthverse_loopback_server::{start, Body, Interaction, Reply, Script};
//! let script = Script::new(vec![
//!     Interaction::once(Reply::error(429, "slow down").with_header("retry-after", "1")),
//!     Interaction::always(Reply::ok(Body::openai_text(r#"{"action":"final_answer"}"#)))
//!         .on_path("/v1/chat/completions"),
//! ]);
//! let text = serde_json::to_string(&script).unwrap();
//! assert_eq!(Script::from_json(&text).unwrap(), script);
//! let (body, _) = script.interactions[1].reply.body.render("m");
//! assert!(String::from_utf8(body).unwrap().contains("chat.completion"));
//!
//! let server = start(&script).unwrap();
//! assert!(server.base_url().starts_with("http://127.0.0.1:"));
//! assert!(server.requests().unwrap().is_empty());
//! ```
#![deny(missing_docs)]

mod handle;
mod script;
mod server;

pub use handle::{start, LoopbackServer};
pub use script::{Body, Interaction, Matcher, Reply, Script, ScriptToolCall, ScriptUsage};
pub use server::{bind, LoggedRequest};

/// Result alias.
pub type Result<T, E = LoopbackError> = std::result::Result<T, E>;

/// What can go wrong starting or talking to the loopback server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoopbackError {
    /// The script is not valid.
    #[error("loopback script: {message}")]
    Script {
        /// Parser message.
        message: String,
    },
    /// An IO operation failed.
    #[error("loopback: {context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// Cause.
        source: std::io::Error,
    },
    /// The server did not start properly.
    #[error("loopback server did not start: {message}")]
    Startup {
        /// What went wrong.
        message: String,
    },
}
