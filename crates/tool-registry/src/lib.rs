//! # earthverse-tool-registry
//!
//! The one object-safe [`Tool`] trait behind which the six research tools of
//! paper §3.4 and the domain operations live, the `Registry` that validates
//! arguments, records calls and caps observations (Appendix C.2, C.4), the
//! Python sandbox, and catalogue presentation / routing (Appendix A.2, A.3.2).
#![deny(missing_docs)]

pub mod tool;

pub use tool::{Applicability, CallStatus, Tool, ToolContext, ToolFamily, ToolOutput};
