//! The research tools on a small package built here: reference outputs,
//! hidden artifacts, and the extended reading of content-sniffed text.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_tool_registry::{CallStatus, ReadMode, Registry, ResearchToolsConfig, ToolContext};
use serde_json::{json, Value};

fn package() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("CSX-042");
    std::fs::create_dir_all(root.join("data/reports")).unwrap();
    std::fs::create_dir_all(root.join("data/a-b")).unwrap();
    std::fs::write(
        root.join("data/reports/r1.html"),
        "<html>\n  <p>Peak GUST of 41 m/s at the coast</p>\n</html>\n",
    )
    .unwrap();
    std::fs::write(
        root.join("data/reports/r2.json"),
        "{\"gust_ms\": [30.5, 41.0, 12], \"site\": \"coast\"}",
    )
    .unwrap();
    std::fs::write(
        root.join("data/reports/r3.bin"),
        "{\"note\": \"gust report hidden in a bin\"}",
    )
    .unwrap();
    std::fs::write(root.join("data/a-b/x.csv"), "t,v\n1,2.5\n2,3.5\n3,x\n").unwrap();
    std::fs::write(
        root.join("data/table.csv"),
        "day,tmax\n1,30\n2,35.5\n3,33\n",
    )
    .unwrap();
    std::fs::write(root.join("computed_gt.json"), "{\"gust\": 41}").unwrap();
    let img = image::RgbImage::from_fn(4, 2, |x, _| {
        image::Rgb([if x < 2 { 0 } else { 200 }, 100, 50])
    });
    img.save(root.join("data/pic.png")).unwrap();
    let ctx = ToolContext::new(&root, dir.path().join("scratch"));
    (dir, ctx)
}

async fn call(
    registry: &Registry,
    ctx: &ToolContext,
    tool: &str,
    args: Value,
) -> earthverse_tool_registry::CallRecord {
    registry.call(ctx, tool, args).await
}

