//! The [`Registry`]: registers tools, validates and normalises arguments,
//! runs calls and keeps whole [`CallRecord`]s while the observation shown to
//! the model is capped (paper Appendix C.2 and C.4).

use crate::error::{Error, Result};
use crate::render::to_python_json_pretty;
use crate::research::{self, ResearchToolsConfig};
use crate::sandbox::SandboxReport;
use crate::tool::{Applicability, CallStatus, Tool, ToolContext, ToolFamily, ToolOutput};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Observations sent back to the model are capped at 12,000 characters
/// (paper Appendix C.2; `reference-harness.md` "Protocol").
pub const OBSERVATION_MAX_CHARS: usize = 12_000;

/// The reference's truncation marker, appended after a newline.
pub const TRUNCATION_MARKER: &str = "...[TRUNCATED]...";

/// Cuts `text` to `max_chars` characters (Unicode scalar values, as Python
/// counts them) and appends `"\n...[TRUNCATED]..."` when anything was cut.
pub fn cap_observation(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_string(),
        Some((byte, _)) => {
            let mut out = String::with_capacity(byte + TRUNCATION_MARKER.len() + 1);
            out.push_str(&text[..byte]);
            out.push('\n');
            out.push_str(TRUNCATION_MARKER);
            out
        }
    }
}

/// The reference harness's general truncation (`_truncate(text, limit)`,
/// as the recorded runs show): text longer than `limit` characters keeps its
/// first `limit - 80` characters and gets `"\n...[TRUNCATED]..."`. Search
/// snippets use `limit = 500` (420 kept); the previews of outputs in recorded
/// trajectories use [`RECORD_PREVIEW_LIMIT`] (1,720 kept).
pub fn reference_truncate(text: &str, limit: usize) -> String {
    if text.chars().nth(limit).is_none() {
        return text.to_string();
    }
    cap_observation(text, limit.saturating_sub(80))
}

/// Limit of the output previews kept in recorded trajectories.
pub const RECORD_PREVIEW_LIMIT: usize = 1_800;

/// What the catalogue shows about one tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDescriptor {
    /// The name the model calls.
    pub name: String,
    /// Description shown in the catalogue.
    pub description: String,
    /// Domain family.
    pub family: ToolFamily,
    /// JSON Schema of the arguments.
    pub parameters_schema: Value,
}

impl ToolDescriptor {
    /// The descriptor of a tool.
    pub fn of(tool: &dyn Tool) -> Self {
        Self {
            name: tool.name().to_string(),
            description: tool.description().to_string(),
            family: tool.family(),
            parameters_schema: tool.parameters_schema(),
        }
    }
}

/// The whole record of one call, kept even when the observation shown to the
/// model is shortened (Appendix C.4).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallRecord {
    /// Tool name as called.
    pub tool: String,
    /// Arguments after normalisation (defaults filled, variants coerced).
    pub args: Value,
    /// Typed status.
    pub status: CallStatus,
    /// The full envelope.
    pub envelope: ToolOutput,
    /// Error message for execution errors and refusals.
    pub error: Option<String>,
    /// Wall-clock start.
    pub started_at: chrono::DateTime<chrono::Utc>,
    /// Duration of the call.
    #[serde(with = "duration_secs")]
    pub duration: Duration,
    /// Package-relative or release-relative paths the call read.
    pub evidence_files: Vec<String>,
    /// The protections in force for a `python_exec` call.
    pub sandbox: Option<SandboxReport>,
    /// The envelope as JSON, capped at [`OBSERVATION_MAX_CHARS`].
    pub observation: String,
}

mod duration_secs {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_f64(d.as_secs_f64())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(d)?;
        Ok(Duration::try_from_secs_f64(secs).unwrap_or_default())
    }
}

struct Entry {
    tool: Arc<dyn Tool>,
    schema: Value,
    validator: jsonschema::Validator,
}

