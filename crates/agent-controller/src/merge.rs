//! Bringing shards back together: the batch plan, the completeness check
//! and the merge of shard output directories (`earthverse merge`).
//!
//! Every `run_batch` records, in `<out>/<system>/batch-plan.json`, the
//! task ids of the whole batch before sharding (the union over every
//! invocation that wrote to that directory, updated under a file lock).
//! Shards of one batch all record the same set, so any one shard
//! directory, or one directory the shards share, says which tasks a
//! complete result must hold.
//!
//! A task is **finished** when its `trajectory.json` exists and reads as
//! a run record, whatever its `run_status`: an `error` record scores zero
//! and stays in the denominator. [`check`] lists, for each system, the
//! planned tasks with no finished record (missing), the tasks with a
//! record in more than one directory (duplicates: identical when their
//! `trajectory.json` bytes hash alike, else conflicting), and records of
//! tasks outside the plan. [`merge_into`] copies one record per task into
//! an output directory and writes `merge-manifest.json`: the sha256 of
//! every file of every merged record. It refuses conflicting duplicates
//! and writes nothing then.

use crate::error::{ControllerError, Result};
use crate::record::{write_json_atomic, Trajectory};
use crate::RunStatus;
use fs2::FileExt;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The plan file in `<out>/<system>/`.
pub const PLAN_FILE: &str = "batch-plan.json";
/// The manifest `earthverse merge` writes in `<out>/<system>/`.
pub const MANIFEST_FILE: &str = "merge-manifest.json";
const PLAN_KIND: &str = "earthverse-batch-plan";
const MANIFEST_KIND: &str = "earthverse-merge-manifest";

/// The task set of a batch (no `task_id` key at the top level, so run
/// finders never take it for a run record).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchPlan {
    /// Always `earthverse-batch-plan`.
    pub kind: String,
    /// System name.
    pub system: String,
    /// Every task of the batch, all shards together, sorted.
    pub task_ids: BTreeSet<String>,
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> ControllerError + '_ {
    move |source| ControllerError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Adds `task_ids` to the plan of `system_dir` (created if absent), under
/// an exclusive lock on `<system_dir>/.batch-plan.flock` so shards starting
/// together never lose each other's ids.
pub fn record_plan<'a>(
    system_dir: &Path,
    system: &str,
    task_ids: impl IntoIterator<Item = &'a str>,
) -> Result<()> {
    std::fs::create_dir_all(system_dir).map_err(io_error(system_dir))?;
    let lock_path = system_dir.join(".batch-plan.flock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io_error(&lock_path))?;
    lock.lock_exclusive().map_err(io_error(&lock_path))?;
    let mut plan = read_plan(system_dir)?.unwrap_or_else(|| BatchPlan {
        kind: PLAN_KIND.into(),
        system: system.into(),
        task_ids: BTreeSet::new(),
    });
    let before = plan.task_ids.len();
    plan.task_ids
        .extend(task_ids.into_iter().map(str::to_string));
    let path = system_dir.join(PLAN_FILE);
    let written = if plan.task_ids.len() != before || !path.exists() {
        write_json_atomic(&path, &plan)
    } else {
        Ok(())
    };
    let _ = FileExt::unlock(&lock);
    written
}

/// The plan of `system_dir`, if it has one.
pub fn read_plan(system_dir: &Path) -> Result<Option<BatchPlan>> {
    let path = system_dir.join(PLAN_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(ControllerError::Io { path, source }),
    };
    let plan: BatchPlan = serde_json::from_str(&text).map_err(|source| ControllerError::Json {
        path: path.clone(),
        source,
    })?;
    if plan.kind != PLAN_KIND {
        return Err(ControllerError::Merge(format!(
            "{}: field kind is `{}`, expected `{PLAN_KIND}`",
            path.display(),
            plan.kind
        )));
    }
    Ok(Some(plan))
}

/// One finished record found in a shard directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FoundRecord {
    /// The task directory.
    pub dir: PathBuf,
    /// `run_status` of its `trajectory.json`.
    pub run_status: RunStatus,
    /// sha256 (hex) of its `trajectory.json`.
    pub record_sha256: String,
}

/// A task with a record in more than one directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Duplicate {
    /// Task id.
    pub task_id: String,
    /// Its task directories.
    pub dirs: Vec<PathBuf>,
    /// Whether every copy's `trajectory.json` is byte-identical.
    pub identical: bool,
}

