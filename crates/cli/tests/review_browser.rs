//! `earthverse review` in a real headless Chromium (Debian `chromium` and
//! `chromium-driver`, driven over WebDriver with plain HTTP): label five
//! units by clicking (one with an error family picked) and score a rubric
//! criterion, kill the server, start it again, reload: all are there;
//! then `earthverse review agreement` prints its table.
//!
//! Without chromium or chromedriver the test says so and passes only
//! outside CI; with `CI` set it fails (scripts/bootstrap.sh installs
//! both).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHROMIUM: &str = "/usr/bin/chromium";
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

/// A child process killed when dropped.
struct Killed(Child);
impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts the review server; returns it and its URL (read from stdout).
fn start_server(labels: &Path) -> (Killed, String) {
    let root = fixtures();
    let mut child = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .arg("review")
        .arg(&root)
        .arg("--runs")
        .arg(root.join("exploration/trajectories"))
        .args([
            "--sample",
            "3",
            "--seed",
            "2026",
            "--reviewer",
            "test-expert",
            "--port",
            "0",
        ])
        .arg("--labels")
        .arg(labels)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://127.0.0.1:"))
        .unwrap_or_else(|| panic!("no URL in the server's first line: {line:?}"))
        .to_owned();
    (Killed(child), url)
}

struct Driver {
    http: reqwest::Client,
    base: String,
    session: String,
}

impl Driver {
    async fn call(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let url = format!("{}/session/{}{}", self.base, self.session, path);
        let resp = self
            .http
            .request(method, &url)
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        let v: Value = resp.json().await.unwrap();
        assert!(status.is_success(), "{url}: {status} {v}");
        v["value"].clone()
    }
    async fn post(&self, path: &str, body: Value) -> Value {
        self.call(reqwest::Method::POST, path, body).await
    }
    async fn script(&self, script: &str) -> Value {
        self.post("/execute/sync", json!({"script": script, "args": []}))
            .await
    }
    async fn wait_for(&self, script: &str, what: &str) {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if self.script(script).await == json!(true) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let status = self
            .script("return document.getElementById('status').textContent")
            .await;
        panic!("timed out waiting for {what}; page status: {status}");
    }
    async fn elements(&self, css: &str) -> Vec<String> {
        let v = self
            .post("/elements", json!({"using": "css selector", "value": css}))
            .await;
        v.as_array()
            .unwrap()
            .iter()
            .map(|e| {
                e[ELEMENT]
                    .as_str()
                    .unwrap_or_else(|| panic!("not an element reference: {e}"))
                    .to_owned()
            })
            .collect()
    }
    async fn click(&self, element: &str) {
        self.post(&format!("/element/{element}/click"), json!({}))
            .await;
    }
}

