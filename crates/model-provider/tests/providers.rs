//! Provider tests against a real loopback HTTP server process
//! (`earthverse-loopback`, started as a child), through both wire protocols:
//! OpenAI-compatible chat completions and Anthropic Messages. Every call must
//! end with a response or a typed error; each test is bounded by a tokio
//! timeout so none can hang.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use earthverse_loopback_server::{
    start, Body, Interaction, LoopbackServer, Reply, Script, ScriptToolCall, ScriptUsage,
};
use earthverse_model_provider::{
    AnthropicConfig, AnthropicMessages, ChatModel, ChatRequest, FinishReason, Message,
    OpenAiCompatible, OpenAiConfig, ProviderError, RetryPolicy, Role, ToolCall, ToolDefinition,
};
use serde_json::{json, Value};
use std::future::Future;
use std::time::{Duration, Instant};

const FAST_BACKOFF: Duration = Duration::from_millis(20);

fn server(interactions: Vec<Interaction>) -> LoopbackServer {
    start(&Script::new(interactions)).expect("loopback server starts")
}

fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        base_backoff: FAST_BACKOFF,
        ..RetryPolicy::default()
    }
}

fn openai(server: &LoopbackServer, call_timeout: Duration) -> OpenAiCompatible {
    let mut config = OpenAiConfig::local("loopback-model", format!("{}/v1", server.base_url()));
    config.call_timeout = call_timeout;
    config.retry = fast_retry();
    OpenAiCompatible::new(config).expect("provider builds")
}

fn anthropic(server: &LoopbackServer, key_env: Option<&str>) -> AnthropicMessages {
    let mut config = AnthropicConfig::anthropic("claude-loopback");
    config.base_url = server.base_url();
    config.api_key_env = key_env.map(str::to_string);
    config.call_timeout = Duration::from_secs(5);
    config.retry = fast_retry();
    AnthropicMessages::new(config).expect("provider builds")
}

/// Runs `fut` and fails the test if it takes longer than 20 s.
async fn bounded<T>(fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), fut)
        .await
        .expect("call finished within 20 s")
}

fn task_request() -> ChatRequest {
    let mut request = ChatRequest::new(vec![
        Message::system("You are a scientific agent. Answer with one JSON object."),
        Message::user("Task: how hot did it get?"),
    ]);
    request.json_mode = true;
    request
}

const TOOL_ACTION: &str =
    r#"{"action":"tool_call","tool":"list_package_files","args":{"subdir":"."},"reason":"look"}"#;
const FINAL_ACTION: &str =
    r#"{"action":"final_answer","final_answer":{"peak_c":35.5},"evidence":[]}"#;

#[tokio::test]
async fn openai_json_protocol_sends_json_mode_and_reads_usage() {
    let srv = server(vec![Interaction::once(Reply::ok(Body::Openai {
        content: Some(FINAL_ACTION.into()),
        tool_calls: vec![],
        finish_reason: None,
        usage: ScriptUsage {
            prompt_tokens: 1234,
            completion_tokens: 56,
            cached_tokens: 1000,
        },
    }))
    .on_path("/v1/chat/completions")]);
    std::env::set_var("EV_TEST_OPENAI_KEY_1", "sk-loopback-1");
    let mut config = OpenAiConfig::local("loopback-model", format!("{}/v1/", srv.base_url()));
    config.api_key_env = Some("EV_TEST_OPENAI_KEY_1".into());
    let model = OpenAiCompatible::new(config).expect("provider builds");
    assert_eq!(model.model_id(), "openai:loopback-model");
    let reply = bounded(model.chat(task_request())).await.expect("reply");
    assert_eq!(reply.text, FINAL_ACTION);
    assert_eq!(reply.finish_reason, FinishReason::Stop);
    assert_eq!(reply.usage.prompt_tokens, 1234);
    assert_eq!(reply.usage.completion_tokens, 56);
    assert_eq!(reply.usage.cached_tokens, 1000);
    assert!(reply.retries.is_empty());
    assert!(reply.raw.is_some());

    let log = srv.requests().expect("request log");
    assert_eq!(log.len(), 1);
    let sent = &log[0];
    assert_eq!(sent["path"], "/v1/chat/completions");
    assert_eq!(sent["headers"]["authorization"], "Bearer sk-loopback-1");
    assert_eq!(sent["body"]["model"], "loopback-model");
    assert_eq!(
        sent["body"]["response_format"],
        json!({"type": "json_object"})
    );
    assert_eq!(sent["body"]["messages"][0]["role"], "system");
    assert_eq!(
        sent["body"]["messages"][1]["content"],
        "Task: how hot did it get?"
    );
    assert!(sent["body"].get("tools").is_none());
}

