//! The interpreter `python_exec` runs, chosen once per command as
//! `earthverse_sandbox::resolve_interpreter` chooses it (`--python`, then
//! `EARTHVERSE_PYTHON`, then the scientific environment of
//! `scripts/python-env.sh`, then `python3`), with one note at start when
//! agents would lack the libraries the recorded runs use.

use anyhow::bail;
use earthverse_tool_registry::sandbox::{
    default_environment_dir, probe_environment, InterpreterSource, PythonConfig, PythonEnvironment,
    CORE_PACKAGES,
};
use std::path::PathBuf;

/// The configuration for `python_exec` and the environment it offers
/// (`None` when the fallback `python3` cannot even be run; every call is
/// then refused with the reason).
pub fn discover(
    explicit: Option<PathBuf>,
) -> anyhow::Result<(PythonConfig, Option<PythonEnvironment>)> {
    let (config, source) = PythonConfig::discover(explicit);
    match probe_environment(&config.interpreter, source) {
        Ok(env) => {
            if !env.has_core_packages() {
                eprintln!("{}", lacking_note(&env));
            }
            Ok((config, Some(env)))
        }
        Err(e) if source == InterpreterSource::SystemFallback => {
            eprintln!(
                "note: python_exec has no interpreter ({e}); every python_exec call will be refused. {}",
                how_to_fix()
            );
            Ok((config, None))
        }
        Err(e) => bail!(
            "{} ({}): {e}",
            describe(source),
            config.interpreter.display()
        ),
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

/// The note printed when numpy or pandas is missing.
fn lacking_note(env: &PythonEnvironment) -> String {
    format!(
        "note: python_exec will run {} ({}), which lacks {}: agents' code that imports them will fail. {}",
        env.interpreter.display(),
        describe(env.source),
        env.missing(CORE_PACKAGES).join(" and "),
        how_to_fix()
    )
}
