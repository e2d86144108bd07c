//! `earthverse tools replay --python` on an authored recorded run
//! (`fixtures/python-replay/trajectories`, the release's record format:
//! `code_preview` stripped, `code_chars`, `code_sha1`, output as JSON text)
//! over the fixture release's FIX-001 package (feature `scientific-python`:
//! the calls import numpy and pandas). Each call is the kind of difference
//! a general rule explains; the recorded outputs of the identical ones were
//! printed by the same code with plain Python over the package.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The interpreter `earthverse run` would use (`EARTHVERSE_PYTHON`, else
/// the scientific environment of `scripts/python-env.sh`).
fn interpreter() -> PathBuf {
    let (config, _) = earthverse_tool_registry::PythonConfig::discover(None);
    config.interpreter
}

fn replay(extra: &[&str]) -> (Value, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .args(["tools", "replay"])
        .arg(root().join("fixtures/release"))
        .arg("--runs")
        .arg(root().join("fixtures/python-replay/trajectories"))
        .arg("--python")
        .arg(interpreter())
        .args(extra)
        .env_remove("EARTHVERSE_SANDBOX_HELPER")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}

#[test]
fn replayed_python_calls_are_identical_or_explained_by_category() {
    let (report, stderr) = replay(&["--json", "--python-wall-seconds", "3"]);
    assert!(!stderr.contains("lacks numpy"), "{stderr}");
    let p = &report["python_exec"];
    assert_eq!(p["runs"], 1, "{p}");
    assert_eq!(p["calls"], 13, "{p}");
    // Step 13's code is recorded only as a cut preview.
    assert_eq!(p["compared"], 12, "{p}");
    assert_eq!(p["skipped"][0]["step"], 13);
    assert_eq!(
        p["skipped"][0]["reason"],
        "code recorded only as a cut preview"
    );
    // Steps 1-3 agree (3 after setting the wrapper's frames aside).
    assert_eq!(p["identical"], 3, "{p:#}");
    assert_eq!(p["identical_normalised"]["traceback_frames"], 1);
    let category = |step: u64| -> String {
        p["differing"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["step"] == step)
            .unwrap_or_else(|| panic!("step {step} is not among the differences: {p:#}"))
            ["category"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let expected = [
        (4, "reference_refusal"),
        (5, "sandbox_refusal"),
        (6, "file_absent"),
        (7, "library_missing"),
        (8, "library_version"),
        (9, "platform"),
        (10, "nondeterminism_address"),
        (11, "nondeterminism_time_random"),
        (12, "timeout"),
    ];
    for (step, want) in expected {
        assert_eq!(category(step), want, "step {step}");
    }
    // Refused by the authors' harness and absent inputs are not comparable.
    assert_eq!(p["comparable"], 10, "{p}");
    for (name, n) in p["categories"].as_object().unwrap() {
        let listed = expected.iter().filter(|(_, c)| c == name).count();
        assert_eq!(n.as_u64().unwrap() as usize, listed, "{name}");
    }
    // The file tools' replay still runs beside it, and python_exec is no
    // longer among its skipped calls.
    assert!(report["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["tool"] != "python_exec"));
}

#[test]
fn a_missing_interpreter_is_named() {
    let out = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .args(["tools", "replay"])
        .arg(root().join("fixtures/release"))
        .args(["--python", "/nonexistent/venv/bin/python"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--python /nonexistent/venv/bin/python"),
        "{stderr}"
    );
}
