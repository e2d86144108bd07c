//! Recorded runs: the trajectory format of
//! `exploration/trajectories/<system>/<task>.json` (every tool call with its
//! arguments and output, the final answer, evidence, and the published judge
//! scores and diagnostics). The diagnostics, status and termination types
//! are `earthverse-run-schema`'s, shared with the run writer.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use earthverse_run_schema::{
    RunDiagnostics, RunStatus, TerminationReason, TokenCount, TrajectoryFigures,
};

/// One recorded run of one system on one task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedRun {
    /// The task, e.g. `CSX-001_Q1`.
    pub task_id: String,
    /// The system (model) id, e.g. `claude-haiku-4-5`.
    pub model_id: String,
    /// Display name of the system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The published judge scores.
    #[serde(default)]
    pub scores: RunScores,
    /// Run diagnostics.
    #[serde(default)]
    pub diagnostics: RunDiagnostics,
    /// Every tool call, in order.
    #[serde(default)]
    pub tool_calls: Vec<RecordedToolCall>,
    /// Evidence list `[{claim, source_file, support_type}]`.
    #[serde(default)]
    pub evidence: Vec<Value>,
    /// Reasoning summary lines.
    #[serde(default)]
    pub reasoning_summary: Vec<Value>,
    /// Unsupported or unresolved items.
    #[serde(default)]
    pub unsupported_or_unresolved: Vec<Value>,
    /// The final answer: an object, or a string when the system did not
    /// produce parseable JSON.
    #[serde(default)]
    pub final_answer: Value,
    /// The judge's rationale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_rationale: Option<Value>,
    /// The experimental condition of the run (ours; absent from the public
    /// records, whose runs all use the paper's default condition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<crate::RunCondition>,
    /// Fields this type does not model, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RecordedRun {
    /// The package-relative or release-relative source files cited in
    /// `evidence[].source_file`.
    pub fn evidence_files(&self) -> Vec<&str> {
        self.evidence
            .iter()
            .filter_map(|e| e.get("source_file").and_then(Value::as_str))
            .collect()
    }
}

/// Published scores of a recorded run (paper §4.1): `answer` and `rubric`
/// on 0–100, unit accuracy, answer units correct/total, rubric points.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunScores {
    /// Overall score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overall: Option<f64>,
    /// Answer score (0–100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<f64>,
    /// Rubric score (0–100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric: Option<f64>,
    /// Unit accuracy (0–100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit_accuracy: Option<f64>,
    /// Answer units judged correct.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_units_correct: Option<u64>,
    /// Answer units in the ground truth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_units_total: Option<u64>,
    /// Rubric points earned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric_points_earned: Option<f64>,
    /// Rubric points available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rubric_points_total: Option<f64>,
    /// Verdict, e.g. `correct`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Fields this type does not model, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One recorded tool call, with the original harness's tool names
/// (`list_package_files`, `read_text_file`, `search_package_files`,
/// `summarize_table_or_json`, `python_exec`, `inspect_image`).
///
/// Deserialised by hand ([`Deserialize`] below) with the derive's reading:
/// `tool` required, the other fields optional, each at most once, and
/// every other field kept in `extra`. The derive's `flatten` would first
/// buffer each unmodelled field (`code`, `stdout`, ...) as untyped content
/// and then convert it, which made parsing the tool calls the largest
/// part of reading a release's runs (issue #30 item 3).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordedToolCall {
    /// 1-based step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u64>,
    /// Tool name.
    pub tool: String,
    /// Whether the call succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    /// The model's stated reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Arguments as given.
    #[serde(default)]
    pub args: Value,
    /// Output `{text, truncated, original_chars}`.
    #[serde(default)]
    pub output: Value,
    /// Fields this type does not model (`code`, `stdout`, `stderr`,
    /// `returncode`, `warnings`, `evidence_files`), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl<'de> Deserialize<'de> for RecordedToolCall {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ToolCallVisitor)
    }
}

/// A key of a recorded tool call: a modelled field or another name.
enum ToolCallKey {
    Step,
    Tool,
    Ok,
    Reason,
    Args,
    Output,
    Other(String),
}

impl ToolCallKey {
    /// The modelled field `name` is, if any.
    fn modelled(name: &str) -> Option<Self> {
        Some(match name {
            "step" => Self::Step,
            "tool" => Self::Tool,
            "ok" => Self::Ok,
            "reason" => Self::Reason,
            "args" => Self::Args,
            "output" => Self::Output,
            _ => return None,
        })
    }
}

impl<'de> Deserialize<'de> for ToolCallKey {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl serde::de::Visitor<'_> for KeyVisitor {
            type Value = ToolCallKey;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<ToolCallKey, E> {
                Ok(ToolCallKey::modelled(name)
                    .unwrap_or_else(|| ToolCallKey::Other(name.to_owned())))
            }
            fn visit_string<E: serde::de::Error>(self, name: String) -> Result<ToolCallKey, E> {
                Ok(ToolCallKey::modelled(&name).unwrap_or(ToolCallKey::Other(name)))
            }
        }
        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct ToolCallVisitor;

