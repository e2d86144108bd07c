//! The `Solver` seam: one task in, one run record out. The batch runner
//! ([`crate::batch::run_batch`]) and `earthverse run` drive any
//! `Arc<dyn Solver>`, so a researcher's own loop gets resume, per-task
//! locks, sharding, progress and the run record exactly as our
//! [`Controller`] does. A solver reports its steps to a
//! [`crate::record::RunRecordBuilder`], which derives every diagnostics
//! figure.
//!
//! Three ways in:
//! - implement [`Solver`] (your own loop; see `examples/custom_controller.rs`);
//! - use a [`Controller`] (our App. E loop over one model and one tool box);
//! - implement [`AgentFactory`] (our loop, with the model, tools or settings
//!   chosen per task): every `AgentFactory` is a `Solver`.

use crate::controller::{Controller, TaskInput};
use crate::record::RunRecord;
use crate::settings::ControllerSettings;
use crate::toolbox::ToolBox;
use async_trait::async_trait;
use earthverse_model_provider::ChatModel;
use std::sync::Arc;

/// Solves one task at a time. Object-safe; never fails: a run that cannot
/// finish is a record with `run_status: error` (it scores zero, §4.1).
#[async_trait]
pub trait Solver: Send + Sync {
    /// The system id written into records (and into the `error` record of
    /// a run that panicked).
    fn id(&self) -> String;

    /// Runs `task` to its record. The batch runner sets
    /// `task.scratch_dir` to the task's own directory and writes the record.
    async fn solve(&self, task: &TaskInput) -> RunRecord;
}

#[async_trait]
impl Solver for Controller {
    fn id(&self) -> String {
        self.model_id()
    }

    async fn solve(&self, task: &TaskInput) -> RunRecord {
        self.run_task(task).await
    }
}

/// The model, tools and settings of one task, for our [`Controller`].
pub struct Agent {
    /// The model.
    pub model: Arc<dyn ChatModel>,
    /// The tools.
    pub tools: Arc<dyn ToolBox>,
    /// Controller settings for this task.
    pub settings: ControllerSettings,
}

/// Why the agent of a task could not be built (the task then gets an
/// `error` record naming it).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The agent has nothing for this task (no script, no recorded run).
    #[error("no agent for task {task_id}: {reason}")]
    NoAgentForTask {
        /// Task id.
        task_id: String,
        /// What is missing.
        reason: String,
    },
    /// The model could not be built or loaded.
    #[error("cannot build the model: {0}")]
    Provider(#[from] earthverse_model_provider::ProviderError),
    /// Anything else the factory ran into (files it reads, its own checks).
    #[error("{0}")]
    Other(Box<dyn std::error::Error + Send + Sync>),
}

/// Builds our [`Controller`]'s agent for each task (a replayed run differs
/// per task; a live model is usually shared). Every `AgentFactory` is a
/// [`Solver`].
pub trait AgentFactory: Send + Sync {
    /// The agent for `task`.
    fn agent(&self, task: &TaskInput) -> Result<Agent, AgentError>;

    /// The `model_id` written into the `error` records of tasks whose agent
    /// could not be built.
    fn model_id(&self) -> String;
}

#[async_trait]
impl<F: AgentFactory + ?Sized> Solver for F {
    fn id(&self) -> String {
        self.model_id()
    }

    async fn solve(&self, task: &TaskInput) -> RunRecord {
        match self.agent(task) {
            Err(e) => RunRecord::error(&task.task_id, &self.model_id(), &e.to_string()),
            Ok(agent) => {
                Controller::new(agent.model, agent.tools, agent.settings)
                    .run_task(task)
                    .await
            }
        }
    }
}
