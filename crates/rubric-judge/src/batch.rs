//! Scoring many runs: loading tasks and recorded runs from disk, resuming
//! an output JSONL file, and agreement with the published scores.

use crate::error::{JudgeError, Result};
use crate::input::{RunContext, TaskContext};
use crate::record::EvaluationRecord;
use crate::{agreement, Agreement};
use earthverse_package_model::parse_json_record;
use earthverse_package_model::{run_file_paths, PackageError, RecordedRun};
use rayon::prelude::*;
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

fn read_json(path: &Path) -> Result<Value> {
    let bytes = std::fs::read(path).map_err(|source| JudgeError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    serde_json::from_slice(&bytes).map_err(|source| JudgeError::Json {
        context: path.display().to_string(),
        source,
    })
}

/// Loads every `tasks/*.json` of a release root into task contexts, by id.
pub fn load_tasks(release_root: &Path) -> Result<BTreeMap<String, TaskContext>> {
    load_tasks_except(release_root, &[])
}

/// [`load_tasks`] without the task files in `skip` (those the caller
/// chose to skip and names itself, e.g. under `--skip-invalid`).
pub fn load_tasks_except(
    release_root: &Path,
    skip: &[PathBuf],
) -> Result<BTreeMap<String, TaskContext>> {
    let dir = release_root.join("tasks");
    let entries = std::fs::read_dir(&dir).map_err(|source| JudgeError::Io {
        path: dir.clone(),
        source,
    })?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| !skip.contains(p))
        .collect();
    paths.sort();
    // Parsed on all cores; the first error in path order is reported.
    let parsed: Vec<Result<TaskContext>> = paths.par_iter().map(|p| read_task(p)).collect();
    let mut tasks = BTreeMap::new();
    for task in parsed {
        let task = task?;
        tasks.insert(task.task_id.clone(), task);
    }
    Ok(tasks)
}

/// One `tasks/*.json` as a task context; errors name the file.
fn read_task(path: &Path) -> Result<TaskContext> {
    let value = read_json(path)?;
    TaskContext::from_task_json(&value).map_err(|e| match e {
        JudgeError::BadInput {
            what,
            id,
            field,
            problem,
        } => JudgeError::BadInput {
            what,
            id: format!("{id} ({})", path.display()),
            field,
            problem,
        },
        other => other,
    })
}

/// A run found on disk.
#[derive(Debug, Clone)]
pub struct RunFile {
    /// Where it was read from.
    pub path: PathBuf,
    /// The run.
    pub run: RunContext,
}

/// Finds every run record (`*.json` objects with `task_id` and
/// `final_answer` or `diagnostics`) under `dir`, recursively, sorted by
/// path (the file listing of run discovery,
/// [`earthverse_package_model::run_file_paths`]), and reads each through
/// package-model's [`RecordedRun`]. Other
/// JSON files are skipped. A run file that is not JSON or does not fit is
/// an error naming it: the one rule of run discovery (see
/// `earthverse_package_model::load_recorded_runs`).
pub fn find_runs(dir: &Path) -> Result<Vec<RunFile>> {
    let paths = run_paths(dir)?;
    // Files are read and parsed on all cores; the order, and so the error
    // reported when several files are bad, stays the paths'.
    let read: Vec<Result<Option<RunFile>>> = paths.into_par_iter().map(read_run).collect();
    let mut runs = Vec::with_capacity(read.len());
    for run in read {
        runs.extend(run?);
    }
    Ok(runs)
}

/// The JSON files under a runs directory, recursively, sorted by path:
/// the files [`find_runs`] reads. With [`read_run`] a caller can read them
/// a batch at a time instead of holding every run in memory.
pub fn run_paths(dir: &Path) -> Result<Vec<PathBuf>> {
    run_file_paths(dir).map_err(|e| match e {
        PackageError::Io { path, source } => JudgeError::Io { path, source },
        other => JudgeError::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::other(other.to_string()),
        },
    })
}

