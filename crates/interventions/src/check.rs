//! The evidence that a perturbation perturbs (`earthverse perturb
//! --check`): each task's *unadapted* reference analysis re-run, under the
//! audit hook, on its perturbed package.
//!
//! Per task and kind:
//! - **hit**: the analysis opens the file the perturbation targeted; for a
//!   removed file, it tries to open it on the perturbed package, or (when
//!   it checks for the file before opening it) it opens it on the original
//!   package ([`ReferenceReads`]);
//! - **bite**: the analysis then fails, or its `primary_gt` is no longer
//!   exactly the recorded one;
//! - **not applicable**: the task had no valid target (the manifest's
//!   reason); it is left out of the rates;
//! - **unmeasured**: the task's reference analysis does not reproduce its
//!   own answer on the original package here (its audited reads say so),
//!   so hit and bite are not measured; left out of the rates, and counted.
//!
//! For a unit change the *adapted* program is run too: it must reproduce
//! `primary_gt` exactly (the conversion is physically equivalent), while
//! the unadapted one must not. Distractors have no target: hit and bite do
//! not apply to them.

use crate::perturb::{read_manifest, PerturbationKind, TaskPerturbation};
use crate::reads::{ReadsMethod, ReferenceReads};
use earthverse_package_model::reference_reads::audit_reference_reads;
use earthverse_package_model::regenerate::{regenerate_ground_truth, RegenerateOptions};
use earthverse_package_model::Release;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::path::Path;

/// One task's check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskCheck {
    /// The task.
    pub task_id: String,
    /// Whether the perturbation was applied.
    pub applicable: bool,
    /// Why not, when not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The targeted file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The analysis opens the target (`None`: no target).
    pub hit: Option<bool>,
    /// The analysis fails or changes its answer (`None`: no target).
    pub bite: Option<bool>,
    /// The unadapted analysis' outcome on the perturbed package.
    pub outcome: String,
    /// Why hit and bite could not be measured: the task's reference
    /// analysis does not reproduce its own answer on the original package
    /// here (a missing Python module, say), so neither its reads nor a
    /// change of its answer mean anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmeasured: Option<String>,
    /// Unit change: the adapted program reproduces `primary_gt` exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapted_reproduces: Option<bool>,
}

/// The check of one perturbed release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindCheck {
    /// The perturbation.
    pub kind: PerturbationKind,
    /// Per task, in task order.
    pub tasks: Vec<TaskCheck>,
}

/// A share `n / d` as a percentage (`None` when `d` is 0).
fn pct(n: usize, d: usize) -> Option<f64> {
    (d > 0).then(|| 100.0 * n as f64 / d as f64)
}

impl KindCheck {
    /// Tasks checked.
    pub fn total(&self) -> usize {
        self.tasks.len()
    }

    /// Applicable tasks whose hit and bite could not be measured.
    pub fn unmeasured(&self) -> usize {
        self.tasks
            .iter()
            .filter(|t| t.applicable && t.unmeasured.is_some())
            .count()
    }

    /// Tasks with a valid target.
    pub fn applicable(&self) -> usize {
        self.tasks.iter().filter(|t| t.applicable).count()
    }

    /// Applicable tasks, in percent of all.
    pub fn applicable_pct(&self) -> Option<f64> {
        pct(self.applicable(), self.total())
    }

    /// Hit rate over applicable tasks with a target, in percent.
    pub fn hit_pct(&self) -> Option<f64> {
        let with: Vec<&TaskCheck> = self.tasks.iter().filter(|t| t.hit.is_some()).collect();
        pct(
            with.iter().filter(|t| t.hit == Some(true)).count(),
            with.len(),
        )
    }

    /// Bite rate over applicable tasks with a target, in percent.
    pub fn bite_pct(&self) -> Option<f64> {
        let with: Vec<&TaskCheck> = self.tasks.iter().filter(|t| t.bite.is_some()).collect();
        pct(
            with.iter().filter(|t| t.bite == Some(true)).count(),
            with.len(),
        )
    }

    /// Unit change: share of applicable tasks whose adapted program
    /// reproduces `primary_gt`, in percent.
    pub fn adapted_pct(&self) -> Option<f64> {
        let with: Vec<&TaskCheck> = self
            .tasks
            .iter()
            .filter(|t| t.adapted_reproduces.is_some())
            .collect();
        pct(
            with.iter()
                .filter(|t| t.adapted_reproduces == Some(true))
                .count(),
            with.len(),
        )
    }
}

