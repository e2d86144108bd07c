//! `earthverse evidence`: the claim–evidence ledger of recorded runs (paper
//! App. B.3): where each answer value came from, and the error family of
//! each unsatisfied unit (Figs. 8–10). The adapter from a recorded run to
//! the ledger's observations is `earthverse_rubric_judge::evidence`.

use anyhow::{bail, Context};
use earthverse_answer_units::{score_task, ScoringContext};
use earthverse_evidence_ledger::{
    summarize, Claim, ErrorFamily, RunLedger, SystemSummary, TraceIndex,
};
use earthverse_package_model::Release;
use earthverse_rubric_judge::evidence::{cited_files, observations, task_reference_files};
use earthverse_rubric_judge::{
    find_runs, load_tasks_except, scoring_context, RunContext, TaskContext,
};
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

/// The ledger of one run, as printed by `--json`.
#[derive(Debug, Serialize)]
pub struct RunEvidence {
    /// System id.
    pub system: String,
    /// Task id.
    pub task_id: String,
    /// The judge-like U of the run (the reading of `claims`).
    pub u_judge: f64,
    /// `solution` (the expert solution's Final Answer) or `primary_gt`.
    pub reading: &'static str,
    /// The final answer as submitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_answer: Option<Value>,
    /// One claim per unit of the judge-like reading.
    pub claims: Vec<Claim>,
    /// The claims of the `primary_gt` reading, when the judge-like reading
    /// is the solution's Final Answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_claims: Option<Vec<Claim>>,
    /// Cited files no step read.
    pub cited_unread: Vec<String>,
    /// Files some step read.
    pub files_read: Vec<String>,
    /// Reference analysis files of the task.
    pub reference_files: Vec<String>,
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
            .map(|(rf, ev)| super::families::family_run(&tasks[&rf.run.task_id], &rf.run, ev))
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

impl RunEvidence {
    /// The claims of the judge-like reading as a [`RunLedger`] (for summaries).
    fn ledger_view(&self) -> RunLedger {
        RunLedger {
            claims: self.claims.clone(),
            cited_unread: self.cited_unread.clone(),
            files_read: Vec::new(),
        }
    }
}

/// The reference analysis files of every task of a release, by task id.
pub fn task_references(release: &Release) -> BTreeMap<&str, Vec<String>> {
    // Each task's texts are searched for its inventory paths: on all cores.
    release
        .tasks()
        .par_iter()
        .map(|t| (t.task_id.as_str(), task_reference_files(t)))
        .collect()
}

/// The ledger of one run in the judge-like reading (and the `primary_gt`
/// reading when they differ), scored with `ctx` (the task's
/// [`scoring_context`]).
pub fn run_evidence(
    task: &TaskContext,
    ctx: &ScoringContext,
    references: &[String],
    run: &RunContext,
    with_answer: bool,
) -> RunEvidence {
    let score = score_task(&task.primary_gt, &run.final_answer, ctx);
    let observations = observations(&run.tool_trace);
    let index = TraceIndex::new(&task.question, &observations, references);
    let cited = cited_files(&run.evidence);
    let judge = index.ledger(&score.judge_score().ledger, &cited);
    let primary_claims = score
        .solution
        .as_ref()
        .map(|_| index.claims(&score.units.ledger));
    RunEvidence {
        system: run.system.clone(),
        task_id: run.task_id.clone(),
        u_judge: score.u_judge(),
        reading: if score.solution.is_some() {
            "solution"
        } else {
            "primary_gt"
        },
        final_answer: with_answer.then(|| run.final_answer.clone()),
        claims: judge.claims,
        primary_claims,
        cited_unread: judge.cited_unread,
        files_read: judge.files_read,
        reference_files: references.to_vec(),
    }
}

fn value_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "-".to_owned(),
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
        let source = c.source.as_ref().map_or("-".to_owned(), |s| {
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
