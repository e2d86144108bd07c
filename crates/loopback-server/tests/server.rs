//! The loopback server binary as a real process: startup, script matching,
//! replies (status, headers, truncation), request log, and shutdown.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use earthverse_loopback_server::{spawn_loopback_with, Body, Interaction, Reply, Script};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_earthverse-loopback-server");

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
    let server = spawn_loopback_with(Path::new(BIN), &script).expect("start");
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
    let server = spawn_loopback_with(Path::new(BIN), &script).expect("start");
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
fn the_binary_reads_a_script_file_prints_its_port_and_exits_on_stdin_eof() {
    let dir = tempfile_dir();
    let script_path = dir.join("script.json");
    std::fs::write(
        &script_path,
        r#"{"interactions":[{"times":0,"reply":{"status":503,"body":{"kind":"raw","text":"busy"}}}]}"#,
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .arg("--script")
        .arg(&script_path)
        .arg("--exit-on-stdin-eof")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().parse().expect("port on stdout");
    let (status, _, body) = post(port, "/anything", "{}");
    assert_eq!((status, body.as_str()), (503, "busy"));
    drop(child.stdin.take()); // close stdin: the server must exit
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "server did not exit after stdin EOF"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_bad_script_is_a_clear_startup_error() {
    let output = Command::new(BIN)
        .args(["--script", "/nonexistent/loopback-script.json"])
        .output()
        .expect("run");
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("/nonexistent/loopback-script.json"),
        "{stderr}"
    );
    let mut child = Command::new(BIN)
        .arg("--script-stdin")
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"interactions\": [{\"reply\": {\"body\": {\"kind\": \"nope\"}}}]}\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("loopback script"));
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "earthverse-loopback-test-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
