//! Start-up cost of one `python_exec` call: the OS sandbox (bubblewrap, the
//! helper's rlimits, Landlock and seccomp) plus the interpreter plus
//! `import numpy, pandas`, against the same interpreter started plainly
//! (`python -I -c 'import numpy, pandas'`) in the same run, alternating the
//! two so that machine load hits both alike. Target: ratio <= 1.3.
//!
//! The interpreter is the scientific environment `earthverse run` uses
//! (`EARTHVERSE_PYTHON`, else the one `scripts/python-env.sh` makes); the
//! bench fails if it lacks numpy or pandas. This bench binary is its own
//! sandbox helper (its `main` starts with `run_helper_if_invoked`), exactly
//! as the `earthverse` binary is.
//!
//! With `EARTHVERSE_BIN` set to an `earthverse` binary (e.g. the release
//! build with `--features full`, which links GDAL and NetCDF), it also times
//! the whole command a user types, `earthverse tools call python_exec`
//! (process start, the interpreter probe, the sandboxed call, with that
//! binary as its own helper), against the same plain start-up.
//!
//! Run: `scripts/python-env.sh && cargo bench -p earthverse-benches --bench python_start`
//! (`ROUNDS=N` sets the number of alternating rounds, default 15).
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use earthverse_tool_registry::sandbox::{probe_environment, HelperCommand, PythonConfig};
use earthverse_tool_registry::{CallStatus, Registry, ResearchToolsConfig, ToolContext};
use serde_json::json;
use std::time::{Duration, Instant};

const CODE: &str = "import numpy, pandas";

fn main() {
    earthverse_tool_registry::sandbox::run_helper_if_invoked();
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let (config, source) = PythonConfig::discover(None);
    let env = probe_environment(&config.interpreter, source).expect("probing the interpreter");
    assert!(
        env.has_core_packages(),
        "the bench needs numpy and pandas: {} (run scripts/python-env.sh)",
        env.summary()
    );
    let dir = tempfile::tempdir().unwrap();
    let package = dir.path().join("CSX-001");
    std::fs::create_dir_all(package.join("data")).unwrap();
    std::fs::write(package.join("data/obs.json"), "{}").unwrap();
    let registry = Registry::with_research_tools(ResearchToolsConfig {
        python: config.clone(),
        ..ResearchToolsConfig::default()
    });
    let ctx = ToolContext::new(&package, dir.path().join("scratch"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let sandboxed = || {
        let started = Instant::now();
        let rec = runtime.block_on(registry.call(&ctx, "python_exec", json!({ "code": CODE })));
        let took = started.elapsed();
        assert_eq!(rec.status, CallStatus::Ok, "{}", rec.envelope.output);
        assert!(rec.sandbox.as_ref().is_some_and(|s| s.sandboxed));
        took
    };
    let plain = || {
        let started = Instant::now();
        let status = std::process::Command::new(&config.interpreter)
            .args(["-I", "-c", CODE])
            .status()
            .unwrap();
        let took = started.elapsed();
        assert!(status.success());
        took
    };
    let binary = std::env::var_os("EARTHVERSE_BIN").map(std::path::PathBuf::from);
    // The call as `earthverse run` makes it: that binary re-executed as the
    // helper (with GDAL and NetCDF linked, its own start-up counts).
    let via_binary = binary.as_ref().map(|bin| {
        Registry::with_research_tools(ResearchToolsConfig {
            python: PythonConfig {
                helper: Some(HelperCommand::self_helper(bin)),
                ..config.clone()
            },
            ..ResearchToolsConfig::default()
        })
    });
    let call_via_binary = |registry: &Registry| {
        let started = Instant::now();
        let rec = runtime.block_on(registry.call(&ctx, "python_exec", json!({ "code": CODE })));
        let took = started.elapsed();
        assert_eq!(rec.status, CallStatus::Ok, "{}", rec.envelope.output);
        took
    };
    let whole_command = |bin: &std::path::Path| {
        let started = Instant::now();
        let out = std::process::Command::new(bin)
            .args(["tools", "call", "python_exec", "--package"])
            .arg(&package)
            .arg("--python")
            .arg(&config.interpreter)
            .args(["--args", &json!({ "code": CODE }).to_string()])
            .env_remove("EARTHVERSE_SANDBOX_HELPER")
            .output()
            .unwrap();
        let took = started.elapsed();
        let envelope: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(envelope["ok"], true, "{envelope}");
        took
    };
    // Warm the page cache and the interpreter probe once each.
    sandboxed();
    plain();
    if let Some(bin) = &binary {
        whole_command(bin);
    }
    if let Some(registry) = &via_binary {
        call_via_binary(registry);
    }
    let mut s = Vec::with_capacity(rounds);
    let mut p = Vec::with_capacity(rounds);
    let mut w = Vec::with_capacity(rounds);
    let mut v = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        s.push(sandboxed());
        p.push(plain());
        if let Some(bin) = &binary {
            w.push(whole_command(bin));
        }
        if let Some(registry) = &via_binary {
            v.push(call_via_binary(registry));
        }
    }
    let stats = |v: &mut Vec<Duration>| {
        v.sort();
        (v[v.len() / 2], v[0])
    };
    let (mp, bp) = stats(&mut p);
    println!(
        "python_exec start-up ({}; {rounds} alternating rounds)",
        env.summary()
    );
    let row = |label: &str, (median, best): (Duration, Duration)| {
        println!(
            "  {label:<44} median {:>7.1} ms  best {:>7.1} ms  ratio to plain: median {:>5.2}  best {:>5.2}",
            median.as_secs_f64() * 1e3,
            best.as_secs_f64() * 1e3,
            median.as_secs_f64() / mp.as_secs_f64(),
            best.as_secs_f64() / bp.as_secs_f64()
        );
    };
    row("plain `python -I -c 'import numpy, pandas'`", (mp, bp));
    row("sandboxed python_exec call (in process)", stats(&mut s));
    if !v.is_empty() {
        row("sandboxed call, `earthverse` as its helper", stats(&mut v));
    }
    if let Some(bin) = &binary {
        row(
            &format!("`earthverse tools call python_exec` ({})", bin.display()),
            stats(&mut w),
        );
    }
    println!("  target: sandboxed call <= 1.3x plain");
}
