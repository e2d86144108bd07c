//! The authoring layout of the paper (§3.5, Appendix C.6–C.7, E) and the
//! export to it from the release layout.
//!
//! ```text
//! <root>/tasks/<event_id>/<task_id>/question_en.md     public question
//! <root>/tasks/<event_id>/<task_id>/solution_en.md     expert solution   (hidden)
//! <root>/tasks/<event_id>/<task_id>/computed_gt.json   ground truth      (hidden)
//! <root>/tasks/<event_id>/<task_id>/compute_gt.py      its program       (hidden)
//! <root>/tasks/<event_id>/<task_id>/review.json        review record     (hidden)
//! <root>/event_packages/standard_event_packages/packages/<event_id>/data/...
//! <root>/event_packages/standard_event_packages/packages/<event_id>/metadata/event.json
//! <root>/event_packages/standard_event_packages/packages/<event_id>/metadata/files.csv
//! ```
//!
//! Task folders sit three levels below the root because the release's
//! `compute_gt.py` programs find the packages at
//! `Path(__file__).resolve().parents[3] / "event_packages" / ...`, so a
//! program exported here runs unchanged and writes `computed_gt.json`
//! beside itself.
//!
//! `review.json` holds the task's descriptive fields (title, labels,
//! rationales, and any field not written elsewhere), so that
//! release → authoring → [`load_authoring`] gives back equal [`Task`]s.
//! `metadata/event.json` is the task's `event` record and
//! `metadata/files.csv` its `event_files` inventory (fields without a
//! column go, as JSON, into the `extra_json` column; an empty cell is an
//! empty string unless the column is listed under [`ABSENT_COLUMNS_KEY`]).
//!
//! By default the files of the package `data/` folder are **hard-linked**
//! to the release's (copied when the two are on different file systems);
//! [`DataMode::Symlink`] makes `data/` one symlink instead (enough to run
//! `compute_gt.py`, but the evidence resolver refuses to follow it out of
//! the package) and [`DataMode::Copy`] copies everything.

use crate::error::{PackageError, Result};
use crate::release::{parse_json_record, LoadError, Release, PACKAGE_PATH_PREFIX};
use crate::task::{Event, FileRecord, Task};
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Columns of `metadata/files.csv`, in order.
pub const FILES_CSV_COLUMNS: [&str; 17] = [
    "file_id",
    "relative_path",
    "repository_path",
    "viewer_path",
    "category",
    "layer_name",
    "source_id",
    "source_name",
    "source_type",
    "source_url",
    "bytes",
    "sha256_16",
    "status",
    "preview_type",
    "mime_type",
    "format",
    "extra_json",
];

/// Key in `extra_json` listing the columns a record does not have (so an
/// empty cell can mean an empty string, and absent fields stay absent).
pub const ABSENT_COLUMNS_KEY: &str = "__absent_columns__";

/// Fields of a task written to files other than `review.json`.
const TASK_FIELDS_ELSEWHERE: [&str; 6] = [
    "question",
    "solution",
    "ground_truth",
    "compute_gt_py",
    "event",
    "event_files",
];

/// Which tasks to export.
#[derive(Debug, Clone, Default)]
pub struct ExportFilter {
    /// Only these task ids (all when `None`).
    pub task_ids: Option<BTreeSet<String>>,
    /// Only tasks of these events (all when `None`).
    pub event_ids: Option<BTreeSet<String>>,
    /// How package data is placed.
    pub data_mode: DataMode,
}

impl ExportFilter {
    /// Every task, data symlinked.
    pub fn all() -> Self {
        Self::default()
    }

    /// Whether `task` passes the filter.
    pub fn accepts(&self, task: &Task) -> bool {
        self.task_ids
            .as_ref()
            .is_none_or(|ids| ids.contains(&task.task_id))
            && self
                .event_ids
                .as_ref()
                .is_none_or(|ids| ids.contains(&task.event_id))
    }
}

/// How the package `data/` folder is placed in an export.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DataMode {
    /// Hard links to the release's files where the file system allows
    /// (instant, no space), copies elsewhere. The exported package is
    /// self-contained: [`crate::evidence::resolve`] reads from it.
    #[default]
    HardLinkOrCopy,
    /// A symlink to the release's `data/` folder: cheapest, and enough for
    /// running `compute_gt.py`, but [`crate::evidence::resolve`] refuses
    /// reads through it because it leads outside the package.
    Symlink,
    /// A full copy.
    Copy,
}

