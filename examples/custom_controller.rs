//! Your own research loop (no `Controller`) driven by our batch runner
//! through the `Solver` seam: every task of the release, with concurrency,
//! sharding and resume, records in the public schema, scored with the
//! deterministic judge.
//!
//! `cargo run -p earthverse-examples --example custom_controller [RELEASE]
//!  [--out DIR] [--shard K/N] [--concurrency N] [--step-delay-ms N]`
//!
//! Run it twice with the same `--out`: the second run does no work.

use earthverse_examples::controller::run_own_loop_batch;
use earthverse_examples::scoring::{deterministic_judge, format_leaderboard, leaderboard_of};
use earthverse_rubric_judge::{find_runs, load_tasks, Judge};
use std::path::PathBuf;
use std::time::Duration;

const SYSTEM: &str = "my-own-loop";

fn main() -> anyhow::Result<()> {
    let release = earthverse_examples::release_from_args();
    let mut out = std::env::temp_dir().join(format!(
        "earthverse-example-custom-controller-{}",
        std::process::id()
    ));
    let (mut shard, mut concurrency, mut delay) = (None, 2, Duration::ZERO);
    let args: Vec<String> = std::env::args().skip(2).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).map(String::as_str).unwrap_or_default();
        match pair[0].as_str() {
            "--out" => out = PathBuf::from(value),
            "--shard" => shard = Some(value.parse()?),
            "--concurrency" => concurrency = value.parse()?,
            "--step-delay-ms" => delay = Duration::from_millis(value.parse()?),
            other => anyhow::bail!("unknown option {other}"),
        }
    }
    let summary = earthverse_examples::block_on(run_own_loop_batch(
        &release,
        &out,
        SYSTEM,
        concurrency,
        shard,
        delay,
    ))??;
    println!(
        "{SYSTEM}: {} task(s) in shard; ran {} ok, {} error; {} already done; records in {}",
        summary.planned,
        summary.ok,
        summary.error,
        summary.already_done,
        out.join(SYSTEM).display()
    );
    // Score what is on disk, as `earthverse score` would.
    let tasks = load_tasks(&release)?;
    let judge = deterministic_judge();
    let runs = find_runs(&out)?;
    let records = earthverse_examples::block_on(async {
        let mut records = Vec::new();
        for found in &runs {
            if let Some(task) = tasks.get(&found.run.task_id) {
                records.push(judge.evaluate(task, &found.run).await?);
            }
        }
        anyhow::Ok(records)
    })??;
    for r in &records {
        println!("scored {} Core={:.2}", r.task_id, r.core);
    }
    if !records.is_empty() {
        print!("{}", format_leaderboard(&leaderboard_of(&records)?));
    }
    Ok(())
}
