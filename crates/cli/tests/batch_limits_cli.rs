//! Global limits of a batch across shards: 4 concurrent `earthverse run`
//! processes (shards 0/4..3/4) share one output directory and talk to one
//! loopback OpenAI-compatible server (a real HTTP server process on
//! 127.0.0.1) whose scripted model makes 5 tool calls per task, then
//! answers.
//!
//! - `--max-batch-cost`: the server serves exactly as many requests as the
//!   ledger settled, and the batch stops with the cap ≤ spent < cap + one
//!   request; the records written are whole `ok` runs, the tasks stopped
//!   have none, and a resume with a higher cap finishes them.
//! - `--max-request-rate`: in the admission times the 4 processes log
//!   (`EARTHVERSE_LOG=earthverse_agent_controller::limits=debug`), no
//!   window of the rate's length holds more requests than the rate allows;
//!   the admissions span at least (36 / 6 − 1) windows (unlimited, these
//!   shards send all 36 in well under a second), the server received
//!   exactly as many requests, and every task finishes.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use earthverse_loopback_server::{start, Body, Interaction, LoopbackServer, Reply, Script};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Model calls per task: 5 tool calls and the final answer.
const CALLS_PER_TASK: usize = 6;
/// USD per request: 100 prompt tokens at $100/Mtok + 20 completion tokens at $500/Mtok.
const REQUEST_USD: f64 = 0.02;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}
/// Step k+1 answers a conversation that holds step k's marker; the final
/// answer follows step 5. Interactions are tried in order, so the most
/// advanced step wins.
fn server() -> LoopbackServer {
    let action = |step: usize| {
        json!({"action": "tool_call", "tool": "list_package_files", "args": {"subdir": "."},
               "reason": format!("zzstep{step}zz")})
        .to_string()
    };
    let reply = |text: String| Reply::ok(Body::openai_text(text)).delayed_ms(15);
    let mut interactions = vec![Interaction::always(reply(
        json!({"action": "final_answer", "final_answer": {"value": 1}, "confidence": 0.5})
            .to_string(),
    ))
    .when_body_contains(format!("zzstep{}zz", CALLS_PER_TASK - 1))];
    for step in (2..CALLS_PER_TASK).rev() {
        interactions.push(
            Interaction::always(reply(action(step)))
                .when_body_contains(format!("zzstep{}zz", step - 1)),
        );
    }
    interactions.push(Interaction::always(reply(action(1))));
    start(&Script::new(interactions)).expect("loopback server starts")
}

fn chat_requests(server: &LoopbackServer) -> Vec<Value> {
    server
        .requests()
        .unwrap()
        .into_iter()
        .filter(|r| r["path"] == "/v1/chat/completions")
        .collect()
}

/// The 4 shards at once, each with `limit_args`.
fn run_shards(server: &LoopbackServer, out: &Path, limit_args: &[&str]) -> Vec<Output> {
    run_shards_logging(server, out, limit_args, "warn")
}

