//! Running a study: a manifest resolved against a release into the study
//! directory ([`resolve_study`]), then each folder of runs it needs run
//! once through the harness (`earthverse_harness::prepare` and the
//! controller's `run_batch`): a perturbation condition reads its perturbed
//! copy of the release (`releases/<kind>/`, made once with seed 2026) and
//! leaves out the tasks the perturbation does not apply to. `earthverse
//! study run` is a shell over [`run_study`]; so can a researcher's program
//! be (`examples/embed_study.rs`).

use crate::compatible::condition_manifests;
use crate::condition::{
    attach_manifests, not_applicable_tasks, perturbed_release, resolve_study, write_study,
    ResolvedStudy,
};
use crate::error::{Error, Result};
use crate::kinds::perturbation_of;
use crate::manifest::StudyManifest;
use crate::select::select_release_tasks;
use earthverse_agent_controller::batch::BatchObserver;
use earthverse_agent_controller::Condition;
use earthverse_harness::{prepare, RunOutcome, RunRequest, TaskFilter};
use earthverse_package_model::Release;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

/// How a study runs: the release, the study directory, the agent, and the
/// settings every condition's batch shares (a template [`RunRequest`]:
/// protocol, concurrency, shard, prices, limits, Python; its condition,
/// tasks, output and system are set per condition).
#[derive(Debug, Clone)]
pub struct StudyRunSettings {
    /// The release root (recorded in the study file).
    pub release_root: PathBuf,
    /// The study directory.
    pub out: PathBuf,
    /// The agent as given (recorded in the study file, e.g. `baseline`).
    pub agent_name: String,
    /// The settings shared by every condition; its `agent` runs them.
    pub template: RunRequest,
    /// Task files the caller skipped (`--skip-invalid`), named in the study
    /// file and its report.
    pub skipped_task_files: Vec<String>,
}

/// What a study run tells its caller as it goes.
pub trait StudyObserver: Send + Sync {
    /// A line for a person (the study's size, a condition starting, tasks
    /// not applicable, a note of the harness).
    fn note(&self, line: &str);
    /// The observer of one condition's batch (a progress bar).
    fn batch_observer(&self, condition: &str) -> Arc<dyn BatchObserver>;
    /// A condition's batch finished.
    fn condition_finished(&self, condition: &str, outcome: &RunOutcome);
}

/// What a study run did: the resolved study and, per folder of runs run
/// now, the batch's outcome (a condition that reuses another's runs has
/// none).
#[derive(Debug)]
pub struct StudyRunOutcome {
    /// The study as written to `studies/<name>.json`.
    pub study: ResolvedStudy,
    /// (condition name, outcome) of each batch run, in manifest order.
    pub batches: Vec<(String, RunOutcome)>,
}