/// What [`check`] found for one system over all directories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SystemCheck {
    /// System directory name.
    pub system: String,
    /// The union of the plans found (empty when no directory had one).
    pub planned: BTreeSet<String>,
    /// Whether any directory had a plan.
    pub has_plan: bool,
    /// Finished records per task, in the order of the directories given.
    pub records: BTreeMap<String, Vec<FoundRecord>>,
    /// Planned tasks without a finished record.
    pub missing: Vec<String>,
    /// Task directories whose `trajectory.json` is unreadable (counted missing).
    pub unreadable: Vec<PathBuf>,
    /// Tasks with records in several directories.
    pub duplicates: Vec<Duplicate>,
    /// Records of tasks that no plan lists.
    pub unplanned: Vec<String>,
}

impl SystemCheck {
    /// Every planned task has exactly one finished record (identical
    /// copies count once) and no plan is absent.
    pub fn is_complete(&self) -> bool {
        self.has_plan && self.missing.is_empty()
    }
    /// Duplicates whose copies differ.
    pub fn conflicts(&self) -> impl Iterator<Item = &Duplicate> {
        self.duplicates.iter().filter(|d| !d.identical)
    }
    /// Finished records with `run_status: ok` (first copy of each task).
    pub fn ok_count(&self) -> usize {
        self.records
            .values()
            .filter(|r| r.first().is_some_and(|r| r.run_status == RunStatus::Ok))
            .count()
    }
}

/// sha256 (hex) of a file.
pub fn sha256_file(path: &Path) -> Result<String> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(io_error(path))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = file.read(&mut buf).map_err(io_error(path))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

fn subdirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io_error(dir))? {
        let entry = entry.map_err(io_error(dir))?;
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if !hidden && entry.file_type().map_err(io_error(dir))?.is_dir() {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}

/// Checks the system directories under each of `dirs` (each an
/// `earthverse run --out` directory): see the module docs.
pub fn check(dirs: &[PathBuf]) -> Result<Vec<SystemCheck>> {
    let mut systems: BTreeMap<String, SystemCheck> = BTreeMap::new();
    for dir in dirs {
        if !dir.is_dir() {
            return Err(ControllerError::Merge(format!(
                "{} is not a directory of runs",
                dir.display()
            )));
        }
        for system_dir in subdirs(dir)? {
            let name = system_dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let plan = read_plan(&system_dir)?;
            let mut found = Vec::new();
            let mut unreadable = Vec::new();
            for task_dir in subdirs(&system_dir)? {
                let path = task_dir.join("trajectory.json");
                if !path.is_file() {
                    continue;
                }
                match Trajectory::load(&path) {
                    Ok(t) => found.push((
                        t.task_id.clone(),
                        FoundRecord {
                            record_sha256: sha256_file(&path)?,
                            run_status: t.diagnostics.run_status.unwrap_or(RunStatus::Error),
                            dir: task_dir,
                        },
                    )),
                    Err(e) => {
                        tracing::warn!("{e}");
                        unreadable.push(task_dir);
                    }
                }
            }
            if plan.is_none() && found.is_empty() {
                continue; // not a system directory (e.g. scratch)
            }
            let entry = systems.entry(name.clone()).or_insert_with(|| SystemCheck {
                system: name,
                planned: BTreeSet::new(),
                has_plan: false,
                records: BTreeMap::new(),
                missing: Vec::new(),
                unreadable: Vec::new(),
                duplicates: Vec::new(),
                unplanned: Vec::new(),
            });
            if let Some(plan) = plan {
                entry.has_plan = true;
                entry.planned.extend(plan.task_ids);
            }
            entry.unreadable.extend(unreadable);
            for (task_id, record) in found {
                entry.records.entry(task_id).or_default().push(record);
            }
        }
    }
    for s in systems.values_mut() {
        s.missing = s
            .planned
            .iter()
            .filter(|t| !s.records.contains_key(*t))
            .cloned()
            .collect();
        s.unplanned = s
            .records
            .keys()
            .filter(|t| s.has_plan && !s.planned.contains(*t))
            .cloned()
            .collect();
        s.duplicates = s
            .records
            .iter()
            .filter(|(_, r)| r.len() > 1)
            .map(|(task_id, r)| Duplicate {
                task_id: task_id.clone(),
                dirs: r.iter().map(|r| r.dir.clone()).collect(),
                identical: r.iter().all(|x| x.record_sha256 == r[0].record_sha256),
            })
            .collect();
    }
    Ok(systems.into_values().collect())
}

/// One merged record in the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestEntry {
    /// Task id.
    pub task_id: String,
    /// `ok` or `error`.
    pub run_status: RunStatus,
    /// The directory it was copied from.
    pub source: PathBuf,
    /// sha256 (hex) of every file of the record, by path relative to the
    /// task directory.
    pub files: BTreeMap<String, String>,
}

