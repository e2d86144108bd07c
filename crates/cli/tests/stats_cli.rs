//! `earthverse leaderboard`, `compare` and `report` end to end on small
//! evaluation-record files written here and on the bundled fixture
//! release's recorded runs.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_earthverse"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "earthverse-stats-cli-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn record(system: &str, task: &str, h: f64, u: f64, p: f64, ok: bool) -> Value {
    let a = h.min(u);
    json!({
        "task_id": task, "system": system, "judge": "deterministic-v1",
        "run_status": if ok { "ok" } else { "error" },
        "answer_correctness_score": h, "llm_rubric_score": p, "unit_accuracy": u,
        "answer_units_correct": u / 10.0, "answer_units_total": 10,
        "answer": a, "core": (a + p) / 2.0, "strict95": u >= 95.0,
        "rubric_points_earned": p / 5.0, "rubric_points_total": 20.0,
        "answer_units": [
            {"unit": "peak_tmax_c", "expected": 35.5, "found": 35.4, "satisfied": true, "note": "abs tol 0.5"},
            {"unit": "window.start", "expected": "2021-06-25", "found": null, "satisfied": false}
        ],
        "rubric_ledger": [
            {"name": "Evidence <selection>", "points_possible": 20.0, "points_earned": p / 5.0}
        ],
        "verdict": "partial", "critical_errors": [], "missing_elements": [], "unsupported_claims": [],
        "rationale": "Window <missing> & units fine.",
        "labels": {"hazard_family": "heat_wave_urban_heat", "difficulty": "L3_process_mechanism_reasoning",
                   "capabilities": ["causal_chain", "quantitative_calculation"]},
        "trajectory": {"model_rounds": 4, "tool_calls": 3, "total_tokens": 120000, "latency_s": 30.0}
    })
}

fn write_jsonl(path: &Path, records: &[Value]) {
    let text: String = records.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{:?} failed: {}",
        cmd,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn sample(dir: &Path) -> PathBuf {
    let path = dir.join("records.jsonl");
    write_jsonl(
        &path,
        &[
            record("alpha", "T1", 100.0, 100.0, 90.0, true),
            record("alpha", "T2", 80.0, 60.0, 70.0, true),
            record("alpha", "T3", 70.0, 96.0, 80.0, true),
            record("beta", "T1", 60.0, 70.0, 60.0, true),
            record("beta", "T2", 50.0, 40.0, 50.0, true),
            record("beta", "T3", 0.0, 0.0, 0.0, false),
        ],
    );
    path
}

#[test]
fn leaderboard_json_parquet_and_jsonl() {
    let dir = scratch("leaderboard");
    let records = sample(&dir);
    let parquet_path = dir.join("rows.parquet");
    let tasks_path = dir.join("tasks.jsonl");
    let out = run_ok(
        bin()
            .arg("leaderboard")
            .arg(&records)
            .arg("--json")
            .arg("--out")
            .arg(&parquet_path)
            .arg("--tasks-out")
            .arg(&tasks_path),
    );
    let doc: Value = serde_json::from_str(&out).unwrap();
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows[0]["system"], "alpha");
    // alpha: A = 100, 60, 70; P = 90, 70, 80; Core = 95, 65, 75.
    let close = |v: &Value, x: f64| assert!((v.as_f64().unwrap() - x).abs() < 1e-9, "{v} != {x}");
    close(&rows[0]["answer"], 230.0 / 3.0);
    close(&rows[0]["core"], 235.0 / 3.0);
    close(&rows[0]["strict95"], 200.0 / 3.0);
    // beta's failed run scores zero and stays in the denominator.
    assert_eq!(rows[1]["runs"], 3);
    assert_eq!(rows[1]["failures"], 1);
    close(&rows[1]["core"], (60.0 + 45.0) / 3.0);
    close(&rows[1]["tokens"], 120_000.0);

    let file = std::fs::File::open(&parquet_path).unwrap();
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<_> = reader.map(Result::unwrap).collect();
    let batch = &batches[0];
    assert_eq!(batch.num_rows(), 2);
    let core = batch
        .column_by_name("core")
        .unwrap()
        .as_any()
        .downcast_ref::<arrow_array::Float64Array>()
        .unwrap();
    assert!((core.value(0) - 235.0 / 3.0).abs() < 1e-9);

    let lines: Vec<Value> = std::fs::read_to_string(&tasks_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 6);
    assert_eq!(lines[0]["difficulty"], "L3");
    assert_eq!(lines[5]["failed"], true);

    let by = run_ok(
        bin()
            .arg("leaderboard")
            .arg(&records)
            .args(["--by", "capability", "--json"]),
    );
    let doc: Value = serde_json::from_str(&by).unwrap();
    assert_eq!(
        doc["slices"]["columns"],
        json!(["causal_chain", "quantitative_calculation"])
    );
}

