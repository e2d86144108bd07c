//! Unit-level checks of the rubric-judge crate (the LLM judge against a
//! real HTTP server lives in the workspace's `tests/judge_loopback.rs`).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use earthverse_model_provider::ScriptedModel;
use earthverse_rubric_judge::*;
use serde_json::{json, Value};
use std::sync::Arc;

fn task_json() -> Value {
    json!({
        "task_id": "CSX-900_Q1",
        "event_id": "CSX-900",
        "hazard_family": "flood",
        "difficulty": "L3_x",
        "dimensions": ["quantitative_calculation"],
        "task_type": "numeric",
        "question": "Return JSON {\"peak_mm\": 0.0, \"label\": \"...\"} using `rain_gauge.csv`.",
        "solution": "# Final Answer\npeak_mm 41.2, label wet_extreme",
        "ground_truth": {
            "evaluation_mode": "deterministic",
            "primary_gt": {"peak_mm": 41.2, "label": "wet_extreme"},
            "provenance": {"source_files": ["data/physical_hazard/rain_gauge.csv"]},
            "rubric": {"total_points": 20, "criteria": [
                {"name": "Final label", "points": 4, "description": "States label wet_extreme.", "partial_credit": "1 point for wet."},
                {"name": "Peak extraction", "points": 5, "description": "Extracts peak_mm = 41.2 from the gauge file.", "partial_credit": "2 points for the right column."},
                {"name": "Window logic", "points": 3, "description": "Uses the event window rule.", "partial_credit": ["1 point", "for a window"]},
                {"name": "Source fusion", "points": 3, "description": "Uses the rain gauge source record.", "partial_credit": "none"},
                {"name": "Competing mechanism", "points": 3, "description": "Rejects the snowmelt alternative.", "partial_credit": "none"},
                {"name": "Output", "points": 2, "description": "Returns the JSON fields.", "partial_credit": "none"}
            ]}
        }
    })
}

fn run_json(answer: Value, status: &str) -> Value {
    json!({
        "task_id": "CSX-900_Q1",
        "model_id": "sys-a",
        "diagnostics": {"run_status": status, "termination_reason": "model_final", "model_rounds": 3, "tool_calls": 2, "total_tokens": 1000},
        "tool_calls": [
            {"step": 1, "tool": "read_text_file", "ok": true, "reason": "read gauge", "args": {"path": "data/physical_hazard/rain_gauge.csv"},
             "output": {"text": "t,mm\n1,41.2"}, "code": {"text": ""}, "stdout": {"text": ""}, "evidence_files": ["data/physical_hazard/rain_gauge.csv"]}
        ],
        "evidence": [{"claim": "peak 41.2", "source_file": "data/physical_hazard/rain_gauge.csv", "support_type": "direct_metric"}],
        "reasoning_summary": ["snowmelt rejected"],
        "unsupported_or_unresolved": [],
        "final_answer": answer,
        "scores": {"overall": 90.0, "answer": 100.0, "rubric": 80.0, "unit_accuracy": 100.0}
    })
}

fn ctx(answer: Value, status: &str) -> (TaskContext, RunContext) {
    (
        TaskContext::from_task_json(&task_json()).expect("task"),
        RunContext::from_run_json(&run_json(answer, status)).expect("run"),
    )
}

fn valid_reply(task: &TaskContext) -> Value {
    let ledger: Vec<Value> = task
        .rubric
        .criteria
        .iter()
        .map(|c| json!({"name": c.name, "points_earned": c.points - 1.0, "points_possible": c.points, "note": ""}))
        .collect();
    json!({
        "answer_correctness_score": 90, "llm_rubric_score": 70,
        "answer_units": [{"unit": "peak_mm", "satisfied": true}, {"unit": "label", "satisfied": false}],
        "rubric_ledger": ledger, "verdict": "partial",
        "critical_errors": ["wrong label"], "missing_elements": [], "unsupported_claims": [],
        "rationale": "Peak right, label wrong."
    })
}