/// What an export wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// The export root.
    pub root: PathBuf,
    /// Task folders written (task id, folder).
    pub tasks: Vec<(String, PathBuf)>,
    /// Event package folders written.
    pub events: Vec<String>,
    /// Events whose package `data/` folder is absent from the release.
    pub missing_packages: Vec<String>,
}

/// The task folder of `task_id` in an authoring root.
pub fn task_dir(root: &Path, event_id: &str, task_id: &str) -> PathBuf {
    root.join("tasks").join(event_id).join(task_id)
}

/// The package folder of `event_id` in an authoring root.
pub fn package_dir(root: &Path, event_id: &str) -> PathBuf {
    root.join(PACKAGE_PATH_PREFIX).join(event_id)
}

/// Whether `root` is in the authoring layout.
pub fn is_authoring_layout(root: &Path) -> bool {
    root.join(PACKAGE_PATH_PREFIX).is_dir() && root.join("tasks").is_dir()
}

/// Writes the tasks of `release` accepted by `filter` to `dest` in the
/// authoring layout, synthesising `metadata/event.json` and
/// `metadata/files.csv` from the first exported task of each event.
pub fn export_authoring(
    release: &Release,
    dest: &Path,
    filter: &ExportFilter,
) -> Result<ExportSummary> {
    let mut summary = ExportSummary {
        root: dest.to_path_buf(),
        ..ExportSummary::default()
    };
    let mut events_done = BTreeSet::new();
    for task in release.tasks().iter().filter(|t| filter.accepts(t)) {
        let dir = task_dir(dest, &task.event_id, &task.task_id);
        write_task(task, &dir)?;
        summary.tasks.push((task.task_id.clone(), dir));
        if events_done.insert(task.event_id.clone()) {
            let package = package_dir(dest, &task.event_id);
            write_metadata(task, &package)?;
            let source = release.task_package_dir(task).join("data");
            if source.is_dir() {
                place_data(&source, &package.join("data"), filter.data_mode)?;
            } else {
                tracing::warn!(event = %task.event_id, "package data folder missing");
                summary.missing_packages.push(task.event_id.clone());
            }
            summary.events.push(task.event_id.clone());
        }
    }
    Ok(summary)
}

fn write_file(path: &Path, contents: &[u8]) -> Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| PackageError::io(parent, e))?;
    }
    std::fs::write(path, contents).map_err(|e| PackageError::io(path, e))
}

fn to_json_pretty(path: &Path, value: &impl serde::Serialize) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| PackageError::Json {
        path: path.to_path_buf(),
        field: ".".into(),
        message: e.to_string(),
    })?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn write_task(task: &Task, dir: &Path) -> Result<()> {
    write_file(&dir.join("question_en.md"), task.question.as_bytes())?;
    if let Some(solution) = &task.solution {
        write_file(&dir.join("solution_en.md"), solution.as_bytes())?;
    }
    if let Some(program) = &task.compute_gt_py {
        write_file(&dir.join("compute_gt.py"), program.as_bytes())?;
    }
    let gt_path = dir.join("computed_gt.json");
    write_file(&gt_path, &to_json_pretty(&gt_path, &task.ground_truth)?)?;
    let review_path = dir.join("review.json");
    let mut review = match serde_json::to_value(task) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    };
    for field in TASK_FIELDS_ELSEWHERE {
        review.remove(field);
    }
    write_file(&review_path, &to_json_pretty(&review_path, &review)?)
}

fn write_metadata(task: &Task, package: &Path) -> Result<()> {
    let event_path = package.join("metadata").join("event.json");
    let event = match &task.event {
        Some(event) => serde_json::to_value(event).unwrap_or(Value::Null),
        None => serde_json::json!({
            "package_id": task.event_id,
            "event_name": task.event_name,
            "hazard_family": task.hazard_family,
            "hazard_label": task.hazard_label,
            "region": task.region,
            "scale": task.scale,
        }),
    };
    write_file(&event_path, &to_json_pretty(&event_path, &event)?)?;
    let csv_path = package.join("metadata").join("files.csv");
    write_file(&csv_path, &files_csv(&csv_path, &task.event_files)?)
}

