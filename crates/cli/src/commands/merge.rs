//! `earthverse merge`: check shard output directories against their batch
//! plan (every planned task has exactly one finished record; missing and
//! duplicated ones listed; conflicting duplicates refused) and, with
//! `--out`, merge them into one directory with a manifest of content
//! hashes (`earthverse_agent_controller::merge`).

use anyhow::bail;
use earthverse_agent_controller::merge::{check, merge_into, SystemCheck, MANIFEST_FILE};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `earthverse merge`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output directories of `earthverse run` (one per shard, or one that
    /// the shards shared).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Merge into this directory (one record per task, `batch-plan.json`
    /// and `merge-manifest.json` per system); without it, only check.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Exit 0 even when planned tasks have no record (they are listed).
    #[arg(long)]
    pub allow_partial: bool,
    /// Print the check as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

fn print_check(s: &SystemCheck) {
    let errors = s
        .records
        .values()
        .filter(|r| {
            r.first()
                .is_some_and(|r| r.run_status != earthverse_agent_controller::RunStatus::Ok)
        })
        .count();
    println!(
        "{}: {} planned, {} finished ({} ok, {} error), {} missing, {} duplicated ({} conflicting), {} outside the plan",
        s.system,
        s.planned.len(),
        s.records.len(),
        s.ok_count(),
        errors,
        s.missing.len(),
        s.duplicates.len(),
        s.conflicts().count(),
        s.unplanned.len()
    );
    if !s.has_plan {
        println!("  no batch-plan.json: missing tasks cannot be listed");
    }
    for task in &s.missing {
        println!("  missing: {task}");
    }
    for dir in &s.unreadable {
        println!("  unreadable: {}", dir.join("trajectory.json").display());
    }
    for d in &s.duplicates {
        let dirs: Vec<String> = d.dirs.iter().map(|p| p.display().to_string()).collect();
        let kind = if d.identical { "identical" } else { "CONFLICT" };
        println!("  duplicate ({kind}): {} in {}", d.task_id, dirs.join(", "));
    }
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if let Some(out) = &args.out {
        // A merge into a shard (or a folder holding one) would read what it writes.
        let inputs: Vec<(&str, &std::path::Path)> = args
            .dirs
            .iter()
            .map(|d| ("a shard directory", d.as_path()))
            .collect();
        super::inputs::refuse_output_on_inputs(
            "--out",
            out,
            &inputs,
            earthverse_package_model::Overlap::Disjoint,
        )?;
    }
    let checks = check(&args.dirs)?;
    if checks.is_empty() {
        bail!(
            "no run records or batch plans under {} (give the --out directory of `earthverse run`, which holds <system>/<task_id>/)",
            args.dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&checks)?);
    } else {
        checks.iter().for_each(print_check);
    }
    if checks.iter().any(|s| s.conflicts().next().is_some()) && args.out.is_none() {
        bail!("conflicting records of the same task: keep one of each and check again");
    }
    if let Some(out) = &args.out {
        let manifests = merge_into(&checks, out)?;
        for m in &manifests {
            println!(
                "merged {}: {} record(s) into {} ({})",
                m.system,
                m.records.len(),
                out.join(&m.system).display(),
                MANIFEST_FILE
            );
        }
    }
    let incomplete = checks.iter().filter(|s| !s.is_complete()).count();
    if incomplete > 0 {
        if args.allow_partial {
            eprintln!("merge: warning: {incomplete} system(s) incomplete (--allow-partial)");
        } else {
            eprintln!(
                "merge: {incomplete} system(s) incomplete; rerun their missing shards (runs resume), or pass --allow-partial"
            );
            return Ok(ExitCode::from(1));
        }
    }
    Ok(ExitCode::SUCCESS)
}
