//! The interpreter `python_exec` runs and the scientific environment around
//! it.
//!
//! **Which interpreter** ([`resolve_interpreter`]), first match wins:
//! 1. an explicit path (`earthverse run --python PATH`);
//! 2. `EARTHVERSE_PYTHON`;
//! 3. the scientific environment `scripts/python-env.sh` makes, at
//!    [`default_environment_dir`] (`$EARTHVERSE_VENV`, else
//!    `$XDG_DATA_HOME/earthverse/python`, else
//!    `~/.local/share/earthverse/python`), when its `bin/python` exists;
//! 4. `python3` on `PATH` (usually without numpy or pandas).
//!
//! **What it offers** ([`probe_environment`]): the Python version and the
//! installed version of every package of [`SCIENTIFIC_PACKAGES`] (the pins
//! of [`REQUIREMENTS`], chosen from what the release's recorded runs
//! import), recorded in every run record so a result can be traced to the
//! libraries that produced it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The pinned requirements of the scientific environment
/// (`crates/sandbox/python-requirements.txt`, installed by
/// `scripts/python-env.sh`).
pub const REQUIREMENTS: &str = include_str!("../python-requirements.txt");

/// The distributions whose versions a run records: the top-level pins of
/// [`REQUIREMENTS`] (the libraries the recorded runs import).
pub const SCIENTIFIC_PACKAGES: &[&str] = &[
    "numpy",
    "pandas",
    "scipy",
    "pillow",
    "beautifulsoup4",
    "lxml",
    "opencv-python-headless",
    "imageio",
    "matplotlib",
    "scikit-image",
    "tifffile",
    "pypdf",
    "PyPDF2",
    "pymupdf",
    "pdfplumber",
];

/// The packages without which agents cannot do what the recorded runs do
/// most (numeric arrays and tables).
pub const CORE_PACKAGES: &[&str] = &["numpy", "pandas"];

/// Where an interpreter lives, asked once from the interpreter itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterpreterInfo {
    /// `sys.executable` (kept unresolved so a venv stays a venv).
    pub executable: PathBuf,
    /// `realpath(sys.executable)`.
    pub real_executable: PathBuf,
    /// `sys.prefix`.
    pub prefix: PathBuf,
    /// `sys.base_prefix`.
    pub base_prefix: PathBuf,
}

/// Asks `interpreter` where it lives (runs it once, outside the sandbox:
/// the interpreter is the operator's choice, not the model's).
pub async fn probe_interpreter(interpreter: &Path) -> Result<InterpreterInfo, String> {
    let script = "import sys, os, json; print(json.dumps({'executable': sys.executable, \
                  'real_executable': os.path.realpath(sys.executable), 'prefix': sys.prefix, \
                  'base_prefix': sys.base_prefix}))";
    let interpreter = interpreter.to_path_buf();
    tokio::task::spawn_blocking(move || ask_python(&interpreter, script, &[]))
        .await
        .map_err(|e| format!("the interpreter probe did not finish: {e}"))?
}

/// Runs `interpreter -I -c script args...` (outside the sandbox) and reads
/// the JSON object it prints.
fn ask_python<T: serde::de::DeserializeOwned>(
    interpreter: &Path,
    script: &str,
    args: &[&str],
) -> Result<T, String> {
    let out = std::process::Command::new(interpreter)
        .args(["-I", "-c", script])
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| {
            format!(
                "cannot run the Python interpreter {}: {e}",
                interpreter.display()
            )
        })?;
    if !out.status.success() {
        return Err(format!(
            "the Python interpreter {} failed: {}",
            interpreter.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("unexpected reply from {}: {e}", interpreter.display()))
}

/// How the interpreter was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InterpreterSource {
    /// Given explicitly (`--python`, or set in the library's config).
    Explicit,
    /// From `EARTHVERSE_PYTHON`.
    EnvVar,
    /// The scientific environment at [`default_environment_dir`].
    DefaultEnvironment,
    /// `python3` on `PATH`: no scientific environment was found.
    SystemFallback,
}

/// The directory of the scientific environment `scripts/python-env.sh`
/// makes: `$EARTHVERSE_VENV`, else `$XDG_DATA_HOME/earthverse/python`, else
/// `$HOME/.local/share/earthverse/python`.
pub fn default_environment_dir() -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty("EARTHVERSE_VENV") {
        return Some(PathBuf::from(dir));
    }
    let data = non_empty("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| non_empty("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(data.join("earthverse/python"))
}

