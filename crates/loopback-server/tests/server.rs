//! The loopback server started in the test process, reached over real TCP:
//! startup, script matching, replies (status, headers, truncation), request
//! log, and shutdown.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use earthverse_loopback_server::{start, Body, Interaction, Reply, Script};
use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// One HTTP/1.0 POST; returns (status, headers, body).
fn post(port: u16, path: &str, body: &str) -> (u16, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.0\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer k\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("http response");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, head.to_lowercase(), body.to_string())
}

#[test]
fn interactions_are_consumed_in_order_and_logged() {
    let script = Script::new(vec![
        Interaction::once(Reply::error(429, "slow").with_header("Retry-After", "7"))
            .on_path("/v1/chat/completions"),
        Interaction::always(Reply::ok(Body::openai_text("hello")))
            .on_path("/v1/chat/completions")
            .when_body_contains("\"model\""),
        Interaction::once(Reply::ok(Body::anthropic_text("hi"))).on_path("/v1/messages"),
    ]);
    let server = start(&script).expect("start");
    let (status, head, _) = post(server.port(), "/v1/chat/completions", r#"{"model":"m1"}"#);
    assert_eq!(status, 429);
    assert!(head.contains("retry-after: 7"), "{head}");
    let (status, _, body) = post(server.port(), "/v1/chat/completions", r#"{"model":"m1"}"#);
    assert_eq!(status, 200);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "hello");
    assert_eq!(body["model"], "m1");
    // matcher on body: no "model" key -> nothing matches -> 404
    let (status, _, body) = post(server.port(), "/v1/chat/completions", r#"{"x":1}"#);
    assert_eq!(status, 404);
    assert!(body.contains("no scripted interaction"));
    let (status, _, body) = post(server.port(), "/v1/messages", r#"{"model":"c"}"#);
    assert_eq!(status, 200);
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["content"][0]["text"], "hi");
    assert_eq!(body["stop_reason"], "end_turn");
    // the Anthropic interaction was used once
    let (status, _, _) = post(server.port(), "/v1/messages", r#"{"model":"c"}"#);
    assert_eq!(status, 404);

    let log = server.requests().expect("log");
    assert_eq!(log.len(), 5);
    assert_eq!(log[0]["interaction"], 0);
    assert_eq!(log[1]["interaction"], 1);
    assert_eq!(log[2]["interaction"], Value::Null);
    assert_eq!(log[3]["path"], "/v1/messages");
    assert_eq!(log[0]["headers"]["authorization"], "Bearer k");
    assert_eq!(log[0]["body"], json!({"model": "m1"}));
}

#[test]
fn truncated_bodies_keep_a_valid_content_length_and_delays_delay() {
    let script = Script::new(vec![
        Interaction::once(Reply::ok(Body::openai_text("x")).truncated_at(17)),
        Interaction::once(
            Reply::ok(Body::Raw {
                text: "plain prose".into(),
            })
            .delayed_ms(300),
        ),
    ]);
    let server = start(&script).expect("start");
    let (status, head, body) = post(server.port(), "/v1/chat/completions", "{}");
    assert_eq!(status, 200);
    assert_eq!(body.len(), 17);
    assert!(head.contains("content-length: 17"), "{head}");
    assert!(serde_json::from_str::<Value>(&body).is_err());
    let started = Instant::now();
    let (_, _, body) = post(server.port(), "/v1/chat/completions", "{}");
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(body, "plain prose");
}

#[test]
fn a_server_started_from_a_json_script_serves_it_and_stops_when_dropped() {
    let script = Script::from_json(
        r#"{"interactions":[{"times":0,"reply":{"status":503,"body":{"kind":"raw","text":"busy"}}}]}"#,
    )
    .expect("script");
    let server = start(&script).expect("start");
    let port = server.port();
    let (status, _, body) = post(port, "/anything", "{}");
    assert_eq!((status, body.as_str()), (503, "busy"));
    assert_eq!(server.requests().unwrap().len(), 1);
    drop(server); // stops the server and joins its thread
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "port {port} still accepts connections after the server was dropped"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn a_server_started_inside_a_runtime_serves_on_its_own() {
    // The caller's single-threaded runtime is blocked in this synchronous
    // request: the server must not need it.
    let server = start(&Script::new(vec![Interaction::always(Reply::ok(
        Body::openai_text("x"),
    ))]))
    .expect("start");
    let (status, _, _) = post(server.port(), "/v1/chat/completions", r#"{"model":"m"}"#);
    assert_eq!(status, 200);
}

#[test]
fn a_bad_script_is_a_clear_error() {
    let err = Script::from_json(r#"{"interactions": [{"reply": {"body": {"kind": "nope"}}}]}"#)
        .expect_err("unknown body kind");
    assert!(err.to_string().contains("loopback script"), "{err}");
}
