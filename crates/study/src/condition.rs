//! Conditions of a study and the study directory: the study file of every
//! study run into it, and which folder of runs each condition reads.
//!
//! Layout of a study directory `OUT`:
//!
//! | path | what |
//! |---|---|
//! | `studies/<study>.json` | each study run into `OUT`, resolved ([`ResolvedStudy`]) |
//! | `runs/<folder>/<task>/trajectory.json` | the runs of one condition |
//! | `releases/<perturbation>/` | the perturbed copy of the release a perturbation condition reads |
//! | `scores/<folder>.jsonl` | the evaluation records of one folder of runs |
//!
//! A condition's runs go to `runs/<its name>/`, unless `OUT` already
//! holds (or the same study names earlier) a condition with the identical
//! condition record: then it reads that condition's folder, and the study
//! file says so (`runs`). So the Top-20 reference shared by Tables 4 and 6
//! runs once when both studies are run into one `OUT`, and a re-run of a
//! study runs nothing again (the batch runner skips every task whose run
//! is `ok`).

use crate::compatible::CompatibleManifest;
use crate::error::{io, Error, Result};
use crate::kinds::perturbation_of;
use crate::manifest::{StudyCondition, StudyManifest, TaskSelection};
use crate::select::TaskDraw;
use earthverse_interventions::PerturbationKind;
use earthverse_package_model::{Release, RunCondition};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Seed of the perturbed releases a study makes (App. C.5's seed).
pub const STUDY_PERTURBATION_SEED: u64 = 2026;

/// One condition of a resolved study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedCondition {
    /// The manifest's condition.
    #[serde(flatten)]
    pub condition: StudyCondition,
    /// The folder under `runs/` holding its runs: its own name, or that of
    /// an identical condition whose runs it reuses.
    pub runs: String,
    /// Its own tasks when the manifest asks for a compatible manifest
    /// (App. C.5; [`crate::compatible_manifest`]): retained or drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_manifest: Option<CompatibleManifest>,
}

impl ResolvedCondition {
    /// Whether it reads another condition's runs.
    pub fn is_shared(&self) -> bool {
        self.runs != self.condition.name
    }
}

/// `studies/<name>.json`: a manifest resolved against a release.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedStudy {
    /// Study name.
    pub name: String,
    /// What it reproduces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Release root as given.
    pub release: PathBuf,
    /// The agent as given to the runner (`baseline`, `openai:MODEL`, ...).
    pub agent: String,
    /// The manifest's task selection.
    pub selection: TaskSelection,
    /// The task ids (sorted) and how the App. C.5 draws chose them.
    pub draw: TaskDraw,
    /// Reference condition.
    pub reference: String,
    /// Conditions in manifest order.
    pub conditions: Vec<ResolvedCondition>,
}

impl ResolvedStudy {
    /// The task ids, sorted.
    pub fn tasks(&self) -> &[String] {
        &self.draw.tasks
    }

    /// The condition named `name`.
    pub fn condition(&self, name: &str) -> Option<&ResolvedCondition> {
        self.conditions.iter().find(|c| c.condition.name == name)
    }

    /// The tasks a condition runs and is scored on: its compatible
    /// manifest's when it has one, else the study's.
    pub fn condition_tasks<'a>(&'a self, c: &'a ResolvedCondition) -> &'a [String] {
        c.environment_manifest
            .as_ref()
            .map_or(self.tasks(), |m| m.tasks.as_slice())
    }

    /// The tasks whose runs the folder `runs/<folder>` must hold, sorted:
    /// those of every condition reading it, and, for the reference's
    /// folder, those of every condition of the study (so a condition with
    /// its own compatible manifest pairs with the reference on its own
    /// tasks; the reference's row is still scored on the study's tasks).
    pub fn folder_tasks(&self, folder: &str) -> Vec<String> {
        let is_reference = self
            .condition(&self.reference)
            .is_some_and(|r| r.runs == folder);
        let tasks: BTreeSet<&String> = self
            .conditions
            .iter()
            .filter(|c| is_reference || c.runs == folder)
            .flat_map(|c| self.condition_tasks(c))
            .collect();
        tasks.into_iter().cloned().collect()
    }
}

/// The study files of a study directory, by name order.
///
/// # Errors
/// [`Error::Io`] or [`Error::Parse`] for a study file that does not read.
pub fn read_studies(dir: &Path) -> Result<Vec<ResolvedStudy>> {
    let folder = dir.join("studies");
    if !folder.is_dir() {
        return Ok(Vec::new());
    }
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&folder)
        .map_err(io(&folder))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    paths.iter().map(|p| read_study_file(p)).collect()
}

