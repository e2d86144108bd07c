//! Controller overhead per round: the solver loop driven by a zero-latency
//! scripted model (E1's `ScriptedModel`) and a trivial tool, so nearly all
//! measured time is the controller's own (context building and compaction,
//! reply parsing, observation rendering, records). Target: < 1 ms per round.
//!
//! Two workloads of 48 rounds (47 tool calls, then the final answer):
//! `small` (each observation ~100 characters: no compaction pressure) and
//! `large` (each observation ~11,000 characters: every request after round 16
//! summarises older observations into the 24,000-character research state).
//! The reference Python runner is not public in runnable form, so there is
//! no side-by-side figure.
//!
//! Run: `cargo bench -p earthverse-benches --bench controller`
#![allow(clippy::expect_used, clippy::unwrap_used)]

use async_trait::async_trait;
use earthverse_agent_controller::{
    Controller, ControllerSettings, TaskInput, ToolBox, ToolCallOutcome,
};
use earthverse_model_provider::{ScriptedModel, ToolDefinition};
use earthverse_tool_registry::{ToolContext, ToolOutput};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::Instant;

const ROUNDS: usize = 48;

struct Trivial {
    payload: String,
}

#[async_trait]
impl ToolBox for Trivial {
    fn definitions(&self) -> Vec<ToolDefinition> {
        vec![ToolDefinition {
            name: "read_text_file".into(),
            description: "returns a fixed text".into(),
            parameters: json!({"type": "object"}),
        }]
    }
    async fn call(&self, _ctx: &ToolContext, _tool: &str, args: Value) -> ToolCallOutcome {
        ToolCallOutcome::new(
            args,
            ToolOutput::ok(
                json!({"path": "data/x.json", "text": self.payload}),
                vec!["data/x.json".into()],
            ),
        )
    }
}

fn script() -> Vec<String> {
    let mut texts: Vec<String> = (0..ROUNDS - 1)
        .map(|i| {
            json!({"action": "tool_call", "tool": "read_text_file",
                   "args": {"path": format!("data/file_{i}.json")}, "reason": "read the next file"})
            .to_string()
        })
        .collect();
    texts.push(
        json!({"action": "final_answer", "final_answer": {"peak_c": 35.5}, "confidence": 0.8,
               "evidence": [{"claim": "peak", "source_file": "data/x.json", "support_type": "direct_metric"}],
               "reasoning_summary": ["read", "computed"], "unsupported_or_unresolved": []})
        .to_string(),
    );
    texts
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let task = TaskInput {
        task_id: "CSX-900_Q1".into(),
        event_id: "CSX-900".into(),
        question: "What was the peak temperature?".into(),
        package_root: "/tmp/event_packages/standard_event_packages/packages/CSX-900".into(),
        question_path: None,
        scratch_dir: std::env::temp_dir(),
    };
    let texts = script();
    for (name, payload_chars, runs) in [("small", 100usize, 300usize), ("large", 11_000, 60)] {
        let tools: Arc<dyn ToolBox> = Arc::new(Trivial {
            payload: "x".repeat(payload_chars),
        });
        let mut per_round = Vec::with_capacity(runs);
        for i in 0..runs + 5 {
            let model = Arc::new(ScriptedModel::from_texts("bench", texts.clone()));
            let controller = Controller::new(model, tools.clone(), ControllerSettings::default());
            let started = Instant::now();
            let record = runtime.block_on(controller.run_task(&task));
            let elapsed = started.elapsed().as_secs_f64();
            assert_eq!(
                record.trajectory.diagnostics.model_rounds,
                Some(ROUNDS as u64)
            );
            assert_eq!(
                record.trajectory.diagnostics.termination_reason,
                Some(earthverse_agent_controller::TerminationReason::ModelFinal)
            );
            if i >= 5 {
                per_round.push(elapsed / ROUNDS as f64 * 1e3);
            }
        }
        per_round.sort_by(f64::total_cmp);
        let median = per_round[per_round.len() / 2];
        let p95 = per_round[per_round.len() * 95 / 100];
        println!(
            "controller/{name}: {ROUNDS} rounds per run, {runs} runs: median {median:.4} ms/round, p95 {p95:.4} ms/round (target < 1 ms)"
        );
    }
}
