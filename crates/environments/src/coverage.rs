//! Which packages hold the inputs an environment's operations need, and how
//! a scripted agent that calls each operation once per compatible package
//! fares: the analogue of Table 14's Success column over a release
//! (App. D.6: success "reflects the overlap between the audited operations
//! and the data actually present in the packages").
//!
//! Compatibility is read from the package's JSON series (Open-Meteo style
//! `daily` / `hourly` blocks of equal-length lists beside `time`): each
//! input of an operation has a role (temperature, precipitation, wind
//! speed, ...) matched to field names; an operation is compatible with a
//! package when every required input finds a field (paired inputs, such as
//! forecast and observation, need the same variable in two files) and the
//! first input's block is as long as the method needs with its default
//! parameters ([`OperationSpec::min_values_at_defaults`]: a shorter record
//! is a justified refusal, App. A.4, not a compatible task). The
//! scripted agent fills the arguments from the first matches, the
//! latitude and elevation from the file, thresholds from the series'
//! median, and `stat` = `mean`.

use crate::catalog::{Environment, OperationSpec};
use crate::outcome::FailureClass;
use crate::tool::{EnvironmentSettings, EnvironmentTool};
use earthverse_tool_registry::ToolContext;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One series block of a package file.
#[derive(Debug, Clone)]
pub struct SeriesBlock {
    /// Package-relative file.
    pub file: String,
    /// `daily` or `hourly` (the block key).
    pub block: String,
    /// Numeric fields (each as long as `time`).
    pub fields: Vec<String>,
    /// Time steps of the block (the length of `time`).
    pub len: usize,
    /// The file's `latitude`.
    pub latitude: Option<f64>,
    /// The file's `elevation`.
    pub elevation: Option<f64>,
    /// Median of each field's finite values.
    pub medians: BTreeMap<String, f64>,
}

/// The series blocks of every JSON file of a package (hidden artifacts
/// skipped, symlinks not followed).
pub fn scan_package(root: &Path) -> Vec<SeriesBlock> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
    {
        let name = entry.file_name().to_string_lossy();
        if earthverse_package_model::evidence::hidden_artifact_name(&name).is_some() {
            continue;
        }
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        // Only a file naming a series block can hold one: the others
        // (rasters, PDFs, large GeoJSON) are not parsed.
        let finder = |key: &[u8]| memchr::memmem::find(&bytes, key).is_some();
        if !finder(b"\"daily\"") && !finder(b"\"hourly\"") {
            continue;
        }
        let Ok(doc) = serde_json::from_slice::<Value>(&bytes) else {
            continue;
        };
        let Some(rel) = entry
            .path()
            .strip_prefix(root)
            .ok()
            .map(|p| p.to_string_lossy().into_owned())
        else {
            continue;
        };
        for block in ["daily", "hourly"] {
            let Some(map) = doc.get(block).and_then(Value::as_object) else {
                continue;
            };
            let Some(n) = map.get("time").and_then(Value::as_array).map(Vec::len) else {
                continue;
            };
            let mut fields = Vec::new();
            let mut medians = BTreeMap::new();
            for (k, v) in map {
                let Some(a) = v.as_array().filter(|a| k != "time" && a.len() == n) else {
                    continue;
                };
                let mut vals: Vec<f64> = a.iter().filter_map(Value::as_f64).collect();
                if vals.is_empty() {
                    continue;
                }
                vals.sort_by(f64::total_cmp);
                medians.insert(k.clone(), vals[vals.len() / 2]);
                fields.push(k.clone());
            }
            out.push(SeriesBlock {
                file: rel.clone(),
                block: block.into(),
                fields,
                len: n,
                latitude: doc.get("latitude").and_then(Value::as_f64),
                elevation: doc.get("elevation").and_then(Value::as_f64),
                medians,
            });
        }
    }
    out
}

