//! `earthverse evidence --families`: run-level failure families of
//! recorded runs (issue #48; §D.2, Figs. 8–10) and their agreement with
//! the published judge's typed critical errors, per kind, as Cohen's κ,
//! recall and precision with bootstrap intervals (5,000 resamples, seed
//! 2026), on all runs and on the events the rules were not tuned on.

use earthverse_answer_units::is_tuning_event;
use earthverse_evidence_ledger::RunFamily;
use earthverse_rubric_judge::families::{
    self, co_occurrences, core_band, event_of, family_effects, kind_agreement, FamilyRun,
    SystemFamily,
};
use earthverse_stats_bootstrap::BootstrapConfig;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Serialize)]
struct FamiliesReport<'a> {
    runs: &'a [FamilyRun],
    agreement_all: Vec<earthverse_rubric_judge::families::KindAgreement>,
    agreement_held_out: Vec<earthverse_rubric_judge::families::KindAgreement>,
    effects: Vec<earthverse_rubric_judge::families::FamilyEffect>,
}

/// Prints the families tables (or JSON).
pub fn print(runs: &[FamilyRun], json: bool) -> anyhow::Result<()> {
    let config = BootstrapConfig::default();
    let pairs = |keep: &dyn Fn(&FamilyRun) -> bool| {
        runs.iter()
            .filter(|r| keep(r))
            .map(|r| (r.judge_kinds.clone(), r.our_kinds.clone()))
            .collect::<Vec<_>>()
    };
    let all = kind_agreement(&pairs(&|_| true), &config)?;
    let held = pairs(&|r| !is_tuning_event(event_of(&r.task_id)));
    let held_out = if held.is_empty() {
        Vec::new()
    } else {
        kind_agreement(&held, &config)?
    };
    let effects = family_effects(runs, &config)?;
    if json {
        let report = FamiliesReport {
            runs,
            agreement_all: all,
            agreement_held_out: held_out,
            effects,
        };
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    for (title, table) in [
        (format!("all runs ({})", runs.len()), &all),
        (
            format!("held-out events, not tuned on ({} runs)", held.len()),
            &held_out,
        ),
    ] {
        println!("Agreement with the published judge's critical errors, per kind: {title}");
        println!(
            "{:<10} {:>6} {:>6} {:>22} {:>22} {:>22} {:>22}",
            "kind", "judge", "ours", "kappa [95% CI]", "recall", "precision", "raw agreement"
        );
        for row in table {
            match &row.agreement {
                Some(a) => println!(
                    "{:<10} {:>6} {:>6} {:>22} {:>22} {:>22} {:>22}",
                    row.kind.as_str(),
                    row.judge_runs,
                    row.our_runs,
                    a.agreement.kappa.shown(),
                    a.recall.shown(),
                    a.precision.shown(),
                    a.agreement.raw.shown()
                ),
                None => println!(
                    "{:<10} {:>6} {:>6} {:>22}",
                    row.kind.as_str(),
                    row.judge_runs,
                    earthverse_stats_bootstrap::UNDEFINED,
                    "no family of ours"
                ),
            }
        }
        println!();
    }
    print_shares(runs);
    println!("Within-system Core difference with vs without each family (Fig. 10; points, 95% CI)");
    for e in &effects {
        println!(
            "{:<18} {:>5} runs  {}",
            e.family.as_str(),
            e.runs_with,
            e.delta.shown()
        );
    }
    println!();
    println!("Strongest co-occurrences (>= 10 runs; lift = P(a,b) / P(a)P(b))");
    for (a, b, n, lift) in co_occurrences(runs, 10).into_iter().take(6) {
        println!(
            "{:<18} + {:<18} {:>4} runs  lift {:.2}",
            a.as_str(),
            b.as_str(),
            n,
            lift
        );
    }
    Ok(())
}

fn print_shares(runs: &[FamilyRun]) {
    let mut by: BTreeMap<SystemFamily, Vec<&FamilyRun>> = BTreeMap::new();
    for r in runs {
        by.entry(r.system_family).or_default().push(r);
    }
    println!(
        "Share of runs with each family, and primary-family counts by Core band, per system family"
    );
    print!("{:<16} {:>5} {:>6}", "system family", "runs", "core");
    for f in RunFamily::ALL {
        print!(" {:>8}", short(f));
    }
    println!();
    for (fam, rs) in &by {
        let n = rs.len() as f64;
        let core = rs.iter().map(|r| r.core).sum::<f64>() / n;
        print!("{:<16} {:>5} {:>6.1}", fam.as_str(), rs.len(), core);
        for f in RunFamily::ALL {
            let k = rs.iter().filter(|r| r.diagnosis.has(f)).count();
            print!(" {:>7.0}%", 100.0 * k as f64 / n);
        }
        println!();
    }
    println!();
    println!("Flow (Fig. 9): system family -> primary family -> Core band (runs)");
    let mut flow: BTreeMap<(SystemFamily, &str, &str), usize> = BTreeMap::new();
    for r in runs {
        let primary = r.diagnosis.primary.map_or("none", RunFamily::as_str);
        *flow
            .entry((r.system_family, primary, core_band(r.core)))
            .or_default() += 1;
    }
    for ((sf, p, band), n) in flow {
        println!("{:<16} {:<18} {:<6} {:>4}", sf.as_str(), p, band, n);
    }
    println!();
}

fn short(f: RunFamily) -> &'static str {
    match f {
        RunFamily::BudgetExhaustion => "budget",
        RunFamily::PrematureStop => "premat",
        RunFamily::ToolFailure => "toolfail",
        RunFamily::FailedRecovery => "recovery",
        RunFamily::SchemaError => "schema",
        RunFamily::MissingOutput => "missing",
        RunFamily::NumericError => "numeric",
        RunFamily::LabelError => "label",
        RunFamily::UnitError => "unit",
    }
}

