//! `earthverse units` and `earthverse score` read answers with one scoring
//! context (`rubric_judge::scoring_context`): on every recorded run of the
//! fixture release, the judge-like U that `units --json` reports is the
//! `unit_accuracy` of the deterministic judge's record.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

fn release() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

#[test]
fn units_and_score_give_every_run_the_same_unit_accuracy() {
    let bin = env!("CARGO_BIN_EXE_earthverse");
    let runs = release().join("exploration/trajectories");
    let out = Command::new(bin)
        .arg("units")
        .arg(release())
        .arg("--runs")
        .arg(&runs)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let units: Value = serde_json::from_slice(&out.stdout).unwrap();
    let from_units: BTreeMap<(String, String), f64> = units["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let key = (
                r["system"].as_str().unwrap().to_owned(),
                r["task_id"].as_str().unwrap().to_owned(),
            );
            (key, r["u_judge"].as_f64().unwrap())
        })
        .collect();

    let dir = tempfile::tempdir().unwrap();
    let scores = dir.path().join("scores.jsonl");
    let status = Command::new(bin)
        .arg("score")
        .arg(release())
        .arg("--runs")
        .arg(&runs)
        .arg("--out")
        .arg(&scores)
        .arg("--restart")
        .status()
        .unwrap();
    assert!(status.success());
    let from_score: BTreeMap<(String, String), f64> = std::fs::read_to_string(&scores)
        .unwrap()
        .lines()
        .map(|line| {
            let r: Value = serde_json::from_str(line).unwrap();
            let key = (
                r["system"].as_str().unwrap().to_owned(),
                r["task_id"].as_str().unwrap().to_owned(),
            );
            (key, r["unit_accuracy"].as_f64().unwrap())
        })
        .collect();

    assert_eq!(from_units.len(), 12, "every fixture run");
    assert_eq!(
        from_units.keys().collect::<Vec<_>>(),
        from_score.keys().collect::<Vec<_>>()
    );
    for (run, u) in &from_units {
        assert!(
            (u - from_score[run]).abs() < 1e-9,
            "{run:?}: units {u}, score {}",
            from_score[run]
        );
    }
    // Not all trivially 100: the runs differ, so the comparison means something.
    assert!(from_units.values().any(|u| *u < 100.0));
}
