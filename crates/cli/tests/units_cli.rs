//! `earthverse units` as a process on the bundled fixtures: unit counts per
//! task, and per-run scores with the agreement summary and its noise floor.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

fn units_json(extra: &[&str]) -> Value {
    units_json_at(&fixtures(), extra)
}

/// `earthverse units <root> <extra> --json`, which must succeed, parsed.
fn units_json_at(root: &Path, extra: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .arg("units")
        .arg(root)
        .args(extra)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn scores_every_recorded_run_with_an_agreement_summary() {
    let runs_dir = fixtures().join("exploration");
    let trajectories = walk_json(&runs_dir.join("trajectories"));
    let report = units_json(&["--runs", runs_dir.to_str().unwrap()]);
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), trajectories);
    for run in runs {
        let u = run["u_required"].as_f64().unwrap();
        assert!((0.0..=100.0).contains(&u), "{run}");
    }
    let agreement = &report["agreement"];
    assert_eq!(agreement["runs"].as_u64().unwrap() as usize, runs.len());
    // The fixtures' systems have fewer than 10 runs each: the noise floor
    // compares no system and says so with nulls, not with a vacuous 100%.
    let noise = &report["system_gap_noise"];
    assert_eq!(noise["systems"], 0);
    assert!(noise["share_all_within"].is_null(), "{noise}");
    assert_eq!(noise["seed"], 2026);
}

#[test]
fn counts_units_per_task_without_runs() {
    let report = units_json(&[]);
    let listed = report["tasks"].as_array().unwrap();
    let mut files = 0;
    for entry in std::fs::read_dir(fixtures().join("tasks")).unwrap() {
        let task: Value =
            serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
        files += 1;
        let id = task["task_id"].as_str().unwrap();
        let row = listed
            .iter()
            .find(|t| t["task_id"] == id)
            .unwrap_or_else(|| panic!("{id} not listed"));
        assert_eq!(
            row["units"].as_u64().unwrap() as usize,
            earthverse_answer_units::count_units(&task["ground_truth"]["primary_gt"]),
            "{id}"
        );
    }
    assert!(files > 0);
    assert_eq!(listed.len(), files);
}

/// The fenced JSON object of a solution's `# Final Answer` section, read
/// here independently of the scorer's reader.
fn fenced_final_answer(solution: &str) -> Option<Value> {
    let section = solution.split("# Final Answer").nth(1)?;
    let section = section.split("\n# ").next()?;
    let body = section.split("```json").nth(1)?.split("```").next()?;
    serde_json::from_str(body).ok()
}

fn fixture_tasks() -> Vec<Value> {
    std::fs::read_dir(fixtures().join("tasks"))
        .unwrap()
        .map(|e| serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap())
        .collect()
}

#[test]
fn the_judge_like_reading_scores_against_the_solution_final_answer() {
    let tasks = fixture_tasks();
    let with_solution = tasks
        .iter()
        .filter(|t| fenced_final_answer(t["solution"].as_str().unwrap_or_default()).is_some())
        .count();
    assert!(
        with_solution > 0,
        "the fixtures have solutions with a JSON Final Answer"
    );
    let counts = units_json(&[]);
    assert_eq!(
        counts["tasks_with_solution_reference"].as_u64().unwrap() as usize,
        with_solution
    );
    let runs_dir = fixtures().join("exploration");
    let report = units_json(&["--runs", runs_dir.to_str().unwrap(), "--ledger"]);
    let runs = report["runs"].as_array().unwrap();
    assert!(!runs.is_empty());
    for run in runs {
        let task = tasks
            .iter()
            .find(|t| t["task_id"] == run["task_id"])
            .unwrap();
        let gt = &task["ground_truth"]["primary_gt"];
        let units = earthverse_answer_units::count_units;
        assert_eq!(run["ledger"].as_array().unwrap().len(), units(gt), "{run}");
        match fenced_final_answer(task["solution"].as_str().unwrap_or_default()) {
            Some(reference) => {
                assert_eq!(run["judge_reference"], "solution", "{}", run["task_id"]);
                assert_eq!(run["u_judge"], run["u_solution"]);
                let ledger = run["solution_ledger"].as_array().unwrap();
                assert_eq!(ledger.len(), units(&reference), "{}", run["task_id"]);
            }
            None => {
                assert_eq!(run["judge_reference"], "primary_gt");
                assert_eq!(run["u_judge"], run["u_required"]);
                assert!(run["solution_ledger"].is_null());
            }
        }
    }
    // The agreement summary reads the judge-like U; the primary_gt reading
    // is reported next to it.
    let judged: Vec<f64> = runs
        .iter()
        .filter(|r| r["published_unit_accuracy"].is_number())
        .map(|r| r["u_judge"].as_f64().unwrap())
        .collect();
    let published: Vec<f64> = runs
        .iter()
        .filter_map(|r| r["published_unit_accuracy"].as_f64())
        .collect();
    let mae = judged
        .iter()
        .zip(&published)
        .map(|(a, b)| (a - b).abs())
        .sum::<f64>()
        / judged.len() as f64;
    let reported = report["agreement"]["mae"].as_f64().unwrap();
    assert!((reported - mae).abs() < 1e-9, "{reported} vs {mae}");
    assert!(report["agreement_u_required"]["runs"].as_u64().unwrap() as usize == judged.len());
}

