//! `earthverse units`: answer-unit counts per task (§4.1), or unit-by-unit
//! scores of recorded runs with their agreement with the published judge.

use anyhow::Context;
use earthverse_answer_units::{
    agreement, count_units, decompose, is_tuning_event, score_task, shown, strict_at_95,
    system_gap_noise, Agreement, AnswerShape, JudgeReference, RunPair, ScoringContext,
    SystemGapNoise, UnitLedgerEntry, MIN_RUNS_FOR_SYSTEM_GAP,
};
use earthverse_package_model::{
    load_recorded_answers_with_errors, RecordedAnswerEntry, Release, Task,
};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `earthverse units`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Root of a release (the directory holding `tasks/`).
    pub release_root: PathBuf,
    /// Score the recorded runs in this directory (`exploration`,
    /// `exploration/trajectories`, or one system's folder).
    #[arg(long)]
    pub runs: Option<PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Include every run's unit ledger (with `--runs`).
    #[arg(long)]
    pub ledger: bool,
    /// Unloadable task files: an error, or skipped and named.
    #[command(flatten)]
    pub skip: super::inputs::SkipInvalid,
}

#[derive(Debug, Serialize)]
struct TaskUnits {
    task_id: String,
    event_id: String,
    units: usize,
    required: usize,
    /// The expert solution has a JSON Final Answer: the judge-like
    /// reading scores against it.
    solution_reference: bool,
}

#[derive(Debug, Serialize)]
struct CountReport {
    tasks: Vec<TaskUnits>,
    task_count: usize,
    total_units: usize,
    mean_units_per_task: f64,
    total_required: usize,
    tasks_with_solution_reference: usize,
}

#[derive(Debug, Serialize)]
struct RunUnits {
    system: String,
    task_id: String,
    event_id: String,
    /// `tuning` or `held_out` (see `is_tuning_event`).
    half: &'static str,
    /// The judge-like reading: `u_required` against the expert solution's
    /// Final Answer when it has one, else against `primary_gt`.
    u_judge: f64,
    judge_reference: JudgeReference,
    /// `u_required` against the solution's Final Answer, when it has one.
    u_solution: Option<f64>,
    u_all: f64,
    u_required: f64,
    u_required_leaves: f64,
    units_total: usize,
    units_matched: usize,
    units_counted: usize,
    units_counted_matched: usize,
    published_unit_accuracy: Option<f64>,
    published_units_total: Option<u64>,
    published_units_correct: Option<u64>,
    parse_shape: earthverse_answer_units::AnswerShape,
    /// What the parser did not read as JSON (prose around it, or the
    /// statements of a pending `python_exec` call it did not evaluate);
    /// with `--ledger`, when not empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    parse_remainder: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ledger: Option<Vec<UnitLedgerEntry>>,
    /// The ledger against the solution's Final Answer (with `--ledger`).
    #[serde(skip_serializing_if = "Option::is_none")]
    solution_ledger: Option<Vec<UnitLedgerEntry>>,
}

#[derive(Debug, Serialize)]
struct RunsReport {
    runs: Vec<RunUnits>,
    skipped_runs: Vec<String>,
    strict95: Strict95,
    /// Judge-like reading (`u_judge`) against the published unit accuracy.
    agreement: Agreement,
    agreement_tuning: Agreement,
    agreement_held_out: Agreement,
    /// `u_required` against `primary_gt` only, against the published unit
    /// accuracy (the judge-like reading without the solution's Final Answer).
    agreement_u_required: Agreement,
    /// Paper reading (`u_all`) against the published unit accuracy.
    agreement_u_all: Agreement,
    /// Noise floor of the held-out per-system gaps (see [`system_gap_noise`]).
    system_gap_noise_held_out: SystemGapNoise,
    /// Noise floor of the per-system gaps over all runs.
    system_gap_noise: SystemGapNoise,
}

/// The per-system target of the answer-units issue: every per-system mean
/// within this many points of the published one.
const SYSTEM_GAP_TARGET: f64 = 3.0;
/// Resamples and seed of the noise floor (the paper's bootstrap uses 5,000
/// resamples and seed 2026, Appendix C.5; the same are used here).
const NOISE_RESAMPLES: usize = 5000;
const NOISE_SEED: u64 = 2026;

