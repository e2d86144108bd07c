//! `earthverse oracle`: the answer-free oracles of App. A.3.1 for the tasks
//! of a release, each checked by the leak guard before it is printed.

use anyhow::{bail, Context};
use earthverse_interventions::{Oracle, OracleError, OracleKind};
use earthverse_package_model::Release;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `earthverse oracle`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Release root.
    pub release: PathBuf,
    /// `relevant-files`, `evidence-map`, `tool-subset` or `plan`.
    #[arg(long)]
    pub kind: OracleKind,
    /// Only this task.
    #[arg(long)]
    pub task: Option<String>,
    /// Print JSON lines (`{kind, task_id, text, files, withheld}`).
    #[arg(long)]
    pub json: bool,
    /// Unloadable task files: an error, or skipped and named.
    #[command(flatten)]
    pub skip: super::inputs::SkipInvalid,
}

/// The `kind` oracle of every task of `release` (or of `only`), with the
/// tasks that have none and why.
pub fn oracles(
    release: &Release,
    kind: OracleKind,
    only: Option<&str>,
) -> anyhow::Result<(Vec<Oracle>, Vec<OracleError>)> {
    let tools = earthverse_harness::tool_descriptors()?;
    // The files each task's reference analysis opens (audited, cached).
    let only_set = only.map(|id| std::collections::BTreeSet::from([id.to_string()]));
    let reads = earthverse_interventions::ReferenceReads::for_oracle(
        release,
        kind,
        only_set.as_ref(),
        None,
    );
    let mut made = Vec::new();
    let mut refused = Vec::new();
    for task in release.tasks() {
        if only.is_some_and(|id| id != task.task_id) {
            continue;
        }
        let task_reads = reads.as_ref().map(|r| r.of(task));
        match earthverse_interventions::oracle_with_reads(task, kind, &tools, task_reads.as_ref()) {
            Ok(o) => made.push(o),
            Err(e) => refused.push(e),
        }
    }
    Ok((made, refused))
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let release = Release::load(&args.release)
        .with_context(|| format!("loading the release at {}", args.release.display()))?;
    let skipped = args.skip.check(&release, "oracle")?;
    if release.tasks().is_empty() {
        bail!("{}: the release holds no task", args.release.display());
    }
    if let Some(id) = &args.task {
        if !release.tasks().iter().any(|t| &t.task_id == id) {
            bail!("--task {id}: no such task in {}", args.release.display());
        }
    }
    let (made, refused) = oracles(&release, args.kind, args.task.as_deref())?;
    for o in &made {
        if args.json {
            println!("{}", serde_json::to_string(o)?);
        } else {
            println!("## {} ({})\n{}\n", o.task_id, o.kind, o.text);
            for w in &o.withheld {
                eprintln!("oracle: {}: withheld: {w}", o.task_id);
            }
        }
    }
    for e in &refused {
        eprintln!("oracle: no oracle emitted: {e}");
    }
    eprintln!(
        "oracle {}: {} emitted, {} refused, {} item(s) withheld{}",
        args.kind,
        made.len(),
        refused.len(),
        made.iter().map(|o| o.withheld.len()).sum::<usize>(),
        super::inputs::skipped_note(&skipped)
    );
    Ok(if made.is_empty() && !refused.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
