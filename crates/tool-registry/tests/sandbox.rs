//! Table-driven escape attempts against the `python_exec` sandbox: each
//! attempt must be contained, and the call record must say which
//! protections were in force. Small limits keep every case to a few seconds.
//!
//! This test binary is its own sandbox helper, as a program embedding
//! `python_exec` would be: its `main` (no libtest harness; libtest-mimic
//! runs the trials) starts with `run_helper_if_invoked`, and no helper path
//! is configured.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_tool_registry::{
    CallStatus, PythonConfig, PythonLimits, Registry, ResearchToolsConfig, ToolContext,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

struct Fixture {
    _dir: tempfile::TempDir,
    package: PathBuf,
    scratch: PathBuf,
    question: PathBuf,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let packages = dir.path().join("packages");
    let package = packages.join("CSX-001");
    std::fs::create_dir_all(package.join("data")).unwrap();
    std::fs::write(
        package.join("data/obs.json"),
        r#"{"tmax": [30.5, 35.5, 33.0]}"#,
    )
    .unwrap();
    std::fs::write(package.join("computed_gt.json"), r#"{"secret": 42}"#).unwrap();
    std::fs::write(package.join("data/solution_en.md"), "the answer is 42").unwrap();
    let other = packages.join("CSX-002");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("secret.json"), "{}").unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("host_secret.txt"), "host secret").unwrap();
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let question = dir.path().join("question.txt");
    std::fs::write(&question, "What was the peak Tmax?").unwrap();
    Fixture {
        _dir: dir,
        package,
        scratch,
        question,
        outside,
    }
}

fn registry() -> Registry {
    let config = ResearchToolsConfig {
        python: PythonConfig {
            interpreter: which_python(),
            limits: PythonLimits {
                wall: Duration::from_secs(4),
                cpu_seconds: 2,
                memory_bytes: 512 << 20,
                file_size_bytes: 1 << 20,
                max_processes: 32,
                max_output_bytes: 1 << 20,
                ..PythonLimits::default()
            },
            ..PythonConfig::default()
        },
        ..ResearchToolsConfig::default()
    };
    Registry::with_research_tools(config)
}

/// The real interpreter behind `python3` (pyenv shims are shell scripts).
fn which_python() -> PathBuf {
    let out = std::process::Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 must be installed for the sandbox tests");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

/// How an attempt must end.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// The code runs and prints `CONTAINED` (it caught the denial itself).
    PrintsContained,
    /// The process is stopped by one of these limits (an infinite loop hits
    /// the CPU limit, or the wall clock first on a loaded machine).
    Limit(&'static [&'static str]),
}

fn attempts(f: &Fixture) -> Vec<(&'static str, String, Expect)> {
    let outside = f.outside.join("host_secret.txt");
    let other = f.package.parent().unwrap().join("CSX-002/secret.json");
    let denied = |name: &'static str, body: &str| {
        (
            name,
            format!("try:\n{}\n    print('ESCAPED')\nexcept Exception as e:\n    print('CONTAINED', type(e).__name__)\n", indent(body)),
            Expect::PrintsContained,
        )
    };
    vec![
        denied("read /etc/passwd", "open('/etc/passwd').read()"),
        denied("read /etc/shadow", "open('/etc/shadow').read()"),
        denied("read hidden artifact at package root", "open('computed_gt.json').read()"),
        denied("read masked hidden artifact in data/", "assert open('data/solution_en.md').read() != 'the answer is 42'; raise PermissionError('masked')"),
        denied("read hidden artifact by release path", "open('event_packages/standard_event_packages/packages/CSX-001/computed_gt.json').read()"),
        denied("read another package", &format!("open({:?}).read()", other.display().to_string())),
        denied("read another package by ..", "open('../packages/CSX-002/secret.json').read()"),
        denied("read host file outside", &format!("open({:?}).read()", outside.display().to_string())),
        denied("read /proc/self/environ", "open('/proc/self/environ').read()"),
        denied("read /proc/1/cmdline of host", "d=open('/proc/1/cmdline').read(); assert 'python' in d or d=='' ; raise PermissionError('own pid namespace')"),
        denied("list /root", "import os; os.listdir('/root')"),
        denied("write into the package", "open('data/new.txt','w').write('x')"),
        denied("write to /usr", "open('/usr/evil','w').write('x')"),
        denied("write outside via /tmp/../", "open('/tmp/../evil','w').write('x')"),
        denied("tcp connect", "import socket; s=socket.create_connection(('1.1.1.1', 80), timeout=1)"),
        denied("tcp localhost bind", "import socket; s=socket.socket(); s.bind(('127.0.0.1', 8080)); s.listen()"),
        denied("udp send", "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('8.8.8.8', 53))"),
        denied("dns lookup", "import socket; socket.getaddrinfo('example.com', 80)"),
        denied("subprocess", "import subprocess; subprocess.run(['/bin/sh','-c','echo hi'], check=True)"),
        denied("os.system", "import os; rc=os.system('echo hi'); assert rc==0"),
        denied("os.execv", "import os; os.execv('/bin/sh', ['sh','-c','echo hi'])"),
        denied("ctypes execve", "import ctypes; libc=ctypes.CDLL(None); rc=libc.execve(b'/bin/sh', None, None); raise OSError(rc)"),
        denied("ctypes mount", "import ctypes; libc=ctypes.CDLL(None, use_errno=True); rc=libc.mount(b'none', b'/tmp', b'tmpfs', 0, None); assert rc==0"),
        denied("kill parent", "import os; os.kill(os.getppid(), 9); import time; time.sleep(0.2); os.kill(1, 0)"),
        denied("write a huge file", "open('/scratch/big','wb').write(b'x'*(8<<20))"),
        ("fork bomb", "import os\nn=0\ntry:\n    while True:\n        pid=os.fork()\n        if pid==0:\n            import time; time.sleep(30)\n        n+=1\nexcept OSError as e:\n    print('CONTAINED', n)\n".into(), Expect::PrintsContained),
        ("10 GB allocation", "x = bytearray(10 * 1024**3)\nprint('ESCAPED')\n".into(), Expect::Limit(&["memory"])),
        ("infinite loop", "while True:\n    pass\n".into(), Expect::Limit(&["cpu", "wall_clock"])),
        ("sleep past the wall clock", "import time\ntime.sleep(60)\n".into(), Expect::Limit(&["wall_clock"])),
        ("huge stdout", "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)\n".into(), Expect::Limit(&["output"])),
    ]
}

