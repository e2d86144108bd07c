//! The answer-unit study behind `earthverse units` (§4.1, App. C.2): how
//! many answer units each task's ground truth holds, and unit-by-unit
//! scores of recorded runs under the three readings of U (judge-like,
//! required, all leaves) with their agreement with the published judge,
//! the Strict@95 shares and the noise floor of the per-system gaps.
//!
//! Each task's scoring context is the one the deterministic judge and
//! `earthverse score` use ([`crate::scoring_context`]).

use crate::{JudgeError, Result};
use earthverse_answer_units::{
    agreement, count_units, decompose, is_tuning_event, score_task, strict_at_95, system_gap_noise,
    Agreement, JudgeReference, RunPair, ScoringContext, SystemGapNoise, UnitLedgerEntry,
};
use earthverse_package_model::{
    load_recorded_answers_with_errors, RecordedAnswerEntry, Release, Task,
};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Answer units of one task.
#[derive(Debug, Serialize)]
pub struct TaskUnits {
    /// The task id.
    pub task_id: String,
    /// The task's event.
    pub event_id: String,
    /// Answer units of `primary_gt` (§4.1).
    pub units: usize,
    /// Units the question names (not metadata).
    pub required: usize,
    /// The expert solution has a JSON Final Answer: the judge-like
    /// reading scores against it.
    pub solution_reference: bool,
}

/// Answer units of every task of a release.
#[derive(Debug, Serialize)]
pub struct CountReport {
    /// Per task.
    pub tasks: Vec<TaskUnits>,
    /// Tasks counted.
    pub task_count: usize,
    /// Units over all tasks.
    pub total_units: usize,
    /// Mean units per task.
    pub mean_units_per_task: f64,
    /// Required units over all tasks.
    pub total_required: usize,
    /// Tasks whose expert solution has a JSON Final Answer.
    pub tasks_with_solution_reference: usize,
}

/// One recorded run scored unit by unit.
#[derive(Debug, Serialize)]
pub struct RunUnits {
    /// The system.
    pub system: String,
    /// The task id.
    pub task_id: String,
    /// The task's event.
    pub event_id: String,
    /// `tuning` or `held_out` (see `is_tuning_event`).
    pub half: &'static str,
    /// The judge-like reading: `u_required` against the expert solution's
    /// Final Answer when it has one, else against `primary_gt`.
    pub u_judge: f64,
    /// What the judge-like reading scored against.
    pub judge_reference: JudgeReference,
    /// `u_required` against the solution's Final Answer, when it has one.
    pub u_solution: Option<f64>,
    /// U over every leaf (the paper's reading).
    pub u_all: f64,
    /// U over the units the question names, against `primary_gt`.
    pub u_required: f64,
    /// U over the required leaves.
    pub u_required_leaves: f64,
    /// Units of the ground truth.
    pub units_total: usize,
    /// Of them, matched.
    pub units_matched: usize,
    /// Units in the judge-like denominator.
    pub units_counted: usize,
    /// Of them, matched.
    pub units_counted_matched: usize,
    /// The published judge's unit accuracy.
    pub published_unit_accuracy: Option<f64>,
    /// The published judge's unit count.
    pub published_units_total: Option<u64>,
    /// The published judge's correct units.
    pub published_units_correct: Option<u64>,
    /// How the final answer parsed.
    pub parse_shape: earthverse_answer_units::AnswerShape,
    /// What the parser did not read as JSON (prose around it, or the
    /// statements of a pending `python_exec` call it did not evaluate);
    /// with `--ledger`, when not empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parse_remainder: Option<String>,
    /// The unit ledger (with `--ledger`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ledger: Option<Vec<UnitLedgerEntry>>,
    /// The ledger against the solution's Final Answer (with `--ledger`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub solution_ledger: Option<Vec<UnitLedgerEntry>>,
}

