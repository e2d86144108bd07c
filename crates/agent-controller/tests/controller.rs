//! The solver loop against a scripted model double and a tiny in-test tool
//! box (the real providers and tools are tested in their own crates).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::field_reassign_with_default
)]

use async_trait::async_trait;
use earthverse_agent_controller::TerminationReason;
use earthverse_agent_controller::{
    Controller, ControllerSettings, Protocol, RequiredToolPolicy, RunRecord, TaskInput, ToolBox,
    ToolCallOutcome,
};
use earthverse_model_provider::{
    ChatModel, ChatRequest, ChatResponse, FinishReason, ProviderError, Role, TokenUsage, ToolCall,
    ToolDefinition,
};
use earthverse_tool_registry::{ToolContext, ToolOutput};
use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Clone)]
enum Reply {
    Text(String),
    Native(Vec<ToolCall>),
    Slow(Duration, String),
    Fail,
}

struct Scripted {
    replies: Mutex<VecDeque<Reply>>,
    /// Replies once the script is exhausted.
    then: Option<Reply>,
    requests: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    fn new(replies: Vec<Reply>, then: Option<Reply>) -> Arc<Self> {
        Arc::new(Self {
            replies: Mutex::new(replies.into()),
            then,
            requests: Mutex::new(Vec::new()),
        })
    }
    fn requests(&self) -> Vec<ChatRequest> {
        self.requests.lock().unwrap().clone()
    }
}

fn response(text: String, tool_calls: Vec<ToolCall>) -> ChatResponse {
    ChatResponse {
        text,
        tool_calls,
        finish_reason: FinishReason::Stop,
        usage: TokenUsage {
            prompt_tokens: 100,
            completion_tokens: 10,
            cached_tokens: 40,
        },
        latency: Duration::from_millis(1),
        raw: None,
        retries: Vec::new(),
    }
}

#[async_trait]
impl ChatModel for Scripted {
    fn model_id(&self) -> &str {
        "scripted-double"
    }
    async fn chat(&self, request: ChatRequest) -> earthverse_model_provider::Result<ChatResponse> {
        self.requests.lock().unwrap().push(request);
        let next = self
            .replies
            .lock()
            .unwrap()
            .pop_front()
            .or(self.then.clone());
        match next {
            Some(Reply::Text(t)) => Ok(response(t, Vec::new())),
            Some(Reply::Native(calls)) => Ok(response(String::new(), calls)),
            Some(Reply::Slow(d, t)) => {
                tokio::time::sleep(d).await;
                Ok(response(t, Vec::new()))
            }
            Some(Reply::Fail) => Err(ProviderError::Config("boom: HTTP 500".into())),
            None => Err(ProviderError::Exhausted {
                provider: "scripted".into(),
                used: 0,
            }),
        }
    }
}

/// Tools: `echo` (returns its args), `big` (50,000 characters), `spec`
/// (a specialist), `python_exec` (fake: echoes code length).
struct Tools;

#[async_trait]
impl ToolBox for Tools {
    fn definitions(&self) -> Vec<ToolDefinition> {
        ["echo", "big", "spec", "python_exec"]
            .iter()
            .map(|n| ToolDefinition {
                name: n.to_string(),
                description: format!("{n} tool"),
                parameters: json!({"type": "object"}),
            })
            .collect()
    }
    fn is_specialist(&self, tool: &str) -> bool {
        tool == "spec"
    }
    async fn call(&self, _ctx: &ToolContext, tool: &str, args: Value) -> ToolCallOutcome {
        let out = match tool {
            "echo" => ToolOutput::ok(json!({"echo": args}), vec!["data/a.json".into()]),
            "big" => ToolOutput::ok(json!({"text": "x".repeat(50_000)}), vec![]),
            "spec" if args.get("fail").is_some() => ToolOutput::error("spec failed"),
            "spec" => ToolOutput::ok(json!({"value": 1}), vec![]),
            "python_exec" => {
                let code = args["code"].as_str().unwrap_or("");
                ToolOutput::ok(
                    json!({"returncode": 0, "stdout": format!("{} chars", code.len()), "stderr": ""}),
                    vec![],
                )
            }
            other => ToolOutput::error(format!("unknown tool: {other}")),
        };
        ToolCallOutcome::new(args, out)
    }
}

fn task() -> TaskInput {
    TaskInput {
        task_id: "CSX-900_Q1".into(),
        event_id: "CSX-900".into(),
        question: "What is the peak?".into(),
        package_root: "/r/event_packages/standard_event_packages/packages/CSX-900".into(),
        question_path: None,
        scratch_dir: std::env::temp_dir(),
    }
}

