//! The LLM judge end to end against a real HTTP server process on
//! 127.0.0.1 (the loopback server, OpenAI-compatible wire format): invalid
//! judge replies are re-asked until a valid record arrives; a second
//! scoring of the same runs is served from the on-disk cache with zero
//! HTTP requests; a judge that never answers validly gives an explicit
//! error after the bound; a failed solver run scores zero without a call.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use earthverse_loopback_server::{start, Body, Interaction, LoopbackServer, Reply, Script};
use earthverse_model_provider::{ChatModel, OpenAiCompatible, OpenAiConfig};
use earthverse_rubric_judge::{
    evaluate_deterministic, find_runs, load_tasks, AnswerUnitsScorer, EvaluationRecord, Judge,
    JudgeCache, JudgeError, LlmJudge, RunContext, RunFile, RunStatus, TaskContext,
};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

const MARKED_TASK: &str = "FIX-001_Q1";
const MARKED_SYSTEM: &str = "fixture-careful-agent";

fn server(script: &Script) -> LoopbackServer {
    start(script).expect("loopback server starts")
}

fn judge_model(server: &LoopbackServer) -> Arc<dyn ChatModel> {
    let config = OpenAiConfig::local("judge-loopback", format!("{}/v1", server.base_url()));
    Arc::new(OpenAiCompatible::new(config).expect("provider builds"))
}

/// The reply a judge gives for a run: its answer-unit and rubric ledgers
/// come from the deterministic judge (so they are real per-run values),
/// rubric points rounded to halves, H set 3 points below U.
fn judge_reply(task: &TaskContext, run: &RunContext) -> (Value, f64, f64, f64) {
    let det = evaluate_deterministic(&AnswerUnitsScorer::default(), task, run);
    let units: Vec<Value> = det
        .answer_units
        .iter()
        .filter(|u| u.counted)
        .map(|u| json!({"unit": u.unit, "expected": u.expected, "found": u.found, "satisfied": u.satisfied}))
        .collect();
    let units = if units.is_empty() {
        vec![json!({"unit": "answer", "satisfied": false})]
    } else {
        units
    };
    let satisfied = units
        .iter()
        .filter(|u| u["satisfied"] == json!(true))
        .count();
    let u = 100.0 * satisfied as f64 / units.len() as f64;
    let ledger: Vec<Value> = det
        .rubric_ledger
        .iter()
        .map(|c| {
            json!({"name": c.name, "points_possible": c.points_possible,
                   "points_earned": (c.points_earned * 2.0).floor() / 2.0, "note": "scripted"})
        })
        .collect();
    let earned: f64 = ledger
        .iter()
        .map(|c| c["points_earned"].as_f64().unwrap_or(0.0))
        .sum();
    let p = 100.0 * earned / 20.0;
    let h = (u - 3.0).max(0.0);
    let reply = json!({
        "answer_correctness_score": h,
        "llm_rubric_score": p,
        "answer_units": units,
        "rubric_ledger": ledger,
        "verdict": if u >= 95.0 { "correct" } else if u >= 50.0 { "partial" } else { "incorrect" },
        "critical_errors": [],
        "missing_elements": [],
        "unsupported_claims": [],
        "rationale": format!("Scripted judgment of {} by {}.", task.task_id, run.system),
    });
    (reply, h, u, p)
}

fn fixture() -> (
    BTreeMap<String, TaskContext>,
    Vec<RunFile>,
    tempfile::TempDir,
) {
    let root = earthverse_tests::fixture_release();
    let tasks = load_tasks(&root).expect("fixture tasks load");
    let runs_dir = tempfile::tempdir().expect("temp dir");
    let src = root.join("exploration/trajectories");
    for entry in walkdir::WalkDir::new(&src) {
        let entry = entry.expect("walk");
        if entry.file_type().is_file() {
            let rel = entry.path().strip_prefix(&src).expect("prefix");
            let dest = runs_dir.path().join(rel);
            std::fs::create_dir_all(dest.parent().expect("parent")).expect("mkdir");
            std::fs::copy(entry.path(), &dest).expect("copy");
        }
    }
    // A crashed solver run: same answer, run_status error.
    let mut crashed: Value = serde_json::from_slice(
        &std::fs::read(src.join(MARKED_SYSTEM).join(format!("{MARKED_TASK}.json"))).expect("read"),
    )
    .expect("json");
    crashed["model_id"] = json!("fixture-crashed-agent");
    crashed["diagnostics"]["run_status"] = json!("error");
    crashed["diagnostics"]["termination_reason"] = json!("provider_error");
    std::fs::create_dir_all(runs_dir.path().join("fixture-crashed-agent")).expect("mkdir");
    std::fs::write(
        runs_dir
            .path()
            .join("fixture-crashed-agent")
            .join(format!("{MARKED_TASK}.json")),
        serde_json::to_vec(&crashed).expect("ser"),
    )
    .expect("write");
    let runs = find_runs(runs_dir.path()).expect("runs load");
    (tasks, runs, runs_dir)
}

