//! The yardstick of every intervention: what each task's reference
//! analysis reads ([`ReferenceReads`]), found the robust way — its
//! `compute_gt.py` run under an audit hook
//! ([`earthverse_package_model::reference_reads`]) — with a static reading
//! of the program's text only as a fallback, and cached per release.
//!
//! The cache file is `<cache>/reference-reads/<fingerprint>.json`, where
//! `<cache>` is `$EARTHVERSE_CACHE`, else `$XDG_CACHE_HOME/earthverse`,
//! else `~/.cache/earthverse`, and the fingerprint is the sha256 of the
//! audit rules' version and, per task, its id, program, `primary_gt` and
//! inventory (paths, sizes, hashes). A release whose programs or evidence
//! change gets a new fingerprint, so a stale cache is never read.

use earthverse_evidence_ledger::reference_files;
use earthverse_package_model::reference_reads::{audit_reference_reads, OpenedFile, AUDIT_VERSION};
use earthverse_package_model::regenerate::RegenerateOptions;
use earthverse_package_model::{Release, Task};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// How a task's reads were found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadsMethod {
    /// Its program ran under the audit hook and reproduced `primary_gt`.
    Audit,
    /// Its program ran under the audit hook but did not reproduce
    /// `primary_gt`: the files it opened are kept, with no `needed` flag.
    AuditUnreproduced,
    /// Static reading of the program and the solution (the inventory paths
    /// they name): the program did not run or opened no package file.
    Static,
}

/// What one task's reference analysis reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskReads {
    /// How they were found.
    pub method: ReadsMethod,
    /// The audited program's outcome (`identical`, `differs at ...`,
    /// `fails: ...`), when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The package files, in first-open order (static: inventory order).
    pub files: Vec<OpenedFile>,
}

impl TaskReads {
    /// The package-relative paths.
    pub fn paths(&self) -> Vec<&str> {
        self.files.iter().map(|f| f.path.as_str()).collect()
    }

    /// The file record of `path`, if the analysis reads it.
    pub fn file(&self, path: &str) -> Option<&OpenedFile> {
        self.files.iter().find(|f| f.path == path)
    }
}

/// What every task's reference analysis reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferenceReads {
    /// The release fingerprint these reads belong to.
    pub fingerprint: String,
    /// The interpreter that ran the programs (none for static only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
    /// Per task id.
    pub tasks: BTreeMap<String, TaskReads>,
}

