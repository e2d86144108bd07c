//! `earthverse review`: a local web page for a domain expert to label a
//! stratified sample of runs (issue #48; paper §7), and `earthverse
//! review agreement` to compare the labels with every judge. Sampling,
//! sheets, the label store and the statistics are `earthverse-review`'s;
//! the page is served by `review_server`.

use anyhow::{bail, Context};
use earthverse_package_model::Release;
use earthverse_review::{
    check_appendable, read_existing_labels, read_labels, review_agreement, review_run,
    stratified_sample, Candidate, ReviewRun, Stratum,
};
use earthverse_rubric_judge::evidence::{run_evidence, task_references, RunEvidence};
use earthverse_rubric_judge::families::{core_band, family_run, published_core, SystemFamily};
use earthverse_rubric_judge::{
    approximate_rubric, find_runs, load_tasks, scoring_context, RunFile, TaskContext,
};
use earthverse_stats_bootstrap::{BootstrapConfig, UNDEFINED};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `earthverse review`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// `agreement`: compare labels with the judges.
    #[command(subcommand)]
    pub command: Option<ReviewCommand>,
    /// Serve the review page.
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// Arguments of the review page.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Root of a release (the directory holding `tasks/`).
    pub release_root: Option<PathBuf>,
    /// Directory of recorded runs (searched recursively).
    #[arg(long)]
    pub runs: Option<PathBuf>,
    /// Runs to draw (stratified by system family, Core band, capability).
    #[arg(long, default_value_t = 20)]
    pub sample: usize,
    /// Seed of the draw.
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// The label file (JSON lines, appended after every click; reopened
    /// to resume).
    #[arg(long)]
    pub labels: Option<PathBuf>,
    /// The reviewer's name, written with every label.
    #[arg(long)]
    pub reviewer: Option<String>,
    /// Port on 127.0.0.1 (0: any free port; the URL is printed).
    #[arg(long, default_value_t = 8737)]
    pub port: u16,
}

/// Subcommands of `earthverse review`.
#[derive(Debug, clap::Subcommand)]
pub enum ReviewCommand {
    /// Cohen's κ and raw agreement (bootstrap CIs) of the labels with the
    /// published LLM judge, our deterministic judge and our ledger.
    Agreement(AgreementArgs),
}

/// Arguments of `earthverse review agreement`.
#[derive(Debug, clap::Args)]
pub struct AgreementArgs {
    /// The label file.
    pub labels: PathBuf,
    /// Directory of the recorded runs the labels judge.
    #[arg(long)]
    pub runs: PathBuf,
    /// Root of the release (default: the nearest parent of `--runs`
    /// holding `tasks/`).
    #[arg(long)]
    pub release: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Some(ReviewCommand::Agreement(a)) => agreement(a),
        None => serve(args.serve),
    }
}

struct Inputs {
    tasks: BTreeMap<String, TaskContext>,
    runs: Vec<RunFile>,
    references: BTreeMap<String, Vec<String>>,
}

fn inputs(root: &Path, runs_dir: &Path) -> anyhow::Result<Inputs> {
    let release =
        Release::load(root).with_context(|| format!("loading release {}", root.display()))?;
    let tasks = load_tasks(root).with_context(|| format!("loading tasks of {}", root.display()))?;
    let references = task_references(&release)
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
    let runs = find_runs(runs_dir)
        .with_context(|| format!("reading runs under {}", runs_dir.display()))?
        .into_iter()
        .filter(|rf| tasks.contains_key(&rf.run.task_id))
        .collect();
    Ok(Inputs {
        tasks,
        runs,
        references,
    })
}

fn stratum(task: &TaskContext, rf: &RunFile) -> Stratum {
    Stratum {
        system_family: SystemFamily::of(&rf.run.system).as_str().to_owned(),
        core_band: core_band(published_core(&rf.run)).to_owned(),
        capability: task
            .labels
            .capabilities
            .first()
            .cloned()
            .unwrap_or_else(|| "unknown".into()),
    }
}