#[test]
fn task_scores_follow_section_4_1() {
    let s = task_scores(98.0, 100.0, 97.5);
    assert_eq!((s.answer, s.core, s.strict95), (98.0, 97.75, true));
    let s = task_scores(100.0, 94.99, 50.0);
    assert_eq!((s.answer, s.strict95), (94.99, false));
    assert_eq!(task_scores(f64::NAN, 120.0, -3.0).core, 0.0);
}

#[test]
fn rubric_validation_hard_rules_and_coverage_warnings() {
    let task = TaskContext::from_task_json(&task_json()).expect("task");
    let report = task.rubric.validate();
    assert!(report.is_valid(), "{:?}", report.errors);
    assert_eq!(
        task.rubric.criteria[2].partial_credit,
        "1 point; for a window"
    );

    let mut bad = task.rubric.clone();
    bad.criteria.truncate(4);
    bad.criteria[0].name = "Peak extraction".into();
    bad.criteria[1].description.clear();
    let r = bad.validate();
    let text = r.errors.join(" | ");
    assert!(text.contains("has 4 criteria"), "{text}");
    assert!(text.contains("sum to 15"), "{text}");
    assert!(text.contains("repeats a name"), "{text}");
    assert!(text.contains("has no description"), "{text}");

    let mut vague = task.rubric.clone();
    vague.criteria[5].description = "Shows good reasoning.".into();
    vague.criteria[5].name = "Reasoning".into();
    let r = vague.validate();
    assert!(r.is_valid());
    assert!(r.warnings.iter().any(|w| w.contains("good reasoning")));
    assert!(
        r.warnings.iter().any(|w| w.contains("requested structure")),
        "{:?}",
        r.warnings
    );
}

#[test]
fn strict_parsing_accepts_valid_and_names_the_problem_otherwise() {
    let task = TaskContext::from_task_json(&task_json()).expect("task");
    let reply = valid_reply(&task);
    let parsed = parse_judge_reply(&reply.to_string(), &task.rubric).expect("valid");
    assert_eq!(parsed.llm_rubric_score, 70.0);
    assert_eq!(parsed.verdict, Verdict::Partial);
    let fenced = format!("```json\n{reply}\n```");
    assert!(parse_judge_reply(&fenced, &task.rubric).is_ok());

    let check = |mutate: &dyn Fn(&mut Value), needle: &str| {
        let mut v = reply.clone();
        mutate(&mut v);
        let err = parse_judge_reply(&v.to_string(), &task.rubric).expect_err(needle);
        assert!(err.contains(needle), "{err} lacks {needle}");
    };
    check(
        &|v| v["answer_correctness_score"] = json!(101),
        "outside 0-100",
    );
    check(
        &|v| v["llm_rubric_score"] = json!(90),
        "disagrees with the rubric ledger",
    );
    check(&|v| v["answer_units"] = json!([]), "empty");
    check(
        &|v| v["answer_units"][0]["satisfied"] = json!("yes"),
        "boolean",
    );
    check(
        &|v| v["rubric_ledger"][0]["name"] = json!("Other"),
        "no entry for criterion",
    );
    check(
        &|v| v["rubric_ledger"][1]["points_earned"] = json!(6),
        "outside 0-5",
    );
    check(&|v| v["verdict"] = json!("great"), "verdict");
    check(&|v| v["rationale"] = json!(" "), "rationale");
    check(&|v| v["critical_errors"] = json!([1]), "strings");
    let err = parse_judge_reply(&format!("Here you go: {reply}"), &task.rubric).expect_err("prose");
    assert!(err.contains("not one JSON object"));
}

