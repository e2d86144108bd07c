//! The generic [`Operation`]: a named function with a parameter list, a
//! family, an applicability check and a body, exposed through the
//! tool-registry [`Tool`] trait.

use crate::input::{Provenance, Series};
use crate::{DomainError, Result};

/// Reads a JSON number or numeric string (the input layer's reader).
pub use crate::input::as_f64;
use async_trait::async_trait;
use earthverse_tool_registry::{Applicability, Tool, ToolContext, ToolFamily, ToolOutput};
use serde_json::{json, Map, Value};
use std::sync::Mutex;

/// The kind of one parameter; it decides its JSON Schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A number.
    Number,
    /// An integer.
    Integer,
    /// A string.
    Text,
    /// A boolean.
    Bool,
    /// An array of numbers (nulls allowed as missing values).
    Numbers,
    /// An array of strings.
    Texts,
    /// A numeric series: an inline array of numbers, or a reference to a
    /// package file `{path, field, time_field?}` (see [`crate::input`]).
    Series,
    /// A reference to a package file `{path}` or a bare path string.
    File,
    /// Any JSON value (objects, nested arrays).
    Any,
}

impl Kind {
    fn schema(self) -> Value {
        let numbers = json!({"type": "array", "items": {"type": ["number", "null"]}});
        match self {
            Kind::Number => json!({"type": "number"}),
            Kind::Integer => json!({"type": "integer"}),
            Kind::Text => json!({"type": "string"}),
            Kind::Bool => json!({"type": "boolean"}),
            Kind::Numbers => numbers,
            Kind::Texts => json!({"type": "array", "items": {"type": "string"}}),
            Kind::Series => json!({"oneOf": [numbers, {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "package-relative file"},
                    "field": {"type": "string", "description": "JSON dotted path, CSV/Parquet column or NetCDF variable"},
                    "time_field": {"type": "string", "description": "optional time axis (same addressing)"},
                    "start": {"type": "string", "description": "optional first time label kept (inclusive, ISO prefix)"},
                    "end": {"type": "string", "description": "optional last time label kept (inclusive, ISO prefix)"}
                },
                "required": ["path", "field"],
                "additionalProperties": false
            }]}),
            Kind::File => json!({"type": "string", "description": "package-relative file path"}),
            Kind::Any => json!({}),
        }
    }
}

/// One declared parameter.
#[derive(Debug, Clone)]
pub struct Param {
    /// Argument name.
    pub name: &'static str,
    /// Kind.
    pub kind: Kind,
    /// What it means, with units.
    pub doc: &'static str,
    /// Required, or the default value.
    pub default: Option<Value>,
}

/// A required parameter.
pub fn req(name: &'static str, kind: Kind, doc: &'static str) -> Param {
    Param {
        name,
        kind,
        doc,
        default: None,
    }
}

/// An optional parameter with a default.
pub fn opt(name: &'static str, kind: Kind, doc: &'static str, default: Value) -> Param {
    Param {
        name,
        kind,
        doc,
        default: Some(default),
    }
}

/// The body of an operation.
pub type Body = fn(&mut OpCall<'_>) -> Result<Value>;

/// A domain operation. Implements [`Tool`].
#[derive(Clone)]
pub struct Operation {
    /// Name the model calls.
    pub name: &'static str,
    /// Family.
    pub family: ToolFamily,
    /// What it computes and from what; names the reference method.
    pub description: &'static str,
    /// Parameters.
    pub params: Vec<Param>,
    /// Minimum length of each named numeric-array / series parameter: a
    /// shorter record is refused as `record_too_short` before running.
    pub min_lengths: Vec<(&'static str, usize)>,
    /// Method names this operation implements (App. A.4).
    pub methods: Vec<&'static str>,
    /// The body.
    pub body: Body,
}

impl std::fmt::Debug for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Operation")
            .field("name", &self.name)
            .field("family", &self.family)
            .finish()
    }
}

impl Operation {
    /// A new operation with no minimum lengths and its name as only method.
    pub fn new(
        name: &'static str,
        family: ToolFamily,
        description: &'static str,
        params: Vec<Param>,
        body: Body,
    ) -> Self {
        Self {
            name,
            family,
            description,
            params,
            min_lengths: Vec::new(),
            methods: vec![name],
            body,
        }
    }

    /// Requires at least `need` values in parameter `param`.
    pub fn min_len(mut self, param: &'static str, need: usize) -> Self {
        self.min_lengths.push((param, need));
        self
    }

