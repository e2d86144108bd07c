//! Benchmark of the claim–evidence ledger over the dev slice's 817
//! recorded runs, against the plain `units` pass in the same run.
//!
//! Two whole-process figures, each the best of `ROUNDS` runs with a warm
//! page cache, the two commands alternating round by round so both see the
//! same machine load:
//! 1. `earthverse evidence <dev> --runs <dev>/exploration/trajectories --json`
//!    (every run's tool calls read, every unit scored in both readings and
//!    traced through the observations, the per-system summary);
//! 2. `earthverse units <dev> --runs <dev>/exploration --json` (answers
//!    only, scored; its agreement and noise-floor figures).
//!
//! Then, in process, the ledger alone (runs loaded and scored once): the
//! cost of tracing itself.
//!
//! Binary from `$EARTHVERSE_BIN`, default `target/release/earthverse`
//! (`cargo build --release -p earthverse-cli` first). Run:
//! `cargo bench -p earthverse-benches --bench evidence`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_answer_units::score_task;
use earthverse_benches::{best_of, dev_slice, earthverse_bin, run_timed};
use earthverse_evidence_ledger::TraceIndex;
use earthverse_package_model::Release;
use earthverse_rubric_judge::evidence::{cited_files, observations, task_reference_files};
use earthverse_rubric_judge::{find_runs, load_tasks, scoring_context};
use std::ffi::OsStr;
use std::time::Duration;

const ROUNDS: usize = 5;

fn main() {
    let root = dev_slice();
    assert!(
        root.join("tasks").is_dir(),
        "needs the dev slice at {} (EARTHVERSE_DATA)",
        root.display()
    );
    let bin = earthverse_bin();
    let trajectories = root.join("exploration/trajectories");
    let exploration = root.join("exploration");
    if bin.is_file() {
        let evidence: [&OsStr; 5] = [
            "evidence".as_ref(),
            root.as_os_str(),
            "--runs".as_ref(),
            trajectories.as_os_str(),
            "--json".as_ref(),
        ];
        let units: [&OsStr; 5] = [
            "units".as_ref(),
            root.as_os_str(),
            "--runs".as_ref(),
            exploration.as_os_str(),
            "--json".as_ref(),
        ];
        let (mut best_evidence, mut best_units) = (Duration::MAX, Duration::MAX);
        for _ in 0..ROUNDS {
            best_evidence = best_evidence.min(run_timed(&bin, &evidence));
            best_units = best_units.min(run_timed(&bin, &units));
        }
        println!(
            "whole process `earthverse evidence --runs --json`: {:.3} s (target < 2 s)",
            best_evidence.as_secs_f64()
        );
        println!(
            "whole process `earthverse units --runs --json`:    {:.3} s (same rounds)",
            best_units.as_secs_f64()
        );
    } else {
        println!(
            "whole process: not measured, {} is missing (cargo build --release -p earthverse-cli)",
            bin.display()
        );
    }

    // In process: the ledger alone, over runs loaded and scored once.
    let tasks = load_tasks(&root).expect("tasks load");
    let release = Release::load(&root).expect("release loads");
    let runs = find_runs(&trajectories).expect("runs load");
    let scored: Vec<_> = runs
        .iter()
        .map(|rf| {
            let task = &tasks[&rf.run.task_id];
            let score = score_task(
                &task.primary_gt,
                &rf.run.final_answer,
                &scoring_context(task),
            );
            let refs = task_reference_files(release.task(&task.task_id).expect("task"));
            (rf, task, score, refs)
        })
        .collect();
    let (t, claims) = best_of(ROUNDS, || {
        let mut claims = 0usize;
        for (rf, task, score, refs) in &scored {
            let obs = observations(&rf.run.tool_trace);
            let index = TraceIndex::new(&task.question, &obs, refs);
            let ledger = index.ledger(&score.judge_score().ledger, &cited_files(&rf.run.evidence));
            claims += ledger.claims.len();
            if score.solution.is_some() {
                claims += index.claims(&score.units.ledger).len();
            }
        }
        claims
    });
    println!(
        "in process, the ledger alone (observations, index, both readings' claims): {} runs, {claims} claims: {:.3} s (one core)",
        scored.len(),
        t.as_secs_f64()
    );
}
