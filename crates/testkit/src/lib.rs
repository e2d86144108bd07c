//! # earthverse-testkit
//!
//! Helpers for the unit tests of code built on earthverse-rs: add it as a
//! `[dev-dependencies]` path dependency and a test needs one import.
//!
//! - fixtures: [`fixture_release`] (the bundled mini release) and
//!   [`fixture_task`] (one of its tasks, loaded by package-model's
//!   [`Release::load`]);
//! - a temporary event package in the release layout: [`TempPackage`];
//! - scripted and replay models from model-provider: [`ScriptedModel`],
//!   [`ReplayModel`];
//! - a whole run of agent-controller's [`Controller`] with a scripted model
//!   and the real research tools: [`run_scripted`];
//! - assertions on run records: [`assert_run_ok`], [`assert_called_tools`],
//!   [`assert_trajectory_loads`].
//!
//! It depends on package-model, tool-registry, model-provider and
//! agent-controller, plus `tempfile` and a current-thread Tokio runtime.
//!
//! ```
//! use earthverse_testkit::*;
//!
//! let task = fixture_task("FIX-001_Q1");
//! assert_eq!(task.event_id, "FIX-001");
//!
//! let run = run_scripted(
//!     "FIX-001_Q1",
//!     [
//!         r#"{"action":"tool_call","tool":"list_package_files","args":{},"reason":"look"}"#,
//!         r#"{"action":"final_answer","final_answer":{"peak_c":38.1},"confidence":0.5}"#,
//!     ],
//! );
//! assert_run_ok(&run);
//! assert_called_tools(&run, &["list_package_files"]);
//! ```
#![deny(missing_docs)]
#![allow(clippy::panic, clippy::expect_used)] // a test kit fails by panicking

use earthverse_agent_controller::{Controller, ControllerSettings, RunRecord, TaskInput};
use earthverse_package_model::read_json_record;
use earthverse_package_model::{RecordedRun, Release, Task};
use earthverse_tool_registry::{Registry, ResearchToolsConfig, ToolContext};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use earthverse_agent_controller::ReplayModel;
pub use earthverse_model_provider::{ScriptStep, ScriptedModel};

/// Where event packages live inside a release root.
pub const PACKAGES_LAYOUT: &str = "packages/event_packages/standard_event_packages/packages";

/// The bundled mini release (`fixtures/release` at the project root).
pub fn fixture_release() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
        .join("fixtures")
        .join("release")
}

/// Copies the bundled mini release to `to` (created if missing), for tests
/// that edit a task or a run before running a command on it.
///
/// # Panics
/// When a file cannot be read or written.
pub fn copy_fixture_release(to: &Path) {
    copy_tree(&fixture_release(), to);
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("cannot create {}: {e}", to.display()));
    let entries =
        std::fs::read_dir(from).unwrap_or_else(|e| panic!("cannot read {}: {e}", from.display()));
    for entry in entries {
        let entry = entry.unwrap_or_else(|e| panic!("cannot read {}: {e}", from.display()));
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target)
                .unwrap_or_else(|e| panic!("cannot copy to {}: {e}", target.display()));
        }
    }
}

/// Task `task_id` of the bundled release, loaded with [`Release::load`].
///
/// # Panics
/// When the release does not load or has no such task.
pub fn fixture_task(task_id: &str) -> Task {
    let root = fixture_release();
    let release = Release::load(&root)
        .unwrap_or_else(|e| panic!("fixture release {} does not load: {e}", root.display()));
    release
        .task(task_id)
        .cloned()
        .unwrap_or_else(|| panic!("fixture release has no task {task_id}"))
}

/// Builder of a temporary event package laid out like a release
/// (`<root>/packages/event_packages/standard_event_packages/packages/<ID>/...`).
#[derive(Debug)]
pub struct TempPackage {
    event_id: String,
    files: Vec<(String, Vec<u8>)>,
}

impl TempPackage {
    /// An empty package for event `event_id` (`TEST-001`).
    pub fn new(event_id: impl Into<String>) -> Self {
        Self {
            event_id: event_id.into(),
            files: Vec::new(),
        }
    }

    /// Adds a file at the package-relative `path` (`data/x.csv`).
    pub fn file(mut self, path: impl Into<String>, bytes: impl Into<Vec<u8>>) -> Self {
        self.files.push((path.into(), bytes.into()));
        self
    }

    /// Adds `value` as pretty JSON at the package-relative `path`.
    ///
    /// # Panics
    /// When `value` cannot be serialised.
    pub fn json<T: Serialize + ?Sized>(self, path: impl Into<String>, value: &T) -> Self {
        let bytes = serde_json::to_vec_pretty(value).expect("value serialises as JSON");
        self.file(path, bytes)
    }

    /// Writes the package into a fresh temporary directory.
    ///
    /// # Panics
    /// When the directory or a file cannot be written.
    pub fn build(self) -> BuiltPackage {
        let dir = tempfile::tempdir().expect("temporary directory");
        let package_dir = dir.path().join(PACKAGES_LAYOUT).join(&self.event_id);
        for (path, bytes) in &self.files {
            let target = package_dir.join(path);
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent).expect("package directory");
            }
            std::fs::write(&target, bytes)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", target.display()));
        }
        std::fs::create_dir_all(&package_dir).expect("package directory");
        let scratch = dir.path().join("scratch");
        std::fs::create_dir_all(&scratch).expect("scratch directory");
        BuiltPackage {
            event_id: self.event_id,
            package_dir,
            scratch,
            dir,
        }
    }
}

