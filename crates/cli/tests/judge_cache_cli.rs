//! The LLM judge's cache shared by concurrent scorers: 4 `earthverse score
//! --judge openai:...` processes at once, one cache directory, one
//! loopback judge (a real HTTP server process on 127.0.0.1). Every entry
//! ends whole (it parses as an evaluation record), no temporary file is
//! left, the four outputs agree, and a fifth scoring is served from the
//! cache alone.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use earthverse_loopback_server::{start, Body, Interaction, LoopbackServer, Reply, Script};
use earthverse_rubric_judge::EvaluationRecord;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
/// One valid judgment per fixture task (no point earned: the rubric's
/// criteria come from the task file), answered for any run of the task.
fn judge_server() -> LoopbackServer {
    let tasks = repo().join("fixtures/release/tasks");
    let mut interactions = Vec::new();
    for entry in std::fs::read_dir(tasks).unwrap() {
        let task: Value =
            serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
        let id = task["task_id"].as_str().unwrap().to_string();
        let criteria = task["ground_truth"]["rubric"]["criteria"]
            .as_array()
            .unwrap();
        let ledger: Vec<Value> = criteria
            .iter()
            .map(|c| json!({"name": c["name"], "points_possible": c["points"], "points_earned": 0, "note": "scripted"}))
            .collect();
        let reply = json!({
            "answer_correctness_score": 0, "llm_rubric_score": 0,
            "answer_units": [{"unit": "answer", "satisfied": false}],
            "rubric_ledger": ledger, "verdict": "incorrect",
            "critical_errors": [], "missing_elements": [], "unsupported_claims": [],
            "rationale": format!("scripted judgment of {id}"),
        });
        interactions.push(
            Interaction::always(Reply::ok(Body::openai_text(reply.to_string())).delayed_ms(10))
                .on_path("/v1/chat/completions")
                .when_body_contains(id),
        );
    }
    start(&Script::new(interactions)).unwrap()
}

fn score(server: &LoopbackServer, cache: &Path, out: &Path) -> std::process::Child {
    let release = repo().join("fixtures/release");
    Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .arg("score")
        .arg(&release)
        .arg("--runs")
        .arg(release.join("exploration/trajectories"))
        .args(["--judge", "openai:judge", "--base-url"])
        .arg(format!("{}/v1", server.base_url()))
        .arg("--cache")
        .arg(cache)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn records(path: &Path) -> Vec<(String, String, f64)> {
    let mut out: Vec<(String, String, f64)> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| {
            let r: Value = serde_json::from_str(l).unwrap();
            (
                r["task_id"].as_str().unwrap().to_string(),
                r["system"].as_str().unwrap().to_string(),
                r["core"].as_f64().unwrap(),
            )
        })
        .collect();
    out.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    out
}

#[test]
fn four_concurrent_scorers_share_the_judge_cache_without_a_torn_entry() {
    let server = judge_server();
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("judge-cache");
    let children: Vec<_> = (0..4)
        .map(|k| {
            score(
                &server,
                &cache,
                &dir.path().join(format!("scores-{k}.jsonl")),
            )
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for o in &outputs {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let first = records(&dir.path().join("scores-0.jsonl"));
    let runs = first.len();
    assert!(runs >= 10, "{runs} records");
    for k in 1..4 {
        assert_eq!(
            records(&dir.path().join(format!("scores-{k}.jsonl"))),
            first
        );
    }
    let calls = server.requests().unwrap().len();
    let mut entries = 0;
    for entry in walkdir::WalkDir::new(&cache) {
        let entry = entry.unwrap();
        if !entry.file_type().is_file() {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let entry = entry.path();
        assert!(!name.ends_with(".tmp"), "a temporary file is left: {name}");
        let record: EvaluationRecord = serde_json::from_slice(&std::fs::read(entry).unwrap())
            .unwrap_or_else(|e| panic!("torn cache entry {}: {e}", entry.display()));
        assert!(!record.task_id.is_empty());
        entries += 1;
    }
    eprintln!(
        "4 concurrent scorers: {runs} runs each, {calls} judge requests, {entries} cache entries, all whole"
    );
    assert_eq!(entries, runs, "one entry per judged run");
    assert!(calls >= runs, "{calls}");

    // A fifth scorer is served from the cache alone.
    let fifth = score(&server, &cache, &dir.path().join("scores-4.jsonl"))
        .wait_with_output()
        .unwrap();
    assert!(fifth.status.success());
    let stderr = String::from_utf8_lossy(&fifth.stderr);
    assert!(stderr.contains("judge calls 0"), "{stderr}");
    assert_eq!(server.requests().unwrap().len(), calls);
    assert_eq!(records(&dir.path().join("scores-4.jsonl")), first);
}
