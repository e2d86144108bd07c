//! A custom controller: your own research loop, not our `Controller`,
//! plugged into the batch runner through the [`Solver`] seam. It gets
//! resume, per-task locks, `--shard`-style sharding, concurrency, progress
//! and the run record (`trajectory.json` in the public schema, which our
//! judge and statistics read) without writing any of them: the loop reports
//! its steps to a [`RunRecordBuilder`], which derives every diagnostics
//! figure. The logic of the `custom_controller` example.

use crate::provider::heat_ledger_policy;
use crate::tools::ThresholdExceedance;
use async_trait::async_trait;
use earthverse_agent_controller::batch::{
    run_batch, BatchSettings, BatchSummary, NoProgress, Shard,
};
use earthverse_agent_controller::protocol::FinalAnswer;
use earthverse_agent_controller::TextField;
use earthverse_agent_controller::{
    RunRecord, RunRecordBuilder, Solver, TaskInput, TerminationReason, ToolCallRecord,
};
use earthverse_model_provider::{Message, TokenUsage};
use earthverse_package_model::Release;
use earthverse_rubric_judge::RunContext;
use earthverse_tool_registry::{Registry, ResearchToolsConfig};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Most steps the loop takes before it gives up.
pub const MAX_STEPS: u32 = 8;

/// The user's loop: a policy function (here the heat-ledger procedure of
/// [`crate::provider`]) picks the next action, the [`Registry`] (research
/// tools plus [`ThresholdExceedance`]) runs it, the builder keeps the
/// record.
pub struct OwnLoop {
    system: String,
    registry: Registry,
    /// Pause after each step (to make a batch slow enough to kill in a test).
    pub step_delay: Duration,
}

impl OwnLoop {
    /// The loop, named `system` in its records.
    ///
    /// # Errors
    /// When the custom tool cannot be registered.
    pub fn new(system: &str) -> anyhow::Result<Self> {
        let mut registry = Registry::with_research_tools(ResearchToolsConfig::default());
        registry.register(Arc::new(ThresholdExceedance))?;
        Ok(Self {
            system: system.to_owned(),
            registry,
            step_delay: Duration::ZERO,
        })
    }
}

#[async_trait]
impl Solver for OwnLoop {
    fn id(&self) -> String {
        self.system.clone()
    }

    async fn solve(&self, task: &TaskInput) -> RunRecord {
        let ctx = task.tool_context();
        let mut run = RunRecordBuilder::new(&task.task_id, &self.system);
        let mut messages = vec![Message::user(task.question.clone())];
        for step in 1..=MAX_STEPS {
            tokio::time::sleep(self.step_delay).await;
            let reply_text = heat_ledger_policy(&messages);
            run.model_round(&TokenUsage::default());
            let Ok(reply) = serde_json::from_str::<Value>(&reply_text) else {
                let answer = FinalAnswer::fallback("error", "format_error");
                return run.finish(answer, TerminationReason::FormatError, Some(reply_text));
            };
            messages.push(Message::assistant(reply_text));
            if reply["action"] == "final_answer" {
                return run.finish(final_answer(&reply), TerminationReason::ModelFinal, None);
            }
            let tool = reply["tool"].as_str().unwrap_or_default().to_owned();
            let record = self.registry.call(&ctx, &tool, reply["args"].clone()).await;
            let output = serde_json::to_string_pretty(&record.envelope.output).unwrap_or_default();
            run.tool_call(ToolCallRecord {
                step,
                tool: tool.clone(),
                ok: record.envelope.ok,
                reason: reply["reason"].as_str().unwrap_or_default().to_owned(),
                args: record.args.clone(),
                output: TextField::new(&output, None),
                code: TextField::default(),
                stdout: TextField::default(),
                stderr: TextField::default(),
                returncode: None,
                warnings: record.envelope.warnings.clone(),
                evidence_files: record.evidence_files.clone(),
            });
            messages.push(Message::user(format!(
                "Observation for step {step} ({tool}):\n{}",
                record.envelope.envelope_json()
            )));
        }
        let answer = FinalAnswer::fallback("budget_exhausted", "round_limit");
        run.finish(answer, TerminationReason::RoundLimitFallback, None)
    }
}

fn final_answer(reply: &Value) -> FinalAnswer {
    FinalAnswer {
        final_answer: reply.get("final_answer").cloned().unwrap_or(json!({})),
        confidence: reply["confidence"].as_f64(),
        evidence: reply["evidence"].as_array().cloned().unwrap_or_default(),
        reasoning_summary: strings(&reply["reasoning_summary"]),
        unsupported_or_unresolved: strings(&reply["unsupported_or_unresolved"]),
    }
}

/// Runs [`OwnLoop`] over every task of the release with our batch runner:
/// records go to `<out>/<system>/<task_id>/`, finished tasks are skipped on
/// a rerun, a killed batch resumes, `shard` keeps one part of a split.
///
/// # Errors
/// Unreadable release, or an output directory that cannot be written.
pub async fn run_own_loop_batch(
    release_root: &Path,
    out: &Path,
    system: &str,
    concurrency: usize,
    shard: Option<Shard>,
    step_delay: Duration,
) -> anyhow::Result<BatchSummary> {
    let release = Release::load(release_root)?;
    let tasks: Vec<TaskInput> = release
        .tasks()
        .iter()
        .map(|task| TaskInput {
            task_id: task.task_id.clone(),
            event_id: task.event_id.clone(),
            question: task.question.clone(),
            package_root: release.package_dir(&task.event_id),
            question_path: None,
            scratch_dir: out.join("scratch"),
        })
        .collect();
    let mut solver = OwnLoop::new(system)?;
    solver.step_delay = step_delay;
    let mut batch = BatchSettings::new(out, system);
    batch.concurrency = concurrency;
    batch.shard = shard;
    Ok(run_batch(tasks, Arc::new(solver), batch, Arc::new(NoProgress)).await?)
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The judge's view of a run record: the record's `trajectory.json` read
/// back exactly as `earthverse score` reads one from disk.
///
/// # Errors
/// The trajectory lacks a field the judge needs.
pub fn run_context(record: &RunRecord) -> anyhow::Result<RunContext> {
    Ok(RunContext::from_run_json(&serde_json::to_value(
        &record.trajectory,
    )?)?)
}