fn walk_json(dir: &Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            n += walk_json(&path);
        } else if path.extension().is_some_and(|e| e == "json") {
            n += 1;
        }
    }
    n
}

/// A reader that goes away (`earthverse units ... | head`) ends the command
/// like other Unix filters: by SIGPIPE, not by a panic.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_quietly() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let runs_dir = fixtures().join("exploration");
    let mut child = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .arg("units")
        .arg(fixtures())
        .arg("--runs")
        .arg(&runs_dir)
        .arg("--ledger")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end before the command writes anything.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.signal(), Some(libc::SIGPIPE), "{:?}", out.status);
}

#[test]
fn labels_the_ground_truth_declares_equivalent_are_read_from_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let release = dir.path().join("release");
    earthverse_testkit::copy_fixture_release(&release);
    let task_path = release.join("tasks/FIX-001_Q1.json");
    let mut task: Value = serde_json::from_slice(&std::fs::read(&task_path).unwrap()).unwrap();
    let expected = task["ground_truth"]["primary_gt"]["answer_type"]
        .as_str()
        .unwrap()
        .to_owned();
    let run_path = release.join("exploration/trajectories/fixture-careful-agent/FIX-001_Q1.json");
    let mut run: Value = serde_json::from_slice(&std::fs::read(&run_path).unwrap()).unwrap();
    run["final_answer"]["answer_type"] = Value::from("heatwave_day_tally");
    std::fs::write(&run_path, serde_json::to_vec(&run).unwrap()).unwrap();
    let answer_type_entries = |report: &Value| -> Vec<Value> {
        let run = report["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["system"] == "fixture-careful-agent" && r["task_id"] == "FIX-001_Q1")
            .cloned()
            .unwrap_or_else(|| panic!("no careful-agent FIX-001_Q1 run in {report}"));
        ["ledger", "solution_ledger"]
            .iter()
            .filter_map(|l| run[*l].as_array())
            .flatten()
            .filter(|e| e["path"] == "answer_type")
            .cloned()
            .collect()
    };
    let runs_dir = release.join("exploration");
    let units = || {
        units_json_at(
            &release,
            &["--runs", runs_dir.to_str().unwrap(), "--ledger"],
        )
    };
    // Without a declaration, another label is not the reference's.
    let before = answer_type_entries(&units());
    assert_eq!(before.len(), 2, "{before:?}");
    assert!(before.iter().all(|e| e["matched"] == false), "{before:?}");
    // Declared equivalent in the task's ground truth, it matches in both readings.
    task["ground_truth"]["key_values"]["aliases"] =
        serde_json::json!([expected, "heatwave_day_tally"]);
    std::fs::write(&task_path, serde_json::to_vec(&task).unwrap()).unwrap();
    let after = answer_type_entries(&units());
    assert_eq!(after.len(), 2, "{after:?}");
    for entry in &after {
        assert_eq!(entry["matched"], true, "{entry}");
        assert!(
            entry["why"].as_str().unwrap().contains("equivalent label"),
            "{entry}"
        );
    }
}