    /// Declares the implemented methods.
    pub fn methods(mut self, methods: &[&'static str]) -> Self {
        self.methods = methods.to_vec();
        self
    }

    /// Fills defaults into `args` (an object), leaving given values alone.
    pub fn with_defaults(&self, args: &Value) -> Value {
        let mut map = args.as_object().cloned().unwrap_or_default();
        for p in &self.params {
            if let (Some(default), false) = (&p.default, map.contains_key(p.name)) {
                if !default.is_null() {
                    map.insert(p.name.to_string(), default.clone());
                }
            }
        }
        Value::Object(map)
    }

    /// Runs the operation synchronously on a context and arguments: checks
    /// required parameters and minimum lengths, then the body. This is what
    /// [`Tool::call`] does, without the envelope.
    pub fn run(&self, ctx: &ToolContext, args: &Value) -> Result<(Value, Vec<Provenance>)> {
        let args = self.with_defaults(args);
        for p in &self.params {
            if p.default.is_none() && args.get(p.name).is_none_or(Value::is_null) {
                return Err(DomainError::MissingArgument {
                    operation: self.name.to_string(),
                    argument: p.name.to_string(),
                });
            }
        }
        if let Applicability::NotApplicable { reason, message } = self.check_inline(&args) {
            return Err(DomainError::NotApplicable { reason, message });
        }
        let mut call = OpCall {
            operation: self,
            ctx,
            args: &args,
            provenance: Mutex::new(Vec::new()),
        };
        let value = (self.body)(&mut call)?;
        let provenance = call.provenance.into_inner().unwrap_or_default();
        Ok((value, provenance))
    }

    fn check_inline(&self, args: &Value) -> Applicability {
        for (param, need) in &self.min_lengths {
            if let Some(Value::Array(items)) = args.get(*param) {
                let have = items.iter().filter(|v| v.is_number()).count();
                if have < *need {
                    return record_too_short(param, have, *need);
                }
            }
        }
        Applicability::Applicable
    }
}

/// The `record_too_short{have, need}` refusal.
pub fn record_too_short(param: &str, have: usize, need: usize) -> Applicability {
    Applicability::NotApplicable {
        reason: json!({"record_too_short": {"argument": param, "have": have, "need": need}}),
        message: format!("`{param}` has {have} valid values; the method needs at least {need}"),
    }
}

#[async_trait]
impl Tool for Operation {
    fn name(&self) -> &str {
        self.name
    }

    fn description(&self) -> &str {
        self.description
    }

    fn family(&self) -> ToolFamily {
        self.family
    }

    fn parameters_schema(&self) -> Value {
        let mut properties = Map::new();
        let mut required = Vec::new();
        for p in &self.params {
            let mut schema = p.kind.schema();
            if let Value::Object(obj) = &mut schema {
                obj.entry("description")
                    .or_insert_with(|| Value::String(p.doc.to_string()));
                if let Some(default) = &p.default {
                    if !default.is_null() {
                        obj.insert("default".into(), default.clone());
                    }
                }
            }
            properties.insert(p.name.to_string(), schema);
            if p.default.is_none() {
                required.push(Value::String(p.name.to_string()));
            }
        }
        json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        })
    }

    fn operations(&self) -> Vec<String> {
        self.methods.iter().map(|m| m.to_string()).collect()
    }

    fn check_applicable(&self, _ctx: &ToolContext, args: &Value) -> Applicability {
        self.check_inline(args)
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutput {
        match self.run(ctx, &args) {
            Ok((value, provenance)) => {
                let files: Vec<String> = provenance.iter().map(|p| p.file.clone()).collect();
                let mut output = match value {
                    Value::Object(map) => map,
                    other => {
                        let mut map = Map::new();
                        map.insert("value".into(), other);
                        map
                    }
                };
                output.insert("operation".into(), Value::String(self.name.to_string()));
                if !provenance.is_empty() {
                    output.insert(
                        "provenance".into(),
                        serde_json::to_value(&provenance).unwrap_or(Value::Null),
                    );
                }
                let mut unique = files;
                unique.sort();
                unique.dedup();
                ToolOutput::ok(Value::Object(output), unique)
            }
            Err(DomainError::NotApplicable { reason, message }) => {
                ToolOutput::not_applicable(reason, message)
            }
            Err(err) => ToolOutput::error(err.to_string()),
        }
    }
}

/// What an operation body sees: its arguments (defaults filled), the
/// package, and a provenance log.
pub struct OpCall<'a> {
    operation: &'a Operation,
    ctx: &'a ToolContext,
    args: &'a Value,
    provenance: Mutex<Vec<Provenance>>,
}

impl<'a> OpCall<'a> {
    /// The raw arguments.
    pub fn args(&self) -> &Value {
        self.args
    }

    /// The tool context.
    pub fn ctx(&self) -> &ToolContext {
        self.ctx
    }

    fn bad(&self, name: &str, message: impl Into<String>) -> DomainError {
        DomainError::BadArgument {
            operation: self.operation.name.to_string(),
            argument: name.to_string(),
            message: message.into(),
        }
    }

    /// A number argument.
    pub fn num(&self, name: &str) -> Result<f64> {
        match self.args.get(name) {
            Some(v) => as_f64(v).ok_or_else(|| self.bad(name, "expected a number")),
            None => Err(self.bad(name, "missing")),
        }
    }