/// Errors of [`ReferenceReads`].
#[derive(Debug, thiserror::Error)]
pub enum ReadsError {
    /// The release could not be exported for the audit.
    #[error("auditing the reference analyses: {0}")]
    Audit(#[from] earthverse_package_model::PackageError),
    /// The cache could not be written.
    #[error("{path}: {source}")]
    Cache {
        /// The cache file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// The static reading of one task: the inventory files its program or
/// solution names.
fn static_reads(task: &Task) -> TaskReads {
    TaskReads {
        method: ReadsMethod::Static,
        outcome: None,
        files: reference_files(&task.reference_texts(), &task.inventory_paths())
            .into_iter()
            .map(|path| OpenedFile {
                path,
                keys: Vec::new(),
                needed: None,
                without_it: None,
            })
            .collect(),
    }
}

/// The release's fingerprint (see the module docs).
pub fn release_fingerprint(release: &Release) -> String {
    fingerprint_of(release, None)
}

/// The fingerprint of `tasks` of `release` (all when `None`).
fn fingerprint_of(release: &Release, tasks: Option<&BTreeSet<String>>) -> String {
    let mut hash = Sha256::new();
    hash.update(format!("reference-reads v{AUDIT_VERSION}\n"));
    for task in release
        .tasks()
        .iter()
        .filter(|t| tasks.is_none_or(|ids| ids.contains(&t.task_id)))
    {
        hash.update(task.task_id.as_bytes());
        hash.update([0]);
        hash.update(task.compute_gt_py.as_deref().unwrap_or("").as_bytes());
        hash.update([0]);
        hash.update(task.ground_truth.primary_gt.to_string());
        for f in &task.event_files {
            hash.update(format!(
                "\n{}\t{:?}\t{:?}",
                f.relative_path, f.bytes, f.sha256_16
            ));
        }
        hash.update([1]);
    }
    hex::encode(hash.finalize())
}

/// Where the cache lives (see the module docs).
pub fn default_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("EARTHVERSE_CACHE").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir).join("earthverse"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache").join("earthverse"))
}

impl ReferenceReads {
    /// Static readings only (no Python): every task's program and solution
    /// text, as the oracles read them before the audit existed.
    pub fn static_only(release: &Release) -> ReferenceReads {
        ReferenceReads {
            fingerprint: release_fingerprint(release),
            python: None,
            tasks: release
                .tasks()
                .iter()
                .map(|t| (t.task_id.clone(), static_reads(t)))
                .collect(),
        }
    }

    /// Runs every program under the audit hook with `python` (each opened
    /// file also denied once, to tell needed files from consulted ones);
    /// tasks whose program cannot run or opens no package file fall back
    /// to the static reading.
    ///
    /// # Errors
    /// [`ReadsError::Audit`] when the export for the programs fails.
    pub fn audit(release: &Release, python: &Path, jobs: usize) -> Result<Self, ReadsError> {
        Self::audit_tasks(release, None, python, jobs)
    }

    /// [`ReferenceReads::audit`] of `tasks` only (all when `None`).
    ///
    /// # Errors
    /// As [`ReferenceReads::audit`].
    pub fn audit_tasks(
        release: &Release,
        selected: Option<&BTreeSet<String>>,
        python: &Path,
        jobs: usize,
    ) -> Result<Self, ReadsError> {
        let options = RegenerateOptions {
            python: python.to_path_buf(),
            jobs,
            task_ids: selected.cloned(),
            ..RegenerateOptions::default()
        };
        let audited = audit_reference_reads(release, &options, true)?;
        let mut tasks = BTreeMap::new();
        for a in audited {
            let Some(task) = release.task(&a.task_id) else {
                continue;
            };
            let reads = if a.files.is_empty() {
                TaskReads {
                    outcome: Some(a.outcome.clone()),
                    ..static_reads(task)
                }
            } else {
                TaskReads {
                    method: if a.reproduced() {
                        ReadsMethod::Audit
                    } else {
                        ReadsMethod::AuditUnreproduced
                    },
                    outcome: Some(a.outcome.clone()),
                    files: a.files,
                }
            };
            tasks.insert(a.task_id, reads);
        }
        Ok(ReferenceReads {
            fingerprint: fingerprint_of(release, selected),
            python: Some(python.display().to_string()),
            tasks,
        })
    }

    /// The cached reads of `release`, or a fresh audit (cached after) with
    /// the scientific Python environment (`EARTHVERSE_PYTHON`, the
    /// project's environment, else `python3`; `python` overrides). Without
    /// a cache folder, nothing is written.
    ///
    /// # Errors
    /// [`ReadsError`] when the audit's export or the cache write fails.
    pub fn load_or_audit(
        release: &Release,
        python: Option<&Path>,
        cache_dir: Option<&Path>,
    ) -> Result<Self, ReadsError> {
        Self::load_or_audit_tasks(release, None, python, cache_dir)
    }

    /// [`ReferenceReads::load_or_audit`] of `tasks` only (all when
    /// `None`): the cache key is the fingerprint of those tasks, so a study
    /// of a few tasks audits only them.
    ///
    /// # Errors
    /// As [`ReferenceReads::load_or_audit`].
    pub fn load_or_audit_tasks(
        release: &Release,
        tasks: Option<&BTreeSet<String>>,
        python: Option<&Path>,
        cache_dir: Option<&Path>,
    ) -> Result<Self, ReadsError> {
        let fingerprint = fingerprint_of(release, tasks);
        let cache = cache_dir.map(|d| {
            d.join("reference-reads")
                .join(format!("{}.json", &fingerprint[..32]))
        });
        if let Some(path) = &cache {
            if let Some(cached) = std::fs::read(path)
                .ok()
                .and_then(|b| serde_json::from_slice::<ReferenceReads>(&b).ok())
                .filter(|r| r.fingerprint == fingerprint)
            {
                tracing::debug!(cache = %path.display(), "reference reads from the cache");
                return Ok(cached);
            }
        }
        let python = match python {
            Some(p) => p.to_path_buf(),
            None => earthverse_tool_registry::sandbox::resolve_interpreter(None).0,
        };
        tracing::info!(python = %python.display(), "auditing the reference analyses");
        let reads = ReferenceReads::audit_tasks(release, tasks, &python, 0)?;
        if let Some(path) = &cache {
            write_atomic(path, &reads).map_err(|source| ReadsError::Cache {
                path: path.clone(),
                source,
            })?;
        }
        Ok(reads)
    }

    /// The reads the `kind` oracle is built on: none for the planning
    /// oracle (it localises nothing); else the cached or fresh audit of
    /// `tasks` of `release` (all when `None`;
    /// [`ReferenceReads::load_or_audit_tasks`] with the default cache),
    /// or, when that fails, none (the oracles then read the programs'
    /// text), with a warning naming why.
    pub fn for_oracle(
        release: &Release,
        kind: crate::OracleKind,
        tasks: Option<&BTreeSet<String>>,
        python: Option<&Path>,
    ) -> Option<ReferenceReads> {
        if kind == crate::OracleKind::Plan {
            return None;
        }
        match ReferenceReads::load_or_audit_tasks(
            release,
            tasks,
            python,
            default_cache_dir().as_deref(),
        ) {
            Ok(reads) => Some(reads),
            Err(e) => {
                tracing::warn!(error = %e, "oracles read the programs' text instead");
                None
            }
        }
    }

    /// The reads of one task (static reading when the task is unknown).
    pub fn of(&self, task: &Task) -> TaskReads {
        self.tasks
            .get(&task.task_id)
            .cloned()
            .unwrap_or_else(|| static_reads(task))
    }
}

fn write_atomic(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer_pretty(&mut tmp, value)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
