//! `earthverse review agreement` and `earthverse evidence --families` on
//! the bundled fixtures: bad label files are refused naming file and line,
//! and the families table prints for every kind.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

fn earthverse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .args(args)
        .output()
        .unwrap()
}

fn label(system: &str, key: &str) -> String {
    format!(
        "{{\"reviewer\":\"ana\",\"time\":\"2026-12-07T22:00:00Z\",\"system\":\"{system}\",\
         \"task_id\":\"FIX-002_Q1\",\"target\":\"unit\",\"key\":\"{key}\",\"correct\":true}}\n"
    )
}

#[test]
fn bad_label_files_are_refused_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let runs = fixtures().join("exploration/trajectories");
    let runs = runs.to_str().unwrap();
    let path = dir.path().join("labels.jsonl");
    let p = path.to_str().unwrap();

    std::fs::write(
        &path,
        label("fixture-hasty-agent", "affected_population_csv_total"),
    )
    .unwrap();
    let ok = earthverse(&["review", "agreement", p, "--runs", runs]);
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(
        stdout.contains("1 labels by 1 reviewer(s) on 1 runs"),
        "{stdout}"
    );
    assert!(
        stdout.contains("unit                   deterministic judge        1"),
        "{stdout}"
    );

    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&label("no-such-system", "x"));
    std::fs::write(&path, &text).unwrap();
    let unknown = earthverse(&["review", "agreement", p, "--runs", runs]);
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(!unknown.status.success());
    assert!(
        stderr.contains("labels.jsonl:2: unknown run no-such-system/FIX-002_Q1"),
        "{stderr}"
    );

    text.push_str("{\"reviewer\": \"ana\"\n");
    std::fs::write(&path, &text).unwrap();
    let malformed = earthverse(&["review", "agreement", p, "--runs", runs]);
    let stderr = String::from_utf8_lossy(&malformed.stderr);
    assert!(!malformed.status.success());
    assert!(stderr.contains("labels.jsonl:3: not a label"), "{stderr}");
    // The server refuses the same file before serving anything.
    let root = fixtures();
    let serve = earthverse(&[
        "review",
        root.to_str().unwrap(),
        "--runs",
        runs,
        "--labels",
        p,
        "--reviewer",
        "ana",
        "--port",
        "0",
    ]);
    assert!(!serve.status.success());
    assert!(String::from_utf8_lossy(&serve.stderr).contains("labels.jsonl:3: not a label"));
}

#[test]
fn families_table_prints_every_kind() {
    let root = fixtures();
    let runs = root.join("exploration/trajectories");
    let out = earthverse(&[
        "evidence",
        root.to_str().unwrap(),
        "--runs",
        runs.to_str().unwrap(),
        "--families",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("all runs (12)"), "{stdout}");
    for kind in ["label", "numeric", "missing", "unit", "schema", "reasoning"] {
        assert!(
            stdout.lines().any(|l| l.starts_with(kind)),
            "{kind}: {stdout}"
        );
    }
    assert!(stdout.contains("Flow (Fig. 9)"), "{stdout}");
}
