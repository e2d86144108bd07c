//! End-to-end runs: the batch runner and the controller drive the real
//! OpenAI-compatible and Anthropic providers against the loopback server
//! process (a real HTTP server on 127.0.0.1) and the real research tools on
//! a small temporary package. Every scenario — 429 with `Retry-After`, 500,
//! a reply slower than the research time, truncated JSON, a model that
//! never calls final, a model that answers in prose, native tool calls —
//! must end with a record on disk, and none may hang.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::field_reassign_with_default
)]

use earthverse_agent_controller::batch::{run_batch, BatchSettings, NoProgress};
use earthverse_agent_controller::{Agent, AgentError, AgentFactory, Solver};
use earthverse_agent_controller::{ControllerSettings, Protocol, TaskInput, Trajectory};
use earthverse_loopback_server::{
    start, Body, Interaction, LoopbackServer, Reply, Script, ScriptToolCall, ScriptUsage,
};
use earthverse_model_provider::{
    AnthropicConfig, AnthropicMessages, ChatModel, OpenAiCompatible, OpenAiConfig,
};
use earthverse_tool_registry::{Registry, ResearchToolsConfig};
use serde_json::json;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn server(script: &Script) -> LoopbackServer {
    start(script).expect("loopback server starts")
}

fn text(t: &str) -> Reply {
    Reply::ok(Body::openai_text(t))
}

fn tool_call_text() -> String {
    json!({"action": "tool_call", "tool": "read_text_file",
           "args": {"path": "data/obs.json"}, "reason": "read the observations"})
    .to_string()
}

fn final_text() -> String {
    json!({"action": "final_answer", "final_answer": {"peak": 7}, "confidence": 0.9,
           "evidence": [{"claim": "peak 7", "source_file": "data/obs.json", "support_type": "direct_metric"}],
           "reasoning_summary": ["read obs.json"], "unsupported_or_unresolved": []})
    .to_string()
}

/// One scenario: its server, protocol and provider kind.
struct Scenario {
    server: LoopbackServer,
    protocol: Protocol,
    anthropic: bool,
}

struct Factory {
    scenarios: HashMap<String, Scenario>,
    tools: Arc<Registry>,
}

impl AgentFactory for Factory {
    fn agent(&self, task: &TaskInput) -> Result<Agent, AgentError> {
        let s = &self.scenarios[&task.event_id];
        let base = format!("{}/v1", s.server.base_url().trim_end_matches('/'));
        let model: Arc<dyn ChatModel> = if s.anthropic {
            let mut config = AnthropicConfig::anthropic("claude-test");
            config.base_url = base;
            config.api_key_env = None;
            config.call_timeout = Duration::from_secs(2);
            Arc::new(AnthropicMessages::new(config).map_err(|e| AgentError::Other(e.into()))?)
        } else {
            let mut config = OpenAiConfig::local("test-model", base);
            config.call_timeout = Duration::from_secs(2);
            Arc::new(OpenAiCompatible::new(config).map_err(|e| AgentError::Other(e.into()))?)
        };
        let mut settings = ControllerSettings::default();
        settings.protocol = s.protocol;
        settings.budgets.max_turns = 4;
        settings.budgets.task_time = Duration::from_secs(6);
        settings.budgets.finalization_reserve = Duration::from_secs(2);
        settings.budgets.final_call_timeout = Duration::from_secs(2);
        Ok(Agent {
            model,
            tools: self.tools.clone(),
            settings,
        })
    }
    fn model_id(&self) -> String {
        "loopback".into()
    }
}