    /// An optional number argument (absent or null gives `None`).
    pub fn num_opt(&self, name: &str) -> Result<Option<f64>> {
        match self.args.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => as_f64(v)
                .map(Some)
                .ok_or_else(|| self.bad(name, "expected a number")),
        }
    }

    /// An integer argument.
    pub fn int(&self, name: &str) -> Result<i64> {
        let x = self.num(name)?;
        if x.fract() != 0.0 {
            return Err(self.bad(name, "expected an integer"));
        }
        Ok(x as i64)
    }

    /// A string argument.
    pub fn text(&self, name: &str) -> Result<String> {
        match self.args.get(name) {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(self.bad(name, "expected a string")),
            None => Err(self.bad(name, "missing")),
        }
    }

    /// A boolean argument.
    pub fn flag(&self, name: &str) -> Result<bool> {
        match self.args.get(name) {
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.bad(name, "expected true or false")),
            None => Err(self.bad(name, "missing")),
        }
    }

    /// Any JSON argument.
    pub fn value(&self, name: &str) -> Result<&Value> {
        self.args.get(name).ok_or_else(|| self.bad(name, "missing"))
    }

    /// An array of numbers (nulls and non-numbers become NaN = missing).
    pub fn numbers(&self, name: &str) -> Result<Vec<f64>> {
        match self.args.get(name) {
            Some(Value::Array(items)) => Ok(items
                .iter()
                .map(|v| as_f64(v).unwrap_or(f64::NAN))
                .collect()),
            Some(_) => Err(self.bad(name, "expected an array of numbers")),
            None => Err(self.bad(name, "missing")),
        }
    }

    /// An array of strings.
    pub fn texts(&self, name: &str) -> Result<Vec<String>> {
        match self.args.get(name) {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| self.bad(name, "expected an array of strings"))
                })
                .collect(),
            Some(_) => Err(self.bad(name, "expected an array of strings")),
            None => Err(self.bad(name, "missing")),
        }
    }

    /// A numeric series, inline or loaded from a package file. The minimum
    /// length declared for `name` is enforced on the valid (finite) values,
    /// giving a `record_too_short` refusal.
    pub fn series(&self, name: &str) -> Result<Series> {
        let spec = self
            .args
            .get(name)
            .ok_or_else(|| self.bad(name, "missing"))?;
        let series = match spec {
            Value::Array(_) => Series::inline(self.numbers(name)?),
            Value::Object(_) => {
                let (series, prov) = crate::input::load_series(self.ctx, spec)
                    .map_err(|e| e.in_argument(self.operation.name, name))?;
                self.record(prov);
                series
            }
            _ => return Err(self.bad(name, "expected an array or {path, field}")),
        };
        for (param, need) in &self.operation.min_lengths {
            if *param == name {
                let have = series.valid_count();
                if have < *need {
                    if let Applicability::NotApplicable { reason, message } =
                        record_too_short(name, have, *need)
                    {
                        return Err(DomainError::NotApplicable { reason, message });
                    }
                }
            }
        }
        Ok(series)
    }

    /// Reads a package file (through package-model's resolver) and records it.
    pub fn file_bytes(&self, name: &str) -> Result<(String, Vec<u8>)> {
        let requested = self.text(name)?;
        let (relative, bytes) = crate::input::read_package_file(self.ctx, &requested)
            .map_err(|e| e.in_argument(self.operation.name, name))?;
        self.record(Provenance {
            file: relative.clone(),
            variable: None,
            window: None,
        });
        Ok((relative, bytes))
    }

    /// Resolves a package file argument to an absolute path (for C libraries
    /// that open files themselves) and records it.
    pub fn file_path(&self, name: &str) -> Result<(String, std::path::PathBuf)> {
        let requested = self.text(name)?;
        let resolved = earthverse_package_model::resolve(&self.ctx.package_root, &requested)
            .map_err(|e| self.bad(name, e.to_string()))?;
        self.record(Provenance {
            file: resolved.package_relative.clone(),
            variable: None,
            window: None,
        });
        Ok((resolved.package_relative, resolved.absolute))
    }

    /// Adds a provenance entry.
    pub fn record(&self, provenance: Provenance) {
        if let Ok(mut log) = self.provenance.lock() {
            log.push(provenance);
        }
    }

    /// A refusal with a machine-readable reason.
    pub fn refuse(&self, reason: Value, message: impl Into<String>) -> DomainError {
        DomainError::NotApplicable {
            reason,
            message: message.into(),
        }
    }

    /// A bad-argument error for `name`.
    pub fn invalid(&self, name: &str, message: impl Into<String>) -> DomainError {
        self.bad(name, message)
    }
}

/// A number or an array of numbers as a vector.
pub(crate) fn vals(c: &OpCall<'_>, name: &str) -> Result<Vec<f64>> {
    match c.value(name)? {
        Value::Array(_) => c.numbers(name),
        _ => Ok(vec![c.num(name)?]),
    }
}

/// Refuses when a series is shorter than `need` valid values.
pub(crate) fn need(c: &OpCall<'_>, name: &str, have: usize, need: usize) -> Result<()> {
    if have < need {
        return Err(c.refuse(
            json!({"record_too_short": {"argument": name, "have": have, "need": need}}),
            format!("`{name}` has {have} valid values; the method needs at least {need}"),
        ));
    }
    Ok(())
}