/// Renders an `event_files` inventory as `files.csv`.
pub fn files_csv(path: &Path, records: &[FileRecord]) -> Result<Vec<u8>> {
    let csv_error = |e: csv::Error| PackageError::Csv {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(FILES_CSV_COLUMNS).map_err(csv_error)?;
    for record in records {
        let mut map = match serde_json::to_value(record) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        let mut row = Vec::with_capacity(FILES_CSV_COLUMNS.len());
        let mut absent = Vec::new();
        for column in &FILES_CSV_COLUMNS[..FILES_CSV_COLUMNS.len() - 1] {
            row.push(match map.remove(*column) {
                Some(Value::String(s)) => s,
                Some(other) => other.to_string(),
                None => {
                    absent.push(Value::String((*column).to_string()));
                    String::new()
                }
            });
        }
        if !absent.is_empty() {
            map.insert(ABSENT_COLUMNS_KEY.into(), Value::Array(absent));
        }
        row.push(if map.is_empty() {
            String::new()
        } else {
            Value::Object(map).to_string()
        });
        writer.write_record(&row).map_err(csv_error)?;
    }
    writer.into_inner().map_err(|e| PackageError::Csv {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// Parses a `files.csv` back into inventory records.
pub fn parse_files_csv(
    path: &Path,
    bytes: &[u8],
) -> std::result::Result<Vec<FileRecord>, LoadError> {
    let load_error = |field: String, message: String| LoadError {
        path: path.to_path_buf(),
        field,
        message,
    };
    let mut reader = csv::Reader::from_reader(bytes);
    let headers = reader
        .headers()
        .map_err(|e| load_error("header".into(), e.to_string()))?
        .clone();
    let mut out = Vec::new();
    for (index, row) in reader.records().enumerate() {
        let row = row.map_err(|e| load_error(format!("row {}", index + 2), e.to_string()))?;
        let mut map = Map::new();
        for (column, cell) in headers.iter().zip(row.iter()) {
            if column == "extra_json" {
                if cell.is_empty() {
                    continue;
                }
                match serde_json::from_str::<Value>(cell) {
                    Ok(Value::Object(extra)) => map.extend(extra),
                    _ => {
                        return Err(load_error(
                            format!("row {} extra_json", index + 2),
                            "not a JSON object".into(),
                        ))
                    }
                }
            } else if column == "bytes" {
                if cell.is_empty() {
                    continue;
                }
                let n: u64 = cell.parse().map_err(|_| {
                    load_error(
                        format!("row {} bytes", index + 2),
                        format!("not a byte count: {cell:?}"),
                    )
                })?;
                map.insert(column.to_string(), Value::from(n));
            } else {
                map.insert(column.to_string(), Value::String(cell.to_string()));
            }
        }
        if let Some(Value::Array(absent)) = map.remove(ABSENT_COLUMNS_KEY) {
            for column in absent.iter().filter_map(Value::as_str) {
                map.remove(column);
            }
        }
        let record: FileRecord = serde_json::from_value(Value::Object(map))
            .map_err(|e| load_error(format!("row {}", index + 2), e.to_string()))?;
        out.push(record);
    }
    Ok(out)
}

fn place_data(source: &Path, target: &Path, mode: DataMode) -> Result<()> {
    if target.exists() || target.symlink_metadata().is_ok() {
        return Ok(());
    }
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent).map_err(|e| PackageError::io(parent, e))?;
    }
    match mode {
        DataMode::Symlink => {
            let absolute = source
                .canonicalize()
                .map_err(|e| PackageError::io(source, e))?;
            symlink_dir(&absolute, target).map_err(|e| PackageError::io(target, e))
        }
        DataMode::Copy => copy_tree(source, target, false),
        DataMode::HardLinkOrCopy => copy_tree(source, target, true),
    }
}

#[cfg(unix)]
fn symlink_dir(source: &Path, target: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(source, target)
}

#[cfg(windows)]
fn symlink_dir(source: &Path, target: &Path) -> std::io::Result<()> {
    std::os::windows::fs::symlink_dir(source, target)
}

fn copy_tree(source: &Path, target: &Path, hard_link: bool) -> Result<()> {
    for entry in walkdir::WalkDir::new(source).follow_links(false) {
        let entry = entry.map_err(|e| PackageError::Io {
            path: source.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let Ok(relative) = entry.path().strip_prefix(source) else {
            continue;
        };
        let destination = target.join(relative);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&destination).map_err(|e| PackageError::io(&destination, e))?;
        } else if entry.file_type().is_file() {
            if hard_link && std::fs::hard_link(entry.path(), &destination).is_ok() {
                continue;
            }
            std::fs::copy(entry.path(), &destination)
                .map_err(|e| PackageError::io(&destination, e))?;
        }
    }
    Ok(())
}

/// Loads a release in the authoring layout. Task folders that fail to load
/// are recorded as [`LoadError`]s; the rest still load.
pub fn load_authoring(root: &Path) -> Result<Release> {
    let tasks_root = root.join("tasks");
    let mut task_dirs = Vec::new();
    for event_entry in
        std::fs::read_dir(&tasks_root).map_err(|e| PackageError::io(&tasks_root, e))?
    {
        let event_entry = event_entry.map_err(|e| PackageError::io(&tasks_root, e))?;
        let event_path = event_entry.path();
        if !event_path.is_dir() {
            continue;
        }
        for task_entry in
            std::fs::read_dir(&event_path).map_err(|e| PackageError::io(&event_path, e))?
        {
            let task_entry = task_entry.map_err(|e| PackageError::io(&event_path, e))?;
            if task_entry.path().join("question_en.md").is_file() {
                task_dirs.push(task_entry.path());
            }
        }
    }
    task_dirs.sort();
    let mut tasks = Vec::new();
    let mut errors = Vec::new();
    for dir in task_dirs {
        match load_authoring_task(root, &dir) {
            Ok(task) => tasks.push(task),
            Err(e) => {
                tracing::warn!(error = %e, "authoring task not loaded");
                errors.push(e);
            }
        }
    }
    Ok(Release::from_parts(
        root.to_path_buf(),
        root.join(PACKAGE_PATH_PREFIX),
        tasks,
        errors,
    ))
}

fn read_optional(path: &Path) -> std::result::Result<Option<Vec<u8>>, LoadError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(LoadError {
            path: path.to_path_buf(),
            field: ".".into(),
            message: e.to_string(),
        }),
    }
}