fn tools_present() -> bool {
    let ok = Path::new(CHROMIUM).exists()
        && Command::new("chromedriver")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
    if !ok {
        let message = "review browser test: needs Debian `chromium` and `chromium-driver` \
                       (scripts/bootstrap.sh installs them)";
        assert!(
            std::env::var_os("CI").is_none(),
            "{message}: missing under CI"
        );
        eprintln!("{message}: missing here, the browser test did not run");
    }
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_labels_survive_a_server_restart_in_headless_chromium() {
    if !tools_present() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let labels = dir.path().join("labels.jsonl");
    let profile = dir.path().join("chromium-profile");

    let port = free_port();
    let _driver_process = Killed(
        Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let base = format!("http://127.0.0.1:{port}");
    // reqwest is built with rustls and no default crypto provider; plain
    // HTTP to 127.0.0.1 needs none, but the client builder asks for one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let start = Instant::now();
    loop {
        if let Ok(r) = http.get(format!("{base}/status")).send().await {
            let v: Value = r.json().await.unwrap_or_default();
            if v["value"]["ready"] == json!(true) {
                break;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "chromedriver did not start"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([format!("--user-data-dir={}", profile.display())])
    .collect::<Vec<_>>();
    let caps = json!({"capabilities": {"alwaysMatch": {
        "browserName": "chrome",
        "goog:chromeOptions": {"binary": CHROMIUM, "args": args}
    }}});
    let resp: Value = http
        .post(format!("{base}/session"))
        .json(&caps)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let session = resp["value"]["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("no WebDriver session: {resp}"))
        .to_owned();
    let driver = Driver {
        http: http.clone(),
        base: base.clone(),
        session,
    };

    // First server: label five units with real clicks.
    let (server, url) = start_server(&labels);
    driver.post("/url", json!({ "url": url })).await;
    driver
        .wait_for(
            "return document.body.getAttribute('data-ready') === 'true'",
            "the page to load",
        )
        .await;
    let rights = driver.elements("tr.unit button.mark-right").await;
    let wrongs = driver.elements("tr.unit button.mark-wrong").await;
    assert!(rights.len() >= 5, "{} units on the page", rights.len());
    for r in &rights[..3] {
        driver.click(r).await;
    }
    for w in &wrongs[3..5] {
        driver.click(w).await;
    }
    let saved = "return document.querySelectorAll('tr.unit[data-saved]').length === 5";
    driver.wait_for(saved, "five saved units").await;
    // A family for the last wrong unit: pick it in the select.
    let option = driver
        .elements("tr.unit:nth-of-type(6) select.family option[value='arithmetic']")
        .await;
    let option = if option.is_empty() {
        driver
            .elements("tr.unit[data-saved='wrong'] select.family option[value='arithmetic']")
            .await
    } else {
        option
    };
    driver.click(&option[0]).await;
    driver
        .wait_for(
            "return document.getElementById('status').textContent.startsWith('saved 6')",
            "the family label",
        )
        .await;
    // One rubric criterion scored: typed, then Enter commits it.
    let points = driver.elements("tr.criterion input.points").await;
    assert!(!points.is_empty(), "no rubric criteria on the page");
    driver
        .post(
            &format!("/element/{}/value", points[0]),
            json!({"text": "1\u{E007}"}),
        )
        .await;
    driver
        .wait_for(
            "return document.getElementById('status').textContent.startsWith('saved 7')",
            "the rubric label",
        )
        .await;
    drop(server); // killed: nothing but the label file remains

    let lines = std::fs::read_to_string(&labels).unwrap();
    assert_eq!(lines.lines().count(), 7, "{lines}");
    for line in lines.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["reviewer"], "test-expert");
        assert!(v["time"].as_str().unwrap().ends_with('Z'), "{v}");
    }

    // Second server on another port: reload, the five are there.
    let (_server, url) = start_server(&labels);
    driver.post("/url", json!({ "url": url })).await;
    driver
        .wait_for(
            "return document.body.getAttribute('data-ready') === 'true'",
            "the page to load again",
        )
        .await;
    let restored = driver
        .script(
            "return Array.from(document.querySelectorAll('tr.unit[data-saved]'))\
             .map(r => r.getAttribute('data-saved'))",
        )
        .await;
    let restored: Vec<&str> = restored
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(restored, ["right", "right", "right", "wrong", "wrong"]);
    let family = driver
        .script(
            "return Array.from(document.querySelectorAll('tr.unit select.family'))\
             .map(s => s.value).filter(v => v)",
        )
        .await;
    assert_eq!(family, json!(["arithmetic"]));
    let scored = driver
        .script(
            "return Array.from(document.querySelectorAll('tr.criterion[data-saved]'))\
             .map(r => r.querySelector('input').value)",
        )
        .await;
    assert_eq!(scored, json!(["1"]));
    driver.call(reqwest::Method::DELETE, "", json!({})).await;

    // Agreement of the labels with the judges prints.
    let root = fixtures();
    let out = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .args(["review", "agreement"])
        .arg(&labels)
        .arg("--runs")
        .arg(root.join("exploration/trajectories"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("7 labels by 1 reviewer(s)"), "{stdout}");
    let unit_row = stdout
        .lines()
        .find(|l| l.starts_with("unit ") && l.contains("deterministic judge"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(unit_row.split_whitespace().any(|w| w == "5"), "{unit_row}");
    let rubric_row = stdout
        .lines()
        .find(|l| l.starts_with("rubric criterion"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        rubric_row.split_whitespace().any(|w| w == "1"),
        "{rubric_row}"
    );
}
