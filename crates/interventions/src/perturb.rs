//! Evidence perturbations of App. A.3.3 (Table 4c): a perturbed copy of a
//! release whose question and answer schema never change while its package
//! evidence does — irrelevant files added, one supporting file removed,
//! long text truncated, units changed with physical equivalence, or a
//! secondary source made inconsistent.
//!
//! The original release is never modified: unchanged files are hard links
//! (copies across file systems) and every changed file is written new. The
//! tasks' `event_files` inventories follow the package (added, removed and
//! rewritten files with their sizes and hashes), so `earthverse validate`
//! passes on the result. Every event gets a manifest,
//! `perturbations/<event>.json`, outside the package (an agent cannot list
//! it), listing each change (file, what changed) and the seed, or the
//! reason the perturbation could not be applied. A unit change keeps the
//! ground truth in the question's units and adapts the event's
//! `compute_gt.py` programs so that they still regenerate it
//! ([`UnitChange`], [`adapted_compute_gt`]). Choices are seeded
//! (ChaCha20) and follow general rules, never per-task cases.

use earthverse_evidence_ledger::reference_files;
use earthverse_package_model::release::RELEASE_PACKAGES_DIR;
use earthverse_package_model::Release;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which perturbation (App. A.3.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PerturbationKind {
    /// Two plausible irrelevant files from other events' packages.
    Distractors,
    /// One supporting file of the reference analysis removed.
    Missing,
    /// The longest text document cut to its first half.
    Truncated,
    /// One JSON series converted to a physically equivalent unit; the
    /// event's `compute_gt.py` programs are adapted to convert it back
    /// ([`UnitChange`]).
    UnitChange,
    /// A secondary source's first measured value changed to disagree.
    Conflicting,
}

impl PerturbationKind {
    /// The five kinds.
    pub const ALL: [PerturbationKind; 5] = [
        PerturbationKind::Distractors,
        PerturbationKind::Missing,
        PerturbationKind::Truncated,
        PerturbationKind::UnitChange,
        PerturbationKind::Conflicting,
    ];

    /// The command-line and manifest spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            PerturbationKind::Distractors => "distractors",
            PerturbationKind::Missing => "missing",
            PerturbationKind::Truncated => "truncated",
            PerturbationKind::UnitChange => "unit-change",
            PerturbationKind::Conflicting => "conflicting",
        }
    }
}

impl std::fmt::Display for PerturbationKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for PerturbationKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL.into_iter().find(|k| k.as_str() == s).ok_or_else(|| {
            format!(
                "perturbation must be distractors, missing, truncated, unit-change or conflicting, not `{s}`"
            )
        })
    }
}

/// One change to a package.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    /// Package-relative file.
    pub file: String,
    /// `added`, `removed` or `rewritten`.
    pub action: String,
    /// What changed.
    pub what: String,
}

/// `perturbations/<event>.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventPerturbation {
    /// The event.
    pub event_id: String,
    /// The perturbation.
    pub kind: PerturbationKind,
    /// The seed of every choice.
    pub seed: u64,
    /// Its changes (empty when it could not be applied).
    pub changes: Vec<Change>,
    /// Why it could not be applied, when it could not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applied: Option<String>,
    /// For `unit-change`: the conversion, and how the ground truth is kept
    /// (see [`UnitChange`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit_change: Option<UnitChange>,
}