/// A built [`TempPackage`]; the directory is removed when this is dropped.
#[derive(Debug)]
pub struct BuiltPackage {
    event_id: String,
    package_dir: PathBuf,
    scratch: PathBuf,
    dir: tempfile::TempDir,
}

impl BuiltPackage {
    /// The temporary release root (holds `packages/...` and `scratch/`).
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The event package directory.
    pub fn package_dir(&self) -> &Path {
        &self.package_dir
    }

    /// The event id the package was built for.
    pub fn event_id(&self) -> &str {
        &self.event_id
    }

    /// A tool context on the package, with a scratch directory next to it.
    pub fn context(&self) -> ToolContext {
        let mut ctx = ToolContext::new(&self.package_dir, &self.scratch);
        ctx.package_id = self.event_id.clone();
        ctx
    }

    /// A controller task on this package (for [`run_scripted`]), with
    /// scratch files under [`BuiltPackage::root`].
    pub fn task_input(&self, task_id: impl Into<String>, question: impl Into<String>) -> TaskInput {
        TaskInput {
            task_id: task_id.into(),
            event_id: self.event_id.clone(),
            question: question.into(),
            package_root: self.package_dir.clone(),
            question_path: None,
            scratch_dir: self.scratch.join("run"),
        }
    }
}

/// What [`run_scripted`] runs: a fixture task id or your own [`TaskInput`].
#[derive(Debug, Clone)]
pub enum ScriptedTask {
    /// A task of the bundled release, by id.
    Fixture(String),
    /// A task you prepared.
    Input(TaskInput),
}

impl From<&str> for ScriptedTask {
    fn from(id: &str) -> Self {
        Self::Fixture(id.to_owned())
    }
}

impl From<String> for ScriptedTask {
    fn from(id: String) -> Self {
        Self::Fixture(id)
    }
}

impl From<TaskInput> for ScriptedTask {
    fn from(input: TaskInput) -> Self {
        Self::Input(input)
    }
}

/// Runs agent-controller's [`Controller`] (default settings) with a
/// [`ScriptedModel`] replying `replies` in order and the real research-tool
/// [`Registry`]. A fixture task gets a temporary scratch directory.
///
/// # Panics
/// When the fixture task does not exist or the runtime cannot start.
pub fn run_scripted<I, S>(task: impl Into<ScriptedTask>, replies: I) -> RunRecord
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let model = Arc::new(ScriptedModel::from_texts("scripted", replies));
    let scratch = tempfile::tempdir().expect("temporary directory");
    let input = match task.into() {
        ScriptedTask::Input(input) => input,
        ScriptedTask::Fixture(id) => {
            let task = fixture_task(&id);
            TaskInput {
                task_id: task.task_id.clone(),
                event_id: task.event_id.clone(),
                question: task.question.clone(),
                package_root: fixture_release().join(PACKAGES_LAYOUT).join(&task.event_id),
                question_path: None,
                scratch_dir: scratch.path().join("scratch"),
            }
        }
    };
    let tools = Arc::new(Registry::with_research_tools(ResearchToolsConfig::default()));
    let controller = Controller::new(model, tools, ControllerSettings::default());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("Tokio runtime")
        .block_on(controller.run_task(&input))
}

/// Asserts the run finished well: status `ok`, a non-empty final answer and
/// a termination reason.
///
/// # Panics
/// When any of these is missing.
pub fn assert_run_ok(run: &RunRecord) {
    let d = &run.trajectory.diagnostics;
    assert_eq!(
        d.run_status,
        Some(earthverse_agent_controller::RunStatus::Ok),
        "run of {} is not ok: {:?}",
        run.trajectory.task_id,
        d.error
    );
    let answer = &run.trajectory.final_answer;
    assert!(
        !(answer.is_null() || answer.as_object().is_some_and(|o| o.is_empty())),
        "run of {} has no final answer",
        run.trajectory.task_id
    );
    assert!(
        d.termination_reason
            .as_ref()
            .is_some_and(|r| !r.name().is_empty()),
        "run of {} has no termination reason",
        run.trajectory.task_id
    );
}

/// Asserts the run called exactly these tools, in this order.
///
/// # Panics
/// When the sequence of tool names differs.
pub fn assert_called_tools(run: &RunRecord, tools: &[&str]) {
    let called: Vec<&str> = run
        .trajectory
        .tool_calls
        .iter()
        .map(|c| c.tool.as_str())
        .collect();
    assert_eq!(called, tools, "tools called by {}", run.trajectory.task_id);
}

/// Asserts a written trajectory parses as package-model's [`RecordedRun`]
/// and returns it. `path` is `trajectory.json` or the run directory
/// holding it (as written by [`RunRecord::write_to`]).
///
/// # Panics
/// When the file is missing or does not parse.
pub fn assert_trajectory_loads(path: impl AsRef<Path>) -> RecordedRun {
    let path = path.as_ref();
    let file = if path.is_dir() {
        path.join("trajectory.json")
    } else {
        path.to_path_buf()
    };
    read_json_record(&file).unwrap_or_else(|e| panic!("{} does not load: {e}", file.display()))
}