fn read_study_file(path: &Path) -> Result<ResolvedStudy> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    serde_json::from_str(&text).map_err(|e| Error::Parse {
        path: path.to_path_buf(),
        message: format!("not a study file: {e}"),
    })
}

/// The study `name` of a study directory, or its only study when `name`
/// is `None`.
///
/// # Errors
/// [`Error::StudyDir`] when there is no such study, or several and no name.
pub fn read_study(dir: &Path, name: Option<&str>) -> Result<ResolvedStudy> {
    let studies = read_studies(dir)?;
    let names: Vec<&str> = studies.iter().map(|s| s.name.as_str()).collect();
    let err = |message: String| Error::StudyDir {
        dir: dir.to_path_buf(),
        message,
    };
    match name {
        Some(name) => studies
            .iter()
            .find(|s| s.name == name)
            .cloned()
            .ok_or_else(|| {
                err(format!(
                    "holds no study `{name}` (it holds: {})",
                    names.join(", ")
                ))
            }),
        None => match studies.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(err(
                "holds no study (no studies/*.json; is this a study directory?)".into(),
            )),
            _ => Err(err(format!(
                "holds {} studies ({}); name one with --study",
                studies.len(),
                names.join(", ")
            ))),
        },
    }
}

/// Path of a study's file in a study directory.
pub fn study_file(dir: &Path, name: &str) -> PathBuf {
    dir.join("studies").join(format!("{name}.json"))
}

/// Resolves a manifest for a study directory: its tasks, and for each
/// condition the folder of its runs, reusing the folder of an identical
/// condition (same condition record) that a study already in `dir`, or an
/// earlier condition of this one, runs into.
///
/// A study of the same name already in `dir` must be identical (then it
/// is returned as it is: a re-run resumes); every study in `dir` must have
/// the same release and agent, since runs are shared among them.
///
/// # Errors
/// [`Error::StudyDir`] when `dir` holds a different study of that name,
/// another release or agent, or a condition of the same name whose
/// record differs.
pub fn resolve_study(
    dir: &Path,
    manifest: &StudyManifest,
    release: &Path,
    agent: &str,
    draw: TaskDraw,
) -> Result<ResolvedStudy> {
    let existing = read_studies(dir)?;
    let err = |message: String| Error::StudyDir {
        dir: dir.to_path_buf(),
        message,
    };
    for other in &existing {
        if other.release != release || other.agent != agent {
            return Err(err(format!(
                "holds study `{}` of release {} with agent `{}`; runs are shared between the \
                 studies of one directory, so use another --out for release {} with agent `{}`",
                other.name,
                other.release.display(),
                other.agent,
                release.display(),
                agent
            )));
        }
    }
    let mut known: Vec<(String, RunCondition)> = existing
        .iter()
        .flat_map(|s| &s.conditions)
        .map(|c| (c.runs.clone(), c.condition.condition.clone()))
        .collect();
    let mut conditions = Vec::new();
    for c in &manifest.conditions {
        let runs = match known.iter().find(|(_, record)| record == &c.condition) {
            Some((folder, _)) => folder.clone(),
            None => {
                if known.iter().any(|(folder, _)| folder == &c.name) {
                    return Err(err(format!(
                        "runs/{0} holds the runs of another condition named `{0}` with \
                         different settings; rename condition `{0}` of study `{1}`",
                        c.name, manifest.name
                    )));
                }
                c.name.clone()
            }
        };
        known.push((runs.clone(), c.condition.clone()));
        conditions.push(ResolvedCondition {
            condition: c.clone(),
            runs,
            environment_manifest: None,
        });
    }
    let resolved = ResolvedStudy {
        name: manifest.name.clone(),
        description: manifest.description.clone(),
        release: release.to_path_buf(),
        agent: agent.to_string(),
        selection: manifest.tasks.clone(),
        draw,
        reference: manifest.reference.clone(),
        conditions,
    };
    if let Some(previous) = existing.iter().find(|s| s.name == manifest.name) {
        let same = previous.selection == resolved.selection
            && previous.draw == resolved.draw
            && previous.reference == resolved.reference
            && previous.description == resolved.description
            && previous.conditions.len() == resolved.conditions.len()
            && previous
                .conditions
                .iter()
                .zip(&resolved.conditions)
                .all(|(a, b)| a.condition == b.condition);
        if !same {
            return Err(err(format!(
                "{} holds a different study `{}` (tasks or conditions changed); use a new \
                 --out directory or another study name",
                study_file(dir, &manifest.name).display(),
                manifest.name
            )));
        }
        return Ok(previous.clone());
    }
    Ok(resolved)
}

