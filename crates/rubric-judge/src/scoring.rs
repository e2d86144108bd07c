//! Scoring a directory of runs with any [`Judge`]: [`score_batch`] beside
//! the controller's `run_batch`. `earthverse score` is a thin shell over
//! it; a harness that brings its own judge calls it the same way.
//!
//! The batch streams: run files are read, judged and written
//! [`SCORE_CHUNK`] at a time, in path order, so peak memory holds one chunk
//! of runs and a killed batch loses at most the chunk in flight (a rerun
//! resumes from the records already written). A judge with a synchronous
//! form ([`Judge::blocking`], the deterministic judge) scores a
//! chunk on all cores; any other judge is called `jobs` runs at a time.
//! A failed solver run is judged like any other (it scores zero and stays
//! in the denominator, §4.1).

use crate::batch::{read_run, record_line, run_paths, RecordWriter, RunFile};
use crate::deterministic::{
    evaluate_deterministic_prepared, PreparedRubric, DETERMINISTIC_JUDGE_ID,
};
use crate::error::{JudgeError, Result};
use crate::evidence::ClaimSource;
use crate::input::{RunContext, TaskContext};
use crate::judge::{BlockingJudge, Judge};
use crate::record::{EvaluationRecord, RunStatus};
use crate::units::{scoring_context, AnswerUnitsScorer, UnitReading};
use async_trait::async_trait;
use earthverse_answer_units::{score_task, ScoringContext};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

/// Runs judged together before their records are written: large enough
/// to keep every core busy, small enough that a killed batch loses little.
pub const SCORE_CHUNK: usize = 64;

/// What a batch scores.
#[derive(Debug, Clone)]
pub struct ScoreInput {
    /// Directory of run records, searched recursively.
    pub runs_dir: PathBuf,
    /// The release root, named in errors.
    pub release_root: PathBuf,
    /// The release's tasks, by id.
    pub tasks: Arc<BTreeMap<String, TaskContext>>,
    /// Ids of task files the caller skipped (`--skip-invalid`): their runs
    /// are counted in [`BatchScores::runs_of_skipped`], not scored.
    pub skipped_tasks: BTreeSet<String>,
    /// (task, system) pairs already in the output: their runs are counted
    /// in [`BatchScores::already`], not judged again.
    pub done: BTreeSet<(String, String)>,
}

/// How a batch runs.
#[derive(Debug, Clone, Copy)]
pub struct ScoreOptions {
    /// Concurrent calls of a judge without a synchronous form.
    pub jobs: usize,
    /// Keep every run (slimmed to its ids and published scores) for
    /// [`crate::compare_published`].
    pub keep_runs: bool,
}

/// What a batch did.
#[derive(Debug, Default)]
pub struct BatchScores {
    /// Records written now, slimmed to ids and scores (their ledgers and
    /// texts are in the output file).
    pub records: Vec<EvaluationRecord>,
    /// With [`ScoreOptions::keep_runs`]: every run found, slimmed to its ids
    /// and published scores.
    pub runs: Vec<RunFile>,
    /// Run files found (not counting runs of skipped tasks).
    pub found: usize,
    /// Of them, runs whose record was already written.
    pub already: usize,
    /// Runs of the skipped task files, by path.
    pub runs_of_skipped: Vec<PathBuf>,
    /// Runs the judge gave no valid record for (a rerun retries them).
    pub failures: Vec<(PathBuf, JudgeError)>,
}

/// What became of one run file of a chunk.
enum Scored {
    /// Not a run record (another JSON file of the runs directory).
    NotRun,
    /// A run of a skipped task file.
    OfSkippedTask(PathBuf),
    /// A run whose record is already in the output.
    Done(Option<RunFile>),
    /// A run judged now: its record (slimmed) and JSONL line, or the
    /// judge's error.
    New(
        std::result::Result<(Box<EvaluationRecord>, String), JudgeError>,
        RunFile,
    ),
}