/// Errors of [`check_perturbed`].
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The perturbed release cannot be loaded or exported.
    #[error("{0}")]
    Release(#[from] earthverse_package_model::PackageError),
    /// A task of the perturbed release has no manifest.
    #[error("{root}: task {task_id} has no perturbation manifest (perturbations/{task_id}.json): is this a release written by `earthverse perturb`?")]
    NoManifest {
        /// The perturbed release.
        root: String,
        /// The task.
        task_id: String,
    },
    /// A task of the perturbed release is not in the original.
    #[error("task {0} of the perturbed release is not in the original release")]
    UnknownTask(String),
}

/// Re-runs each task's unadapted reference analysis (the original
/// release's program) on its package in the perturbed release at
/// `perturbed_root`, with `python`, and reports hit and bite per task.
///
/// # Errors
/// [`CheckError`] when a release cannot be loaded or exported, or a task
/// has no manifest.
pub fn check_perturbed(
    original: &Release,
    reads: &ReferenceReads,
    perturbed_root: &Path,
    python: &Path,
    jobs: usize,
) -> Result<KindCheck, CheckError> {
    let perturbed = Release::load(perturbed_root)?;
    let mut manifests: Vec<TaskPerturbation> = Vec::new();
    let mut unadapted_tasks = Vec::new();
    for task in perturbed.tasks() {
        let manifest =
            read_manifest(perturbed_root, &task.task_id).ok_or_else(|| CheckError::NoManifest {
                root: perturbed_root.display().to_string(),
                task_id: task.task_id.clone(),
            })?;
        let source = original
            .task(&task.task_id)
            .ok_or_else(|| CheckError::UnknownTask(task.task_id.clone()))?;
        let mut unadapted = task.clone();
        unadapted.compute_gt_py = source.compute_gt_py.clone();
        unadapted_tasks.push(unadapted);
        manifests.push(manifest);
    }
    let kind = manifests
        .first()
        .map_or(PerturbationKind::Distractors, |m| m.kind);
    let unadapted = Release::from_parts(
        perturbed.root().to_path_buf(),
        perturbed.packages_root().to_path_buf(),
        unadapted_tasks,
        Vec::new(),
    );
    let options = RegenerateOptions {
        python: python.to_path_buf(),
        jobs,
        ..RegenerateOptions::default()
    };
    let audited = audit_reference_reads(&unadapted, &options, false)?;
    // Unit change: the adapted programs, as the perturbed release holds them.
    let adapted: Option<BTreeSet<String>> = if kind == PerturbationKind::UnitChange {
        let report = regenerate_ground_truth(&perturbed, &options)?;
        Some(report.identical_tasks.into_iter().collect())
    } else {
        None
    };
    let mut tasks = Vec::new();
    for manifest in &manifests {
        let Some(audit) = audited.iter().find(|a| a.task_id == manifest.task_id) else {
            continue;
        };
        let target = manifest.target.as_ref().map(|t| t.file.clone());
        let unmeasured = original
            .task(&manifest.task_id)
            .map(|t| reads.of(t))
            .filter(|r| r.method != ReadsMethod::Audit)
            .map(|r| {
                format!(
                    "the reference analysis does not reproduce its answer on the original package ({})",
                    r.outcome.as_deref().unwrap_or("not run")
                )
            });
        let measured = manifest.applicable() && unmeasured.is_none();
        let (hit, bite) = match (&target, measured) {
            (Some(file), true) => {
                let opened =
                    audit.files.iter().any(|f| &f.path == file) || audit.absent.contains(file);
                let read_before = kind == PerturbationKind::Missing
                    && original
                        .task(&manifest.task_id)
                        .is_some_and(|t| reads.of(t).file(file).is_some());
                (Some(opened || read_before), Some(!audit.reproduced()))
            }
            _ => (None, None),
        };
        tasks.push(TaskCheck {
            task_id: manifest.task_id.clone(),
            applicable: manifest.applicable(),
            reason: manifest.not_applicable.clone(),
            target,
            hit,
            bite,
            outcome: audit.outcome.clone(),
            unmeasured,
            adapted_reproduces: adapted
                .as_ref()
                .filter(|_| measured)
                .map(|ids| ids.contains(&manifest.task_id)),
        });
    }
    Ok(KindCheck { kind, tasks })
}