/// Field-name patterns (substrings) that can play an input's role.
fn role_patterns(input: &str) -> &'static [&'static str] {
    match input {
        "temperature" | "tasmax" | "tmax" => &["temperature_2m_max", "temperature_2m"],
        "tmin" => &["temperature_2m_min"],
        "precipitation" | "pr" => &["precipitation_sum", "precipitation", "rain_sum", "rain"],
        "relative_humidity" => &["relative_humidity"],
        "dewpoint" => &["dew_point"],
        "pressure" => &["pressure_msl", "surface_pressure"],
        "wind" | "speed" => &["wind_speed_10m_max", "wind_speed_10m", "wind_speed"],
        "direction" => &["wind_direction"],
        _ => &[""],
    }
}

/// The arguments a scripted agent gives `op` on this package, or `None`
/// when the package lacks an input.
pub fn scripted_args(op: &OperationSpec, blocks: &[SeriesBlock]) -> Option<Value> {
    let paired = ["observation", "series2", "weight", "b", "y"];
    let mut args = json!({});
    let mut first: Option<(&SeriesBlock, String)> = None;
    for input in op.inputs {
        let found = if paired.contains(&input.name) {
            // The same variable from another file (observation, a second
            // point) or a second variable of the same block (weight, b, y).
            let (b0, f0) = first.as_ref()?;
            if matches!(input.name, "observation" | "series2") {
                blocks
                    .iter()
                    .find(|b| b.file != b0.file && b.block == b0.block && b.fields.contains(f0))
                    .map(|b| (b, f0.clone()))
            } else {
                b0.fields
                    .iter()
                    .find(|f| *f != f0)
                    .map(|f| (*b0, f.clone()))
            }
        } else {
            // Daily inputs of daily methods; any block otherwise.
            let daily = op.params.iter().any(|p| p.name == "latitude")
                || op.name.starts_with("xclim")
                || op.name.starts_with("climate_indices");
            let same_block = first
                .as_ref()
                .map(|(b, _)| (b.file.clone(), b.block.clone()));
            // The method's shortest record (checked before running, a
            // justified refusal) also bounds compatibility.
            let long_enough =
                |b: &&SeriesBlock| first.is_some() || b.len >= op.min_values_at_defaults();
            role_patterns(input.name).iter().find_map(|pat| {
                blocks
                    .iter()
                    .filter(|b| !daily || b.block == "daily")
                    .filter(long_enough)
                    .filter(|b| {
                        same_block
                            .as_ref()
                            .is_none_or(|(f, k)| &b.file == f && &b.block == k)
                    })
                    .find_map(|b| {
                        b.fields
                            .iter()
                            .find(|f| {
                                f.contains(pat)
                                    && !(input.name == "temperature" && f.contains("apparent"))
                            })
                            .map(|f| (b, f.clone()))
                    })
            })
        };
        match found {
            Some((b, f)) => {
                args[input.name] = json!({"path": b.file, "field": format!("{}.{f}", b.block), "time_field": format!("{}.time", b.block)});
                if first.is_none() {
                    first = Some((b, f));
                }
            }
            None if input.required => return None,
            None => {}
        }
    }
    let (b0, f0) = first?;
    for p in op.params {
        let v = match p.name {
            "latitude" => b0.latitude.map(|v| json!(v)),
            "elevation_m" => b0.elevation.map(|v| json!(v)),
            "threshold" => b0.medians.get(&f0).map(|v| json!(v)),
            "stat" => Some(json!("mean")),
            "expression" => Some(json!("a*2")),
            _ => None,
        };
        match v {
            Some(v) => args[p.name] = v,
            None if p.required => return None,
            None => {}
        }
    }
    Some(args)
}

/// The operations of `env` whose inputs the package's series hold (those
/// a scripted agent can fill, [`scripted_args`]), in catalogue order.
pub fn compatible_operations(env: &Environment, blocks: &[SeriesBlock]) -> Vec<&'static str> {
    env.operations
        .iter()
        .filter(|op| scripted_args(op, blocks).is_some())
        .map(|op| op.name)
        .collect()
}

