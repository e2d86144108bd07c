//! model-provider on the development slice: the replay model re-emits every
//! recorded run exactly, and the baseline policy runs on real packages
//! through the real research tools.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use earthverse_agent_controller::agents::baseline::answer_template;
use earthverse_agent_controller::{BaselineModel, ReplayModel};
use earthverse_model_provider::{ChatModel, ChatRequest, Message, ProviderError};
use earthverse_package_model::RecordedRun;
use earthverse_tool_registry::{Registry, ResearchToolsConfig, ToolContext};
use serde_json::Value;
use std::path::PathBuf;

fn trajectories() -> Vec<PathBuf> {
    let root = earthverse_tests::dev_slice().join("exploration/trajectories");
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(&root)
        .min_depth(2)
        .max_depth(2)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
}

#[tokio::test]
async fn replay_re_emits_every_recorded_run_in_order() {
    let files = trajectories();
    assert!(
        files.len() > 100,
        "found only {} recorded runs",
        files.len()
    );
    let mut calls = 0usize;
    for path in &files {
        let model = ReplayModel::from_path(path).expect("recorded run parses");
        let run: RecordedRun =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(model.model_id(), format!("replay:{}", run.model_id));
        for recorded in &run.tool_calls {
            let reply = model
                .chat(ChatRequest::new(vec![]))
                .await
                .expect("tool turn");
            let action: Value = serde_json::from_str(&reply.text).expect("JSON action");
            assert_eq!(action["action"], "tool_call", "{}", path.display());
            assert_eq!(action["tool"], recorded.tool.as_str());
            if recorded.tool == "python_exec" {
                assert!(action["args"]["code"].is_string(), "{}", path.display());
            } else {
                assert_eq!(action["args"], recorded.args, "{}", path.display());
            }
            calls += 1;
        }
        let reply = model
            .chat(ChatRequest::new(vec![]))
            .await
            .expect("final turn");
        let action: Value = serde_json::from_str(&reply.text).expect("JSON final");
        assert_eq!(action["action"], "final_answer");
        assert_eq!(
            action["final_answer"],
            run.final_answer,
            "{}",
            path.display()
        );
        assert_eq!(action["evidence"], Value::Array(run.evidence.clone()));
        let after = model.chat(ChatRequest::new(vec![])).await;
        assert!(matches!(after, Err(ProviderError::Exhausted { .. })));
    }
    eprintln!("replayed {} runs, {calls} tool calls", files.len());
}

fn top_keys(value: &Value) -> Vec<String> {
    value
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

#[tokio::test]
async fn baseline_runs_on_real_packages_through_the_research_tools() {
    let data = earthverse_tests::dev_slice();
    let mut tasks: Vec<PathBuf> = std::fs::read_dir(data.join("tasks"))
        .expect("tasks dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    tasks.sort();
    // Nearly every question of the slice yields an answer template (a few
    // ask for prose paragraphs and have none).
    let with_template = tasks
        .iter()
        .filter(|task_path| {
            let task: Value =
                serde_json::from_str(&std::fs::read_to_string(task_path).unwrap()).unwrap();
            answer_template(task["question"].as_str().expect("question"))
                .as_ref()
                .and_then(Value::as_object)
                .is_some_and(|o| !o.is_empty())
        })
        .count();
    eprintln!(
        "answer templates: {with_template} of {} questions",
        tasks.len()
    );
    assert!(
        with_template * 100 >= tasks.len() * 95,
        "{with_template} of {}",
        tasks.len()
    );
    // Every 10th task: 15 tasks of different events.
    let chosen: Vec<&PathBuf> = tasks.iter().step_by(10).collect();
    assert!(chosen.len() >= 10);
    let registry = Registry::with_research_tools(ResearchToolsConfig::reference());
    let model = BaselineModel::new();
    let scratch = tempfile::tempdir().expect("scratch");
    let (mut bound_total, mut leaves_total, mut reads_total) = (0usize, 0usize, 0usize);
    for task_path in chosen {
        let task: Value =
            serde_json::from_str(&std::fs::read_to_string(task_path).unwrap()).unwrap();
        let question = task["question"].as_str().expect("question");
        let task_id = task_path.file_stem().unwrap().to_string_lossy().to_string();
        let package_id = task_id.split('_').next().unwrap().to_string();
        let package_root = data
            .join("packages/event_packages/standard_event_packages/packages")
            .join(&package_id);
        let ctx = ToolContext::new(package_root.clone(), scratch.path());
        let mut messages = vec![Message::system("baseline"), Message::user(question)];
        let mut final_action = None;
        for _ in 0..16 {
            let reply = model
                .chat(ChatRequest::new(messages.clone()))
                .await
                .unwrap();
            let action: Value = serde_json::from_str(&reply.text).unwrap();
            messages.push(Message::assistant(reply.text.clone()));
            if action["action"] == "final_answer" {
                final_action = Some(action);
                break;
            }
            let tool = action["tool"].as_str().unwrap();
            if tool == "read_text_file" || tool == "summarize_table_or_json" {
                reads_total += 1;
            }
            let record = registry.call(&ctx, tool, action["args"].clone()).await;
            messages.push(Message::user(record.observation));
        }
        let action = final_action.unwrap_or_else(|| panic!("{task_id}: no final answer"));
        // The answer has the template's shape and cites files of the package.
        let answer = &action["final_answer"];
        let template = answer_template(question).unwrap_or_else(|| serde_json::json!({}));
        assert_eq!(top_keys(answer), top_keys(&template), "{task_id}");
        for evidence in action["evidence"].as_array().unwrap() {
            let file = evidence["source_file"].as_str().unwrap();
            assert!(package_root.join(file).is_file(), "{task_id}: cites {file}");
        }
        let unresolved = action["unsupported_or_unresolved"]
            .as_array()
            .unwrap()
            .len();
        let summary = action["reasoning_summary"][1].as_str().unwrap_or("");
        let bound: usize = summary
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        bound_total += bound;
        leaves_total += bound + unresolved;
    }
    eprintln!(
        "baseline: {reads_total} reads, bound {bound_total} of {leaves_total} placeholder fields"
    );
    assert!(reads_total > 0);
    assert!(bound_total > 0, "the baseline bound no field on any task");
}
