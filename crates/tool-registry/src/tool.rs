//! The [`Tool`] trait and the envelope every call returns (paper §3.4,
//! Appendix A.4; `reference-harness.md` "Every call returns the envelope").

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::PathBuf;

/// The eight domain families of the paper's operation registry (§3.4), plus
/// the six general research tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolFamily {
    /// The six general research tools (list, read, search, summarise, image, Python).
    Research,
    /// Reports and text.
    ReportsText,
    /// Time series and extreme-value analysis.
    TimeSeries,
    /// Vector data and exposure.
    VectorExposure,
    /// Raster and Earth observation.
    RasterEo,
    /// Meteorology and climate.
    MeteorologyClimate,
    /// Fire and geophysics.
    FireGeophysics,
    /// Infrastructure.
    Infrastructure,
    /// Output assembly.
    OutputAssembly,
}

impl ToolFamily {
    /// The snake-case name, as serialised (`meteorology_climate`).
    pub fn as_str(self) -> &'static str {
        match self {
            ToolFamily::Research => "research",
            ToolFamily::ReportsText => "reports_text",
            ToolFamily::TimeSeries => "time_series",
            ToolFamily::VectorExposure => "vector_exposure",
            ToolFamily::RasterEo => "raster_eo",
            ToolFamily::MeteorologyClimate => "meteorology_climate",
            ToolFamily::FireGeophysics => "fire_geophysics",
            ToolFamily::Infrastructure => "infrastructure",
            ToolFamily::OutputAssembly => "output_assembly",
        }
    }
}

/// The release-relative directory of standard event packages, as the
/// reference printed it in `path` fields (`reference-harness.md`).
pub const STANDARD_PACKAGES_PREFIX: &str = "event_packages/standard_event_packages/packages";

/// Where a tool call runs: the event package it may read and the per-run
/// scratch directory it may write. Build it with [`ToolContext::new`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ToolContext {
    /// Root of the event package (`.../packages/CSX-NNN`). Every path a tool
    /// opens must be resolved against it through package-model's resolver.
    pub package_root: PathBuf,
    /// The package id (e.g. `CSX-001`), used for release-relative paths.
    pub package_id: String,
    /// Release-relative directory of the package, e.g.
    /// `event_packages/standard_event_packages/packages/CSX-001`; prefixed to
    /// package-relative paths in the `path` fields of outputs.
    pub release_prefix: String,
    /// Per-run scratch directory (read/write for `python_exec`).
    pub scratch_dir: PathBuf,
    /// The public question text, if the run has one (readable by Python).
    pub question_file: Option<PathBuf>,
    /// The step number of the call in its run (names Python snippets).
    pub step: u32,
}

impl ToolContext {
    /// A context for the package at `package_root` (its directory name is the
    /// package id) writing to `scratch_dir`.
    pub fn new(package_root: impl Into<PathBuf>, scratch_dir: impl Into<PathBuf>) -> Self {
        let package_root = package_root.into();
        let package_id = package_root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let release_prefix = format!("{STANDARD_PACKAGES_PREFIX}/{package_id}");
        Self {
            package_root,
            package_id,
            release_prefix,
            scratch_dir: scratch_dir.into(),
            question_file: None,
            step: 0,
        }
    }

    /// Sets the public question file Python may read.
    pub fn with_question_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.question_file = Some(path.into());
        self
    }

    /// Overrides the release-relative prefix of the package.
    pub fn with_release_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.release_prefix = prefix.into();
        self
    }

    /// Sets the step number of the next call.
    pub fn with_step(mut self, step: u32) -> Self {
        self.step = step;
        self
    }

    /// The release-relative form of a package-relative path.
    pub fn release_path(&self, package_relative: &str) -> String {
        if self.release_prefix.is_empty() {
            package_relative.to_string()
        } else if package_relative.is_empty() || package_relative == "." {
            self.release_prefix.clone()
        } else {
            format!("{}/{}", self.release_prefix, package_relative)
        }
    }
}

/// Outcome of an applicability check made before a call runs (App. A.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "applicability", rename_all = "snake_case")]
pub enum Applicability {
    /// The call may run.
    Applicable,
    /// A justified scientific refusal with a machine-readable reason,
    /// e.g. `{"record_too_short": {"have": 7, "need": 30}}`.
    NotApplicable {
        /// Machine-readable reason.
        reason: Value,
        /// Human-readable explanation.
        message: String,
    },
}