/// Chooses the interpreter (see the module docs for the order).
pub fn resolve_interpreter(explicit: Option<PathBuf>) -> (PathBuf, InterpreterSource) {
    if let Some(p) = explicit {
        return (p, InterpreterSource::Explicit);
    }
    if let Some(p) = std::env::var_os("EARTHVERSE_PYTHON").filter(|v| !v.is_empty()) {
        return (PathBuf::from(p), InterpreterSource::EnvVar);
    }
    if let Some(python) = default_environment_dir()
        .map(|d| d.join("bin/python"))
        .filter(|p| p.is_file())
    {
        return (python, InterpreterSource::DefaultEnvironment);
    }
    (PathBuf::from("python3"), InterpreterSource::SystemFallback)
}

/// The interpreter `python_exec` runs and the libraries it offers, as
/// recorded in a run record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PythonEnvironment {
    /// The interpreter as configured.
    pub interpreter: PathBuf,
    /// How it was chosen.
    pub source: InterpreterSource,
    /// `sys.executable`.
    pub executable: PathBuf,
    /// `platform.python_version()`.
    pub python_version: String,
    /// Installed version of each of [`SCIENTIFIC_PACKAGES`]; `null` when
    /// absent.
    pub packages: BTreeMap<String, Option<String>>,
}

impl PythonEnvironment {
    /// The packages of `names` that are not installed.
    pub fn missing<'a>(&self, names: &[&'a str]) -> Vec<&'a str> {
        names
            .iter()
            .copied()
            .filter(|n| !matches!(self.packages.get(*n), Some(Some(_))))
            .collect()
    }

    /// Whether numpy and pandas are installed ([`CORE_PACKAGES`]).
    pub fn has_core_packages(&self) -> bool {
        self.missing(CORE_PACKAGES).is_empty()
    }

    /// One line for a user: interpreter, version, and what is missing.
    pub fn summary(&self) -> String {
        let missing = self.missing(SCIENTIFIC_PACKAGES);
        let installed = SCIENTIFIC_PACKAGES.len() - missing.len();
        format!(
            "{} (Python {}, {installed} of {} scientific packages{})",
            self.interpreter.display(),
            self.python_version,
            SCIENTIFIC_PACKAGES.len(),
            if missing.is_empty() {
                String::new()
            } else {
                format!("; missing {}", missing.join(", "))
            }
        )
    }
}

/// Asks `interpreter` for its version and the versions of
/// [`SCIENTIFIC_PACKAGES`] (one short run outside the sandbox, with `-I` as
/// in the sandbox, so user site-packages do not count).
pub fn probe_environment(
    interpreter: &Path,
    source: InterpreterSource,
) -> Result<PythonEnvironment, String> {
    let script = "import sys, json, platform\n\
                  from importlib import metadata\n\
                  def version(name):\n    try:\n        return metadata.version(name)\n    except metadata.PackageNotFoundError:\n        return None\n\
                  names = json.loads(sys.argv[1])\n\
                  print(json.dumps({'executable': sys.executable, 'python_version': platform.python_version(), \
                  'packages': {n: version(n) for n in names}}))\n";
    let names = serde_json::to_string(SCIENTIFIC_PACKAGES).map_err(|e| e.to_string())?;
    #[derive(Deserialize)]
    struct Reply {
        executable: PathBuf,
        python_version: String,
        packages: BTreeMap<String, Option<String>>,
    }
    let reply: Reply = ask_python(interpreter, script, &[&names])?;
    Ok(PythonEnvironment {
        interpreter: interpreter.to_path_buf(),
        source,
        executable: reply.executable,
        python_version: reply.python_version,
        packages: reply.packages,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// Every recorded package is pinned exactly once in the requirements.
    #[test]
    fn every_recorded_package_is_pinned() {
        let pins: Vec<(String, String)> = REQUIREMENTS
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(|l| {
                let (name, version) = l.split_once("==").expect("an exact pin");
                (name.to_ascii_lowercase(), version.to_string())
            })
            .collect();
        for name in SCIENTIFIC_PACKAGES {
            let n = pins
                .iter()
                .filter(|(p, _)| *p == name.to_ascii_lowercase())
                .count();
            assert_eq!(n, 1, "{name} pinned {n} times");
        }
        let mut names: Vec<&String> = pins.iter().map(|(n, _)| n).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), pins.len(), "a package is pinned twice");
    }

    #[test]
    fn missing_lists_absent_and_unknown_packages() {
        let env = PythonEnvironment {
            interpreter: "python3".into(),
            source: InterpreterSource::SystemFallback,
            executable: "/usr/bin/python3".into(),
            python_version: "3.11.7".into(),
            packages: [
                ("numpy".to_string(), Some("2.4.6".to_string())),
                ("pandas".to_string(), None),
            ]
            .into_iter()
            .collect(),
        };
        assert_eq!(env.missing(CORE_PACKAGES), ["pandas"]);
        assert!(!env.has_core_packages());
        assert!(env.summary().contains("missing pandas, scipy"));
    }
}
