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
    let output = score_dir(&fixtures().join("exploration/trajectories"), out, restart);
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
    // Every record is the one a fresh run gives, byte for byte: the kept
    // records are written again as they were read.
    for record in &resumed {
        let fresh = all.iter().find(|r| key(r) == key(record)).unwrap();
        assert_eq!(record, fresh);
    }
    assert_eq!(
        std::fs::read_to_string(&cut).unwrap(),
        std::fs::read_to_string(&full).unwrap()
    );
}

/// A runs directory of `copies` × the fixture runs, each copy under its own
/// system id (`sys-00`, `sys-01`, ...), so that it spans several of the
/// deterministic judge's batches.
fn copied_runs(dir: &Path, copies: usize) -> usize {
    let mut n = 0;
    for k in 0..copies {
        let system = format!("sys-{k:02}");
        let out = dir.join(&system);
        std::fs::create_dir_all(&out).unwrap();
        for agent in std::fs::read_dir(fixtures().join("exploration/trajectories")).unwrap() {
            let agent = agent.unwrap().path();
            for run in std::fs::read_dir(&agent).unwrap() {
                let run = run.unwrap().path();
                let mut value: Value =
                    serde_json::from_str(&std::fs::read_to_string(&run).unwrap()).unwrap();
                let agent_name = agent.file_name().unwrap().to_str().unwrap();
                value["model_id"] = Value::from(format!("{system}-{agent_name}"));
                let name = format!(
                    "{agent_name}-{}",
                    run.file_name().unwrap().to_str().unwrap()
                );
                std::fs::write(out.join(name), value.to_string()).unwrap();
                n += 1;
            }
        }
    }
    n
}

fn score_dir(runs: &Path, out: &Path, restart: bool) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_earthverse"));
    cmd.arg("score")
        .arg(fixtures())
        .arg("--runs")
        .arg(runs)
        .arg("--out")
        .arg(out);
    if restart {
        cmd.arg("--restart");
    }
    cmd.output().expect("earthverse runs")
}

#[test]
fn a_run_of_a_foreign_task_stops_scoring_and_the_rerun_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let n = copied_runs(&runs, 12);
    assert!(n > 128, "{n} runs: more than two scoring batches");
    let fresh = dir.path().join("fresh.jsonl");
    let output = score_dir(&runs, &fresh, true);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let all = records(&fresh);
    assert_eq!(all.len(), n);

    // A run of a task the release lacks, sorted after every other file.
    let foreign_dir = runs.join("zz-foreign");
    std::fs::create_dir_all(&foreign_dir).unwrap();
    let mut foreign: Value = serde_json::from_str(
        &std::fs::read_to_string(
            fixtures().join("exploration/trajectories/fixture-careful-agent/FIX-001_Q1.json"),
        )
        .unwrap(),
    )
    .unwrap();
    foreign["task_id"] = Value::from("NOT-IN-RELEASE_Q1");
    let foreign_path = foreign_dir.join("NOT-IN-RELEASE_Q1.json");
    std::fs::write(&foreign_path, foreign.to_string()).unwrap();
    let out = dir.path().join("out.jsonl");
    let output = score_dir(&runs, &out, true);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "a foreign run is refused");
    assert!(
        stderr.contains(&foreign_path.display().to_string())
            && stderr.contains("NOT-IN-RELEASE_Q1 which is not in release"),
        "the error names the file and the task: {stderr}"
    );
    // The batches before the foreign run are written, each record whole
    // and the one a fresh run gives.
    let written = records(&out);
    assert!(
        !written.is_empty() && written.len() < n,
        "{} of {n} records written before the foreign run",
        written.len()
    );
    for record in &written {
        assert_eq!(all.iter().find(|r| key(r) == key(record)), Some(record));
    }

    // Without the foreign run, the rerun resumes: every record once.
    std::fs::remove_file(&foreign_path).unwrap();
    let output = score_dir(&runs, &out, false);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("{n} runs found, {} already in", written.len())),
        "{stderr}"
    );
    let resumed = records(&out);
    let mut keys: Vec<_> = resumed.iter().map(key).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(
        (resumed.len(), keys.len()),
        (n, n),
        "nothing lost or repeated"
    );
    for record in &resumed {
        assert_eq!(all.iter().find(|r| key(r) == key(record)), Some(record));
    }
}

#[test]
fn the_comparison_with_published_scores_reads_the_written_records() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let n = copied_runs(&runs, 11);
    let out = dir.path().join("out.jsonl");
    let agreement_path = dir.path().join("agreement.json");
    let output = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .arg("score")
        .arg(fixtures())
        .arg("--runs")
        .arg(&runs)
        .arg("--out")
        .arg(&out)
        .arg("--restart")
        .arg("--compare-json")
        .arg(&agreement_path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let agreement: Value =
        serde_json::from_str(&std::fs::read_to_string(&agreement_path).unwrap()).unwrap();
    // The mean absolute error of U and H, recomputed from the records on
    // disk and the `scores` of the run files.
    let written = records(&out);
    let mut published = std::collections::BTreeMap::new();
    for system in std::fs::read_dir(&runs).unwrap() {
        for run in std::fs::read_dir(system.unwrap().path()).unwrap() {
            let v: Value =
                serde_json::from_str(&std::fs::read_to_string(run.unwrap().path()).unwrap())
                    .unwrap();
            published.insert(
                (
                    v["task_id"].as_str().unwrap().to_owned(),
                    v["model_id"].as_str().unwrap().to_owned(),
                ),
                v["scores"].clone(),
            );
        }
    }
    assert_eq!(published.len(), n);
    for (ours, theirs, name) in [
        ("unit_accuracy", "unit_accuracy", "unit_accuracy"),
        ("answer_correctness_score", "answer", "answer_correctness"),
    ] {
        let diffs: Vec<f64> = written
            .iter()
            .map(|r| {
                let p = &published[&key(r)];
                (r[ours].as_f64().unwrap() - p[theirs].as_f64().unwrap()).abs()
            })
            .collect();
        let mae = diffs.iter().sum::<f64>() / diffs.len() as f64;
        assert_eq!(agreement[name]["n"], Value::from(n), "{name}");
        let reported = agreement[name]["mae"].as_f64().unwrap();
        assert!((reported - mae).abs() < 1e-9, "{name}: {reported} vs {mae}");
    }
    assert_eq!(agreement["runs"], Value::from(n));
}