#[tokio::test]
async fn reference_outputs() {
    let (_d, ctx) = package();
    let r = Registry::with_research_tools(ResearchToolsConfig::reference());
    let list = call(&r, &ctx, "list_package_files", json!({"max_files": "3"})).await;
    assert_eq!(list.args, json!({"max_files": 3, "subdir": "."}));
    let out = &list.envelope.output;
    assert_eq!(out["file_count_total"], 6, "hidden artifact not listed");
    assert_eq!(out["file_count_returned"], 3);
    assert_eq!(out["truncated_extra_files"], 3);
    // Python Path order: data/a-b/ sorts before data/pic.png and data/reports.
    assert_eq!(out["files"][0]["package_relative_path"], "data/a-b/x.csv");
    assert_eq!(
        out["files"][0]["path"],
        "event_packages/standard_event_packages/packages/CSX-042/data/a-b/x.csv"
    );
    assert_eq!(out["files"][0]["suffix"], ".csv");

    let read = call(
        &r,
        &ctx,
        "read_text_file",
        json!({"path": "data/reports/r1.html", "max_chars": 10}),
    )
    .await;
    assert_eq!(
        read.envelope.output["text"],
        "<html>\n  <\n...[TRUNCATED]..."
    );
    let bin = call(
        &r,
        &ctx,
        "read_text_file",
        json!({"path": "data/reports/r3.bin"}),
    )
    .await;
    assert_eq!(
        bin.envelope.output,
        json!("not a text-supported suffix: .bin")
    );
    assert_eq!(bin.envelope.warnings, vec!["binary or image file"]);
    let hidden = call(
        &r,
        &ctx,
        "read_text_file",
        json!({"path": "computed_gt.json"}),
    )
    .await;
    assert_eq!(hidden.status, CallStatus::ExecutionError);
    assert!(hidden.envelope.output["error"]
        .as_str()
        .unwrap()
        .contains("path outside allowed"));
    let missing = call(
        &r,
        &ctx,
        "read_text_file",
        json!({"path": "data/nope.json"}),
    )
    .await;
    assert_eq!(
        missing.envelope.output,
        json!("file not found: data/nope.json")
    );

    let search = call(
        &r,
        &ctx,
        "search_package_files",
        json!({"query": "gust COAST"}),
    )
    .await;
    let m = &search.envelope.output["matches"];
    assert_eq!(search.envelope.output["match_count"], 2, "{m}");
    assert_eq!(m[0]["snippet"], "<p>Peak GUST of 41 m/s at the coast</p>");
    assert_eq!(
        m[1]["snippet"],
        "{\"gust_ms\": [30.5, 41.0, 12], \"site\": \"coast\"}"
    );
    let none = call(
        &r,
        &ctx,
        "search_package_files",
        json!({"query": "gust", "glob": "*.html"}),
    )
    .await;
    assert_eq!(
        none.envelope.output["match_count"], 0,
        "*.html is not recursive in pathlib"
    );
    let empty = call(&r, &ctx, "search_package_files", json!({})).await;
    assert_eq!(empty.envelope.output, json!("query is required"));

    let json_sum = call(
        &r,
        &ctx,
        "summarize_table_or_json",
        json!({"path": "data/reports/r2.json"}),
    )
    .await;
    let o = &json_sum.envelope.output;
    assert_eq!(
        o["shape"],
        json!({"gust_ms": {"type": "list", "length": 3, "sample": "float"}, "site": "str"})
    );
    assert_eq!(
        o["numeric_list_summaries"]["gust_ms"],
        json!({"count": 3, "min": 12.0, "max": 41.0, "mean": 27.833333333333332, "p95": 30.5})
    );
    let csv = call(
        &r,
        &ctx,
        "summarize_table_or_json",
        json!({"path": "data/table.csv"}),
    )
    .await;
    assert_eq!(csv.envelope.output["rows"], 3);
    assert_eq!(
        csv.envelope.output["numeric_summaries"]["tmax"]["max"],
        35.5
    );

    let img = call(&r, &ctx, "inspect_image", json!({"path": "data/pic.png"})).await;
    let o = &img.envelope.output;
    assert_eq!(
        (
            o["format"].as_str(),
            o["mode"].as_str(),
            o["width"].as_u64(),
            o["height"].as_u64()
        ),
        (Some("PNG"), Some("RGB"), Some(4), Some(2))
    );
    assert_eq!(o["rgb_mean"], json!([100.0, 100.0, 50.0]));
    assert_eq!(o["rgb_stddev"], json!([100.0, 0.0, 0.0]));

    let unknown = call(&r, &ctx, "no_such_tool", json!({})).await;
    assert_eq!(unknown.status, CallStatus::ExecutionError);
    let bad = call(
        &r,
        &ctx,
        "read_text_file",
        json!({"path": 5, "max_chars": "many"}),
    )
    .await;
    assert_eq!(bad.status, CallStatus::ExecutionError);
    assert!(bad.error.unwrap().contains("invalid arguments"));
}

#[tokio::test]
async fn extended_mode_reads_sniffed_text() {
    let (_d, ctx) = package();
    let config = ResearchToolsConfig {
        read_mode: ReadMode::Extended,
        ..ResearchToolsConfig::default()
    };
    let r = Registry::with_research_tools(config);
    let bin = call(
        &r,
        &ctx,
        "read_text_file",
        json!({"path": "data/reports/r3.bin"}),
    )
    .await;
    assert_eq!(bin.status, CallStatus::Ok);
    assert_eq!(
        bin.envelope.output["text"],
        "{\"note\": \"gust report hidden in a bin\"}"
    );
    assert!(bin.envelope.warnings[0].contains("sniffed as json"));
    let search = call(&r, &ctx, "search_package_files", json!({"query": "gust"})).await;
    assert_eq!(search.envelope.output["match_count"], 3);
}

#[tokio::test]
async fn observation_is_capped_but_record_whole() {
    let (_d, ctx) = package();
    let root = ctx.package_root.clone();
    std::fs::write(root.join("data/big.txt"), "y".repeat(30_000)).unwrap();
    let r = Registry::with_research_tools(ResearchToolsConfig::reference());
    let rec = call(
        &r,
        &ctx,
        "read_text_file",
        json!({"path": "data/big.txt", "max_chars": 20000}),
    )
    .await;
    assert_eq!(
        rec.envelope.output["text"]
            .as_str()
            .unwrap()
            .chars()
            .count(),
        20_000 + 18
    );
    assert!(rec.observation.ends_with("\n...[TRUNCATED]..."));
    assert_eq!(rec.observation.chars().count(), 12_000 + 18);
}