/// Gives each condition of `study` its compatible manifest (by condition
/// name, [`crate::condition_manifests`]). A study resumed from its file
/// must find the same manifests: the release changed otherwise.
///
/// # Errors
/// [`Error::StudyDir`] when a condition's recorded manifest differs.
pub fn attach_manifests(
    dir: &Path,
    study: &mut ResolvedStudy,
    manifests: &BTreeMap<String, CompatibleManifest>,
) -> Result<()> {
    for c in &mut study.conditions {
        let new = manifests.get(&c.condition.name).cloned();
        if c.environment_manifest.is_some() && c.environment_manifest != new {
            return Err(Error::StudyDir {
                dir: dir.to_path_buf(),
                message: format!(
                    "{} records another compatible manifest for condition `{}` (the release \
                     changed?); use a new --out directory",
                    study_file(dir, &study.name).display(),
                    c.condition.name
                ),
            });
        }
        c.environment_manifest = new;
    }
    Ok(())
}

/// The perturbed copy of the release that a perturbation condition of a
/// study in `dir` reads: `dir/releases/<kind>`, made once for `tasks`
/// (seed [`STUDY_PERTURBATION_SEED`]) and reused after.
///
/// # Errors
/// [`Error::StudyDir`] when the copy cannot be made, or was made for
/// other tasks (it lacks one of `tasks`).
pub fn perturbed_release(
    dir: &Path,
    release: &Release,
    kind: PerturbationKind,
    tasks: &[String],
) -> Result<PathBuf> {
    let path = dir.join("releases").join(kind.as_str());
    let err = |message: String| Error::StudyDir {
        dir: dir.to_path_buf(),
        message,
    };
    if !path.join("perturbations").is_dir() {
        let _ = std::fs::remove_dir_all(&path);
        let set: BTreeSet<String> = tasks.iter().cloned().collect();
        earthverse_interventions::perturb_release(
            release,
            kind,
            STUDY_PERTURBATION_SEED,
            &path,
            Some(&set),
        )
        .map_err(|e| err(format!("perturbing the release ({}): {e}", kind.as_str())))?;
    }
    if let Some(t) = tasks
        .iter()
        .find(|t| !path.join("tasks").join(format!("{t}.json")).is_file())
    {
        return Err(err(format!(
            "{} was made for other tasks (it lacks {t}); use another --out",
            path.display()
        )));
    }
    Ok(path)
}

/// The tasks of `tasks` whose perturbation in the perturbed release at
/// `perturbed` does not apply, each with the manifest's reason (issue #45:
/// such a task is left out of the condition's pairs, and the report says
/// how many).
pub fn not_applicable_tasks(perturbed: &Path, tasks: &[String]) -> BTreeMap<String, String> {
    tasks
        .iter()
        .filter_map(|t| {
            let manifest = earthverse_interventions::perturb::read_manifest(perturbed, t)?;
            let reason = manifest.not_applicable?;
            Some((t.clone(), reason))
        })
        .collect()
}

/// The not-applicable tasks of every perturbation condition of `study`
/// whose perturbed release is in `dir` (by condition name).
///
/// # Errors
/// [`Error`] when a condition's perturbation key is not a kind.
pub fn study_not_applicable(
    dir: &Path,
    study: &ResolvedStudy,
) -> Result<BTreeMap<String, BTreeMap<String, String>>> {
    let mut out = BTreeMap::new();
    for c in &study.conditions {
        let Some(kind) =
            perturbation_of(&c.condition.condition).map_err(|message| Error::StudyDir {
                dir: dir.to_path_buf(),
                message,
            })?
        else {
            continue;
        };
        let path = dir.join("releases").join(kind.as_str());
        let excluded = not_applicable_tasks(&path, study.tasks());
        if !excluded.is_empty() {
            out.insert(c.condition.name.clone(), excluded);
        }
    }
    Ok(out)
}

/// Writes a study's file into its directory (atomically: a temporary file
/// renamed into place).
///
/// # Errors
/// [`Error::Io`].
pub fn write_study(dir: &Path, study: &ResolvedStudy) -> Result<()> {
    let path = study_file(dir, &study.name);
    let folder = dir.join("studies");
    std::fs::create_dir_all(&folder).map_err(io(&folder))?;
    let text = serde_json::to_string_pretty(study).map_err(|e| Error::Parse {
        path: path.clone(),
        message: e.to_string(),
    })?;
    let tmp = folder.join(format!(".{}.json.tmp", study.name));
    std::fs::write(&tmp, text + "\n").map_err(io(&tmp))?;
    std::fs::rename(&tmp, &path).map_err(io(&path))
}