/// The conversion of a `unit-change` perturbation and what it does to the
/// ground truth (App. A.3.3: units changed *while preserving physical
/// equivalence*; issue #27: "`compute_gt.py` adapted or the ground truth
/// shown unchanged").
///
/// The ground truth stays in the question's units. Every task of the event
/// that has a `compute_gt.py` gets an adapted program in the perturbed
/// release (the hidden side; question and answer schema never change): a
/// prelude that converts the changed series back to its original unit and
/// precision whenever the program decodes the changed document with
/// Python's `json`, then the original program verbatim
/// ([`adapted_compute_gt`]). Re-running those programs on the perturbed
/// release (`earthverse validate DIR --regenerate-gt`) shows whether the
/// recorded ground truth still holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitChange {
    /// The package-relative JSON file changed.
    pub file: String,
    /// The object holding the series (`daily`, `hourly`, ...).
    pub block: String,
    /// The series (`temperature_2m_max`, ...).
    pub variable: String,
    /// Its unit label before.
    pub from: String,
    /// Its unit label after.
    pub to: String,
    /// `new = old * factor + offset`.
    pub factor: f64,
    /// See `factor`.
    pub offset: f64,
    /// Decimals of the original values (the most any value has): the
    /// converted values keep four more, so converting back and rounding
    /// to these decimals restores every original value exactly.
    pub decimals: u32,
    /// Positions of the series that were JSON integers (restored as
    /// integers).
    pub integer_positions: Vec<usize>,
    /// Length of the series.
    pub length: usize,
    /// Sum of the converted numbers: with `length`, how the adapted
    /// program recognises the changed document.
    pub converted_sum: f64,
    /// Tasks of the event whose `compute_gt.py` names the changed file
    /// (by inventory path or unique file name, as the oracles resolve
    /// references). The others' programs do not name it.
    pub programs_naming_file: Vec<String>,
    /// Tasks of the event whose `compute_gt.py` was adapted (every task of
    /// the event with a program).
    pub adapted_programs: Vec<String>,
}

/// Errors of [`perturb_release`].
#[derive(Debug, thiserror::Error)]
pub enum PerturbError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The output directory is not empty.
    #[error("{0}: the output directory must be new or empty (the original is never overwritten)")]
    OutputNotEmpty(PathBuf),
    /// A task file is not JSON.
    #[error("{path}: {message}")]
    Task {
        /// The task file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> PerturbError + '_ {
    move |source| PerturbError::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn sha256_16(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))[..16].to_string()
}

fn files_of(root: &Path) -> Vec<String> {
    earthverse_package_model::evidence::list_package_files(root)
        .map(|files| files.into_iter().map(|f| f.package_relative).collect())
        .unwrap_or_default()
}

fn suffix(path: &str) -> String {
    path.rsplit('.').next().unwrap_or("").to_lowercase()
}

const TEXT: [&str; 5] = ["md", "txt", "html", "htm", "xml"];

/// What one event's perturbation does: files to add (package-relative
/// path, bytes), remove, rewrite.
#[derive(Debug, Default)]
struct Edit {
    add: Vec<(String, Vec<u8>, String)>,
    remove: Vec<(String, String)>,
    rewrite: Vec<(String, Vec<u8>, String)>,
    unit_change: Option<UnitChange>,
}