fn indent(body: &str) -> String {
    body.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

async fn escape_attempts_are_contained_and_recorded() {
    let f = fixture();
    let registry = registry();
    let ctx = ToolContext::new(&f.package, &f.scratch).with_question_file(&f.question);
    let mut failures = Vec::new();
    let cases = attempts(&f);
    assert!(cases.len() >= 20);
    for (name, code, expect) in cases {
        let rec = registry
            .call(&ctx, "python_exec", json!({ "code": code }))
            .await;
        let report = rec
            .sandbox
            .clone()
            .expect("python_exec records a sandbox report");
        assert!(report.sandboxed, "{name}: not sandboxed: {report:?}");
        assert!(
            report
                .protections
                .iter()
                .any(|p| p.starts_with("landlock: fully enforced")),
            "{name}: {report:?}"
        );
        assert!(
            report
                .protections
                .iter()
                .any(|p| p.contains("network namespace")),
            "{name}: {report:?}"
        );
        assert!(
            report
                .protections
                .iter()
                .any(|p| p.starts_with("rlimit: as=")),
            "{name}: {report:?}"
        );
        let this_binary = std::env::current_exe().unwrap();
        assert!(
            report.protections.iter().any(|p| p
                == &format!(
                    "helper: {} (the running program, re-executed)",
                    this_binary.display()
                )),
            "{name}: the test binary was not its own helper: {report:?}"
        );
        let out = &rec.envelope.output;
        let stdout = out["stdout"].as_str().unwrap_or("");
        let ok = match expect {
            Expect::PrintsContained => stdout.contains("CONTAINED") && !stdout.contains("ESCAPED"),
            Expect::Limit(limit) => {
                report
                    .limit_hit
                    .as_deref()
                    .is_some_and(|l| limit.contains(&l))
                    && !stdout.contains("ESCAPED")
                    && rec.status == CallStatus::ExecutionError
            }
        };
        if !ok {
            failures.push(format!(
                "{name}: expected {expect:?}; limit {:?}; output {}",
                report.limit_hit, out
            ));
        }
        assert!(
            rec.duration < Duration::from_secs(10),
            "{name} took {:?}",
            rec.duration
        );
    }
    // Nothing escaped onto the host.
    assert!(!f.outside.join("../evil").exists());
    assert!(!f.package.join("data/new.txt").exists());
    assert!(
        failures.is_empty(),
        "not contained:\n{}",
        failures.join("\n")
    );
}

async fn sandboxed_python_reads_package_question_and_writes_scratch() {
    let f = fixture();
    let registry = registry();
    let ctx = ToolContext::new(&f.package, &f.scratch)
        .with_question_file(&f.question)
        .with_step(5);
    let code = "import json, os\n\
                a = json.load(open('data/obs.json'))\n\
                b = json.load(open('event_packages/standard_event_packages/packages/CSX-001/data/obs.json'))\n\
                q = open(os.environ['EARTHVERSE_QUESTION']).read()\n\
                open('/scratch/out.txt', 'w').write(str(max(a['tmax'])))\n\
                print(max(a['tmax']), a == b, q)\n";
    let rec = registry
        .call(&ctx, "python_exec", json!({ "code": code }))
        .await;
    assert_eq!(rec.status, CallStatus::Ok, "{}", rec.envelope.output);
    assert_eq!(
        rec.envelope.output["stdout"],
        "35.5 True What was the peak Tmax?\n"
    );
    assert_eq!(rec.envelope.output["returncode"], 0);
    assert!(rec.envelope.output["code_path"]
        .as_str()
        .unwrap()
        .starts_with("python_snippets/step_05_"));
    assert_eq!(
        std::fs::read_to_string(f.scratch.join("out.txt")).unwrap(),
        "35.5"
    );
    let keys: Vec<&str> = rec
        .envelope
        .output
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        ["code_path", "returncode", "latency_s", "stdout", "stderr"]
    );
}

