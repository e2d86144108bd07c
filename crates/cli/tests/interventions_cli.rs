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
        &std::fs::read_to_string(perturbed.join("perturbations/FIX-002_Q1.json")).unwrap(),
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

/// Replays every tool call of the fixture release's recorded runs against
/// `release` and returns the JSON report.
fn replay_against(release: &Path) -> Value {
    let runs = fixtures().join("exploration/trajectories");
    let out = earthverse(&[
        "tools",
        "replay",
        release.to_str().unwrap(),
        "--runs",
        runs.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// App. A.3.3 through the tools: replaying the recorded runs against a
/// release with one supporting file removed per task, every recorded read
/// of a removed file now answers `file not found` (and none did against
/// the original), and the package listings no longer match the recording.
#[test]
fn the_tools_see_a_removed_file_when_recorded_runs_are_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let perturbed = dir.path().join("missing");
    let made = earthverse(&[
        "perturb",
        fixtures().to_str().unwrap(),
        "--kind",
        "missing",
        "--seed",
        "2026",
        "--out",
        perturbed.to_str().unwrap(),
    ]);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    // The removed file of each task, from the manifests (one per task: the
    // two tasks of an event may lose different files).
    let mut removed = std::collections::BTreeMap::new();
    for entry in std::fs::read_dir(perturbed.join("perturbations")).unwrap() {
        let manifest: Value =
            serde_json::from_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap()).unwrap();
        for change in manifest["changes"].as_array().unwrap() {
            assert_eq!(change["action"], "removed");
            removed.insert(
                manifest["task_id"].as_str().unwrap().to_string(),
                change["file"].as_str().unwrap().to_string(),
            );
        }
    }
    assert!(!removed.is_empty());

    // Recorded reads of a removed file, as (system, task, step).
    let reads_of_removed = |report: &Value, not_found_only: bool| {
        report["differing"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| {
                let task = d["task"].as_str().unwrap();
                removed.get(task).map(String::as_str) == d["args"]["path"].as_str()
                    && (!not_found_only
                        || d["reason"]
                            .as_str()
                            .unwrap()
                            .contains("ours ok=false: \"file not found"))
            })
            .map(|d| {
                (
                    d["system"].as_str().unwrap().to_string(),
                    d["task"].as_str().unwrap().to_string(),
                    d["step"].as_u64().unwrap(),
                )
            })
            .collect::<std::collections::BTreeSet<_>>()
    };
    let original = replay_against(&fixtures());
    let after = replay_against(&perturbed);
    assert!(reads_of_removed(&original, true).is_empty());
    let not_found = reads_of_removed(&after, true);
    assert!(!not_found.is_empty(), "no recorded read of a removed file");
    assert_eq!(not_found, reads_of_removed(&after, false));
    for d in after["differing"].as_array().unwrap() {
        let key = (
            d["system"].as_str().unwrap().to_string(),
            d["task"].as_str().unwrap().to_string(),
            d["step"].as_u64().unwrap(),
        );
        if not_found.contains(&key) {
            assert_eq!(d["category"], "package_changed", "{d}");
        }
    }
    let listed = |r: &Value| {
        r["by_tool"]["list_package_files"]["identical"]
            .as_u64()
            .unwrap()
    };
    assert!(
        listed(&after) < listed(&original),
        "listings identical before {} after {}",
        listed(&original),
        listed(&after)
    );
}