#[derive(Debug, Serialize)]
struct Strict95 {
    ours_u_judge: f64,
    ours_u_required: f64,
    ours_u_all: f64,
    published: f64,
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let release = Release::load(&args.release_root)
        .with_context(|| format!("loading release {}", args.release_root.display()))?;
    // Skipped files are named on stderr, before the tables.
    args.skip.check(&release, "units")?;
    match &args.runs {
        None => count(&release, args.json),
        Some(dir) => score_runs(&release, dir, &args),
    }
}

/// The task's scoring context: the one the deterministic judge and
/// `earthverse score` use (`rubric_judge::scoring_context`).
fn context_for(task: &Task) -> anyhow::Result<ScoringContext> {
    let task_context = earthverse_rubric_judge::TaskContext::from_task(task)
        .with_context(|| format!("task {}", task.task_id))?;
    Ok(earthverse_rubric_judge::scoring_context(&task_context))
}

fn count(release: &Release, json: bool) -> anyhow::Result<ExitCode> {
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
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!("{:<16} {:>6} {:>9}", "task", "units", "required");
        for t in &report.tasks {
            println!("{:<16} {:>6} {:>9}", t.task_id, t.units, t.required);
        }
        println!(
            "total: {} units over {} tasks ({:.2} per task); {} named by the questions; \
             {} tasks with a JSON Final Answer in the expert solution (the judge-like reference)",
            report.total_units,
            report.task_count,
            report.mean_units_per_task,
            report.total_required,
            report.tasks_with_solution_reference
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn score_runs(release: &Release, dir: &std::path::Path, args: &Args) -> anyhow::Result<ExitCode> {
    // Only the answers and published scores are read of each run.
    let (entries, errors) = load_recorded_answers_with_errors(dir)
        .with_context(|| format!("loading recorded runs from {}", dir.display()))?;
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
    if !skipped.is_empty() && !args.skip.skip_invalid {
        anyhow::bail!(
            "units: {} run file(s) under {} do not load or answer no task of the release; \
             fix them, or give --skip-invalid to score the rest and list them:\n{}",
            skipped.len(),
            dir.display(),
            skipped.join("\n")
        );
    }
    let with_ledger = args.ledger;
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
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    print_runs(&report, args.ledger);
    Ok(ExitCode::SUCCESS)
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

/// Why a ledger entry is left out of the judge-like denominator (empty
/// when it counts).
fn not_counted_note(e: &UnitLedgerEntry) -> String {
    if e.counted {
        String::new()
    } else if let Some(first) = &e.repeat_of {
        format!(" [not counted: repeats {first}]")
    } else if e.meta {
        " [not counted: scoring metadata]".to_owned()
    } else if e.given {
        " [not counted: given by the question]".to_owned()
    } else {
        " [not counted: the question does not name it and it did not match]".to_owned()
    }
}

fn print_runs(report: &RunsReport, ledger: bool) {
    println!(
        "{:<24} {:<14} {:>8} {:>8} {:>8} {:>10} {:>6}",
        "system", "task", "U_judge", "U_req", "U_all", "published", "half"
    );
    for r in &report.runs {
        let published = r
            .published_unit_accuracy
            .map_or("-".to_owned(), |p| format!("{p:.2}"));
        println!(
            "{:<24} {:<14} {:>8.2} {:>8.2} {:>8.2} {:>10} {:>6}",
            r.system,
            r.task_id,
            r.u_judge,
            r.u_required,
            r.u_all,
            published,
            if r.half == "tuning" { "tune" } else { "held" }
        );
        if !ledger {
            continue;
        }
        if r.parse_shape == AnswerShape::PendingCode {
            println!(
                "  answer: a pending python_exec call, scored by the variables its code computes"
            );
            if let Some(remainder) = &r.parse_remainder {
                println!("  statements not evaluated:");
                for statement in remainder.lines() {
                    println!("    {statement}");
                }
            }
        }
        let ledgers = [
            ("primary_gt", r.ledger.as_ref()),
            (
                "the expert solution's Final Answer (judge-like reference)",
                r.solution_ledger.as_ref(),
            ),
        ];
        for (reference, entries) in ledgers {
            let Some(entries) = entries else { continue };
            println!("  against {reference}:");
            for e in entries {
                println!(
                    "    {} {:<48} expected {} found {} at {} — {}{}",
                    match (e.counted, e.matched) {
                        (true, true) => "✔",
                        (true, false) => "✘",
                        (false, _) => "·",
                    },
                    e.path,
                    e.expected,
                    e.found.as_ref().map_or("-".to_owned(), |v| v.to_string()),
                    e.found_at.as_deref().unwrap_or("-"),
                    e.why,
                    not_counted_note(e)
                );
            }
        }
    }
    for skipped in &report.skipped_runs {
        println!("skipped: {skipped}");
    }
    println!();
    let line = |name: &str, a: &Agreement| {
        println!(
            "{name:<22} runs {:4}  MAE {:5.2}  bias {:+5.2}  Pearson {:.3}  Spearman {:.3}  within5 {:5.1}%  within10 {:5.1}%  max system gap {:.2} (systems with ≥ {MIN_RUNS_FOR_SYSTEM_GAP} runs: {:.2})",
            a.runs, shown(a.mae), shown(a.bias), shown(a.pearson), shown(a.spearman), shown(a.within5), shown(a.within10), shown(a.max_system_gap), shown(a.max_system_gap_min_runs)
        );
    };
    line("U_judge vs published", &report.agreement);
    line("  tuning events", &report.agreement_tuning);
    line("  held-out events", &report.agreement_held_out);
    line("U_req vs published", &report.agreement_u_required);
    line("U_all vs published", &report.agreement_u_all);
    println!(
        "Strict@95: ours (U_judge) {:.1}%, ours (U_req) {:.1}%, ours (U_all) {:.1}%, published {:.1}%",
        report.strict95.ours_u_judge,
        report.strict95.ours_u_required,
        report.strict95.ours_u_all,
        report.strict95.published
    );
    for (title, noise) in [
        ("all runs", &report.system_gap_noise),
        ("held-out events", &report.system_gap_noise_held_out),
    ] {
        if noise.systems == 0 {
            println!(
                "Per-system gap noise floor, {title}: no system has {MIN_RUNS_FOR_SYSTEM_GAP} runs"
            );
            continue;
        }
        println!(
            "Per-system gap noise floor, {title} ({} systems with ≥ {MIN_RUNS_FOR_SYSTEM_GAP} runs; \
             differences shuffled among the runs of each task, {} resamples, seed {}): \
             largest gap median {:.2}, 90th percentile {:.2}; all within {} points in {:.1}% of resamples; \
             observed {:.2} (reached or exceeded in {:.1}%)",
            noise.systems,
            noise.resamples,
            noise.seed,
            shown(noise.median_max_gap),
            shown(noise.p90_max_gap),
            noise.tolerance,
            shown(noise.share_all_within.map(|s| 100.0 * s)),
            shown(noise.observed_max_gap),
            shown(noise.share_at_least_observed.map(|s| 100.0 * s))
        );
    }
    for (title, a) in [
        ("all runs", &report.agreement),
        ("held-out events", &report.agreement_held_out),
    ] {
        println!(
            "\n{title}: per-system means (± standard error of the mean difference; \
             systems with fewer than {MIN_RUNS_FOR_SYSTEM_GAP} runs are listed but noisy)"
        );
        println!(
            "{:<24} {:>5} {:>8} {:>10} {:>7} {:>6}",
            "system", "runs", "ours", "published", "Δ", "±SE"
        );
        for s in &a.per_system {
            println!(
                "{:<24} {:>5} {:>8.2} {:>10.2} {:>+7.2} {:>6.2}",
                s.system,
                s.runs,
                s.ours,
                s.published,
                s.ours - s.published,
                shown(s.gap_se)
            );
        }
    }
}