async fn refuses_without_a_sandbox_unless_opted_out() {
    let f = fixture();
    let mut config = ResearchToolsConfig::default();
    config.python.interpreter = which_python();
    config.python.bwrap = PathBuf::from("/nonexistent/bwrap");
    let registry = Registry::with_research_tools(config.clone());
    let ctx = ToolContext::new(&f.package, &f.scratch);
    let rec = registry
        .call(&ctx, "python_exec", json!({"code": "print(1)"}))
        .await;
    assert_eq!(rec.status, CallStatus::ExecutionError);
    assert!(rec
        .sandbox
        .as_ref()
        .and_then(|s| s.refused.as_ref())
        .is_some());
    assert!(!Path::new(&f.scratch).join("nothing").exists());

    config.python.policy = earthverse_tool_registry::SandboxPolicy::Unsandboxed {
        reason: "test opt-out".into(),
    };
    let registry = Registry::with_research_tools(config);
    let rec = registry
        .call(&ctx, "python_exec", json!({"code": "print(6*7)"}))
        .await;
    assert_eq!(rec.status, CallStatus::Ok);
    assert_eq!(rec.envelope.output["stdout"], "42\n");
    let report = rec.sandbox.unwrap();
    assert!(!report.sandboxed);
    assert_eq!(report.opt_out.as_deref(), Some("test opt-out"));
    assert!(rec
        .envelope
        .warnings
        .iter()
        .any(|w| w.contains("without the OS sandbox")));
}

/// A configured helper or interpreter that does not exist is a refusal that
/// names it; the code never runs, sandboxed or not.
async fn missing_helper_or_interpreter_is_refused_never_run_unsandboxed() {
    let f = fixture();
    let code = "open('/scratch/ran.txt', 'w').write('ran')\nprint('RAN')\n";
    let ctx = ToolContext::new(&f.package, &f.scratch);
    for (what, config) in [
        (
            "/nonexistent/earthverse-sandbox",
            PythonConfig {
                interpreter: which_python(),
                helper: Some(
                    earthverse_tool_registry::sandbox::HelperCommand::standalone(
                        "/nonexistent/earthverse-sandbox",
                    ),
                ),
                ..PythonConfig::default()
            },
        ),
        (
            "/nonexistent/python3",
            PythonConfig {
                interpreter: PathBuf::from("/nonexistent/python3"),
                ..PythonConfig::default()
            },
        ),
    ] {
        let registry = Registry::with_research_tools(ResearchToolsConfig {
            python: config,
            ..ResearchToolsConfig::default()
        });
        let rec = registry
            .call(&ctx, "python_exec", json!({ "code": code }))
            .await;
        assert_eq!(rec.status, CallStatus::ExecutionError, "{what}");
        let report = rec.sandbox.clone().unwrap();
        assert!(!report.sandboxed, "{what}: {report:?}");
        assert!(report.opt_out.is_none(), "{what}: {report:?}");
        let refused = report.refused.unwrap_or_default();
        assert!(
            refused.contains(what),
            "{what}: refusal does not name it: {refused}"
        );
        let message = rec.envelope.output["error"].as_str().unwrap_or("");
        assert!(
            message.starts_with("python_exec refused"),
            "{what}: {message}"
        );
        assert!(!f.scratch.join("ran.txt").exists(), "{what}: the code ran");
    }
}

fn main() -> std::process::ExitCode {
    earthverse_tool_registry::sandbox::run_helper_if_invoked();
    let args = libtest_mimic::Arguments::from_args();
    fn trial<F>(name: &'static str, test: fn() -> F) -> libtest_mimic::Trial
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        libtest_mimic::Trial::test(name, move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime.block_on(test());
            Ok(())
        })
    }
    let trials = vec![
        trial(
            "escape_attempts_are_contained_and_recorded",
            escape_attempts_are_contained_and_recorded,
        ),
        trial(
            "sandboxed_python_reads_package_question_and_writes_scratch",
            sandboxed_python_reads_package_question_and_writes_scratch,
        ),
        trial(
            "refuses_without_a_sandbox_unless_opted_out",
            refuses_without_a_sandbox_unless_opted_out,
        ),
        trial(
            "missing_helper_or_interpreter_is_refused_never_run_unsandboxed",
            missing_helper_or_interpreter_is_refused_never_run_unsandboxed,
        ),
    ];
    libtest_mimic::run(&args, trials).exit_code()
}
