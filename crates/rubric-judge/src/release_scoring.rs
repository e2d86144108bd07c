//! Scoring a release's runs into one evaluation-record file, resumably:
//! everything `earthverse score` (and `study report`, for each folder of
//! runs) does between parsing its arguments and printing its summary.
//!
//! [`score_release`] loads the release's tasks (less the task files the
//! caller skipped), each task's reference files for the claim ledger, the
//! records already in the output (a killed or failed batch resumes: each
//! run is judged once), builds the judge ([`JudgeChoice`]: the deterministic
//! judge, or an LLM judge with its on-disk cache and bounded re-asks) and
//! streams the runs through [`score_batch`].

use crate::evidence::ClaimSource;
use crate::{
    done_keys, load_tasks_except, read_records, score_batch, EvaluationRecord, Judge, JudgeCache,
    JudgeError, LlmJudge, RecordWriter, ReleaseDeterministicJudge, Result, RunFile, ScoreInput,
    ScoreOptions, UnitReading,
};
use earthverse_model_provider::ChatModel;
use earthverse_package_model::Release;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

/// Which judge scores the runs.
#[derive(Clone)]
pub enum JudgeChoice {
    /// The deterministic judge ([`ReleaseDeterministicJudge`]).
    Deterministic,
    /// An LLM judge (App. E JUDGE prompt) over `model`, caching each valid
    /// record under `cache_dir` and re-asking an invalid reply at most
    /// `max_attempts` times per record (§4.1).
    Llm {
        /// The judge model.
        model: Arc<dyn ChatModel>,
        /// The judge cache folder.
        cache_dir: PathBuf,
        /// Most judge calls per record.
        max_attempts: u32,
    },
}

impl std::fmt::Debug for JudgeChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JudgeChoice::Deterministic => f.write_str("Deterministic"),
            JudgeChoice::Llm {
                cache_dir,
                max_attempts,
                ..
            } => f
                .debug_struct("Llm")
                .field("cache_dir", cache_dir)
                .field("max_attempts", max_attempts)
                .finish_non_exhaustive(),
        }
    }
}

/// What to score and where.
#[derive(Debug, Clone)]
pub struct ScoreJob {
    /// Directory of run records, searched recursively.
    pub runs_dir: PathBuf,
    /// The evaluation-record file (JSONL): records already in it are kept
    /// and their runs skipped.
    pub out: PathBuf,
    /// Start the output afresh instead of resuming it.
    pub restart: bool,
    /// The judge.
    pub judge: JudgeChoice,
    /// Reading of U (App. C.2) for the deterministic judge and the claims.
    pub reading: UnitReading,
    /// Concurrent calls of a judge without a synchronous form.
    pub jobs: usize,
    /// Keep every run (slimmed) for [`crate::compare_published`].
    pub keep_runs: bool,
    /// Task files the caller skipped (`--skip-invalid`): their tasks are not
    /// loaded and their runs are counted, not scored.
    pub skipped_task_files: Vec<PathBuf>,
}

/// Calls an LLM judge made (from its counters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JudgeCalls {
    /// Model calls made.
    pub model_calls: u64,
    /// Replies rejected as invalid and re-asked.
    pub invalid_replies: u64,
    /// Records served from the cache.
    pub cache_hits: u64,
}

/// What [`score_release`] did.
#[derive(Debug)]
pub struct ScoredRelease {
    /// Every record of the output: those it already held, then those
    /// written now (slimmed to ids and scores).
    pub records: Vec<EvaluationRecord>,
    /// With [`ScoreJob::keep_runs`]: every run found, slimmed.
    pub runs: Vec<RunFile>,
    /// Run files found (not counting runs of skipped tasks).
    pub found: usize,
    /// Of them, runs whose record was already written.
    pub already: usize,
    /// Records written now.
    pub scored: usize,
    /// Runs of the skipped task files, by path.
    pub runs_of_skipped: Vec<PathBuf>,
    /// Runs the judge gave no valid record for (a rerun retries them).
    pub failures: Vec<(PathBuf, JudgeError)>,
    /// Problems of the tasks' rubrics (task id, problem): scored anyway.
    pub rubric_problems: Vec<(String, String)>,
    /// An LLM judge's calls and its cache folder.
    pub judge_calls: Option<(JudgeCalls, PathBuf)>,
}