#[test]
fn unreadable_runs_are_refused_by_name_or_with_skip_invalid_listed_and_the_rest_scored() {
    let dir = tempfile::tempdir().unwrap();
    let release = dir.path().join("release");
    earthverse_testkit::copy_fixture_release(&release);
    let runs_dir = release.join("exploration");
    let system_dir = runs_dir.join("trajectories/fixture-careful-agent");
    let scored_before = walk_json(&runs_dir.join("trajectories"));
    std::fs::write(system_dir.join("broken.json"), b"{\"task_id\": ").unwrap();
    // The one rule for inputs that do not load: an error naming the file.
    let refused = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .args([
            "units",
            release.to_str().unwrap(),
            "--runs",
            runs_dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "{stderr}");
    assert!(
        stderr.contains("broken.json") && stderr.contains("--skip-invalid"),
        "{stderr}"
    );
    let report = units_json_at(
        &release,
        &["--runs", runs_dir.to_str().unwrap(), "--skip-invalid"],
    );
    assert_eq!(report["runs"].as_array().unwrap().len(), scored_before);
    let skipped: Vec<&str> = report["skipped_runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert!(skipped[0].contains("broken.json"), "{}", skipped[0]);
    assert!(skipped[0].contains("field `task_id`"), "{}", skipped[0]);
}

#[test]
fn a_run_ending_on_a_pending_python_exec_call_is_scored_by_what_its_code_computes() {
    let dir = tempfile::tempdir().unwrap();
    let release = dir.path().join("release");
    earthverse_testkit::copy_fixture_release(&release);
    let task: Value =
        serde_json::from_slice(&std::fs::read(release.join("tasks/FIX-001_Q1.json")).unwrap())
            .unwrap();
    // The task's top-level scalar fields, once as an object and once as the
    // code of a pending call that assigns each (plus a loop it cannot read).
    let mut fields = serde_json::Map::new();
    let mut code = String::from("import math\n");
    for (key, value) in task["ground_truth"]["primary_gt"].as_object().unwrap() {
        let literal = match value {
            Value::Number(_) | Value::String(_) => value.to_string(),
            Value::Bool(true) => "True".to_owned(),
            Value::Bool(false) => "False".to_owned(),
            _ => continue,
        };
        code.push_str(&format!("{key} = {literal}\n"));
        fields.insert(key.clone(), value.clone());
    }
    assert!(
        fields.len() >= 3,
        "FIX-001_Q1 has scalar fields: {fields:?}"
    );
    code.push_str("for day in days:\n    total = total + day\n");
    let run_path = release.join("exploration/trajectories/fixture-careful-agent/FIX-001_Q1.json");
    let mut run: Value = serde_json::from_slice(&std::fs::read(&run_path).unwrap()).unwrap();
    let mut score_with = |final_answer: Value| -> Value {
        run["final_answer"] = final_answer;
        std::fs::write(&run_path, serde_json::to_vec(&run).unwrap()).unwrap();
        let runs_dir = release.join("exploration");
        let report = units_json_at(
            &release,
            &["--runs", runs_dir.to_str().unwrap(), "--ledger"],
        );
        report["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["system"] == "fixture-careful-agent" && r["task_id"] == "FIX-001_Q1")
            .cloned()
            .unwrap()
    };
    let as_object = score_with(Value::Object(fields));
    let as_code = score_with(serde_json::json!({
        "action": "tool_call",
        "tool": "python_exec",
        "args": {"code": code},
        "reason": "compute the answer"
    }));
    assert_eq!(as_code["parse_shape"], "pending_code");
    assert_eq!(as_object["parse_shape"], "object");
    assert_eq!(as_code["parse_remainder"], "for day in days:");
    for reading in ["u_judge", "u_required", "u_all", "units_matched"] {
        assert_eq!(as_code[reading], as_object[reading], "{reading}");
    }
    assert!(as_code["units_matched"].as_u64().unwrap() >= 3);
}

/// `earthverse units` and `earthverse score` read answers with one scoring
/// context (`rubric_judge::scoring_context`): on every recorded run of the
/// fixture release, the judge-like U that `units --json` reports is the
/// `unit_accuracy` of the deterministic judge's record.
#[test]
fn units_and_score_give_every_run_the_same_unit_accuracy() {
    let bin = env!("CARGO_BIN_EXE_earthverse");
    let runs = fixtures().join("exploration/trajectories");
    let units = units_json(&["--runs", runs.to_str().unwrap()]);
    let from_units: BTreeMap<(String, String), f64> = units["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let key = (
                r["system"].as_str().unwrap().to_owned(),
                r["task_id"].as_str().unwrap().to_owned(),
            );
            (key, r["u_judge"].as_f64().unwrap())
        })
        .collect();

    let dir = tempfile::tempdir().unwrap();
    let scores = dir.path().join("scores.jsonl");
    let status = Command::new(bin)
        .arg("score")
        .arg(fixtures())
        .arg("--runs")
        .arg(&runs)
        .arg("--out")
        .arg(&scores)
        .arg("--restart")
        .status()
        .unwrap();
    assert!(status.success());
    let from_score: BTreeMap<(String, String), f64> = std::fs::read_to_string(&scores)
        .unwrap()
        .lines()
        .map(|line| {
            let r: Value = serde_json::from_str(line).unwrap();
            let key = (
                r["system"].as_str().unwrap().to_owned(),
                r["task_id"].as_str().unwrap().to_owned(),
            );
            (key, r["unit_accuracy"].as_f64().unwrap())
        })
        .collect();

    assert_eq!(from_units.len(), 12, "every fixture run");
    assert_eq!(
        from_units.keys().collect::<Vec<_>>(),
        from_score.keys().collect::<Vec<_>>()
    );
    for (run, u) in &from_units {
        assert!(
            (u - from_score[run]).abs() < 1e-9,
            "{run:?}: units {u}, score {}",
            from_score[run]
        );
    }
    // Not all trivially 100: the runs differ, so the comparison means something.
    assert!(from_units.values().any(|u| *u < 100.0));
}