/// Figs. 8–10's data for the HTML report: every run under `runs_dir`
/// whose task `root` holds, diagnosed.
pub fn report_figures(
    root: &std::path::Path,
    runs_dir: &std::path::Path,
) -> anyhow::Result<earthverse_report::families::FamilyFigures> {
    use anyhow::Context;
    use earthverse_report::families::{FamilyEffectRow, FamilyFigures, FamilyRunRow};
    use rayon::prelude::*;
    let release = earthverse_package_model::Release::load(root)
        .with_context(|| format!("loading release {}", root.display()))?;
    let tasks = earthverse_rubric_judge::load_tasks(root)
        .with_context(|| format!("loading tasks of {}", root.display()))?;
    let references = earthverse_rubric_judge::evidence::task_references(&release);
    let runs = earthverse_rubric_judge::find_runs(runs_dir)
        .with_context(|| format!("reading runs under {}", runs_dir.display()))?;
    let family_runs: Vec<FamilyRun> = runs
        .par_iter()
        .filter_map(|rf| {
            let task = tasks.get(&rf.run.task_id)?;
            let refs = references
                .get(rf.run.task_id.as_str())
                .map(Vec::as_slice)
                .unwrap_or_default();
            let ctx = earthverse_rubric_judge::scoring_context(task);
            let ev =
                earthverse_rubric_judge::evidence::run_evidence(task, &ctx, refs, &rf.run, false);
            Some(families::family_run(
                task,
                &rf.run,
                &ev.claims,
                &ev.reference_files,
            ))
        })
        .collect();
    let effects = family_effects(&family_runs, &BootstrapConfig::default())?;
    Ok(FamilyFigures {
        runs: family_runs
            .iter()
            .map(|r| FamilyRunRow {
                system: r.system.clone(),
                system_family: r.system_family.as_str().to_owned(),
                core: r.core,
                primary: r.diagnosis.primary,
                families: r.diagnosis.families.iter().map(|h| h.family).collect(),
            })
            .collect(),
        effects: effects
            .into_iter()
            .map(|e| FamilyEffectRow {
                family: e.family,
                runs_with: e.runs_with,
                delta: e.delta,
            })
            .collect(),
        co_occurrences: co_occurrences(&family_runs, 3)
            .into_iter()
            .take(8)
            .collect(),
    })
}
