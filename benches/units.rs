//! Benchmark of answer-unit scoring over the dev slice's 817 recorded runs.
//!
//! Three figures, each the best of `ROUNDS` runs with a warm page cache:
//! 1. in process: load the release and the runs, score every run;
//! 2. whole process: `earthverse units <dev> --runs <dev>/exploration --json`
//!    (binary from `$EARTHVERSE_BIN`, default `target/release/earthverse`;
//!    build it first with `cargo build --release -p earthverse-cli`), and
//!    `earthverse score --judge deterministic` over the same runs (every
//!    tool call of every run read, U and the rubric approximation, records
//!    written);
//! 3. reference: Python reading the same JSON files and scoring every run
//!    with the prototype's simplest rule (L0: exact key path and value) — a
//!    lower bound of the prototype's own cost, since its full rule set does
//!    strictly more work per run.
//!
//! Run: `cargo bench -p earthverse-benches --bench units`
//! (dev slice from `$EARTHVERSE_DATA`; Python from `$EARTHVERSE_PYTHON`,
//! default `python3`; only the standard library is needed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_answer_units::{score_task, ScoringContext};
use earthverse_benches::{best_of, dev_slice, earthverse_bin, run_timed};
use earthverse_package_model::{load_recorded_runs, Release, Task};
use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const ROUNDS: usize = 5;

const PY_L0: &str = r#"
import json, os, sys, time
root = sys.argv[1]
def leaves(v, path=()):
    if isinstance(v, dict):
        for k, x in v.items():
            yield from leaves(x, path + (k,))
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from leaves(x, path + (i,))
    else:
        yield path, v
def get(v, path):
    for p in path:
        if isinstance(v, dict) and p in v: v = v[p]
        elif isinstance(v, list) and isinstance(p, int) and p < len(v): v = v[p]
        else: return None
    return v
best = None
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    tasks = {}
    for f in os.listdir(os.path.join(root, "tasks")):
        task = json.load(open(os.path.join(root, "tasks", f), encoding="utf-8"))
        tasks[task["task_id"]] = task["ground_truth"]["primary_gt"]
    traj = os.path.join(root, "exploration", "trajectories")
    total = 0.0; n = 0
    for system in sorted(os.listdir(traj)):
        for f in sorted(os.listdir(os.path.join(traj, system))):
            run = json.load(open(os.path.join(traj, system, f), encoding="utf-8"))
            gt = tasks.get(run["task_id"])
            if gt is None: continue
            answer = run["final_answer"]
            units = list(leaves(gt))
            hit = sum(1 for p, v in units if get(answer, p) == v)
            total += 100.0 * hit / len(units) if units else 0.0; n += 1
    dt = time.perf_counter() - t
    best = dt if best is None else min(best, dt)
print(best, n)
"#;

/// The task's scoring context, as every scorer of the project builds it.
fn scoring_context(task: &Task) -> ScoringContext {
    let context = earthverse_rubric_judge::TaskContext::from_task(task).expect("task context");
    earthverse_rubric_judge::scoring_context(&context)
}

/// Best of `ROUNDS` whole-process runs of `earthverse <args>`, output
/// discarded; a failing run stops the benchmark.
fn time_earthverse(bin: &Path, args: &[&OsStr]) -> Duration {
    (0..ROUNDS)
        .map(|_| run_timed(bin, args))
        .min()
        .unwrap_or_default()
}

