//! The batch runner: many tasks, one system, bounded concurrency, safe to
//! kill and restart, safe to split across machines.
//!
//! # Layout
//! ```text
//! <out>/<system>/<task_id>/trajectory.json      public-schema record (written last)
//! <out>/<system>/<task_id>/answer.md, tool_trace.md, run_notes.md, raw_conversation.json
//! <out>/<system>/<task_id>/python_snippets/      code of every python_exec call
//! <out>/<system>/<task_id>/scratch/               the run's Python scratch directory
//! <out>/<system>/<task_id>.lock                   present while a process runs the task
//! ```
//!
//! # Guarantees
//! - **Resume.** A task whose `trajectory.json` says `run_status: ok` is
//!   skipped. Tasks with an `error` record, or with no `trajectory.json`,
//!   run again. Every file is written atomically (temporary file, `fsync`,
//!   `rename`) and `trajectory.json` last, so a `kill -9` loses at most the
//!   tasks in flight, and a finished task is never run twice.
//! - **Locks.** Before running a task, a process creates
//!   `<task_id>.lock` holding its pid, host name and start time, in one
//!   step: written beside it, then hard-linked into place (which fails if
//!   the lock exists, like `O_CREAT|O_EXCL`), so a killed process never
//!   leaves an empty lock behind; the lock is removed when the
//!   task's record is written. Another process that finds the lock skips the
//!   task (reported as `locked`). A lock is **stale** when its host is this
//!   host and its pid no longer exists (`/proc/<pid>`), or when it is older
//!   than `stale_lock_after` (default 2 h, above the 1,800 s task budget;
//!   the only rule for locks written by other hosts), or when it is empty or
//!   unreadable and older than 10 s (written in place where hard links are
//!   not supported, by a process killed between creating and writing it). A stale lock is taken over by renaming it away (atomic:
//!   one process wins), checking that the renamed file is the one judged
//!   stale, and creating a fresh lock. A reused pid keeps a dead lock alive
//!   until `stale_lock_after`.
//! - **Failures.** A run that fails, a model that cannot be built and a
//!   panicking run all end in an `error` record (`run_status: error`),
//!   which scores zero and stays in the denominator.
//!
//! # Sharding
//! `--shard K/N` (0 <= K < N) keeps the tasks whose FNV-1a 64-bit hash of
//! the task id is K modulo N. The split depends only on the task id, so N
//! machines can run the same release with the same command, write to
//! their own (or a shared) output directory, and the union of their
//! `<out>/<system>/` directories is the full run. Every batch also records
//! its whole task set, all shards together, in `<out>/<system>/batch-plan.json`
//! ([`crate::merge`]), against which `earthverse merge` checks that every
//! task has exactly one finished record.
//!
//! On a cluster, `--shard-from-env` takes K and N from the engine
//! ([`crate::cluster`]: `SLURM_ARRAY_TASK_ID`, `JOB_COMPLETION_INDEX`,
//! `EARTHVERSE_SHARD_COUNT`). The repository's `deploy/shard-run.sh` is the
//! one command line of every array member; `deploy/slurm/` submits it as a
//! Slurm job array (`sbatch --array=0-7%4`), `deploy/k8s/` as a Kubernetes
//! Indexed Job (`completionMode: Indexed`, `backoffLimitPerIndex`). A
//! member that is killed and started again (a resubmitted array index, a
//! retried pod) resumes its shard: finished tasks are skipped, and the dead
//! member's locks are stale once its pid is gone (same host) or after
//! `stale_lock_after`. [`crate::limits`] holds a cost cap and a request-rate
//! cap across all shards sharing the output directory.

use crate::controller::TaskInput;
use crate::error::{ControllerError, Result};
use crate::proc::{host_name, now_unix, pid_alive};
use crate::record::RunRecord;
use crate::solver::Solver;
use crate::Trajectory;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// One shard of a deterministic split (`K/N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// K, 0-based.
    pub index: u64,
    /// N.
    pub count: u64,
}

