//! Benchmark: paired bootstrap of all 300 pairs of 25 systems × 405 tasks ×
//! 5,000 resamples (App. C.5), timed as a whole process, beside numpy's
//! shared-matrix version (`benches/bootstrap_numpy.py`) in the same run.
//!
//! Run: `cargo bench -p earthverse-benches --bench bootstrap`.
//! numpy is taken from `$EARTHVERSE_NUMPY_PYTHON` (default
//! `/tmp/venv-ref/bin/python`; make it with
//! `python3 -m venv /tmp/venv-ref && /tmp/venv-ref/bin/pip install numpy`).
//! `--once` computes one table and prints a checksum (the timed child).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_stats_bootstrap::{all_pairs, BootstrapConfig, PairedScores};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

const SYSTEMS: usize = 25;
const TASKS: usize = 405;
const RUNS: usize = 7;

fn synthetic_scores() -> PairedScores {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let rows: Vec<Vec<f64>> = (0..SYSTEMS)
        .map(|_| {
            (0..TASKS)
                .map(|_| f64::from(rng.next_u32() % 10_001) / 100.0)
                .collect()
        })
        .collect();
    PairedScores::from_rows(
        (0..SYSTEMS).map(|s| format!("system-{s:02}")).collect(),
        (0..TASKS).map(|t| format!("T{t:03}")).collect(),
        &rows,
    )
    .unwrap()
}

fn once() {
    let scores = synthetic_scores();
    let pairs = all_pairs(&scores, &BootstrapConfig::default()).unwrap();
    assert_eq!(pairs.len(), SYSTEMS * (SYSTEMS - 1) / 2);
    let checksum: f64 = pairs.iter().map(|p| p.ci_low + p.ci_high).sum();
    println!("pairs={} checksum={checksum:.6}", pairs.len());
}

/// Median wall time of `RUNS` whole-process runs of `cmd`.
fn time_process(mut make: impl FnMut() -> Command) -> Option<(Duration, String)> {
    let mut times = Vec::new();
    let mut last = String::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        let output = make().output().ok()?;
        times.push(start.elapsed());
        if !output.status.success() {
            eprintln!("{}", String::from_utf8_lossy(&output.stderr));
            return None;
        }
        last = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    }
    times.sort();
    Some((times[RUNS / 2], last))
}

fn main() {
    if std::env::args().any(|a| a == "--once") {
        once();
        return;
    }
    let exe = std::env::current_exe().unwrap();
    println!(
        "paired bootstrap, all {} pairs of {SYSTEMS} systems x {TASKS} tasks x 5000 resamples; \
         median of {RUNS} whole-process runs",
        SYSTEMS * (SYSTEMS - 1) / 2
    );
    let (rust, out) = time_process(|| {
        let mut c = Command::new(&exe);
        c.arg("--once");
        c
    })
    .expect("the bench binary runs");
    println!(
        "earthverse-stats-bootstrap: {:>8.3} s  ({out})",
        rust.as_secs_f64()
    );
    let python = std::env::var_os("EARTHVERSE_NUMPY_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/venv-ref/bin/python"));
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bootstrap_numpy.py");
    match time_process(|| {
        let mut c = Command::new(&python);
        c.arg(&script);
        c
    }) {
        Some((numpy, out)) => {
            println!(
                "numpy shared matrix:        {:>8.3} s  ({out})",
                numpy.as_secs_f64()
            );
            println!(
                "ratio numpy / rust:         {:>8.2}x",
                numpy.as_secs_f64() / rust.as_secs_f64()
            );
        }
        None => println!(
            "numpy reference not run: {} with numpy is needed (see the file's docs)",
            python.display()
        ),
    }
}