#[test]
fn compare_is_deterministic_and_pairs_over_common_tasks() {
    let dir = scratch("compare");
    let records = sample(&dir);
    let args = |cmd: &mut Command| {
        cmd.args(["compare", "alpha", "beta", "--json", "--in"])
            .arg(&records);
    };
    let mut first = bin();
    args(&mut first);
    let mut second = bin();
    args(&mut second);
    let (a, b) = (run_ok(&mut first), run_ok(&mut second));
    assert_eq!(a, b, "same seed, same interval");
    let doc: Value = serde_json::from_str(&a).unwrap();
    let pair = &doc["pairs"][0];
    assert_eq!(pair["n_tasks"], 3);
    assert_eq!(pair["resamples"], 5000);
    assert_eq!(pair["seed"], 2026);
    let delta = pair["delta"].as_f64().unwrap();
    assert!((delta - (235.0 - 105.0) / 3.0).abs() < 1e-9);
    assert!(
        pair["ci_low"].as_f64().unwrap() <= delta && delta <= pair["ci_high"].as_f64().unwrap()
    );

    let other = run_ok(
        bin()
            .args(["compare", "alpha", "beta", "--json", "--seed", "7", "--in"])
            .arg(&records),
    );
    assert_ne!(a, other, "another seed draws other resamples");

    // Two files as two conditions.
    let left = dir.join("left.jsonl");
    let right = dir.join("right.jsonl");
    write_jsonl(
        &left,
        &[
            record("m", "T1", 90.0, 90.0, 90.0, true),
            record("m", "T2", 50.0, 50.0, 50.0, true),
        ],
    );
    write_jsonl(
        &right,
        &[
            record("m", "T1", 80.0, 80.0, 80.0, true),
            record("m", "T2", 40.0, 40.0, 40.0, true),
        ],
    );
    let out = run_ok(bin().arg("compare").arg(&left).arg(&right).arg("--json"));
    let doc: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(doc["pairs"][0]["a"], "left");
    assert!((doc["pairs"][0]["delta"].as_f64().unwrap() - 10.0).abs() < 1e-9);

    let bad = bin()
        .args(["compare", "alpha", "nobody", "--in"])
        .arg(&records)
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("nobody"));
}

#[test]
fn compare_counts_wins_ties_and_losses_per_task_within_the_tie_margin() {
    let dir = scratch("compare-wtl");
    let records = dir.join("records.jsonl");
    // alpha's Core per task: 95, 65, 75 (sample()); gamma's: 94.5, 80, 75.
    let mut rows: Vec<Value> = std::fs::read_to_string(sample(&dir))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    rows.extend([
        record("gamma", "T1", 94.5, 94.5, 94.5, true),
        record("gamma", "T2", 80.0, 80.0, 80.0, true),
        record("gamma", "T3", 75.0, 75.0, 75.0, true),
    ]);
    write_jsonl(&records, &rows);
    let shares = |margin: &str| -> Value {
        let out = run_ok(
            bin()
                .args([
                    "compare",
                    "alpha",
                    "gamma",
                    "--json",
                    "--tie-margin",
                    margin,
                    "--in",
                ])
                .arg(&records),
        );
        serde_json::from_str::<Value>(&out).unwrap()["win_tie_loss"].clone()
    };
    // Δ per task: +0.5 (tie within 1), −15 (loss), 0 (tie).
    let w = shares("1");
    assert_eq!(
        (w["wins"].clone(), w["ties"].clone(), w["losses"].clone()),
        (json!(0), json!(2), json!(1))
    );
    assert!((w["tie"].as_f64().unwrap() - 200.0 / 3.0).abs() < 1e-9);
    assert!((w["net"].as_f64().unwrap() + 100.0 / 3.0).abs() < 1e-9);
    // A narrower margin makes +0.5 a win.
    let w = shares("0.25");
    assert_eq!(
        (w["wins"].clone(), w["ties"].clone(), w["losses"].clone()),
        (json!(1), json!(1), json!(1))
    );
    assert_eq!(w["net"], 0.0);
    // The text form prints the same shares after the interval.
    let text = run_ok(
        bin()
            .args(["compare", "alpha", "beta", "--in"])
            .arg(&records),
    );
    assert!(
        text.contains("alpha vs beta: win 100.0%  tie 0.0%  loss 0.0%  net +100.0  (3 wins, 0 ties, 0 losses over 3 paired tasks; tie within 1 points)"),
        "{text}"
    );
}