/// Scores every run under `input.runs_dir` with `judge`, appending records
/// to `writer` in path order, one chunk at a time (module docs). A file
/// that cannot be read, or a run of a task the release does not hold,
/// stops the batch with an error naming the file; the chunks before it
/// stay written. A judge error on one run is collected in
/// [`BatchScores::failures`] and the batch goes on.
pub async fn score_batch(
    input: ScoreInput,
    judge: Arc<dyn Judge>,
    writer: &mut RecordWriter,
    options: ScoreOptions,
) -> Result<BatchScores> {
    let input = Arc::new(input);
    let paths = run_paths(&input.runs_dir)?;
    let blocking = judge.blocking().is_some();
    let mut scores = BatchScores::default();
    for chunk in paths.chunks(SCORE_CHUNK) {
        let chunk = chunk.to_vec();
        let scored: Vec<Result<Scored>> = if blocking {
            let (shared, judge) = (Arc::clone(&input), Arc::clone(&judge));
            tokio::task::spawn_blocking(move || {
                chunk
                    .into_par_iter()
                    .map(|path| score_file_blocking(&shared, judge.as_ref(), path))
                    .collect()
            })
            .await
            .map_err(|join| JudgeError::Io {
                path: input.runs_dir.clone(),
                source: std::io::Error::other(format!("a scoring thread panicked: {join}")),
            })?
        } else {
            score_chunk_async(&input, &judge, chunk, options.jobs.max(1)).await?
        };
        let mut lines = String::new();
        // In path order: the first bad file of the chunk is the one named.
        for outcome in scored {
            let run = match outcome? {
                Scored::NotRun => continue,
                Scored::OfSkippedTask(path) => {
                    scores.runs_of_skipped.push(path);
                    continue;
                }
                Scored::Done(run) => {
                    scores.already += 1;
                    run
                }
                Scored::New(Ok((record, line)), run) => {
                    scores.records.push(*record);
                    lines.push_str(&line);
                    Some(run)
                }
                Scored::New(Err(err), run) => {
                    scores.failures.push((run.path.clone(), err));
                    Some(run)
                }
            };
            scores.found += 1;
            if options.keep_runs {
                scores.runs.extend(run.map(slim_run));
            }
        }
        writer.write_lines(lines.as_bytes())?;
    }
    tracing::debug!(
        runs = scores.found,
        already = scores.already,
        "score_batch: runs read, judged and written"
    );
    Ok(scores)
}

/// Reads one run file and classifies it; `Ok(None)` when the file is not a
/// run, an error for an unreadable file or a run of an unknown task.
fn read_classified(
    input: &ScoreInput,
    path: PathBuf,
) -> Result<std::result::Result<RunFile, Scored>> {
    let Some(rf) = read_run(path)? else {
        return Ok(Err(Scored::NotRun));
    };
    let task_id = &rf.run.task_id;
    if !input.tasks.contains_key(task_id) {
        if input.skipped_tasks.contains(task_id) {
            return Ok(Err(Scored::OfSkippedTask(rf.path)));
        }
        return Err(JudgeError::UnknownTask {
            run: rf.path,
            task_id: task_id.clone(),
            release: input.release_root.clone(),
        });
    }
    if input
        .done
        .contains(&(task_id.clone(), rf.run.system.clone()))
    {
        return Ok(Err(Scored::Done(Some(rf))));
    }
    Ok(Ok(rf))
}

/// One record judged: slimmed for the summary, with its JSONL line
/// serialised on the thread that judged it.
fn finish(
    result: Result<EvaluationRecord>,
) -> std::result::Result<(Box<EvaluationRecord>, String), JudgeError> {
    let record = result?;
    let line = record_line(&record)?;
    Ok((Box::new(slim_record(record)), line))
}

fn score_file_blocking(input: &ScoreInput, judge: &dyn Judge, path: PathBuf) -> Result<Scored> {
    let rf = match read_classified(input, path)? {
        Ok(rf) => rf,
        Err(scored) => return Ok(scored),
    };
    let task = &input.tasks[&rf.run.task_id];
    let result = match judge.blocking() {
        Some(now) => now.evaluate_now(task, &rf.run),
        None => Err(JudgeError::Io {
            path: rf.path.clone(),
            source: std::io::Error::other("the judge lost its synchronous form mid-batch"),
        }),
    };
    Ok(Scored::New(finish(result), rf))
}

async fn score_chunk_async(
    input: &Arc<ScoreInput>,
    judge: &Arc<dyn Judge>,
    chunk: Vec<PathBuf>,
    jobs: usize,
) -> Result<Vec<Result<Scored>>> {
    // Files are read and parsed on all cores first.
    let reading = Arc::clone(input);
    let read: Vec<Result<std::result::Result<RunFile, Scored>>> =
        tokio::task::spawn_blocking(move || {
            chunk
                .into_par_iter()
                .map(|path| read_classified(&reading, path))
                .collect()
        })
        .await
        .map_err(|join| JudgeError::Io {
            path: input.runs_dir.clone(),
            source: std::io::Error::other(format!("a reading thread panicked: {join}")),
        })?;
    let mut out: Vec<Option<Result<Scored>>> = Vec::with_capacity(read.len());
    let mut set = tokio::task::JoinSet::new();
    let mut pending = Vec::new();
    for (index, item) in read.into_iter().enumerate() {
        match item {
            Ok(Ok(rf)) => {
                out.push(None);
                pending.push((index, rf));
            }
            Ok(Err(scored)) => out.push(Some(Ok(scored))),
            Err(err) => out.push(Some(Err(err))),
        }
    }
    let mut queue = pending.into_iter();
    loop {
        while set.len() < jobs {
            let Some((index, rf)) = queue.next() else {
                break;
            };
            let (input, judge) = (Arc::clone(input), Arc::clone(judge));
            set.spawn(async move {
                let task = &input.tasks[&rf.run.task_id];
                let result = judge.evaluate(task, &rf.run).await;
                (index, Scored::New(finish(result), rf))
            });
        }
        let Some(joined) = set.join_next().await else {
            break;
        };
        let (index, scored) = joined.map_err(|join| JudgeError::Io {
            path: input.runs_dir.clone(),
            source: std::io::Error::other(format!("a judge task panicked: {join}")),
        })?;
        out[index] = Some(Ok(scored));
    }
    Ok(out.into_iter().flatten().collect())
}

