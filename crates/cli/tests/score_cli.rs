//! `earthverse score` with the deterministic judge on the bundled fixture
//! release: records in run order, and a run cut short resumes without
//! losing or repeating a record.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

fn score(out: &Path, restart: bool) -> std::process::Output {
    let release = fixtures();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_earthverse"));
    cmd.arg("score")
        .arg(&release)
        .arg("--runs")
        .arg(release.join("exploration/trajectories"))
        .arg("--out")
        .arg(out);
    if restart {
        cmd.arg("--restart");
    }
    let output = cmd.output().expect("earthverse runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn key(record: &Value) -> (String, String) {
    (
        record["task_id"].as_str().unwrap().to_owned(),
        record["system"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn a_cut_short_score_resumes_without_losing_or_repeating_records() {
    let dir = tempfile::tempdir().unwrap();
    let full = dir.path().join("full.jsonl");
    score(&full, true);
    let all = records(&full);
    // One record per recorded run, in the path order of the runs.
    let runs = std::fs::read_dir(fixtures().join("exploration/trajectories"))
        .unwrap()
        .flat_map(|system| std::fs::read_dir(system.unwrap().path()).unwrap())
        .count();
    assert_eq!(all.len(), runs);
    let mut sorted = all.iter().map(key).collect::<Vec<_>>();
    sorted.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
    assert_eq!(all.iter().map(key).collect::<Vec<_>>(), sorted);

    // A run killed while writing: five whole records and half of the sixth.
    let cut = dir.path().join("cut.jsonl");
    let text = std::fs::read_to_string(&full).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut partial = lines[..5].join("\n");
    partial.push('\n');
    partial.push_str(&lines[5][..lines[5].len() / 2]);
    std::fs::write(&cut, partial).unwrap();
    let output = score(&cut, false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("{} runs found, 5 already in", runs)),
        "{stderr}"
    );
    let resumed = records(&cut);
    assert_eq!(resumed.len(), all.len());
    let mut resumed_keys = resumed.iter().map(key).collect::<Vec<_>>();
    resumed_keys.sort();
    resumed_keys.dedup();
    assert_eq!(resumed_keys.len(), all.len(), "a record is repeated");
    // Every record is the one a fresh run gives.
    for record in &resumed {
        let fresh = all.iter().find(|r| key(r) == key(record)).unwrap();
        assert_eq!(record, fresh);
    }
}