fn plan_event(
    release: &Release,
    all_files: &BTreeMap<String, Vec<String>>,
    event: &str,
    kind: PerturbationKind,
    rng: &mut rand_chacha::ChaCha20Rng,
) -> Result<Edit, String> {
    let root = release.package_dir(event);
    let files = all_files.get(event).cloned().unwrap_or_default();
    let read = |rel: &str| std::fs::read(root.join(rel)).map_err(|e| format!("{rel}: {e}"));
    let references: BTreeSet<String> = release
        .tasks_for_event(event)
        .flat_map(|t| reference_files(&t.reference_texts(), &t.inventory_paths()))
        .collect();
    let mut edit = Edit::default();
    match kind {
        PerturbationKind::Distractors => {
            let mut pool: Vec<(String, String)> = all_files
                .iter()
                .filter(|(e, _)| e.as_str() != event)
                .flat_map(|(e, files)| {
                    files
                        .iter()
                        .filter(|f| {
                            ["json", "csv", "md", "html", "txt"].contains(&suffix(f).as_str())
                        })
                        .map(move |f| (e.clone(), f.clone()))
                })
                .collect();
            if pool.is_empty() {
                return Err("no other event's package has a text or table file".into());
            }
            pool.shuffle(rng);
            for (i, (other, file)) in pool.into_iter().take(2).enumerate() {
                let parts: Vec<&str> = file.split('/').collect();
                let category = parts.get(1).copied().unwrap_or("other");
                let name = parts.last().copied().unwrap_or("file");
                // Renamed into this package's scheme: <category>_<next NNN>_<name>.
                let taken = files
                    .iter()
                    .filter(|f| f.starts_with(&format!("data/{category}/")))
                    .count();
                // `<category>_<NNN>_<rest>` keeps `<rest>`.
                let stem = name
                    .strip_prefix(&format!("{category}_"))
                    .map(|r| r.trim_start_matches(|c: char| c.is_ascii_digit()))
                    .and_then(|r| r.strip_prefix('_'))
                    .unwrap_or(name);
                let new = format!("data/{category}/{category}_{:03}_{stem}", taken + 1 + i);
                let bytes = std::fs::read(release.package_dir(&other).join(&file))
                    .map_err(|e| format!("{other}/{file}: {e}"))?;
                edit.add.push((
                    new,
                    bytes,
                    format!("irrelevant file from another event ({other}/{file})"),
                ));
            }
        }
        PerturbationKind::Missing => {
            let mut candidates: Vec<&String> =
                references.iter().filter(|f| files.contains(f)).collect();
            if candidates.is_empty() {
                return Err("the reference analysis names no package file".into());
            }
            candidates.shuffle(rng);
            edit.remove.push((
                candidates[0].clone(),
                "supporting file of the reference analysis removed".into(),
            ));
        }
        PerturbationKind::Truncated => {
            let mut longest: Option<(String, String)> = None;
            for f in files.iter().filter(|f| TEXT.contains(&suffix(f).as_str())) {
                let text = String::from_utf8_lossy(&read(f)?).into_owned();
                if text.chars().count() >= 4_000
                    && longest.as_ref().is_none_or(|(_, t)| text.len() > t.len())
                {
                    longest = Some((f.clone(), text));
                }
            }
            let Some((file, text)) = longest else {
                return Err("no text document of 4,000 characters or more".into());
            };
            let total = text.chars().count();
            let kept: String = text.chars().take(total / 2).collect();
            edit.rewrite.push((
                file,
                format!("{kept}\n[...]\n").into_bytes(),
                format!("cut to its first {} of {total} characters", total / 2),
            ));
        }
        PerturbationKind::UnitChange => {
            let mut candidates = Vec::new();
            for f in files.iter().filter(|f| suffix(f) == "json") {
                let Ok(value) = serde_json::from_slice::<Value>(&read(f)?) else {
                    continue;
                };
                for (block, var, unit) in unit_series(&value) {
                    candidates.push((f.clone(), block, var, unit));
                }
            }
            if candidates.is_empty() {
                return Err(
                    "no JSON series with a unit label in °C, mm, km/h or m/s (`<block>_units`)"
                        .into(),
                );
            }
            candidates.sort();
            let (file, block, var, unit) = candidates.choose(rng).cloned().ok_or("no choice")?;
            let mut value: Value =
                serde_json::from_slice(&read(&file)?).map_err(|e| e.to_string())?;
            let change = convert_series(&mut value, &file, &block, &var, &unit)
                .ok_or("the series could not be converted")?;
            let mut bytes = serde_json::to_vec_pretty(&value).map_err(|e| e.to_string())?;
            bytes.push(b'\n');
            edit.rewrite.push((
                file,
                bytes,
                format!(
                    "{block}.{var}: {unit} -> {} (x * {} + {}, label updated)",
                    change.to, change.factor, change.offset
                ),
            ));
            edit.unit_change = Some(change);
        }
        PerturbationKind::Conflicting => {
            let mut secondary: Vec<&String> = files
                .iter()
                .filter(|f| TEXT.contains(&suffix(f).as_str()) && !references.contains(*f))
                .collect();
            secondary.sort();
            let mut done = false;
            for f in secondary {
                let text = String::from_utf8_lossy(&read(f)?).into_owned();
                if let Some((changed, what)) = change_first_measurement(&text) {
                    edit.rewrite.push((f.clone(), changed.into_bytes(), what));
                    done = true;
                    break;
                }
            }
            if !done {
                return Err(
                    "no secondary (non-reference) text source states a measured value".into(),
                );
            }
        }
    }
    Ok(edit)
}

/// `(block, variable, unit)` of every series `value[block][variable]`
/// (an array of numbers) whose unit `value[block + "_units"][variable]` is
/// one we convert.
fn unit_series(value: &Value) -> Vec<(String, String, String)> {
    let Some(map) = value.as_object() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (key, units) in map {
        let Some(block) = key.strip_suffix("_units") else {
            continue;
        };
        let (Some(units), Some(series)) =
            (units.as_object(), map.get(block).and_then(Value::as_object))
        else {
            continue;
        };
        for (var, unit) in units {
            let unit = unit.as_str().unwrap_or("");
            let numeric = series
                .get(var)
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty() && a.iter().any(Value::is_number));
            if numeric && conversion(unit).is_some() {
                out.push((block.to_string(), var.clone(), unit.to_string()));
            }
        }
    }
    out
}