impl Shard {
    /// Whether `task_id` belongs to this shard.
    pub fn contains(&self, task_id: &str) -> bool {
        fnv1a64(task_id.as_bytes()) % self.count == self.index
    }
}

impl FromStr for Shard {
    type Err = ControllerError;
    fn from_str(value: &str) -> Result<Self> {
        let bad = |reason: &str| ControllerError::Shard {
            value: value.to_string(),
            reason: reason.to_string(),
        };
        let (k, n) = value.split_once('/').ok_or_else(|| bad("no `/`"))?;
        let index: u64 = k.trim().parse().map_err(|_| bad("K is not a number"))?;
        let count: u64 = n.trim().parse().map_err(|_| bad("N is not a number"))?;
        if count == 0 {
            return Err(bad("N must be at least 1"));
        }
        if index >= count {
            return Err(bad("K must be below N"));
        }
        Ok(Self { index, count })
    }
}

/// FNV-1a, 64 bit (the `fnv` crate): a stable hash, identical on every
/// machine and version.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    use std::hash::Hasher;
    let mut hash = fnv::FnvHasher::default();
    hash.write(bytes);
    hash.finish()
}

/// Settings of a batch.
#[derive(Debug, Clone)]
pub struct BatchSettings {
    /// Output root.
    pub out_dir: PathBuf,
    /// System name: the directory under `out_dir`.
    pub system: String,
    /// Tasks run at once (at least 1).
    pub concurrency: usize,
    /// Optional shard.
    pub shard: Option<Shard>,
    /// Age after which any lock is stale.
    pub stale_lock_after: Duration,
    /// Limits shared by every shard of the batch (cost and request-rate
    /// caps, [`crate::limits`]); `None` = no global limit.
    pub limits: Option<Arc<crate::limits::SharedLimits>>,
}

impl BatchSettings {
    /// Settings with concurrency 1, no shard, 2 h stale-lock age.
    pub fn new(out_dir: impl Into<PathBuf>, system: impl Into<String>) -> Self {
        Self {
            out_dir: out_dir.into(),
            system: system.into(),
            concurrency: 1,
            shard: None,
            stale_lock_after: Duration::from_secs(2 * 3_600),
            limits: None,
        }
    }

    /// `<out>/<system>`.
    pub fn system_dir(&self) -> PathBuf {
        self.out_dir.join(sanitize(&self.system))
    }

    /// `<out>/<system>/<task_id>`.
    pub fn task_dir(&self, task_id: &str) -> PathBuf {
        self.system_dir().join(sanitize(task_id))
    }
}

/// Replaces characters that do not belong in a directory name.
pub fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if s.is_empty() || s == "." || s == ".." {
        "_".to_string()
    } else {
        s
    }
}

/// What happened to one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Ran and ended with `run_status: ok`.
    Ok,
    /// Ran and ended with `run_status: error` (scores zero).
    Error,
    /// Skipped: an `ok` record already exists.
    Done,
    /// Skipped: another live process holds the lock.
    Locked,
    /// Not run, or its run discarded unwritten: a global limit of the
    /// batch stopped it ([`crate::limits`]); a resume runs it.
    Stopped,
    /// Ran, but its record could not be written (a full disk, a read-only
    /// folder): nothing of it is on disk, so a resume runs it again. Not a
    /// run that scores zero (§4.1): a run that was never recorded.
    Unwritten,
}

/// What the batch runner did with one task: its status, and for a task it
/// ran, the termination, cost and wall time (not a scored outcome: those are
/// `earthverse-stats-bootstrap`'s `TaskOutcome`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchTaskSummary {
    /// Task id.
    pub task_id: String,
    /// Status.
    pub status: TaskStatus,
    /// Termination reason of a run.
    pub termination_reason: Option<crate::record::TerminationReason>,
    /// Cost of a run.
    pub cost_usd: Option<f64>,
    /// Wall time of a run.
    pub latency_s: f64,
}

