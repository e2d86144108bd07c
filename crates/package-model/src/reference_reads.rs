//! What each task's reference analysis really reads: its `compute_gt.py`
//! run under a Python audit hook (PEP 578), as `earthverse validate
//! --regenerate-gt` runs it (same export, interpreter, limits).
//!
//! The yardstick of the controlled interventions (paper App. A.3): a
//! perturbation must change evidence the task's own analysis uses, and an
//! oracle that localises must name the files it opens. Reading the
//! program's text finds the paths it *names*; running it finds the files it
//! *opens* (an event anchor found by globbing, a fallback it never
//! reaches), and the JSON keys it looks up (the variables a unit change
//! must convert).
//!
//! For every task:
//! 1. the program runs under `audit_compute_gt.py`: every `open` audit
//!    event is recorded (canonical path), and `json.load`/`json.loads`
//!    return dicts that log the keys looked up (`daily.temperature_2m_max`);
//!    if that run does not reproduce `primary_gt` exactly, it runs again
//!    with plain dicts and only the opened files are kept;
//! 2. for each package file it opened, the program runs once more with
//!    that file ablated: a JSON document it decodes is served with every
//!    value altered (numbers × 1.5, strings marked), any other file is
//!    denied (its `open` fails with `FileNotFoundError`, as if missing).
//!    The file is *needed* when the program then fails or its `primary_gt`
//!    changes; when the answer is the same, the analysis only *consulted*
//!    it (opened it to check or reject it, without using its values).
//!
//! Files are reported package-relative, in first-open order; files outside
//! the task's package (Python's own modules, the task folder) are left out.

use crate::error::Result;
use crate::regenerate::{run_exported, run_one, GtFailure, Launch, Outcome, RegenerateOptions};
use crate::release::Release;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The audit wrapper (written beside each program as
/// [`AUDIT_WRAPPER_NAME`]).
const AUDIT_WRAPPER: &str = include_str!("audit_compute_gt.py");
/// The wrapper's file name in a task folder.
pub const AUDIT_WRAPPER_NAME: &str = ".earthverse_audit.py";
/// Version of the audit rules: part of every cache key built on them.
pub const AUDIT_VERSION: u32 = 2;

/// One package file the reference analysis opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenedFile {
    /// Package-relative path.
    pub path: String,
    /// JSON keys the program looked up in it, as dotted paths from the
    /// document root (`daily.temperature_2m_max`; `[]` for list items), in
    /// first-lookup order. Empty for non-JSON files, or when key logging
    /// was off.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// Whether the analysis needs it: with the file ablated (its JSON
    /// values altered, or the file denied), the program fails or its
    /// `primary_gt` changes. `None` when that was not tried
    /// (the unperturbed program itself did not reproduce `primary_gt`).
    pub needed: Option<bool>,
    /// How the answer changed with it ablated (`fails: ...`, `differs at
    /// ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub without_it: Option<String>,
}

/// What one task's reference analysis read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditedTask {
    /// The task.
    pub task_id: String,
    /// `identical` when the audited program reproduced `primary_gt`
    /// exactly, else what went wrong (`differs at /x`, `fails: ...`).
    pub outcome: String,
    /// Whether the JSON keys were logged (the key-logging run reproduced
    /// `primary_gt`).
    pub keys_logged: bool,
    /// Package files opened, in first-open order.
    pub files: Vec<OpenedFile>,
    /// Package-relative paths the program tried to open that the package
    /// does not hold.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub absent: Vec<String>,
}

impl AuditedTask {
    /// Whether the audited program reproduced `primary_gt` exactly.
    pub fn reproduced(&self) -> bool {
        self.outcome == "identical"
    }
}

/// The raw record the wrapper writes.
#[derive(Debug, Default, Deserialize)]
struct WrapperRecord {
    #[serde(default)]
    opened: Vec<String>,
    #[serde(default)]
    keys: Vec<(String, String)>,
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Identical => "identical".into(),
        Outcome::Differs(d) => format!("differs at {}", d.first_difference),
        Outcome::Failed(reason, _) => format!("fails: {reason}"),
    }
}

