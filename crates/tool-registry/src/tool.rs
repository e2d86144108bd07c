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

/// Where a tool call runs: the event package it may read and the per-run
/// scratch directory it may write.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Root of the event package (`.../packages/CSX-NNN`). Every path a tool
    /// opens must be resolved against it through package-model's resolver.
    pub package_root: PathBuf,
    /// The package id (e.g. `CSX-001`), used for release-relative paths.
    pub package_id: String,
    /// Per-run scratch directory (read/write for `python_exec`).
    pub scratch_dir: PathBuf,
    /// The public question text, if the run has one (readable by Python).
    pub question_file: Option<PathBuf>,
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
