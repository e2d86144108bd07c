//! The standalone `earthverse-sandbox` helper (for programs that cannot
//! start their `main` with `run_helper_if_invoked`): a plan built with it
//! runs Python in the sandbox, Landlock and seccomp in force, hidden names
//! invisible, and the helper's status line reports what it enforced.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_sandbox::{
    locate_helper, plan, probe_interpreter, run_bounded, which, HelperCommand, HelperStatus,
    PythonLimits, SandboxView, HELPER_STATUS_PREFIX,
};
use std::path::{Path, PathBuf};

fn system_python() -> PathBuf {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 must be installed for the sandbox tests");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

#[tokio::test]
async fn the_standalone_helper_runs_python_in_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let package = dir.path().join("CSX-001");
    std::fs::create_dir_all(package.join("data")).unwrap();
    std::fs::write(package.join("data/obs.csv"), "t\n30.5\n35.5\n").unwrap();
    std::fs::write(package.join("data/secret.md"), "42").unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    std::fs::write(
        scratch.join("main.py"),
        "import os, socket\n\
         rows = open('data/obs.csv').read().split()[1:]\n\
         try:\n    hidden = 'revealed' if open('data/secret.md').read() == '42' else 'masked'\n\
         except OSError:\n    hidden = 'masked'\n\
         try:\n    socket.create_connection(('127.0.0.1', 9), timeout=1); net = 'open'\n\
         except OSError:\n    net = 'closed'\n\
         try:\n    os.fork(); forked = 'yes'\n\
         except OSError:\n    forked = 'denied'\n\
         print(max(map(float, rows)), hidden, net, forked)\n",
    )
    .unwrap();

    let configured = HelperCommand::standalone(env!("CARGO_BIN_EXE_earthverse-sandbox"));
    let helper = locate_helper(Some(&configured)).unwrap();
    assert!(
        helper.args.is_empty(),
        "the standalone helper takes no leading argument"
    );
    let info = probe_interpreter(&system_python()).await.unwrap();
    let is_hidden = |name: &str| name == "secret.md";
    let view = SandboxView {
        package_root: &package,
        release_prefix: "event_packages/standard_event_packages/packages/CSX-001",
        scratch: &scratch,
        question: None,
        is_hidden: &is_hidden,
    };
    let bwrap = which(Path::new("bwrap")).expect("bubblewrap must be installed");
    let plan = plan(
        &bwrap,
        &helper,
        &info,
        &PythonLimits::default(),
        &view,
        "/scratch/main.py",
    )
    .unwrap();
    assert!(plan
        .protections
        .iter()
        .any(|p| p.ends_with("(standalone)") && p.contains("earthverse-sandbox")));
    let mut command = tokio::process::Command::new(&plan.bwrap);
    command.args(&plan.args);
    let out = run_bounded(command, &PythonLimits::default())
        .await
        .unwrap();
    assert_eq!(out.status, Some(0), "{out:?}");
    let (status_line, rest) = out
        .stderr
        .strip_prefix(HELPER_STATUS_PREFIX)
        .and_then(|s| s.split_once('\n'))
        .expect("the helper's status line comes first on stderr");
    let status: HelperStatus = serde_json::from_str(status_line).unwrap();
    assert!(status.landlock_enforced, "{status:?}");
    assert!(status.protections.iter().any(|p| p.starts_with("seccomp:")));
    assert_eq!(rest, "");
    // The hidden file is masked by /dev/null, the network and fork fail.
    assert_eq!(out.stdout, "35.5 masked closed denied\n");
}
