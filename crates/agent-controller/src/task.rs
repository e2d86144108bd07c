//! One task to run, as the controller and the direct answer modes take it:
//! plain data (a leaf module).

use earthverse_tool_registry::ToolContext;
use std::path::PathBuf;

/// One task to run.
#[derive(Debug, Clone)]
pub struct TaskInput {
    /// Task id (`CSX-001_Q1`).
    pub task_id: String,
    /// Event / package id (`CSX-001`).
    pub event_id: String,
    /// The public question.
    pub question: String,
    /// Root of the event package.
    pub package_root: PathBuf,
    /// The public question file, if any (shown in the task message and
    /// readable by Python).
    pub question_path: Option<PathBuf>,
    /// Per-run scratch directory.
    pub scratch_dir: PathBuf,
}

impl TaskInput {
    /// The tool context of this task.
    pub fn tool_context(&self) -> ToolContext {
        let mut ctx = ToolContext::new(&self.package_root, &self.scratch_dir);
        ctx.package_id = self.event_id.clone();
        let prefix = self.release_prefix();
        if !prefix.is_empty() {
            ctx = ctx.with_release_prefix(prefix.trim_end_matches('/'));
        }
        if let Some(q) = &self.question_path {
            ctx = ctx.with_question_file(q);
        }
        ctx
    }

    /// The release-relative prefix of the package
    /// (`event_packages/standard_event_packages/packages/CSX-001/`), taken
    /// from the package root's path, or `""` when it has no `event_packages`
    /// component.
    pub fn release_prefix(&self) -> String {
        let parts: Vec<String> = self
            .package_root
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        match parts.iter().rposition(|p| p == "event_packages") {
            Some(i) => {
                let mut prefix = parts[i..].join("/");
                prefix.push('/');
                prefix
            }
            None => String::new(),
        }
    }
}
