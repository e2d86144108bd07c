//! `score_batch` over `Arc<dyn Judge>` on the bundled fixture release: the
//! deterministic judge's synchronous path and a judge with only the async
//! form give the same records in the same order; a resumed batch writes
//! each run once; a judge error on one run is collected and the others
//! are written.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use async_trait::async_trait;
use earthverse_rubric_judge::*;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

fn release() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

fn input(done: BTreeSet<(String, String)>) -> ScoreInput {
    let tasks = load_tasks(&release()).unwrap();
    ScoreInput {
        runs_dir: release().join("exploration/trajectories"),
        release_root: release(),
        tasks: Arc::new(tasks),
        skipped_tasks: BTreeSet::new(),
        done,
    }
}

const OPTIONS: ScoreOptions = ScoreOptions {
    jobs: 3,
    keep_runs: true,
};

async fn score_into(
    path: &std::path::Path,
    judge: Arc<dyn Judge>,
    done: BTreeSet<(String, String)>,
) -> (BatchScores, Vec<EvaluationRecord>) {
    let previous = read_records(path).unwrap();
    let mut writer = RecordWriter::resume(path, &previous).unwrap();
    let scores = score_batch(input(done), judge, &mut writer, OPTIONS)
        .await
        .unwrap();
    (scores, read_records(path).unwrap())
}

/// The deterministic judge with only the async form (a user's judge).
struct AsyncOnly(DeterministicJudge<AnswerUnitsScorer>);

#[async_trait]
impl Judge for AsyncOnly {
    fn judge_id(&self) -> &str {
        self.0.judge_id()
    }
    async fn evaluate(&self, task: &TaskContext, run: &RunContext) -> Result<EvaluationRecord> {
        tokio::task::yield_now().await;
        self.0.evaluate(task, run).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_execution_paths_write_the_same_records_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    let ids = load_tasks(&release()).unwrap().into_keys();
    let release_judge = ReleaseDeterministicJudge::new(UnitReading::Judge, ids);
    assert!(release_judge.blocking().is_some());
    let (blocking, sync_records) = score_into(
        &dir.path().join("a.jsonl"),
        Arc::new(release_judge),
        BTreeSet::new(),
    )
    .await;
    let async_judge = AsyncOnly(DeterministicJudge::new(AnswerUnitsScorer {
        reading: UnitReading::Judge,
    }));
    assert!(async_judge.blocking().is_none());
    let (_, async_records) = score_into(
        &dir.path().join("b.jsonl"),
        Arc::new(async_judge),
        BTreeSet::new(),
    )
    .await;

    let runs = run_paths(&release().join("exploration/trajectories")).unwrap();
    assert_eq!(blocking.found, runs.len());
    assert_eq!(sync_records.len(), runs.len());
    assert_eq!(blocking.runs.len(), runs.len(), "keep_runs keeps every run");
    // Path order: the records follow the sorted run files.
    let order: Vec<(String, String)> = runs
        .iter()
        .map(|p| {
            let rf = read_run(p.clone()).unwrap().unwrap();
            (rf.run.task_id, rf.run.system)
        })
        .collect();
    let written = |records: &[EvaluationRecord]| -> Vec<(String, String)> {
        records
            .iter()
            .map(|r| (r.task_id.clone(), r.system.clone()))
            .collect()
    };
    assert_eq!(written(&sync_records), order);
    assert_eq!(written(&async_records), order);
    // Same scores and ledgers; only the claim ledger is the release
    // judge's own addition (none configured here, so none on either side).
    for (a, b) in sync_records.iter().zip(&async_records) {
        assert_eq!(
            serde_json::to_value(a).unwrap(),
            serde_json::to_value(b).unwrap(),
            "{} {}",
            a.task_id,
            a.system
        );
    }
    // The scores are real: the careful agent beats the hasty one.
    let mean_core = |system: &str| {
        let rs: Vec<&EvaluationRecord> = sync_records
            .iter()
            .filter(|r| r.system.contains(system))
            .collect();
        rs.iter().map(|r| r.core).sum::<f64>() / rs.len() as f64
    };
    assert!(mean_core("careful") > mean_core("hasty"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_batch_scores_each_run_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scores.jsonl");
    let judge = || -> Arc<dyn Judge> {
        let ids = load_tasks(&release()).unwrap().into_keys();
        Arc::new(ReleaseDeterministicJudge::new(UnitReading::Judge, ids))
    };
    let (_, full) = score_into(&path, judge(), BTreeSet::new()).await;
    // Keep the first five records as if the batch had been killed.
    let kept: Vec<EvaluationRecord> = full[..5].to_vec();
    let resumed_path = dir.path().join("resumed.jsonl");
    RecordWriter::resume(&resumed_path, &kept).unwrap();
    let (scores, resumed) = score_into(&resumed_path, judge(), done_keys(&kept)).await;
    assert_eq!(scores.already, 5);
    assert_eq!(scores.records.len(), full.len() - 5);
    let keys = done_keys(&resumed);
    assert_eq!(keys.len(), resumed.len(), "a run was written twice");
    assert_eq!(keys, done_keys(&full));
}

/// Fails on one task, judges the others deterministically.
struct FailsOn(&'static str, DeterministicJudge<AnswerUnitsScorer>);

#[async_trait]
impl Judge for FailsOn {
    fn judge_id(&self) -> &str {
        "fails-on"
    }
    async fn evaluate(&self, task: &TaskContext, run: &RunContext) -> Result<EvaluationRecord> {
        if task.task_id == self.0 {
            return Err(JudgeError::BadInput {
                what: "run",
                id: run.system.clone(),
                field: "final_answer".into(),
                problem: "refused by the test judge".into(),
            });
        }
        self.1.evaluate(task, run).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_judge_error_is_collected_and_the_other_runs_are_written() {
    let dir = tempfile::tempdir().unwrap();
    let judge = FailsOn(
        "FIX-002_Q1",
        DeterministicJudge::new(AnswerUnitsScorer {
            reading: UnitReading::Judge,
        }),
    );
    let (scores, records) = score_into(
        &dir.path().join("s.jsonl"),
        Arc::new(judge),
        BTreeSet::new(),
    )
    .await;
    let failed: BTreeSet<String> = scores
        .failures
        .iter()
        .map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(failed, BTreeSet::from(["FIX-002_Q1.json".to_string()]));
    assert_eq!(scores.failures.len(), 2, "one run per fixture system");
    assert_eq!(records.len(), scores.found - 2);
    assert!(records.iter().all(|r| r.task_id != "FIX-002_Q1"));
}

#[tokio::test]
async fn a_run_of_a_task_outside_the_release_is_an_error_naming_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    let source = release().join("exploration/trajectories/fixture-careful-agent/FIX-001_Q1.json");
    let text = std::fs::read_to_string(source)
        .unwrap()
        .replace("FIX-001_Q1", "ELSEWHERE_Q9");
    std::fs::write(runs.join("stray.json"), text).unwrap();
    let mut scoring = input(BTreeSet::new());
    scoring.runs_dir = runs;
    let path = dir.path().join("s.jsonl");
    let mut writer = RecordWriter::resume(&path, &[]).unwrap();
    let ids = load_tasks(&release()).unwrap().into_keys();
    let judge = Arc::new(ReleaseDeterministicJudge::new(UnitReading::Judge, ids));
    let err = score_batch(scoring, judge, &mut writer, OPTIONS)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("stray.json") && err.contains("ELSEWHERE_Q9"),
        "{err}"
    );
}