/// A set of tools callable by name.
pub struct Registry {
    entries: Vec<Entry>,
    index: HashMap<String, usize>,
    tools: Vec<Arc<dyn Tool>>,
    python: Option<Arc<research::PythonExec>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field(
                "tools",
                &self
                    .entries
                    .iter()
                    .map(|e| e.tool.name())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Default for Registry {
    fn default() -> Self {
        Self::new()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self {
            entries: Vec::new(),
            index: HashMap::new(),
            tools: Vec::new(),
            python: None,
        }
    }

    /// A registry holding the six research tools of §3.4.
    pub fn with_research_tools(config: ResearchToolsConfig) -> Self {
        let mut registry = Self::new();
        let python = Arc::new(research::PythonExec::new(config.python.clone()));
        for tool in research::file_tools(&config) {
            if let Err(err) = registry.register(tool) {
                tracing::error!(%err, "registering a research tool failed");
            }
        }
        if let Err(err) = registry.register(python.clone()) {
            tracing::error!(%err, "registering python_exec failed");
        } else {
            registry.python = Some(python);
        }
        registry
    }

    /// Registers a tool; a duplicate name or a schema that does not compile
    /// is an error.
    pub fn register(&mut self, tool: Arc<dyn Tool>) -> Result<()> {
        let name = tool.name().to_string();
        if self.index.contains_key(&name) {
            return Err(Error::DuplicateTool { name });
        }
        let schema = tool.parameters_schema();
        let validator = jsonschema::validator_for(&schema).map_err(|e| Error::InvalidSchema {
            name: name.clone(),
            message: e.to_string(),
        })?;
        self.index.insert(name, self.entries.len());
        self.tools.push(tool.clone());
        self.entries.push(Entry {
            tool,
            schema,
            validator,
        });
        Ok(())
    }

    /// Removes a tool by name (a condition that drops tools on purpose).
    pub fn remove(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        let position = self.index.remove(name)?;
        let entry = self.entries.remove(position);
        self.tools.remove(position);
        self.index = self
            .entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.tool.name().to_string(), i))
            .collect();
        if name == research::PYTHON_EXEC {
            self.python = None;
        }
        Some(entry.tool)
    }

    /// Looks a tool up by name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.index.get(name).map(|&i| self.entries[i].tool.clone())
    }

    /// The tools in registration order.
    pub fn tools(&self) -> impl Iterator<Item = &Arc<dyn Tool>> {
        self.tools.iter()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the registry is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The catalogue entries of every tool, in registration order.
    pub fn definitions(&self) -> Vec<ToolDescriptor> {
        self.entries
            .iter()
            .map(|e| ToolDescriptor::of(e.tool.as_ref()))
            .collect()
    }

    /// Normalises and validates `args` for tool `name` without running it.
    pub fn prepare_args(&self, name: &str, args: Value) -> std::result::Result<Value, String> {
        let Some(&i) = self.index.get(name) else {
            return Err(format!("unknown tool: {name}"));
        };
        let entry = &self.entries[i];
        let args = normalise_args(&entry.schema, args);
        let errors: Vec<String> = entry
            .validator
            .iter_errors(&args)
            .map(|e| {
                let at = e.instance_path.to_string();
                if at.is_empty() {
                    e.to_string()
                } else {
                    format!("{at}: {e}")
                }
            })
            .collect();
        if errors.is_empty() {
            Ok(args)
        } else {
            Err(format!(
                "invalid arguments for {name}: {}",
                errors.join("; ")
            ))
        }
    }

    /// Runs one call and records it. Never panics: an unknown tool or bad
    /// arguments give an [`CallStatus::ExecutionError`] record.
    pub async fn call(&self, ctx: &ToolContext, name: &str, args: Value) -> CallRecord {
        let started_at = chrono::Utc::now();
        let clock = Instant::now();
        let mut sandbox = None;
        let (args, envelope) = match self.prepare_args(name, args.clone()) {
            Err(message) => {
                let warning = if self.index.contains_key(name) {
                    "invalid arguments"
                } else {
                    "unknown tool"
                };
                (
                    args,
                    ToolOutput::failure(Value::String(message), vec![warning.into()], Vec::new()),
                )
            }
            Ok(args) => {
                let tool = &self.entries[self.index[name]].tool;
                let envelope = match tool.check_applicable(ctx, &args) {
                    Applicability::NotApplicable { reason, message } => {
                        ToolOutput::not_applicable(reason, message)
                    }
                    Applicability::Applicable => {
                        match (&self.python, name == research::PYTHON_EXEC) {
                            (Some(python), true) => {
                                let (out, report) = python.run(ctx, &args).await;
                                sandbox = Some(report);
                                out
                            }
                            _ => tool.call(ctx, args.clone()).await,
                        }
                    }
                };
                (args, envelope)
            }
        };
        let duration = clock.elapsed();
        let error = match envelope.status {
            CallStatus::Ok => None,
            _ => Some(error_message(&envelope.output)),
        };
        let observation = cap_observation(
            &to_python_json_pretty(&envelope.envelope_json()),
            OBSERVATION_MAX_CHARS,
        );
        tracing::debug!(tool = name, status = ?envelope.status, ms = duration.as_millis() as u64, "tool call");
        CallRecord {
            tool: name.to_string(),
            args,
            status: envelope.status,
            evidence_files: envelope.evidence_files.clone(),
            envelope,
            error,
            started_at,
            duration,
            sandbox,
            observation,
        }
    }
}

