//! Runs one program in the OS sandbox of `python_exec` (bubblewrap,
//! Landlock, seccomp, rlimits; package read-only at `/evidence`, scratch at
//! `/scratch`, no network), fail-closed: without the sandbox nothing runs.

use crate::outcome::{Failure, FailureClass};
use earthverse_sandbox::{
    locate_helper, plan_program, run_bounded, which, HelperStatus, PythonConfig, SandboxProgram,
    SandboxView, HELPER_STATUS_PREFIX,
};
use earthverse_tool_registry::ToolContext;

/// What a sandboxed run printed.
#[derive(Debug, Clone)]
pub struct RunOutput {
    /// Exit status (`None`: killed for a limit).
    pub status: Option<i64>,
    /// Standard output.
    pub stdout: String,
    /// Standard error, without the helper's status line.
    pub stderr: String,
    /// The limit that ended it.
    pub limit_hit: Option<String>,
    /// Protections in force.
    pub protections: Vec<String>,
}

/// Runs `program` over `ctx`'s package with `config`'s bubblewrap, helper
/// and limits. A missing sandbox is an adapter failure (never unsandboxed).
pub async fn run_sandboxed(
    config: &PythonConfig,
    ctx: &ToolContext,
    program: &SandboxProgram,
) -> Result<RunOutput, Failure> {
    let adapter = |m: String| Failure::new(FailureClass::Adapter, m);
    let bwrap = which(&config.bwrap).ok_or_else(|| {
        adapter(format!(
            "no OS sandbox: bubblewrap ({}) not found (scripts/bootstrap.sh installs it)",
            config.bwrap.display()
        ))
    })?;
    let helper = locate_helper(config.helper.as_ref()).map_err(adapter)?;
    std::fs::create_dir_all(&ctx.scratch_dir)
        .map_err(|e| adapter(format!("cannot create scratch: {e}")))?;
    let plan = {
        let is_hidden =
            |name: &str| earthverse_package_model::evidence::hidden_artifact_name(name).is_some();
        let view = SandboxView {
            package_root: &ctx.package_root,
            release_prefix: &ctx.release_prefix,
            scratch: &ctx.scratch_dir,
            question: ctx.question_file.as_deref(),
            is_hidden: &is_hidden,
        };
        plan_program(&bwrap, &helper, program, &config.limits, &view)
            .map_err(|e| adapter(format!("cannot prepare the sandbox: {e}")))?
    };
    let mut cmd = tokio::process::Command::new(&plan.bwrap);
    cmd.args(&plan.args);
    let out = run_bounded(cmd, &config.limits)
        .await
        .map_err(|e| adapter(format!("cannot start the sandbox: {e}")))?;
    let mut protections = plan.protections;
    let Some(rest) = out.stderr.strip_prefix(HELPER_STATUS_PREFIX) else {
        return Err(adapter(format!(
            "the sandbox helper did not start: {}",
            out.stderr.chars().take(600).collect::<String>()
        )));
    };
    let (line, tail) = rest.split_once('\n').unwrap_or((rest, ""));
    if let Ok(s) = serde_json::from_str::<HelperStatus>(line) {
        protections.extend(s.protections);
    }
    let limit_hit = out
        .limit_hit
        .or_else(|| earthverse_sandbox::infer_limit(out.status, tail).map(String::from));
    Ok(RunOutput {
        status: out.status,
        stdout: out.stdout,
        stderr: tail.to_string(),
        limit_hit,
        protections,
    })
}

impl RunOutput {
    /// `Ok(self)` when it exited 0, else a runtime failure naming the exit
    /// status, the limit and the end of stderr.
    pub fn require_success(self, what: &str) -> Result<Self, Failure> {
        if self.status == Some(0) {
            return Ok(self);
        }
        let tail: String = {
            let s = self.stderr.trim();
            let start = s.len().saturating_sub(800);
            let start = (start..=s.len())
                .find(|i| s.is_char_boundary(*i))
                .unwrap_or(0);
            s[start..].to_string()
        };
        let why = match (&self.limit_hit, self.status) {
            (Some(limit), _) => format!("stopped by the sandbox's {limit} limit"),
            (None, Some(code)) => format!("exit status {code}"),
            (None, None) => "killed".to_string(),
        };
        Err(Failure::new(
            FailureClass::Runtime,
            format!("{what} failed ({why}): {tail}"),
        ))
    }
}
