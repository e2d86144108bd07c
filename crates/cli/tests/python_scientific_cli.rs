//! The demo's scripted agent computes with pandas and numpy in the
//! `python_exec` sandbox (feature `scientific-python`: needs the scientific
//! environment of `scripts/python-env.sh`, found as `earthverse run` finds
//! it; `scripts/test.sh` makes it and enables the feature). The values the
//! sandboxed code prints are the values the script answers with, the run
//! records the numpy and pandas versions the code reported, and the
//! deterministic judge gives the run every answer unit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn the_scripted_demo_agent_computes_its_answer_with_pandas_in_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_earthverse");
    let out = Command::new(bin)
        .arg("run")
        .arg(root().join("fixtures/release"))
        .arg("--agent")
        .arg(format!(
            "scripted:{}",
            root().join("fixtures/agents/python-demo.json").display()
        ))
        .args(["--quiet", "--out"])
        .arg(dir.path())
        .env_remove("EARTHVERSE_SANDBOX_HELPER")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("lacks numpy"),
        "no scientific environment: {stderr}"
    );
    let path = dir
        .path()
        .join("scripted-python-demo/FIX-001_Q1/trajectory.json");
    let t: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(t["diagnostics"]["run_status"], "ok");
    let call = t["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "python_exec")
        .expect("a python_exec call");
    assert_eq!(call["ok"], true, "{call}");
    assert_eq!(call["returncode"], 0);
    let printed: Value = serde_json::from_str(call["stdout"]["text"].as_str().unwrap()).unwrap();
    let env = &t["environment"]["python"];
    assert_eq!(printed["numpy"], env["packages"]["numpy"], "{env}");
    assert_eq!(printed["pandas"], env["packages"]["pandas"], "{env}");
    let answer = &t["final_answer"];
    for key in [
        "event_window",
        "peak_tmax_c",
        "peak_tmax_date",
        "days_tmax_ge_35c",
        "heat_load_gt35c_c_days",
        "hottest_3day_window",
        "warm_nights_tmin_ge_23c",
        "suspect_qc_dates",
    ] {
        assert_eq!(printed[key], answer[key], "{key}: printed vs answered");
    }

    // Outside the runs folder: an output is never written inside an input.
    let scored = tempfile::tempdir().unwrap();
    let scores = scored.path().join("scores.jsonl");
    let status = Command::new(bin)
        .arg("score")
        .arg(root().join("fixtures/release"))
        .arg("--runs")
        .arg(dir.path())
        .arg("--out")
        .arg(&scores)
        .arg("--restart")
        .status()
        .unwrap();
    assert!(status.success());
    let record: Value = serde_json::from_str(
        std::fs::read_to_string(&scores)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(record["task_id"], "FIX-001_Q1");
    assert_eq!(record["unit_accuracy"], 100.0, "{record}");
    assert_eq!(record["answer_units_correct"], 15.0, "{record}");
}