/// Scores the runs of `job.runs_dir` against `release` (loaded from
/// `release_root`) into `job.out`, resuming it unless `job.restart`.
///
/// # Errors
/// A task file that does not load (and was not skipped), an unreadable
/// output to resume, an output that cannot be written, or a runs folder
/// that cannot be read, each naming its path. A run the judge cannot score
/// is not an error: it is in [`ScoredRelease::failures`].
pub async fn score_release(
    release: &Release,
    release_root: &Path,
    job: ScoreJob,
) -> Result<ScoredRelease> {
    tracing::debug!("score: loading tasks");
    // Runs of a skipped task file (its name is the task id) are not scored
    // either; they are counted and named.
    let skipped_ids: BTreeSet<String> = job
        .skipped_task_files
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    let tasks = load_tasks_except(release_root, &job.skipped_task_files)?;
    let mut rubric_problems = Vec::new();
    for task in tasks.values() {
        let report = task.rubric.validate();
        for problem in &report.errors {
            rubric_problems.push((task.task_id.clone(), problem.to_string()));
        }
        for advice in &report.warnings {
            tracing::info!(task = %task.task_id, %advice, "rubric coverage");
        }
    }
    tracing::debug!(tasks = tasks.len(), "score: tasks loaded");
    // The reference analysis files of each task, for the claim ledger.
    let references: BTreeMap<String, Vec<String>> = crate::evidence::task_references(release)
        .into_iter()
        .map(|(id, files)| (id.to_owned(), files))
        .collect();
    let previous = if job.restart {
        Vec::new()
    } else {
        read_records(&job.out)?
    };
    let done = done_keys(&previous);
    let mut writer = RecordWriter::resume(&job.out, &previous)?;
    let mut records = previous;
    let claim_source = Arc::new(ClaimSource {
        reading: job.reading,
        references,
    });
    let llm = match &job.judge {
        JudgeChoice::Deterministic => None,
        JudgeChoice::Llm {
            model,
            cache_dir,
            max_attempts,
        } => {
            let judge = LlmJudge::new(Arc::clone(model))
                .with_cache(JudgeCache::new(cache_dir))
                .with_max_attempts(*max_attempts)
                .with_claims(Arc::clone(&claim_source));
            Some((Arc::new(judge), cache_dir.clone()))
        }
    };
    let judge: Arc<dyn Judge> = match &llm {
        Some((judge, _)) => Arc::clone(judge) as Arc<dyn Judge>,
        None => Arc::new(
            ReleaseDeterministicJudge::new(job.reading, tasks.keys().cloned())
                .with_claims(Arc::clone(&claim_source)),
        ),
    };
    let tasks = Arc::new(tasks);
    let input = ScoreInput {
        runs_dir: job.runs_dir.clone(),
        release_root: release_root.to_path_buf(),
        tasks: Arc::clone(&tasks),
        skipped_tasks: skipped_ids,
        done,
    };
    let options = ScoreOptions {
        jobs: job.jobs,
        keep_runs: job.keep_runs,
    };
    let batch = score_batch(input, Arc::clone(&judge), &mut writer, options).await?;
    let judge_calls = llm.as_ref().map(|(judge, cache_dir)| {
        let stats = judge.stats();
        let calls = JudgeCalls {
            model_calls: stats.model_calls.load(Relaxed),
            invalid_replies: stats.invalid_replies.load(Relaxed),
            cache_hits: stats.cache_hits.load(Relaxed),
        };
        (calls, cache_dir.clone())
    });
    // The per-task structures are large: freed off the caller's thread.
    drop_in_background((judge, llm, claim_source, tasks));
    let scored = batch.records.len();
    records.extend(batch.records);
    Ok(ScoredRelease {
        records,
        runs: batch.runs,
        found: batch.found,
        already: batch.already,
        scored,
        runs_of_skipped: batch.runs_of_skipped,
        failures: batch.failures,
        rubric_problems,
        judge_calls,
    })
}

/// Drops `value` on another thread: freeing the many small allocations of
/// the runs, tasks and records takes a noticeable share of a whole-release
/// score, and nothing waits for it (at exit the process ends it). When no
/// thread can be started the value is dropped here instead.
pub fn drop_in_background<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("score-drop".into())
        .spawn(move || drop(value));
}