fn call(tool: &str, args: Value) -> Reply {
    Reply::Text(
        json!({"action": "tool_call", "tool": tool, "args": args, "reason": "because"}).to_string(),
    )
}

fn final_reply(v: Value) -> Reply {
    Reply::Text(
        json!({"action": "final_answer", "final_answer": v, "confidence": 0.7,
               "evidence": [{"claim": "c", "source_file": "data/a.json", "support_type": "direct_metric"}],
               "reasoning_summary": ["r1"], "unsupported_or_unresolved": []})
        .to_string(),
    )
}

async fn run(model: Arc<Scripted>, settings: ControllerSettings) -> RunRecord {
    Controller::new(model, Arc::new(Tools), settings)
        .run_task(&task())
        .await
}

fn status(r: &RunRecord) -> (&str, &str) {
    let d = &r.trajectory.diagnostics;
    (
        d.run_status.map_or("", |s| s.as_str()),
        d.termination_reason
            .as_ref()
            .map_or("", TerminationReason::as_str),
    )
}

#[tokio::test]
async fn tool_then_final_gives_a_complete_record() {
    let model = Scripted::new(
        vec![
            call("echo", json!({"k": 1})),
            call("python_exec", json!({"code": "print(1+1)"})),
            call("nosuch", json!({})),
            final_reply(json!({"peak": 3})),
        ],
        None,
    );
    let mut settings = ControllerSettings::default();
    settings.price = Some(earthverse_agent_controller::Price {
        input_per_mtok: 1.0,
        cached_input_per_mtok: 0.5,
        output_per_mtok: 10.0,
    });
    let r = run(model.clone(), settings).await;
    assert_eq!(status(&r), ("ok", "model_final"));
    let t = &r.trajectory;
    assert_eq!(t.final_answer, json!({"peak": 3}));
    assert_eq!(t.evidence.len(), 1);
    assert_eq!(r.confidence, Some(0.7));
    let d = &t.diagnostics;
    assert_eq!(
        (d.tool_calls, d.model_rounds, d.python_calls, d.tool_errors),
        (Some(3), Some(4), Some(1), Some(1))
    );
    assert_eq!(
        (d.prompt_tokens, d.completion_tokens, d.total_tokens()),
        (Some(400), Some(40), Some(440))
    );
    assert_eq!(d.cached_tokens, Some(160));
    let cost = d.cost().unwrap();
    assert!((cost - (240.0 * 1.0 + 160.0 * 0.5 + 40.0 * 10.0) / 1e6).abs() < 1e-12);
    // Evidence paths become release-relative; python code goes to a snippet.
    assert_eq!(
        t.tool_calls[0].evidence_files,
        vec!["event_packages/standard_event_packages/packages/CSX-900/data/a.json".to_string()]
    );
    let py = &t.tool_calls[1];
    assert_eq!(py.args["code_chars"], json!(10));
    assert_eq!(py.args["code_sha1"].as_str().unwrap().len(), 12);
    assert_eq!(py.stdout.text, "10 chars");
    assert_eq!(py.returncode, Some(0));
    assert_eq!(r.snippets[0].code, "print(1+1)");
    assert!(py.evidence_files[0].starts_with("python_snippets/step_02_"));
    // The observation reaches the model as a user message holding the envelope.
    let second = &model.requests()[1];
    let obs = second.messages.last().unwrap();
    assert_eq!(obs.role, Role::User);
    assert!(obs.content.starts_with("Observation for step 1 (echo):\n"));
    let envelope: Value = serde_json::from_str(obs.content.split_once('\n').unwrap().1).unwrap();
    assert_eq!(envelope["output"], json!({"echo": {"k": 1}}));
    assert_eq!(envelope["ok"], json!(true));
    // The system and task messages come first and carry the App. E prompt.
    assert!(second.messages[0]
        .content
        .starts_with("You are an autonomous extreme-event benchmark solver."));
    assert!(second.messages[1]
        .content
        .contains("Task id: CSX-900_Q1\nEvent id: CSX-900"));
    assert!(second.messages[1].content.contains("- echo: echo tool"));

    // Artifacts.
    let dir = tempfile::tempdir().unwrap();
    r.write_to(dir.path()).unwrap();
    for f in [
        "trajectory.json",
        "answer.md",
        "tool_trace.md",
        "run_notes.md",
        "raw_conversation.json",
    ] {
        assert!(dir.path().join(f).is_file(), "{f} missing");
    }
    let back =
        earthverse_agent_controller::Trajectory::load(&dir.path().join("trajectory.json")).unwrap();
    assert_eq!(&back, t);
    assert!(dir.path().join(&r.snippets[0].path).is_file());
}

