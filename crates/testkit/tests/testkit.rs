//! Exercises every helper of earthverse-testkit on the bundled fixtures.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_testkit::*;
use earthverse_tool_registry::{Registry, ResearchToolsConfig};
use serde_json::{json, Value};

const CSV: &str = "data/physical_hazard/physical_hazard_001_station_daily_temperature.csv";

fn fixture_json(rel: &str) -> Value {
    let bytes = std::fs::read(fixture_release().join(rel)).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn fixture_task_matches_the_task_file() {
    assert!(fixture_release().join("tasks").is_dir());
    let raw = fixture_json("tasks/FIX-002_Q1.json");
    let task = fixture_task("FIX-002_Q1");
    assert_eq!(task.task_id, raw["task_id"]);
    assert_eq!(task.event_id, raw["event_id"]);
    assert_eq!(task.question, raw["question"]);
}

#[test]
#[should_panic(expected = "no task")]
fn fixture_task_panics_on_unknown_id() {
    fixture_task("NOPE-999_Q1");
}

#[test]
fn temp_package_is_listed_and_read_by_the_research_tools() {
    let pkg = TempPackage::new("TEST-001")
        .file("data/x.csv", "a,b\n1,2\n")
        .json("data/y.json", &json!({"peak_c": 41.5}))
        .build();
    assert!(pkg.root().join(PACKAGES_LAYOUT).join("TEST-001").is_dir());
    assert_eq!(pkg.event_id(), "TEST-001");
    let ctx = pkg.context();
    assert_eq!(ctx.package_id, "TEST-001");
    assert!(ctx.scratch_dir.is_dir());

    let registry = Registry::with_research_tools(ResearchToolsConfig::default());
    let listed = block_on(registry.call(&ctx, "list_package_files", json!({})));
    assert!(listed.envelope.ok, "{}", listed.envelope.envelope_json());
    let text = listed.envelope.envelope_json().to_string();
    assert!(
        text.contains("data/x.csv") && text.contains("data/y.json"),
        "{text}"
    );

    let read = block_on(registry.call(&ctx, "read_text_file", json!({"path": "data/y.json"})));
    assert!(read.envelope.ok);
    assert!(read.envelope.envelope_json().to_string().contains("41.5"));
    let root = pkg.root().to_path_buf();
    drop(pkg);
    assert!(!root.exists(), "the guard removes the directory");
}

#[test]
fn scripted_run_reads_the_fixture_csv_and_writes_a_loadable_trajectory() {
    let task = fixture_task("FIX-001_Q1");
    let csv_header = std::fs::read_to_string(
        fixture_release()
            .join(PACKAGES_LAYOUT)
            .join(&task.event_id)
            .join(CSV),
    )
    .unwrap()
    .lines()
    .next()
    .unwrap()
    .to_owned();
    let run = run_scripted(
        "FIX-001_Q1",
        [
            json!({"action": "tool_call", "tool": "list_package_files", "args": {}, "reason": "see files"}).to_string(),
            json!({"action": "tool_call", "tool": "read_text_file", "args": {"path": CSV}, "reason": "station series"}).to_string(),
            json!({"action": "final_answer", "final_answer": {"hot_days": 3}, "evidence": [CSV], "confidence": 0.4}).to_string(),
        ],
    );
    assert_run_ok(&run);
    assert_called_tools(&run, &["list_package_files", "read_text_file"]);
    assert_eq!(run.trajectory.task_id, task.task_id);
    assert_eq!(run.trajectory.final_answer["hot_days"], 3);
    let read = &run.trajectory.tool_calls[1];
    assert!(read.ok);
    assert!(
        serde_json::to_string(&read.output)
            .unwrap()
            .contains(&csv_header),
        "the read output holds the fixture CSV header {csv_header}"
    );

    let out = tempfile::tempdir().unwrap();
    run.write_to(out.path()).unwrap();
    let recorded = assert_trajectory_loads(out.path());
    assert_eq!(recorded.task_id, "FIX-001_Q1");
    assert_eq!(recorded.model_id, "scripted");
    let again = assert_trajectory_loads(out.path().join("trajectory.json"));
    assert_eq!(again.task_id, recorded.task_id);
}

#[test]
#[should_panic(expected = "tools called by")]
fn assert_called_tools_rejects_another_sequence() {
    let run = run_scripted(
        "FIX-002_Q1",
        [json!({"action": "final_answer", "final_answer": {"x": 1}}).to_string()],
    );
    assert_run_ok(&run);
    assert_called_tools(&run, &["list_package_files"]);
}

#[test]
#[should_panic(expected = "no final answer")]
fn assert_run_ok_rejects_an_empty_answer() {
    let run = run_scripted(
        "FIX-002_Q1",
        [json!({"action": "final_answer", "final_answer": {}}).to_string()],
    );
    assert_run_ok(&run);
}

#[test]
fn published_fixture_trajectories_load_and_replay() {
    let path =
        fixture_release().join("exploration/trajectories/fixture-careful-agent/FIX-001_Q1.json");
    let recorded = assert_trajectory_loads(&path);
    assert_eq!(recorded.task_id, "FIX-001_Q1");
    let raw = fixture_json("exploration/trajectories/fixture-careful-agent/FIX-001_Q1.json");
    assert_eq!(recorded.model_id, raw["model_id"]);
    let replay = ReplayModel::from_path(&path).unwrap();
    assert_eq!(replay.recorded().task_id, "FIX-001_Q1");
    assert!(replay.turns() >= 1);
}

#[test]
fn scripted_run_on_a_temp_package() {
    let pkg = TempPackage::new("TEST-002")
        .json("data/peak.json", &json!({"peak_c": 41.5}))
        .build();
    let run = run_scripted(
        pkg.task_input("TEST-002_Q1", "What was the peak temperature?"),
        [
            json!({"action": "tool_call", "tool": "read_text_file", "args": {"path": "data/peak.json"}, "reason": "peak"}).to_string(),
            json!({"action": "final_answer", "final_answer": {"peak_c": 41.5}, "evidence": ["data/peak.json"]}).to_string(),
        ],
    );
    assert_run_ok(&run);
    assert_called_tools(&run, &["read_text_file"]);
    assert!(run.trajectory.tool_calls[0].ok);
    assert!(serde_json::to_string(&run.trajectory.tool_calls[0].output)
        .unwrap()
        .contains("41.5"));
}