/// A run reduced to what the comparison with published scores reads (its
/// ids and `scores`).
fn slim_run(mut rf: RunFile) -> RunFile {
    let run = &mut rf.run;
    run.final_answer = serde_json::Value::Null;
    run.tool_trace = Vec::new();
    run.evidence = Vec::new();
    run.reasoning_summary = Vec::new();
    run.unsupported_or_unresolved = Vec::new();
    rf
}

/// A written record reduced to its ids and scores, which a summary and the
/// comparison with published scores read.
fn slim_record(record: EvaluationRecord) -> EvaluationRecord {
    EvaluationRecord {
        answer_units: Vec::new(),
        rubric_ledger: Vec::new(),
        critical_errors: Vec::new(),
        missing_elements: Vec::new(),
        unsupported_claims: Vec::new(),
        rationale: String::new(),
        claims: Vec::new(),
        ..record
    }
}

/// The deterministic judge of a whole release (the `deterministic-v1`
/// records of [`crate::DeterministicJudge`] with [`AnswerUnitsScorer`]),
/// prepared for batches: each task's scoring context and rubric lookups are
/// built once, by its first run, and one scoring of an answer serves both
/// the record and its claim ledger. It has a synchronous form, so
/// [`score_batch`] scores it on all cores.
pub struct ReleaseDeterministicJudge {
    scorer: AnswerUnitsScorer,
    claims: Option<Arc<ClaimSource>>,
    prepared: BTreeMap<String, OnceLock<(ScoringContext, PreparedRubric)>>,
}

impl std::fmt::Debug for ReleaseDeterministicJudge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReleaseDeterministicJudge")
            .field("reading", &self.scorer.reading)
            .field("tasks", &self.prepared.len())
            .finish()
    }
}

impl ReleaseDeterministicJudge {
    /// A judge reading U as `reading`, prepared for the tasks `task_ids`
    /// (a run of another task is judged too, without the reuse).
    pub fn new<I: IntoIterator<Item = String>>(reading: UnitReading, task_ids: I) -> Self {
        Self {
            scorer: AnswerUnitsScorer { reading },
            claims: None,
            prepared: task_ids
                .into_iter()
                .map(|id| (id, OnceLock::new()))
                .collect(),
        }
    }

    /// Writes the claim ledger of each record from `claims` (whose reading
    /// should be this judge's).
    pub fn with_claims(mut self, claims: Arc<ClaimSource>) -> Self {
        self.claims = Some(claims);
        self
    }

    fn judge_now(&self, task: &TaskContext, run: &RunContext) -> EvaluationRecord {
        let local;
        let (context, rubric) = match self.prepared.get(&task.task_id) {
            Some(cell) => cell.get_or_init(|| (scoring_context(task), PreparedRubric::new(task))),
            None => {
                local = (scoring_context(task), PreparedRubric::new(task));
                &local
            }
        };
        let task_score = (run.run_status != RunStatus::Error)
            .then(|| score_task(&task.primary_gt, &run.final_answer, context));
        let claims = match (&self.claims, &task_score) {
            (Some(source), Some(score)) => source.claims_from_score(task, run, score),
            _ => Vec::new(),
        };
        let mut record = evaluate_deterministic_prepared(task, rubric, run, || {
            task_score.map_or_else(
                || {
                    crate::deterministic::UnitScorer::score_units(
                        &self.scorer,
                        task,
                        &run.final_answer,
                    )
                },
                |score| self.scorer.outcome(score),
            )
        });
        record.claims = claims;
        record
    }
}

#[async_trait]
impl Judge for ReleaseDeterministicJudge {
    fn judge_id(&self) -> &str {
        DETERMINISTIC_JUDGE_ID
    }

    async fn evaluate(&self, task: &TaskContext, run: &RunContext) -> Result<EvaluationRecord> {
        Ok(self.judge_now(task, run))
    }

    fn blocking(&self) -> Option<&dyn BlockingJudge> {
        Some(self)
    }
}

impl BlockingJudge for ReleaseDeterministicJudge {
    fn evaluate_now(&self, task: &TaskContext, run: &RunContext) -> Result<EvaluationRecord> {
        Ok(self.judge_now(task, run))
    }
}