#[tokio::test]
async fn two_repairs_then_failure() {
    let prose = Reply::Text("The peak is 3.".into());
    let ok = run(
        Scripted::new(
            vec![
                prose.clone(),
                Reply::Text("```json\n{broken\n```".into()),
                final_reply(json!(1)),
            ],
            None,
        ),
        ControllerSettings::default(),
    )
    .await;
    assert_eq!(status(&ok), ("ok", "model_final"));
    assert_eq!(ok.notes.repairs_used, 2);
    let failed = run(
        Scripted::new(vec![], Some(prose)),
        ControllerSettings::default(),
    )
    .await;
    assert_eq!(status(&failed), ("error", "format_error"));
    assert_eq!(failed.trajectory.diagnostics.model_rounds, Some(3));
    assert_eq!(failed.trajectory.final_answer["answer"], Value::Null);
}

#[tokio::test]
async fn round_limit_forces_finalisation_and_falls_back() {
    let mut settings = ControllerSettings::default();
    settings.budgets.max_turns = 3;
    let mut script = vec![
        call("echo", json!({"i": 1})),
        call("echo", json!({"i": 2})),
        call("echo", json!({"i": 3})),
    ];
    script.push(final_reply(json!({"peak": 9})));
    let model = Scripted::new(script, None);
    let r = run(model.clone(), settings.clone()).await;
    assert_eq!(status(&r), ("ok", "round_limit"));
    assert_eq!(r.trajectory.diagnostics.model_rounds, Some(4));
    assert_eq!(r.trajectory.final_answer, json!({"peak": 9}));
    let last = model
        .requests()
        .last()
        .unwrap()
        .messages
        .last()
        .unwrap()
        .content
        .clone();
    assert!(last.contains("research budget is exhausted (round_limit)"));

    // A model that never finalises: fallback answer, `_fallback` reason.
    let r = run(
        Scripted::new(vec![], Some(call("echo", json!({})))),
        settings,
    )
    .await;
    assert_eq!(status(&r), ("ok", "round_limit_fallback"));
    assert_eq!(
        r.trajectory.final_answer,
        json!({"answer": null, "status": "budget_exhausted", "reason": "round_limit"})
    );
    assert_eq!(
        r.trajectory.unsupported_or_unresolved,
        vec!["round_limit".to_string()]
    );
}