/// Reads one JSON file of a runs directory (one of [`run_paths`]): `None`
/// when it is not a run record; a run record that does not fit is an
/// error naming the file.
pub fn read_run(path: PathBuf) -> Result<Option<RunFile>> {
    let bytes = std::fs::read(&path).map_err(|source| JudgeError::Io {
        path: path.clone(),
        source,
    })?;
    // Fast path, one pass over the bytes: a typed parse that succeeds with
    // a non-null `final_answer` has `task_id` (a required field) and
    // `final_answer` at the top level, so it is a run record (the same
    // decision as the key check below, which it spares).
    let record = match serde_json::from_slice::<RecordedRun>(&bytes) {
        Ok(record) if !record.final_answer.is_null() => record,
        _ => match run_record_slow(&path, &bytes)? {
            Some(record) => record,
            None => return Ok(None),
        },
    };
    let run = RunContext::from_recorded_run_owned(record).map_err(|e| match e {
        JudgeError::BadInput {
            what,
            field,
            problem,
            ..
        } => JudgeError::BadInput {
            what,
            id: path.display().to_string(),
            field,
            problem,
        },
        other => other,
    })?;
    Ok(Some(RunFile { path, run }))
}

/// The run record of a file's bytes after a key check: `None` when the
/// file is not a run record (not a JSON object, or without `task_id` and
/// one of `final_answer` / `diagnostics`); a run record that fails to
/// parse is an error naming the file and the field.
fn run_record_slow(path: &Path, bytes: &[u8]) -> Result<Option<RecordedRun>> {
    // The top-level keys only, values skipped: no document is built.
    let keys = match serde_json::from_slice::<BTreeMap<String, IgnoredAny>>(bytes) {
        Ok(keys) => keys,
        // Valid JSON that is not an object is not a run record.
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            tracing::debug!(path = %path.display(), "not a JSON object; skipped");
            return Ok(None);
        }
        Err(source) => {
            return Err(JudgeError::Json {
                context: path.display().to_string(),
                source,
            })
        }
    };
    let has = |key: &str| keys.contains_key(key);
    if !(has("task_id") && (has("final_answer") || has("diagnostics"))) {
        tracing::debug!(path = %path.display(), "not a run record; skipped");
        return Ok(None);
    }
    parse_json_record(path, bytes)
        .map(Some)
        .map_err(|e| JudgeError::BadInput {
            what: "run",
            id: path.display().to_string(),
            field: e.field,
            problem: e.message,
        })
}

/// Reads the records already in a JSONL output (for resuming). A truncated
/// last line (a crash mid-write) is dropped; any other bad line is an error.
pub fn read_records(path: &Path) -> Result<Vec<EvaluationRecord>> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(JudgeError::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let lines: Vec<String> = std::io::BufReader::new(file)
        .lines()
        .collect::<std::io::Result<_>>()
        .map_err(|source| JudgeError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    let mut out = Vec::new();
    let last = lines.len().saturating_sub(1);
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(r) => out.push(r),
            Err(_) if i == last => {
                tracing::warn!(path = %path.display(), line = i + 1, "dropping a truncated last record");
            }
            Err(source) => {
                return Err(JudgeError::Json {
                    context: format!("{} line {}", path.display(), i + 1),
                    source,
                })
            }
        }
    }
    Ok(out)
}

/// Appends records to a JSONL file, one per line, flushed after each, so a
/// killed batch loses at most the record being written.
#[derive(Debug)]
pub struct RecordWriter {
    path: PathBuf,
    file: std::fs::File,
}

impl RecordWriter {
    /// Opens `path` for appending, rewriting it first with `keep` (the
    /// valid records read by [`read_records`]) so a truncated tail is gone.
    pub fn resume(path: &Path, keep: &[EvaluationRecord]) -> Result<Self> {
        let io = |source| JudgeError::Io {
            path: path.to_path_buf(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(io)?;
        }
        let mut text = String::new();
        for r in keep {
            text.push_str(
                &serde_json::to_string(r).map_err(|source| JudgeError::Json {
                    context: "evaluation record".into(),
                    source,
                })?,
            );
            text.push('\n');
        }
        // Rewritten through a temporary file renamed over it; a failed
        // write (a full disk) removes the temporary file and leaves `path`
        // as it was, so the next run resumes the same records.
        let tmp = path.with_extension("jsonl.tmp");
        if let Err(e) = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path)) {
            let _ = std::fs::remove_file(&tmp);
            return Err(io(e));
        }
        let file = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(io)?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Appends one record.
    pub fn write(&mut self, record: &EvaluationRecord) -> Result<()> {
        let line = record_line(record)?;
        self.write_lines(line.as_bytes())
    }

