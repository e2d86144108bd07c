//! The six research tools of paper §3.4, with the names, arguments, defaults
//! and outputs of the authors' harness (`reference-harness.md`, "Tools").
//!
//! Every path a model names goes through
//! [`earthverse_package_model::evidence::resolve`]; failures are reported in
//! the reference's words (`file not found: <path>` with warning
//! `missing file`, ...), so recorded runs and new runs see the same thing.

pub(crate) mod image;
pub(crate) mod list;
pub(crate) mod python;
pub(crate) mod read;
pub(crate) mod search;
pub(crate) mod summarize;
pub(crate) mod text;

pub use self::image::InspectImage;
pub use list::ListPackageFiles;
pub use python::{PythonExec, PYTHON_EXEC};
pub use read::ReadTextFile;
pub use search::{clear_window_cache, search_package, SearchPackageFiles, SearchRequest};
pub use summarize::SummarizeTableOrJson;
pub use text::{ReadMode, TEXT_SUFFIXES};

use crate::sandbox::PythonConfig;
use crate::tool::{Tool, ToolContext, ToolOutput};
use earthverse_package_model::evidence::{resolve, AccessError, ResolvedPath};
use serde_json::{json, Value};
use std::sync::Arc;

/// Names of the six research tools, in the reference's catalogue order.
pub const RESEARCH_TOOL_NAMES: [&str; 6] = [
    "list_package_files",
    "read_text_file",
    "search_package_files",
    "summarize_table_or_json",
    "inspect_image",
    "python_exec",
];

/// Configuration of the six research tools.
#[derive(Debug, Clone, Default)]
pub struct ResearchToolsConfig {
    /// How `python_exec` runs (interpreter, sandbox policy, limits).
    pub python: PythonConfig,
    /// How file tools treat files the reference refused (`.bin`, `.pdf`...).
    pub read_mode: ReadMode,
}

impl ResearchToolsConfig {
    /// The reference-compatible configuration used to replay recorded runs:
    /// file tools refuse what the reference refused.
    pub fn reference() -> Self {
        Self {
            read_mode: ReadMode::Reference,
            ..Self::default()
        }
    }
}

/// The five file tools (everything but `python_exec`).
pub fn file_tools(config: &ResearchToolsConfig) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(ListPackageFiles),
        Arc::new(ReadTextFile {
            mode: config.read_mode,
        }),
        Arc::new(SearchPackageFiles {
            mode: config.read_mode,
        }),
        Arc::new(SummarizeTableOrJson),
        Arc::new(InspectImage),
    ]
}

/// All six research tools.
pub fn research_tools(config: &ResearchToolsConfig) -> Vec<Arc<dyn Tool>> {
    let mut tools = file_tools(config);
    tools.push(Arc::new(PythonExec::new(config.python.clone())));
    tools
}

/// Resolves a model-supplied path, mapping refusals to the reference's
/// observable failures.
pub(crate) fn resolve_file(
    ctx: &ToolContext,
    tool: &str,
    requested: &str,
) -> Result<ResolvedPath, Box<ToolOutput>> {
    resolve(&ctx.package_root, requested)
        .map_err(|err| Box::new(access_failure(tool, requested, &err)))
}

pub(crate) fn access_failure(tool: &str, requested: &str, err: &AccessError) -> ToolOutput {
    match err {
        AccessError::NotFound { .. } => ToolOutput::failure(
            Value::String(format!("file not found: {requested}")),
            vec!["missing file".into()],
            Vec::new(),
        ),
        other => tool_exception(
            tool,
            "PermissionError",
            &format!("path outside allowed task/package roots: {requested} ({other})"),
        ),
    }
}

/// The reference's envelope for an exception inside a tool.
pub(crate) fn tool_exception(tool: &str, error_type: &str, message: &str) -> ToolOutput {
    ToolOutput::failure(
        json!({"tool": tool, "error_type": error_type, "error": message}),
        vec!["tool exception".into()],
        Vec::new(),
    )
}

/// Runs a file tool's blocking work off the async runtime. A panic in the
/// work becomes the tool's exception output (`JoinError`), so a call always
/// ends with an observation.
pub(crate) async fn run_blocking(
    tool: &str,
    work: impl FnOnce() -> ToolOutput + Send + 'static,
) -> ToolOutput {
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|e| tool_exception(tool, "JoinError", &e.to_string()))
}

/// A required string argument (already schema-checked).
pub(crate) fn str_arg<'a>(args: &'a Value, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or("")
}

/// An integer argument with a default.
pub(crate) fn usize_arg(args: &Value, key: &str, default: usize) -> usize {
    args.get(key)
        .and_then(Value::as_i64)
        .map(|v| v.max(0) as usize)
        .unwrap_or(default)
}

/// Lower-cased suffix with its dot, as Python's `Path.suffix.lower()`.
pub(crate) fn suffix_of(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rfind('.') {
        Some(0) | None => String::new(),
        Some(i) if i + 1 == name.len() => String::new(),
        Some(i) => name[i..].to_lowercase(),
    }
}

/// Python's ordering of `Path` objects: component by component.
pub(crate) fn python_path_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    a.split('/').cmp(b.split('/'))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn blocking_work_runs_and_a_panic_in_it_becomes_an_exception_output() {
        let done = run_blocking("read_text_file", || {
            ToolOutput::failure(json!({"n": 1}), Vec::new(), Vec::new())
        })
        .await;
        assert_eq!(done.output, json!({"n": 1}));
        let crashed = run_blocking("read_text_file", || panic!("decoder bug")).await;
        assert!(!crashed.ok);
        assert_eq!(crashed.output["tool"], "read_text_file");
        assert_eq!(crashed.output["error_type"], "JoinError");
        assert!(
            crashed.output["error"]
                .as_str()
                .unwrap()
                .contains("panicked"),
            "{}",
            crashed.output
        );
        assert_eq!(crashed.warnings, ["tool exception"]);
    }

    #[test]
    fn suffix_like_python() {
        assert_eq!(suffix_of("data/a.JSON"), ".json");
        assert_eq!(suffix_of("data/.hidden"), "");
        assert_eq!(suffix_of("data/a.json.json"), ".json");
        assert_eq!(suffix_of("data/x.0"), ".0");
        assert_eq!(suffix_of("README"), "");
    }

    #[test]
    fn path_order_by_components() {
        let mut v = vec!["data/a-b/x", "data/a/x", "data/a.b"];
        v.sort_by(|a, b| python_path_cmp(a, b));
        assert_eq!(v, vec!["data/a/x", "data/a-b/x", "data/a.b"]);
    }
}
