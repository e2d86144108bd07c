//! The plain data of one environment call, shared by the tool that makes
//! the call (`tool`) and the runtimes' plans (`runtime`): where the
//! environments run, the input series read from the package, and the
//! per-call directory. A leaf module, so neither of the two imports the
//! other's types.

use crate::detect::DetectionContext;
use crate::outcome::{Failure, FailureClass};
use earthverse_sandbox::PythonConfig;
use std::ffi::OsString;
use std::path::PathBuf;

/// Where the environments run: the sandbox configuration of `python_exec`
/// (its interpreter is the scientific Python; its limits bound every call)
/// and the `PATH` searched for runtimes.
#[derive(Debug, Clone, Default)]
pub struct EnvironmentSettings {
    /// Sandbox, interpreter and limits.
    pub python: PythonConfig,
    /// `PATH` for runtimes; `None`: the process's.
    pub path: Option<OsString>,
}

impl EnvironmentSettings {
    /// The detection context of these settings.
    pub fn detection(&self) -> DetectionContext {
        DetectionContext {
            python: self.python.interpreter.clone(),
            path: self.path.clone(),
        }
    }
}

/// One input series as read from the package.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedInput {
    /// Argument name.
    pub name: &'static str,
    /// Values (NaN = missing).
    pub values: Vec<f64>,
    /// Time labels.
    pub times: Option<Vec<String>>,
    /// Units (given, else the operation's default).
    pub units: String,
    /// Package-relative file.
    pub file: String,
    /// Field.
    pub field: String,
    /// Window kept.
    pub window: Option<String>,
}

/// The per-call directory: on the host and as the sandbox sees it.
#[derive(Debug, Clone)]
pub struct WorkDir {
    /// Host path (inside the run's scratch).
    pub host: PathBuf,
    /// The same directory inside the sandbox (`/scratch/environments/...`).
    pub sandboxed: String,
}

impl WorkDir {
    /// Writes a file into the directory.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<String, Failure> {
        let path = self.host.join(name);
        std::fs::write(&path, bytes).map_err(|e| {
            Failure::new(
                FailureClass::Adapter,
                format!("cannot write {}: {e}", path.display()),
            )
        })?;
        Ok(format!("{}/{name}", self.sandboxed))
    }
}
