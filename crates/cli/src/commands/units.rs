//! `earthverse units`: answer-unit counts per task (§4.1), or unit-by-unit
//! scores of recorded runs with their agreement with the published judge
//! (`earthverse_rubric_judge::unit_study`); here the arguments and tables.

use anyhow::Context;
use earthverse_answer_units::{
    shown, Agreement, AnswerShape, UnitLedgerEntry, MIN_RUNS_FOR_SYSTEM_GAP, UNDEFINED,
};
use earthverse_package_model::Release;
use earthverse_rubric_judge::unit_study::{count_release_units, score_recorded_units, RunsReport};
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

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let release = Release::load(&args.release_root)
        .with_context(|| format!("loading release {}", args.release_root.display()))?;
    // Skipped files are named on stderr, before the tables.
    args.skip.check(&release, "units")?;
    match &args.runs {
        None => count(&release, args.json),
        Some(dir) => {
            let report = score_recorded_units(&release, dir, args.ledger, args.skip.skip_invalid)?;
            if args.json {
                println!("{}", serde_json::to_string(&report)?);
            } else {
                print_runs(&report, args.ledger);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn count(release: &Release, json: bool) -> anyhow::Result<ExitCode> {
    let report = count_release_units(release)?;
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
            .map_or(UNDEFINED.to_owned(), |p| format!("{p:.2}"));
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
                    e.found
                        .as_ref()
                        .map_or(UNDEFINED.to_owned(), |v| v.to_string()),
                    e.found_at.as_deref().unwrap_or(UNDEFINED),
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
