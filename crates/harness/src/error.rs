//! Errors of the harness.

use std::path::PathBuf;

/// What can stop a run before or while it runs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// The agent spec is not one the harness knows, or its file or
    /// directory is wrong.
    #[error("--agent `{spec}`: {reason}")]
    Agent {
        /// The spec as given.
        spec: String,
        /// What is wrong.
        reason: String,
    },
    /// A wire model could not be built (missing key variable, bad URL).
    #[error("--agent `{spec}`")]
    Provider {
        /// The spec as given.
        spec: String,
        /// The provider's error.
        #[source]
        source: earthverse_model_provider::ProviderError,
    },
    /// A setting has a value the harness cannot use.
    #[error("{setting}: {reason}")]
    Setting {
        /// The setting (`--require-suite`, `--prices`, ...).
        setting: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The release could not be loaded.
    #[error("loading the release at {}", path.display())]
    Release {
        /// The release root.
        path: PathBuf,
        /// The loader's error.
        #[source]
        source: earthverse_package_model::PackageError,
    },
    /// The output would land on an input.
    #[error("--out")]
    Output(#[from] earthverse_package_model::OutputError),
    /// A file a task's inventory lists exists but cannot be opened
    /// (permission denied, a symlink loop): the agent would meet an
    /// environment fault, not the task (its run would count as the
    /// agent's failure), so nothing runs.
    #[error(
        "task {task_id}: the inventoried file {} cannot be read; fix its permissions, \
         or run `earthverse validate` on the release",
        path.display()
    )]
    UnreadableEvidence {
        /// The task whose inventory lists the file.
        task_id: String,
        /// The file.
        path: PathBuf,
        /// Why it cannot be opened.
        #[source]
        source: std::io::Error,
    },
    /// No task matches the filter and agent.
    #[error("no task of {} matches the filter and agent", release.display())]
    NoTasks {
        /// The release root.
        release: PathBuf,
    },
    /// The Python interpreter named for `python_exec` cannot run.
    #[error("{source_name} ({}): {reason}", interpreter.display())]
    Python {
        /// Where the interpreter came from (`--python`, `EARTHVERSE_PYTHON`, ...).
        source_name: &'static str,
        /// The interpreter.
        interpreter: PathBuf,
        /// Why it cannot run.
        reason: String,
    },
    /// A file or directory of the run could not be written.
    #[error("writing {}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The batch runner stopped.
    #[error(transparent)]
    Controller(#[from] earthverse_agent_controller::ControllerError),
}

/// Result alias.
pub type Result<T, E = HarnessError> = std::result::Result<T, E>;
