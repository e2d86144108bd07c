//! Ground-truth regeneration (Appendix C.7): re-run every task's
//! `compute_gt.py` and compare the `primary_gt` it writes with the
//! recorded one.
//!
//! How the programs are run, and why:
//!
//! - The release is exported to the paper's authoring layout in a
//!   temporary folder with [`crate::export_authoring`] (package `data/`
//!   symlinked, `metadata/event.json` and `metadata/files.csv` synthesised),
//!   because the release's programs find their package from their own
//!   location (`Path(__file__).resolve().parents[3] / "event_packages" / ...`,
//!   `TASK_DIR.parents[2]`, or by walking up) and write `computed_gt.json`
//!   beside themselves. Some also read `question_en.md` or write
//!   `review.json` there.
//! - The export writes the *recorded* ground truth to `computed_gt.json`;
//!   it is deleted before the program runs, so a program that writes
//!   nothing cannot pass.
//! - Each program runs as `<python> compute_gt.py` with the task folder as
//!   working directory, stdin closed, stdout and stderr to files,
//!   `PYTHONHASHSEED=0`, `PYTHONDONTWRITEBYTECODE=1`, and a per-task timeout
//!   (killed when exceeded). Tasks run in parallel on a dedicated pool.
//! - The program's output is `computed_gt.json` (or, failing that, a JSON
//!   object with `primary_gt` printed on stdout); its `primary_gt` is
//!   compared with the recorded one by **exact JSON equality**: same keys
//!   (order ignored), same strings, numbers equal in kind and value
//!   (`24` ≠ `24.0`, as Python's `json` would also write them differently).
//! - A failure names its reason: no program, a missing Python module
//!   (parsed from `ModuleNotFoundError`), a missing file (from
//!   `FileNotFoundError`), a timeout, another error of the program (its
//!   last stderr line), no output, or output without `primary_gt`.
//!
//! Python is found by [`resolve_python`]: an explicit path, else
//! `$EARTHVERSE_PYTHON`, else `python3` on `PATH`. `scripts/python-env.sh`
//! creates a venv with numpy, Pillow and pypdf, which the release's
//! programs import.

use crate::authoring::{export_authoring, task_dir, DataMode, ExportFilter};
use crate::error::{PackageError, Result};
use crate::release::Release;
use crate::task::Task;
use rayon::prelude::*;
use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Environment variable naming the Python interpreter to use.
pub const PYTHON_ENV_VAR: &str = "EARTHVERSE_PYTHON";

/// Default per-task timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// The interpreter to use: `explicit`, else `$EARTHVERSE_PYTHON`, else `python3`.
pub fn resolve_python(explicit: Option<&Path>) -> PathBuf {
    if let Some(path) = explicit {
        return path.to_path_buf();
    }
    match std::env::var_os(PYTHON_ENV_VAR) {
        Some(value) if !value.is_empty() => PathBuf::from(value),
        _ => PathBuf::from("python3"),
    }
}

/// A relative path with a directory part made absolute against the current
/// directory; a bare name (`python3`) is left for `PATH` lookup.
fn absolute_program(program: &Path) -> PathBuf {
    if program.is_relative() && program.components().count() > 1 {
        if let Ok(cwd) = std::env::current_dir() {
            return cwd.join(program);
        }
    }
    program.to_path_buf()
}

/// How to regenerate ground truth.
#[derive(Debug, Clone)]
pub struct RegenerateOptions {
    /// The interpreter (see [`resolve_python`]).
    pub python: PathBuf,
    /// Per-task wall-clock limit.
    pub timeout: Duration,
    /// Programs run at once (0: one per available core).
    pub jobs: usize,
    /// Only these tasks (all when `None`).
    pub task_ids: Option<BTreeSet<String>>,
    /// Export here and keep it, instead of a temporary folder.
    pub work_dir: Option<PathBuf>,
}

impl Default for RegenerateOptions {
    fn default() -> Self {
        RegenerateOptions {
            python: resolve_python(None),
            timeout: DEFAULT_TIMEOUT,
            jobs: 0,
            task_ids: None,
            work_dir: None,
        }
    }
}