/// Progress callbacks (the CLI draws a progress bar from them).
pub trait BatchObserver: Send + Sync {
    /// The plan: tasks in this shard, and how many are already done.
    fn planned(&self, _tasks: usize, _already_done: usize) {}
    /// A task started.
    fn started(&self, _task_id: &str) {}
    /// A task finished or was skipped.
    fn finished(&self, _outcome: &BatchTaskSummary) {}
}

/// An observer that ignores everything.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;
impl BatchObserver for NoProgress {}

/// Totals of a batch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchSummary {
    /// Tasks in the shard.
    pub planned: usize,
    /// Skipped because already done.
    pub already_done: usize,
    /// Ran, `ok`.
    pub ok: usize,
    /// Ran, `error`.
    pub error: usize,
    /// Skipped because locked by another process.
    pub locked: usize,
    /// Not run because a global limit of the batch was reached.
    #[serde(default)]
    pub stopped: usize,
    /// Ran, but the record could not be written; a resume runs them.
    #[serde(default)]
    pub unwritten: usize,
    /// Cost of the runs made now.
    pub cost_usd: f64,
    /// Every outcome, sorted by task id.
    pub outcomes: Vec<BatchTaskSummary>,
}

/// Whether `<task_dir>/trajectory.json` exists and says `ok`.
pub fn is_done(task_dir: &Path) -> bool {
    Trajectory::load(&task_dir.join("trajectory.json"))
        .map(|t| t.is_ok())
        .unwrap_or(false)
}

/// Runs `tasks` (filtered by the shard) with `solver` and returns the
/// totals. Any [`Solver`] works: our `Controller`, an
/// [`crate::AgentFactory`], or a user's own loop.
pub async fn run_batch(
    tasks: Vec<TaskInput>,
    solver: Arc<dyn Solver>,
    settings: BatchSettings,
    observer: Arc<dyn BatchObserver>,
) -> Result<BatchSummary> {
    let system_dir = settings.system_dir();
    std::fs::create_dir_all(&system_dir).map_err(|source| ControllerError::Io {
        path: system_dir.clone(),
        source,
    })?;
    // The whole batch, all shards: what `earthverse merge` checks against.
    crate::merge::record_plan(
        &system_dir,
        &settings.system,
        tasks.iter().map(|t| t.task_id.as_str()),
    )?;
    let mut tasks: Vec<TaskInput> = tasks
        .into_iter()
        .filter(|t| settings.shard.is_none_or(|s| s.contains(&t.task_id)))
        .collect();
    tasks.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    tasks.dedup_by(|a, b| a.task_id == b.task_id);
    let already_done = tasks
        .iter()
        .filter(|t| is_done(&settings.task_dir(&t.task_id)))
        .count();
    observer.planned(tasks.len(), already_done);
    let mut summary = BatchSummary {
        planned: tasks.len(),
        ..BatchSummary::default()
    };

    let settings = Arc::new(settings);
    let semaphore = Arc::new(tokio::sync::Semaphore::new(settings.concurrency.max(1)));
    let mut set = tokio::task::JoinSet::new();
    for task in tasks {
        let permit =
            semaphore
                .clone()
                .acquire_owned()
                .await
                .map_err(|_| ControllerError::Agent {
                    task_id: task.task_id.clone(),
                    message: "the batch semaphore closed".into(),
                })?;
        let solver = solver.clone();
        let settings = settings.clone();
        let observer = observer.clone();
        set.spawn(async move {
            let outcome = run_one(task, solver, &settings, observer.as_ref()).await;
            drop(permit);
            observer.finished(&outcome);
            outcome
        });
        // Collect finished tasks as we go so memory stays flat.
        while let Some(done) = set.try_join_next() {
            collect(&mut summary, done);
        }
    }
    while let Some(done) = set.join_next().await {
        collect(&mut summary, done);
    }
    summary.outcomes.sort_by(|a, b| a.task_id.cmp(&b.task_id));
    Ok(summary)
}

