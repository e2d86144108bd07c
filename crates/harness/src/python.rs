//! The interpreter `python_exec` runs, chosen once per run as
//! `earthverse_sandbox::resolve_interpreter` chooses it (an explicit path,
//! then `EARTHVERSE_PYTHON`, then the scientific environment of
//! `scripts/python-env.sh`, then `python3`), with a note when agents would
//! lack the libraries the recorded runs use.

use crate::error::{HarnessError, Result};
use earthverse_tool_registry::sandbox::{
    default_environment_dir, probe_environment, InterpreterSource, PythonConfig, PythonEnvironment,
    CORE_PACKAGES,
};
use std::path::PathBuf;

/// The interpreter found for `python_exec`.
#[derive(Debug, Clone)]
pub struct DiscoveredPython {
    /// The configuration for `python_exec`.
    pub config: PythonConfig,
    /// The environment it offers (`None` when the fallback `python3` cannot
    /// even be run; every call is then refused with the reason).
    pub environment: Option<PythonEnvironment>,
    /// What a person should be told before the run (lacking libraries, no
    /// interpreter), each one line starting with `note:`.
    pub notes: Vec<String>,
}

/// Finds the interpreter; an explicit or configured one that cannot run is
/// an error naming where it came from.
pub fn discover(explicit: Option<PathBuf>) -> Result<DiscoveredPython> {
    let (config, source) = PythonConfig::discover(explicit);
    match probe_environment(&config.interpreter, source) {
        Ok(env) => {
            let notes = if env.has_core_packages() {
                Vec::new()
            } else {
                vec![lacking_note(&env)]
            };
            Ok(DiscoveredPython {
                config,
                environment: Some(env),
                notes,
            })
        }
        Err(e) if source == InterpreterSource::SystemFallback => Ok(DiscoveredPython {
            config,
            environment: None,
            notes: vec![format!(
                "note: python_exec has no interpreter ({e}); every python_exec call will be refused. {}",
                how_to_fix()
            )],
        }),
        Err(e) => Err(HarnessError::Python {
            source_name: describe(source),
            interpreter: config.interpreter.clone(),
            reason: e.to_string(),
        }),
    }
}

fn describe(source: InterpreterSource) -> &'static str {
    match source {
        InterpreterSource::Explicit => "--python",
        InterpreterSource::EnvVar => "EARTHVERSE_PYTHON",
        InterpreterSource::DefaultEnvironment => "the scientific Python environment",
        InterpreterSource::SystemFallback => "python3",
    }
}

fn how_to_fix() -> String {
    let dir = default_environment_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|| "$EARTHVERSE_VENV".into());
    format!(
        "Create the scientific environment once with `scripts/python-env.sh` (it installs the pinned \
         packages into {dir}, which earthverse then uses by default), or pass --python PATH \
         (or set EARTHVERSE_PYTHON) to a Python that has them."
    )
}

/// The note when numpy or pandas is missing.
fn lacking_note(env: &PythonEnvironment) -> String {
    format!(
        "note: python_exec will run {} ({}), which lacks {}: agents' code that imports them will fail. {}",
        env.interpreter.display(),
        describe(env.source),
        env.missing(CORE_PACKAGES).join(" and "),
        how_to_fix()
    )
}
