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

const EXAMPLES: [&str; 7] = [
    "embed_study",
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

fn custom_controller(args: &[&str]) -> (String, std::process::Output) {
    ensure_built();
    let out = Command::new(examples_dir().join("custom_controller"))
        .arg(fixture_release())
        .args(args)
        .output()
        .unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), out)
}

fn summary_line(stdout: &str) -> &str {
    stdout
        .lines()
        .find(|l| l.starts_with("my-own-loop:"))
        .expect("summary line")
}

/// The tasks of the fixture release, sorted.
fn fixture_task_ids() -> Vec<String> {
    let release = earthverse_package_model::Release::load(&fixture_release()).unwrap();
    let mut ids: Vec<String> = release.tasks().iter().map(|t| t.task_id.clone()).collect();
    ids.sort();
    ids
}

fn finished_tasks(system_dir: &std::path::Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(system_dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let bytes = std::fs::read(e.path().join("trajectory.json")).ok()?;
                    Some((e.file_name().to_string_lossy().into_owned(), bytes))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn custom_controller_runs_through_the_batch_runner_and_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let tasks = fixture_task_ids();
    let (first, status) = custom_controller(&["--out", out.to_str().unwrap()]);
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    assert!(
        summary_line(&first).contains(&format!(
            "{n} task(s) in shard; ran {n} ok, 0 error; 0 already done",
            n = tasks.len()
        )),
        "{first}"
    );
    let records = finished_tasks(&out.join("my-own-loop"));
    assert_eq!(records.keys().cloned().collect::<Vec<_>>(), tasks);
    // The diagnostics are derived from the steps the loop reported.
    let heat = read_json(out.join("my-own-loop/FIX-001_Q1/trajectory.json"));
    let d = &heat["diagnostics"];
    assert_eq!(d["run_status"], "ok");
    assert_eq!(d["termination_reason"], "model_final");
    let calls = heat["tool_calls"].as_array().unwrap();
    assert_eq!(d["tool_calls"], calls.len());
    assert_eq!(
        d["model_rounds"],
        calls.len() + 1,
        "one round per call, one for the answer"
    );
    let reads = calls
        .iter()
        .filter(|c| c["tool"] == "read_text_file")
        .count();
    assert_eq!(d["file_reads"], reads);
    assert!(first.contains("scored FIX-001_Q1 Core="), "{first}");

    // The same command again does no work: every record stays as it was.
    let (second, _) = custom_controller(&["--out", out.to_str().unwrap()]);
    assert!(
        summary_line(&second).contains(&format!("ran 0 ok, 0 error; {} already done", tasks.len())),
        "{second}"
    );
    assert_eq!(finished_tasks(&out.join("my-own-loop")), records);
}

#[test]
fn custom_controller_shards_split_the_release_without_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let mut seen = Vec::new();
    for k in 0..2 {
        let shard = format!("{k}/2");
        let (stdout, status) =
            custom_controller(&["--out", out.to_str().unwrap(), "--shard", &shard]);
        assert!(status.status.success());
        let expected: Vec<String> = fixture_task_ids()
            .into_iter()
            .filter(|t| earthverse_agent_controller::batch::fnv1a64(t.as_bytes()) % 2 == k)
            .collect();
        assert!(
            summary_line(&stdout).contains(&format!(
                "{} task(s) in shard; ran {} ok",
                expected.len(),
                expected.len()
            )),
            "{stdout}"
        );
        seen.extend(expected);
    }
    seen.sort();
    let on_disk: Vec<String> = finished_tasks(&out.join("my-own-loop"))
        .into_keys()
        .collect();
    assert_eq!(on_disk, seen);
    assert_eq!(on_disk, fixture_task_ids());
}

#[test]
fn custom_controller_killed_mid_batch_resumes_without_loss_or_repeat() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("runs");
    let system_dir = out.join("my-own-loop");
    ensure_built();
    let mut child = Command::new(examples_dir().join("custom_controller"))
        .arg(fixture_release())
        .args([
            "--out",
            out.to_str().unwrap(),
            "--concurrency",
            "1",
            "--step-delay-ms",
            "150",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while finished_tasks(&system_dir).is_empty() {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "no task finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = finished_tasks(&system_dir);
    let total = fixture_task_ids().len();
    assert!(
        !before.is_empty() && before.len() < total,
        "killed too late: {}",
        before.len()
    );

    let (stdout, status) = custom_controller(&["--out", out.to_str().unwrap()]);
    assert!(status.status.success());
    assert!(
        summary_line(&stdout).contains(&format!(
            "ran {} ok, 0 error; {} already done",
            total - before.len(),
            before.len()
        )),
        "{stdout}"
    );
    let after = finished_tasks(&system_dir);
    assert_eq!(after.len(), total);
    for (task, bytes) in &before {
        assert_eq!(&after[task], bytes, "{task} was run again");
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

#[test]
fn embed_study_runs_scores_and_reports_a_study_without_the_cli() {
    ensure_built();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("study");
    let run = Command::new(examples_dir().join("embed_study"))
        .arg(fixture_release())
        .arg(&out)
        .output()
        .expect("running embed_study");
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    // Independently of the report: each condition's records, as written,
    // one per task, and their mean Core.
    let tasks = std::fs::read_dir(fixture_release().join("tasks"))
        .expect("tasks")
        .count();
    for condition in ["default", "tight"] {
        let path = out.join("scores").join(format!("{condition}.jsonl"));
        let text = std::fs::read_to_string(&path).expect("scores written");
        let cores: Vec<f64> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).expect("record")["core"]
                    .as_f64()
                    .expect("core")
            })
            .collect();
        assert_eq!(cores.len(), tasks, "{condition}: one record per task");
        let mean = cores.iter().sum::<f64>() / cores.len() as f64;
        let line = format!("condition {condition} runs={tasks} core={mean:.2}");
        assert!(stdout.contains(&line), "{line} not in:\n{stdout}");
        // The runs carry the condition they were made under.
        let run = read_json(
            out.join("runs")
                .join(condition)
                .join("FIX-001_Q1")
                .join("trajectory.json"),
        );
        let recorded = &run["condition"];
        if condition == "tight" {
            assert_eq!(recorded["context"], "aggressive");
            assert_eq!(recorded["max_turns"], 6);
        } else {
            assert!(recorded.is_null() || recorded.as_object().is_some_and(|m| m.is_empty()));
        }
    }
    assert!(stdout.contains("ΔCore against default"), "{stdout}");
}