fn collect(
    summary: &mut BatchSummary,
    done: std::result::Result<BatchTaskSummary, tokio::task::JoinError>,
) {
    let Ok(outcome) = done else {
        // run_one catches panics of the run itself; a panic here is in
        // bookkeeping and already logged by tokio.
        summary.error += 1;
        return;
    };
    match outcome.status {
        TaskStatus::Ok => summary.ok += 1,
        TaskStatus::Error => summary.error += 1,
        TaskStatus::Done => summary.already_done += 1,
        TaskStatus::Locked => summary.locked += 1,
        TaskStatus::Stopped => summary.stopped += 1,
        TaskStatus::Unwritten => summary.unwritten += 1,
    }
    summary.cost_usd += outcome.cost_usd.unwrap_or(0.0);
    summary.outcomes.push(outcome);
}

async fn run_one(
    mut task: TaskInput,
    solver: Arc<dyn Solver>,
    settings: &BatchSettings,
    observer: &dyn BatchObserver,
) -> BatchTaskSummary {
    let task_dir = settings.task_dir(&task.task_id);
    let skipped = |status| BatchTaskSummary {
        task_id: task.task_id.clone(),
        status,
        termination_reason: None,
        cost_usd: None,
        latency_s: 0.0,
    };
    let lock_path = settings
        .system_dir()
        .join(format!("{}.lock", sanitize(&task.task_id)));
    if is_done(&task_dir) {
        // A process killed after writing the record but before removing
        // its lock left the lock behind: it goes now, or never would.
        TaskLock::remove_if_stale(&lock_path, settings.stale_lock_after);
        return skipped(TaskStatus::Done);
    }
    if let Some(limits) = &settings.limits {
        match limits.cap_reached() {
            Ok(false) => {}
            Ok(true) => return skipped(TaskStatus::Stopped),
            Err(e) => {
                tracing::error!(task_id = %task.task_id, "cannot read the batch ledger: {e}");
                return skipped(TaskStatus::Stopped);
            }
        }
    }
    let lock = match TaskLock::acquire(&lock_path, &task.task_id, settings.stale_lock_after) {
        Ok(lock) => lock,
        Err(e) => {
            tracing::info!(task_id = %task.task_id, "skipped: {e}");
            return skipped(TaskStatus::Locked);
        }
    };
    // Another process may have finished it between our check and our lock.
    if is_done(&task_dir) {
        drop(lock);
        return skipped(TaskStatus::Done);
    }
    observer.started(&task.task_id);
    task.scratch_dir = task_dir.join("scratch");
    let record = match std::fs::create_dir_all(&task.scratch_dir) {
        Err(e) => RunRecord::error(
            &task.task_id,
            &solver.id(),
            &format!("cannot create {}: {e}", task.scratch_dir.display()),
        ),
        Ok(()) => {
            let task_id = task.task_id.clone();
            let running = solver.clone();
            // A panicking solver ends in an `error` record, not a lost task.
            match tokio::spawn(async move { running.solve(&task).await }).await {
                Ok(record) => record,
                Err(e) => {
                    RunRecord::error(&task_id, &solver.id(), &format!("the run panicked: {e}"))
                }
            }
        }
    };
    let d = &record.trajectory.diagnostics;
    let mut outcome = BatchTaskSummary {
        task_id: record.trajectory.task_id.clone(),
        status: if record.trajectory.is_ok() {
            TaskStatus::Ok
        } else {
            TaskStatus::Error
        },
        termination_reason: d.termination_reason.clone(),
        cost_usd: d.cost(),
        latency_s: d.latency_s.unwrap_or(0.0),
    };
    if outcome.status == TaskStatus::Error
        && settings.limits.as_ref().is_some_and(|l| l.refused_here())
    {
        // The cost cap cut this run short: no record, so a resume (with a
        // higher cap) runs it whole.
        tracing::warn!(task_id = %outcome.task_id, "stopped by the batch cost cap; record not written");
        outcome.status = TaskStatus::Stopped;
        drop(lock);
        return outcome;
    }
    if let Err(e) = record.write_to(&task_dir) {
        tracing::error!(task_id = %outcome.task_id, "cannot write the record: {e}");
        outcome.status = TaskStatus::Unwritten;
    }
    drop(lock);
    outcome
}

