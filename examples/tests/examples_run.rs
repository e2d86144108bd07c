//! Runs every example binary on the bundled fixtures and checks what it
//! prints against values computed here from the fixtures through the
//! library (and, where possible, independently of it).
//!
//! `cargo test` builds the examples before running tests; when a binary is
//! missing (e.g. `cargo test --test examples_run`) this test builds them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_examples::judge::AllOrNothingJudge;
use earthverse_examples::scoring::{
    deterministic_judge, format_delta, format_leaderboard, leaderboard_of, paired_core,
    recorded_runs_dir, score_runs,
};
use earthverse_examples::{block_on, fixture_release};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

const EXAMPLES: [&str; 6] = [
    "score_recorded_runs",
    "custom_tool",
    "custom_provider",
    "custom_controller",
    "custom_judge",
    "paired_comparison",
];

fn examples_dir() -> PathBuf {
    // target/<profile>/deps/examples_run-HASH -> target/<profile>/examples
    let exe = std::env::current_exe().expect("test executable path");
    exe.parent()
        .and_then(|deps| deps.parent())
        .expect("target profile dir")
        .join("examples")
}

fn ensure_built() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let missing = EXAMPLES
            .iter()
            .any(|name| !examples_dir().join(name).is_file());
        if missing {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = Command::new(cargo)
                .args(["build", "-p", "earthverse-examples", "--examples"])
                .status()
                .expect("running cargo build --examples");
            assert!(status.success(), "building the examples failed");
        }
    });
}

fn run_example(name: &str) -> String {
    ensure_built();
    let out = Command::new(examples_dir().join(name))
        .arg(fixture_release())
        .output()
        .unwrap_or_else(|e| panic!("running example {name}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "example {name} failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn read_json(path: PathBuf) -> Value {
    serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json")
}

#[test]
fn score_recorded_runs_prints_the_leaderboard_of_the_recorded_runs() {
    let release = fixture_release();
    let records = block_on(score_runs(
        &release,
        &recorded_runs_dir(&release),
        &deterministic_judge(),
    ))
    .expect("runtime")
    .expect("scoring");
    let rows = leaderboard_of(&records).expect("leaderboard");
    let stdout = run_example("score_recorded_runs");
    assert!(stdout.contains(&format!("scored {} recorded runs", records.len())));
    assert!(stdout.contains(&format_leaderboard(&rows)), "{stdout}");

    // Independently: the ranking agrees with the published scores stored
    // in the recorded runs (mean of `scores.overall` per system).
    let mut published: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for dir in std::fs::read_dir(recorded_runs_dir(&release)).expect("runs dir") {
        let dir = dir.expect("entry").path();
        for file in std::fs::read_dir(&dir).expect("system dir") {
            let run = read_json(file.expect("entry").path());
            let system = run["model_id"].as_str().expect("model_id").to_owned();
            let overall = run["scores"]["overall"].as_f64().unwrap_or(0.0);
            published.entry(system).or_default().push(overall);
        }
    }
    let runs: usize = published.values().map(Vec::len).sum();
    assert_eq!(runs, records.len());
    let mut order: Vec<(String, f64)> = published
        .into_iter()
        .map(|(s, v)| (s, v.iter().sum::<f64>() / v.len() as f64))
        .collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1));
    let ours: Vec<&str> = rows.iter().map(|r| r.system.as_str()).collect();
    let theirs: Vec<&str> = order.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(ours, theirs);
}

/// Peak, rows ≥ threshold and load of `column`, parsed here without the
/// example's code.
fn csv_exceedance(column: &str, threshold: f64) -> (usize, usize, f64, f64) {
    let path = fixture_release().join(
        "packages/event_packages/standard_event_packages/packages/FIX-001/data/physical_hazard/physical_hazard_001_station_daily_temperature.csv",
    );
    let text = std::fs::read_to_string(path).expect("csv");
    let mut rdr = text.lines();
    let header: Vec<&str> = rdr.next().expect("header").split(',').collect();
    let i = header.iter().position(|h| *h == column).expect("column");
    let values: Vec<f64> = rdr
        .map(|l| l.split(',').nth(i).expect("cell").parse().expect("number"))
        .collect();
    let above = values.iter().filter(|v| **v >= threshold).count();
    let peak = values.iter().copied().fold(f64::MIN, f64::max);
    let load: f64 = values.iter().map(|v| (v - threshold).max(0.0)).sum();
    (values.len(), above, peak, (load * 10.0).round() / 10.0)
}

#[test]
fn custom_tool_computes_from_the_package_and_refuses_unsupported_calls() {
    let (records, above, peak, load) = csv_exceedance("tmax_c", 35.0);
    let stdout = run_example("custom_tool");
    let line = |prefix: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line in {stdout}"))
            .to_owned()
    };
    assert!(stdout.contains("registry holds 7 tools"), "{stdout}"); // six research tools + ours
    let ok = line("tmax_c >= 35:");
    assert!(ok.contains("status=Ok"), "{ok}");
    assert!(ok.contains(&format!("\"records\":{records}")), "{ok}");
    assert!(
        ok.contains(&format!("\"days_at_or_above\":{above}")),
        "{ok}"
    );
    assert!(ok.contains(&format!("\"peak\":{peak}")), "{ok}");
    assert!(ok.contains(&format!("\"load\":{load}")), "{ok}");
    assert!(
        ok.contains("\"min_records\":3"),
        "schema default filled: {ok}"
    );
    assert!(line("missing column:").contains("status=NotApplicable"));
    let short = line("record too short:");
    assert!(short.contains("status=NotApplicable"), "{short}");
    assert!(short.contains(&format!("\"have\":{records}")), "{short}");
    assert!(line("bad arguments:").contains("status=ExecutionError"));
}