/// Typed status of a call: keeps apart success, execution errors and
/// justified refusals (§3.4, App. A.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// The call ran and produced output.
    Ok,
    /// Bad arguments, IO failure, timeout, crash.
    ExecutionError,
    /// The tool refused on scientific grounds before running.
    NotApplicable,
}

/// What a tool returns: the reference envelope `{ok, output, evidence_files,
/// warnings}` plus a typed [`CallStatus`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// `true` only for [`CallStatus::Ok`].
    pub ok: bool,
    /// The tool's result (or an error object).
    pub output: Value,
    /// Package-relative paths of files the call read.
    pub evidence_files: Vec<String>,
    /// Warnings for the model.
    pub warnings: Vec<String>,
    /// The typed status.
    #[serde(default = "default_status")]
    pub status: CallStatus,
}

fn default_status() -> CallStatus {
    CallStatus::Ok
}

impl ToolOutput {
    /// A successful call.
    pub fn ok(output: Value, evidence_files: Vec<String>) -> Self {
        Self {
            ok: true,
            output,
            evidence_files,
            warnings: Vec::new(),
            status: CallStatus::Ok,
        }
    }

    /// An execution error with a message.
    pub fn error(message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            ok: false,
            output: serde_json::json!({ "error": message }),
            evidence_files: Vec::new(),
            warnings: vec![message],
            status: CallStatus::ExecutionError,
        }
    }

    /// A justified refusal.
    pub fn not_applicable(reason: Value, message: impl Into<String>) -> Self {
        let message = message.into();
        Self {
            ok: false,
            output: serde_json::json!({ "not_applicable": reason, "message": message }),
            evidence_files: Vec::new(),
            warnings: vec![message],
            status: CallStatus::NotApplicable,
        }
    }

    /// A failed call in the reference's form: `output` is usually the bare
    /// error message string (e.g. `"file not found: x.json"`) and the
    /// warnings are short tags (e.g. `["missing file"]`).
    pub fn failure(output: Value, warnings: Vec<String>, evidence_files: Vec<String>) -> Self {
        Self {
            ok: false,
            output,
            evidence_files,
            warnings,
            status: CallStatus::ExecutionError,
        }
    }

    /// The reference envelope `{ok, output, evidence_files, warnings}` (plus
    /// `status` when the call was a justified refusal, so the model can tell).
    pub fn envelope_json(&self) -> Value {
        let mut map = serde_json::Map::new();
        map.insert("ok".into(), Value::Bool(self.ok));
        map.insert("output".into(), self.output.clone());
        map.insert(
            "evidence_files".into(),
            serde_json::json!(self.evidence_files),
        );
        map.insert("warnings".into(), serde_json::json!(self.warnings));
        if self.status == CallStatus::NotApplicable {
            map.insert("status".into(), serde_json::json!("not_applicable"));
        }
        Value::Object(map)
    }

    /// Adds a warning.
    pub fn with_warning(mut self, warning: impl Into<String>) -> Self {
        self.warnings.push(warning.into());
        self
    }
}

/// One research tool or domain operation. Object-safe: registries hold
/// `Arc<dyn Tool>`.
#[async_trait]
pub trait Tool: Send + Sync {
    /// The name the model calls (e.g. `read_text_file`).
    fn name(&self) -> &str;
    /// One-paragraph description shown in the catalogue.
    fn description(&self) -> &str;
    /// Domain family.
    fn family(&self) -> ToolFamily;
    /// JSON Schema (draft 2020-12) of the arguments object.
    fn parameters_schema(&self) -> Value;
    /// The named operations / methods this tool implements (App. A.4
    /// "declare what they implement"). Defaults to the tool's own name.
    fn operations(&self) -> Vec<String> {
        vec![self.name().to_string()]
    }
    /// Checks, before running, that the call can be supported by the data
    /// (record length, variables, units, CRS ...). Arguments are already
    /// schema-valid and normalised. The default accepts every call.
    fn check_applicable(&self, _ctx: &ToolContext, _args: &Value) -> Applicability {
        Applicability::Applicable
    }
    /// Runs the call.
    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutput;
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod family_name_tests {
    use super::ToolFamily;

    #[test]
    fn as_str_is_the_serialised_name() {
        for f in [
            ToolFamily::Research,
            ToolFamily::ReportsText,
            ToolFamily::TimeSeries,
            ToolFamily::VectorExposure,
            ToolFamily::RasterEo,
            ToolFamily::MeteorologyClimate,
            ToolFamily::FireGeophysics,
            ToolFamily::Infrastructure,
            ToolFamily::OutputAssembly,
        ] {
            assert_eq!(serde_json::to_value(f).unwrap(), f.as_str());
        }
    }
}