fn error_message(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        Value::Object(map) => map
            .get("error")
            .or_else(|| map.get("message"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| output.to_string()),
        other => other.to_string(),
    }
}

/// Normalises the arguments of a call against its schema: a JSON string
/// holding an object is parsed, `null` becomes `{}`, defaults of top-level
/// properties are filled, and scalars are coerced to the declared type where
/// the intent is unambiguous (`"40"` → `40`, `20.0` → `20`, `"true"` → `true`).
pub fn normalise_args(schema: &Value, args: Value) -> Value {
    let mut args = match args {
        Value::Null => Value::Object(Map::new()),
        Value::String(s) => match serde_json::from_str::<Value>(&s) {
            Ok(v @ Value::Object(_)) => v,
            _ => Value::String(s),
        },
        other => other,
    };
    let (Some(props), Value::Object(map)) = (
        schema.get("properties").and_then(Value::as_object),
        &mut args,
    ) else {
        return args;
    };
    for (key, prop) in props {
        match map.get_mut(key) {
            None => {
                if let Some(default) = prop.get("default") {
                    map.insert(key.clone(), default.clone());
                }
            }
            Some(value) => coerce(prop, value),
        }
    }
    args
}

fn coerce(prop: &Value, value: &mut Value) {
    let ty = prop.get("type").and_then(Value::as_str).unwrap_or("");
    match (ty, &*value) {
        ("integer", Value::String(s)) => {
            if let Ok(i) = s.trim().parse::<i64>() {
                *value = Value::from(i);
            } else if let Ok(f) = s.trim().parse::<f64>() {
                if f.fract() == 0.0 && f.abs() < 9.0e15 {
                    *value = Value::from(f as i64);
                }
            }
        }
        ("integer", Value::Number(n)) if n.is_f64() => {
            if let Some(f) = n.as_f64() {
                if f.fract() == 0.0 && f.abs() < 9.0e15 {
                    *value = Value::from(f as i64);
                }
            }
        }
        ("number", Value::String(s)) => {
            if let Some(n) = s
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
            {
                *value = Value::Number(n);
            }
        }
        ("boolean", Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" => *value = Value::Bool(true),
            "false" => *value = Value::Bool(false),
            _ => {}
        },
        ("string", Value::Number(n)) => *value = Value::String(n.to_string()),
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn cap_counts_characters_and_marks() {
        assert_eq!(cap_observation("abc", 3), "abc");
        assert_eq!(cap_observation("abcd", 3), "abc\n...[TRUNCATED]...");
        assert_eq!(cap_observation("ééé", 2), "éé\n...[TRUNCATED]...");
    }

    #[test]
    fn reference_truncation_keeps_limit_minus_80() {
        let line = "x".repeat(501);
        let out = reference_truncate(&line, 500);
        assert_eq!(out.chars().count(), 420 + 18);
        assert_eq!(reference_truncate(&"y".repeat(500), 500), "y".repeat(500));
    }

    #[test]
    fn normalise_fills_defaults_and_coerces() {
        let schema = serde_json::json!({"type": "object", "properties": {
            "n": {"type": "integer", "default": 40}, "q": {"type": "string"},
            "x": {"type": "number"}}});
        let out = normalise_args(&schema, serde_json::json!("{\"q\": \"a\", \"x\": \"2.5\"}"));
        assert_eq!(out, serde_json::json!({"q": "a", "x": 2.5, "n": 40}));
        let out = normalise_args(&schema, serde_json::json!({"n": "12"}));
        assert_eq!(out["n"], 12);
        let out = normalise_args(&schema, serde_json::json!({"n": 12.0}));
        assert_eq!(out["n"], 12);
    }
}
