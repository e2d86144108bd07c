//! Whole-process scoring of every recorded run of a release (issue #30,
//! item 3: `earthverse score` and `earthverse units` under 1 s).
//!
//! The dev slice holds 817 recorded runs; the full release's 2,184 are not
//! available here, so the slice's run files are also laid out again
//! (symbolic links under new system folders) until there are 2,184 of
//! them, and scored as one release would be.
//!
//! Each round times, alternately so both see the same load:
//! * `earthverse score <dev> --runs <runs> --judge deterministic --restart
//!   --out <tmp>` (every record with its claim ledger, written as JSONL);
//! * `earthverse units <dev> --runs <exploration> --json`;
//! * the reference: Python's `json.load` of the same run and task files
//!   (nothing scored: the floor of any scorer that reads them in Python);
//! * with `EARTHVERSE_BIN_BEFORE=PATH`, the same two commands with another
//!   binary (the previous build), for a before/after ratio in one run.
//!
//! Best of `ROUNDS` (default 5) wall times and the children's CPU time
//! (user + system) of the best round.
//!
//! Run: `cargo build --release -p earthverse-cli && cargo bench -p earthverse-benches --bench score`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_benches::{dev_slice, earthverse_bin, run_timed};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// Recorded runs of the full public release (issue #30).
const RELEASE_RUNS: usize = 2_184;

const PY_LOAD: &str = r#"
import json, os, sys
root, runs = sys.argv[1], sys.argv[2]
n = 0
for f in sorted(os.listdir(os.path.join(root, "tasks"))):
    json.load(open(os.path.join(root, "tasks", f), encoding="utf-8"))
for d, _, files in sorted(os.walk(runs, followlinks=True)):
    for f in sorted(files):
        if f.endswith(".json"):
            json.load(open(os.path.join(d, f), encoding="utf-8")); n += 1
print(n)
"#;

/// CPU seconds (user + system) of the waited-for children so far.
fn children_cpu() -> Duration {
    // SAFETY: getrusage writes into the struct we pass and nothing else.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid pointer to a zeroed rusage.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// One timed whole-process run: (wall, CPU).
fn timed(bin: &Path, args: &[&OsStr]) -> (Duration, Duration) {
    let cpu = children_cpu();
    let wall = run_timed(bin, args);
    (wall, children_cpu().saturating_sub(cpu))
}

#[derive(Default)]
struct Best(Option<(Duration, Duration)>);

impl Best {
    fn add(&mut self, t: (Duration, Duration)) {
        if self.0.is_none_or(|b| t.0 < b.0) {
            self.0 = Some(t);
        }
    }
    fn wall(&self) -> f64 {
        self.0.map_or(f64::NAN, |t| t.0.as_secs_f64())
    }
    fn show(&self) -> String {
        self.0.map_or("-".into(), |(w, c)| {
            format!("{:.3} s (CPU {:.3} s)", w.as_secs_f64(), c.as_secs_f64())
        })
    }
}

/// The slice's run files laid out again under new system folders until
/// there are `n`: `<dir>/trajectories/<system>~<k>/<task>.json`.
fn scaled_runs(trajectories: &Path, dir: &Path, n: usize) -> usize {
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    for system in std::fs::read_dir(trajectories).unwrap().flatten() {
        for run in std::fs::read_dir(system.path()).unwrap().flatten() {
            files.push((
                system.file_name().to_string_lossy().into_owned(),
                run.path(),
            ));
        }
    }
    files.sort();
    let mut made = 0;
    'outer: for copy in 0.. {
        for (system, path) in &files {
            if made == n {
                break 'outer;
            }
            let folder = dir.join("trajectories").join(format!("{system}~{copy}"));
            std::fs::create_dir_all(&folder).unwrap();
            std::os::unix::fs::symlink(path, folder.join(path.file_name().unwrap())).unwrap();
            made += 1;
        }
    }
    made
}

fn main() {
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let root = dev_slice();
    assert!(
        root.join("tasks").is_dir(),
        "needs the dev slice at {} (EARTHVERSE_DATA)",
        root.display()
    );
    let bin = earthverse_bin();
    assert!(
        bin.is_file(),
        "{} is missing: cargo build --release -p earthverse-cli",
        bin.display()
    );
    let before = std::env::var_os("EARTHVERSE_BIN_BEFORE").map(PathBuf::from);
    let python = std::env::var("EARTHVERSE_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let tmp = tempfile::tempdir().unwrap();
    let scaled = tmp.path().join("scaled");
    let made = scaled_runs(
        &root.join("exploration/trajectories"),
        &scaled,
        RELEASE_RUNS,
    );
    let out = tmp.path().join("scores.jsonl");
    let cases: [(&str, PathBuf, PathBuf); 2] = [
        (
            "dev slice",
            root.join("exploration/trajectories"),
            root.join("exploration"),
        ),
        ("scaled", scaled.join("trajectories"), scaled.clone()),
    ];
    for (name, trajectories, exploration) in &cases {
        let score_args: Vec<&OsStr> = vec![
            "score".as_ref(),
            root.as_os_str(),
            "--runs".as_ref(),
            trajectories.as_os_str(),
            "--judge".as_ref(),
            "deterministic".as_ref(),
            "--restart".as_ref(),
            "--out".as_ref(),
            out.as_os_str(),
        ];
        let units_args: Vec<&OsStr> = vec![
            "units".as_ref(),
            root.as_os_str(),
            "--runs".as_ref(),
            exploration.as_os_str(),
            "--json".as_ref(),
        ];
        let py_args: Vec<&OsStr> = vec![
            "-c".as_ref(),
            PY_LOAD.as_ref(),
            root.as_os_str(),
            trajectories.as_os_str(),
        ];
        let (mut score, mut units, mut reference) =
            (Best::default(), Best::default(), Best::default());
        let (mut score_before, mut units_before) = (Best::default(), Best::default());
        for _ in 0..rounds {
            reference.add(timed(Path::new(&python), &py_args));
            score.add(timed(&bin, &score_args));
            units.add(timed(&bin, &units_args));
            if let Some(b) = &before {
                score_before.add(timed(b, &score_args));
                units_before.add(timed(b, &units_args));
            }
        }
        let records = std::fs::read_to_string(&out).map_or(0, |t| t.lines().count());
        let runs = Command::new(&python)
            .args(&py_args)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        println!("{name}: {records} records ({runs} run files read by the reference)");
        println!(
            "  reference python json.load of the runs and tasks: {}",
            reference.show()
        );
        println!(
            "  earthverse score: {}  ratio to reference {:.2}x",
            score.show(),
            score.wall() / reference.wall()
        );
        println!(
            "  earthverse units --json: {}  ratio to reference {:.2}x",
            units.show(),
            units.wall() / reference.wall()
        );
        if before.is_some() {
            println!(
                "  before: score {} ({:.2}x reference), units {} ({:.2}x reference)",
                score_before.show(),
                score_before.wall() / reference.wall(),
                units_before.show(),
                units_before.wall() / reference.wall()
            );
        }
    }
    println!("scaled layout: {made} run files (target {RELEASE_RUNS})");
}
