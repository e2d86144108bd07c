//! Drives a hand-written loop over package-model and the tool registry
//! (no Controller), writes trajectory.json, and scores it with the
//! deterministic judge and the statistics crate.
//!
//! `cargo run -p earthverse-examples --example custom_controller [RELEASE]`

use earthverse_examples::controller::{run_context, run_own_loop};
use earthverse_examples::scoring::{deterministic_judge, format_leaderboard, leaderboard_of};
use earthverse_rubric_judge::{find_runs, load_tasks, Judge};

fn main() -> anyhow::Result<()> {
    let release = earthverse_examples::release_from_args();
    let out = std::env::temp_dir().join(format!(
        "earthverse-example-custom-controller-{}",
        std::process::id()
    ));
    let record = earthverse_examples::block_on(run_own_loop(
        &release,
        "FIX-001_Q1",
        "my-own-loop",
        &out.join("scratch"),
    ))??;
    let run_dir = out.join("runs").join("my-own-loop").join("FIX-001_Q1");
    record.write_to(&run_dir)?;
    println!(
        "wrote {} ({} tool calls)",
        run_dir.join("trajectory.json").display(),
        record.trajectory.tool_calls.len()
    );
    // Score it twice: from memory and from the file `earthverse score` would read.
    let tasks = load_tasks(&release)?;
    let task = tasks
        .get("FIX-001_Q1")
        .ok_or_else(|| anyhow::anyhow!("no FIX-001_Q1"))?;
    let judge = deterministic_judge();
    let from_disk = find_runs(&out.join("runs"))?;
    let records = earthverse_examples::block_on(async {
        let mut records = vec![judge.evaluate(task, &run_context(&record)?).await?];
        for rf in &from_disk {
            records.push(judge.evaluate(task, &rf.run).await?);
        }
        anyhow::Ok(records)
    })??;
    println!(
        "in memory: Core={:.2}; from disk: {}",
        records[0].core,
        records[1..]
            .iter()
            .map(|r| format!("Core={:.2}", r.core))
            .collect::<Vec<_>>()
            .join(", ")
    );
    print!("{}", format_leaderboard(&leaderboard_of(&records[..1])?));
    Ok(())
}
