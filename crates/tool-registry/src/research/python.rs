//! `python_exec(code)` in the OS sandbox of [`crate::sandbox`].
//!
//! Output as the reference: `{code_path, returncode, latency_s, stdout
//! (<= 12,000 chars), stderr (<= 4,000 chars)}`; `ok` only for return code 0,
//! with the warning `python execution returned non-zero exit status`
//! otherwise. 60 s wall limit (Appendix C.2).

use super::str_arg;
use crate::registry::cap_observation;
use crate::sandbox::{
    self, locate_helper, probe_interpreter, run_bounded, which, InterpreterInfo, PythonConfig,
    SandboxPolicy, SandboxReport, SandboxView, HELPER_STATUS_PREFIX, SCRATCH_DIR,
};
use crate::tool::{Tool, ToolContext, ToolFamily, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::time::Instant;
use tokio::sync::OnceCell;

/// The tool's name.
pub const PYTHON_EXEC: &str = "python_exec";

/// Runs Python code over the package in the OS sandbox.
#[derive(Debug)]
pub struct PythonExec {
    config: PythonConfig,
    info: OnceCell<Result<InterpreterInfo, String>>,
}

impl PythonExec {
    /// A tool with this configuration.
    pub fn new(config: PythonConfig) -> Self {
        Self {
            config,
            info: OnceCell::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &PythonConfig {
        &self.config
    }

    async fn interpreter(&self) -> Result<InterpreterInfo, String> {
        self.info
            .get_or_init(|| async { probe_interpreter(&self.config.interpreter).await })
            .await
            .clone()
    }

    /// Checks that the sandbox can run here; `Err` lists what is missing.
    pub async fn sandbox_available(&self) -> Result<(), String> {
        let mut missing = Vec::new();
        if which(&self.config.bwrap).is_none() {
            missing.push(format!(
                "bubblewrap ({}) not found",
                self.config.bwrap.display()
            ));
        }
        if let Err(e) = locate_helper(self.config.helper.as_ref()) {
            missing.push(e);
        }
        if let Err(e) = self.interpreter().await {
            missing.push(e);
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(missing.join("; "))
        }
    }

    /// Runs one call and reports the protections in force.
    pub async fn run(&self, ctx: &ToolContext, args: &Value) -> (ToolOutput, SandboxReport) {
        let code = str_arg(args, "code");
        let mut report = SandboxReport::default();
        if code.trim().is_empty() {
            return (
                ToolOutput::failure(
                    Value::String("code is required".into()),
                    Vec::new(),
                    Vec::new(),
                ),
                report,
            );
        }
        let digest = hex::encode(Sha256::digest(code.as_bytes()));
        let relative = format!("python_snippets/step_{:02}_{}.py", ctx.step, &digest[..12]);
        let host_script = ctx.scratch_dir.join(&relative);
        if let Err(e) = write_script(&host_script, code) {
            return (
                super::tool_exception(
                    PYTHON_EXEC,
                    "OSError",
                    &format!("cannot write {}: {e}", host_script.display()),
                ),
                report,
            );
        }
        let unsandboxed = match &self.config.policy {
            SandboxPolicy::Unsandboxed { reason } => Some(reason.clone()),
            _ => None,
        };
        let command = match &unsandboxed {
            None => match self.sandboxed_command(ctx, &relative).await {
                Ok((cmd, protections)) => {
                    report.sandboxed = true;
                    report.protections = protections;
                    cmd
                }
                Err(missing) => {
                    let message = format!(
                        "python_exec refused: no OS sandbox available ({missing}); \
                         configure SandboxPolicy::Unsandboxed to opt out explicitly"
                    );
                    tracing::error!(%message);
                    report.refused = Some(missing);
                    return (
                        ToolOutput::failure(
                            json!({"error": message}),
                            vec!["sandbox unavailable".into()],
                            Vec::new(),
                        ),
                        report,
                    );
                }
            },
            Some(reason) => {
                tracing::warn!(%reason, "python_exec runs WITHOUT the OS sandbox (explicit opt-out)");
                report.opt_out = Some(reason.clone());
                report.protections = vec![format!(
                    "wall clock: {} s",
                    self.config.limits.wall.as_secs_f64()
                )];
                let mut cmd = tokio::process::Command::new(&self.config.interpreter);
                cmd.arg("-I")
                    .arg("-u")
                    .arg(&host_script)
                    .current_dir(&ctx.package_root);
                cmd
            }
        };
        let started = Instant::now();
        let outcome = run_bounded(command, &self.config.limits).await;
        let latency = started.elapsed().as_secs_f64();
        let sandbox::BoundedOutput {
            status,
            stdout,
            mut stderr,
            limit_hit,
        } = match outcome {
            Ok(o) => o,
            Err(e) => {
                return (
                    super::tool_exception(
                        PYTHON_EXEC,
                        "OSError",
                        &format!("cannot start python: {e}"),
                    ),
                    report,
                );
            }
        };
        // The helper's status line comes first on stderr.
        if report.sandboxed {
            if let Some(rest) = stderr.strip_prefix(HELPER_STATUS_PREFIX) {
                let (line, tail) = rest.split_once('\n').unwrap_or((rest, ""));
                if let Ok(s) = serde_json::from_str::<sandbox::HelperStatus>(line) {
                    report.protections.extend(s.protections);
                    report.landlock = Some(s.landlock);
                }
                stderr = tail.to_string();
            } else {
                report.sandboxed = false;
                report.refused = Some("the sandbox helper did not start".into());
            }
        }
        let returncode = status;
        let limit_hit =
            limit_hit.or_else(|| sandbox::infer_limit(returncode, &stderr).map(String::from));
        if let Some(limit) = &limit_hit {
            let note = match limit.as_str() {
                "wall_clock" => format!(
                    "killed: wall-clock limit of {} s exceeded",
                    self.config.limits.wall.as_secs_f64()
                ),
                "output" => format!(
                    "killed: output exceeded {} bytes",
                    self.config.limits.max_output_bytes
                ),
                other => format!("limit reached: {other}"),
            };
            if !stderr.is_empty() && !stderr.ends_with('\n') {
                stderr.push('\n');
            }
            stderr.push_str(&note);
        }
        report.limit_hit = limit_hit.clone();
        let returncode = returncode.unwrap_or(-9);
        let output = json!({
            "code_path": relative,
            "returncode": returncode,
            "latency_s": (latency * 1000.0).round() / 1000.0,
            "stdout": cap_observation(&stdout, self.config.limits.stdout_chars),
            "stderr": cap_observation(&stderr, self.config.limits.stderr_chars),
        });
        let mut envelope = if returncode == 0 {
            ToolOutput::ok(output, vec![relative.clone()])
        } else {
            let mut out = ToolOutput::failure(
                output,
                vec!["python execution returned non-zero exit status".into()],
                vec![relative.clone()],
            );
            if limit_hit.as_deref() == Some("wall_clock") {
                out.warnings.push("python execution timed out".into());
            }
            out
        };
        if unsandboxed.is_some() {
            envelope
                .warnings
                .push("python ran without the OS sandbox (explicit opt-out)".into());
        }
        (envelope, report)
    }

    async fn sandboxed_command(
        &self,
        ctx: &ToolContext,
        relative: &str,
    ) -> Result<(tokio::process::Command, Vec<String>), String> {
        self.sandbox_available().await?;
        let bwrap = which(&self.config.bwrap).ok_or("bubblewrap not found")?;
        let helper = locate_helper(self.config.helper.as_ref())?;
        let info = self.interpreter().await?;
        let is_hidden =
            |name: &str| earthverse_package_model::evidence::hidden_artifact_name(name).is_some();
        let view = SandboxView {
            package_root: &ctx.package_root,
            release_prefix: &ctx.release_prefix,
            scratch: &ctx.scratch_dir,
            question: ctx.question_file.as_deref(),
            is_hidden: &is_hidden,
        };
        let plan = sandbox::plan(
            &bwrap,
            &helper,
            &info,
            &self.config.limits,
            &view,
            &format!("{SCRATCH_DIR}/{relative}"),
        )
        .map_err(|e| format!("cannot prepare the sandbox: {e}"))?;
        let mut cmd = tokio::process::Command::new(&plan.bwrap);
        cmd.args(&plan.args);
        Ok((cmd, plan.protections))
    }
}

fn write_script(path: &std::path::Path, code: &str) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, code)
}

#[async_trait]
impl Tool for PythonExec {
    fn name(&self) -> &str {
        PYTHON_EXEC
    }

    fn description(&self) -> &str {
        "Run Python code over the event package in an OS sandbox. The working directory is the package (package-relative \
         paths such as data/... and release-relative paths both work); it may read only the package, the public question \
         (/question.txt) and a per-run scratch directory (/scratch, the only writable place); no network, no other \
         programs; 60 s limit. Returns code_path, returncode, latency_s, stdout (<= 12,000 chars), stderr (<= 4,000 chars). \
         Print the results you need. Argument: code."
    }

    fn family(&self) -> ToolFamily {
        ToolFamily::Research
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "code": {"type": "string", "default": "", "description": "Python 3 source to run."}
            }
        })
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutput {
        self.run(ctx, &args).await.0
    }
}