/// The per-task lock file (see the module docs for the stale-lock rules).
#[derive(Debug)]
pub struct TaskLock {
    path: PathBuf,
}

#[derive(Debug, Serialize, Deserialize)]
struct LockInfo {
    pid: u32,
    host: String,
    started_unix: u64,
    task_id: String,
}

impl TaskLock {
    /// Creates the lock, taking over a stale one; fails with
    /// [`ControllerError::Locked`] when a live process holds it.
    pub fn acquire(path: &Path, task_id: &str, stale_after: Duration) -> Result<Self> {
        for _ in 0..3 {
            match Self::create(path, task_id) {
                Ok(lock) => return Ok(lock),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let content = std::fs::read_to_string(path).unwrap_or_default();
                    match Self::staleness(path, &content, stale_after) {
                        None => {
                            return Err(ControllerError::Locked {
                                task_id: task_id.to_string(),
                                holder: content.trim().to_string(),
                                path: path.to_path_buf(),
                            })
                        }
                        Some(why) => {
                            tracing::warn!(path = %path.display(), "taking over a stale lock: {why}");
                            let aside =
                                path.with_extension(format!("stale.{}", std::process::id()));
                            if std::fs::rename(path, &aside).is_ok() {
                                let moved = std::fs::read_to_string(&aside).unwrap_or_default();
                                if moved != content {
                                    // We moved a fresh lock someone else just took: put it back.
                                    let _ = std::fs::rename(&aside, path);
                                    return Err(ControllerError::Locked {
                                        task_id: task_id.to_string(),
                                        holder: moved.trim().to_string(),
                                        path: path.to_path_buf(),
                                    });
                                }
                                let _ = std::fs::remove_file(&aside);
                            }
                        }
                    }
                }
                Err(source) => {
                    return Err(ControllerError::Io {
                        path: path.to_path_buf(),
                        source,
                    })
                }
            }
        }
        Err(ControllerError::Locked {
            task_id: task_id.to_string(),
            holder: "contended".into(),
            path: path.to_path_buf(),
        })
    }

    /// Creates the lock with its content in one step: the content is
    /// written to a file beside it, which is then hard-linked into place
    /// (failing with `AlreadyExists` like `create_new`). A process killed at
    /// any point leaves no lock or a complete one, never an empty lock that
    /// a restart right after the kill would have to respect for 10 s. Where
    /// hard links are not supported the lock is created and written in place.
    fn create(path: &Path, task_id: &str) -> std::io::Result<Self> {
        static STAGED: AtomicU64 = AtomicU64::new(0);
        let info = LockInfo {
            pid: std::process::id(),
            host: host_name(),
            started_unix: now_unix(),
            task_id: task_id.to_string(),
        };
        let text = serde_json::to_string(&info).unwrap_or_default();
        let staging = path.with_extension(format!(
            "lock.new.{}.{}",
            std::process::id(),
            STAGED.fetch_add(1, Ordering::Relaxed)
        ));
        // A failed write (a full disk) removes what it staged.
        let staged = std::fs::File::create(&staging)
            .and_then(|mut file| write_synced(&mut file, &text))
            .inspect_err(|_| {
                let _ = std::fs::remove_file(&staging);
            });
        staged?;
        let linked = std::fs::hard_link(&staging, path);
        let _ = std::fs::remove_file(&staging);
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Err(e),
            Err(_) => {
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(path)?;
                if let Err(e) = write_synced(&mut file, &text) {
                    let _ = std::fs::remove_file(path);
                    return Err(e);
                }
            }
        }
        Ok(Self {
            path: path.to_path_buf(),
        })
    }

    /// Why the lock at `path` with `content` is stale, or `None` if live.
    /// Removes the lock at `path` if it is stale (its process is gone, or
    /// it is older than `stale_after`); a live holder's lock, or no lock,
    /// is left as it is.
    fn remove_if_stale(path: &Path, stale_after: Duration) {
        let Ok(content) = std::fs::read_to_string(path) else {
            return;
        };
        if let Some(why) = Self::staleness(path, &content, stale_after) {
            tracing::info!(lock = %path.display(), %why, "removing the stale lock of a finished task");
            let _ = std::fs::remove_file(path);
        }
    }

    fn staleness(path: &Path, content: &str, stale_after: Duration) -> Option<String> {
        let age = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .unwrap_or_default();
        match serde_json::from_str::<LockInfo>(content) {
            Err(_) if age > Duration::from_secs(10) => {
                Some(format!("unreadable lock, {} s old", age.as_secs()))
            }
            Err(_) => None,
            Ok(info) => {
                if age > stale_after {
                    Some(format!("older than {} s", stale_after.as_secs()))
                } else if info.host == host_name() && pid_alive(info.pid) == Some(false) {
                    Some(format!("pid {} on this host is gone", info.pid))
                } else {
                    None
                }
            }
        }
    }
}