/// Why a task's ground truth could not be regenerated.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GtFailure {
    /// The task has no `compute_gt_py`.
    NoProgram,
    /// The interpreter could not be started.
    PythonUnavailable {
        /// The error from the operating system.
        message: String,
    },
    /// The program imports a module the interpreter lacks.
    MissingPythonModule {
        /// The module named by `ModuleNotFoundError`.
        module: String,
    },
    /// The program opened a file that does not exist.
    MissingFile {
        /// The path, relative to the authoring root when inside it.
        path: String,
    },
    /// The program ran longer than the timeout and was killed.
    Timeout {
        /// The limit, in seconds.
        seconds: u64,
    },
    /// The program exited with an error.
    ScriptError {
        /// The exit code (none when killed by a signal).
        exit_code: Option<i32>,
        /// The last line of its stderr.
        message: String,
    },
    /// The program succeeded but wrote no `computed_gt.json`.
    NoOutput,
    /// The output is not valid JSON.
    BadOutput {
        /// The parser's message.
        message: String,
    },
    /// The output has no `primary_gt`.
    NoPrimaryGt,
}

impl std::fmt::Display for GtFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GtFailure::NoProgram => write!(f, "no compute_gt_py"),
            GtFailure::PythonUnavailable { message } => write!(f, "python unavailable: {message}"),
            GtFailure::MissingPythonModule { module } => {
                write!(f, "missing Python module `{module}`")
            }
            GtFailure::MissingFile { path } => write!(f, "missing file {path}"),
            GtFailure::Timeout { seconds } => write!(f, "timed out after {seconds} s"),
            GtFailure::ScriptError { exit_code, message } => match exit_code {
                Some(code) => write!(f, "exit code {code}: {message}"),
                None => write!(f, "killed by a signal: {message}"),
            },
            GtFailure::NoOutput => write!(f, "no computed_gt.json written"),
            GtFailure::BadOutput { message } => write!(f, "output is not JSON: {message}"),
            GtFailure::NoPrimaryGt => write!(f, "output has no primary_gt"),
        }
    }
}

/// A task whose regenerated `primary_gt` differs from the recorded one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GtDifference {
    /// The task id.
    pub task_id: String,
    /// JSON pointer of the first difference (`""` for the root).
    pub first_difference: String,
    /// The recorded value there (`null` when absent).
    pub recorded: Value,
    /// The regenerated value there (`null` when absent).
    pub regenerated: Value,
}

/// A task whose ground truth could not be regenerated.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GtFailed {
    /// The task id.
    pub task_id: String,
    /// Why.
    pub reason: GtFailure,
    /// The reason as a sentence.
    pub message: String,
    /// The tail of the program's stderr (up to 2,000 characters).
    pub stderr_tail: String,
}

/// The outcome of [`regenerate_ground_truth`].
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GtRegenerationReport {
    /// The interpreter used.
    pub python: String,
    /// Its `--version`, when it ran.
    pub python_version: Option<String>,
    /// Tasks attempted.
    pub tasks: usize,
    /// Tasks whose `primary_gt` regenerated identically.
    pub identical: usize,
    /// Their ids.
    pub identical_tasks: Vec<String>,
    /// Tasks whose `primary_gt` differs.
    pub differs: Vec<GtDifference>,
    /// Tasks that failed, with the reason.
    pub failed: Vec<GtFailed>,
    /// Wall-clock seconds for the whole regeneration.
    pub seconds: f64,
}

/// One task's outcome.
pub(crate) enum Outcome {
    Identical,
    Differs(GtDifference),
    Failed(GtFailure, String),
}

