//! # earthverse-harness
//!
//! The run setup behind `earthverse run` and every condition of a study:
//! an agent spec ([`AgentSpec`]: `baseline`, `replay:DIR`,
//! `scripted:FILE`, `openai:MODEL`, `anthropic:MODEL`, or a harness's own
//! `ChatModel`), a release and an experimental condition
//! (`earthverse_agent_controller::Condition`) become the task inputs, the
//! tool box (research tools; the domain operations, a catalogue view and
//! a required suite's policy when the condition asks), each task's oracle
//! text and perturbation manifest, the `python_exec` interpreter and the
//! batch's shared limits ([`prepare`]); [`PreparedRun::run`] hands them to
//! the controller's `run_batch` (resume, locks, shards, atomic records).
//!
//! A harness that embeds the toolkit calls the same two functions the CLI
//! does:
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use earthverse_harness::{prepare, AgentSpec, RunRequest};
//! use earthverse_model_provider::Endpoint;
//! use std::sync::Arc;
//! let release = earthverse_package_model::Release::load("fixtures/release".as_ref())?;
//! let agent = AgentSpec::parse("baseline", &Endpoint::default())?;
//! let run = prepare(&release, RunRequest::new(agent, "/tmp/runs")).await?;
//! let outcome = run.run(Arc::new(earthverse_agent_controller::batch::NoProgress)).await?;
//! println!("{} ok of {}", outcome.summary.ok, outcome.summary.planned);
//! # Ok(()) }
//! ```
#![deny(missing_docs)]

mod agent;
mod error;
mod python;
mod setup;

pub use agent::{AgentKind, AgentSpec, ScriptFile};
pub use error::{HarnessError, Result};
pub use python::{discover as discover_python, DiscoveredPython};
pub use setup::{prepare, tool_descriptors, PreparedRun, RunOutcome, RunRequest, TaskFilter};