    /// Appends records already serialised by [`record_line`] (one or more
    /// whole lines, each ending in `\n`) in one write, then flushes: the
    /// batched form of [`RecordWriter::write`], so records can be
    /// serialised on the threads that scored them.
    pub fn write_lines(&mut self, lines: &[u8]) -> Result<()> {
        self.file
            .write_all(lines)
            .and_then(|_| self.file.flush())
            .map_err(|source| JudgeError::Io {
                path: self.path.clone(),
                source,
            })
    }
}

/// One record as [`RecordWriter`] writes it: its JSON on one line,
/// ending in `\n`.
pub fn record_line(record: &EvaluationRecord) -> Result<String> {
    let mut line = serde_json::to_string(record).map_err(|source| JudgeError::Json {
        context: "evaluation record".into(),
        source,
    })?;
    line.push('\n');
    Ok(line)
}

/// The (task, system) pairs of records, for skipping finished work.
pub fn done_keys(records: &[EvaluationRecord]) -> BTreeSet<(String, String)> {
    records
        .iter()
        .map(|r| (r.task_id.clone(), r.system.clone()))
        .collect()
}

/// Agreement of our records with the published scores stored in recorded
/// runs, for U, H, P and Core.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedAgreement {
    /// Runs with published scores that were matched to a record.
    pub runs: usize,
    /// U against `scores.unit_accuracy`.
    pub unit_accuracy: Agreement,
    /// H against `scores.answer`.
    pub answer_correctness: Agreement,
    /// P against `scores.rubric`.
    pub rubric: Agreement,
    /// Core against `scores.overall`.
    pub core: Agreement,
    /// Per-system means (ours, published) of Core, for a leaderboard check.
    pub system_core_means: BTreeMap<String, (f64, f64)>,
    /// Agreement of per-system mean Core.
    pub system_core: Agreement,
}

/// Compares `records` with the `scores` of the runs they came from
/// (matched by task id and system). Runs without published scores are
/// ignored.
pub fn compare_published(records: &[EvaluationRecord], runs: &[RunFile]) -> PublishedAgreement {
    let by_key: BTreeMap<(&str, &str), &EvaluationRecord> = records
        .iter()
        .map(|r| ((r.task_id.as_str(), r.system.as_str()), r))
        .collect();
    let mut cols: [(Vec<f64>, Vec<f64>); 4] = Default::default();
    let mut per_system: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    let mut n = 0;
    for rf in runs {
        let Some(scores) = rf.run.published_scores.as_ref() else {
            continue;
        };
        let Some(rec) = by_key.get(&(rf.run.task_id.as_str(), rf.run.system.as_str())) else {
            continue;
        };
        let (Some(u), Some(h), Some(p)) = (scores.unit_accuracy, scores.answer, scores.rubric)
        else {
            continue;
        };
        let core = scores.overall.unwrap_or((h.min(u) + p) / 2.0);
        n += 1;
        for (i, (ours, theirs)) in [
            (rec.unit_accuracy, u),
            (rec.answer_correctness_score, h),
            (rec.llm_rubric_score, p),
            (rec.core, core),
        ]
        .into_iter()
        .enumerate()
        {
            cols[i].0.push(ours);
            cols[i].1.push(theirs);
        }
        let e = per_system.entry(rec.system.clone()).or_default();
        e.0.push(rec.core);
        e.1.push(core);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let system_core_means: BTreeMap<String, (f64, f64)> = per_system
        .iter()
        .map(|(s, (a, b))| (s.clone(), (mean(a), mean(b))))
        .collect();
    let (sa, sb): (Vec<f64>, Vec<f64>) = system_core_means.values().copied().unzip();
    PublishedAgreement {
        runs: n,
        unit_accuracy: agreement(&cols[0].0, &cols[0].1),
        answer_correctness: agreement(&cols[1].0, &cols[1].1),
        rubric: agreement(&cols[2].0, &cols[2].1),
        core: agreement(&cols[3].0, &cols[3].1),
        system_core: agreement(&sa, &sb),
        system_core_means,
    }
}