/// `(new unit, factor, offset)`: physically equivalent conversions.
fn conversion(unit: &str) -> Option<(&'static str, f64, f64)> {
    match unit {
        "°C" | "degC" | "C" => Some(("K", 1.0, 273.15)),
        "mm" => Some(("inch", 1.0 / 25.4, 0.0)),
        "km/h" => Some(("m/s", 1.0 / 3.6, 0.0)),
        "m/s" => Some(("km/h", 3.6, 0.0)),
        _ => None,
    }
}

/// Decimals of `x` as written shortest (Rust's `Display` of an `f64`
/// never uses an exponent).
fn decimals_of(x: f64) -> u32 {
    let text = format!("{x}");
    text.split_once('.')
        .map_or(0, |(_, d)| u32::try_from(d.len()).unwrap_or(u32::MAX))
}

fn round_to(x: f64, decimals: u32) -> f64 {
    let scale = 10f64.powi(i32::try_from(decimals).unwrap_or(i32::MAX));
    (x * scale).round() / scale
}

/// Converts `value[block][var]` from `unit` and updates its label; the
/// converted values keep four decimals more than the original, so the
/// conversion is exactly reversible at the original precision.
fn convert_series(
    value: &mut Value,
    file: &str,
    block: &str,
    var: &str,
    unit: &str,
) -> Option<UnitChange> {
    let (to, factor, offset) = conversion(unit)?;
    let series = value.get_mut(block)?.get_mut(var)?.as_array_mut()?;
    let decimals = series
        .iter()
        .filter_map(Value::as_f64)
        .map(decimals_of)
        .max()
        .unwrap_or(0);
    let integer_positions: Vec<usize> = series
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_i64() || v.is_u64())
        .map(|(i, _)| i)
        .collect();
    let mut converted_sum = 0.0;
    for v in series.iter_mut() {
        if let Some(x) = v.as_f64() {
            let y = round_to(x * factor + offset, decimals.saturating_add(4));
            converted_sum += y;
            *v = json!(y);
        }
    }
    let length = series.len();
    *value.get_mut(format!("{block}_units"))?.get_mut(var)? = json!(to);
    Some(UnitChange {
        file: file.to_string(),
        block: block.to_string(),
        variable: var.to_string(),
        from: unit.to_string(),
        to: to.to_string(),
        factor,
        offset,
        decimals,
        integer_positions,
        length,
        converted_sum,
        programs_naming_file: Vec::new(),
        adapted_programs: Vec::new(),
    })
}

/// The prelude of an adapted `compute_gt.py`; `@CHANGE@` and `@PROGRAM@`
/// are replaced by JSON string literals (valid Python string literals).
const ADAPTED_PRELUDE: &str = include_str!("adapted_compute_gt.py");

/// The `compute_gt.py` of a task whose package had `change` applied: a
/// prelude that wraps Python's `json.loads` (which `json.load` calls) so
/// that the changed document, recognised by its unit label, the series
/// length and the sum of the converted values, decodes with the series
/// converted back (`(x - offset) / factor`, rounded to the original
/// decimals, integers restored) and its original label; then `program`
/// run verbatim in the same module (`__name__ == "__main__"`, `__file__`
/// the adapted program's path). Any other document decodes unchanged.
pub fn adapted_compute_gt(program: &str, change: &UnitChange) -> String {
    let literal = |v: &Value| serde_json::to_string(v).unwrap_or_default();
    let config = json!({
        "block": change.block,
        "variable": change.variable,
        "from": change.from,
        "to": change.to,
        "factor": change.factor,
        "offset": change.offset,
        "decimals": change.decimals,
        "integer_positions": change.integer_positions,
        "length": change.length,
        "converted_sum": change.converted_sum,
    });
    ADAPTED_PRELUDE
        .replace("@CHANGE@", &literal(&Value::String(literal(&config))))
        .replace("@PROGRAM@", &literal(&Value::String(program.to_string())))
}