#[tokio::test]
async fn openai_native_tool_calling_round_trip() {
    let srv = server(vec![Interaction::once(Reply::ok(Body::Openai {
        content: None,
        tool_calls: vec![ScriptToolCall {
            id: Some("call_abc".into()),
            name: "read_text_file".into(),
            arguments: json!({"path": "data/a.json", "max_chars": 500}),
        }],
        finish_reason: None,
        usage: ScriptUsage::default(),
    }))]);
    let model = openai(&srv, Duration::from_secs(5));
    let mut request = ChatRequest::new(vec![
        Message::system("sys"),
        Message::user("task"),
        Message {
            role: Role::Assistant,
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "list_package_files".into(),
                arguments: json!({"subdir": "."}),
            }],
            tool_call_id: None,
        },
        Message {
            role: Role::Tool,
            content: r#"{"ok":true,"output":{"files":[]}}"#.into(),
            tool_calls: vec![],
            tool_call_id: Some("call_1".into()),
        },
    ]);
    request.tools = vec![ToolDefinition {
        name: "read_text_file".into(),
        description: "Read a text file".into(),
        parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }];
    let reply = bounded(model.chat(request)).await.expect("reply");
    assert_eq!(reply.finish_reason, FinishReason::ToolCalls);
    assert_eq!(
        reply.tool_calls,
        vec![ToolCall {
            id: "call_abc".into(),
            name: "read_text_file".into(),
            arguments: json!({"path": "data/a.json", "max_chars": 500}),
        }]
    );
    let log = srv.requests().expect("request log");
    let body = &log[0]["body"];
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "read_text_file");
    assert!(body.get("response_format").is_none());
    let assistant = &body["messages"][2];
    assert_eq!(assistant["content"], Value::Null);
    // arguments travel as a JSON string on the OpenAI wire
    let args: Value = serde_json::from_str(
        assistant["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .expect("string arguments"),
    )
    .expect("arguments are JSON");
    assert_eq!(args, json!({"subdir": "."}));
    assert_eq!(body["messages"][3]["role"], "tool");
    assert_eq!(body["messages"][3]["tool_call_id"], "call_1");
}

#[tokio::test]
async fn rate_limit_429_honours_retry_after() {
    let srv = server(vec![
        Interaction::once(Reply::error(429, "rate limited").with_header("retry-after", "1")),
        Interaction::once(Reply::ok(Body::openai_text(TOOL_ACTION))),
    ]);
    let model = openai(&srv, Duration::from_secs(5));
    let started = Instant::now();
    let reply = bounded(model.chat(task_request()))
        .await
        .expect("reply after retry");
    let elapsed = started.elapsed();
    assert_eq!(reply.text, TOOL_ACTION);
    assert_eq!(reply.retries.len(), 1);
    assert_eq!(reply.retries[0].attempt, 1);
    assert!(
        reply.retries[0].error.contains("HTTP 429"),
        "{:?}",
        reply.retries
    );
    // Retry-After (1 s) wins over the 20 ms back-off.
    assert_eq!(reply.retries[0].wait_s, 1.0);
    assert!(elapsed >= Duration::from_secs(1), "waited {elapsed:?}");
    assert!(reply.latency >= Duration::from_secs(1));
    assert_eq!(srv.requests().expect("log").len(), 2);
}