/// `merge-manifest.json`: the merged set of one system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MergeManifest {
    /// Always `earthverse-merge-manifest`.
    pub kind: String,
    /// System name.
    pub system: String,
    /// Whether every planned task has its record.
    pub complete: bool,
    /// Planned tasks.
    pub planned: usize,
    /// Planned tasks without a record.
    pub missing: Vec<String>,
    /// Tasks found in several directories with identical records (merged once).
    pub identical_duplicates: Vec<String>,
    /// One entry per merged task, sorted by task id.
    pub records: Vec<ManifestEntry>,
}

fn copy_tree(from: &Path, to: &Path, hashes: &mut BTreeMap<String, String>) -> Result<()> {
    for entry in walkdir::WalkDir::new(from).sort_by_file_name() {
        let entry =
            entry.map_err(|e| ControllerError::Merge(format!("{}: {e}", from.display())))?;
        let rel = entry.path().strip_prefix(from).unwrap_or(entry.path());
        let target = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).map_err(io_error(&target))?;
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &target).map_err(io_error(&target))?;
            hashes.insert(
                rel.to_string_lossy().replace('\\', "/"),
                sha256_file(&target)?,
            );
        }
    }
    Ok(())
}

/// Copies one record per task of each checked system into
/// `<out>/<system>/`, writes the union plan and `merge-manifest.json`, and
/// returns the manifests. Refuses, writing nothing, when any system has
/// conflicting duplicates, or when `out` already holds a different record
/// of a task. `trajectory.json` is copied last, so a merge cut short
/// leaves no half record that reads as finished.
pub fn merge_into(checks: &[SystemCheck], out: &Path) -> Result<Vec<MergeManifest>> {
    let conflicts: Vec<String> = checks
        .iter()
        .flat_map(|s| {
            s.conflicts().map(move |d| {
                format!(
                    "{}/{}: {}",
                    s.system,
                    d.task_id,
                    d.dirs
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(" vs ")
                )
            })
        })
        .collect();
    if !conflicts.is_empty() {
        return Err(ControllerError::Merge(format!(
            "conflicting records of the same task (different trajectory.json); keep one and merge again:\n  {}",
            conflicts.join("\n  ")
        )));
    }
    let mut manifests = Vec::new();
    for s in checks {
        let system_dir = out.join(&s.system);
        let mut records = Vec::new();
        for (task_id, found) in &s.records {
            let source = &found[0];
            let name = source.dir.file_name().unwrap_or_default();
            let target = system_dir.join(name);
            let existing = target.join("trajectory.json");
            if existing.is_file() {
                if sha256_file(&existing)? != source.record_sha256 {
                    return Err(ControllerError::Merge(format!(
                        "{} already holds a different record of {task_id}",
                        target.display()
                    )));
                }
                if target == source.dir {
                    // Merging a directory into itself: hash in place.
                    let mut files = BTreeMap::new();
                    hash_tree(&target, &mut files)?;
                    records.push(entry(task_id, source, files));
                    continue;
                }
            }
            let staging = system_dir.join(format!(".{}.merging", name.to_string_lossy()));
            let _ = std::fs::remove_dir_all(&staging);
            let mut files = BTreeMap::new();
            copy_tree(&source.dir, &staging, &mut files)?;
            let _ = std::fs::remove_dir_all(&target);
            std::fs::rename(&staging, &target).map_err(io_error(&target))?;
            records.push(entry(task_id, source, files));
        }
        if s.has_plan {
            record_plan(&system_dir, &s.system, s.planned.iter().map(String::as_str))?;
        }
        let manifest = MergeManifest {
            kind: MANIFEST_KIND.into(),
            system: s.system.clone(),
            complete: s.is_complete(),
            planned: s.planned.len(),
            missing: s.missing.clone(),
            identical_duplicates: s.duplicates.iter().map(|d| d.task_id.clone()).collect(),
            records,
        };
        write_json_atomic(&system_dir.join(MANIFEST_FILE), &manifest)?;
        manifests.push(manifest);
    }
    Ok(manifests)
}