/// Whether the package at `root` is compatible with `env`: at least one of
/// its operations finds every input it needs in the package's series (the
/// rule of [`coverage`] and of the compatible manifests of App. C.5).
pub fn package_compatible(env: &Environment, root: &Path) -> bool {
    !compatible_operations(env, &scan_package(root)).is_empty()
}

/// The series blocks of each task's package of `release` ([`scan_package`]),
/// by task id; each package is scanned once.
pub fn release_series(
    release: &earthverse_package_model::Release,
) -> BTreeMap<String, Arc<Vec<SeriesBlock>>> {
    let mut packages: BTreeMap<PathBuf, Arc<Vec<SeriesBlock>>> = BTreeMap::new();
    release
        .tasks()
        .iter()
        .map(|task| {
            let dir = release.task_package_dir(task);
            let blocks = packages
                .entry(dir.clone())
                .or_insert_with(|| Arc::new(scan_package(&dir)))
                .clone();
            (task.task_id.clone(), blocks)
        })
        .collect()
}

/// Whether each task is compatible with `env` ([`compatible_operations`]
/// of its package's series, as [`release_series`] gives them), by task id.
pub fn compatibility(
    env: &Environment,
    series: &BTreeMap<String, Arc<Vec<SeriesBlock>>>,
) -> BTreeMap<String, bool> {
    series
        .iter()
        .map(|(task, blocks)| (task.clone(), !compatible_operations(env, blocks).is_empty()))
        .collect()
}

/// Whether each task of `release` is compatible with `env` (its package,
/// [`package_compatible`]), by task id; each package is scanned once.
pub fn task_compatibility(
    env: &Environment,
    release: &earthverse_package_model::Release,
) -> BTreeMap<String, bool> {
    compatibility(env, &release_series(release))
}

/// One environment's coverage over a release.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Coverage {
    /// The paper's name.
    pub environment: String,
    /// Packages scanned.
    pub packages: usize,
    /// Packages compatible with at least one operation.
    pub compatible_packages: usize,
    /// Tasks whose package is compatible / all tasks.
    pub compatible_tasks: usize,
    /// All tasks.
    pub tasks: usize,
    /// Calls made (one per compatible operation and package).
    pub calls: usize,
    /// Calls that succeeded.
    pub ok: usize,
    /// Failed calls by class.
    pub failure_classes: BTreeMap<String, usize>,
    /// Calls per operation: (compatible packages, successes).
    pub operations: BTreeMap<String, (usize, usize)>,
}

/// Runs the scripted agent of the module docs for `env` over `packages`
/// (id, root, number of tasks reading it), scratch under `scratch`.
pub async fn coverage(
    env: &'static Environment,
    packages: &[(String, PathBuf, usize)],
    settings: Arc<EnvironmentSettings>,
    scratch: &Path,
) -> Coverage {
    let mut c = Coverage {
        environment: env.name.into(),
        packages: packages.len(),
        tasks: packages.iter().map(|p| p.2).sum(),
        ..Coverage::default()
    };
    for (id, root, tasks) in packages {
        let blocks = scan_package(root);
        let mut compatible = false;
        for (i, op) in env.operations.iter().enumerate() {
            let entry = c.operations.entry(op.name.to_string()).or_default();
            let Some(args) = scripted_args(op, &blocks) else {
                continue;
            };
            compatible = true;
            entry.0 += 1;
            let ctx = ToolContext::new(root, scratch.join(id)).with_step(i as u32);
            let tool = EnvironmentTool::new(env, op, settings.clone());
            let outcome = tool.run(&ctx, &args).await;
            c.calls += 1;
            match outcome.failure_class {
                None => {
                    c.ok += 1;
                    if let Some(e) = c.operations.get_mut(op.name) {
                        e.1 += 1;
                    }
                }
                Some(class) => {
                    *c.failure_classes
                        .entry(FailureClass::as_str(class).to_string())
                        .or_default() += 1
                }
            }
        }
        if compatible {
            c.compatible_packages += 1;
            c.compatible_tasks += tasks;
        }
    }
    c
}
