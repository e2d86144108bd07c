//! Implements `ChatModel` over a local Rust function and runs the fixture
//! task FIX-001_Q1 with our Controller and the real tool registry, then
//! scores the run with the deterministic judge.
//!
//! `cargo run -p earthverse-examples --example custom_provider [RELEASE]`

use earthverse_examples::controller::run_context;
use earthverse_examples::provider::{heat_ledger_policy, run_task, LocalFunctionModel};
use earthverse_examples::scoring::deterministic_judge;
use earthverse_rubric_judge::{load_tasks, Judge};
use std::sync::Arc;

fn main() -> anyhow::Result<()> {
    let release = earthverse_examples::release_from_args();
    let model = Arc::new(LocalFunctionModel::new(
        "local:heat-ledger",
        heat_ledger_policy,
    ));
    let scratch = std::env::temp_dir().join(format!(
        "earthverse-example-custom-provider-{}",
        std::process::id()
    ));
    let (record, score) = earthverse_examples::block_on(async {
        let record = run_task(&release, "FIX-001_Q1", model, &scratch).await?;
        let tasks = load_tasks(&release)?;
        let task = tasks
            .get("FIX-001_Q1")
            .ok_or_else(|| anyhow::anyhow!("no FIX-001_Q1"))?;
        let score = deterministic_judge()
            .evaluate(task, &run_context(&record)?)
            .await?;
        anyhow::Ok((record, score))
    })??;
    let d = &record.trajectory.diagnostics;
    println!(
        "run_status={} termination={} tool_calls={} model_rounds={}",
        d.run_status
            .map_or(earthverse_stats_bootstrap::UNDEFINED, |s| s.as_str()),
        d.termination_reason.as_ref().map_or_else(
            || earthverse_stats_bootstrap::UNDEFINED.to_string(),
            |t| t.name()
        ),
        d.tool_calls.unwrap_or(0),
        d.model_rounds.unwrap_or(0)
    );
    println!("final_answer={}", record.trajectory.final_answer);
    println!(
        "score: U={:.1} P={:.1} Core={:.1} ({} of {} units)",
        score.unit_accuracy,
        score.llm_rubric_score,
        score.core,
        score.answer_units_correct,
        score.answer_units_total
    );
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}
