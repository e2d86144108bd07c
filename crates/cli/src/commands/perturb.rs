//! `earthverse perturb`: a perturbed copy of a release (App. A.3.3, Table
//! 4c), with a manifest per event; the original is never modified.

use anyhow::Context;
use earthverse_interventions::{perturb_release, PerturbationKind};
use earthverse_package_model::Release;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `earthverse perturb`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Release root.
    pub release: PathBuf,
    /// `distractors`, `missing`, `truncated`, `unit-change` or `conflicting`.
    #[arg(long)]
    pub kind: PerturbationKind,
    /// Seed of every choice.
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// New release directory (must be new or empty).
    #[arg(long)]
    pub out: PathBuf,
    /// Only these tasks (comma-separated ids) and their events.
    #[arg(long)]
    pub tasks: Option<String>,
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let release = Release::load(&args.release)
        .with_context(|| format!("loading the release at {}", args.release.display()))?;
    let tasks: Option<BTreeSet<String>> = args.tasks.as_deref().map(|s| {
        s.split(',')
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .collect()
    });
    if let Some(ids) = &tasks {
        for id in ids {
            if release.task(id).is_none() {
                anyhow::bail!("--tasks: {id} is not a task of {}", args.release.display());
            }
        }
    }
    let manifests = perturb_release(&release, args.kind, args.seed, &args.out, tasks.as_ref())?;
    let applied = manifests.iter().filter(|m| m.not_applied.is_none()).count();
    for m in &manifests {
        match &m.not_applied {
            Some(reason) => eprintln!("perturb: {}: not applied: {reason}", m.event_id),
            None => {
                for c in &m.changes {
                    eprintln!(
                        "perturb: {}: {} {}: {}",
                        m.event_id, c.action, c.file, c.what
                    );
                }
            }
        }
    }
    println!(
        "{} perturbation (seed {}) applied to {applied} of {} event(s); release in {}, manifests in {}",
        args.kind,
        args.seed,
        manifests.len(),
        args.out.display(),
        args.out.join("perturbations").display()
    );
    Ok(ExitCode::SUCCESS)
}
