//! # earthverse-tool-registry
//!
//! The one object-safe [`Tool`] trait behind which the six research tools of
//! paper §3.4 and the domain operations live, the [`Registry`] that
//! validates and normalises arguments, records calls and caps observations
//! (Appendix C.2, C.4), the Python sandbox ([`sandbox`]), and catalogue
//! presentation / routing ([`catalogue`], Appendix A.2, A.3.2).
//!
//! ```
//! use earthverse_tool_registry::{Registry, ResearchToolsConfig, ToolContext, CallStatus};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let package = dir.path().join("CSX-001");
//! std::fs::create_dir_all(package.join("data"))?;
//! std::fs::write(package.join("data/report.json"), "{\"peak_c\": 35.5}")?;
//! let registry = Registry::with_research_tools(ResearchToolsConfig::default());
//! let ctx = ToolContext::new(&package, dir.path().join("scratch"));
//! let rt = tokio::runtime::Runtime::new()?;
//! let record = rt.block_on(registry.call(&ctx, "read_text_file", serde_json::json!({"path": "data/report.json"})));
//! assert_eq!(record.status, CallStatus::Ok);
//! assert_eq!(record.args["max_chars"], 12000); // default filled in
//! assert_eq!(record.envelope.output["path"], "event_packages/standard_event_packages/packages/CSX-001/data/report.json");
//! let missing = rt.block_on(registry.call(&ctx, "no_such_tool", serde_json::json!({})));
//! assert_eq!(missing.status, CallStatus::ExecutionError);
//! # Ok(()) }
//! ```
//!
//! ## Public API
//!
//! At the crate root: the [`Tool`] trait and what a call sees and returns
//! ([`ToolContext`], [`ToolOutput`], [`CallStatus`], [`ToolFamily`]), the
//! [`Registry`] (register, describe, call; [`CallRecord`]) with the
//! observation cap of §3.4 ([`OBSERVATION_MAX_CHARS`], [`cap_observation`]),
//! and the research tools' configuration ([`ResearchToolsConfig`]). Public
//! modules, used by name: [`research`] (the six research tools),
//! [`catalogue`] (catalogue conditions and routers), [`render`] (the
//! reference runner's JSON rendering), [`replay`] and [`python_replay`]
//! (re-running recorded calls), and [`sandbox`] (`python_exec`'s OS
//! sandbox). Everything else is private.
#![deny(missing_docs)]

pub mod catalogue;
mod error;
pub mod python_replay;
mod registry;
pub mod render;
pub mod replay;
mod replay_text;
pub mod research;
mod tool;

/// The OS sandbox of `python_exec` (the `earthverse-sandbox` crate).
pub use earthverse_sandbox as sandbox;

pub use error::{Error, Result};
pub use registry::{
    cap_observation, normalise_args, reference_truncate, CallRecord, Registry, ToolDescriptor,
    OBSERVATION_MAX_CHARS, RECORD_PREVIEW_LIMIT, TRUNCATION_MARKER,
};
pub use research::{ReadMode, ResearchToolsConfig, RESEARCH_TOOL_NAMES};
pub use sandbox::{PythonConfig, PythonLimits, SandboxPolicy, SandboxReport};
pub use tool::{
    Applicability, CallStatus, Tool, ToolContext, ToolFamily, ToolOutput, STANDARD_PACKAGES_PREFIX,
};