/// Exports `release` to the authoring layout and re-runs every task's
/// `compute_gt.py`, comparing `primary_gt` exactly.
pub fn regenerate_ground_truth(
    release: &Release,
    options: &RegenerateOptions,
) -> Result<GtRegenerationReport> {
    let started = Instant::now();
    let (python, outcomes) =
        run_exported(release, options, |task, dir, root, options| {
            match &task.compute_gt_py {
                None => Outcome::Failed(GtFailure::NoProgram, String::new()),
                Some(_) => run_one(
                    dir,
                    root,
                    &task.ground_truth.primary_gt,
                    &task.task_id,
                    options,
                    &Launch::default(),
                ),
            }
        })?;
    let mut report = GtRegenerationReport {
        python_version: python_version(&python),
        python: python.display().to_string(),
        tasks: outcomes.len(),
        ..GtRegenerationReport::default()
    };
    for (task_id, outcome) in outcomes {
        match outcome {
            Outcome::Identical => {
                report.identical += 1;
                report.identical_tasks.push(task_id);
            }
            Outcome::Differs(diff) => report.differs.push(diff),
            Outcome::Failed(reason, stderr_tail) => report.failed.push(GtFailed {
                task_id,
                message: reason.to_string(),
                reason,
                stderr_tail,
            }),
        }
    }
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Exports the tasks `options` selects to the authoring layout (in
/// `options.work_dir` or a temporary folder) and calls `each(task, task
/// folder, export root, options)` for every one of them on a pool of
/// `options.jobs` threads. Returns the absolute interpreter and the
/// results in task order.
///
/// A release whose tasks have packages of their own
/// ([`Release::task_package_dir`]) is exported one task per folder
/// (`<root>/<task_id>/`), since the authoring layout holds one package per
/// event and the programs find it by their event id.
pub(crate) fn run_exported<T: Send>(
    release: &Release,
    options: &RegenerateOptions,
    each: impl Fn(&Task, &Path, &Path, &RegenerateOptions) -> T + Sync,
) -> Result<(PathBuf, Vec<(String, T)>)> {
    // Programs run in their task folders: a relative interpreter path
    // (`.venv-gt/bin/python`) must be made absolute first.
    let mut options = options.clone();
    options.python = absolute_program(&options.python);
    let options = &options;
    let temp;
    let root = match &options.work_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| PackageError::io(dir, e))?;
            dir.clone()
        }
        None => {
            temp = tempfile::Builder::new()
                .prefix("earthverse-regenerate-")
                .tempdir()
                .map_err(|e| PackageError::io(std::env::temp_dir(), e))?;
            temp.path().to_path_buf()
        }
    };
    let filter = ExportFilter {
        task_ids: options.task_ids.clone(),
        event_ids: None,
        data_mode: DataMode::Symlink,
    };
    let tasks: Vec<&Task> = release
        .tasks()
        .iter()
        .filter(|t| filter.accepts(t))
        .collect();
    // (task, its export root)
    let mut placed: Vec<(&Task, PathBuf)> = Vec::with_capacity(tasks.len());
    if release.has_task_packages() {
        for task in &tasks {
            let task_root = root.join(&task.task_id);
            let one = ExportFilter {
                task_ids: Some(BTreeSet::from([task.task_id.clone()])),
                ..filter.clone()
            };
            let summary = export_authoring(release, &task_root, &one)?;
            for event_id in &summary.events {
                add_authoring_csv_aliases(&crate::authoring::package_dir(&task_root, event_id))?;
            }
            placed.push((task, task_root));
        }
    } else {
        let summary = export_authoring(release, &root, &filter)?;
        for event_id in &summary.events {
            add_authoring_csv_aliases(&crate::authoring::package_dir(&root, event_id))?;
        }
        placed.extend(tasks.iter().map(|t| (*t, root.clone())));
    }
    let jobs = if options.jobs == 0 {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        options.jobs
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .build()
        .map_err(|e| PackageError::io(&root, std::io::Error::other(e.to_string())))?;
    let results: Vec<(String, T)> = pool.install(|| {
        placed
            .par_iter()
            .map(|(task, task_root)| {
                let dir = task_dir(task_root, &task.event_id, &task.task_id);
                (task.task_id.clone(), each(task, &dir, task_root, options))
            })
            .collect()
    });
    Ok((options.python.clone(), results))
}

/// How a program is started: directly (`python compute_gt.py`), or through
/// a wrapper script (`python WRAPPER compute_gt.py`) with extra environment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Launch {
    /// The wrapper script, when there is one.
    pub wrapper: Option<PathBuf>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
}

/// Column names of the authoring layout's `metadata/files.csv` that the
/// release's programs read (`row["data_category"]`, `row["file_status"]`,
/// `row["url"]`), and the inventory field each one holds.
pub const FILES_CSV_ALIASES: [(&str, &str); 3] = [
    ("data_category", "category"),
    ("file_status", "status"),
    ("url", "source_url"),
];

/// Adds the [`FILES_CSV_ALIASES`] columns to a package's
/// `metadata/files.csv` when the export did not write them, so that
/// programs written against the original authoring files run unchanged.
fn add_authoring_csv_aliases(package: &Path) -> Result<()> {
    let path = package.join("metadata").join("files.csv");
    let csv_error = |e: csv::Error| PackageError::Csv {
        path: path.clone(),
        message: e.to_string(),
    };
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(PackageError::io(&path, e)),
    };
    let mut reader = csv::Reader::from_reader(bytes.as_slice());
    let headers = reader.headers().map_err(csv_error)?.clone();
    let index = |name: &str| headers.iter().position(|h| h == name);
    let added: Vec<(&str, usize)> = FILES_CSV_ALIASES
        .iter()
        .filter(|(alias, _)| index(alias).is_none())
        .filter_map(|(alias, field)| index(field).map(|i| (*alias, i)))
        .collect();
    if added.is_empty() {
        return Ok(());
    }
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut header_row: Vec<String> = headers.iter().map(String::from).collect();
    header_row.extend(added.iter().map(|(alias, _)| alias.to_string()));
    writer.write_record(&header_row).map_err(csv_error)?;
    for record in reader.records() {
        let record = record.map_err(csv_error)?;
        let mut row: Vec<String> = record.iter().map(String::from).collect();
        row.extend(
            added
                .iter()
                .map(|(_, i)| record.get(*i).unwrap_or("").to_string()),
        );
        writer.write_record(&row).map_err(csv_error)?;
    }
    let out = writer
        .into_inner()
        .map_err(|e| PackageError::io(&path, std::io::Error::other(e.to_string())))?;
    std::fs::write(&path, out).map_err(|e| PackageError::io(&path, e))
}

