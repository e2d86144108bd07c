//! The two response contracts (App. E; `reference-harness.md` "Protocol")
//! and the normalisation of their common variants.
//!
//! A reply is searched for JSON objects: the whole text, then fenced code
//! blocks, then every balanced `{...}` in prose. The first object that reads
//! as a tool action or a final answer wins. Normalised variants: `type` for
//! `action`; `tool_name`, `name`, `function` for `tool`; `arguments`,
//! `parameters`, `input` for `args`, also as a JSON string; `answer` or
//! `final` for `final_answer` (a string answer stays a string); a final
//! answer object without a `final_answer` key becomes the answer itself;
//! `rationale`/`thought` for `reason`; `limitations`/`unresolved` for
//! `unsupported_or_unresolved`; a string `reasoning_summary` becomes a list.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolAction {
    /// Tool name.
    pub tool: String,
    /// Arguments object.
    pub args: Value,
    /// Why the call is needed.
    pub reason: String,
}

/// A final answer per the FINAL ANSWER CONTRACT.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FinalAnswer {
    /// The structure the question asked for.
    pub final_answer: Value,
    /// Confidence in `[0, 1]`, when given.
    pub confidence: Option<f64>,
    /// Evidence items `{claim, source_file, support_type}`.
    pub evidence: Vec<Value>,
    /// Ordered reasoning summary.
    pub reasoning_summary: Vec<String>,
    /// Unsupported or unresolved elements.
    pub unsupported_or_unresolved: Vec<String>,
}

impl FinalAnswer {
    /// The reference runner's fallback answer when finalisation fails:
    /// `{"answer": null, "status": "budget_exhausted", "reason": <reason>}`.
    pub fn fallback(status: &str, reason: &str) -> Self {
        Self {
            final_answer: serde_json::json!({"answer": null, "status": status, "reason": reason}),
            confidence: None,
            evidence: Vec::new(),
            reasoning_summary: vec![
                "The research budget ended before a normal final response was completed."
                    .to_string(),
            ],
            unsupported_or_unresolved: vec![reason.to_string()],
        }
    }
}

/// One parsed assistant action.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Call a tool.
    ToolCall(ToolAction),
    /// Submit the answer.
    Final(FinalAnswer),
}

/// Why a reply could not be read as an action (sent back in the repair prompt).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseProblem(pub String);

impl std::fmt::Display for ParseProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses one assistant reply into an action.
pub fn parse_reply(text: &str) -> Result<Action, ParseProblem> {
    let candidates = json_objects(text);
    if candidates.is_empty() {
        return Err(ParseProblem("the reply holds no JSON object".into()));
    }
    let mut last_problem = None;
    for candidate in candidates {
        match normalise(candidate) {
            Ok(action) => return Ok(action),
            Err(problem) => last_problem = Some(problem),
        }
    }
    Err(last_problem.unwrap_or_else(|| ParseProblem("no usable JSON object".into())))
}

/// Normalises one JSON object into an action.
pub fn normalise(value: Value) -> Result<Action, ParseProblem> {
    let Value::Object(mut obj) = value else {
        return Err(ParseProblem("the JSON value is not an object".into()));
    };
    let action = take_first(&mut obj, &["action", "type"])
        .and_then(|v| v.as_str().map(|s| s.trim().to_ascii_lowercase()));
    let kind = match action.as_deref() {
        Some("tool_call" | "tool" | "call_tool" | "use_tool" | "tool_use" | "function_call") => {
            Kind::Tool
        }
        Some("final_answer" | "final" | "answer" | "finish" | "submit" | "final_response") => {
            Kind::Final
        }
        Some(other) => {
            // An unknown action word: fall back to the keys present.
            infer_kind(&obj).ok_or_else(|| {
                ParseProblem(format!(
                    "unknown action `{other}` (use `tool_call` or `final_answer`)"
                ))
            })?
        }
        None => infer_kind(&obj).ok_or_else(|| {
            ParseProblem("the JSON object has no `action` and no tool or answer fields".into())
        })?,
    };
    match kind {
        Kind::Tool => tool_action(obj).map(Action::ToolCall),
        Kind::Final => Ok(Action::Final(final_answer(obj))),
    }
}

