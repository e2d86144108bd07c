//! `earthverse perturb`: a perturbed copy of a release (App. A.3.3, Table
//! 4c), each task's evidence targeted as its reference analysis reads it,
//! with a manifest per task; the original is never modified. `--check`
//! re-runs every task's unadapted reference analysis on its perturbed
//! package and prints hit and bite per kind (library:
//! `earthverse_interventions::{perturb_release_with, check_perturbed}`).

use anyhow::Context;
use earthverse_interventions::perturb::MANIFESTS_DIR;
use earthverse_interventions::{
    check_perturbed, perturb_release_with, KindCheck, PerturbationKind, ReferenceReads,
};
use earthverse_package_model::Release;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `earthverse perturb`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Release root.
    pub release: PathBuf,
    /// `distractors`, `missing`, `truncated`, `unit-change`,
    /// `conflicting`, or `all` (each kind into `OUT/<kind>/`).
    #[arg(long)]
    pub kind: String,
    /// Seed of every choice.
    #[arg(long, default_value_t = 2026)]
    pub seed: u64,
    /// New release directory (must be new or empty).
    #[arg(long)]
    pub out: PathBuf,
    /// Only these tasks (comma-separated ids).
    #[arg(long)]
    pub tasks: Option<String>,
    /// Re-run each task's unadapted reference analysis on its perturbed
    /// package: hit (target opened), bite (answer fails or changes).
    #[arg(long)]
    pub check: bool,
    /// Python for the reference analyses (default: the scientific
    /// environment, as `earthverse run`).
    #[arg(long)]
    pub python: Option<PathBuf>,
    /// Print the check as JSON.
    #[arg(long)]
    pub json: bool,
    /// Unloadable task files: an error, or skipped and named.
    #[command(flatten)]
    pub skip: super::inputs::SkipInvalid,
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let kinds: Vec<PerturbationKind> = if args.kind == "all" {
        PerturbationKind::ALL.to_vec()
    } else {
        vec![args
            .kind
            .parse()
            .map_err(|e: String| anyhow::anyhow!("--kind: {e}, or all"))?]
    };
    let release = Release::load(&args.release)
        .with_context(|| format!("loading the release at {}", args.release.display()))?;
    // The original is never written (the library refuses too; checked here
    // before the reference reads are audited).
    super::inputs::refuse_output_on_inputs(
        "--out",
        &args.out,
        &[
            ("the release", &args.release),
            ("the release's packages", release.packages_root()),
        ],
        earthverse_package_model::Overlap::Disjoint,
    )?;
    let skipped = args.skip.check(&release, "perturb")?;
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
    let python = args
        .python
        .clone()
        .unwrap_or_else(|| earthverse_tool_registry::sandbox::resolve_interpreter(None).0);
    let reads = ReferenceReads::load_or_audit_tasks(
        &release,
        tasks.as_ref(),
        Some(&python),
        earthverse_interventions::reads::default_cache_dir().as_deref(),
    )?;
    let mut checks: Vec<KindCheck> = Vec::new();
    for kind in kinds {
        let out = if args.kind == "all" {
            args.out.join(kind.as_str())
        } else {
            args.out.clone()
        };
        // A kind's folder appears only when complete (the library renames
        // it into place), so under `--kind all` a rerun after a kill keeps
        // the kinds already written, if they are this seed's.
        let done = args.kind == "all" && out.join(MANIFESTS_DIR).is_dir();
        let manifests = if done {
            let kept = completed_kind(&release, &out, kind, args.seed, tasks.as_ref())?;
            eprintln!("perturb: {kind}: {} already holds it; kept", out.display());
            kept
        } else {
            perturb_release_with(&release, kind, args.seed, &out, tasks.as_ref(), &reads)?
        };
        let applied = manifests.iter().filter(|m| m.applicable()).count();
        for m in &manifests {
            match &m.not_applicable {
                Some(reason) => eprintln!("perturb: {}: not applicable: {reason}", m.task_id),
                None => {
                    for c in &m.changes {
                        eprintln!(
                            "perturb: {}: {} {}: {}",
                            m.task_id, c.action, c.file, c.what
                        );
                    }
                }
            }
        }
        println!(
            "{kind} perturbation (seed {}) applied to {applied} of {} task(s); release in {}, manifests in {}{}",
            args.seed,
            manifests.len(),
            out.display(),
            out.join(earthverse_interventions::perturb::MANIFESTS_DIR).display(),
            super::inputs::skipped_note(&skipped)
        );
        if args.check {
            checks.push(check_perturbed(&release, &reads, &out, &python, 0)?);
        }
    }
    if args.check {
        if args.json {
            println!("{}", serde_json::to_string_pretty(&checks)?);
        } else {
            print!("{}", check_table(&checks));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The manifests of a kind folder a previous run completed, checked to be
/// of this kind and seed for every selected task.
fn completed_kind(
    release: &Release,
    out: &std::path::Path,
    kind: earthverse_interventions::PerturbationKind,
    seed: u64,
    tasks: Option<&BTreeSet<String>>,
) -> anyhow::Result<Vec<earthverse_interventions::TaskPerturbation>> {
    let mut manifests = Vec::new();
    for task in release.tasks() {
        if tasks.is_some_and(|t| !t.contains(&task.task_id)) {
            continue;
        }
        let manifest = earthverse_interventions::perturb::read_manifest(out, &task.task_id)
            .with_context(|| {
                format!(
                    "--out: {} holds no manifest of {}; remove it to write the {kind} perturbation again",
                    out.display(),
                    task.task_id
                )
            })?;
        if manifest.kind != kind || manifest.seed != seed {
            anyhow::bail!(
                "--out: {} holds a {} perturbation with seed {}, not {kind} with seed {seed}",
                out.display(),
                manifest.kind,
                manifest.seed
            );
        }
        manifests.push(manifest);
    }
    Ok(manifests)
}

fn shown(x: Option<f64>) -> String {
    x.map_or_else(
        || earthverse_stats_bootstrap::UNDEFINED.into(),
        |v| format!("{v:.1}%"),
    )
}

/// The per-kind table of `--check`.
fn check_table(checks: &[KindCheck]) -> String {
    let mut out = format!(
        "{:<12} {:>6} {:>15} {:>11} {:>8} {:>8} {:>9}\n",
        "kind", "tasks", "applicable", "unmeasured", "hit", "bite", "adapted"
    );
    for c in checks {
        out.push_str(&format!(
            "{:<12} {:>6} {:>15} {:>11} {:>8} {:>8} {:>9}\n",
            c.kind.as_str(),
            c.total(),
            format!("{} ({})", c.applicable(), shown(c.applicable_pct())),
            c.unmeasured(),
            shown(c.hit_pct()),
            shown(c.bite_pct()),
            shown(c.adapted_pct()),
        ));
    }
    out
}