fn python_version(python: &Path) -> Option<String> {
    let output = Command::new(python)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let text = if text.is_empty() {
        String::from_utf8_lossy(&output.stderr).trim().to_string()
    } else {
        text
    };
    (!text.is_empty()).then_some(text)
}

/// Runs one task's program and then puts the exported (recorded) ground
/// truth back, keeping the program's output beside it as
/// `computed_gt.regenerated.json`, so a kept export (`--keep-export`) still
/// loads as an authoring tree.
pub(crate) fn run_one(
    dir: &Path,
    root: &Path,
    recorded: &Value,
    task_id: &str,
    options: &RegenerateOptions,
    launch: &Launch,
) -> Outcome {
    let output_path = dir.join("computed_gt.json");
    let original = std::fs::read(&output_path).ok();
    let outcome = run_program(dir, root, recorded, task_id, options, launch);
    if let Some(original) = original {
        if output_path.exists() {
            let _ = std::fs::rename(&output_path, dir.join("computed_gt.regenerated.json"));
        }
        if let Err(e) = std::fs::write(&output_path, original) {
            tracing::warn!(
                task = task_id,
                "cannot restore {}: {e}",
                output_path.display()
            );
        }
    }
    outcome
}

fn run_program(
    dir: &Path,
    root: &Path,
    recorded: &Value,
    task_id: &str,
    options: &RegenerateOptions,
    launch: &Launch,
) -> Outcome {
    let output_path = dir.join("computed_gt.json");
    // The export holds the recorded ground truth here: remove it so only
    // the program's own output can be compared.
    if let Err(e) = std::fs::remove_file(&output_path) {
        if e.kind() != std::io::ErrorKind::NotFound {
            return Outcome::Failed(
                GtFailure::ScriptError {
                    exit_code: None,
                    message: format!("cannot clear {}: {e}", output_path.display()),
                },
                String::new(),
            );
        }
    }
    let stdout_path = dir.join(".regenerate.stdout");
    let stderr_path = dir.join(".regenerate.stderr");
    let files = std::fs::File::create(&stdout_path)
        .and_then(|out| Ok((out, std::fs::File::create(&stderr_path)?)));
    let (stdout, stderr) = match files {
        Ok(pair) => pair,
        Err(e) => {
            return Outcome::Failed(
                GtFailure::ScriptError {
                    exit_code: None,
                    message: format!("cannot create output files: {e}"),
                },
                String::new(),
            )
        }
    };
    let mut command = Command::new(&options.python);
    if let Some(wrapper) = &launch.wrapper {
        command.arg(wrapper);
    }
    command.envs(launch.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let spawned = command
        .arg("compute_gt.py")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .env("PYTHONHASHSEED", "0")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            return Outcome::Failed(
                GtFailure::PythonUnavailable {
                    message: format!("{}: {e}", options.python.display()),
                },
                String::new(),
            )
        }
    };
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() >= options.timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => {
                let _ = child.kill();
                break None;
            }
        }
    };
    let stderr_text = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let tail = tail_chars(&stderr_text, 2000);
    let Some(status) = status else {
        tracing::warn!(task = task_id, "compute_gt.py timed out");
        return Outcome::Failed(
            GtFailure::Timeout {
                seconds: options.timeout.as_secs(),
            },
            tail,
        );
    };
    if !status.success() {
        return Outcome::Failed(classify_error(&stderr_text, root, status.code()), tail);
    }
    let document = match std::fs::read(&output_path) {
        Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(value) => value,
            Err(e) => {
                return Outcome::Failed(
                    GtFailure::BadOutput {
                        message: e.to_string(),
                    },
                    tail,
                )
            }
        },
        Err(_) => {
            let stdout_text = std::fs::read_to_string(&stdout_path).unwrap_or_default();
            match serde_json::from_str::<Value>(stdout_text.trim()) {
                Ok(value) if value.get("primary_gt").is_some() => value,
                _ => return Outcome::Failed(GtFailure::NoOutput, tail),
            }
        }
    };
    let Some(regenerated) = document.get("primary_gt") else {
        return Outcome::Failed(GtFailure::NoPrimaryGt, tail);
    };
    match first_difference(recorded, regenerated, String::new()) {
        None => Outcome::Identical,
        Some((pointer, a, b)) => Outcome::Differs(GtDifference {
            task_id: task_id.to_string(),
            first_difference: pointer,
            recorded: a,
            regenerated: b,
        }),
    }
}