/// Resolves `manifest` against `release` into `settings.out`, writes the
/// study file, and runs every folder of runs it needs (resuming: runs
/// already `ok` are kept).
pub async fn run_study(
    manifest: &StudyManifest,
    release: &Release,
    settings: StudyRunSettings,
    observer: &dyn StudyObserver,
) -> Result<StudyRunOutcome> {
    let root = &settings.release_root;
    // A study refused before any run (its first `prepare`) removes the
    // folder it made: a refused command leaves nothing behind.
    let fresh = !settings.out.exists();
    let mut draw =
        select_release_tasks(release, root, &manifest.tasks).map_err(|e| Error::Draw {
            release: root.clone(),
            source: Box::new(e),
        })?;
    draw.skipped_task_files = settings.skipped_task_files.clone();
    let manifests =
        condition_manifests(release, &draw.tasks, &manifest.conditions).map_err(|e| {
            Error::Draw {
                release: root.clone(),
                source: Box::new(e),
            }
        })?;
    let mut study = resolve_study(&settings.out, manifest, root, &settings.agent_name, draw)?;
    attach_manifests(&settings.out, &mut study, &manifests)?;
    write_study(&settings.out, &study)?;
    for c in &study.conditions {
        let Some(m) = &c.environment_manifest else {
            continue;
        };
        let how = if m.retained {
            format!(
                "retains the study's tasks (a core environment; {} of {} compatible)",
                m.study_compatible,
                study.tasks().len()
            )
        } else if m.tasks.is_empty() {
            format!(
                "has no compatible task among the release's {}: not run",
                m.release_tasks
            )
        } else {
            format!(
                "draws {} difficulty-balanced compatible task(s) (seed {}; {} of the study's {} \
                 and {} of the release's {} tasks are compatible)",
                m.tasks.len(),
                m.seed,
                m.study_compatible,
                study.tasks().len(),
                m.compatible_tasks,
                m.release_tasks
            )
        };
        observer.note(&format!(
            "study {}: condition {} ({}) {how}",
            study.name, c.condition.name, m.environment
        ));
    }
    let tasks = study.tasks().to_vec();
    let skipped = match settings.skipped_task_files.len() {
        0 => String::new(),
        n => format!(
            "; {n} task file(s) not loaded and skipped (--skip-invalid): {}",
            settings.skipped_task_files.join(", ")
        ),
    };
    observer.note(&format!(
        "study {}: {} condition(s) x {} task(s) into {}{skipped}",
        study.name,
        study.conditions.len(),
        tasks.len(),
        settings.out.display(),
    ));
    let mut batches = Vec::new();
    let mut done = BTreeSet::new();
    for c in &study.conditions {
        let name = &c.condition.name;
        let shared = format!(" reuses the runs of runs/{}", c.runs);
        let note = if c.is_shared() { shared.as_str() } else { "" };
        observer.note(&format!("study {}: condition {name}{note}", study.name));
        if !done.insert(c.runs.clone()) {
            continue;
        }
        let record = &c.condition.condition;
        let bad = |message: String| Error::BadCondition {
            path: PathBuf::new(),
            condition: name.clone(),
            key: "condition".into(),
            message,
        };
        let condition = Condition::from_record(record).map_err(|e| bad(e.to_string()))?;
        let perturbation = perturbation_of(record).map_err(bad)?;
        let (condition_release, run_tasks) = match perturbation {
            None => (None, study.folder_tasks(&c.runs)),
            Some(kind) => {
                let path = perturbed_release(&settings.out, release, kind, &tasks)?;
                // Tasks with no valid target leave this condition's pairs.
                let excluded = not_applicable_tasks(&path, &tasks);
                if !excluded.is_empty() {
                    observer.note(&format!(
                        "study {}: condition {name}: {} of {} task(s) not applicable \
                         (left out of its pairs; reasons in {}/perturbations/)",
                        study.name,
                        excluded.len(),
                        tasks.len(),
                        path.display()
                    ));
                }
                let kept: Vec<String> = tasks
                    .iter()
                    .filter(|t| !excluded.contains_key(*t))
                    .cloned()
                    .collect();
                let loaded = Release::load(&path).map_err(|e| Error::StudyDir {
                    dir: settings.out.clone(),
                    message: format!("loading the perturbed release {}: {e}", path.display()),
                })?;
                (Some(loaded), kept)
            }
        };
        if run_tasks.is_empty() {
            continue;
        }
        let mut request = settings.template.clone();
        request.out = settings.out.join("runs");
        request.system = Some(c.runs.clone());
        request.condition = condition;
        request.tasks = Some(TaskFilter::parse(&run_tasks.join(","))?);
        let prepared = match prepare(condition_release.as_ref().unwrap_or(release), request).await {
            Ok(prepared) => prepared,
            Err(e) => {
                if fresh && batches.is_empty() {
                    let _ = std::fs::remove_dir_all(&settings.out);
                }
                return Err(e.into());
            }
        };
        for line in &prepared.notes {
            observer.note(line);
        }
        let outcome = prepared.run(observer.batch_observer(name)).await?;
        observer.condition_finished(name, &outcome);
        batches.push((name.clone(), outcome));
    }
    Ok(StudyRunOutcome { study, batches })
}
