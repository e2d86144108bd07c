//! `list_package_files(subdir=".", max_files=120)`.

use super::{python_path_cmp, str_arg, suffix_of, usize_arg};
use crate::tool::{Tool, ToolContext, ToolFamily, ToolOutput};
use async_trait::async_trait;
use earthverse_package_model::evidence::{self, AccessError};
use serde_json::{json, Value};

/// Lists the files of the package (or of one of its directories), sorted by
/// path, with sizes and suffixes.
#[derive(Debug, Clone, Copy, Default)]
pub struct ListPackageFiles;

#[async_trait]
impl Tool for ListPackageFiles {
    fn name(&self) -> &str {
        "list_package_files"
    }

    fn description(&self) -> &str {
        "List files in the event package (recursively), sorted by path, with release-relative path, \
         package-relative path, size in bytes and suffix. Arguments: subdir (default \".\"), max_files (default 120)."
    }

    fn family(&self) -> ToolFamily {
        ToolFamily::Research
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "subdir": {"type": "string", "default": ".", "description": "Package-relative directory to list."},
                "max_files": {"type": "integer", "default": 120, "minimum": 0, "description": "Maximum number of files returned."}
            }
        })
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutput {
        let subdir = str_arg(&args, "subdir").to_string();
        let max_files = usize_arg(&args, "max_files", 120);
        let ctx = ctx.clone();
        super::run_blocking("list_package_files", move || list(&ctx, &subdir, max_files)).await
    }
}

fn missing_subdir(subdir: &str) -> ToolOutput {
    ToolOutput::failure(
        Value::String(format!("subdir not found: {subdir}")),
        vec!["missing subdir".into()],
        Vec::new(),
    )
}

/// The listing itself (blocking).
pub(crate) fn list(ctx: &ToolContext, subdir: &str, max_files: usize) -> ToolOutput {
    let requested = if subdir.trim().is_empty() {
        "."
    } else {
        subdir
    };
    let resolved = match evidence::resolve(&ctx.package_root, requested) {
        Ok(r) if r.absolute.is_dir() => r,
        Ok(_) | Err(AccessError::NotFound { .. }) => return missing_subdir(subdir),
        Err(err) => return super::access_failure("list_package_files", subdir, &err),
    };
    let mut files = match evidence::list_package_files(&ctx.package_root) {
        Ok(files) => files,
        Err(err) => {
            return super::tool_exception("list_package_files", "OSError", &err.to_string())
        }
    };
    let prefix = if resolved.package_relative.is_empty() {
        String::new()
    } else {
        format!("{}/", resolved.package_relative)
    };
    files.retain(|f| f.package_relative.starts_with(&prefix));
    files.sort_by(|a, b| python_path_cmp(&a.package_relative, &b.package_relative));
    let total = files.len();
    let shown: Vec<Value> = files
        .iter()
        .take(max_files)
        .map(|f| {
            json!({
                "path": ctx.release_path(&f.package_relative),
                "package_relative_path": f.package_relative,
                "bytes": f.bytes,
                "suffix": suffix_of(&f.package_relative),
            })
        })
        .collect();
    let output = json!({
        "file_count_returned": shown.len(),
        "file_count_total": total,
        "truncated_extra_files": total - shown.len(),
        "files": shown,
    });
    ToolOutput::ok(output, Vec::new())
}
