//! Scoring a study's runs: each folder of runs the study's conditions read
//! is scored once (however many conditions share it) into
//! `scores/<folder>.jsonl` with `rubric_judge::score_release`, resuming
//! what an earlier report scored, and read back as outcomes for
//! [`crate::build_report`].

use crate::{Error, ResolvedStudy, Result};
use earthverse_package_model::Release;
use earthverse_rubric_judge::{
    read_records, score_release, task_outcome, JudgeChoice, ScoreJob, UnitReading,
};
use earthverse_stats_bootstrap::TaskOutcome;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Scores every folder of runs of `study` under `dir` (the study
/// directory) with `judge`, and returns each folder's outcomes. Folders
/// with no runs yet are left out (the report counts their runs as
/// missing). `skipped_task_files` are the task files `study run` skipped:
/// their runs are counted, not scored.
///
/// # Errors
/// A folder whose runs the judge could not all score ([`Error::Scoring`],
/// naming each run; a rerun retries them), or any error of
/// `score_release` or of reading the records back, naming the folder.
pub async fn score_study(
    dir: &Path,
    study: &ResolvedStudy,
    release: &Release,
    judge: JudgeChoice,
    skipped_task_files: &[PathBuf],
) -> Result<BTreeMap<String, Vec<TaskOutcome>>> {
    let scores_dir = dir.join("scores");
    std::fs::create_dir_all(&scores_dir).map_err(|source| Error::Io {
        path: scores_dir.clone(),
        source,
    })?;
    let folders: BTreeSet<&str> = study.conditions.iter().map(|c| c.runs.as_str()).collect();
    let mut scored = BTreeMap::new();
    for folder in folders {
        let runs = dir.join("runs").join(folder);
        if !runs.is_dir() {
            continue;
        }
        let out = scores_dir.join(format!("{folder}.jsonl"));
        let job = ScoreJob {
            runs_dir: runs,
            out: out.clone(),
            restart: false,
            judge: judge.clone(),
            reading: UnitReading::Judge,
            jobs: 4,
            keep_runs: false,
            skipped_task_files: skipped_task_files.to_vec(),
        };
        let failed = |message: String| Error::Scoring {
            folder: folder.to_owned(),
            message,
        };
        let done = score_release(release, &study.release, job)
            .await
            .map_err(|e| failed(error_chain(&e)))?;
        if !done.failures.is_empty() {
            let runs: Vec<String> = done
                .failures
                .iter()
                .map(|(path, e)| format!("{}: {}", path.display(), error_chain(e)))
                .collect();
            return Err(failed(format!(
                "{} run(s) got no valid judgment; rerun the report to retry them:\n{}",
                runs.len(),
                runs.join("\n")
            )));
        }
        if std::fs::metadata(&out).is_ok_and(|m| m.len() > 0) {
            let records = read_records(&out).map_err(|e| failed(error_chain(&e)))?;
            let outcomes = records
                .iter()
                .map(task_outcome)
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| failed(format!("{}: {e}", out.display())))?;
            scored.insert(folder.to_string(), outcomes);
        }
    }
    Ok(scored)
}

/// An error and its causes, `: `-separated.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
