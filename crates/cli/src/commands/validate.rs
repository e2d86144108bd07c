//! `earthverse validate <release-root> [--json] [--regenerate-gt] [--python PATH]`:
//! the machine-checkable release gates of Appendix C.7.
//!
//! Exit status: 0 when every gate holds, 1 when a gate fails, 2 on usage or
//! IO errors (a root without `tasks/`, an unreadable directory).

use anyhow::Context;
use earthverse_package_model::regenerate::{resolve_python, RegenerateOptions, DEFAULT_TIMEOUT};
use earthverse_package_model::validate::{validate, ValidateOptions, ValidationReport};
use earthverse_package_model::Release;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `earthverse validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The release root (the folder holding `tasks/`, `packages/` and
    /// `exploration/`), or an authoring-layout root.
    pub release_root: PathBuf,
    /// Print one JSON document instead of the human-readable summary.
    #[arg(long)]
    pub json: bool,
    /// Also re-run every task's compute_gt.py and compare primary_gt exactly.
    #[arg(long)]
    pub regenerate_gt: bool,
    /// Python interpreter for --regenerate-gt (default: $EARTHVERSE_PYTHON, else python3).
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Per-task timeout for --regenerate-gt, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_TIMEOUT.as_secs())]
    pub timeout: u64,
    /// Programs run at once for --regenerate-gt (0: one per core).
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Only regenerate these tasks (repeatable).
    #[arg(long = "task", value_name = "TASK_ID")]
    pub tasks: Vec<String>,
    /// Keep the authoring-layout export used by --regenerate-gt in this folder.
    #[arg(long, value_name = "DIR")]
    pub keep_export: Option<PathBuf>,
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let release = Release::load(&args.release_root)
        .with_context(|| format!("loading release {}", args.release_root.display()))?;
    if let Some(dir) = &args.keep_export {
        super::inputs::refuse_output_on_inputs(
            "--keep-export",
            dir,
            &[
                ("the release", &args.release_root),
                ("the release's packages", release.packages_root()),
            ],
            earthverse_package_model::Overlap::Disjoint,
        )?;
    }
    let options = ValidateOptions {
        regenerate_gt: args.regenerate_gt,
        regenerate: RegenerateOptions {
            python: resolve_python(args.python.as_deref()),
            timeout: Duration::from_secs(args.timeout.max(1)),
            jobs: args.jobs,
            task_ids: (!args.tasks.is_empty()).then(|| args.tasks.iter().cloned().collect()),
            work_dir: args.keep_export.clone(),
        },
    };
    let report = validate(&release, &options)
        .with_context(|| format!("validating {}", args.release_root.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", summary(&report));
    }
    Ok(if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

const LIST_LIMIT: usize = 25;

fn list<T>(out: &mut String, title: &str, items: &[T], show: impl Fn(&T) -> String) {
    if items.is_empty() {
        return;
    }
    out.push_str(&format!("{title} ({}):\n", items.len()));
    for item in items.iter().take(LIST_LIMIT) {
        out.push_str(&format!("  - {}\n", show(item)));
    }
    if items.len() > LIST_LIMIT {
        out.push_str(&format!(
            "  ... and {} more (use --json for all)\n",
            items.len() - LIST_LIMIT
        ));
    }
}

/// The human-readable summary.
fn summary(r: &ValidationReport) -> String {
    let mut out = String::new();
    out.push_str(&format!("release      {}\n", r.release_root.display()));
    out.push_str(&format!(
        "tasks        {}   events {}   recorded runs {}\n",
        r.tasks, r.events, r.recorded_runs
    ));
    out.push_str(&format!(
        "files        {} listed, {} present ({} only after line-ending normalisation), {} missing, {} size mismatches, {} sha mismatches ({:.1} MB hashed)\n",
        r.files_listed,
        r.files_present,
        r.line_endings_normalised.len(),
        r.files_missing.len(),
        r.size_mismatch.len(),
        r.sha_mismatch.len(),
        r.bytes_hashed as f64 / 1e6
    ));
    let per_task = if r.tasks > 0 {
        r.answer_units_total as f64 / r.tasks as f64
    } else {
        0.0
    };
    out.push_str(&format!(
        "answer units {} ({per_task:.2} per task)\n",
        r.answer_units_total
    ));
    list(
        &mut out,
        "task files not loaded",
        &r.task_load_errors,
        |e| format!("{}: field `{}`: {}", e.path, e.field, e.message),
    );
    list(&mut out, "run files not loaded", &r.run_load_errors, |e| {
        format!("{}: field `{}`: {}", e.path, e.field, e.message)
    });
    list(
        &mut out,
        "missing files (listed, absent)",
        &r.files_missing,
        |f| format!("{}/{}", f.event_id, f.relative_path),
    );
    list(&mut out, "size mismatches", &r.size_mismatch, |m| {
        format!(
            "{}/{}: recorded {} bytes, found {}{}",
            m.event_id,
            m.relative_path,
            m.expected_bytes,
            m.actual_bytes,
            if m.explainable_by_line_endings {
                " (gap fits lost CR bytes of mixed line endings)"
            } else {
                ""
            }
        )
    });
    list(&mut out, "sha256 mismatches", &r.sha_mismatch, |m| {
        format!(
            "{}/{}: recorded {}, found {}",
            m.event_id, m.relative_path, m.expected_sha256_16, m.actual_sha256_16
        )
    });
    list(
        &mut out,
        "unreadable listed files",
        &r.unreadable_files,
        |i| format!("{}: {}", i.task_id, i.message),
    );
    list(
        &mut out,
        "inventory conflicts",
        &r.inventory_conflicts,
        |c| {
            format!(
                "{}/{}: {}",
                c.event_id,
                c.relative_path,
                c.task_ids.join(", ")
            )
        },
    );
    list(
        &mut out,
        "packages holding files no inventory lists",
        &r.unlisted_files,
        |u| {
            let shown: Vec<&str> = u
                .paths
                .iter()
                .take(LIST_LIMIT)
                .map(String::as_str)
                .collect();
            let more = if u.count > shown.len() {
                format!(
                    ", ... and {} more (use --json for all)",
                    u.count - shown.len()
                )
            } else {
                String::new()
            };
            format!(
                "{} ({}; inventories of {}): {} file(s) not listed: {}{more}",
                u.event_id,
                u.package,
                u.task_ids.join(", "),
                u.count,
                shown.join(", ")
            )
        },
    );
    list(&mut out, "rubric errors", &r.rubric_errors, |i| {
        format!("{}: {}", i.task_id, i.message)
    });
    list(&mut out, "primary_gt missing", &r.primary_gt_missing, |t| {
        t.clone()
    });
    list(&mut out, "schema errors", &r.schema_errors, |i| {
        format!("{}: {}", i.task_id, i.message)
    });
    list(
        &mut out,
        "leak warnings (question reveals)",
        &r.leak_warnings,
        |w| format!("{}: {:?} {}", w.task_id, w.kind, w.text),
    );
    if let Some(gt) = &r.gt_regeneration {
        out.push_str(&format!(
            "ground truth {} of {} regenerate identically, {} differ, {} failed ({}; {:.0} s)\n",
            gt.identical,
            gt.tasks,
            gt.differs.len(),
            gt.failed.len(),
            gt.python_version.as_deref().unwrap_or(&gt.python),
            gt.seconds
        ));
        list(&mut out, "ground truth differs", &gt.differs, |d| {
            format!(
                "{} at {}: recorded {}, regenerated {}",
                d.task_id, d.first_difference, d.recorded, d.regenerated
            )
        });
        list(&mut out, "ground truth failed", &gt.failed, |f| {
            format!("{}: {}", f.task_id, f.message)
        });
    }
    if r.passed() {
        out.push_str("PASS: every release gate holds\n");
    } else {
        out.push_str(&format!(
            "FAIL: gates failed: {}\n",
            r.failed_gates.join(", ")
        ));
    }
    out
}