fn package(root: &Path, id: &str) -> PathBuf {
    let pkg = root
        .join("event_packages/standard_event_packages/packages")
        .join(id);
    std::fs::create_dir_all(pkg.join("data")).unwrap();
    std::fs::write(pkg.join("data/obs.json"), "{\"peak\": 7}").unwrap();
    pkg
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_loopback_run_ends_with_a_record() {
    let root = tempfile::tempdir().unwrap();
    let usage = ScriptUsage {
        prompt_tokens: 50,
        completion_tokens: 5,
        cached_tokens: 10,
    };
    let scripts: Vec<(&str, Script, Protocol, bool)> = vec![
        (
            "CSX-901", // 429 with Retry-After, then a normal run
            Script::new(vec![
                Interaction::once(Reply::error(429, "slow down").with_header("retry-after", "1")),
                Interaction::once(text(&tool_call_text())),
                Interaction::always(text(&final_text())),
            ]),
            Protocol::JsonInMessage,
            false,
        ),
        (
            "CSX-902", // 500 on every attempt
            Script::new(vec![Interaction::always(Reply::error(500, "internal"))]),
            Protocol::JsonInMessage,
            false,
        ),
        (
            "CSX-903", // far slower than the research time
            Script::new(vec![Interaction::always(
                text(&final_text()).delayed_ms(60_000),
            )]),
            Protocol::JsonInMessage,
            false,
        ),
        (
            "CSX-904", // truncated JSON bodies
            Script::new(vec![Interaction::always(
                text(&final_text()).truncated_at(40),
            )]),
            Protocol::JsonInMessage,
            false,
        ),
        (
            "CSX-905", // never calls final
            Script::new(vec![Interaction::always(text(&tool_call_text()))]),
            Protocol::JsonInMessage,
            false,
        ),
        (
            "CSX-906", // answers in prose
            Script::new(vec![Interaction::always(text(
                "The peak was 7, I am quite sure.",
            ))]),
            Protocol::JsonInMessage,
            false,
        ),
        (
            "CSX-907", // native tool calls, then final_answer as a tool
            Script::new(vec![
                Interaction::once(Reply::ok(Body::Openai {
                    content: None,
                    tool_calls: vec![ScriptToolCall {
                        id: Some("call_a".into()),
                        name: "read_text_file".into(),
                        arguments: json!({"path": "data/obs.json"}),
                    }],
                    finish_reason: None,
                    usage,
                })),
                Interaction::always(Reply::ok(Body::Openai {
                    content: None,
                    tool_calls: vec![ScriptToolCall {
                        id: Some("call_b".into()),
                        name: "final_answer".into(),
                        arguments: json!({"final_answer": {"peak": 7}, "confidence": 0.9}),
                    }],
                    finish_reason: None,
                    usage,
                })),
            ]),
            Protocol::NativeTools,
            false,
        ),
        (
            "CSX-908", // Anthropic Messages, JSON protocol
            Script::new(vec![
                Interaction::once(Reply::ok(Body::anthropic_text(tool_call_text()))),
                Interaction::always(Reply::ok(Body::anthropic_text(final_text()))),
            ]),
            Protocol::JsonInMessage,
            true,
        ),
    ];
    let mut scenarios = HashMap::new();
    let mut tasks = Vec::new();
    for (id, script, protocol, anthropic) in scripts {
        let pkg = package(root.path(), id);
        tasks.push(TaskInput {
            task_id: format!("{id}_Q1"),
            event_id: id.into(),
            question: "What is the peak?".into(),
            package_root: pkg,
            question_path: None,
            scratch_dir: root.path().join("scratch"),
        });
        scenarios.insert(
            id.to_string(),
            Scenario {
                server: server(&script),
                protocol,
                anthropic,
            },
        );
    }
    let factory: Arc<dyn Solver> = Arc::new(Factory {
        scenarios,
        tools: Arc::new(Registry::with_research_tools(ResearchToolsConfig::default())),
    });
    let out = root.path().join("out");
    let mut batch = BatchSettings::new(&out, "loopback");
    batch.concurrency = 8;
    let started = Instant::now();
    let summary = tokio::time::timeout(
        Duration::from_secs(40),
        run_batch(tasks, factory.clone(), batch.clone(), Arc::new(NoProgress)),
    )
    .await
    .expect("the batch hung")
    .unwrap();
    let elapsed = started.elapsed();
    assert_eq!(summary.planned, 8);
    assert_eq!(summary.ok + summary.error, 8, "{:?}", summary.outcomes);

    let load = |id: &str| {
        Trajectory::load(&batch.task_dir(&format!("{id}_Q1")).join("trajectory.json")).unwrap()
    };
    let reason = |t: &Trajectory| {
        (
            t.diagnostics
                .run_status
                .map_or_else(String::new, |s| s.to_string()),
            t.diagnostics
                .termination_reason
                .as_ref()
                .map(|r| r.name())
                .unwrap_or_default(),
        )
    };
    let r = load("CSX-901");
    assert_eq!(reason(&r), ("ok".into(), "model_final".into()));
    assert_eq!(r.final_answer, json!({"peak": 7}));
    assert_eq!(r.tool_calls[0].tool, "read_text_file");
    assert!(
        r.tool_calls[0].output.text.contains("\\\"peak\\\": 7"),
        "{}",
        r.tool_calls[0].output.text
    );
    let raw: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(batch.task_dir("CSX-901_Q1").join("raw_conversation.json"))
            .unwrap(),
    )
    .unwrap();
    let first_call = &raw["model_calls"][0];
    assert_eq!(
        first_call["retries"].as_array().unwrap().len(),
        1,
        "{first_call}"
    );

    assert_eq!(
        reason(&load("CSX-902")),
        ("error".into(), "model_error".into())
    );
    assert_eq!(
        reason(&load("CSX-903")),
        ("ok".into(), "research_time_limit_fallback".into())
    );
    let truncated = load("CSX-904");
    assert!(
        truncated.diagnostics.run_status == Some(earthverse_agent_controller::RunStatus::Error),
        "truncated JSON: {:?}",
        reason(&truncated)
    );
    assert_eq!(
        reason(&load("CSX-905")),
        ("ok".into(), "round_limit_fallback".into())
    );
    assert_eq!(load("CSX-905").tool_calls.len(), 4);
    assert_eq!(
        reason(&load("CSX-906")),
        ("error".into(), "format_error".into())
    );
    let native = load("CSX-907");
    assert_eq!(reason(&native), ("ok".into(), "model_final".into()));
    assert_eq!(native.final_answer, json!({"peak": 7}));
    assert_eq!(native.diagnostics.cached_tokens, Some(20));
    let anthropic = load("CSX-908");
    assert_eq!(reason(&anthropic), ("ok".into(), "model_final".into()));
    assert_eq!(anthropic.tool_calls.len(), 1);
    // Bounded by the 6 s task budget (runs are concurrent), not by the 60 s reply.
    assert!(elapsed < Duration::from_secs(20), "{elapsed:?}");

    // Resume: a second batch runs only the error records again.
    let again = run_batch(
        (1..=8)
            .map(|i| {
                let id = format!("CSX-90{i}");
                TaskInput {
                    task_id: format!("{id}_Q1"),
                    package_root: root
                        .path()
                        .join("event_packages/standard_event_packages/packages")
                        .join(&id),
                    event_id: id,
                    question: "What is the peak?".into(),
                    question_path: None,
                    scratch_dir: root.path().join("scratch"),
                }
            })
            .collect(),
        factory,
        batch,
        Arc::new(NoProgress),
    )
    .await
    .unwrap();
    assert_eq!(again.already_done, summary.ok);
    assert_eq!(again.ok + again.error, summary.error);
}