#[tokio::test]
async fn retry_after_beyond_the_deadline_fails_at_once() {
    let srv = server(vec![Interaction::always(
        Reply::error(503, "overloaded").with_header("retry-after", "30"),
    )]);
    let model = openai(&srv, Duration::from_secs(5));
    let mut request = task_request();
    request.deadline = Some(Instant::now() + Duration::from_secs(2));
    let started = Instant::now();
    let error = bounded(model.chat(request)).await.expect_err("deadline");
    assert!(started.elapsed() < Duration::from_secs(2));
    match &error {
        ProviderError::DeadlineExceeded {
            attempts,
            last_error,
            ..
        } => {
            assert_eq!(*attempts, 1);
            assert!(last_error.contains("HTTP 503"), "{last_error}");
        }
        other => panic!("expected DeadlineExceeded, got {other:?}"),
    }
    assert_eq!(srv.requests().expect("log").len(), 1);
}

#[tokio::test]
async fn server_error_500_is_retried_twice_with_exponential_backoff() {
    let srv = server(vec![Interaction::always(Reply::error(500, "boom"))]);
    let model = openai(&srv, Duration::from_secs(5));
    let error = bounded(model.chat(task_request())).await.expect_err("500");
    match &error {
        ProviderError::Http {
            status,
            attempts,
            body,
            retries,
            ..
        } => {
            assert_eq!(*status, 500);
            assert_eq!(*attempts, 3);
            assert!(body.contains("boom"));
            let waits: Vec<f64> = retries.iter().map(|r| r.wait_s).collect();
            assert_eq!(waits, vec![0.02, 0.04]);
        }
        other => panic!("expected Http, got {other:?}"),
    }
    assert_eq!(error.retries().len(), 2);
    assert_eq!(srv.requests().expect("log").len(), 3);
}

