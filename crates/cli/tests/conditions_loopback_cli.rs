//! `earthverse run` conditions on the wire: the real OpenAI-compatible
//! provider against the loopback server (a real HTTP server process on
//! 127.0.0.1) on the fixture release. A direct answer mode sends one
//! request per task with no tools, the reasoning effort and sampling as
//! given, and the package serialisation in the task message; a Top-20
//! catalogue with native tools offers the six research tools, twenty routed
//! operations and `final_answer`; the served model is recorded.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use earthverse_loopback_server::{start, Body, Interaction, LoopbackServer, Reply, Script};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

fn server() -> LoopbackServer {
    let answer = json!({"action": "final_answer", "final_answer": {"value": 1}, "confidence": 0.5,
        "evidence": [], "reasoning_summary": ["loopback"], "unsupported_or_unresolved": []});
    start(&Script::new(vec![Interaction::always(Reply::ok(
        Body::openai_text(answer.to_string()),
    ))]))
    .expect("loopback server starts")
}

fn run(server: &LoopbackServer, out: &Path, extra: &[&str]) {
    let output = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .arg("run")
        .arg(fixtures())
        .args(["--agent", "openai:loop-model", "--base-url"])
        .arg(format!("{}/v1", server.base_url().trim_end_matches('/')))
        .args(["--tasks", "FIX-001_Q1,FIX-002_Q1", "--quiet", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn trajectory(out: &Path, task: &str) -> Value {
    let dir = out.join("openai-loop-model").join(task);
    serde_json::from_str(&std::fs::read_to_string(dir.join("trajectory.json")).unwrap()).unwrap()
}

#[test]
fn a_direct_mode_sends_one_request_without_tools_with_the_effort_and_sampling() {
    let srv = server();
    let out = tempfile::tempdir().unwrap();
    run(
        &srv,
        out.path(),
        &[
            "--answer-mode",
            "compressed-direct",
            "--reasoning-effort",
            "high",
            "--temperature",
            "0.2",
            "--seed",
            "7",
        ],
    );
    let log = srv.requests().unwrap();
    assert_eq!(log.len(), 2, "one request per task");
    for request in &log {
        let body = &request["body"];
        assert!(body.get("tools").is_none(), "no tools offered");
        assert_eq!(body["reasoning_effort"], "high");
        assert_eq!(body["temperature"], 0.2);
        assert_eq!(body["seed"], 7);
        let task_message = body["messages"][1]["content"].as_str().unwrap();
        assert!(
            task_message.contains("### FILE: "),
            "the serialisation is in the message"
        );
    }
    for task in ["FIX-001_Q1", "FIX-002_Q1"] {
        let t = trajectory(out.path(), task);
        assert_eq!(
            t["condition"],
            json!({"answer_mode": "compressed-direct", "reasoning_effort": "high",
                   "temperature": 0.2, "seed": 7})
        );
        assert_eq!(t["diagnostics"]["model_rounds"], 1);
        assert_eq!(t["environment"]["served_model"]["model"], "loop-model");
        assert!(!t["direct_input"]["files"].as_array().unwrap().is_empty());
    }
}

#[test]
fn a_top_20_catalogue_offers_twenty_six_tools_natively() {
    let srv = server();
    let out = tempfile::tempdir().unwrap();
    run(
        &srv,
        out.path(),
        &["--catalogue", "topk:20", "--protocol", "native"],
    );
    let log = srv.requests().unwrap();
    assert_eq!(log.len(), 2);
    let mut offers = Vec::new();
    for request in &log {
        let names: Vec<String> = request["body"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(
            names.len(),
            27,
            "6 research + 20 routed + final_answer: {names:?}"
        );
        assert_eq!(names[0], "list_package_files");
        assert_eq!(names.last().unwrap(), "final_answer");
        offers.push(names);
    }
    assert_ne!(
        offers[0][6..26],
        offers[1][6..26],
        "each task gets its own route"
    );
    assert_eq!(
        trajectory(out.path(), "FIX-001_Q1")["condition"]["catalogue"],
        "topk:20"
    );
}