fn tail_chars(text: &str, max: usize) -> String {
    let count = text.chars().count();
    text.chars().skip(count.saturating_sub(max)).collect()
}

/// Names the reason of a failed run from its stderr.
fn classify_error(stderr: &str, root: &Path, exit_code: Option<i32>) -> GtFailure {
    let last_line = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim()
        .to_string();
    if let Some(rest) = last_line.strip_prefix("ModuleNotFoundError: No module named ") {
        let module = rest.trim().trim_matches(['\'', '"']);
        let top = module.split('.').next().unwrap_or(module);
        return GtFailure::MissingPythonModule {
            module: top.to_string(),
        };
    }
    if last_line.starts_with("FileNotFoundError:") {
        let path = last_line
            .rsplit_once(": ")
            .map(|(_, p)| p.trim().trim_matches(['\'', '"']).to_string())
            .unwrap_or_default();
        let root_text = root.display().to_string();
        let relative = path
            .strip_prefix(&root_text)
            .map(|p| p.trim_start_matches('/').to_string())
            .unwrap_or(path);
        return GtFailure::MissingFile { path: relative };
    }
    GtFailure::ScriptError {
        exit_code,
        message: last_line,
    }
}

/// The first place (JSON pointer) where two values differ, with the values
/// there; `None` when they are exactly equal.
pub fn first_difference(a: &Value, b: &Value, pointer: String) -> Option<(String, Value, Value)> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let here = format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1"));
                match (x.get(key), y.get(key)) {
                    (Some(va), Some(vb)) => {
                        if let Some(found) = first_difference(va, vb, here) {
                            return Some(found);
                        }
                    }
                    (va, vb) => {
                        return Some((
                            here,
                            va.cloned().unwrap_or(Value::Null),
                            vb.cloned().unwrap_or(Value::Null),
                        ))
                    }
                }
            }
            None
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (va, vb)) in x.iter().zip(y).enumerate() {
                if let Some(found) = first_difference(va, vb, format!("{pointer}/{i}")) {
                    return Some(found);
                }
            }
            if x.len() != y.len() {
                let i = x.len().min(y.len());
                return Some((
                    format!("{pointer}/{i}"),
                    x.get(i).cloned().unwrap_or(Value::Null),
                    y.get(i).cloned().unwrap_or(Value::Null),
                ));
            }
            None
        }
        _ if a == b => None,
        _ => Some((pointer, a.clone(), b.clone())),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn differences_are_exact_and_located() {
        assert_eq!(
            first_difference(&json!({"a": [1, 2]}), &json!({"a": [1, 2]}), String::new()),
            None
        );
        let (at, a, b) = first_difference(
            &json!({"a": {"b": 24}}),
            &json!({"a": {"b": 24.0}}),
            String::new(),
        )
        .unwrap();
        assert_eq!((at.as_str(), a, b), ("/a/b", json!(24), json!(24.0)));
        let (at, _, b) = first_difference(&json!([1]), &json!([1, 2]), String::new()).unwrap();
        assert_eq!((at.as_str(), b), ("/1", json!(2)));
        let (at, a, _) = first_difference(&json!({"x/y": 1}), &json!({}), String::new()).unwrap();
        assert_eq!((at.as_str(), a), ("/x~1y", json!(1)));
    }

    #[test]
    fn failures_are_named_from_stderr() {
        let root = Path::new("/tmp/root");
        let cases = [
            (
                "Traceback...\nModuleNotFoundError: No module named 'numpy.linalg'\n",
                GtFailure::MissingPythonModule { module: "numpy".into() },
            ),
            (
                "FileNotFoundError: [Errno 2] No such file or directory: '/tmp/root/event_packages/x/data/a.tif'\n",
                GtFailure::MissingFile { path: "event_packages/x/data/a.tif".into() },
            ),
            (
                "ValueError: bad\n\n",
                GtFailure::ScriptError { exit_code: Some(1), message: "ValueError: bad".into() },
            ),
        ];
        for (stderr, expected) in cases {
            assert_eq!(classify_error(stderr, root, Some(1)), expected);
        }
    }
}