fn main() {
    let root = dev_slice();
    assert!(
        root.join("tasks").is_dir(),
        "needs the dev slice at {} (EARTHVERSE_DATA)",
        root.display()
    );

    // 1. In process.
    let (in_process, (runs, mean)) = best_of(ROUNDS, || {
        let release = Release::load(&root).expect("release loads");
        let runs = load_recorded_runs(&root.join("exploration")).expect("runs load");
        let mut sum = 0.0;
        for entry in &runs {
            let Some(task) = release.task(&entry.task_id) else {
                continue;
            };
            let ctx = scoring_context(task);
            sum +=
                score_task(&task.ground_truth.primary_gt, &entry.run.final_answer, &ctx).u_judge();
        }
        (runs.len(), sum / runs.len().max(1) as f64)
    });
    println!(
        "in process (load + score against primary_gt and the solution): {runs} runs, mean U_judge {mean:.2}: {:.3} s",
        in_process.as_secs_f64()
    );

    // 1b. Scoring alone (release and runs loaded once).
    let release = Release::load(&root).expect("release loads");
    let all_runs = load_recorded_runs(&root.join("exploration")).expect("runs load");
    let contexts: std::collections::HashMap<&str, ScoringContext> = release
        .tasks()
        .iter()
        .map(|task| (task.task_id.as_str(), scoring_context(task)))
        .collect();
    let (score_only, _) = best_of(ROUNDS, || {
        let mut sum = 0.0;
        for entry in &all_runs {
            let (Some(task), Some(ctx)) = (
                release.task(&entry.task_id),
                contexts.get(entry.task_id.as_str()),
            ) else {
                continue;
            };
            sum +=
                score_task(&task.ground_truth.primary_gt, &entry.run.final_answer, ctx).u_judge();
        }
        sum
    });
    println!("scoring alone: {:.3} s", score_only.as_secs_f64());

    // 2. Whole process.
    let bin = earthverse_bin();
    let whole = if bin.is_file() {
        let t = time_earthverse(
            &bin,
            &[
                "units".as_ref(),
                root.as_os_str(),
                "--runs".as_ref(),
                root.join("exploration").as_os_str(),
                "--json".as_ref(),
            ],
        );
        println!(
            "whole process `earthverse units --runs --json`: {:.3} s (target < 0.5 s)",
            t.as_secs_f64()
        );
        Some(t)
    } else {
        println!(
            "whole process: not measured, {} is missing (cargo build --release -p earthverse-cli)",
            bin.display()
        );
        None
    };

    // 2b. Whole process, the deterministic judge.
    let score_whole = if bin.is_file() {
        let out = std::env::temp_dir().join(format!("ev-bench-score-{}.jsonl", std::process::id()));
        let t = time_earthverse(
            &bin,
            &[
                "score".as_ref(),
                root.as_os_str(),
                "--runs".as_ref(),
                root.join("exploration/trajectories").as_os_str(),
                "--judge".as_ref(),
                "deterministic".as_ref(),
                "--restart".as_ref(),
                "--out".as_ref(),
                out.as_os_str(),
            ],
        );
        let records = std::fs::read_to_string(&out).map_or(0, |text| text.lines().count());
        let _ = std::fs::remove_file(&out);
        println!(
            "whole process `earthverse score --judge deterministic`: {records} records, {:.3} s",
            t.as_secs_f64()
        );
        Some(t)
    } else {
        None
    };

    // 3. Python reference.
    let python = std::env::var("EARTHVERSE_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let out = Command::new(&python)
        .arg("-c")
        .arg(PY_L0)
        .arg(&root)
        .arg(ROUNDS.to_string())
        .output();
    match out {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            let mut parts = text.split_whitespace();
            let secs: f64 = parts
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(f64::NAN);
            let n = parts.next().unwrap_or("?");
            println!("Python reference (json.load + L0 exact-path scoring, {n} runs): {secs:.3} s");
            let ratio = |t: Duration| secs / t.as_secs_f64();
            println!("ratio Python / in-process: {:.1}x", ratio(in_process));
            if let Some(t) = whole {
                println!("ratio Python / whole process: {:.1}x", ratio(t));
            }
            if let Some(t) = score_whole {
                println!("ratio Python / whole-process score: {:.1}x", ratio(t));
            }
        }
        Ok(out) => println!(
            "Python reference failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => println!("Python reference not run ({python}: {e})"),
    }
}
