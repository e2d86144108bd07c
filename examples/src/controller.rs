//! A custom controller: your own loop over package-model and the tool
//! registry, without our `Controller`, that still writes a
//! [`RunRecord`] in the public trajectory schema which our judge and
//! statistics accept. The logic of the `custom_controller` example.

use crate::provider::heat_ledger_policy;
use crate::tools::ThresholdExceedance;
use earthverse_agent_controller::record::{RunNotes, TextField};
use earthverse_agent_controller::{
    ControllerSettings, Diagnostics, RunRecord, ToolCallRecord, Trajectory,
};
use earthverse_model_provider::Message;
use earthverse_package_model::Release;
use earthverse_rubric_judge::RunContext;
use earthverse_tool_registry::{Registry, ResearchToolsConfig, ToolContext};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// Most steps the loop takes before it gives up.
pub const MAX_STEPS: u32 = 8;

/// Runs `task_id` with a plain loop: a policy function (here the
/// heat-ledger procedure of [`crate::provider`]) picks the next action,
/// the [`Registry`] (research tools plus [`ThresholdExceedance`]) runs it,
/// and the loop keeps the record. `system` names the run.
///
/// # Errors
/// Unreadable release, unknown task, or a tool that cannot be registered.
pub async fn run_own_loop(
    release_root: &Path,
    task_id: &str,
    system: &str,
    scratch: &Path,
) -> anyhow::Result<RunRecord> {
    let started = Instant::now();
    let release = Release::load(release_root)?;
    let task = release
        .task(task_id)
        .ok_or_else(|| anyhow::anyhow!("{} has no task {task_id}", release_root.display()))?;
    let mut registry = Registry::with_research_tools(ResearchToolsConfig::default());
    registry.register(Arc::new(ThresholdExceedance))?;
    let mut ctx = ToolContext::new(release.package_dir(&task.event_id), scratch);
    ctx.package_id = task.event_id.clone();

    let mut messages = vec![Message::user(task.question.clone())];
    let mut calls = Vec::new();
    let mut evidence = BTreeSet::new();
    let mut rounds = 0;
    let mut final_reply = Value::Null;
    for step in 1..=MAX_STEPS {
        rounds += 1;
        let reply_text = heat_ledger_policy(&messages);
        let reply: Value = serde_json::from_str(&reply_text)?;
        messages.push(Message::assistant(reply_text));
        if reply["action"] == "final_answer" {
            final_reply = reply;
            break;
        }
        let tool = reply["tool"].as_str().unwrap_or_default().to_owned();
        let record = registry.call(&ctx, &tool, reply["args"].clone()).await;
        let envelope = record.envelope.envelope_json();
        evidence.extend(record.evidence_files.iter().cloned());
        calls.push(ToolCallRecord {
            step,
            tool: tool.clone(),
            ok: record.envelope.ok,
            reason: reply["reason"].as_str().unwrap_or_default().to_owned(),
            args: record.args.clone(),
            output: TextField::new(
                &serde_json::to_string_pretty(&record.envelope.output)?,
                None,
            ),
            code: TextField::default(),
            stdout: TextField::default(),
            stderr: TextField::default(),
            returncode: None,
            warnings: record.envelope.warnings.clone(),
            evidence_files: record.evidence_files.clone(),
        });
        messages.push(Message::user(format!(
            "Observation for step {step} ({tool}):\n{envelope}"
        )));
    }
    let finished = final_reply["action"] == "final_answer";
    let count = |names: &[&str]| {
        calls
            .iter()
            .filter(|c| names.contains(&c.tool.as_str()))
            .count() as u32
    };
    let trajectory = Trajectory {
        task_id: task.task_id.clone(),
        model_id: system.to_owned(),
        model_name: system.to_owned(),
        scores: json!({}),
        diagnostics: Diagnostics {
            run_status: if finished { "ok" } else { "error" }.into(),
            termination_reason: Some(
                if finished {
                    "model_final"
                } else {
                    "round_limit"
                }
                .into(),
            ),
            latency_s: started.elapsed().as_secs_f64(),
            tool_calls: calls.len() as u32,
            model_rounds: rounds,
            file_reads: count(&["read_text_file", "summarize_table_or_json", "inspect_image"]),
            unique_evidence_files: evidence.len() as u32,
            python_calls: count(&["python_exec"]),
            tool_errors: calls.iter().filter(|c| !c.ok).count() as u32,
            prompt_tokens: 0,
            completion_tokens: 0,
            total_tokens: 0,
            cached_tokens: None,
            cost_usd: None,
            error: (!finished).then(|| format!("no final answer in {MAX_STEPS} steps")),
        },
        tool_calls: calls,
        evidence: final_reply["evidence"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        reasoning_summary: strings(&final_reply["reasoning_summary"]),
        unsupported_or_unresolved: strings(&final_reply["unsupported_or_unresolved"]),
        final_answer: final_reply
            .get("final_answer")
            .cloned()
            .unwrap_or(json!({})),
        judge_rationale: None,
        environment: None,
    };
    Ok(RunRecord {
        trajectory,
        confidence: final_reply["confidence"].as_f64(),
        conversation: Vec::new(),
        model_calls: Vec::new(),
        notes: RunNotes::default(),
        snippets: Vec::new(),
        settings: ControllerSettings::default(),
    })
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