fn sheet(inputs: &Inputs, rf: &RunFile) -> ReviewRun {
    let task = &inputs.tasks[&rf.run.task_id];
    let refs = inputs
        .references
        .get(&rf.run.task_id)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let ev: RunEvidence = run_evidence(task, &scoring_context(task), refs, &rf.run, false);
    let family = family_run(task, &rf.run, &ev.claims, refs);
    let rubric = approximate_rubric(task, &rf.run, ev.u_judge);
    review_run(
        task,
        &rf.run,
        stratum(task, rf),
        &ev.claims,
        &rubric,
        &family.diagnosis,
    )
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let (Some(root), Some(runs_dir), Some(labels), Some(reviewer)) =
        (args.release_root, args.runs, args.labels, args.reviewer)
    else {
        bail!("review: give RELEASE_ROOT, --runs DIR, --labels FILE and --reviewer NAME (or the `agreement` subcommand)");
    };
    if reviewer.trim().is_empty() {
        bail!("review: --reviewer must name the reviewer");
    }
    if args.sample == 0 {
        bail!("review: --sample must be at least 1");
    }
    // Refuse a label file that does not read before serving anything.
    let existing = read_labels(&labels)?;
    check_appendable(&labels)?;
    let inputs = inputs(&root, &runs_dir)?;
    let candidates: Vec<Candidate> = inputs
        .runs
        .iter()
        .map(|rf| Candidate {
            system: rf.run.system.clone(),
            task_id: rf.run.task_id.clone(),
            stratum: stratum(&inputs.tasks[&rf.run.task_id], rf),
        })
        .collect();
    let drawn = stratified_sample(&candidates, args.sample, args.seed);
    if drawn.is_empty() {
        bail!(
            "review: no runs under {} answer tasks of {}",
            runs_dir.display(),
            root.display()
        );
    }
    let by_id: BTreeMap<(&str, &str), &RunFile> = inputs
        .runs
        .iter()
        .map(|rf| ((rf.run.system.as_str(), rf.run.task_id.as_str()), rf))
        .collect();
    let sheets: Vec<ReviewRun> = drawn
        .iter()
        .map(|c| sheet(&inputs, by_id[&(c.system.as_str(), c.task_id.as_str())]))
        .collect();
    super::review_server::serve(super::review_server::Settings {
        runs: sheets,
        labels,
        reviewer,
        port: args.port,
        resumed: existing.len(),
    })?;
    Ok(ExitCode::SUCCESS)
}

fn release_of(runs: &Path) -> anyhow::Result<PathBuf> {
    let mut dir = runs
        .canonicalize()
        .with_context(|| format!("--runs {}", runs.display()))?;
    loop {
        if dir.join("tasks").is_dir() {
            return Ok(dir);
        }
        if !dir.pop() {
            bail!(
                "--runs {}: no parent holds tasks/; give --release ROOT",
                runs.display()
            );
        }
    }
}

fn agreement(args: AgreementArgs) -> anyhow::Result<ExitCode> {
    let labels = read_existing_labels(&args.labels)?;
    let root = match args.release {
        Some(r) => r,
        None => release_of(&args.runs)?,
    };
    let inputs = inputs(&root, &args.runs)?;
    let wanted: BTreeSet<(&str, &str)> = labels
        .iter()
        .map(|l| (l.system.as_str(), l.task_id.as_str()))
        .collect();
    let sheets: BTreeMap<(String, String), ReviewRun> = inputs
        .runs
        .iter()
        .filter(|rf| wanted.contains(&(rf.run.system.as_str(), rf.run.task_id.as_str())))
        .map(|rf| {
            (
                (rf.run.system.clone(), rf.run.task_id.clone()),
                sheet(&inputs, rf),
            )
        })
        .collect();
    let rows = review_agreement(&labels, &args.labels, &sheets, &BootstrapConfig::default())?;
    if args.json {
        println!("{}", serde_json::to_string(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    let reviewers: BTreeSet<&str> = labels.iter().map(|l| l.reviewer.as_str()).collect();
    println!(
        "{} labels by {} reviewer(s) on {} runs; 95% bootstrap CIs (5,000 resamples, seed 2026)",
        labels.len(),
        reviewers.len(),
        sheets.len()
    );
    println!(
        "{:<22} {:<22} {:>5} {:>22} {:>22}",
        "level", "expert vs", "n", "kappa", "raw agreement"
    );
    for r in rows {
        let (n, k, raw) = match &r.agreement {
            Some(a) => (a.n.to_string(), a.kappa.shown(), a.raw.shown()),
            None => ("0".into(), UNDEFINED.into(), UNDEFINED.into()),
        };
        println!(
            "{:<22} {:<22} {:>5} {:>22} {:>22}",
            r.comparison.level, r.comparison.against, n, k, raw
        );
    }
    Ok(ExitCode::SUCCESS)
}
