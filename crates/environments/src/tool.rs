//! Each audited operation as a [`Tool`]: it reads its input series from
//! package files (through package-model's resolver, with provenance),
//! writes them to a per-call directory in the run's scratch, runs the real
//! library or runtime in the OS sandbox and returns an [`Outcome`].

use crate::catalog::{EnvKind, Environment, OperationSpec};
use crate::detect::detect;
use crate::outcome::{Failure, FailureClass, Outcome};
use crate::runner::run_sandboxed;
use crate::runtime;
use async_trait::async_trait;
use earthverse_domain_ops::input::load_series;
use earthverse_sandbox::{probe_interpreter, InterpreterInfo, SandboxProgram};
use earthverse_tool_registry::{Tool, ToolContext, ToolFamily, ToolOutput};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::OnceCell;

/// The Python adapter over the seven libraries.
pub const PYTHON_ADAPTER: &str = include_str!("../adapters/python_adapter.py");

pub use crate::call::{EnvironmentSettings, LoadedInput, WorkDir};

/// An operation of an environment, callable as a tool.
#[derive(Debug)]
pub struct EnvironmentTool {
    env: &'static Environment,
    op: &'static OperationSpec,
    settings: Arc<EnvironmentSettings>,
    description: String,
    interpreter: Arc<OnceCell<Result<InterpreterInfo, String>>>,
}

impl EnvironmentTool {
    /// The tool for `op` of `env`.
    pub fn new(
        env: &'static Environment,
        op: &'static OperationSpec,
        settings: Arc<EnvironmentSettings>,
    ) -> Self {
        Self {
            env,
            op,
            settings,
            description: format!(
                "[{} environment, run in the OS sandbox] {}",
                env.name, op.description
            ),
            interpreter: Arc::new(OnceCell::new()),
        }
    }

    /// The environment.
    pub fn environment(&self) -> &'static Environment {
        self.env
    }

    /// Runs one call and returns its outcome.
    pub async fn run(&self, ctx: &ToolContext, args: &Value) -> Outcome {
        let started = Instant::now();
        let mut outcome = Outcome {
            environment: self.env.name.to_string(),
            operation: self.op.name.to_string(),
            status: "failed".into(),
            failure_class: None,
            message: None,
            result: Value::Null,
            implementation: None,
            inputs: Vec::new(),
            params: Value::Null,
            latency_s: 0.0,
            sandbox: Vec::new(),
        };
        let result = self.execute(ctx, args, &mut outcome).await;
        outcome.latency_s = (started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        match result {
            Ok(value) => {
                outcome.status = "ok".into();
                outcome.result = value;
            }
            Err(f) => {
                tracing::debug!(operation = self.op.name, class = f.class.as_str(), message = %f.message, "environment call failed");
                outcome.failure_class = Some(f.class);
                outcome.message = Some(f.message);
            }
        }
        outcome
    }

    async fn execute(
        &self,
        ctx: &ToolContext,
        args: &Value,
        outcome: &mut Outcome,
    ) -> Result<Value, Failure> {
        let detected = detect(self.env, &self.settings.detection())
            .await
            .map_err(|e| Failure::new(FailureClass::Adapter, e.to_string()))?;
        outcome.implementation = Some(detected.found.join(", "));
        let inputs = load_inputs(ctx, self.op, args)?;
        outcome.inputs = inputs
            .iter()
            .map(|i| {
                json!({"name": i.name, "file": i.file, "field": i.field, "window": i.window,
                       "units": i.units, "values": i.values.len()})
            })
            .collect();
        let params = load_params(self.op, args)?;
        outcome.params = Value::Object(params.clone());
        if let Some(first) = inputs.first() {
            let valid = first.values.iter().filter(|v| v.is_finite()).count();
            if valid < self.op.min_values {
                return Err(Failure::new(
                    FailureClass::InputIncompatibility,
                    format!(
                        "{} needs at least {} values of `{}`; {} ({}) has {valid}",
                        self.op.name, self.op.min_values, first.name, first.file, first.field
                    ),
                ));
            }
        }
        let work = work_dir(ctx, self.op.name, args)?;
        let steps = match self.env.kind {
            EnvKind::PythonLibrary { .. } => {
                let info = self
                    .interpreter
                    .get_or_init(|| async {
                        probe_interpreter(&self.settings.python.interpreter).await
                    })
                    .await
                    .clone()
                    .map_err(|e| Failure::new(FailureClass::Adapter, e))?;
                let request = json!({
                    "operation": self.op.name,
                    "inputs": inputs.iter().map(|i| (i.name.to_string(), json!({
                        "values": i.values.iter().map(|v| if v.is_finite() { json!(v) } else { Value::Null }).collect::<Vec<_>>(),
                        "times": i.times, "units": i.units, "file": i.file, "field": i.field,
                    }))).collect::<Map<String, Value>>(),
                    "params": params,
                });
                let script = work.write("python_adapter.py", PYTHON_ADAPTER.as_bytes())?;
                let req = work.write("request.json", request.to_string().as_bytes())?;
                let mut program = SandboxProgram::python(&info, &script);
                program.args.push(req);
                runtime::Plan {
                    steps: vec![runtime::Step::new(program, "the Python adapter")],
                    parse: parse_python,
                }
            }
            EnvKind::Runtime { .. } => {
                runtime::plan(self.env, self.op, &inputs, &params, &work, &self.settings)?
            }
        };
        let mut last = None;
        for step in &steps.steps {
            let out = run_sandboxed(&self.settings.python, ctx, &step.program).await?;
            outcome.sandbox = out.protections.clone();
            last = Some(out.require_success(&step.what)?);
        }
        let last = last.ok_or_else(|| Failure::new(FailureClass::Adapter, "no step to run"))?;
        (steps.parse)(&last.stdout, &work)
    }
}

