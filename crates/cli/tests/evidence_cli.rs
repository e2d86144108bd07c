//! `earthverse evidence` and the `claims` of `earthverse score` as
//! processes on the bundled fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

fn earthverse(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn evidence_json() -> Value {
    let root = fixtures();
    let runs = root.join("exploration/trajectories");
    let out = earthverse(&[
        "evidence",
        root.to_str().unwrap(),
        "--runs",
        runs.to_str().unwrap(),
        "--json",
    ]);
    serde_json::from_str(&out).unwrap()
}

fn run<'a>(report: &'a Value, system: &str, task: &str) -> &'a Value {
    report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["system"] == system && r["task_id"] == task)
        .unwrap()
}

fn claim<'a>(run: &'a Value, unit: &str) -> &'a Value {
    run["claims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["unit"] == unit)
        .unwrap_or_else(|| panic!("no claim {unit}"))
}

#[test]
fn the_json_ledger_traces_values_and_diagnoses_wrong_ones() {
    let report = evidence_json();
    assert_eq!(report["runs"].as_array().unwrap().len(), 12);
    for r in report["runs"].as_array().unwrap() {
        for c in r["claims"].as_array().unwrap() {
            for key in [
                "unit",
                "value",
                "status",
                "satisfied",
                "source",
                "error_family",
            ] {
                assert!(c.get(key).is_some(), "claim without {key}: {c}");
            }
        }
    }
    let hasty = run(&report, "fixture-hasty-agent", "FIX-001_Q1");
    // The hasty agent's python printed 6.5 hot days; the reference counts 5.
    let c = claim(hasty, "days_tmax_ge_35c");
    assert_eq!(c["value"], 6.5);
    assert_eq!(c["status"], "computed");
    assert_eq!(c["satisfied"], false);
    assert_eq!(c["source"]["step"], 3);
    assert_eq!(c["source"]["tool"], "python_exec");
    assert_eq!(c["error_family"], "arithmetic");
    // The event window was read from the locked anchor at step 2.
    let c = claim(hasty, "event_window.start_date");
    assert_eq!(c["status"], "observed");
    assert_eq!(c["source"]["step"], 2);
    assert!(c["source"]["file"]
        .as_str()
        .unwrap()
        .ends_with("event_reports_001_Locked_event_anchor.bin"));
    assert!(c["error_family"].is_null());
    let systems = report["systems"].as_array().unwrap();
    assert_eq!(systems.len(), 2);
    let careful = systems
        .iter()
        .find(|s| s["system"] == "fixture-careful-agent")
        .unwrap();
    assert_eq!(
        careful["families"].as_object().unwrap().len(),
        0,
        "{careful}"
    );
    let hasty = systems
        .iter()
        .find(|s| s["system"] == "fixture-hasty-agent")
        .unwrap();
    assert!(
        hasty["families"]["arithmetic"].as_u64().unwrap() >= 4,
        "{hasty}"
    );
    assert!(hasty["traced_share"].as_f64().unwrap() > 0.5);
}

#[test]
fn one_run_prints_its_ledger_claim_by_claim() {
    let root = fixtures();
    let runs = root.join("exploration/trajectories");
    let out = earthverse(&[
        "evidence",
        root.to_str().unwrap(),
        "--runs",
        runs.to_str().unwrap(),
        "--run",
        "fixture-hasty-agent/FIX-001_Q1",
    ]);
    let line = out
        .lines()
        .find(|l| l.starts_with("days_tmax_ge_35c"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        line.contains("computed") && line.contains("arithmetic"),
        "{line}"
    );
    assert!(!out.contains("fixture-careful-agent"));
}

#[test]
fn score_records_carry_the_same_claims() {
    let root = fixtures();
    let runs = root.join("exploration/trajectories");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("records.jsonl");
    earthverse(&[
        "score",
        root.to_str().unwrap(),
        "--runs",
        runs.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let report = evidence_json();
    let text = std::fs::read_to_string(&out).unwrap();
    let mut seen = 0;
    for line in text.lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        let system = record["system"].as_str().unwrap();
        let task = record["task_id"].as_str().unwrap();
        let ledger = run(&report, system, task);
        assert_eq!(record["claims"], ledger["claims"], "{system}/{task}");
        // The record's unit ledger and the claims agree unit by unit.
        let units = record["answer_units"].as_array().unwrap();
        let claims = record["claims"].as_array().unwrap();
        assert_eq!(units.len(), claims.len());
        for (u, c) in units.iter().zip(claims) {
            assert_eq!(u["unit"], c["unit"]);
            assert_eq!(u["satisfied"], c["satisfied"]);
        }
        seen += 1;
    }
    assert_eq!(seen, 12);
}