enum Kind {
    Tool,
    Final,
}

fn infer_kind(obj: &Map<String, Value>) -> Option<Kind> {
    if obj.contains_key("final_answer") || obj.contains_key("answer") {
        Some(Kind::Final)
    } else if ["tool", "tool_name", "name", "function"]
        .iter()
        .any(|k| obj.contains_key(*k))
    {
        Some(Kind::Tool)
    } else {
        None
    }
}

fn take_first(obj: &mut Map<String, Value>, keys: &[&str]) -> Option<Value> {
    for key in keys {
        if let Some(v) = obj.remove(*key) {
            if !v.is_null() {
                return Some(v);
            }
        }
    }
    None
}

fn tool_action(mut obj: Map<String, Value>) -> Result<ToolAction, ParseProblem> {
    let mut args_from_function = None;
    let tool = match take_first(&mut obj, &["tool", "tool_name", "name", "function"]) {
        Some(Value::String(s)) => s,
        Some(Value::Object(mut f)) => {
            args_from_function = take_first(&mut f, &["arguments", "args", "parameters"]);
            f.remove("name")
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        }
        _ => String::new(),
    };
    let tool = tool.trim().to_string();
    if tool.is_empty() {
        return Err(ParseProblem("the tool action names no tool".into()));
    }
    let args = take_first(&mut obj, &["args", "arguments", "parameters", "input"])
        .or(args_from_function)
        .unwrap_or_else(|| Value::Object(Map::new()));
    let args = match args {
        Value::String(s) if s.trim().is_empty() => Value::Object(Map::new()),
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(v @ Value::Object(_)) => v,
            _ => {
                return Err(ParseProblem(format!(
                    "the arguments of `{tool}` are a string that is not a JSON object"
                )))
            }
        },
        v @ Value::Object(_) => v,
        other => {
            return Err(ParseProblem(format!(
                "the arguments of `{tool}` must be an object, got {}",
                type_name(&other)
            )))
        }
    };
    let reason = match take_first(&mut obj, &["reason", "rationale", "thought", "why"]) {
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
        None => String::new(),
    };
    Ok(ToolAction { tool, args, reason })
}

fn final_answer(mut obj: Map<String, Value>) -> FinalAnswer {
    let confidence = take_first(&mut obj, &["confidence"]).and_then(|v| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().trim_end_matches('%').parse::<f64>().ok(),
        _ => None,
    });
    let evidence = match take_first(&mut obj, &["evidence"]) {
        Some(Value::Array(items)) => items,
        Some(other) => vec![other],
        None => Vec::new(),
    };
    let reasoning_summary = string_list(take_first(
        &mut obj,
        &["reasoning_summary", "research", "reasoning"],
    ));
    let unsupported = string_list(take_first(
        &mut obj,
        &["unsupported_or_unresolved", "limitations", "unresolved"],
    ));
    // A string answer stays a string (the public records keep 30 of them).
    let answer = match take_first(&mut obj, &["final_answer", "answer", "final"]) {
        Some(v) => v,
        // `{"action":"final_answer", "field": ...}`: the rest is the answer.
        None => Value::Object(obj),
    };
    FinalAnswer {
        final_answer: answer,
        confidence,
        evidence,
        reasoning_summary,
        unsupported_or_unresolved: unsupported,
    }
}