/// The first number followed by a unit in `text`, multiplied by 1.5 (same
/// decimals): the secondary source now disagrees with the others.
fn change_first_measurement(text: &str) -> Option<(String, String)> {
    const UNITS: [&str; 12] = [
        " °C", "°C", " mm", " km/h", " m/s", " people", " deaths", " km", " hPa", " %", "%", " m ",
    ];
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit()
            && (i == 0
                || !(bytes[i - 1].is_ascii_alphanumeric()
                    || bytes[i - 1] == b'.'
                    || bytes[i - 1] == b'_'))
        {
            let mut j = i;
            while j < bytes.len()
                && (bytes[j].is_ascii_digit()
                    || (bytes[j] == b'.' && j + 1 < bytes.len() && bytes[j + 1].is_ascii_digit()))
            {
                j += 1;
            }
            let rest = &text[j..];
            if UNITS.iter().any(|u| rest.starts_with(u)) {
                let token = &text[i..j];
                let x: f64 = token.parse().ok()?;
                if x == 0.0 {
                    // 0 x 1.5 = 0: not a disagreement; try the next one.
                    i = j;
                    continue;
                }
                let decimals = token.split_once('.').map_or(0, |(_, d)| d.len());
                let y = x * 1.5;
                let new = format!("{y:.decimals$}");
                let changed = format!("{}{}{}", &text[..i], new, &text[j..]);
                return Some((
                    changed,
                    format!("first measured value {token} changed to {new}"),
                ));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    None
}

fn link_or_copy(from: &Path, to: &Path) -> Result<(), PerturbError> {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    if std::fs::hard_link(from, to).is_err() {
        std::fs::copy(from, to).map_err(io(to))?;
    }
    Ok(())
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), PerturbError> {
    for entry in walkdir::WalkDir::new(from).sort_by_file_name() {
        let entry = entry.map_err(|e| PerturbError::Io {
            path: e.path().unwrap_or(from).to_path_buf(),
            source: e.into(),
        })?;
        if entry.file_type().is_dir() {
            continue;
        }
        let rel = entry.path().strip_prefix(from).unwrap_or(entry.path());
        link_or_copy(entry.path(), &to.join(rel))?;
    }
    Ok(())
}

fn write_new(path: &Path, bytes: &[u8]) -> Result<(), PerturbError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io(parent))?;
    }
    // Never write through a hard link into the original.
    if path.exists() {
        std::fs::remove_file(path).map_err(io(path))?;
    }
    std::fs::write(path, bytes).map_err(io(path))
}

