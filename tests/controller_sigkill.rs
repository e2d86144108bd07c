//! Kill the batch runner with SIGKILL mid-run, restart it: no finished task
//! is lost (its record is byte-identical) or run twice (no second start),
//! and the restarted run completes every task.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const TASKS: usize = 12;

fn finished(out: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut done = BTreeMap::new();
    for i in 0..TASKS {
        let id = format!("CSX-{:03}_Q1", 900 + i);
        if let Ok(bytes) = std::fs::read(out.join("slow").join(&id).join("trajectory.json")) {
            done.insert(id, bytes);
        }
    }
    done
}

fn starts(out: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(out.join("starts.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn sigkill_mid_run_loses_and_repeats_nothing() {
    let root = tempfile::tempdir().unwrap();
    let release = root.path().join("release");
    for i in 0..TASKS {
        let pkg = release.join("packages").join(format!("CSX-{:03}", 900 + i));
        std::fs::create_dir_all(pkg.join("data")).unwrap();
        std::fs::write(pkg.join("data/obs.json"), format!("{{\"value\": {i}}}")).unwrap();
    }
    let out = root.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let child_bin = env!("CARGO_BIN_EXE_earthverse-controller-batch-child");
    let spawn = || {
        Command::new(child_bin)
            .args([release.to_str().unwrap(), out.to_str().unwrap(), "150", "2"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };

    let mut child = spawn();
    let first_pid = child.id().to_string();
    let started = Instant::now();
    // Wait until some, but not all, tasks are finished and one is in
    // flight (killing between two tasks would test nothing; under load the
    // workers can sit in that gap when the third record lands).
    loop {
        let done = finished(&out);
        let in_flight = starts(&out).iter().any(|(id, _)| !done.contains_key(id));
        if done.len() >= 3 && in_flight {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the child made no progress"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL on Unix
    child.wait().unwrap();
    let at_kill = finished(&out);
    assert!(
        at_kill.len() < TASKS,
        "the child finished before the kill; slow it down"
    );
    let in_flight: Vec<String> = starts(&out)
        .into_iter()
        .filter(|(id, _)| !at_kill.contains_key(id))
        .map(|(id, _)| id)
        .collect();
    assert!(!in_flight.is_empty(), "no task was in flight at the kill");

    // Restart: the dead process's locks are stale (its pid is gone).
    let second = spawn().wait_with_output().unwrap();
    assert!(second.status.success());
    let report = String::from_utf8_lossy(&second.stdout);
    assert!(
        report.contains(&format!("done={}", at_kill.len())),
        "{report}"
    );
    assert!(
        report.contains("error=0") && report.contains("locked=0"),
        "{report}"
    );

    let after = finished(&out);
    assert_eq!(
        after.len(),
        TASKS,
        "every task has a record after the restart"
    );
    for (id, bytes) in &at_kill {
        assert_eq!(&after[id], bytes, "{id}: a finished record changed");
    }
    let log = starts(&out);
    for id in at_kill.keys() {
        let runs: Vec<_> = log.iter().filter(|(t, _)| t == id).collect();
        assert_eq!(runs.len(), 1, "{id} ran {} times", runs.len());
        assert_eq!(runs[0].1, first_pid);
    }
    for (id, bytes) in &after {
        let t: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(t["diagnostics"]["run_status"], "ok", "{id}");
        assert_eq!(t["final_answer"]["task"], id.as_str());
        assert_eq!(t["tool_calls"][0]["tool"], "list_package_files");
    }
    // No lock is left behind.
    let locks = std::fs::read_dir(out.join("slow"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".lock"))
        .count();
    assert_eq!(locks, 0);
}
