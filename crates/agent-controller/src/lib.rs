//! # earthverse-agent-controller
//!
//! The multi-round solver loop of paper Appendix E and C.2, run records in
//! the public trajectory schema, and the resumable batch runner.
//!
//! - [`Controller`] runs one task: the App. E SOLVER system and task
//!   messages, the tool-action and final-answer JSON contracts (common
//!   variants normalised, see [`protocol`]), observations as user messages
//!   holding the tool envelope as JSON capped at 12,000 characters, 2 format
//!   repairs, forced finalisation when 48 turns or 1,680 s of research run
//!   out, the fallback answer and `_fallback` termination reasons, context
//!   compaction (system + task + recent turns + a summary of older ones), the optional App. E REVIEW phase and the
//!   App. A.4 required-tool policy. Every limit is a field of
//!   [`ControllerSettings`] with the paper's value as default.
//! - [`RunRecord`] holds `trajectory.json` ([`Trajectory`], the schema of
//!   the public recorded runs) and the reference runner's `answer.md`,
//!   `tool_trace.md`, `run_notes.md` and `raw_conversation.json`.
//! - [`Solver`] is the seam the batch runner drives: one task in, one
//!   [`RunRecord`] out. [`Controller`] implements it, every
//!   [`AgentFactory`] does, and so can a user's own loop, which then gets
//!   resume, locks, sharding, progress and the run record for free;
//!   [`RunRecordBuilder`] derives the record's diagnostics from the steps a
//!   solver reports.
//! - [`batch`] runs many tasks with bounded concurrency, resume, per-task
//!   locks, deterministic sharding and atomic writes; [`cluster`] reads
//!   the shard from a Slurm array or a Kubernetes Indexed Job, [`merge`]
//!   checks and merges shard directories against the batch plan, and
//!   [`limits`] holds a cost cap and a request-rate cap across shards.
//!
//! The model side is `earthverse_model_provider::ChatModel`; the tool side is
//! the narrow [`ToolBox`] trait, implemented by the tool registry.
//!
//! ```
//! use earthverse_agent_controller::{Controller, ControllerSettings, TaskInput, ToolBox,
//!     ToolCallOutcome};
//! use earthverse_model_provider::{ChatModel, ChatRequest, ChatResponse, FinishReason,
//!     ToolDefinition, TokenUsage};
//! use earthverse_tool_registry::{ToolContext, ToolOutput};
//! use serde_json::{json, Value};
//! use std::sync::{Arc, Mutex};
//!
//! /// A model that replies from a script.
//! struct Script(Mutex<Vec<&'static str>>);
//! #[async_trait::async_trait]
//! impl ChatModel for Script {
//!     fn model_id(&self) -> &str { "script" }
//!     async fn chat(&self, _r: ChatRequest) -> earthverse_model_provider::Result<ChatResponse> {
//!         let text = self.0.lock().unwrap().remove(0).to_string();
//!         Ok(ChatResponse { text, tool_calls: vec![], finish_reason: FinishReason::Stop,
//!             usage: TokenUsage::default(), latency: Default::default(), raw: None, retries: vec![] })
//!     }
//! }
//! /// One tool that counts the characters of its `text` argument.
//! struct Count;
//! #[async_trait::async_trait]
//! impl ToolBox for Count {
//!     fn definitions(&self) -> Vec<ToolDefinition> {
//!         vec![ToolDefinition { name: "count".into(), description: "count characters".into(),
//!             parameters: json!({"type": "object"}) }]
//!     }
//!     async fn call(&self, _ctx: &ToolContext, _tool: &str, args: Value) -> ToolCallOutcome {
//!         let n = args["text"].as_str().unwrap_or("").chars().count();
//!         ToolCallOutcome::new(args, ToolOutput::ok(json!({ "chars": n }), vec![]))
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let model = Arc::new(Script(Mutex::new(vec![
//!     r#"{"action":"tool_call","tool":"count","args":{"text":"flood"},"reason":"measure"}"#,
//!     r#"{"action":"final_answer","final_answer":{"chars":5},"confidence":0.9}"#,
//! ])));
//! let controller = Controller::new(model, Arc::new(Count), ControllerSettings::default());
//! let task = TaskInput { task_id: "T_Q1".into(), event_id: "T".into(),
//!     question: "How long is the word flood?".into(), package_root: ".".into(),
//!     question_path: None, scratch_dir: std::env::temp_dir() };
//! let record = controller.run_task(&task).await;
//! let d = &record.trajectory.diagnostics;
//! assert_eq!(d.run_status, Some(earthverse_agent_controller::RunStatus::Ok));
//! assert_eq!(d.termination_reason, Some(earthverse_agent_controller::TerminationReason::ModelFinal));
//! assert_eq!(record.trajectory.tool_calls[0].output.text, "{\n  \"chars\": 5\n}");
//! assert_eq!(record.trajectory.final_answer, json!({"chars": 5}));
//! # });
//! ```
//!
//! ## Public API
//!
//! At the crate root: the loop ([`Controller`], [`TaskInput`],
//! [`ControllerSettings`] and its parts), the seams ([`Solver`],
//! [`AgentFactory`], [`ToolBox`], [`CatalogueSession`]), a run's
//! [`Condition`] and its parts, the run record ([`RunRecord`],
//! [`RunRecordBuilder`], [`Trajectory`]) and the catalogue conditions' tool
//! box ([`PresentedToolBox`]). Public modules, used by name: [`batch`]
//! (`run_batch`, observers, shards), [`cluster`], [`merge`], [`limits`],
//! [`agents`] (the baseline and replay agents), [`direct`] (the
//! direct-answer conditions' serialisation), [`prompts`] and [`protocol`]
//! (App. E's messages and contracts). Everything else is private.
#![deny(missing_docs)]

pub mod agents;
pub mod batch;
mod catalogue_view;
pub mod cluster;
mod conditions;
mod context;
mod controller;
pub mod direct;
mod error;
pub mod limits;
pub mod merge;
mod proc;
pub mod prompts;
pub mod protocol;
mod record;
mod settings;
mod solver;
mod task;
mod text;
mod toolbox;

pub use agents::{BaselineModel, ReplayModel};
pub use catalogue_view::{PresentedSession, PresentedToolBox, OPEN_DOMAIN_TOOL};
pub use conditions::{
    parse_task_time, AnswerMode, CatalogueSpec, Condition, ConditionError, ContextPreset,
    ToolNames, TurnBudget, DYNAMIC_K,
};
pub use controller::{Controller, TaskInput, FINAL_ANSWER_TOOL};
pub use error::{ControllerError, Result};
pub use record::{
    write_atomic, write_json_atomic, DirectInput, ModelCallLog, OmittedFile, RequiredToolOutcome,
    RunDiagnostics, RunEnvironment, RunNotes, RunRecord, RunRecordBuilder, RunStatus, Snippet,
    TerminationReason, TextField, ToolCallRecord, Trajectory,
};
pub use settings::{
    Budgets, ContextPolicy, ControllerSettings, DirectMode, DirectSettings, Price, Protocol,
    RequiredToolPolicy, ReviewSettings,
};
pub use solver::{Agent, AgentError, AgentFactory, Solver};
pub use toolbox::{
    render_catalogue, render_output_text, CatalogueSession, Resolution, ToolBox, ToolCallOutcome,
};
