//! A downstream crate made from scratch in a temporary directory, with path
//! dependencies on our crates, implements a custom tool and a custom chat
//! model using only public API, runs fixture task FIX-001_Q1 end to end with
//! our controller and registry, and prints its trajectory, which this test
//! checks.
//!
//! It builds offline into our own target directory with our `Cargo.lock`
//! and our `[profile]` settings so that already-built dependencies are
//! reused. It still compiles a separate binary and whatever dependencies
//! resolve to different features: 38 s on a warm target dir on two cores.
//! `EARTHVERSE_DOWNSTREAM_TEST=0` turns it off (and it says so); it runs
//! otherwise, in CI too.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

const MAIN_RS: &str = r####"
use async_trait::async_trait;
use earthverse_agent_controller::{Controller, ControllerSettings, TaskInput};
use earthverse_model_provider::{ChatModel, ChatRequest, ChatResponse, FinishReason, Role, TokenUsage};
use earthverse_package_model::Release;
use earthverse_tool_registry::{Registry, ResearchToolsConfig, Tool, ToolContext, ToolFamily, ToolOutput};
use serde_json::{json, Value};
use std::sync::Arc;

/// A custom tool: doubles a number.
struct Double;

#[async_trait]
impl Tool for Double {
    fn name(&self) -> &str { "double_value" }
    fn description(&self) -> &str { "Doubles x." }
    fn family(&self) -> ToolFamily { ToolFamily::OutputAssembly }
    fn parameters_schema(&self) -> Value {
        json!({"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]})
    }
    async fn call(&self, _ctx: &ToolContext, args: Value) -> ToolOutput {
        ToolOutput::ok(json!({"doubled": args["x"].as_f64().unwrap_or(0.0) * 2.0}), vec![])
    }
}

/// A custom model: a fixed research procedure over the observations.
struct Procedure;

#[async_trait]
impl ChatModel for Procedure {
    fn model_id(&self) -> &str { "downstream:procedure" }
    async fn chat(&self, request: ChatRequest) -> earthverse_model_provider::Result<ChatResponse> {
        let observations: Vec<Value> = request.messages.iter()
            .filter(|m| m.role == Role::User && m.content.starts_with("Observation for step"))
            .filter_map(|m| m.content.split_once('\n'))
            .filter_map(|(_, body)| serde_json::from_str(body).ok())
            .collect();
        let text = match observations.len() {
            0 => json!({"action": "tool_call", "tool": "double_value", "args": {"x": 19.05}, "reason": "custom tool"}),
            1 => json!({"action": "tool_call", "tool": "read_text_file",
                        "args": {"path": "data/event_reports/event_reports_001_Locked_event_anchor.bin"}, "reason": "window"}),
            _ => {
                let anchor: Value = serde_json::from_str(observations[1]["output"]["text"].as_str().unwrap_or("{}")).unwrap_or_default();
                json!({"action": "final_answer", "confidence": 0.5, "final_answer": {
                    "answer_type": "heat_window_ledger",
                    "peak_tmax_c": observations[0]["output"]["doubled"].as_f64().unwrap_or(0.0),
                    "event_window": {"start_date": anchor["temporal_window"]["start_date"],
                                     "end_date": anchor["temporal_window"]["end_date"]}
                }})
            }
        };
        Ok(ChatResponse { text: text.to_string(), tool_calls: vec![], finish_reason: FinishReason::Stop,
            usage: TokenUsage::default(), latency: Default::default(), raw: None, retries: vec![] })
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let release_root = std::path::PathBuf::from(args.next().expect("release"));
    let scratch = std::path::PathBuf::from(args.next().expect("scratch"));
    let release = Release::load(&release_root).expect("release");
    let task = release.task("FIX-001_Q1").expect("task");
    let mut registry = Registry::with_research_tools(ResearchToolsConfig::default());
    registry.register(Arc::new(Double)).expect("register");
    let controller = Controller::new(Arc::new(Procedure), Arc::new(registry), ControllerSettings::default());
    let input = TaskInput {
        task_id: task.task_id.clone(),
        event_id: task.event_id.clone(),
        question: task.question.clone(),
        package_root: release.package_dir(&task.event_id),
        question_path: None,
        scratch_dir: scratch,
    };
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let record = rt.block_on(controller.run_task(&input));
    println!("{}", serde_json::to_string(&record.trajectory).expect("json"));
}
"####;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("project root")
        .to_path_buf()
}

fn profile_sections(workspace_toml: &str) -> String {
    // Everything from the first [profile...] table on (our build settings).
    workspace_toml
        .find("[profile")
        .map(|at| workspace_toml[at..].to_owned())
        .unwrap_or_default()
}

fn manifest(root: &Path) -> String {
    let dep = |name: &str, dir: &str| {
        format!(
            "{name} = {{ path = {:?} }}\n",
            root.join("crates").join(dir).display().to_string()
        )
    };
    let workspace = std::fs::read_to_string(root.join("Cargo.toml")).expect("root Cargo.toml");
    format!(
        "[package]\nname = \"downstream-agent\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = false\n\n[workspace]\n\n[dependencies]\n{}{}{}{}async-trait = \"0.1\"\nserde_json = \"1\"\ntokio = {{ version = \"1\", features = [\"rt\"] }}\n\n{}",
        dep("earthverse-agent-controller", "agent-controller"),
        dep("earthverse-model-provider", "model-provider"),
        dep("earthverse-package-model", "package-model"),
        dep("earthverse-tool-registry", "tool-registry"),
        profile_sections(&workspace)
    )
}

#[test]
fn a_downstream_crate_runs_a_fixture_task_with_its_own_tool_and_model() {
    if std::env::var("EARTHVERSE_DOWNSTREAM_TEST").as_deref() == Ok("0") {
        eprintln!("downstream crate test turned off by EARTHVERSE_DOWNSTREAM_TEST=0");
        return;
    }
    let root = root();
    let dir = tempfile::tempdir().expect("tempdir");
    let krate = dir.path().join("downstream-agent");
    std::fs::create_dir_all(krate.join("src")).expect("mkdir");
    std::fs::write(krate.join("Cargo.toml"), manifest(&root)).expect("manifest");
    std::fs::write(krate.join("src/main.rs"), MAIN_RS).expect("main.rs");
    // Same dependency versions as ours, so built artifacts can be reused.
    std::fs::copy(root.join("Cargo.lock"), krate.join("Cargo.lock")).expect("lock");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let build = Command::new(&cargo)
        .args(["build", "--offline", "--quiet"])
        .current_dir(&krate)
        .env("CARGO_TARGET_DIR", &target)
        .status()
        .expect("cargo build");
    assert!(build.success(), "the downstream crate did not build");
    let out = Command::new(target.join("debug").join("downstream-agent"))
        .arg(root.join("fixtures").join("release"))
        .arg(dir.path().join("scratch"))
        .output()
        .expect("run downstream-agent");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trajectory: Value = serde_json::from_slice(&out.stdout).expect("trajectory json");
    assert_eq!(trajectory["task_id"], "FIX-001_Q1");
    assert_eq!(trajectory["model_id"], "downstream:procedure");
    assert_eq!(trajectory["diagnostics"]["run_status"], "ok");
    assert_eq!(
        trajectory["diagnostics"]["termination_reason"],
        "model_final"
    );
    let calls = trajectory["tool_calls"].as_array().expect("tool calls");
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0]["tool"], "double_value");
    assert!(calls[0]["output"]["text"]
        .as_str()
        .expect("text")
        .contains("38.1"));
    // The answer carries values read through the real tools from the package.
    let task: Value = serde_json::from_slice(
        &std::fs::read(root.join("fixtures/release/tasks/FIX-001_Q1.json")).expect("task"),
    )
    .expect("task json");
    let gt = &task["ground_truth"]["primary_gt"];
    let answer = &trajectory["final_answer"];
    assert_eq!(answer["peak_tmax_c"], gt["peak_tmax_c"]);
    assert_eq!(
        answer["event_window"]["start_date"],
        gt["event_window"]["start_date"]
    );
    assert_eq!(
        answer["event_window"]["end_date"],
        gt["event_window"]["end_date"]
    );
}