#[tokio::test]
async fn llm_judge_reasks_then_caches() {
    let (task, run) = ctx(json!({"peak_mm": 41.2, "label": "dry"}), "ok");
    let dir = tempfile_dir();
    let model = Arc::new(
        ScriptedModel::from_texts(
            "scripted-judge",
            ["not json".to_string(), valid_reply(&task).to_string()],
        )
        .record_requests(),
    );
    let judge = LlmJudge::new(model.clone()).with_cache(JudgeCache::new(&dir));
    let rec = judge.evaluate(&task, &run).await.expect("record");
    assert_eq!(rec.judge_attempts, 2);
    assert_eq!(
        (rec.unit_accuracy, rec.answer_correctness_score),
        (50.0, 90.0)
    );
    assert_eq!(
        (rec.answer, rec.llm_rubric_score, rec.core),
        (50.0, 70.0, 60.0)
    );
    assert_eq!(rec.labels.hazard_family.as_deref(), Some("flood"));
    assert_eq!(rec.trajectory.total_tokens, Some(1000));
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].messages.len(),
        4,
        "system, user, bad reply, repair"
    );
    assert!(requests[0].json_mode);
    // Second evaluation: from disk, no call (the script is exhausted anyway).
    let again = judge.evaluate(&task, &run).await.expect("cached");
    assert_eq!(again.judge_attempts, 0);
    assert_eq!(again.core, rec.core);
    assert_eq!(model.calls(), 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn solver_failures_score_zero_without_a_model_call() {
    let (task, run) = ctx(json!({"peak_mm": 41.2, "label": "wet_extreme"}), "error");
    let model = Arc::new(ScriptedModel::from_texts(
        "scripted-judge",
        Vec::<String>::new(),
    ));
    let rec = LlmJudge::new(model.clone())
        .evaluate(&task, &run)
        .await
        .expect("record");
    assert_eq!(rec.run_status, RunStatus::Error);
    assert_eq!((rec.core, rec.rubric_points_total), (0.0, 20.0));
    assert_eq!(model.calls(), 0);
    let det = DeterministicJudge::new(AnswerUnitsScorer::default());
    let rec = det.evaluate(&task, &run).await.expect("record");
    assert_eq!((rec.core, rec.unit_accuracy), (0.0, 0.0));
}

#[tokio::test]
async fn deterministic_judge_scores_units_and_rubric_anchors() {
    let judge: Box<dyn Judge> = Box::new(DeterministicJudge::new(AnswerUnitsScorer::default()));
    let (task, good) = ctx(json!({"peak_mm": 41.2, "label": "wet_extreme"}), "ok");
    let (_, half) = ctx(json!({"peak_mm": 41.2, "label": "dry_normal"}), "ok");
    let g = judge.evaluate(&task, &good).await.expect("good");
    let h = judge.evaluate(&task, &half).await.expect("half");
    assert_eq!(g.unit_accuracy, 100.0);
    assert_eq!(g.answer_correctness_score, g.unit_accuracy);
    assert_eq!(h.unit_accuracy, 50.0);
    assert!(g.llm_rubric_score > h.llm_rubric_score);
    assert_eq!(g.rubric_ledger.len(), 6);
    // "Final label" names wet_extreme: the good answer shows it, the other does not.
    assert!(g.rubric_ledger[0].points_earned > h.rubric_ledger[0].points_earned);
    assert_eq!(h.verdict, Verdict::Partial);
    assert!(!h.critical_errors.is_empty());
}

#[test]
fn agreement_statistics() {
    let a = agreement(&[10.0, 20.0, 30.0, 40.0], &[12.0, 18.0, 36.0, 55.0]);
    assert!((a.mae.unwrap() - (2.0 + 2.0 + 6.0 + 15.0) / 4.0).abs() < 1e-12);
    assert!((a.bias.unwrap() - (-2.0 + 2.0 - 6.0 - 15.0) / 4.0).abs() < 1e-12);
    assert_eq!(a.within5, Some(50.0));
    assert_eq!(a.within10, Some(75.0));
    assert!((a.spearman.unwrap() - 1.0).abs() < 1e-12);
    let r = a.pearson.unwrap();
    assert!(r < 1.0 && r > 0.8, "{r}");
    let tied = agreement(&[1.0, 1.0, 2.0], &[3.0, 2.0, 1.0]);
    assert!(tied.spearman.unwrap() < 0.0);
    // Undefined figures are None: no pairs, or a constant side.
    let none = agreement(&[], &[]);
    assert_eq!(
        (none.n, none.mae, none.within5, none.pearson),
        (0, None, None, None)
    );
    assert_eq!(agreement(&[5.0, 5.0], &[1.0, 2.0]).pearson, None);
}

#[test]
fn cache_keys_depend_on_every_part() {
    assert_ne!(cache_key(&["ab", "c"]), cache_key(&["a", "bc"]));
    assert_eq!(cache_key(&["x"]).len(), 64);
}

#[test]
fn pairwise_shares() {
    use PairOutcome::*;
    let (w, t, l, net) = win_tie_loss(&[Win, Win, Tie, Loss]);
    assert_eq!((w, t, l, net), (50.0, 25.0, 25.0, 25.0));
}

#[tokio::test]
async fn pairwise_needs_agreement_in_both_orders() {
    let (task, a) = ctx(json!({"peak_mm": 41.2, "label": "wet_extreme"}), "ok");
    let (_, b) = ctx(json!({"peak_mm": 3.0}), "ok");
    let model = ScriptedModel::from_texts(
        "pair",
        [
            r#"{"preferred": "first", "reason": "a"}"#,
            r#"{"preferred": "second", "reason": "a"}"#,
        ],
    );
    let rec = compare_pair(&model, &task, &a, &b).await.expect("pair");
    assert_eq!(rec.outcome, PairOutcome::Win);
    let model = ScriptedModel::from_texts(
        "pair",
        [
            "nope",
            r#"{"preferred": "first"}"#,
            r#"{"preferred": "first"}"#,
        ],
    );
    let rec = compare_pair(&model, &task, &a, &b).await.expect("pair");
    assert_eq!(rec.outcome, PairOutcome::Tie, "position bias cancels");
}

fn tempfile_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "rubric-judge-test-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn records_resume_after_a_torn_write() {
    let dir = tempfile_dir();
    let out = dir.join("records.jsonl");
    let (task, run) = ctx(json!({"peak_mm": 41.2, "label": "wet_extreme"}), "ok");
    let rec = evaluate_deterministic(&AnswerUnitsScorer::default(), &task, &run);
    let mut writer = RecordWriter::resume(&out, &[]).expect("writer");
    writer.write(&rec).expect("write");
    let mut second = rec.clone();
    second.system = "sys-b".into();
    writer.write(&second).expect("write");
    drop(writer);
    // A crash mid-write leaves half a line.
    let mut text = std::fs::read_to_string(&out).expect("read");
    let line = serde_json::to_string(&rec).expect("ser");
    text.push_str(&line[..line.len() / 2]);
    std::fs::write(&out, &text).expect("write");
    let kept = read_records(&out).expect("resume");
    assert_eq!(kept.len(), 2);
    assert_eq!(done_keys(&kept).len(), 2);
    let mut writer = RecordWriter::resume(&out, &kept).expect("writer");
    let mut third = rec.clone();
    third.system = "sys-c".into();
    writer.write(&third).expect("write");
    drop(writer);
    let all = read_records(&out).expect("read");
    assert_eq!(
        all.iter().map(|r| r.system.as_str()).collect::<Vec<_>>(),
        ["sys-a", "sys-b", "sys-c"]
    );
    // A bad line in the middle is an error naming the line.
    std::fs::write(&out, format!("{line}\nnot json\n{line}\n")).expect("write");
    let err = read_records(&out).expect_err("bad middle line");
    assert!(err.to_string().contains("line 2"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_answer_or_error_status_is_a_solver_failure() {
    let run = RunContext::from_run_json(&run_json(Value::Null, "ok")).expect("run");
    assert_eq!(run.run_status, RunStatus::Error);
    let run = RunContext::from_run_json(&run_json(json!({"a": 1}), "timeout")).expect("run");
    assert_eq!(run.run_status, RunStatus::Error);
    let mut no_rubric = task_json();
    no_rubric["ground_truth"]
        .as_object_mut()
        .unwrap()
        .shift_remove("rubric");
    let err = TaskContext::from_task_json(&no_rubric).expect_err("no rubric");
    let text = err.to_string();
    assert!(
        text.contains("CSX-900_Q1") && text.contains("`ground_truth`") && text.contains("rubric"),
        "{err}"
    );
}

#[test]
fn bad_task_and_run_fields_are_named_by_json_path() {
    let mut task = task_json();
    task["ground_truth"]["rubric"]["criteria"][2]["points"] = json!("three");
    let err = TaskContext::from_task_json(&task).expect_err("points as text");
    assert!(
        err.to_string()
            .contains("task CSX-900_Q1: field `ground_truth.rubric.criteria[2].points`"),
        "{err}"
    );
    let mut run = run_json(json!({"a": 1}), "ok");
    run["tool_calls"][0]
        .as_object_mut()
        .unwrap()
        .shift_remove("tool");
    let err = RunContext::from_run_json(&run).expect_err("tool call without a tool");
    assert!(err.to_string().contains("field `tool_calls[0]`"), "{err}");
    assert!(err.to_string().contains("tool"), "{err}");
    let mut run = run_json(json!({"a": 1}), "ok");
    run.as_object_mut().unwrap().shift_remove("model_id");
    let err = RunContext::from_run_json(&run).expect_err("run without a system");
    assert!(err.to_string().contains("model_id"), "{err}");
}

#[test]
fn typed_and_json_readings_agree_and_the_payload_keeps_the_file_order() {
    let json = task_json();
    let typed: earthverse_package_model::Task =
        serde_json::from_value(json.clone()).expect("typed task");
    let from_json = TaskContext::from_task_json(&json).expect("from json");
    let from_typed = TaskContext::from_task(&typed).expect("from typed");
    assert_eq!(from_json.metadata, from_typed.metadata);
    assert_eq!(from_json.rubric, from_typed.rubric);
    assert_eq!(from_json.labels, from_typed.labels);
    assert_eq!(from_json.primary_gt, json["ground_truth"]["primary_gt"]);
    // Same ground truth as a value; the JSON reading keeps the file's key
    // order with only the rubric taken out.
    assert_eq!(from_json.ground_truth, from_typed.ground_truth);
    let keys: Vec<&str> = from_json
        .ground_truth
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["evaluation_mode", "primary_gt", "provenance"]);
    // List-valued credit texts are joined, as the judge prompt shows them.
    assert_eq!(
        from_typed.rubric.criteria[2].partial_credit,
        "1 point; for a window"
    );
    assert_eq!(from_typed.labels.hazard_family.as_deref(), Some("flood"));
    assert_eq!(
        from_typed.metadata["evaluation_mode"],
        json!("deterministic")
    );

    let run = RunContext::from_run_json(&run_json(json!({"peak_mm": 41.2}), "ok")).expect("run");
    let scores = run.published_scores.expect("scores");
    assert_eq!(
        (
            scores.overall,
            scores.answer,
            scores.rubric,
            scores.unit_accuracy
        ),
        (Some(90.0), Some(100.0), Some(80.0), Some(100.0))
    );
    assert_eq!(run.figures.total_tokens, Some(1000));
    assert_eq!(run.tool_trace[0].output, "t,mm\n1,41.2");
    assert_eq!(
        run.tool_trace[0].evidence_files,
        ["data/physical_hazard/rain_gauge.csv"]
    );
    let mut unscored = run_json(json!({"peak_mm": 41.2}), "ok");
    unscored.as_object_mut().unwrap().shift_remove("scores");
    let run = RunContext::from_run_json(&unscored).expect("run");
    assert!(run.published_scores.is_none());
}

#[test]
fn find_runs_reads_run_records_skips_other_json_and_names_bad_files() {
    let dir = tempfile_dir();
    let system = dir.join("sys-a");
    std::fs::create_dir_all(&system).unwrap();
    let write = |name: &str, text: &str| std::fs::write(system.join(name), text).unwrap();
    write(
        "CSX-900_Q1.json",
        &run_json(json!({"peak_mm": 41.2}), "ok").to_string(),
    );
    // A run whose final answer is null is still a run: a failed one.
    let mut failed = run_json(Value::Null, "ok");
    failed["task_id"] = json!("CSX-900_Q2");
    failed.as_object_mut().unwrap().shift_remove("diagnostics");
    write("CSX-900_Q2.json", &failed.to_string());
    // Not run records: an array, an object without a task id, and one with
    // a task id but neither a final answer nor diagnostics.
    write("index.json", "[1, 2, 3]");
    write("summary.json", r#"{"runs": 2, "final_answer": "n/a"}"#);
    write(
        "task_note.json",
        r#"{"task_id": "CSX-900_Q1", "note": "x"}"#,
    );
    // ... also when it parses as a run (task and model ids, every other
    // field defaulted): without a final answer or diagnostics it is not one.
    write(
        "model_note.json",
        r#"{"task_id": "CSX-900_Q1", "model_id": "sys-a", "note": "x"}"#,
    );
    let runs = find_runs(&dir).expect("runs");
    let found: Vec<(&str, RunStatus)> = runs
        .iter()
        .map(|r| (r.run.task_id.as_str(), r.run.run_status))
        .collect();
    assert_eq!(
        found,
        [
            ("CSX-900_Q1", RunStatus::Ok),
            ("CSX-900_Q2", RunStatus::Error)
        ]
    );
    assert_eq!(runs[0].run.tool_trace.len(), 1);

    // A run record with a field that does not fit names the file and field.
    let mut bad = run_json(json!({"peak_mm": 41.2}), "ok");
    bad["tool_calls"][0]["step"] = json!("first");
    write("CSX-900_Q3.json", &bad.to_string());
    let err = find_runs(&dir).expect_err("bad step").to_string();
    assert!(
        err.contains("CSX-900_Q3.json") && err.contains("tool_calls[0].step"),
        "{err}"
    );
    std::fs::remove_file(system.join("CSX-900_Q3.json")).unwrap();
    // A file that is not JSON at all is an error naming it.
    write("broken.json", "{\"task_id\": ");
    let err = find_runs(&dir).expect_err("broken JSON").to_string();
    assert!(err.contains("broken.json"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run discovery has one file listing: the judge's `find_runs` and
/// package-model's `load_recorded_runs` read the same files of the bundled
/// fixture release, and a system's nested folder is still that system's.
#[test]
fn find_runs_and_load_recorded_runs_read_the_same_files() {
    let trajectories = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/release/exploration/trajectories");
    let mut judged: Vec<_> = find_runs(&trajectories)
        .expect("find_runs")
        .into_iter()
        .map(|r| r.path)
        .collect();
    let mut loaded: Vec<_> = earthverse_package_model::load_recorded_runs(&trajectories)
        .expect("load_recorded_runs")
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert!(!judged.is_empty());
    judged.sort();
    loaded.sort();
    assert_eq!(judged, loaded);

    // A copy with one run moved one folder deeper: both readers still find
    // it, and package-model still files it under its system.
    let dir = std::env::temp_dir().join(format!("ev-discovery-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let first = &loaded[0];
    let system = first
        .parent()
        .and_then(|p| p.file_name())
        .expect("system folder")
        .to_owned();
    let nested = dir.join(&system).join("retry");
    std::fs::create_dir_all(&nested).unwrap();
    std::fs::copy(first, nested.join(first.file_name().unwrap())).unwrap();
    let judged = find_runs(&dir).expect("find_runs nested");
    let loaded = earthverse_package_model::load_recorded_runs(&dir).expect("load nested");
    assert_eq!(judged.len(), 1);
    assert_eq!(loaded.len(), 1);
    assert_eq!(judged[0].path, loaded[0].path);
    assert_eq!(loaded[0].system_id, system.to_string_lossy());
    let _ = std::fs::remove_dir_all(&dir);
}