/// Reads the Python adapter's last JSON line.
fn parse_python(stdout: &str, _work: &WorkDir) -> Result<Value, Failure> {
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.starts_with("{\"status\""))
        .ok_or_else(|| {
            Failure::new(
                FailureClass::Adapter,
                format!(
                    "the adapter printed no outcome: {}",
                    stdout.chars().take(400).collect::<String>()
                ),
            )
        })?;
    let v: Value = serde_json::from_str(line)
        .map_err(|e| Failure::new(FailureClass::Adapter, format!("unreadable outcome: {e}")))?;
    if v["status"] == "ok" {
        return Ok(v["result"].clone());
    }
    let class = v["failure_class"]
        .as_str()
        .and_then(FailureClass::parse)
        .unwrap_or(FailureClass::Adapter);
    Err(Failure::new(
        class,
        v["message"].as_str().unwrap_or("failed").to_string(),
    ))
}

fn load_inputs(
    ctx: &ToolContext,
    op: &'static OperationSpec,
    args: &Value,
) -> Result<Vec<LoadedInput>, Failure> {
    let mut inputs = Vec::new();
    for spec in op.inputs {
        let Some(reference) = args.get(spec.name).filter(|v| !v.is_null()) else {
            if spec.required {
                return Err(Failure::new(
                    FailureClass::Argument,
                    format!(
                        "input `{}` ({}) is required: {{path, field}}",
                        spec.name, spec.description
                    ),
                ));
            }
            continue;
        };
        let path = reference
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Failure::new(
                    FailureClass::Argument,
                    format!("input `{}` needs a `path`", spec.name),
                )
            })?;
        earthverse_package_model::resolve(&ctx.package_root, path).map_err(|e| {
            Failure::new(
                FailureClass::Argument,
                format!("input `{}`: {e}", spec.name),
            )
        })?;
        let (series, provenance) = load_series(ctx, reference).map_err(|e| {
            Failure::new(
                FailureClass::InputIncompatibility,
                format!("input `{}`: {e}", spec.name),
            )
        })?;
        let units = reference
            .get("units")
            .and_then(Value::as_str)
            .unwrap_or(spec.default_units)
            .to_string();
        inputs.push(LoadedInput {
            name: spec.name,
            values: series.values,
            times: series.times,
            units,
            file: provenance.file,
            field: provenance.variable.unwrap_or_default(),
            window: provenance.window,
        });
    }
    Ok(inputs)
}

fn load_params(op: &OperationSpec, args: &Value) -> Result<Map<String, Value>, Failure> {
    let mut params = Map::new();
    for p in op.params {
        match args.get(p.name).filter(|v| !v.is_null()) {
            Some(v) => {
                let fits = match p.kind {
                    "number" => v.is_number(),
                    "integer" => v.is_i64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
                    "string" => v.is_string(),
                    "array" => v.as_array().is_some_and(|a| a.iter().all(Value::is_number)),
                    _ => true,
                };
                if !fits {
                    return Err(Failure::new(
                        FailureClass::Argument,
                        format!(
                            "parameter `{}` must be a {} ({})",
                            p.name, p.kind, p.description
                        ),
                    ));
                }
                params.insert(p.name.into(), v.clone());
            }
            None if p.required => {
                return Err(Failure::new(
                    FailureClass::Argument,
                    format!("parameter `{}` is required ({})", p.name, p.description),
                ))
            }
            None => {}
        }
    }
    Ok(params)
}

fn work_dir(ctx: &ToolContext, op: &str, args: &Value) -> Result<WorkDir, Failure> {
    let digest = hex::encode(Sha256::digest(args.to_string().as_bytes()));
    let name = format!("step_{:02}_{op}_{}", ctx.step, &digest[..10]);
    let host = ctx.scratch_dir.join("environments").join(&name);
    std::fs::create_dir_all(&host).map_err(|e| {
        Failure::new(
            FailureClass::Adapter,
            format!("cannot create {}: {e}", host.display()),
        )
    })?;
    Ok(WorkDir {
        host,
        sandboxed: format!("{}/environments/{name}", earthverse_sandbox::SCRATCH_DIR),
    })
}

#[async_trait]
impl Tool for EnvironmentTool {
    fn name(&self) -> &str {
        self.op.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn family(&self) -> ToolFamily {
        ToolFamily::MeteorologyClimate
    }

    fn parameters_schema(&self) -> Value {
        self.op.schema()
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutput {
        self.run(ctx, &args).await.into_tool_output()
    }
}