async fn score_all(
    judge: &LlmJudge,
    tasks: &BTreeMap<String, TaskContext>,
    runs: &[RunFile],
) -> Vec<EvaluationRecord> {
    let mut out = Vec::new();
    for rf in runs {
        let record = judge
            .evaluate(&tasks[&rf.run.task_id], &rf.run)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", rf.path.display()));
        out.push(record);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_judge_reasks_invalid_output_and_second_pass_is_cached() {
    let (tasks, runs, _runs_dir) = fixture();
    assert_eq!(runs.len(), 13, "12 fixture runs + 1 crashed run");
    let mut interactions = Vec::new();
    let mut expected = BTreeMap::new();
    for rf in &runs {
        if rf.run.run_status == RunStatus::Error {
            continue;
        }
        let task = &tasks[&rf.run.task_id];
        let (reply, h, u, p) = judge_reply(task, &rf.run);
        let needles = [rf.run.task_id.clone(), rf.run.system.clone()];
        let matching = |i: Interaction| {
            needles
                .iter()
                .fold(i.on_path("/v1/chat/completions"), |i, n| {
                    i.when_body_contains(n.clone())
                })
        };
        if rf.run.task_id == MARKED_TASK && rf.run.system == MARKED_SYSTEM {
            // 1: prose instead of JSON; 2: JSON whose rubric ledger misses
            // a criterion; 3: the valid record.
            interactions.push(matching(Interaction::once(Reply::ok(Body::openai_text(
                "The answer looks mostly right; I would give it about 80 points.",
            )))));
            let mut broken = reply.clone();
            if let Some(ledger) = broken["rubric_ledger"].as_array_mut() {
                ledger.pop();
            }
            interactions.push(matching(Interaction::once(Reply::ok(Body::openai_text(
                broken.to_string(),
            )))));
        }
        interactions.push(matching(Interaction::once(Reply::ok(Body::openai_text(
            reply.to_string(),
        )))));
        expected.insert((rf.run.task_id.clone(), rf.run.system.clone()), (h, u, p));
    }
    let script = Script::new(interactions);
    let srv = server(&script);
    let cache_dir = tempfile::tempdir().expect("cache dir");

    // First pass: every valid run costs one request, the marked one three.
    let judge = LlmJudge::new(judge_model(&srv)).with_cache(JudgeCache::new(cache_dir.path()));
    let first = score_all(&judge, &tasks, &runs).await;
    let log = srv.requests().expect("request log");
    assert_eq!(
        log.len(),
        12 + 2,
        "11 runs × 1 request + 1 run × 3 requests"
    );
    assert_eq!(judge.stats().invalid_replies.load(Relaxed), 2);
    assert_eq!(judge.stats().model_calls.load(Relaxed), 14);
    // The re-asks carry the reason back to the judge.
    let reasks: Vec<&Value> = log
        .iter()
        .filter(|r| {
            r["body"]
                .to_string()
                .contains("not a valid evaluation record")
        })
        .collect();
    assert_eq!(reasks.len(), 2);
    assert!(reasks[0]["body"]
        .to_string()
        .contains("not one JSON object"));
    assert!(reasks[1]["body"].to_string().contains("rubric_ledger has"));
    // The paper's judge prompt and payload went over the wire.
    let first_body = log[0]["body"].to_string();
    for needle in [
        "You are a strict but fair evaluator for a local extreme-event benchmark.",
        "CALIBRATION CORE",
        "<TASK_METADATA>",
        "<GROUND_TRUTH>",
        "<SOLUTION_AND_20_POINT_RUBRIC>",
        "<MODEL_FINAL_ANSWER>",
        "<MODEL_TOOL_TRACE>",
        "<MODEL_RUN_NOTES>",
    ] {
        assert!(first_body.contains(needle), "request lacks {needle}");
    }
    assert_eq!(log[0]["body"]["response_format"]["type"], "json_object");

    for rec in &first {
        if rec.system == "fixture-crashed-agent" {
            assert_eq!(rec.run_status, RunStatus::Error);
            assert_eq!(
                (rec.core, rec.answer, rec.llm_rubric_score),
                (0.0, 0.0, 0.0)
            );
            assert_eq!(rec.judge_attempts, 0);
            continue;
        }
        let (h, u, p) = expected[&(rec.task_id.clone(), rec.system.clone())];
        assert!(
            (rec.answer_correctness_score - h).abs() < 1e-9,
            "{}",
            rec.task_id
        );
        assert!((rec.unit_accuracy - u).abs() < 1e-9);
        assert!((rec.llm_rubric_score - p).abs() < 1e-9);
        assert!((rec.answer - h.min(u)).abs() < 1e-9);
        assert!((rec.core - (h.min(u) + p) / 2.0).abs() < 1e-9);
        assert_eq!(rec.strict95, u >= 95.0);
        assert_eq!(rec.judge, "openai:judge-loopback");
        assert_eq!(rec.judge_input_sha256.len(), 64);
        let attempts = if rec.task_id == MARKED_TASK && rec.system == MARKED_SYSTEM {
            3
        } else {
            1
        };
        assert_eq!(
            rec.judge_attempts, attempts,
            "{} {}",
            rec.task_id, rec.system
        );
    }

    // Second pass with a fresh judge and provider over the same cache:
    // every record comes from disk, the server sees no new request.
    let judge2 = LlmJudge::new(judge_model(&srv)).with_cache(JudgeCache::new(cache_dir.path()));
    let second = score_all(&judge2, &tasks, &runs).await;
    assert_eq!(
        srv.requests().expect("request log").len(),
        14,
        "zero HTTP requests the second time"
    );
    assert_eq!(judge2.stats().model_calls.load(Relaxed), 0);
    assert_eq!(judge2.stats().cache_hits.load(Relaxed), 12);
    for (a, b) in first.iter().zip(&second) {
        let mut a = a.clone();
        a.judge_attempts = 0;
        assert_eq!(&a, b);
    }

    // A changed run (different final answer) is a different cache key:
    // it costs a request (404 here: the script has nothing left for it).
    let rf = runs
        .iter()
        .find(|r| r.run.run_status == RunStatus::Ok)
        .expect("a run");
    let mut changed = rf.run.clone();
    changed.final_answer = json!({"answer": "something else"});
    let err = judge2
        .evaluate(&tasks[&changed.task_id], &changed)
        .await
        .expect_err("no scripted reply");
    assert!(matches!(err, JudgeError::Provider { .. }), "{err}");
    assert_eq!(srv.requests().expect("log").len(), 15);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn llm_judge_gives_an_explicit_error_after_the_bound() {
    let (tasks, runs, _runs_dir) = fixture();
    let script = Script::new(vec![Interaction::always(Reply::ok(Body::openai_text(
        r#"{"answer_correctness_score": 140, "llm_rubric_score": 50}"#,
    )))]);
    let srv = server(&script);
    let judge = LlmJudge::new(judge_model(&srv)).with_max_attempts(3);
    let rf = runs
        .iter()
        .find(|r| r.run.run_status == RunStatus::Ok)
        .expect("a run");
    let err = judge
        .evaluate(&tasks[&rf.run.task_id], &rf.run)
        .await
        .expect_err("never valid");
    match &err {
        JudgeError::InvalidJudgeOutput {
            attempts,
            last_problem,
            task_id,
            ..
        } => {
            assert_eq!(*attempts, 3);
            assert_eq!(task_id, &rf.run.task_id);
            assert!(last_problem.contains("outside 0-100"), "{last_problem}");
        }
        other => panic!("unexpected error {other}"),
    }
    assert_eq!(srv.requests().expect("log").len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairwise_comparison_through_the_provider() {
    let (tasks, runs, _runs_dir) = fixture();
    let pick = |system: &str| {
        runs.iter()
            .find(|r| r.run.task_id == MARKED_TASK && r.run.system == system)
            .expect("run")
            .run
            .clone()
    };
    let careful = pick(MARKED_SYSTEM);
    let hasty = pick("fixture-hasty-agent");
    // Replies in order: an invalid one (re-asked), "first" for the A-first
    // request, "second" for the swapped one → A wins both orders.
    let script = Script::new(vec![
        Interaction::once(Reply::ok(Body::openai_text("first, clearly"))),
        Interaction::once(Reply::ok(Body::openai_text(
            r#"{"preferred": "first", "reason": "complete ledger"}"#,
        ))),
        Interaction::once(Reply::ok(Body::openai_text(
            r#"{"preferred": "second", "reason": "complete ledger"}"#,
        ))),
    ]);
    let srv = server(&script);
    let model = judge_model(&srv);
    let rec = earthverse_rubric_judge::compare_pair(
        model.as_ref(),
        &tasks[MARKED_TASK],
        &careful,
        &hasty,
    )
    .await
    .expect("pairwise");
    assert_eq!(rec.outcome, earthverse_rubric_judge::PairOutcome::Win);
    assert_eq!(
        (rec.a_first_choice.as_str(), rec.b_first_choice.as_str()),
        ("first", "second")
    );
    let log = srv.requests().expect("log");
    assert_eq!(log.len(), 3);
    // The second ordering really puts the hasty run first.
    let last = log[2]["body"]["messages"][1]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let first_part = last
        .split("<SECOND_FINAL_ANSWER>")
        .next()
        .unwrap_or_default();
    assert!(
        first_part.contains(&serde_json::to_string_pretty(&hasty.final_answer).expect("json")),
        "B shown first in the swapped request"
    );
}