/// Writes the `kind` perturbation of `release` (every event, or only the
/// events of `tasks`) to `out` with `seed`. Returns the manifests.
///
/// # Errors
/// [`PerturbError`] when `out` is not empty or a file cannot be read or
/// written.
pub fn perturb_release(
    release: &Release,
    kind: PerturbationKind,
    seed: u64,
    out: &Path,
    tasks: Option<&BTreeSet<String>>,
) -> Result<Vec<EventPerturbation>, PerturbError> {
    if out.exists() && std::fs::read_dir(out).map_err(io(out))?.next().is_some() {
        return Err(PerturbError::OutputNotEmpty(out.to_path_buf()));
    }
    let chosen: Vec<&earthverse_package_model::Task> = release
        .tasks()
        .iter()
        .filter(|t| tasks.is_none_or(|ids| ids.contains(&t.task_id)))
        .collect();
    let events: BTreeSet<String> = chosen.iter().map(|t| t.event_id.clone()).collect();
    // Every package's files, listed once.
    let all_files: BTreeMap<String, Vec<String>> = release
        .event_ids()
        .iter()
        .map(|e| (e.clone(), files_of(&release.package_dir(e))))
        .collect();
    let mut manifests = Vec::new();
    for event in &events {
        // One generator per event: an event's choices do not depend on
        // which other events are perturbed.
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(
            seed ^ u64::from_le_bytes(
                sha2::Sha256::digest(event.as_bytes())[..8]
                    .try_into()
                    .unwrap_or([0; 8]),
            ),
        );
        let target = out.join(RELEASE_PACKAGES_DIR).join(event);
        copy_tree(&release.package_dir(event), &target)?;
        let mut manifest = EventPerturbation {
            event_id: event.clone(),
            kind,
            seed,
            changes: Vec::new(),
            not_applied: None,
            unit_change: None,
        };
        let mut records: Vec<(String, Option<(u64, String)>)> = Vec::new();
        match plan_event(release, &all_files, event, kind, &mut rng) {
            Err(reason) => manifest.not_applied = Some(reason),
            Ok(edit) => {
                manifest.unit_change = edit.unit_change;
                for (file, bytes, what) in edit.add {
                    write_new(&target.join(&file), &bytes)?;
                    records.push((file.clone(), Some((bytes.len() as u64, sha256_16(&bytes)))));
                    manifest.changes.push(Change {
                        file,
                        action: "added".into(),
                        what,
                    });
                }
                for (file, what) in edit.remove {
                    let path = target.join(&file);
                    std::fs::remove_file(&path).map_err(io(&path))?;
                    records.push((file.clone(), None));
                    manifest.changes.push(Change {
                        file,
                        action: "removed".into(),
                        what,
                    });
                }
                for (file, bytes, what) in edit.rewrite {
                    write_new(&target.join(&file), &bytes)?;
                    records.push((file.clone(), Some((bytes.len() as u64, sha256_16(&bytes)))));
                    manifest.changes.push(Change {
                        file,
                        action: "rewritten".into(),
                        what,
                    });
                }
            }
        }
        // The event's tasks: inventories follow the package.
        for task in chosen.iter().filter(|t| &t.event_id == event) {
            let from = release
                .root()
                .join("tasks")
                .join(format!("{}.json", task.task_id));
            let to = out.join("tasks").join(format!("{}.json", task.task_id));
            let text = std::fs::read(&from).map_err(io(&from))?;
            let mut value: Value =
                serde_json::from_slice(&text).map_err(|e| PerturbError::Task {
                    path: from.clone(),
                    message: e.to_string(),
                })?;
            if let Some(inventory) = value.get_mut("event_files").and_then(Value::as_array_mut) {
                for (file, state) in &records {
                    let at = inventory
                        .iter()
                        .position(|r| r.get("relative_path").and_then(Value::as_str) == Some(file));
                    match (state, at) {
                        (None, Some(i)) => {
                            inventory.remove(i);
                        }
                        (Some((bytes, sha)), Some(i)) => {
                            inventory[i]["bytes"] = json!(bytes);
                            inventory[i]["sha256_16"] = json!(sha);
                        }
                        (Some((bytes, sha)), None) => inventory.push(json!({
                            "relative_path": file,
                            "category": file.split('/').nth(1),
                            "bytes": bytes,
                            "sha256_16": sha,
                        })),
                        (None, None) => {}
                    }
                }
            }
            // A unit change: the program converts the series back (the
            // ground truth stays in the question's units).
            if let (Some(change), Some(program)) =
                (manifest.unit_change.as_mut(), task.compute_gt_py.as_deref())
            {
                if reference_files(&[program], &task.inventory_paths()).contains(&change.file) {
                    change.programs_naming_file.push(task.task_id.clone());
                }
                value["compute_gt_py"] = Value::String(adapted_compute_gt(program, change));
                change.adapted_programs.push(task.task_id.clone());
            }
            let bytes = serde_json::to_vec_pretty(&value).map_err(|e| PerturbError::Task {
                path: to.clone(),
                message: e.to_string(),
            })?;
            write_new(&to, &bytes)?;
        }
        // Written after the tasks: a unit change names the adapted programs.
        let dir = out.join("perturbations");
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let path = dir.join(format!("{event}.json"));
        let text = serde_json::to_vec_pretty(&manifest).map_err(|e| PerturbError::Task {
            path: path.clone(),
            message: e.to_string(),
        })?;
        std::fs::write(&path, text).map_err(io(&path))?;
        manifests.push(manifest);
    }
    Ok(manifests)
}

/// The manifest of `event` in a perturbed release, if it is one.
pub fn read_manifest(release_root: &Path, event: &str) -> Option<EventPerturbation> {
    let path = release_root
        .join("perturbations")
        .join(format!("{event}.json"));
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}
