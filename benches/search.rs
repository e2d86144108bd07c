//! Benchmark of `search_package_files` (issue 4) beside ripgrep and the
//! reference Python implementation in the same run, plus the start-up
//! overhead of the Python sandbox beyond Python's own start-up.
//!
//! ```text
//! cargo build --release -p earthverse-tool-registry --bin earthverse-sandbox
//! cargo bench -p earthverse-benches --bench search
//! ```
//! Reads the dev slice from `EARTHVERSE_DATA` (default
//! `../shared/earthverse-dev/data`); prints a note and exits when absent.

use earthverse_tool_registry::research::{
    clear_window_cache, search_package, ReadMode, SearchRequest,
};
use earthverse_tool_registry::{PythonConfig, Registry, ResearchToolsConfig, ToolContext};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const ONE_PACKAGE: &str = "CSX-001";
const QUERY: &str = "precipitation";
const TEXT_GLOB: &str = "*.{json,csv,md,txt,html,htm,xml,geojson,yml,yaml}";

fn data_dir() -> PathBuf {
    std::env::var_os("EARTHVERSE_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/earthverse-dev/data")
        })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// `min / median / max` of samples.
fn spread(v: &[f64]) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("{min:8.2} / {:8.2} / {max:8.2}", median(v.to_vec()))
}

fn time_n(n: usize, mut f: impl FnMut()) -> f64 {
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f();
        samples.push(ms(t.elapsed()));
    }
    median(samples)
}

fn ours_all(packages: &[PathBuf], request: &SearchRequest) -> usize {
    packages
        .iter()
        .map(|p| {
            let ctx = ToolContext::new(p, std::env::temp_dir());
            search_package(&ctx, request, ReadMode::Reference).output["match_count"]
                .as_u64()
                .unwrap_or(0) as usize
        })
        .sum()
}

fn text_bytes(dir: &Path) -> u64 {
    walk(dir)
        .iter()
        .filter(|p| {
            let s = p
                .extension()
                .and_then(|e| e.to_str())
                .unwrap_or("")
                .to_lowercase();
            [
                "json", "csv", "md", "txt", "html", "htm", "xml", "geojson", "yml", "yaml",
            ]
            .contains(&s.as_str())
        })
        .filter_map(|p| std::fs::metadata(p).ok().map(|m| m.len()))
        .sum()
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push(p);
                }
            }
        }
    }
    out
}

