//! `earthverse run --require-suite`: the professional-environment condition
//! of App. A.4 refuses a final answer until enough specialist calls of the
//! named suite have succeeded; the baseline agent never makes them, so its
//! run is forced to finalise at the turn limit instead of ending on its own.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

fn release() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

fn run(extra: &[&str], out: &std::path::Path) -> serde_json::Value {
    let status = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .arg("run")
        .arg(release())
        .args([
            "--agent",
            "baseline",
            "--tasks",
            "FIX-001_Q1",
            "--quiet",
            "--max-turns",
            "8",
            "--out",
        ])
        .arg(out)
        .args(extra)
        .status()
        .unwrap();
    assert!(status.success());
    let path = out.join("baseline/FIX-001_Q1/trajectory.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn a_required_suite_refuses_early_final_answers() {
    let dir = tempfile::tempdir().unwrap();
    let free = run(&[], &dir.path().join("free"));
    assert_eq!(free["diagnostics"]["termination_reason"], "model_final");
    // The former name `xclim_like` is an alias of `native_indices`: the
    // record names the suite as it is now.
    for (name, out) in [("native_indices", "required"), ("xclim_like", "alias")] {
        let required = run(&["--require-suite", name], &dir.path().join(out));
        let reason = required["diagnostics"]["termination_reason"]
            .as_str()
            .unwrap();
        assert!(reason.starts_with("round_limit"), "{reason}");
        assert_eq!(required["required_tools"]["label"], "native_indices");
    }
}

#[test]
fn an_unknown_suite_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .arg("run")
        .arg(release())
        .args([
            "--agent",
            "baseline",
            "--quiet",
            "--require-suite",
            "nope",
            "--out",
        ])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown suite `nope`") && err.contains("native_indices"),
        "{err}"
    );
}

/// A scientific environment that is not installed is refused before any
/// task runs, with what is missing and how to install it (issue 46): with
/// an empty `PATH`, CDO's binaries are missing, and so is Julia's.
#[test]
fn a_missing_environment_is_refused_with_the_install_hint() {
    let dir = tempfile::tempdir().unwrap();
    let empty = tempfile::tempdir().unwrap();
    for (name, missing, hint) in [
        ("cdo", "`cdo` is not on PATH", "scripts/bootstrap.sh"),
        ("julia", "`julia` is not on PATH", "juliaup"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_earthverse"))
            .arg("run")
            .arg(release())
            .args([
                "--agent",
                "baseline",
                "--quiet",
                "--require-environment",
                name,
                "--out",
            ])
            .arg(dir.path().join(name))
            .env("PATH", empty.path())
            .output()
            .unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("is not available") && err.contains(missing) && err.contains(hint),
            "{err}"
        );
        assert!(
            !dir.path().join(name).exists(),
            "a refused run leaves nothing"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .arg("run")
        .arg(release())
        .args([
            "--agent",
            "baseline",
            "--quiet",
            "--require-environment",
            "nope",
            "--out",
        ])
        .arg(dir.path().join("nope"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown scientific environment `nope`") && err.contains("r-climate"),
        "{err}"
    );
}