#[test]
fn report_is_one_self_contained_page_with_plots_and_ledgers() {
    let dir = scratch("report");
    let records = sample(&dir);
    let html_path = dir.join("report.html");
    run_ok(
        bin()
            .arg("report")
            .arg(&records)
            .arg("--html")
            .arg(&html_path),
    );
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert_eq!(
        html.matches("<svg").count(),
        4,
        "landscape, heat map, forest, distribution"
    );
    for id in [
        "leaderboard",
        "landscape",
        "capabilities",
        "forest",
        "distribution",
        "drilldown",
    ] {
        assert!(html.contains(&format!("id=\"{id}\"")), "section {id}");
    }
    assert!(
        html.contains("peak_tmax_c") && html.contains("window.start"),
        "unit ledger"
    );
    assert!(
        html.contains("Evidence &lt;selection&gt;"),
        "rubric ledger, escaped"
    );
    assert!(!html.contains("<missing>"), "text is escaped");
    // Nothing is loaded from elsewhere: the only URL is the SVG namespace.
    let without_ns = html.replace("http://www.w3.org/2000/svg", "");
    assert!(!html.contains("<script") && !without_ns.contains("http") && !html.contains("src="));
}

#[test]
fn leaderboard_from_recorded_fixture_runs() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release");
    let trajectories = root.join("exploration/trajectories");
    let out = run_ok(
        bin()
            .arg("leaderboard")
            .arg("--from-recorded")
            .arg(&trajectories)
            .arg("--json"),
    );
    let doc: Value = serde_json::from_str(&out).unwrap();
    let mut files = 0;
    for system in std::fs::read_dir(&trajectories).unwrap() {
        let system = system.unwrap().path();
        let runs: Vec<Value> = std::fs::read_dir(&system)
            .unwrap()
            .map(|f| serde_json::from_slice(&std::fs::read(f.unwrap().path()).unwrap()).unwrap())
            .collect();
        files += runs.len();
        let name = system.file_name().unwrap().to_str().unwrap();
        let row = doc["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["system"] == name)
            .unwrap();
        let mean = |k: &str| {
            runs.iter()
                .map(|r| r["scores"][k].as_f64().unwrap())
                .sum::<f64>()
                / runs.len() as f64
        };
        assert!(
            (row["answer"].as_f64().unwrap() - mean("answer")).abs() < 1e-9,
            "{name}"
        );
        assert!(
            (row["process"].as_f64().unwrap() - mean("rubric")).abs() < 1e-9,
            "{name}"
        );
    }
    let runs: u64 = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["runs"].as_u64().unwrap())
        .sum();
    assert_eq!(runs as usize, files);
    let missing = bin()
        .args(["leaderboard", "--from-recorded", "/nonexistent/dir"])
        .output()
        .unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/dir"));
}

#[test]
fn prices_give_the_cost_table() {
    let dir = scratch("prices");
    let records = sample(&dir);
    let flat = dir.join("flat.json");
    std::fs::write(&flat, r#"{"alpha": 50.0}"#).unwrap();
    let out = run_ok(
        bin()
            .arg("leaderboard")
            .arg(&records)
            .arg("--json")
            .arg("--prices")
            .arg(&flat),
    );
    let doc: Value = serde_json::from_str(&out).unwrap();
    let cost = &doc["cost"][0];
    assert_eq!(cost["system"], "alpha");
    // 3 runs x 120,000 tokens x 50 USD per million.
    assert!((cost["cost_usd"].as_f64().unwrap() - 18.0).abs() < 1e-9);
    assert_eq!(
        doc["cost"].as_array().unwrap().len(),
        1,
        "beta has no price"
    );
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"alpha": "cheap"}"#).unwrap();
    let out = bin()
        .arg("leaderboard")
        .arg(&records)
        .arg("--prices")
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.json"));
}