#[tokio::test]
async fn server_error_then_success_logs_the_retry() {
    let srv = server(vec![
        Interaction::once(Reply::error(500, "transient")),
        Interaction::once(Reply::ok(Body::openai_text(FINAL_ACTION))),
    ]);
    let model = openai(&srv, Duration::from_secs(5));
    let reply = bounded(model.chat(task_request())).await.expect("reply");
    assert_eq!(reply.text, FINAL_ACTION);
    assert_eq!(reply.retries.len(), 1);
    assert!(reply.retries[0].error.contains("HTTP 500"));
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let srv = server(vec![Interaction::always(Reply::error(401, "bad key"))]);
    let model = openai(&srv, Duration::from_secs(5));
    let error = bounded(model.chat(task_request())).await.expect_err("401");
    assert!(
        matches!(
            error,
            ProviderError::Http {
                status: 401,
                attempts: 1,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(srv.requests().expect("log").len(), 1);
}

#[tokio::test]
async fn slow_replies_time_out_as_a_typed_error() {
    let srv = server(vec![Interaction::always(
        Reply::ok(Body::openai_text(FINAL_ACTION)).delayed_ms(10_000),
    )]);
    let model = openai(&srv, Duration::from_millis(300));
    let started = Instant::now();
    let error = bounded(model.chat(task_request()))
        .await
        .expect_err("timeout");
    let elapsed = started.elapsed();
    match &error {
        ProviderError::Transport {
            attempts,
            message,
            retries,
            ..
        } => {
            assert_eq!(*attempts, 3);
            assert!(message.contains("timeout"), "{message}");
            assert_eq!(retries.len(), 2);
        }
        other => panic!("expected Transport, got {other:?}"),
    }
    // 3 x 300 ms + 60 ms of back-off, far below the 10 s the server would take.
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}

#[tokio::test]
async fn the_deadline_bounds_a_slow_call() {
    let srv = server(vec![Interaction::always(
        Reply::ok(Body::openai_text(FINAL_ACTION)).delayed_ms(10_000),
    )]);
    let model = openai(&srv, Duration::from_secs(60));
    let mut request = task_request();
    request.deadline = Some(Instant::now() + Duration::from_millis(500));
    let started = Instant::now();
    let error = bounded(model.chat(request)).await.expect_err("deadline");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        matches!(error, ProviderError::DeadlineExceeded { .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn truncated_json_is_retried_then_reported_as_malformed() {
    let srv = server(vec![Interaction::always(
        Reply::ok(Body::openai_text(FINAL_ACTION)).truncated_at(60),
    )]);
    let model = openai(&srv, Duration::from_secs(5));
    let error = bounded(model.chat(task_request()))
        .await
        .expect_err("truncated");
    match &error {
        ProviderError::Malformed {
            message, retries, ..
        } => {
            assert!(message.contains("not JSON"), "{message}");
            assert_eq!(retries.len(), 2);
        }
        other => panic!("expected Malformed, got {other:?}"),
    }
    assert_eq!(srv.requests().expect("log").len(), 3);
}

#[tokio::test]
async fn truncated_once_then_whole_succeeds() {
    let srv = server(vec![
        Interaction::once(Reply::ok(Body::openai_text(FINAL_ACTION)).truncated_at(10)),
        Interaction::once(Reply::ok(Body::openai_text(FINAL_ACTION))),
    ]);
    let model = openai(&srv, Duration::from_secs(5));
    let reply = bounded(model.chat(task_request())).await.expect("reply");
    assert_eq!(reply.text, FINAL_ACTION);
    assert!(reply.retries[0].error.contains("malformed"));
}

#[tokio::test]
async fn prose_and_never_final_models_still_answer_every_call() {
    // A model that answers in prose: the provider returns the text as is;
    // the controller's repair prompt deals with it.
    let prose = "The peak temperature was probably around 35 degrees.";
    let srv = server(vec![
        Interaction::once(Reply::ok(Body::openai_text(prose))),
        // A model that never calls final: the same tool call forever.
        Interaction::always(Reply::ok(Body::openai_text(TOOL_ACTION))),
    ]);
    let model = openai(&srv, Duration::from_secs(5));
    let first = bounded(model.chat(task_request())).await.expect("prose");
    assert_eq!(first.text, prose);
    for _ in 0..10 {
        let reply = bounded(model.chat(task_request()))
            .await
            .expect("tool call");
        assert_eq!(reply.text, TOOL_ACTION);
    }
    assert_eq!(srv.requests().expect("log").len(), 11);
}

#[tokio::test]
async fn error_object_in_a_200_body_is_malformed() {
    let srv = server(vec![Interaction::always(Reply::ok(Body::Json {
        value: json!({"error": {"message": "model not loaded"}}),
    }))]);
    let model = openai(&srv, Duration::from_secs(5));
    let error = bounded(model.chat(task_request()))
        .await
        .expect_err("error body");
    assert!(
        matches!(&error, ProviderError::Malformed { message, .. } if message.contains("model not loaded")),
        "{error:?}"
    );
}

#[tokio::test]
async fn connection_refused_is_a_transport_error() {
    let srv = server(vec![]);
    let base = format!("{}/v1", srv.base_url());
    drop(srv); // the process is killed; nothing listens on the port now
    let mut config = OpenAiConfig::local("m", base);
    config.retry = fast_retry();
    let model = OpenAiCompatible::new(config).expect("provider");
    let error = bounded(model.chat(task_request()))
        .await
        .expect_err("refused");
    assert!(
        matches!(error, ProviderError::Transport { attempts: 3, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn unmatched_requests_get_a_404_not_a_hang() {
    let srv = server(vec![
        Interaction::always(Reply::ok(Body::openai_text("x"))).on_path("/elsewhere")
    ]);
    let model = openai(&srv, Duration::from_secs(5));
    let error = bounded(model.chat(task_request())).await.expect_err("404");
    assert!(
        matches!(&error, ProviderError::Http { status: 404, body, .. } if body.contains("no scripted interaction")),
        "{error:?}"
    );
}

#[test]
fn missing_api_key_variable_is_a_config_error_naming_it() {
    let mut config = OpenAiConfig::local("m", "http://127.0.0.1:9/v1");
    config.api_key_env = Some("EV_TEST_SURELY_UNSET_KEY".into());
    let error = OpenAiCompatible::new(config).expect_err("no key");
    assert!(error.to_string().contains("EV_TEST_SURELY_UNSET_KEY"));
    let bad = OpenAiCompatible::new(OpenAiConfig::local("m", "127.0.0.1:9"));
    assert!(bad.expect_err("no scheme").to_string().contains("http://"));
}

#[tokio::test]
async fn anthropic_messages_text_and_tool_use() {
    let srv = server(vec![
        Interaction::once(Reply::ok(Body::Anthropic {
            text: Some("Let me look.".into()),
            tool_uses: vec![ScriptToolCall {
                id: Some("toolu_1".into()),
                name: "search_package_files".into(),
                arguments: json!({"query": "heat"}),
            }],
            stop_reason: None,
            usage: ScriptUsage {
                prompt_tokens: 900,
                completion_tokens: 40,
                cached_tokens: 800,
            },
        }))
        .on_path("/v1/messages"),
        Interaction::once(Reply::ok(Body::anthropic_text(FINAL_ACTION))).on_path("/v1/messages"),
    ]);
    std::env::set_var("EV_TEST_ANTHROPIC_KEY_1", "ak-loopback");
    let model = anthropic(&srv, Some("EV_TEST_ANTHROPIC_KEY_1"));
    assert_eq!(model.model_id(), "anthropic:claude-loopback");
    let mut request = ChatRequest::new(vec![Message::system("sys prompt"), Message::user("task")]);
    request.tools = vec![ToolDefinition {
        name: "search_package_files".into(),
        description: "Search".into(),
        parameters: json!({"type": "object"}),
    }];
    let first = bounded(model.chat(request.clone()))
        .await
        .expect("tool use");
    assert_eq!(first.text, "Let me look.");
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    assert_eq!(first.tool_calls[0].name, "search_package_files");
    assert_eq!(first.tool_calls[0].arguments, json!({"query": "heat"}));
    assert_eq!(first.usage.prompt_tokens, 900);
    assert_eq!(first.usage.cached_tokens, 800);
    assert_eq!(first.usage.completion_tokens, 40);

    request.messages.push(Message {
        role: Role::Assistant,
        content: first.text.clone(),
        tool_calls: first.tool_calls.clone(),
        tool_call_id: None,
    });
    request.messages.push(Message {
        role: Role::Tool,
        content: r#"{"ok":true}"#.into(),
        tool_calls: vec![],
        tool_call_id: Some("toolu_1".into()),
    });
    request.messages.push(Message::user("continue"));
    let second = bounded(model.chat(request)).await.expect("final");
    assert_eq!(second.text, FINAL_ACTION);
    assert_eq!(second.finish_reason, FinishReason::Stop);

    let log = srv.requests().expect("log");
    assert_eq!(log.len(), 2);
    assert_eq!(log[0]["headers"]["x-api-key"], "ak-loopback");
    assert_eq!(log[0]["headers"]["anthropic-version"], "2023-06-01");
    let body = &log[1]["body"];
    assert_eq!(body["system"], "sys prompt");
    assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
    let messages = body["messages"].as_array().expect("messages");
    // user, assistant, user(tool_result + text): roles alternate
    let roles: Vec<&str> = messages.iter().filter_map(|m| m["role"].as_str()).collect();
    assert_eq!(roles, vec!["user", "assistant", "user"]);
    assert_eq!(messages[1]["content"][1]["type"], "tool_use");
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    assert_eq!(messages[2]["content"][0]["tool_use_id"], "toolu_1");
    assert_eq!(messages[2]["content"][1]["text"], "continue");
}

#[tokio::test]
async fn anthropic_retries_429_and_reports_truncation() {
    let srv = server(vec![
        Interaction::once(Reply::error(429, "slow").with_header("retry-after", "0.2")),
        Interaction::once(Reply::ok(Body::anthropic_text("prose, not JSON"))),
        Interaction::always(Reply::ok(Body::anthropic_text(FINAL_ACTION)).truncated_at(25)),
    ]);
    let model = anthropic(&srv, None);
    let reply = bounded(model.chat(task_request()))
        .await
        .expect("after 429");
    assert_eq!(reply.text, "prose, not JSON");
    assert_eq!(reply.retries.len(), 1);
    assert_eq!(reply.retries[0].wait_s, 0.2);
    let error = bounded(model.chat(task_request()))
        .await
        .expect_err("truncated");
    assert!(
        matches!(error, ProviderError::Malformed { .. }),
        "{error:?}"
    );
    assert_eq!(error.retries().len(), 2);
}

#[tokio::test]
async fn https_urls_use_the_rustls_ring_client() {
    // The client is built on rustls with the ring provider installed by the
    // crate; an https call to a closed loopback port must come back as a
    // typed transport error (a missing crypto provider would panic instead).
    let srv = server(vec![]);
    let port = srv.port();
    drop(srv);
    let mut config = OpenAiConfig::local("m", format!("https://127.0.0.1:{port}/v1"));
    config.retry = RetryPolicy {
        max_retries: 0,
        ..fast_retry()
    };
    let model = OpenAiCompatible::new(config).expect("provider");
    let error = bounded(model.chat(task_request()))
        .await
        .expect_err("refused");
    assert!(
        matches!(error, ProviderError::Transport { attempts: 1, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn reasoning_effort_and_sampling_reach_both_wire_protocols() {
    use earthverse_model_provider::{ReasoningEffort, Sampling};
    let srv = server(vec![
        Interaction::once(Reply::ok(Body::openai_text(FINAL_ACTION)))
            .on_path("/v1/chat/completions"),
        Interaction::once(Reply::ok(Body::anthropic_text(FINAL_ACTION))).on_path("/v1/messages"),
        Interaction::once(Reply::ok(Body::anthropic_text(FINAL_ACTION))).on_path("/v1/messages"),
    ]);
    let mut request = task_request();
    request.sampling = Sampling {
        temperature: Some(0.3),
        seed: Some(2026),
        max_tokens: Some(900),
        reasoning_effort: Some(ReasoningEffort::High),
        ..Sampling::default()
    };
    let reply = bounded(openai(&srv, Duration::from_secs(5)).chat(request.clone()))
        .await
        .expect("openai reply");
    let served = reply.served_model().expect("the server names its model");
    assert_eq!(served.model.as_deref(), Some("loopback-model"));

    let claude = anthropic(&srv, None);
    bounded(claude.chat(request.clone()))
        .await
        .expect("thinking reply");
    request.sampling.reasoning_effort = Some(ReasoningEffort::None);
    bounded(claude.chat(request)).await.expect("plain reply");

    let log = srv.requests().expect("log");
    assert_eq!(log.len(), 3);
    let openai_body = &log[0]["body"];
    assert_eq!(openai_body["reasoning_effort"], "high");
    assert_eq!(openai_body["temperature"], 0.3);
    assert_eq!(openai_body["seed"], 2026);
    assert_eq!(openai_body["max_tokens"], 900);
    // Anthropic: high effort is a thinking budget; max_tokens leaves the
    // answer its own allowance above it, and temperature is not sent.
    let budget = ReasoningEffort::High
        .anthropic_thinking_budget()
        .expect("high thinks");
    let thinking = &log[1]["body"];
    assert_eq!(thinking["thinking"]["type"], "enabled");
    assert_eq!(thinking["thinking"]["budget_tokens"], budget);
    assert!(thinking["max_tokens"].as_u64().expect("max_tokens") > u64::from(budget));
    assert!(thinking.get("temperature").is_none());
    let plain = &log[2]["body"];
    assert!(plain.get("thinking").is_none());
    assert_eq!(plain["temperature"], 0.3);
    assert_eq!(plain["max_tokens"], 900);
}