fn load_authoring_task(root: &Path, dir: &Path) -> std::result::Result<Task, LoadError> {
    let name = |p: &Path| {
        p.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    let task_id = name(dir);
    let event_id = dir.parent().map(name).unwrap_or_default();
    let mut map: Map<String, Value> = match read_optional(&dir.join("review.json"))? {
        Some(bytes) => parse_json_record(&dir.join("review.json"), &bytes)?,
        None => Map::new(),
    };
    map.entry("task_id")
        .or_insert_with(|| Value::String(task_id));
    map.entry("event_id")
        .or_insert_with(|| Value::String(event_id.clone()));
    let question_path = dir.join("question_en.md");
    let question = read_optional(&question_path)?.unwrap_or_default();
    map.insert(
        "question".into(),
        Value::String(String::from_utf8_lossy(&question).into_owned()),
    );
    if let Some(solution) = read_optional(&dir.join("solution_en.md"))? {
        map.insert(
            "solution".into(),
            Value::String(String::from_utf8_lossy(&solution).into_owned()),
        );
    }
    if let Some(program) = read_optional(&dir.join("compute_gt.py"))? {
        map.insert(
            "compute_gt_py".into(),
            Value::String(String::from_utf8_lossy(&program).into_owned()),
        );
    }
    let gt_path = dir.join("computed_gt.json");
    let gt_bytes = read_optional(&gt_path)?.ok_or_else(|| LoadError {
        path: gt_path.clone(),
        field: ".".into(),
        message: "computed_gt.json is missing".into(),
    })?;
    let gt: Value = parse_json_record(&gt_path, &gt_bytes)?;
    map.insert("ground_truth".into(), gt);
    let event_id = map
        .get("event_id")
        .and_then(Value::as_str)
        .unwrap_or(&event_id)
        .to_string();
    let package = package_dir(root, &event_id);
    let event_path = package.join("metadata").join("event.json");
    if let Some(bytes) = read_optional(&event_path)? {
        let event: Event = parse_json_record(&event_path, &bytes)?;
        map.insert(
            "event".into(),
            serde_json::to_value(event).unwrap_or(Value::Null),
        );
    }
    let csv_path = package.join("metadata").join("files.csv");
    if let Some(bytes) = read_optional(&csv_path)? {
        let records = parse_files_csv(&csv_path, &bytes)?;
        map.insert(
            "event_files".into(),
            serde_json::to_value(records).unwrap_or(Value::Null),
        );
    }
    let bytes = serde_json::to_vec(&Value::Object(map)).unwrap_or_default();
    parse_json_record(&dir.join("review.json"), &bytes)
}