/// Every recorded run scored unit by unit, with agreement figures.
#[derive(Debug, Serialize)]
pub struct RunsReport {
    /// Per run.
    pub runs: Vec<RunUnits>,
    /// Run files skipped (with `--skip-invalid`), each with why.
    pub skipped_runs: Vec<String>,
    /// Strict@95 shares.
    pub strict95: Strict95,
    /// Judge-like reading (`u_judge`) against the published unit accuracy.
    pub agreement: Agreement,
    /// As `agreement`, on the tuning half.
    pub agreement_tuning: Agreement,
    /// As `agreement`, on the held-out half.
    pub agreement_held_out: Agreement,
    /// `u_required` against `primary_gt` only, against the published unit
    /// accuracy (the judge-like reading without the solution's Final Answer).
    pub agreement_u_required: Agreement,
    /// Paper reading (`u_all`) against the published unit accuracy.
    pub agreement_u_all: Agreement,
    /// Noise floor of the held-out per-system gaps (see [`system_gap_noise`]).
    pub system_gap_noise_held_out: SystemGapNoise,
    /// Noise floor of the per-system gaps over all runs.
    pub system_gap_noise: SystemGapNoise,
}

/// The per-system target of the answer-units issue: every per-system mean
/// within this many points of the published one.
pub const SYSTEM_GAP_TARGET: f64 = 3.0;
/// Resamples and seed of the noise floor (the paper's bootstrap uses 5,000
/// resamples and seed 2026, Appendix C.5; the same are used here).
pub const NOISE_RESAMPLES: usize = 5000;
/// Seed of the noise floor (App. C.5: 2026).
pub const NOISE_SEED: u64 = 2026;

/// Strict@95 shares (%) under each reading and as published.
#[derive(Debug, Serialize)]
pub struct Strict95 {
    /// Ours, judge-like reading.
    pub ours_u_judge: f64,
    /// Ours, required reading.
    pub ours_u_required: f64,
    /// Ours, all leaves.
    pub ours_u_all: f64,
    /// The published judge's.
    pub published: f64,
}

/// The task's scoring context: the one the deterministic judge and
/// `earthverse score` use (`rubric_judge::scoring_context`).
fn context_for(task: &Task) -> Result<ScoringContext> {
    let task_context = crate::TaskContext::from_task(task)?;
    Ok(crate::scoring_context(&task_context))
}

/// Answer units of every task of `release`.
pub fn count_release_units(release: &Release) -> Result<CountReport> {
    let mut tasks = Vec::new();
    for task in release.tasks() {
        let ctx = context_for(task)?;
        let units = decompose(&task.ground_truth.primary_gt, &ctx);
        tasks.push(TaskUnits {
            task_id: task.task_id.clone(),
            event_id: task.event_id.clone(),
            units: count_units(&task.ground_truth.primary_gt),
            required: units.iter().filter(|u| u.required && !u.meta).count(),
            solution_reference: ctx.solution_answer.is_some(),
        });
    }
    let total_units: usize = tasks.iter().map(|t| t.units).sum();
    let report = CountReport {
        task_count: tasks.len(),
        total_units,
        mean_units_per_task: if tasks.is_empty() {
            0.0
        } else {
            total_units as f64 / tasks.len() as f64
        },
        total_required: tasks.iter().map(|t| t.required).sum(),
        tasks_with_solution_reference: tasks.iter().filter(|t| t.solution_reference).count(),
        tasks,
    };
    Ok(report)
}