fn string_list(value: Option<Value>) -> Vec<String> {
    match value {
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|v| match v {
                Value::String(s) => s,
                other => other.to_string(),
            })
            .collect(),
        Some(Value::String(s)) if s.trim().is_empty() => Vec::new(),
        Some(Value::String(s)) => vec![s],
        Some(other) => vec![other.to_string()],
        None => Vec::new(),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Every JSON object found in a reply, in order of preference: the whole
/// text, fenced code blocks, then balanced `{...}` spans in the prose.
pub fn json_objects(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let trimmed = text.trim();
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(trimmed) {
        out.push(v);
        return out;
    }
    // Fenced blocks: ```json ... ``` or ``` ... ```.
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let body_start = after.find('\n').map(|i| i + 1).unwrap_or(0);
        let Some(end) = after[body_start..].find("```") else {
            break;
        };
        let body = after[body_start..body_start + end].trim();
        if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(body) {
            out.push(v);
        }
        rest = &after[body_start + end + 3..];
    }
    if !out.is_empty() {
        return out;
    }
    // Balanced braces outside strings.
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'{' {
            if let Some(end) = balanced_end(bytes, i) {
                if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(&text[i..=end]) {
                    out.push(v);
                    i = end + 1;
                    continue;
                }
            }
        }
        i += 1;
    }
    out
}

fn balanced_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (offset, &b) in bytes[start..].iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(start + offset);
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
#[allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(text: &str) -> ToolAction {
        match parse_reply(text) {
            Ok(Action::ToolCall(t)) => t,
            other => panic!("expected a tool call from {text:?}, got {other:?}"),
        }
    }

    fn fin(text: &str) -> FinalAnswer {
        match parse_reply(text) {
            Ok(Action::Final(f)) => f,
            other => panic!("expected a final answer from {text:?}, got {other:?}"),
        }
    }

    #[test]
    fn canonical_tool_call() {
        let t = tool(
            r#"{"action":"tool_call","tool":"read_text_file","args":{"path":"a.json"},"reason":"r"}"#,
        );
        assert_eq!(t.tool, "read_text_file");
        assert_eq!(t.args, json!({"path":"a.json"}));
        assert_eq!(t.reason, "r");
    }

    #[test]
    fn variants_are_normalised() {
        let t = tool(
            r#"{"action":"tool_call","tool_name":"list_package_files","arguments":"{\"subdir\": \"data\"}"}"#,
        );
        assert_eq!(t.tool, "list_package_files");
        assert_eq!(t.args, json!({"subdir":"data"}));
        let t = tool(r#"{"name":"python_exec","parameters":{"code":"print(1)"}}"#);
        assert_eq!(t.tool, "python_exec");
        let t = tool(r#"{"function":{"name":"x","arguments":"{\"a\":1}"}}"#);
        assert_eq!((t.tool.as_str(), t.args), ("x", json!({"a":1})));
        let f = fin(
            r#"{"action":"final_answer","answer":{"v":3},"confidence":"0.8","reasoning_summary":"one"}"#,
        );
        assert_eq!(f.final_answer, json!({"v":3}));
        assert_eq!(f.confidence, Some(0.8));
        assert_eq!(f.reasoning_summary, vec!["one".to_string()]);
        let f = fin(r#"{"action":"final_answer","final_answer":"{\"k\": [1,2]}"}"#);
        assert_eq!(f.final_answer, json!("{\"k\": [1,2]}"));
        let f = fin(r#"{"action":"final","peak_c":35.5,"limitations":["x"]}"#);
        assert_eq!(f.final_answer, json!({"peak_c":35.5}));
        assert_eq!(f.unsupported_or_unresolved, vec!["x".to_string()]);
    }

    #[test]
    fn json_in_fences_and_prose() {
        let t = tool("Let me look.\n```json\n{\"action\":\"tool_call\",\"tool\":\"list_package_files\",\"args\":{}}\n```\nthanks");
        assert_eq!(t.tool, "list_package_files");
        let f = fin("I conclude: {\"action\": \"final_answer\", \"final_answer\": {\"s\": \"a}b\"}} as shown.");
        assert_eq!(f.final_answer, json!({"s":"a}b"}));
    }

    #[test]
    fn prose_and_broken_json_are_problems() {
        assert!(parse_reply("The peak was 35.5 C.").is_err());
        assert!(parse_reply("{\"action\":\"tool_call\",\"tool\":\"x\",\"args\":{").is_err());
        assert!(parse_reply(r#"{"action":"tool_call","args":{}}"#).is_err());
        assert!(parse_reply(r#"{"action":"tool_call","tool":"x","args":"not json"}"#).is_err());
    }
}