impl<'de> serde::de::Visitor<'de> for ToolCallVisitor {
    type Value = RecordedToolCall;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("struct RecordedToolCall")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        use serde::de::Error;
        /// A field's value, refused when the field was already given.
        fn once<'de, A: serde::de::MapAccess<'de>, T: Deserialize<'de>>(
            map: &mut A,
            slot: &mut Option<T>,
            name: &'static str,
        ) -> Result<(), A::Error> {
            if slot.is_some() {
                return Err(A::Error::duplicate_field(name));
            }
            *slot = Some(map.next_value()?);
            Ok(())
        }
        let mut step: Option<Option<u64>> = None;
        let mut tool: Option<String> = None;
        let mut ok: Option<Option<bool>> = None;
        let mut reason: Option<Option<String>> = None;
        let mut args: Option<Value> = None;
        let mut output: Option<Value> = None;
        let mut extra = Map::new();
        while let Some(key) = map.next_key::<ToolCallKey>()? {
            match key {
                ToolCallKey::Step => once(&mut map, &mut step, "step")?,
                ToolCallKey::Tool => once(&mut map, &mut tool, "tool")?,
                ToolCallKey::Ok => once(&mut map, &mut ok, "ok")?,
                ToolCallKey::Reason => once(&mut map, &mut reason, "reason")?,
                ToolCallKey::Args => once(&mut map, &mut args, "args")?,
                ToolCallKey::Output => once(&mut map, &mut output, "output")?,
                ToolCallKey::Other(name) => {
                    let value: Value = map.next_value()?;
                    extra.insert(name, value);
                }
            }
        }
        Ok(RecordedToolCall {
            step: step.flatten(),
            tool: tool.ok_or_else(|| A::Error::missing_field("tool"))?,
            ok: ok.flatten(),
            reason: reason.flatten(),
            args: args.unwrap_or_default(),
            output: output.unwrap_or_default(),
            extra,
        })
    }
}

impl RecordedToolCall {
    /// The output text (`output.text`), when present.
    pub fn output_text(&self) -> Option<&str> {
        self.output.get("text").and_then(Value::as_str)
    }

    /// A field of `extra` holding `{text, ...}` (e.g. `stdout`), as text.
    pub fn stream_text(&self, field: &str) -> Option<&str> {
        self.extra
            .get(field)
            .and_then(|v| v.get("text"))
            .and_then(Value::as_str)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tool_call_tests {
    use serde::Deserialize;
    use serde_json::{Map, Value};

    /// The derived reading the hand-written one keeps (same name, so the
    /// derive's error messages name the same type).
    mod derived {
        use super::*;
        #[derive(Debug, Deserialize)]
        pub struct RecordedToolCall {
            #[serde(default)]
            pub step: Option<u64>,
            pub tool: String,
            #[serde(default)]
            pub ok: Option<bool>,
            #[serde(default)]
            pub reason: Option<String>,
            #[serde(default)]
            pub args: Value,
            #[serde(default)]
            pub output: Value,
            #[serde(flatten)]
            pub extra: Map<String, Value>,
        }
    }

    fn both(text: &str) -> (Result<String, String>, Result<String, String>) {
        let ours = serde_json::from_str::<super::RecordedToolCall>(text)
            .map(|c| format!("{c:?}"))
            .map_err(|e| e.to_string());
        let theirs = serde_json::from_str::<derived::RecordedToolCall>(text)
            .map(|d| {
                format!(
                    "{:?}",
                    super::RecordedToolCall {
                        step: d.step,
                        tool: d.tool,
                        ok: d.ok,
                        reason: d.reason,
                        args: d.args,
                        output: d.output,
                        extra: d.extra,
                    }
                )
            })
            .map_err(|e| e.to_string());
        (ours, theirs)
    }

    #[test]
    fn reads_every_tool_call_as_the_derive_does() {
        let cases = [
            r#"{"step": 3, "tool": "python_exec", "ok": true, "reason": "r", "args": {"code": "x"}, "output": {"text": "1"}, "code": "print(1)", "stdout": {"text": "1\n"}, "returncode": 0}"#,
            r#"{"tool": "read_text_file"}"#,
            r#"{"tool": "t", "step": null, "ok": null, "reason": null, "args": null, "output": null}"#,
            r#"{"to\u006fl": "escaped key", "st\u0065p": 2, "c\u006fde": "escaped other"}"#,
            r#"{"tool": "t", "warnings": [1], "warnings": [2], "extra": {"a": 1}}"#,
            r#"{"tool": "t", "step": 1, "step": 2}"#,
            r#"{"tool": "t", "tool": "u"}"#,
            r#"{"tool": "a", "args": 1, "args": 2}"#,
            r#"{"step": 1}"#,
            r#"{"tool": 5}"#,
            r#"{"tool": "t", "step": "one"}"#,
            r#"{"tool": "t", "step": -1}"#,
            r#"[1, 2]"#,
            r#""a string""#,
            r#"{"tool": "t", "stdout": {"text": "é \" \\ \n"}}"#,
        ];
        let mut errors = 0;
        for case in cases {
            let (ours, theirs) = both(case);
            assert_eq!(ours, theirs, "{case}");
            errors += usize::from(ours.is_err());
        }
        assert!(errors >= 6, "the cases include refusals: {errors}");
    }

    /// Every tool call of the bundled fixture runs reads the same both ways.
    #[test]
    fn reads_the_fixture_runs_as_the_derive_does() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/release/exploration/trajectories");
        let mut calls = 0;
        for system in std::fs::read_dir(&dir).unwrap() {
            for run in std::fs::read_dir(system.unwrap().path()).unwrap() {
                let run: Value =
                    serde_json::from_str(&std::fs::read_to_string(run.unwrap().path()).unwrap())
                        .unwrap();
                for call in run["tool_calls"].as_array().unwrap() {
                    let text = call.to_string();
                    let (ours, theirs) = both(&text);
                    assert!(ours.is_ok(), "{text}");
                    assert_eq!(ours, theirs, "{text}");
                    calls += 1;
                }
            }
        }
        assert!(calls > 20, "{calls} tool calls compared");
    }
}
