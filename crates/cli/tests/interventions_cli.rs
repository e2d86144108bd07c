//! `earthverse oracle`, `earthverse run --oracle` and `earthverse perturb`
//! on the fixture release: the text a run is given is the leak-checked
//! oracle, recorded verbatim in `condition.oracle`; a task whose oracle
//! would reveal an answer gets none, with the reason, from both commands;
//! a run on a perturbed release records the event's manifest in
//! `condition.perturbation`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

fn earthverse(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .args(args)
        .output()
        .expect("earthverse runs")
}

#[test]
fn a_run_gets_the_oracle_text_and_records_it() {
    let release = fixtures();
    let release = release.to_str().unwrap();
    let printed = earthverse(&["oracle", release, "--kind", "evidence-map", "--json"]);
    assert!(printed.status.success());
    let oracles: Vec<Value> = String::from_utf8_lossy(&printed.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(oracles.len(), 5, "5 of the 6 fixture tasks get one");
    let out = tempfile::tempdir().unwrap();
    let run = earthverse(&[
        "run",
        release,
        "--agent",
        "baseline",
        "--oracle",
        "evidence-map",
        "--quiet",
        "--out",
        out.path().to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("FIX-001_Q1") && stderr.contains("runs without an oracle"),
        "{stderr}"
    );
    for o in &oracles {
        let task = o["task_id"].as_str().unwrap();
        let dir = out.path().join("baseline").join(task);
        let t: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("trajectory.json")).unwrap())
                .unwrap();
        assert_eq!(t["condition"]["oracle"]["kind"], "evidence-map");
        assert_eq!(t["condition"]["oracle"]["text"], o["text"]);
        let conversation = std::fs::read_to_string(dir.join("raw_conversation.json")).unwrap();
        let text = o["text"].as_str().unwrap();
        let encoded = serde_json::to_string(text).unwrap();
        assert!(
            conversation.contains(encoded.trim_matches('"')),
            "{task}: the task message holds the oracle"
        );
    }
    let t: Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("baseline/FIX-001_Q1/trajectory.json")).unwrap(),
    )
    .unwrap();
    assert!(t["condition"]["oracle"]["text"].is_null());
    assert!(t["condition"]["oracle"]["reason"]
        .as_str()
        .unwrap()
        .contains("ground-truth answer"));
}

#[test]
fn the_cli_refuses_an_oracle_that_would_reveal_an_answer() {
    let release = fixtures();
    let refused = earthverse(&[
        "oracle",
        release.to_str().unwrap(),
        "--kind",
        "relevant-files",
        "--task",
        "FIX-001_Q1",
    ]);
    assert!(!refused.status.success());
    assert!(refused.stdout.is_empty(), "nothing emitted");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("FIX-001_Q1") && stderr.contains("ground-truth answer"),
        "{stderr}"
    );
}

#[test]
fn a_run_on_a_perturbed_release_records_the_perturbation() {
    let dir = tempfile::tempdir().unwrap();
    let perturbed = dir.path().join("missing");
    let made = earthverse(&[
        "perturb",
        fixtures().to_str().unwrap(),
        "--kind",
        "missing",
        "--seed",
        "11",
        "--out",
        perturbed.to_str().unwrap(),
    ]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let validated = earthverse(&["validate", perturbed.to_str().unwrap()]);
    assert!(
        validated.status.success(),
        "{}",
        String::from_utf8_lossy(&validated.stdout)
    );
    let out = dir.path().join("runs");
    let run = earthverse(&[
        "run",
        perturbed.to_str().unwrap(),
        "--agent",
        "baseline",
        "--tasks",
        "FIX-002_Q1",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let t: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("baseline/FIX-002_Q1/trajectory.json")).unwrap(),
    )
    .unwrap();
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(perturbed.join("perturbations/FIX-002.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(t["condition"]["perturbation"], manifest);
    assert_eq!(manifest["kind"], "missing");
    assert_eq!(manifest["seed"], 11);
    let removed = manifest["changes"][0]["file"].as_str().unwrap();
    assert!(
        t["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| !c["output"]["text"]
                .as_str()
                .unwrap_or("")
                .contains(&format!("\"{removed}\""))),
        "the removed file is not listed to the agent"
    );
}