#[test]
fn custom_provider_answers_the_heat_ledger_as_the_ground_truth_says() {
    let stdout = run_example("custom_provider");
    assert!(
        stdout.contains("run_status=ok termination=model_final tool_calls=3 model_rounds=4"),
        "{stdout}"
    );
    let answer: Value = serde_json::from_str(
        stdout
            .lines()
            .find_map(|l| l.strip_prefix("final_answer="))
            .expect("final_answer line"),
    )
    .expect("answer json");
    let task = read_json(fixture_release().join("tasks/FIX-001_Q1.json"));
    let gt = &task["ground_truth"]["primary_gt"];
    for key in [
        "days_tmax_ge_35c",
        "event_window",
        "heat_load_gt35c_c_days",
        "hottest_3day_window",
        "peak_tmax_c",
        "peak_tmax_date",
        "suspect_qc_dates",
        "warm_nights_tmin_ge_23c",
    ] {
        assert_eq!(answer[key], gt[key], "{key}");
    }
    assert!(stdout.contains("score: U=100.0"), "{stdout}");
}

#[test]
fn custom_controller_record_scores_the_same_from_memory_and_disk() {
    let stdout = run_example("custom_controller");
    let path = stdout
        .lines()
        .find_map(|l| l.strip_prefix("wrote "))
        .and_then(|l| l.split(" (").next())
        .expect("wrote line");
    let trajectory = read_json(PathBuf::from(path));
    assert_eq!(trajectory["task_id"], "FIX-001_Q1");
    assert_eq!(trajectory["diagnostics"]["run_status"], "ok");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("in memory:"))
        .expect("score line");
    let cores: Vec<&str> = line.split("Core=").skip(1).collect();
    assert_eq!(cores.len(), 2, "{line}");
    assert_eq!(cores[0].trim_end_matches("; from disk: "), cores[1]);
    assert!(stdout.contains("my-own-loop"));
    if let Some(dir) = PathBuf::from(path).ancestors().nth(4) {
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[test]
fn custom_judge_scores_differently_from_the_deterministic_judge() {
    let release = fixture_release();
    let runs = recorded_runs_dir(&release);
    let ours = block_on(score_runs(&release, &runs, &AllOrNothingJudge))
        .expect("runtime")
        .expect("scoring");
    assert!(ours.iter().all(|r| r.judge == "all-or-nothing-v1"));
    // H is 100 exactly when U is 100, else 0.
    for r in &ours {
        let expected = if r.unit_accuracy >= 100.0 { 100.0 } else { 0.0 };
        assert_eq!(r.answer_correctness_score, expected, "{}", r.task_id);
    }
    let stdout = run_example("custom_judge");
    assert!(stdout.contains(&format_leaderboard(&leaderboard_of(&ours).expect("rows"))));
}

#[test]
fn paired_comparison_prints_the_paired_bootstrap_delta() {
    let release = fixture_release();
    let records = block_on(score_runs(
        &release,
        &recorded_runs_dir(&release),
        &deterministic_judge(),
    ))
    .expect("runtime")
    .expect("scoring");
    let rows = leaderboard_of(&records).expect("rows");
    let delta = paired_core(&records, &rows[0].system, &rows[1].system).expect("delta");
    assert!((delta.delta - (rows[0].core - rows[1].core)).abs() < 1e-9);
    assert!(delta.ci_low <= delta.delta && delta.delta <= delta.ci_high);
    let stdout = run_example("paired_comparison");
    assert_eq!(stdout.trim_end(), format_delta(&delta));
}
