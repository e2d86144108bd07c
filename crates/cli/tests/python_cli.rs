//! `python_exec` out of the box: the `earthverse` binary is its own sandbox
//! helper (a copy of the binary alone in a directory still runs Python in
//! the sandbox), a missing interpreter or helper is a refusal that names
//! it and never an unsandboxed run, and `earthverse run` records the
//! interpreter and its library versions in every run record. Only the
//! standard library is imported here; the numpy/pandas checks are in
//! `tests/python_scientific.rs` (feature `scientific-python`).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn release() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

fn package() -> PathBuf {
    release().join("packages/event_packages/standard_event_packages/packages/FIX-001")
}

/// The real interpreter behind `python3` (pyenv shims are shell scripts).
fn system_python() -> PathBuf {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 must be installed for the python_exec tests");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// `earthverse` with no helper or interpreter hints from the environment.
fn earthverse(binary: &Path) -> Command {
    let mut cmd = Command::new(binary);
    cmd.env_remove("EARTHVERSE_SANDBOX_HELPER")
        .env_remove("EARTHVERSE_PYTHON");
    cmd
}

fn call_python(binary: &Path, code: &str, extra: &[&str], scratch: &Path) -> Output {
    earthverse(binary)
        .args(["tools", "call", "python_exec", "--record", "--package"])
        .arg(package())
        .arg("--scratch")
        .arg(scratch)
        .args(["--args", &serde_json::json!({ "code": code }).to_string()])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_lone_copy_of_the_binary_runs_python_in_its_own_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let lone = dir.path().join("bin/earthverse");
    std::fs::create_dir_all(lone.parent().unwrap()).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_earthverse"), &lone).unwrap();
    let python = system_python();
    let code = "import json\n\
                anchor = json.load(open('data/event_reports/event_reports_001_Locked_event_anchor.bin'))\n\
                print(anchor['package_id'], anchor['temporal_window']['start_date'])\n";
    let out = call_python(
        &lone,
        code,
        &["--python", python.to_str().unwrap()],
        &dir.path().join("scratch"),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let record: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["status"], "ok", "{record}");
    assert_eq!(
        record["envelope"]["output"]["stdout"],
        "FIX-001 2019-07-22\n"
    );
    let sandbox = &record["sandbox"];
    assert_eq!(sandbox["sandboxed"], true, "{sandbox}");
    let protections: Vec<&str> = sandbox["protections"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let helper = format!(
        "helper: {} (the running program, re-executed)",
        lone.canonicalize().unwrap().display()
    );
    assert!(protections.contains(&helper.as_str()), "{protections:?}");
    assert!(
        protections
            .iter()
            .any(|p| p.starts_with("landlock: fully enforced")),
        "{protections:?}"
    );
    assert!(
        protections.iter().any(|p| p.starts_with("seccomp:")),
        "{protections:?}"
    );
}

#[test]
fn a_missing_interpreter_or_helper_is_refused_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("scratch");
    let code = "open('/scratch/ran.txt', 'w').write('ran')\n";
    let binary = Path::new(env!("CARGO_BIN_EXE_earthverse"));

    // An interpreter that does not exist: the command stops before any call.
    let out = call_python(
        binary,
        code,
        &["--python", "/nonexistent/python3"],
        &scratch,
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--python") && stderr.contains("/nonexistent/python3"),
        "{stderr}"
    );
    assert!(!scratch.join("ran.txt").exists());

    // A helper named by the environment that does not exist: the call is
    // refused with the reason, and the code never runs.
    let python = system_python();
    let out = earthverse(binary)
        .env(
            "EARTHVERSE_SANDBOX_HELPER",
            "/nonexistent/earthverse-sandbox",
        )
        .args(["tools", "call", "python_exec", "--record", "--package"])
        .arg(package())
        .arg("--scratch")
        .arg(&scratch)
        .args(["--python", python.to_str().unwrap()])
        .args(["--args", &serde_json::json!({ "code": code }).to_string()])
        .output()
        .unwrap();
    let record: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(record["status"], "execution_error", "{record}");
    let refused = record["sandbox"]["refused"].as_str().unwrap_or("");
    assert!(
        refused.contains("/nonexistent/earthverse-sandbox"),
        "{record}"
    );
    assert_eq!(record["sandbox"]["sandboxed"], false);
    assert!(record["sandbox"]["opt_out"].is_null());
    assert!(!scratch.join("ran.txt").exists(), "the code ran");
}

#[test]
fn run_records_the_interpreter_and_says_once_what_it_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let python = system_python();
    let out = earthverse(Path::new(env!("CARGO_BIN_EXE_earthverse")))
        .arg("run")
        .arg(release())
        .args(["--agent", "baseline", "--quiet", "--out"])
        .arg(dir.path())
        .args(["--python", python.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // What the interpreter itself says it has.
    let probe = Command::new(&python)
        .args([
            "-I",
            "-c",
            "import platform, importlib.util as u; print(platform.python_version(), \
             bool(u.find_spec('numpy')), bool(u.find_spec('pandas')))",
        ])
        .output()
        .unwrap();
    let probe = String::from_utf8_lossy(&probe.stdout);
    let fields: Vec<&str> = probe.split_whitespace().collect();
    let (version, has_numpy, has_pandas) = (fields[0], fields[1] == "True", fields[2] == "True");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let notes = stderr.matches("note: python_exec will run").count();
    assert_eq!(notes, usize::from(!(has_numpy && has_pandas)), "{stderr}");
    if !has_numpy {
        assert!(stderr.contains("lacks numpy"), "{stderr}");
        assert!(stderr.contains("scripts/python-env.sh"), "{stderr}");
    }
    let mut records = 0;
    for entry in walk(dir.path()) {
        if entry.file_name().and_then(|n| n.to_str()) != Some("trajectory.json") {
            continue;
        }
        records += 1;
        let t: Value = serde_json::from_slice(&std::fs::read(&entry).unwrap()).unwrap();
        let env = &t["environment"]["python"];
        assert_eq!(env["interpreter"], python.to_str().unwrap(), "{env}");
        assert_eq!(env["source"], "explicit");
        assert_eq!(env["python_version"], version);
        assert_eq!(env["packages"]["numpy"].is_string(), has_numpy, "{env}");
        assert_eq!(env["packages"]["pandas"].is_string(), has_pandas, "{env}");
    }
    assert_eq!(records, 6, "one record per fixture task");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}