/// Scores every recorded run under `dir` unit by unit against `release`,
/// with every run's ledger when `with_ledger`.
///
/// # Errors
/// Run files that do not load or answer no task of the release are an
/// error naming each ([`JudgeError::UnloadableRuns`]) unless
/// `skip_invalid`, which scores the rest and lists them in
/// [`RunsReport::skipped_runs`] (the one rule for unloadable inputs).
pub fn score_recorded_units(
    release: &Release,
    dir: &Path,
    with_ledger: bool,
    skip_invalid: bool,
) -> Result<RunsReport> {
    // Only the answers and published scores are read of each run.
    let (entries, errors) =
        load_recorded_answers_with_errors(dir).map_err(|source| JudgeError::Package {
            what: "loading recorded runs from",
            path: dir.to_path_buf(),
            source,
        })?;
    let mut skipped: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
    let mut contexts: BTreeMap<&str, (&Task, ScoringContext)> = BTreeMap::new();
    for task in release.tasks() {
        contexts.insert(task.task_id.as_str(), (task, context_for(task)?));
    }
    // Scoring is pure: the runs are scored on all cores, in order.
    let mut known = Vec::with_capacity(entries.len());
    for entry in &entries {
        match contexts.get(entry.answer.task_id.as_str()) {
            Some((task, ctx)) => known.push((entry, *task, ctx)),
            None => skipped.push(format!(
                "{}: task {} is not in the release",
                entry.path.display(),
                entry.answer.task_id
            )),
        }
    }
    // The one rule for inputs that do not load (as for task files and
    // `score`): an error naming each file, unless --skip-invalid, which
    // goes on and lists them.
    if !skipped.is_empty() && !skip_invalid {
        return Err(JudgeError::UnloadableRuns {
            dir: dir.to_path_buf(),
            runs: skipped,
        });
    }
    let runs: Vec<RunUnits> = known
        .par_iter()
        .map(|(entry, task, ctx)| score_run(entry, task, ctx, with_ledger))
        .collect();
    // Runs with a published score, as pairs, with the task of each.
    let pairs = |half: Option<&str>, reading: Reading| -> (Vec<RunPair>, Vec<&str>) {
        runs.iter()
            .filter(|r| half.is_none_or(|h| r.half == h))
            .filter_map(|r| {
                r.published_unit_accuracy.map(|published| {
                    let pair = RunPair {
                        system: r.system.clone(),
                        ours: match reading {
                            Reading::Judge => r.u_judge,
                            Reading::Required => r.u_required,
                            Reading::All => r.u_all,
                        },
                        published,
                    };
                    (pair, r.task_id.as_str())
                })
            })
            .unzip()
    };
    let noise = |half: Option<&str>| {
        let (pairs, tasks) = pairs(half, Reading::Judge);
        system_gap_noise(
            &pairs,
            &tasks,
            SYSTEM_GAP_TARGET,
            NOISE_RESAMPLES,
            NOISE_SEED,
        )
    };
    // The two noise floors are independent: one thread each.
    let (noise_held_out, noise_all) = std::thread::scope(|scope| {
        let held_out = scope.spawn(|| noise(Some("held_out")));
        let all = noise(None);
        (
            held_out
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            all,
        )
    });
    let report = RunsReport {
        system_gap_noise_held_out: noise_held_out,
        system_gap_noise: noise_all,
        strict95: Strict95 {
            ours_u_judge: strict_at_95(runs.iter().map(|r| r.u_judge)),
            ours_u_required: strict_at_95(runs.iter().map(|r| r.u_required)),
            ours_u_all: strict_at_95(runs.iter().map(|r| r.u_all)),
            published: strict_at_95(runs.iter().filter_map(|r| r.published_unit_accuracy)),
        },
        agreement: agreement(&pairs(None, Reading::Judge).0),
        agreement_tuning: agreement(&pairs(Some("tuning"), Reading::Judge).0),
        agreement_held_out: agreement(&pairs(Some("held_out"), Reading::Judge).0),
        agreement_u_required: agreement(&pairs(None, Reading::Required).0),
        agreement_u_all: agreement(&pairs(None, Reading::All).0),
        skipped_runs: skipped,
        runs,
    };
    Ok(report)
}

fn score_run(
    entry: &RecordedAnswerEntry,
    task: &Task,
    ctx: &ScoringContext,
    with_ledger: bool,
) -> RunUnits {
    let task_score = score_task(
        &task.ground_truth.primary_gt,
        &entry.answer.final_answer,
        ctx,
    );
    let (u_judge, judge_reference) = (task_score.u_judge(), task_score.judge_reference());
    let (score, solution) = (task_score.units, task_score.solution);
    let scores = &entry.answer.scores;
    RunUnits {
        system: entry.system_id.clone(),
        task_id: entry.answer.task_id.clone(),
        event_id: task.event_id.clone(),
        half: if is_tuning_event(&task.event_id) {
            "tuning"
        } else {
            "held_out"
        },
        u_judge,
        judge_reference,
        u_solution: solution.as_ref().map(|s| s.u_required),
        u_all: score.u_all,
        u_required: score.u_required,
        u_required_leaves: score.u_required_leaves,
        units_total: score.units_total,
        units_matched: score.units_matched,
        units_counted: score.units_counted,
        units_counted_matched: score.units_counted_matched,
        published_unit_accuracy: scores.unit_accuracy,
        published_units_total: scores.answer_units_total,
        published_units_correct: scores.answer_units_correct,
        parse_shape: score.parse.shape,
        parse_remainder: Some(score.parse.remainder).filter(|r| with_ledger && !r.is_empty()),
        ledger: with_ledger.then_some(score.ledger),
        solution_ledger: solution.filter(|_| with_ledger).map(|s| s.ledger),
    }
}

/// Which U of a run an agreement figure reads.
#[derive(Debug, Clone, Copy)]
enum Reading {
    Judge,
    Required,
    All,
}
