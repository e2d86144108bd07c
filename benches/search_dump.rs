//! Dumps the outputs of many `search_package_files` calls, so two builds of
//! the search can be compared byte for byte (`cmp` of the dumps).
//!
//! ```text
//! QUERIES=queries.jsonl cargo bench -p earthverse-benches --bench search_dump > dump.jsonl
//! ```
//! `QUERIES` holds one JSON object a line: `{"package": "CSX-001", "args":
//! {"query": ..., "glob": ..., "max_matches": ...}}` (absent arguments take
//! the tool's defaults). Packages are read from `EARTHVERSE_DATA` (default
//! `../shared/earthverse-dev/data`).
//!
//! Every query runs in four passes, so that each goes through the first,
//! repeated and cache-emptied paths of the window cache: pass 1 and 2 over
//! all queries in order in the default read mode (files searched again
//! from pass 2 on), pass 3 the same after emptying the window cache before
//! every call, pass 4 in the reference read mode. One output line per call:
//! the pass, the query's line number, `ok` and the output JSON.

use earthverse_tool_registry::research::{
    clear_window_cache, search_package, ReadMode, SearchRequest,
};
use earthverse_tool_registry::ToolContext;
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;

fn data_dir() -> PathBuf {
    std::env::var_os("EARTHVERSE_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/earthverse-dev/data")
        })
}

fn main() {
    let Some(queries) = std::env::var_os("QUERIES") else {
        eprintln!("search_dump: set QUERIES to a JSONL file of searches; nothing dumped");
        return;
    };
    let Ok(text) = std::fs::read_to_string(&queries) else {
        eprintln!(
            "search_dump: cannot read {}",
            PathBuf::from(queries).display()
        );
        std::process::exit(1);
    };
    let packages = data_dir().join("packages/event_packages/standard_event_packages/packages");
    let calls: Vec<(ToolContext, SearchRequest)> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|v| {
            let package = v["package"].as_str().unwrap_or("").to_string();
            let args = &v["args"];
            let request = SearchRequest {
                query: args["query"].as_str().unwrap_or("").to_string(),
                glob: args["glob"].as_str().unwrap_or("**/*").to_string(),
                max_matches: args["max_matches"]
                    .as_i64()
                    .map(|m| m.max(0) as usize)
                    .unwrap_or(40),
            };
            (
                ToolContext::new(packages.join(package), std::env::temp_dir()),
                request,
            )
        })
        .collect();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let passes = [
        (1, ReadMode::Extended, false),
        (2, ReadMode::Extended, false),
        (3, ReadMode::Extended, true),
        (4, ReadMode::Reference, false),
    ];
    for (pass, mode, clear) in passes {
        for (i, (ctx, request)) in calls.iter().enumerate() {
            if clear {
                clear_window_cache();
            }
            let result = search_package(ctx, request, mode);
            let line = json!({
                "pass": pass,
                "line": i + 1,
                "ok": result.ok,
                "output": result.output,
                "evidence_files": result.evidence_files,
                "warnings": result.warnings,
            });
            let _ = writeln!(out, "{line}");
        }
    }
    let _ = out.flush();
}