fn run_shards_logging(
    server: &LoopbackServer,
    out: &Path,
    limit_args: &[&str],
    log: &str,
) -> Vec<Output> {
    let prices = out.with_extension("prices.json");
    std::fs::write(
        &prices,
        json!({"capped": {"prompt": 100.0, "completion": 500.0}}).to_string(),
    )
    .unwrap();
    let children: Vec<_> = (0..4)
        .map(|k| {
            Command::new(env!("CARGO_BIN_EXE_earthverse"))
                .arg("run")
                .arg(repo().join("fixtures/release"))
                .args(["--agent", "openai:capped", "--base-url"])
                .arg(format!("{}/v1", server.base_url()))
                .arg("--prices")
                .arg(&prices)
                .args([
                    "--shard",
                    &format!("{k}/4"),
                    "--concurrency",
                    "1",
                    "--quiet",
                ])
                .arg("--out")
                .arg(out)
                .args(limit_args)
                .env("EARTHVERSE_LOG", log)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect()
}

fn records(system_dir: &Path) -> Vec<Value> {
    std::fs::read_dir(system_dir)
        .unwrap()
        .filter_map(|e| std::fs::read(e.unwrap().path().join("trajectory.json")).ok())
        .map(|b| serde_json::from_slice(&b).unwrap())
        .collect()
}

#[test]
fn a_shared_cost_cap_stops_four_shards_within_one_request() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    // 6 tasks × 6 calls = 36 requests wanted; the cap allows 29.5.
    let cap = 0.59;
    let outputs = run_shards(&server, &out, &["--max-batch-cost", &cap.to_string()]);
    let codes: Vec<Option<i32>> = outputs.iter().map(|o| o.status.code()).collect();
    for o in &outputs {
        eprint!("{}", String::from_utf8_lossy(&o.stdout));
    }
    assert!(codes.iter().all(|c| matches!(c, Some(0 | 4))), "{codes:?}");
    assert!(codes.contains(&Some(4)), "no shard was stopped: {codes:?}");

    let served = chat_requests(&server).len();
    let ledger: Value = serde_json::from_slice(
        &std::fs::read(out.join("openai-capped/limits-ledger.json")).unwrap(),
    )
    .unwrap();
    let spent = ledger["spent_usd"].as_f64().unwrap();
    eprintln!(
        "cost cap ${cap}: {served} requests served, ${spent:.4} spent (overshoot ${:.4}, one request ${REQUEST_USD}), exit codes {codes:?}",
        spent - cap
    );
    assert_eq!(
        ledger["settled_requests"].as_u64().unwrap() as usize,
        served
    );
    assert!(
        (spent - served as f64 * REQUEST_USD).abs() < 1e-9,
        "{spent}"
    );
    assert!(spent >= cap, "stopped below the cap: {spent}");
    assert!(
        spent < cap + REQUEST_USD,
        "overshoot of a request or more: {spent}"
    );
    assert!(ledger["refused_requests"].as_u64().unwrap() >= 1);

    // Finished records are whole runs; stopped tasks have none.
    let written = records(&out.join("openai-capped"));
    assert!(
        written
            .iter()
            .all(|r| r["diagnostics"]["run_status"] == "ok"),
        "{written:?}"
    );
    assert!(written.len() < 6, "every task finished under the cap");
    let kept_cost: f64 = written
        .iter()
        .map(|r| r["diagnostics"]["cost_usd"].as_f64().unwrap())
        .sum();
    assert!(
        (kept_cost - (written.len() * CALLS_PER_TASK) as f64 * REQUEST_USD).abs() < 1e-9,
        "{kept_cost}"
    );
    let check = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .arg("merge")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        check.status.code(),
        Some(1),
        "the stopped batch is incomplete"
    );

    // A resume with a higher cap runs the stopped tasks only.
    let outputs = run_shards(&server, &out, &["--max-batch-cost", "10"]);
    assert!(outputs.iter().all(|o| o.status.success()));
    assert_eq!(records(&out.join("openai-capped")).len(), 6);
    let check = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .arg("merge")
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    eprintln!(
        "resume under a $10 cap: {} records written before the stop kept, 6 of 6 now",
        written.len()
    );
}

#[test]
fn a_shared_request_rate_holds_across_four_shards() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let (allowed, window_ms) = (6usize, 1_000u64);
    let outputs = run_shards_logging(
        &server,
        &out,
        &["--max-request-rate", "6/1s"],
        "earthverse_agent_controller::limits=debug",
    );
    assert!(
        outputs.iter().all(|o| o.status.success()),
        "{:?}",
        outputs
            .iter()
            .map(|o| String::from_utf8_lossy(&o.stderr).into_owned())
            .collect::<Vec<_>>()
    );
    const MARK: &str = "request admitted at unix ms ";
    let mut admitted: Vec<u64> = outputs
        .iter()
        .flat_map(|o| {
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .filter_map(|l| {
                    let at = l.find(MARK)? + MARK.len();
                    let digits: String = l[at..].chars().take_while(char::is_ascii_digit).collect();
                    digits.parse().ok()
                })
                .collect::<Vec<u64>>()
        })
        .collect();
    admitted.sort_unstable();
    let mut received: Vec<u64> = chat_requests(&server)
        .iter()
        .map(|r| r["received_unix_ms"].as_u64().unwrap())
        .collect();
    received.sort_unstable();
    assert_eq!(received.len(), 6 * CALLS_PER_TASK);
    assert_eq!(admitted.len(), received.len());
    let tightest = admitted
        .windows(allowed + 1)
        .map(|w| w[allowed] - w[0])
        .min()
        .unwrap();
    let span = received[received.len() - 1] - received[0];
    eprintln!(
        "rate 6/1s: {} requests admitted over {span} ms (server receipts); the tightest {} consecutive admissions span {tightest} ms",
        admitted.len(),
        allowed + 1
    );
    assert!(tightest >= window_ms, "{tightest} ms");
    let windows = (admitted.len() / allowed - 1) as u64;
    let admitted_span = admitted[admitted.len() - 1] - admitted[0];
    assert!(admitted_span >= windows * window_ms, "{admitted_span} ms");
    assert_eq!(records(&out.join("openai-capped")).len(), 6);
}
