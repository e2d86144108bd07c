//! `read_text_file(path, max_chars=12000)`.

use super::text::{read_text_prefix, text_decision, ReadMode};
use super::{resolve_file, str_arg, suffix_of, usize_arg};
use crate::registry::cap_observation;
use crate::tool::{Tool, ToolContext, ToolFamily, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Value};

/// Reads a text file of the package, cut at `max_chars` with the
/// reference's `...[TRUNCATED]...` marker.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadTextFile {
    /// Whether content-sniffed text in other suffixes is read too.
    pub mode: ReadMode,
}

#[async_trait]
impl Tool for ReadTextFile {
    fn name(&self) -> &str {
        "read_text_file"
    }

    fn description(&self) -> &str {
        "Read a text-like file of the event package (.json .csv .md .txt .html .htm .xml .geojson .yml .yaml; \
         other files whose content is text are read too, with a warning). Arguments: path (package-relative or \
         release-relative), max_chars (default 12000; longer text ends with ...[TRUNCATED]...)."
    }

    fn family(&self) -> ToolFamily {
        ToolFamily::Research
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "default": "", "description": "(required) Package-relative or release-relative file path."},
                "max_chars": {"type": "integer", "default": 12000, "minimum": 0, "description": "Maximum characters returned."}
            }
        })
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutput {
        let path = str_arg(&args, "path").to_string();
        let max_chars = usize_arg(&args, "max_chars", 12_000);
        let ctx = ctx.clone();
        let mode = self.mode;
        super::run_blocking("read_text_file", move || read(&ctx, mode, &path, max_chars)).await
    }
}

pub(crate) fn read(ctx: &ToolContext, mode: ReadMode, path: &str, max_chars: usize) -> ToolOutput {
    if path.trim().is_empty() {
        return super::tool_exception("read_text_file", "ValueError", "path is required");
    }
    let resolved = match resolve_file(ctx, "read_text_file", path) {
        Ok(r) => r,
        Err(out) => return *out,
    };
    let release_path = ctx.release_path(&resolved.package_relative);
    if resolved.absolute.is_dir() {
        return super::tool_exception(
            "read_text_file",
            "IsADirectoryError",
            &format!("is a directory: {path}"),
        );
    }
    let suffix = suffix_of(&resolved.package_relative);
    let Some(sniffed) = text_decision(mode, &suffix, &resolved.absolute) else {
        return ToolOutput::failure(
            Value::String(format!("not a text-supported suffix: {suffix}")),
            vec!["binary or image file".into()],
            vec![release_path],
        );
    };
    // Read one character more than needed to know whether to cut; PDFs are
    // extracted whole by package-model.
    let pdf = earthverse_package_model::sniff::FileKind::Pdf;
    let read = if sniffed == Some(pdf) {
        std::fs::read(&resolved.absolute).map(|bytes| {
            (
                earthverse_package_model::text::extract_text(&bytes, pdf),
                false,
            )
        })
    } else {
        read_text_prefix(&resolved.absolute, max_chars.saturating_add(1))
    };
    let (text, more) = match read {
        Ok(t) => t,
        Err(e) => return super::tool_exception("read_text_file", "OSError", &e.to_string()),
    };
    let text = if more || text.chars().count() > max_chars {
        cap_observation(&text, max_chars)
    } else {
        text
    };
    let mut out = ToolOutput::ok(
        json!({"path": release_path, "text": text}),
        vec![release_path.clone()],
    );
    if let Some(kind) = sniffed {
        out = out.with_warning(format!(
            "suffix {suffix} read as text: content sniffed as {kind}"
        ));
    }
    out
}