fn main() {
    let data = data_dir();
    let packages_dir = data.join("packages/event_packages/standard_event_packages/packages");
    if !packages_dir.is_dir() {
        println!(
            "search bench: dev slice not found at {} (set EARTHVERSE_DATA); nothing measured",
            data.display()
        );
        return;
    }
    let mut packages: Vec<PathBuf> = std::fs::read_dir(&packages_dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    packages.sort();
    let one = packages_dir.join(ONE_PACKAGE);
    let one_ctx = ToolContext::new(&one, std::env::temp_dir());
    let request = SearchRequest::new(QUERY);
    println!("search_package_files benchmark, query {QUERY:?}");
    println!(
        "one package {ONE_PACKAGE}: {:.2} MB of text files",
        text_bytes(&one) as f64 / 1e6
    );

    // One package: cold (our window cache emptied; OS page cache warm) and warm.
    let _ = search_package(&one_ctx, &request, ReadMode::Reference);
    let cold = time_n(30, || {
        clear_window_cache();
        let _ = search_package(&one_ctx, &request, ReadMode::Reference);
    });
    let _ = search_package(&one_ctx, &request, ReadMode::Reference);
    let warm = time_n(200, || {
        let _ = search_package(&one_ctx, &request, ReadMode::Reference);
    });
    let rg_one = time_n(30, || {
        let _ = Command::new("rg")
            .args(["-i", "-F", "-l", "-g", TEXT_GLOB, "--", QUERY])
            .arg(&one)
            .output();
    });
    println!("  ours, warm call (window cache hit):     {warm:8.3} ms");
    println!("  ours, cold call (cache emptied):        {cold:8.3} ms");
    println!("  rg -i -F -l (one process per call):     {rg_one:8.3} ms");

    // All packages, cold: ours and ripgrep alternate, round by round, so
    // both see the same load; the spread over the rounds is printed
    // because on a shared machine it is wider than the target's margin.
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10)
        .max(1);
    let total = text_bytes(&packages_dir);
    let all_request = SearchRequest {
        max_matches: 100_000,
        ..SearchRequest::new(QUERY)
    };
    let mut n_ours = 0;
    let mut n_rg = 0;
    // One untimed pass of each first: the OS page cache holds the files.
    let _ = ours_all(&packages, &all_request);
    let _ = Command::new("rg")
        .args(["-i", "-F", "-l", "-g", TEXT_GLOB, "--", QUERY])
        .arg(&packages_dir)
        .output();
    let (mut ours_cold, mut rg_cold, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        clear_window_cache();
        let t = Instant::now();
        n_ours = ours_all(&packages, &all_request);
        let ours = ms(t.elapsed());
        let t = Instant::now();
        let out = Command::new("rg")
            .args(["-i", "-F", "-l", "-g", TEXT_GLOB, "--", QUERY])
            .arg(&packages_dir)
            .output();
        let rg = ms(t.elapsed());
        n_rg = out
            .map(|o| o.stdout.iter().filter(|b| **b == b'\n').count())
            .unwrap_or(0);
        ours_cold.push(ours);
        rg_cold.push(rg);
        ratios.push(ours / rg);
    }
    let all_warm = time_n(5, || {
        n_ours = ours_all(&packages, &all_request);
    });
    let all_cold = median(ours_cold.clone());
    let rg_all = median(rg_cold.clone());
    println!(
        "all {} packages: {:.1} MB of text files; {rounds} alternating rounds (min / median / max)",
        packages.len(),
        total as f64 / 1e6
    );
    println!(
        "  ours, cold (reads <= 300,000 chars/file): {}  ms ({:.2} GB/s of text files at the median) matches {n_ours}",
        spread(&ours_cold),
        total as f64 / all_cold / 1e6
    );
    println!("  ours, warm (median of 5):                 {all_warm:8.1} ms");
    println!(
        "  rg (reads whole files):                   {}  ms ({:.2} GB/s at the median) files {n_rg}",
        spread(&rg_cold),
        total as f64 / rg_all / 1e6
    );
    println!(
        "  ratio ours cold / rg, per round:          {}  x",
        spread(&ratios)
    );

    // The reference Python implementation, in-process timing.
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("search_reference.py");
    match Command::new("python3")
        .arg(&script)
        .arg(&packages_dir)
        .arg(ONE_PACKAGE)
        .arg(QUERY)
        .arg("20")
        .output()
    {
        Ok(out) if out.status.success() => {
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
            let py_one = v["one_package_ms"].as_f64().unwrap_or(f64::NAN);
            let py_all = v["all_packages_ms"].as_f64().unwrap_or(f64::NAN);
            println!("reference Python (in-process): one package {py_one:.3} ms/call, all packages {py_all:.1} ms, matches {}", v["matches_all"]);
            println!(
                "  speed-up one package, warm: {:.1}x; all packages, cold: {:.1}x",
                py_one / warm,
                py_all / all_cold
            );
        }
        Ok(out) => println!(
            "reference Python failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => println!("reference Python not run: {e}"),
    }

    sandbox_overhead(&one);
}

fn sandbox_overhead(package: &Path) {
    let probe = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output();
    let Ok(probe) = probe else {
        println!("python3 not found; sandbox overhead not measured");
        return;
    };
    let python = PathBuf::from(String::from_utf8_lossy(&probe.stdout).trim().to_string());
    let plain = time_n(15, || {
        let _ = Command::new(&python)
            .args(["-I", "-u", "-c", "pass"])
            .output();
    });
    let scratch = std::env::temp_dir().join(format!("earthverse-bench-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&scratch);
    let registry = Registry::with_research_tools(ResearchToolsConfig {
        python: PythonConfig {
            interpreter: python.clone(),
            ..PythonConfig::default()
        },
        ..ResearchToolsConfig::default()
    });
    let ctx = ToolContext::new(package, &scratch);
    let Ok(rt) = tokio::runtime::Runtime::new() else {
        return;
    };
    let first =
        rt.block_on(registry.call(&ctx, "python_exec", serde_json::json!({"code": "pass"})));
    if first.sandbox.as_ref().is_none_or(|s| !s.sandboxed) {
        println!("python sandbox unavailable ({:?}); build the helper: cargo build --release -p earthverse-tool-registry --bin earthverse-sandbox", first.sandbox.and_then(|s| s.refused));
        return;
    }
    let sandboxed = time_n(15, || {
        let _ =
            rt.block_on(registry.call(&ctx, "python_exec", serde_json::json!({"code": "pass"})));
    });
    println!("python start-up: plain {plain:.1} ms, sandboxed python_exec call {sandboxed:.1} ms, sandbox overhead {:.1} ms", sandboxed - plain);
    let _ = std::fs::remove_dir_all(&scratch);
}
