//! The structured outcome of one environment call (App. D.6: "each adapter
//! records normalized arguments, status, output, and errors").

use earthverse_tool_registry::ToolOutput;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Why a call did not succeed (App. D.6: "without adapter, argument, or
/// runtime failure"; plus the justified refusal of an input the method
/// cannot use, App. A.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    /// The environment is missing, the sandbox cannot start, or the
    /// adapter itself failed (unknown operation, unreadable output).
    Adapter,
    /// A missing or invalid argument (no such file, a required parameter).
    Argument,
    /// The package's data cannot feed the method (too short, wrong
    /// sampling, a missing variable): a justified refusal.
    InputIncompatibility,
    /// The library or runtime failed while running (exception, non-zero
    /// exit, a limit of the sandbox).
    Runtime,
}

impl FailureClass {
    /// The recorded spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::Adapter => "adapter",
            FailureClass::Argument => "argument",
            FailureClass::InputIncompatibility => "input_incompatibility",
            FailureClass::Runtime => "runtime",
        }
    }

    /// Parses the recorded spelling.
    pub fn parse(s: &str) -> Option<Self> {
        [
            FailureClass::Adapter,
            FailureClass::Argument,
            FailureClass::InputIncompatibility,
            FailureClass::Runtime,
        ]
        .into_iter()
        .find(|c| c.as_str() == s)
    }
}

/// A failed step: its class and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The class.
    pub class: FailureClass,
    /// What happened.
    pub message: String,
}

impl Failure {
    /// A failure of `class`.
    pub fn new(class: FailureClass, message: impl Into<String>) -> Self {
        Self {
            class,
            message: message.into(),
        }
    }
}

/// What one call produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// The environment's paper name.
    pub environment: String,
    /// The operation (tool name).
    pub operation: String,
    /// `ok` or `failed`.
    pub status: String,
    /// The failure class when it failed.
    pub failure_class: Option<FailureClass>,
    /// The failure's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The library's or runtime's result.
    pub result: Value,
    /// The implementation that ran (`xclim 0.62.0`, `/usr/bin/cdo`).
    pub implementation: Option<String>,
    /// The inputs read: name, package file, field, window, number of values.
    pub inputs: Vec<Value>,
    /// The normalised parameters.
    pub params: Value,
    /// Wall-clock seconds of the sandboxed runs.
    pub latency_s: f64,
    /// Protections in force (sandbox report).
    pub sandbox: Vec<String>,
}

impl Outcome {
    /// The tool envelope: `ok` on success; a justified refusal
    /// (`not_applicable`) for an input incompatibility; an execution error
    /// otherwise. The outcome is the envelope's `output` in every case.
    pub fn into_tool_output(self) -> ToolOutput {
        let files: Vec<String> = self
            .inputs
            .iter()
            .filter_map(|i| i.get("file").and_then(Value::as_str).map(String::from))
            .collect();
        let class = self.failure_class;
        let message = self.message.clone().unwrap_or_default();
        let output =
            serde_json::to_value(&self).unwrap_or_else(|e| json!({"error": e.to_string()}));
        match class {
            None => ToolOutput::ok(output, files),
            Some(FailureClass::InputIncompatibility) => {
                let mut out = ToolOutput::not_applicable(
                    json!({"failure_class": "input_incompatibility"}),
                    message,
                );
                out.output = output;
                out.evidence_files = files;
                out
            }
            Some(c) => ToolOutput::failure(
                output,
                vec![format!("{} failure: {message}", c.as_str())],
                files,
            ),
        }
    }
}