fn entry(task_id: &str, source: &FoundRecord, files: BTreeMap<String, String>) -> ManifestEntry {
    ManifestEntry {
        task_id: task_id.to_string(),
        run_status: source.run_status,
        source: source.dir.clone(),
        files,
    }
}

fn hash_tree(dir: &Path, hashes: &mut BTreeMap<String, String>) -> Result<()> {
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.map_err(|e| ControllerError::Merge(format!("{}: {e}", dir.display())))?;
        if entry.file_type().is_file() {
            let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
            hashes.insert(
                rel.to_string_lossy().replace('\\', "/"),
                sha256_file(entry.path())?,
            );
        }
    }
    Ok(())
}

/// Planned tasks without a finished record, for every plan found under
/// `runs_dir` (at any depth): `(system directory, missing task ids)`,
/// only for incomplete systems. Directories without a plan are not
/// checked (recorded runs of a release have none).
pub fn incomplete_plans(runs_dir: &Path) -> Result<Vec<(PathBuf, Vec<String>)>> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(runs_dir).sort_by_file_name() {
        let entry =
            entry.map_err(|e| ControllerError::Merge(format!("{}: {e}", runs_dir.display())))?;
        if entry.file_name() != PLAN_FILE || !entry.file_type().is_file() {
            continue;
        }
        let Some(system_dir) = entry.path().parent() else {
            continue;
        };
        let Some(parent) = system_dir.parent() else {
            continue;
        };
        let checks = check(&[parent.to_path_buf()])?;
        let name = system_dir.file_name().unwrap_or_default().to_string_lossy();
        if let Some(s) = checks.iter().find(|s| s.system == name) {
            if !s.missing.is_empty() {
                out.push((system_dir.to_path_buf(), s.missing.clone()));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::RunRecord;

    fn write_record(out: &Path, task: &str, message: &str) {
        let record = RunRecord::error(task, "sys", message);
        record.write_to(&out.join("sys").join(task)).unwrap();
    }

    #[test]
    fn check_lists_missing_duplicates_and_conflicts_and_merge_refuses_conflicts() {
        let root = tempfile::tempdir().unwrap();
        let (a, b, out) = (
            root.path().join("a"),
            root.path().join("b"),
            root.path().join("out"),
        );
        for dir in [&a, &b] {
            record_plan(&dir.join("sys"), "sys", ["T1", "T2", "T3"]).unwrap();
        }
        write_record(&a, "T1", "same");
        std::fs::create_dir_all(b.join("sys")).unwrap();
        copy_tree(&a.join("sys/T1"), &b.join("sys/T1"), &mut BTreeMap::new()).unwrap();
        write_record(&b, "T2", "x");
        let checks = check(&[a.clone(), b.clone()]).unwrap();
        assert_eq!(checks.len(), 1);
        let s = &checks[0];
        assert_eq!(s.missing, ["T3"]);
        assert_eq!(s.duplicates.len(), 1);
        assert!(s.duplicates[0].identical);
        assert!(!s.is_complete());
        let manifests = merge_into(&checks, &out).unwrap();
        assert_eq!(manifests[0].records.len(), 2);
        assert!(!manifests[0].complete);
        assert_eq!(
            manifests[0].records[0].files["trajectory.json"],
            sha256_file(&a.join("sys/T1/trajectory.json")).unwrap()
        );
        assert_eq!(
            incomplete_plans(&out).unwrap(),
            [(out.join("sys"), vec!["T3".to_string()])]
        );
        // A different record of T2 in a: a conflict, refused.
        write_record(&a, "T2", "another run");
        write_record(&a, "T3", "z");
        let checks = check(&[a, b]).unwrap();
        assert_eq!(checks[0].conflicts().count(), 1);
        let err = merge_into(&checks, &root.path().join("out2")).unwrap_err();
        assert!(err.to_string().contains("sys/T2"), "{err}");
        assert!(!root.path().join("out2").exists());
    }

    #[test]
    fn plans_of_concurrent_writers_are_united() {
        let dir = tempfile::tempdir().unwrap();
        let threads: Vec<_> = (0..4)
            .map(|k| {
                let dir = dir.path().to_path_buf();
                std::thread::spawn(move || {
                    let ids: Vec<String> = (0..50).map(|i| format!("T{k}-{i}")).collect();
                    record_plan(&dir, "sys", ids.iter().map(String::as_str)).unwrap();
                })
            })
            .collect();
        threads.into_iter().for_each(|t| t.join().unwrap());
        assert_eq!(read_plan(dir.path()).unwrap().unwrap().task_ids.len(), 200);
    }
}