fn write_synced(file: &mut std::fs::File, text: &str) -> std::io::Result<()> {
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

impl Drop for TaskLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    /// A solver whose every run ends as an `error` record (scored zero).
    struct Failing;

    #[async_trait::async_trait]
    impl Solver for Failing {
        fn id(&self) -> String {
            "failing".into()
        }
        async fn solve(&self, task: &TaskInput) -> RunRecord {
            RunRecord::error(&task.task_id, "failing", "the model was unreachable")
        }
    }

    fn task(id: &str, root: &Path) -> TaskInput {
        TaskInput {
            task_id: id.into(),
            event_id: "CSX-900".into(),
            question: "q".into(),
            package_root: root.to_path_buf(),
            question_path: None,
            scratch_dir: root.to_path_buf(),
        }
    }

    /// A task whose record is `ok` but whose lock was left by a process
    /// killed between writing the record and removing the lock: the next
    /// batch skips the task as done and removes the dead process's lock
    /// (a kill test of `study run` found it left forever).
    #[tokio::test]
    async fn the_stale_lock_of_a_finished_task_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let settings = BatchSettings::new(dir.path().join("runs"), "failing");
        let run = |settings: BatchSettings| {
            run_batch(
                vec![task("A", dir.path())],
                Arc::new(Failing),
                settings,
                Arc::new(NoProgress),
            )
        };
        run(settings.clone()).await.unwrap();
        // Make the written record an `ok` one.
        let record = settings.task_dir("A").join("trajectory.json");
        let mut t: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&record).unwrap()).unwrap();
        t["diagnostics"]["run_status"] = "ok".into();
        std::fs::write(&record, t.to_string()).unwrap();
        assert!(is_done(&settings.task_dir("A")));
        let lock = settings.system_dir().join("A.lock");
        let dead = LockInfo {
            pid: u32::MAX - 1,
            host: host_name(),
            started_unix: now_unix(),
            task_id: "A".into(),
        };
        std::fs::write(&lock, serde_json::to_string(&dead).unwrap()).unwrap();
        let again = run(settings.clone()).await.unwrap();
        assert_eq!(again.already_done, 1, "{again:?}");
        assert!(!lock.exists(), "the dead process's lock is still there");
        // A live holder's lock is kept.
        let live = LockInfo {
            pid: std::process::id(),
            ..dead
        };
        std::fs::write(&lock, serde_json::to_string(&live).unwrap()).unwrap();
        run(settings.clone()).await.unwrap();
        assert!(lock.exists());
    }

    /// A run that ends as `error` with its record written is a result (it
    /// scores zero, §4.1); a run whose record cannot be written is
    /// `Unwritten`, counted apart, and a resume runs it again.
    #[tokio::test]
    async fn a_record_that_cannot_be_written_is_unwritten_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let settings = BatchSettings::new(dir.path().join("runs"), "failing");
        // `trajectory.json` of task B is a non-empty folder: the record's
        // rename onto it fails (even for root).
        let blocked = settings.task_dir("B").join("trajectory.json");
        std::fs::create_dir_all(&blocked).unwrap();
        std::fs::write(blocked.join("x"), "x").unwrap();
        let tasks = || vec![task("A", dir.path()), task("B", dir.path())];
        let run = |settings: BatchSettings| {
            run_batch(tasks(), Arc::new(Failing), settings, Arc::new(NoProgress))
        };
        let first = run(settings.clone()).await.unwrap();
        let status = |s: &BatchSummary, id: &str| {
            s.outcomes.iter().find(|o| o.task_id == id).unwrap().status
        };
        assert_eq!((first.error, first.unwritten), (1, 1), "{first:?}");
        assert_eq!(status(&first, "A"), TaskStatus::Error);
        assert_eq!(status(&first, "B"), TaskStatus::Unwritten);
        assert!(settings.task_dir("A").join("trajectory.json").is_file());
        std::fs::remove_dir_all(&blocked).unwrap();
        let rerun = run(settings.clone()).await.unwrap();
        assert_eq!((rerun.error, rerun.unwritten), (2, 0), "{rerun:?}");
        assert!(settings.task_dir("B").join("trajectory.json").is_file());
    }

    #[test]
    fn shards_partition_the_tasks() {
        let ids: Vec<String> = (1..=405).map(|i| format!("CSX-{i:03}_Q1")).collect();
        let shards: Vec<Shard> = (0..4).map(|k| format!("{k}/4").parse().unwrap()).collect();
        let mut sizes = [0usize; 4];
        for id in &ids {
            let owners: Vec<usize> = (0..4).filter(|&k| shards[k].contains(id)).collect();
            assert_eq!(owners.len(), 1, "{id} in {owners:?}");
            sizes[owners[0]] += 1;
        }
        assert!(sizes.iter().all(|&s| s > 60), "{sizes:?}");
        assert!("4/4".parse::<Shard>().is_err());
        assert!("1/0".parse::<Shard>().is_err());
        assert!("x".parse::<Shard>().is_err());
        // Known FNV-1a vector.
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
    }

    #[test]
    fn a_lock_appears_with_its_content_and_leaves_no_staging_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("T.lock");
        let lock = TaskLock::acquire(&path, "T", Duration::from_secs(60)).unwrap();
        let info: LockInfo =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!((info.pid, info.task_id.as_str()), (std::process::id(), "T"));
        // A second attempt fails as `create_new` would, and cleans up too.
        let err = TaskLock::create(&path, "T").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["T.lock"]);
        drop(lock);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn locks_exclude_and_stale_locks_are_taken_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("T.lock");
        let lock = TaskLock::acquire(&path, "T", Duration::from_secs(60)).unwrap();
        assert!(matches!(
            TaskLock::acquire(&path, "T", Duration::from_secs(60)),
            Err(ControllerError::Locked { .. })
        ));
        drop(lock);
        assert!(!path.exists());
        // A lock of a dead pid on this host is stale.
        let dead = LockInfo {
            pid: 4_000_000_000,
            host: host_name(),
            started_unix: now_unix(),
            task_id: "T".into(),
        };
        std::fs::write(&path, serde_json::to_string(&dead).unwrap()).unwrap();
        let lock = TaskLock::acquire(&path, "T", Duration::from_secs(60)).unwrap();
        let info: LockInfo =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(info.pid, std::process::id());
        drop(lock);
        // A live lock of another host is respected until it is old.
        let other = LockInfo {
            pid: 1,
            host: "elsewhere".into(),
            started_unix: now_unix(),
            task_id: "T".into(),
        };
        std::fs::write(&path, serde_json::to_string(&other).unwrap()).unwrap();
        assert!(TaskLock::acquire(&path, "T", Duration::from_secs(60)).is_err());
        std::thread::sleep(Duration::from_millis(20));
        assert!(TaskLock::acquire(&path, "T", Duration::from_millis(5)).is_ok());
    }
}
