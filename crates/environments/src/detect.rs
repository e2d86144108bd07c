//! Detection: a Python library importable in the scientific interpreter at
//! the version pinned in `crates/sandbox/python-requirements.txt`; a runtime
//! whose binaries are on `PATH` (and whose own files exist).

use crate::catalog::{EnvKind, Environment};
use crate::error::{EnvironmentError, Result};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Where detection looks.
#[derive(Debug, Clone, Default)]
pub struct DetectionContext {
    /// The scientific interpreter (the one `python_exec` runs).
    pub python: PathBuf,
    /// The `PATH` searched for runtimes; `None`: the process's `PATH`.
    pub path: Option<OsString>,
}

/// What detection found for an available environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Detected {
    /// The library version (Python) or the resolved binaries (runtime).
    pub found: Vec<String>,
    /// Versions asked of the environment itself at detection: the Python
    /// distribution's installed version (`metpy` → `1.7.1`); for a runtime,
    /// the first line each binary prints for its version (`cdo --version`,
    /// `ncks --version`, `ncl -V`, `Rscript --version`, `gfortran
    /// -dumpfullversion`, `julia --version`) and an R package's
    /// `DESCRIPTION` version (`evd`). Recorded in each run's
    /// `required_tools.versions`.
    pub versions: BTreeMap<String, String>,
}

/// The arguments that make a runtime binary print its version.
fn version_args(binary: &str) -> Option<&'static [&'static str]> {
    Some(match binary {
        "cdo" | "ncks" | "Rscript" | "julia" => &["--version"],
        "ncl" => &["-V"],
        "gfortran" => &["-dumpfullversion"],
        _ => return None,
    })
}

/// The first non-empty line `program args` prints (stdout, else stderr),
/// within 20 seconds.
async fn first_line(program: &Path, args: &[&str]) -> Option<String> {
    let run = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(20), run)
        .await
        .ok()?
        .ok()?;
    [out.stdout, out.stderr].iter().find_map(|bytes| {
        String::from_utf8_lossy(bytes)
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .map(str::to_string)
    })
}

/// The `Version:` of an R package's `DESCRIPTION` file.
fn description_version(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Version:").map(|v| v.trim().to_string()))
}

/// The version pinned for `distribution` in the requirements file.
pub fn pinned_version(distribution: &str) -> Option<&'static str> {
    let norm = |s: &str| s.trim().to_ascii_lowercase().replace(['_', '.'], "-");
    earthverse_sandbox::REQUIREMENTS.lines().find_map(|line| {
        let line = line.split('#').next()?.trim();
        let (name, version) = line.split_once("==")?;
        (norm(name) == norm(distribution)).then_some(version.trim())
    })
}

/// Finds `program` on `path` (or the process's `PATH`).
pub fn find_on_path(program: &str, path: Option<&OsString>) -> Option<PathBuf> {
    let owned;
    let path = match path {
        Some(p) => p,
        None => {
            owned = std::env::var_os("PATH")?;
            &owned
        }
    };
    std::env::split_paths(path)
        .map(|d| d.join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Checks that `env` can run here; `Err` names what is missing and how to
/// install it.
pub async fn detect(env: &Environment, ctx: &DetectionContext) -> Result<Detected> {
    let missing = |missing: String| EnvironmentError::Missing {
        environment: env.name.to_string(),
        missing,
        hint: env.install_hint.to_string(),
    };
    match env.kind {
        EnvKind::PythonLibrary { distribution } => {
            let pinned = pinned_version(distribution).ok_or_else(|| {
                missing(format!(
                    "{distribution} is not pinned in crates/sandbox/python-requirements.txt"
                ))
            })?;
            let probe = format!(
                "import importlib.metadata as m\ntry:\n    print(m.version({distribution:?}))\nexcept m.PackageNotFoundError:\n    print('')\n"
            );
            let out = tokio::process::Command::new(&ctx.python)
                .args(["-I", "-c", &probe])
                .stdin(std::process::Stdio::null())
                .output()
                .await
                .map_err(|e| {
                    missing(format!(
                        "the interpreter {} does not run ({e})",
                        ctx.python.display()
                    ))
                })?;
            let installed = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if installed.is_empty() {
                return Err(missing(format!(
                    "Python library {distribution}=={pinned} is not installed in {}",
                    ctx.python.display()
                )));
            }
            if installed != pinned {
                return Err(missing(format!(
                    "{} has {distribution} {installed}, the project pins {pinned}",
                    ctx.python.display()
                )));
            }
            Ok(Detected {
                found: vec![format!("{distribution}=={installed}")],
                versions: BTreeMap::from([(distribution.to_string(), installed)]),
            })
        }
        EnvKind::Runtime { binaries, files } => {
            let mut found = Vec::new();
            let mut absent = Vec::new();
            let mut versions = BTreeMap::new();
            for b in binaries {
                match find_on_path(b, ctx.path.as_ref()) {
                    Some(p) => {
                        if let Some(args) = version_args(b) {
                            if let Some(v) = first_line(&p, args).await {
                                versions.insert((*b).to_string(), v);
                            }
                        }
                        found.push(p.display().to_string());
                    }
                    None => absent.push(format!("`{b}` is not on PATH")),
                }
            }
            for f in files {
                let path = Path::new(f);
                if path.exists() {
                    // An R package's DESCRIPTION: record its version.
                    if path.file_name().is_some_and(|n| n == "DESCRIPTION") {
                        let package = path
                            .parent()
                            .and_then(Path::file_name)
                            .map(|n| n.to_string_lossy().into_owned());
                        if let (Some(package), Some(v)) = (package, description_version(path)) {
                            versions.insert(package, v);
                        }
                    }
                    found.push((*f).to_string());
                } else {
                    absent.push(format!("{f} does not exist"));
                }
            }
            if absent.is_empty() {
                Ok(Detected { found, versions })
            } else {
                Err(missing(absent.join(", ")))
            }
        }
    }
}
