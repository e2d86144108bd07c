//! # earthverse-study
//!
//! The controlled studies of the paper (§5.2, App. A; Tables 3, 4 and 6)
//! as a library, for `earthverse study run` / `study report` and for a
//! researcher's own program:
//!
//! - **manifests** ([`StudyManifest`], [`load_manifest`]): a name, a task
//!   selection, a reference condition and the conditions, each with the
//!   keys of the run record's `condition` (`answer_mode`,
//!   `reasoning_effort`, `catalogue`, `tool_names`, `context`, `max_turns`,
//!   `task_time_s`, `temperature`, `seed`, `oracle`, `perturbation`) and a
//!   `description` naming the paper's row; every key and value is checked
//!   and a bad one is an [`Error`] naming file, condition and key;
//! - **task selection** ([`select_tasks`]): ids, all, a difficulty-stratified
//!   draw, and the two manifests of App. C.5: the reasoning-effort manifest
//!   ([`draw_effort`]: historically difficult tasks by the release's
//!   published Core, plus a ChaCha20 draw from the rest preferring distinct
//!   events) and the smaller paired manifest drawn from it
//!   ([`draw_paired`]);
//! - **compatible manifests** ([`compatible_manifest`], [`draw_balanced`]):
//!   a required-environment condition with `compatible_manifest = { seed =
//!   2026 }` retains the study's tasks when all are compatible with its
//!   environment and otherwise draws a difficulty-balanced manifest of
//!   compatible tasks (App. C.5; Table 7); the reference runs on those
//!   tasks too, so every ΔCore is paired;
//! - **conditions and the study directory** ([`resolve_study`]): the folder
//!   of runs of each condition, shared with an identical condition already
//!   run into the directory, so reference runs are not run twice;
//! - **diagnostics** ([`Diagnostics`]) of a condition's runs (Tables 9, 10,
//!   12, 13) and the **report as data** ([`build_report`]): scores, ΔCore
//!   with its paired bootstrap interval, win / tie / loss against the
//!   reference, Core by capability. Text and HTML rendering are in
//!   `earthverse-report`;
//! - **running** a study ([`run_study`]): each folder of runs the study
//!   needs, run once through `earthverse-harness` and the controller's
//!   batch runner (`earthverse study run` is a shell over it).
//!
//! ```
//! use earthverse_study::parse_manifest;
//! use std::path::Path;
//!
//! let manifest = parse_manifest(
//!     r#"
//!     name = "demo"
//!     reference = "top20"
//!     [tasks]
//!     effort = { difficult = 2, random = 3, seed = 2026 }
//!     [[conditions]]
//!     name = "top20"
//!     description = "Top-20 semantic-router baseline"
//!     catalogue = "topk:20"
//!     reasoning_effort = "medium"
//!     [[conditions]]
//!     name = "plan"
//!     catalogue = "topk:20"
//!     reasoning_effort = "medium"
//!     oracle = "plan"
//!     "#,
//!     false,
//!     Path::new("demo.toml"),
//! )
//! .unwrap();
//! assert_eq!(manifest.conditions.len(), 2);
//! assert_eq!(manifest.tasks.effort.unwrap().difficult, 2);
//!
//! // A bad value names the file, the condition and the key.
//! let err = parse_manifest(
//!     "name = \"x\"\nreference = \"a\"\n[tasks]\nall = true\n\
//!      [[conditions]]\nname = \"a\"\ncatalogue = \"topk:0\"\n",
//!     false,
//!     Path::new("x.toml"),
//! )
//! .unwrap_err()
//! .to_string();
//! assert!(err.contains("x.toml: condition `a`: catalogue: --catalogue: `topk:0`"));
//! ```
#![deny(missing_docs)]

mod compatible;
mod condition;
mod diagnostics;
mod error;
mod kinds;
mod manifest;
mod report;
mod runner;
mod scoring;
mod select;

pub use compatible::{
    compatible_manifest, condition_manifests, draw_balanced, CompatibleManifest, LevelCount,
};
pub use condition::{
    attach_manifests, not_applicable_tasks, perturbed_release, read_studies, read_study,
    resolve_study, study_file, study_not_applicable, write_study, ResolvedCondition, ResolvedStudy,
    STUDY_PERTURBATION_SEED,
};
pub use diagnostics::{injected_files, Diagnostics, READ_TOOLS};
pub use error::{Error, Result};
pub use kinds::{oracle_of, perturbation_of};
pub use manifest::{
    check_condition, check_manifest, load_manifest, parse_manifest, CompatibleDraw, EffortDraw,
    PairedDraw, StratifiedDraw, StudyCondition, StudyManifest, TaskSelection, CONDITION_KEYS,
    STUDY_CONDITION_KEYS,
};
pub use report::{build_report, study_diagnostics, ConditionRow, ReportSettings, StudyReport};
pub use runner::{run_study, StudyObserver, StudyRunOutcome, StudyRunSettings};
pub use scoring::score_study;
pub use select::{
    draw_effort, draw_paired, recorded_outcome, select_release_tasks, select_tasks, DifficultTask,
    TaskDraw, TaskHistory,
};
