//! `earthverse evidence`: the claim–evidence ledger of recorded runs (paper
//! App. B.3): where each answer value came from, and the error family of
//! each unsatisfied unit (Figs. 8–10). The adapter from a recorded run to
//! the ledger's observations is `earthverse_rubric_judge::evidence`.

use anyhow::{bail, Context};
use earthverse_answer_units::ScoringContext;
use earthverse_evidence_ledger::{summarize, ErrorFamily, RunLedger, SystemSummary};
use earthverse_package_model::Release;
use earthverse_rubric_judge::evidence::{run_evidence, task_references, RunEvidence};
use earthverse_rubric_judge::{find_runs, load_tasks_except, scoring_context};
use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `earthverse evidence`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Root of a release (the directory holding `tasks/`).
    pub release_root: PathBuf,
    /// Directory of recorded runs (searched recursively).
    #[arg(long)]
    pub runs: PathBuf,
    /// Print JSON instead of tables.
    #[arg(long)]
    pub json: bool,
    /// Only this run, as SYSTEM/TASK (prints its ledger claim by claim).
    #[arg(long)]
    pub run: Option<String>,
    /// Run-level failure families instead (§D.2, Figs. 8–10): per-kind
    /// agreement with the published judge's critical errors, shares per
    /// system family, Core differences and co-occurrences.
    #[arg(long)]
    pub families: bool,
    /// Unloadable task files: an error, or skipped and named.
    #[command(flatten)]
    pub skip: super::inputs::SkipInvalid,
}

#[derive(Debug, Serialize)]
struct EvidenceReport<'a> {
    runs: &'a [RunEvidence],
    systems: &'a [SystemSummary],
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let release = Release::load(&args.release_root)
        .with_context(|| format!("loading release {}", args.release_root.display()))?;
    let skipped: Vec<std::path::PathBuf> = args
        .skip
        .check(&release, "evidence")?
        .into_iter()
        .map(|e| e.path)
        .collect();
    let tasks = load_tasks_except(&args.release_root, &skipped)
        .with_context(|| format!("loading tasks of {}", args.release_root.display()))?;
    let references = task_references(&release);
    let mut runs = find_runs(&args.runs)
        .with_context(|| format!("reading runs under {}", args.runs.display()))?;
    if let Some(wanted) = &args.run {
        let (system, task) = wanted
            .split_once('/')
            .with_context(|| format!("--run `{wanted}`: expected SYSTEM/TASK"))?;
        runs.retain(|rf| rf.run.system == system && rf.run.task_id == task);
        if runs.is_empty() {
            bail!(
                "--run `{wanted}`: no such run under {}",
                args.runs.display()
            );
        }
    }
    let mut skipped = 0usize;
    let known: Vec<_> = runs
        .iter()
        .filter(|rf| {
            let ok = tasks.contains_key(&rf.run.task_id);
            skipped += usize::from(!ok);
            ok
        })
        .collect();
    if skipped > 0 {
        eprintln!("evidence: {skipped} run(s) answer tasks not in the release; skipped");
    }
    let with_answer = args.run.is_some();
    // One scoring context per task, shared by its runs.
    let contexts: BTreeMap<&str, ScoringContext> = tasks
        .values()
        .map(|t| (t.task_id.as_str(), scoring_context(t)))
        .collect();
    let ledgers: Vec<RunEvidence> = known
        .par_iter()
        .map(|rf| {
            let task = &tasks[&rf.run.task_id];
            let refs = references
                .get(rf.run.task_id.as_str())
                .map(Vec::as_slice)
                .unwrap_or_default();
            let ctx = &contexts[rf.run.task_id.as_str()];
            run_evidence(task, ctx, refs, &rf.run, with_answer)
        })
        .collect();
    if args.families {
        let runs: Vec<_> = known
            .par_iter()
            .zip(&ledgers)
            .map(|(rf, ev)| {
                earthverse_rubric_judge::families::family_run(
                    &tasks[&rf.run.task_id],
                    &rf.run,
                    &ev.claims,
                    &ev.reference_files,
                )
            })
            .collect();
        super::families::print(&runs, args.json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let views: Vec<RunLedger> = ledgers.iter().map(RunEvidence::ledger_view).collect();
    let systems = summarize(ledgers.iter().map(|r| r.system.as_str()).zip(&views));
    if args.json {
        let report = EvidenceReport {
            runs: &ledgers,
            systems: &systems,
        };
        println!("{}", serde_json::to_string(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    if args.run.is_some() {
        for r in &ledgers {
            print_run(r);
        }
    }
    print_systems(&systems);
    Ok(ExitCode::SUCCESS)
}

fn value_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => earthverse_stats_bootstrap::UNDEFINED.to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(n.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

fn print_run(r: &RunEvidence) {
    println!(
        "{} / {}  U_judge {:.2}  (reading: {})",
        r.system, r.task_id, r.u_judge, r.reading
    );
    println!(
        "{:<36} {:<18} {:<18} {:<4} {:<12} {:<30} error family",
        "unit", "value", "expected", "ok", "status", "source"
    );
    for c in r.claims.iter().filter(|c| c.counted) {
        let source =
            c.source
                .as_ref()
                .map_or(earthverse_stats_bootstrap::UNDEFINED.to_owned(), |s| {
                    let file = s
                        .file
                        .as_deref()
                        .map(|f| f.rsplit('/').next().unwrap_or(f))
                        .unwrap_or("");
                    format!("step {} {} {}", s.step, s.tool, clip(file, 24))
                });
        println!(
            "{:<36} {:<18} {:<18} {:<4} {:<12} {:<30} {}",
            clip(&c.unit, 36),
            clip(&value_text(c.value.as_ref()), 18),
            clip(&value_text(Some(&c.expected)), 18),
            if c.satisfied { "yes" } else { "no" },
            c.status.as_str(),
            source,
            c.error_family.map_or("", ErrorFamily::as_str)
        );
    }
    if !r.cited_unread.is_empty() {
        println!("cited but never read: {}", r.cited_unread.join(", "));
    }
    println!();
}

fn print_systems(systems: &[SystemSummary]) {
    println!(
        "{:<22} {:>5} {:>8} {:>8} {:>8} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "system", "runs", "num_sat", "traced%", "+weak%", "miss", "unsup", "wrongsrc", "unit", "round",
        "window", "arith", "label", "other", "uncited"
    );
    for s in systems {
        let f = |fam: ErrorFamily| s.families.get(&fam).copied().unwrap_or(0);
        println!(
            "{:<22} {:>5} {:>8} {:>8.1} {:>8.1} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
            clip(&s.system, 22),
            s.runs,
            s.numeric_satisfied,
            100.0 * s.traced_share,
            100.0 * s.traced_share_with_weak,
            f(ErrorFamily::Missing),
            f(ErrorFamily::Unsupported),
            f(ErrorFamily::WrongSource),
            f(ErrorFamily::UnitOrScale),
            f(ErrorFamily::RoundingOrPrecision),
            f(ErrorFamily::WindowOrSubset),
            f(ErrorFamily::Arithmetic),
            f(ErrorFamily::LabelMismatch),
            f(ErrorFamily::Other),
            s.cited_unread
        );
    }
}