#[tokio::test]
async fn research_time_limit_and_hanging_models_end() {
    let mut settings = ControllerSettings::default();
    settings.budgets.task_time = Duration::from_millis(900);
    settings.budgets.finalization_reserve = Duration::from_millis(400);
    settings.budgets.final_call_timeout = Duration::from_millis(300);
    // Research replies take 200 ms; the research deadline is 500 ms.
    let slow_tool = Reply::Slow(Duration::from_millis(200), call("echo", json!({})).text());
    let model = Scripted::new(
        vec![
            slow_tool.clone(),
            slow_tool.clone(),
            slow_tool.clone(),
            final_reply(json!(5)),
        ],
        None,
    );
    let r = run(model, settings.clone()).await;
    assert_eq!(status(&r), ("ok", "research_time_limit"));
    assert_eq!(r.trajectory.final_answer, json!(5));
    // A model that hangs far past every deadline still ends, with a fallback.
    let started = std::time::Instant::now();
    let hang = Reply::Slow(Duration::from_secs(3_600), "{}".into());
    let r = run(Scripted::new(vec![], Some(hang)), settings).await;
    assert_eq!(status(&r), ("ok", "research_time_limit_fallback"));
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn provider_failure_is_an_error_record() {
    let r = run(
        Scripted::new(vec![call("echo", json!({})), Reply::Fail], None),
        ControllerSettings::default(),
    )
    .await;
    assert_eq!(status(&r), ("error", "model_error"));
    assert!(r
        .trajectory
        .diagnostics
        .error
        .as_deref()
        .unwrap()
        .contains("HTTP 500"));
    assert_eq!(r.trajectory.tool_calls.len(), 1);
}

#[tokio::test]
async fn observations_are_capped_and_context_is_compacted() {
    let mut script: Vec<Reply> = (0..20)
        .map(|i| call(if i == 0 { "big" } else { "echo" }, json!({"i": i})))
        .collect();
    script.push(final_reply(json!(0)));
    let model = Scripted::new(script, None);
    let r = run(model.clone(), ControllerSettings::default()).await;
    assert_eq!(status(&r), ("ok", "model_final"));
    let requests = model.requests();
    let big_obs = &requests[1].messages.last().unwrap().content;
    assert_eq!(big_obs.chars().count(), 12_000);
    assert!(big_obs.ends_with("...[TRUNCATED]..."));
    // The recorded preview is the public 1,720 characters + marker.
    assert_eq!(
        r.trajectory.tool_calls[0].output.text.chars().count(),
        1_738
    );
    assert!(r.trajectory.tool_calls[0].output.truncated);
    let last = requests.last().unwrap();
    assert_eq!(last.messages.len(), 2 + 1 + 16);
    let summary = &last.messages[2].content;
    assert!(summary.starts_with("Research state: summary of 12 earlier tool observation(s)"));
    assert!(summary.contains("[step 1 | tool big | status ok | evidence: none]"));
    assert!(summary.chars().count() <= 24_000);
    assert!(r.notes.compacted_requests > 0);
}

#[tokio::test]
async fn required_tool_policy_refuses_early_finals() {
    let mut settings = ControllerSettings::default();
    settings.required_tools = Some(RequiredToolPolicy::default());
    let model = Scripted::new(
        vec![
            final_reply(json!("too early")),
            call("spec", json!({"a": 1})),
            call("spec", json!({"a": 1})), // exact duplicate: not counted
            call("spec", json!({"operation": "probe"})), // probe: not counted
            call("spec", json!({"fail": true})), // failed: not counted
            final_reply(json!("still early")),
            call("spec", json!({"a": 2})),
            final_reply(json!("done")),
        ],
        None,
    );
    let r = run(model.clone(), settings).await;
    assert_eq!(status(&r), ("ok", "model_final"));
    assert_eq!(r.trajectory.final_answer, json!("done"));
    assert_eq!(r.notes.refused_finals, 2);
    assert_eq!(r.notes.specialist_calls_counted, Some(2));
    let refusal = model.requests()[1].messages.last().unwrap().content.clone();
    assert!(
        refusal.contains("at least\n2 successful, distinct calls")
            && refusal.contains("so far 0 count")
    );
}

#[tokio::test]
async fn review_phase_revises_the_draft() {
    let mut settings = ControllerSettings::default();
    settings.review.enabled = true;
    settings.review.max_review_turns = 2;
    let model = Scripted::new(
        vec![
            call("echo", json!({})),
            final_reply(json!({"v": 1})),
            call("echo", json!({"check": 1})),
            final_reply(json!({"v": 2})),
        ],
        None,
    );
    let r = run(model.clone(), settings.clone()).await;
    assert_eq!(status(&r), ("ok", "model_final"));
    assert_eq!(r.trajectory.final_answer, json!({"v": 2}));
    assert_eq!(
        (r.notes.review_turns, r.notes.review_revised),
        (2, Some(true))
    );
    let prompt = model.requests()[2].messages.last().unwrap().content.clone();
    assert!(
        prompt.starts_with("Begin a final evidence-review phase")
            && prompt.contains("at most 2 review turns")
    );
    // Review turns run out: the draft stands.
    let model = Scripted::new(
        vec![final_reply(json!({"v": 1}))],
        Some(call("echo", json!({}))),
    );
    let r = run(model, settings).await;
    assert_eq!(r.trajectory.final_answer, json!({"v": 1}));
    assert_eq!(r.notes.review_revised, Some(false));
}

#[tokio::test]
async fn native_tool_calling() {
    let mut settings = ControllerSettings::default();
    settings.protocol = Protocol::NativeTools;
    let model = Scripted::new(
        vec![
            Reply::Native(vec![
                ToolCall {
                    id: "c1".into(),
                    name: "echo".into(),
                    arguments: json!({"a": 1}),
                },
                ToolCall {
                    id: "c2".into(),
                    name: "echo".into(),
                    arguments: json!("{\"a\": 2}"),
                },
            ]),
            Reply::Native(vec![ToolCall {
                id: "c3".into(),
                name: "final_answer".into(),
                arguments: json!({"final_answer": {"v": 3}, "confidence": 0.5}),
            }]),
        ],
        None,
    );
    let r = run(model.clone(), settings).await;
    assert_eq!(status(&r), ("ok", "model_final"));
    assert_eq!(r.trajectory.final_answer, json!({"v": 3}));
    assert_eq!(r.trajectory.tool_calls.len(), 2);
    assert_eq!(r.trajectory.tool_calls[1].args, json!({"a": 2}));
    let second = &model.requests()[1];
    assert!(second.tools.iter().any(|t| t.name == "final_answer"));
    let tool_msgs: Vec<_> = second
        .messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    assert_eq!(tool_msgs.len(), 2);
    assert_eq!(tool_msgs[1].tool_call_id.as_deref(), Some("c2"));
}

trait ReplyText {
    fn text(self) -> String;
}
impl ReplyText for Reply {
    fn text(self) -> String {
        match self {
            Reply::Text(t) | Reply::Slow(_, t) => t,
            _ => String::new(),
        }
    }
}