/// Runs every selected task's program under the audit hook (see the
/// module docs). Tasks without a program are reported with outcome
/// `fails: no compute_gt_py` and no files.
///
/// # Errors
/// Only when the export cannot be written; a program that fails is an
/// outcome, not an error.
///
/// With `ablate` false, step 2 is skipped (every `needed` is `None`): what
/// `earthverse perturb --check` needs to see which files a program opens
/// and whether it still reproduces its answer.
pub fn audit_reference_reads(
    release: &Release,
    options: &RegenerateOptions,
    ablate: bool,
) -> Result<Vec<AuditedTask>> {
    let (_, results) = run_exported(release, options, |task, dir, root, options| {
        let package = std::fs::canonicalize(release.task_package_dir(task))
            .unwrap_or_else(|_| release.task_package_dir(task));
        audit_one(task, dir, root, &package, options, ablate)
    })?;
    Ok(results.into_iter().map(|(_, audited)| audited).collect())
}

fn audit_one(
    task: &crate::Task,
    dir: &Path,
    root: &Path,
    package: &Path,
    options: &RegenerateOptions,
    ablate: bool,
) -> AuditedTask {
    let mut audited = AuditedTask {
        task_id: task.task_id.clone(),
        outcome: describe(&Outcome::Failed(GtFailure::NoProgram, String::new())),
        keys_logged: false,
        files: Vec::new(),
        absent: Vec::new(),
    };
    if task.compute_gt_py.is_none() {
        return audited;
    }
    let wrapper = dir.join(AUDIT_WRAPPER_NAME);
    if let Err(e) = std::fs::write(&wrapper, AUDIT_WRAPPER) {
        audited.outcome = format!("fails: cannot write {}: {e}", wrapper.display());
        return audited;
    }
    let record_path = dir.join(".earthverse_audit.json");
    // `ablate`: (variable, canonical path) of the file to alter or deny.
    let run = |keys: bool, ablate: Option<(&str, &str)>| -> (Outcome, WrapperRecord) {
        let _ = std::fs::remove_file(&record_path);
        let mut env = vec![
            (
                "EARTHVERSE_AUDIT_OUT".to_string(),
                record_path.display().to_string(),
            ),
            (
                "EARTHVERSE_AUDIT_KEYS".to_string(),
                if keys { "1" } else { "0" }.to_string(),
            ),
        ];
        if let Some((variable, path)) = ablate {
            env.push((variable.to_string(), path.to_string()));
        }
        let launch = Launch {
            wrapper: Some(wrapper.clone()),
            env,
        };
        let outcome = run_one(
            dir,
            root,
            &task.ground_truth.primary_gt,
            &task.task_id,
            options,
            &launch,
        );
        let record = std::fs::read(&record_path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
        (outcome, record)
    };
    let (mut outcome, mut record) = run(true, None);
    audited.keys_logged = matches!(outcome, Outcome::Identical);
    if !audited.keys_logged {
        // Logging dicts may have disturbed the program: run it plain.
        (outcome, record) = run(false, None);
        record.keys.clear();
    }
    audited.outcome = describe(&outcome);
    let reproduced = matches!(outcome, Outcome::Identical);
    let relative = |real: &str| -> Option<String> {
        Path::new(real)
            .strip_prefix(package)
            .ok()
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .filter(|p| !p.is_empty())
    };
    for real in &record.opened {
        let Some(path) = relative(real) else { continue };
        if !Path::new(real).is_file() {
            if !audited.absent.contains(&path) {
                audited.absent.push(path);
            }
            continue;
        }
        let keys: Vec<String> = record
            .keys
            .iter()
            .filter(|(source, _)| source == real)
            .map(|(_, key)| key.clone())
            .collect();
        let (needed, without_it) = if reproduced && ablate {
            // A JSON document the program decoded: alter its values; any
            // other file: deny it.
            let decoded = !keys.is_empty() || real.ends_with(".json") || real.ends_with(".geojson");
            let variable = if decoded {
                "EARTHVERSE_AUDIT_ALTER"
            } else {
                "EARTHVERSE_AUDIT_DENY"
            };
            let (without, _) = run(false, Some((variable, real.as_str())));
            match without {
                Outcome::Identical => (Some(false), None),
                other => (Some(true), Some(describe(&other))),
            }
        } else {
            (None, None)
        };
        audited.files.push(OpenedFile {
            path,
            keys,
            needed,
            without_it,
        });
    }
    for leftover in [wrapper, record_path] {
        let _ = std::fs::remove_file(leftover);
    }
    audited
}
