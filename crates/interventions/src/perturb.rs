//! Evidence perturbations of App. A.3.3 (Table 4c): a perturbed copy of a
//! release whose question and answer schema never change while its package
//! evidence does — irrelevant files added, one supporting file removed,
//! long text truncated, units changed with physical equivalence, or a
//! secondary source made inconsistent.
//!
//! **Every perturbation targets the evidence of the task it is applied
//! to**: the files (and for a unit change, the variable) that the task's
//! own reference analysis reads, as its `compute_gt.py` shows when run
//! under an audit hook ([`crate::reads::ReferenceReads`]):
//! - missing: a file the analysis opens *and needs* (denied, the program
//!   fails or changes its answer), never one it only consults or rejects;
//! - truncated: a long text file (2,000 characters or more) the analysis
//!   opens, cut inside the part it reads (before the middle of the keys it
//!   looks up, or of the program's quoted strings found in the text);
//! - unit change: a unit-labelled series whose key the analysis looks up,
//!   converted with its label ([`UnitChange`]);
//! - conflicting: a *secondary* source — a file the analysis opens but does
//!   not need (it reads or rejects it), else another package file that
//!   reports a key the analysis reads from its primary — changed on the
//!   quantity the analysis reads, the primary left untouched;
//! - distractors: two plausible irrelevant files from other events.
//!
//! Tasks of one event that read different evidence get different
//! overlays: each task's package is written at
//! `task_packages/<task_id>/<event_id>/` (see
//! [`earthverse_package_model::Release::task_package_dir`]), its
//! `event_files` inventory follows it, and its manifest,
//! `perturbations/<task_id>.json` (outside the package: an agent cannot
//! list it), names the file, the variable, the change and why this target
//! was chosen — or why the task has no valid target ("not applicable":
//! such a task is left out of that condition's pairs).
//!
//! The original release is never modified: unchanged files are hard links
//! (copies across file systems) and every changed file is written new. A
//! unit change keeps the ground truth in the question's units and adapts
//! the task's `compute_gt.py` so that it still regenerates it
//! ([`adapted_compute_gt`]). Choices are seeded (ChaCha20, per task) and
//! follow general rules, never per-task cases.

use crate::reads::{ReadsMethod, ReferenceReads, TaskReads};
use earthverse_package_model::reference_reads::OpenedFile;
use earthverse_package_model::TASK_PACKAGES_DIR;
use earthverse_package_model::{sniff_bytes, Release, Task};
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

/// What a task's perturbation targets, and why (the manifest's answer to
/// "which evidence of this task does it change").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// Package-relative file.
    pub file: String,
    /// The variable or key changed (`daily.temperature_2m_max`), when one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variable: Option<String>,
    /// The change.
    pub change: String,
    /// Why this target: what the reference analysis does with it.
    pub why: String,
}

/// `perturbations/<task_id>.json`: one task's perturbation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskPerturbation {
    /// The task.
    pub task_id: String,
    /// Its event.
    pub event_id: String,
    /// The perturbation.
    pub kind: PerturbationKind,
    /// The seed of every choice.
    pub seed: u64,
    /// How the task's reference reads were found (`audit`,
    /// `audit_unreproduced`, `static`).
    pub reads: ReadsMethod,
    /// The evidence targeted (none for distractors, or when not applicable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<Target>,
    /// Its changes (empty when not applicable).
    pub changes: Vec<Change>,
    /// Why the task has no valid target, when it has none: it is left out
    /// of this condition's pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<String>,
    /// For `unit-change`: the conversion, and how the ground truth is kept
    /// (see [`UnitChange`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit_change: Option<UnitChange>,
}

impl TaskPerturbation {
    /// Whether the perturbation was applied.
    pub fn applicable(&self) -> bool {
        self.not_applicable.is_none()
    }
}

/// The conversion of a `unit-change` perturbation and what it does to the
/// ground truth (App. A.3.3: units changed *while preserving physical
/// equivalence*; issue #27: "`compute_gt.py` adapted or the ground truth
/// shown unchanged").
///
/// The ground truth stays in the question's units. The task, when it
/// has a `compute_gt.py`, gets an adapted program in the perturbed
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
    /// Whether the task's `compute_gt.py` was adapted (it has one).
    pub adapted_program: bool,
    /// A unit written in the key's name (`precipitation_sum_mm_max`): the
    /// key it was renamed to (`precipitation_sum_inch_max`); `block` is
    /// then the dotted path of the object holding it (empty for the
    /// document root) and `variable` the original key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renamed_to: Option<String>,
    /// With `renamed_to`: the key's position in its object, so the adapted
    /// program restores the object's key order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_position: Option<usize>,
    /// A measurement in a text document (`12.5 mm`): the text as it was;
    /// `block` and `variable` are then empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_original: Option<String>,
    /// With `text_original`: the text written in its place (`0.49213 inches`),
    /// unique in the changed document, so the adapted program puts the
    /// original back exactly when it reads the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text_converted: Option<String>,
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
    /// The reference reads could not be found.
    #[error(transparent)]
    Reads(#[from] crate::reads::ReadsError),
    /// The output directory is, lies inside, or holds the release.
    #[error(transparent)]
    Output(#[from] earthverse_package_model::OutputError),
    /// The output directory is not empty.
    #[error("{0}: the output directory must be new or empty (the original is never overwritten)")]
    OutputNotEmpty(PathBuf),
    /// Writing the perturbed release failed (a full disk, an unreadable
    /// file); nothing was left at `out`.
    #[error("writing the perturbed release {}", out.display())]
    Writing {
        /// The release that was being written.
        out: PathBuf,
        /// What failed (it names the staging folder's file).
        #[source]
        source: Box<PerturbError>,
    },
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

/// What one task's perturbation does: files to add (package-relative
/// path, bytes, what), remove, rewrite, and the evidence it targets.
#[derive(Debug, Default)]
struct Edit {
    add: Vec<(String, Vec<u8>, String)>,
    remove: Vec<(String, String)>,
    rewrite: Vec<(String, Vec<u8>, String)>,
    target: Option<Target>,
    unit_change: Option<UnitChange>,
}

/// Whether `bytes` hold a plain-text document (JSON, CSV, HTML, XML or
/// text, sniffed from content, never from the suffix): what can be cut or
/// edited as text. PDFs are textual for the tools but not plain text.
fn is_plain_text(bytes: &[u8]) -> bool {
    use earthverse_package_model::FileKind;
    matches!(
        sniff_bytes(bytes),
        FileKind::Json | FileKind::Html | FileKind::Xml | FileKind::Csv | FileKind::Text
    )
}

/// A long text file: at least this many characters (App. A.3.3 "long
/// text is truncated").
pub const LONG_TEXT_CHARS: usize = 2_000;

/// The files of the task's reads that the package holds, needed ones first
/// (in first-open order within each group).
fn read_files<'a>(reads: &'a TaskReads, files: &[String]) -> Vec<&'a OpenedFile> {
    let mut out: Vec<&OpenedFile> = reads
        .files
        .iter()
        .filter(|f| files.contains(&f.path))
        .collect();
    out.sort_by_key(|f| match f.needed {
        Some(true) => 0,
        None => 1,
        Some(false) => 2,
    });
    out
}

fn how_read(f: &OpenedFile) -> String {
    let keys = if f.keys.is_empty() {
        String::new()
    } else {
        format!(
            "; it looks up {}",
            f.keys
                .iter()
                .take(4)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    match (f.needed, &f.without_it) {
        (Some(true), Some(without)) => {
            format!(
                "the reference analysis opens it and uses its content (ablated: {without}){keys}"
            )
        }
        (Some(false), _) => {
            format!("the reference analysis opens it but its answer does not depend on its values (it checks or rejects it){keys}")
        }
        _ => format!("the reference analysis opens it{keys}"),
    }
}

/// Quoted string literals of `program` (4 characters or more), the text a
/// program searches documents for.
fn program_literals(program: &str) -> Vec<String> {
    let mut out = Vec::new();
    for quote in ['"', '\''] {
        let mut parts = program.split(quote);
        parts.next();
        for (i, part) in parts.enumerate() {
            if i % 2 == 0 && part.chars().count() >= 4 && !part.contains('\n') {
                out.push(part.to_string());
            }
        }
    }
    out
}

/// Where to cut `text` so that the cut falls inside the part the analysis
/// reads: the middle one of the anchors (the keys it looks up, written as
/// JSON keys, else the program's literals) found past the first tenth of
/// the text; the middle of the text without anchors. A char boundary.
fn cut_point(text: &str, keys: &[String], literals: &[String]) -> usize {
    let mut floor = text.len() / 10;
    while !text.is_char_boundary(floor) {
        floor -= 1;
    }
    let mut anchors: Vec<usize> = Vec::new();
    for key in keys {
        let last = key.rsplit('.').next().unwrap_or(key).trim_end_matches("[]");
        if last.is_empty() {
            continue;
        }
        if let Some(at) = text[floor..].find(&format!("\"{last}\"")) {
            anchors.push(floor + at);
        }
    }
    if anchors.is_empty() {
        for literal in literals {
            if let Some(at) = text[floor..].find(literal.as_str()) {
                anchors.push(floor + at);
            }
        }
    }
    anchors.sort_unstable();
    anchors.dedup();
    let mut at = if anchors.is_empty() {
        text.len() / 2
    } else {
        anchors[anchors.len() / 2]
    };
    while at > 0 && !text.is_char_boundary(at) {
        at -= 1;
    }
    at.max(1).min(text.len().saturating_sub(1))
}

fn plan_task(
    release: &Release,
    all_files: &BTreeMap<String, Vec<String>>,
    task: &Task,
    reads: &TaskReads,
    kind: PerturbationKind,
    rng: &mut rand_chacha::ChaCha20Rng,
) -> Result<Edit, String> {
    let root = release.task_package_dir(task);
    let files = files_of(&root);
    let read = |rel: &str| std::fs::read(root.join(rel)).map_err(|e| format!("{rel}: {e}"));
    let opened = read_files(reads, &files);
    let mut edit = Edit::default();
    match kind {
        PerturbationKind::Distractors => {
            let event = task.event_id.as_str();
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
            let needed: Vec<&&OpenedFile> =
                opened.iter().filter(|f| f.needed == Some(true)).collect();
            let pool: Vec<&&OpenedFile> = if needed.is_empty() {
                // No audit verdict (the program did not reproduce its
                // answer, or a static reading): any file it opens.
                opened.iter().filter(|f| f.needed.is_none()).collect()
            } else {
                needed
            };
            let Some(chosen) = pool.choose(rng) else {
                return Err(if opened.is_empty() {
                    "the reference analysis opens no file of the package".into()
                } else {
                    "the reference analysis needs none of the files it opens (its answer is the same without each)".into()
                });
            };
            edit.remove.push((
                chosen.path.clone(),
                "supporting file of the task's reference analysis removed".into(),
            ));
            edit.target = Some(Target {
                file: chosen.path.clone(),
                variable: None,
                change: "removed".into(),
                why: how_read(chosen),
            });
        }
        PerturbationKind::Truncated => {
            let literals = task
                .compute_gt_py
                .as_deref()
                .map(program_literals)
                .unwrap_or_default();
            let mut chosen = None;
            for f in &opened {
                let bytes = read(&f.path)?;
                if !is_plain_text(&bytes) {
                    continue;
                }
                let Ok(text) = String::from_utf8(bytes) else {
                    continue;
                };
                if text.chars().count() >= LONG_TEXT_CHARS {
                    chosen = Some((*f, text));
                    break;
                }
            }
            let Some((file, text)) = chosen else {
                return Err(format!(
                    "no text file of {LONG_TEXT_CHARS} characters or more among the files the reference analysis opens"
                ));
            };
            let at = cut_point(&text, &file.keys, &literals);
            let kept = &text[..at];
            let total = text.chars().count();
            let kept_chars = kept.chars().count();
            let what = format!("cut to its first {kept_chars} of {total} characters");
            edit.rewrite.push((
                file.path.clone(),
                format!("{kept}\n[...]\n").into_bytes(),
                what.clone(),
            ));
            edit.target = Some(Target {
                file: file.path.clone(),
                variable: None,
                change: what,
                why: format!("{}; the cut falls inside the part it reads", how_read(file)),
            });
        }
        PerturbationKind::UnitChange => {
            let (bytes, target, change) = plan_unit_change(task, &opened, &read, rng)?;
            edit.rewrite
                .push((target.file.clone(), bytes, target.change.clone()));
            edit.target = Some(target);
            edit.unit_change = Some(change);
        }
        PerturbationKind::Conflicting => {
            let primary_keys: Vec<String> = opened
                .iter()
                .filter(|f| f.needed != Some(false))
                .flat_map(|f| f.keys.iter().cloned())
                .collect();
            let words = quantity_words(task, &primary_keys);
            let (file, why, (changed, variable, what)) =
                conflicting_target(&opened, &read, &words)?;
            edit.rewrite.push((file.clone(), changed, what.clone()));
            edit.target = Some(Target {
                file,
                variable,
                change: what,
                why,
            });
        }
    }
    Ok(edit)
}

/// A conflicting edit: the new bytes, the key changed (JSON), what changed.
type ConflictEdit = (Vec<u8>, Option<String>, String);

/// Makes `bytes` (the file at `path`) disagree on a quantity: a JSON
/// document's numbers at a key (`own` keys first, see [`conflict_json`]),
/// else its ISO dates at a looked-up key moved by three days; a text's
/// measured value next to a quantity word, else its first measured value
/// (× 1.5, same decimals). `None` when nothing can be changed.
fn conflict_edit(
    bytes: &[u8],
    path: &str,
    own: &[String],
    words: &[String],
) -> Option<ConflictEdit> {
    if suffix(path) == "json" || suffix(path) == "geojson" {
        let mut value: Value = serde_json::from_slice(bytes).ok()?;
        let (key, what) =
            conflict_json(&mut value, own, words).or_else(|| shift_dates(&mut value, own))?;
        return Some((json_bytes(&value).ok()?, Some(key), what));
    }
    if !is_plain_text(bytes) {
        return None;
    }
    let text = String::from_utf8_lossy(bytes);
    let (changed, what) =
        change_measurement_near(&text, words).or_else(|| change_first_measurement(&text))?;
    Some((changed.into_bytes(), None, what))
}

/// Moves every ISO date (`YYYY-MM-DD...`) at the first of `keys` that holds
/// one by three days later: a secondary source's stated window that no
/// longer agrees. Returns the key and what changed.
fn shift_dates(value: &mut Value, keys: &[String]) -> Option<(String, String)> {
    fn shift(v: &mut Value) -> usize {
        match v {
            Value::String(s) => {
                let Some(date) = s
                    .get(..10)
                    .and_then(|d| chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").ok())
                else {
                    return 0;
                };
                let moved = date + chrono::Duration::days(3);
                *s = format!("{}{}", moved.format("%Y-%m-%d"), &s[10..]);
                1
            }
            Value::Array(items) => items.iter_mut().map(shift).sum(),
            Value::Object(map) => map.values_mut().map(shift).sum(),
            _ => 0,
        }
    }
    for key in keys {
        let Some(target) = value_at(value, key) else {
            continue;
        };
        let changed = shift(target);
        if changed > 0 {
            return Some((
                key.clone(),
                format!("{key}: {changed} date(s) moved three days later"),
            ));
        }
    }
    None
}

/// A JSON document as a perturbation writes it (pretty, newline-ended).
fn json_bytes(value: &Value) -> Result<Vec<u8>, String> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| e.to_string())?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// One of `candidates`, drawn with `rng` among those in files the analysis
/// needs when there are any, else among all (`file` names each one's file).
fn choose_needed_first<'a, T>(
    candidates: &'a [T],
    file: impl Fn(&T) -> &OpenedFile,
    rng: &mut rand_chacha::ChaCha20Rng,
) -> Option<&'a T> {
    let best = candidates
        .iter()
        .map(|c| file(c).needed != Some(true))
        .min()?;
    let pool: Vec<&T> = candidates
        .iter()
        .filter(|c| (file(c).needed != Some(true)) == best)
        .collect();
    pool.choose(rng).copied()
}

/// A unit change of what the analysis reads, in the first layout that
/// applies: a unit-labelled JSON series it looks up (or, read statically,
/// names); else a looked-up key whose name carries the unit; else a
/// measurement in a text it reads, in a unit its program names. Returns
/// the changed file's bytes, the target and the conversion.
fn plan_unit_change(
    task: &Task,
    opened: &[&OpenedFile],
    read: &dyn Fn(&str) -> Result<Vec<u8>, String>,
    rng: &mut rand_chacha::ChaCha20Rng,
) -> Result<(Vec<u8>, Target, UnitChange), String> {
    let program = task.compute_gt_py.as_deref().unwrap_or("");
    let mut documents: Vec<(&OpenedFile, Value)> = Vec::new();
    for f in opened.iter().filter(|f| suffix(&f.path) == "json") {
        if let Ok(value) = serde_json::from_slice::<Value>(&read(&f.path)?) {
            documents.push((*f, value));
        }
    }
    // 1. Series with a unit label (`<block>_units`).
    let mut series = Vec::new();
    for (f, value) in &documents {
        for (block, var, unit) in unit_series(value) {
            let key = format!("{block}.{var}");
            let looked_up = f.keys.iter().any(|k| k == &key);
            let named =
                program.contains(&format!("\"{var}\"")) || program.contains(&format!("'{var}'"));
            if looked_up || (f.keys.is_empty() && named) {
                series.push((*f, value, block, var, unit, looked_up));
            }
        }
    }
    if let Some((f, value, block, var, unit, looked_up)) =
        choose_needed_first(&series, |c| c.0, rng)
    {
        let mut value = (*value).clone();
        let change = convert_series(&mut value, &f.path, block, var, unit)
            .ok_or("the series could not be converted")?;
        let what = format!(
            "{block}.{var}: {unit} -> {} (x * {} + {}, label updated)",
            change.to, change.factor, change.offset
        );
        let how = if *looked_up {
            "the program looks this series up"
        } else {
            "the program names this series"
        };
        let target = Target {
            file: f.path.clone(),
            variable: Some(format!("{block}.{var}")),
            change: what,
            why: format!("{}; {how}", how_read(f)),
        };
        return Ok((json_bytes(&value)?, target, change));
    }
    // 2. Units written in the names of the keys the analysis looks up.
    let mut keyed = Vec::new();
    for (f, value) in &documents {
        for key in &f.keys {
            if let Some((block, name, token)) = unit_key(value, key) {
                keyed.push((*f, value, block, name, token));
            }
        }
    }
    if let Some((f, value, block, name, token)) = choose_needed_first(&keyed, |c| c.0, rng) {
        let mut value = (*value).clone();
        let change = convert_key(&mut value, &f.path, block, name, token)
            .ok_or("the value could not be converted")?;
        let path = if block.is_empty() {
            name.clone()
        } else {
            format!("{block}.{name}")
        };
        let what = format!(
            "{path}: {} -> {} (x * {} + {}; key renamed to {})",
            change.from,
            change.to,
            change.factor,
            change.offset,
            change.renamed_to.as_deref().unwrap_or("")
        );
        let target = Target {
            file: f.path.clone(),
            variable: Some(path),
            change: what,
            why: format!("{}; the program looks this value up", how_read(f)),
        };
        return Ok((json_bytes(&value)?, target, change));
    }
    // 3. A measurement in a text the analysis reads, in a unit its program names.
    let literals = program_literals(program);
    for f in opened {
        let bytes = read(&f.path)?;
        if suffix(&f.path) == "json" || !is_plain_text(&bytes) {
            continue;
        }
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        let Some((changed, change)) = convert_text(&text, &f.path, &literals) else {
            continue;
        };
        let what = format!(
            "`{}` -> `{}` ({} -> {}, x * {} + {})",
            change.text_original.as_deref().unwrap_or(""),
            change.text_converted.as_deref().unwrap_or(""),
            change.from,
            change.to,
            change.factor,
            change.offset
        );
        let target = Target {
            file: f.path.clone(),
            variable: change.text_original.clone(),
            change: what,
            why: format!(
                "{}; its program reads measurements in {}",
                how_read(f),
                change.from
            ),
        };
        return Ok((changed.into_bytes(), target, change));
    }
    Err(
        "the reference analysis reads no unit-labelled value: no JSON series in °C, K, mm, cm, km/h, m/s, kt or hPa (`<block>_units`), no key it looks up that names such a unit (`..._mm_...`), and no measurement in a text it reads in a unit its program names"
            .into(),
    )
}

/// The secondary source of a conflicting-evidence perturbation, always a
/// file the analysis opens, in this order: one whose values it does not use
/// (it checks or rejects it); a second JSON source it reads that reports
/// the same quantity as its primary source; a text it reads that states a
/// measured value next to a word of that quantity. Never the primary itself
/// (the needed JSON file in which the analysis looks up most keys). Returns
/// the file, why, and its edit.
fn conflicting_target(
    opened: &[&OpenedFile],
    read: &dyn Fn(&str) -> Result<Vec<u8>, String>,
    words: &[String],
) -> Result<(String, String, ConflictEdit), String> {
    for f in opened.iter().filter(|f| f.needed == Some(false)) {
        if let Some(edit) = conflict_edit(&read(&f.path)?, &f.path, &f.keys, words) {
            return Ok((
                f.path.clone(),
                format!("secondary source: {}", how_read(f)),
                edit,
            ));
        }
    }
    let needed: Vec<&&OpenedFile> = opened
        .iter()
        .filter(|f| f.needed == Some(true) && !f.keys.is_empty())
        .collect();
    let primary = needed
        .iter()
        .enumerate()
        .max_by_key(|(i, f)| (f.keys.len(), std::cmp::Reverse(*i)))
        .map(|(_, f)| **f);
    if let Some(primary) = primary {
        let primary_words = key_words(&primary.keys);
        for f in needed.iter().filter(|f| f.path != primary.path) {
            let shared: Vec<String> = f
                .keys
                .iter()
                .filter(|k| !key_words(std::slice::from_ref(*k)).is_disjoint(&primary_words))
                .cloned()
                .collect();
            if shared.is_empty() {
                continue;
            }
            if let Some(edit) = conflict_edit(&read(&f.path)?, &f.path, &shared, &[]) {
                return Ok((
                    f.path.clone(),
                    format!(
                        "second source: the reference analysis reads it beside its primary \
                         source {} and both report {}",
                        primary.path,
                        shared.join(", ")
                    ),
                    edit,
                ));
            }
        }
        // A report the analysis reads, stating the primary's quantity.
        let mut report_words: Vec<String> = primary_words.into_iter().collect();
        report_words.extend(words.iter().cloned());
        for f in opened
            .iter()
            .filter(|f| f.needed == Some(true) && f.path != primary.path)
            .filter(|f| suffix(&f.path) != "json" && suffix(&f.path) != "geojson")
        {
            let bytes = read(&f.path)?;
            if !is_plain_text(&bytes) {
                continue;
            }
            let text = String::from_utf8_lossy(&bytes);
            if let Some((changed, what)) = change_measurement_near(&text, &report_words) {
                return Ok((
                    f.path.clone(),
                    format!(
                        "second source: a report the reference analysis reads beside its \
                         primary source {}, stating a value of the same quantity",
                        primary.path
                    ),
                    (changed.into_bytes(), None, what),
                ));
            }
        }
    }
    Err(
        "the reference analysis opens no secondary source: it uses the values of every file it opens, and none of them reports a quantity its primary source reports"
            .into(),
    )
}

/// The quantity words of looked-up keys: their parts of four letters or
/// more, without the structural ones (`stats`, `daily`, `time`, ...).
fn key_words(keys: &[String]) -> BTreeSet<String> {
    const STRUCTURAL: [&str; 16] = [
        "stats",
        "mean",
        "time",
        "daily",
        "hourly",
        "temporal",
        "window",
        "start",
        "date",
        "value",
        "values",
        "features",
        "properties",
        "elements",
        "tags",
        "data",
    ];
    keys.iter()
        .flat_map(|k| k.split(['.', '_', '-', '[', ']']))
        .map(str::to_lowercase)
        .filter(|w| w.len() >= 4 && !STRUCTURAL.contains(&w.as_str()))
        .collect()
}

/// Words of the quantities the task asks for: its `primary_gt` keys and the
/// keys the analysis reads, split at `_`, `.` and `-`.
fn quantity_words(task: &Task, keys: &[String]) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    out.push(k.clone());
                    walk(v, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut names = keys.to_vec();
    walk(&task.ground_truth.primary_gt, &mut names);
    let stop = [
        "the", "and", "max", "min", "mean", "total", "value", "values", "date", "time", "source",
        "file", "path", "label", "status", "count", "days",
    ];
    let mut words: Vec<String> = names
        .iter()
        .flat_map(|n| n.split(['_', '.', '-', '[', ']']))
        .map(str::to_lowercase)
        .filter(|w| w.len() >= 4 && !stop.contains(&w.as_str()))
        .collect();
    words.sort();
    words.dedup();
    words
}

/// Changes the first measured value that follows (within 80 bytes) one of
/// `words`, as [`change_first_measurement`] changes the first one.
fn change_measurement_near(text: &str, words: &[String]) -> Option<(String, String)> {
    let lower = text.to_lowercase();
    if lower.len() != text.len() {
        return None;
    }
    let mut best: Option<usize> = None;
    for w in words {
        let mut from = 0;
        while let Some(at) = lower[from..].find(w.as_str()) {
            let start = from + at;
            let end = (start + w.len() + 80).min(text.len());
            if text.is_char_boundary(start) && text.is_char_boundary(end) {
                if let Some((changed, _)) = change_first_measurement(&text[start..end]) {
                    // The window changed: keep the earliest such place.
                    if best.is_none_or(|b| start < b) && changed != text[start..end] {
                        best = Some(start);
                    }
                    break;
                }
            }
            from = start + w.len();
        }
    }
    let start = best?;
    let (changed_tail, what) = change_first_measurement(&text[start..])?;
    Some((format!("{}{changed_tail}", &text[..start]), what))
}

/// Dotted paths of the numeric values of `value` (a number, or a list
/// holding numbers), through objects only, in document order.
fn numeric_paths(value: &Value) -> Vec<String> {
    fn walk(v: &Value, path: String, out: &mut Vec<String>) {
        if let Value::Object(map) = v {
            for (k, child) in map {
                let here = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                let numeric = child.is_number()
                    || child
                        .as_array()
                        .is_some_and(|a| a.iter().any(Value::is_number));
                if numeric {
                    out.push(here);
                } else {
                    walk(child, here, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    walk(value, String::new(), &mut out);
    out
}

/// The value at a dotted path (through objects; `[]` parts are skipped).
fn value_at<'a>(v: &'a mut Value, path: &str) -> Option<&'a mut Value> {
    let mut here = v;
    for part in path.split('.') {
        let part = part.trim_end_matches("[]");
        if part.is_empty() {
            continue;
        }
        here = here.as_object_mut()?.get_mut(part)?;
    }
    Some(here)
}

/// Scales every number of `v` (a number or a list of them, nested):
/// x * 1.5, 0 set to 1, integers kept integers. Returns how many.
fn scale(v: &mut Value) -> usize {
    match v {
        Value::Number(n) => {
            let Some(x) = n.as_f64() else { return 0 };
            let integer = n.is_i64() || n.is_u64();
            let y = if x == 0.0 { 1.0 } else { x * 1.5 };
            *v = if integer {
                json!(y.round() as i64)
            } else {
                json!(y)
            };
            1
        }
        Value::Array(items) => items.iter_mut().map(scale).sum(),
        _ => 0,
    }
}

/// Makes a secondary JSON source disagree on a quantity: multiplies the
/// numbers at one key by 1.5 (0 becomes 1). The key is the first of `own`
/// (keys the analysis looks up in this file) that holds numbers, else the
/// numeric key sharing most words with `words` (the quantities the task
/// asks for and the analysis reads), else the first numeric key. Returns
/// the key and what changed.
fn conflict_json(value: &mut Value, own: &[String], words: &[String]) -> Option<(String, String)> {
    let paths = numeric_paths(value);
    let overlap = |path: &str| {
        path.to_lowercase()
            .split(['_', '.', '-'])
            .filter(|w| words.iter().any(|x| x == w))
            .count()
    };
    let by_words = paths
        .iter()
        .map(|p| (overlap(p), p))
        .filter(|(n, _)| *n > 0)
        .max_by_key(|(n, p)| (*n, std::cmp::Reverse(paths.iter().position(|q| q == *p))))
        .map(|(_, p)| p.clone());
    let keys: Vec<String> = own
        .iter()
        .cloned()
        .chain(by_words)
        .chain(paths.first().cloned())
        .collect();
    for key in keys {
        let Some(target) = value_at(value, &key) else {
            continue;
        };
        let changed = scale(target);
        if changed == 0 {
            continue;
        }
        return Some((
            key.clone(),
            format!("{key}: {changed} value(s) multiplied by 1.5 (0 set to 1)"),
        ));
    }
    None
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

/// `(new unit, factor, offset)`: physically equivalent conversions
/// (`new = old * factor + offset`).
fn conversion(unit: &str) -> Option<(&'static str, f64, f64)> {
    match unit {
        "°C" | "degC" | "C" | "celsius" => Some(("K", 1.0, 273.15)),
        "K" | "kelvin" => Some(("°C", 1.0, -273.15)),
        "°F" | "degF" | "F" => Some(("°C", 5.0 / 9.0, -160.0 / 9.0)),
        "mm" => Some(("inch", 1.0 / 25.4, 0.0)),
        "cm" => Some(("mm", 10.0, 0.0)),
        "km/h" | "kmh" => Some(("m/s", 1.0 / 3.6, 0.0)),
        "m/s" | "ms" => Some(("km/h", 3.6, 0.0)),
        "kt" | "kn" | "knots" => Some(("m/s", 0.514_444, 0.0)),
        "hPa" | "mb" | "mbar" => Some(("Pa", 100.0, 0.0)),
        "MJ/m²" | "MJ/m2" => Some(("kWh/m²", 1.0 / 3.6, 0.0)),
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

/// The unit tokens a key name may carry (`_mm_`, `_c`), each with its
/// physically equivalent replacement: `(token, new token, unit, new unit,
/// factor, offset)`.
const KEY_UNITS: [(&str, &str, &str, &str, f64, f64); 8] = [
    ("c", "k", "°C", "K", 1.0, 273.15),
    ("degc", "k", "°C", "K", 1.0, 273.15),
    ("mm", "inch", "mm", "inch", 1.0 / 25.4, 0.0),
    ("cm", "mm", "cm", "mm", 10.0, 0.0),
    ("kmh", "ms", "km/h", "m/s", 1.0 / 3.6, 0.0),
    ("ms", "kmh", "m/s", "km/h", 3.6, 0.0),
    ("kt", "ms", "kt", "m/s", 0.514_444, 0.0),
    ("hpa", "pa", "hPa", "Pa", 100.0, 0.0),
];

/// For a looked-up key path (`stats.precipitation_sum_mm_max`) whose last
/// part names a unit of [`KEY_UNITS`] (as one `_`-separated word, not the
/// first) and holds a number or a list of numbers: `(object path, key,
/// token)`.
fn unit_key(document: &Value, key_path: &str) -> Option<(String, String, String)> {
    if key_path.contains("[]") {
        return None;
    }
    let (block, name) = match key_path.rsplit_once('.') {
        Some((b, n)) => (b.to_string(), n.to_string()),
        None => (String::new(), key_path.to_string()),
    };
    let mut here = document;
    for part in block.split('.').filter(|p| !p.is_empty()) {
        here = here.get(part)?;
    }
    let value = here.as_object()?.get(&name)?;
    let numeric = value.is_number()
        || value
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(|v| v.is_number() || v.is_null()));
    if !numeric {
        return None;
    }
    let words: Vec<&str> = name.split('_').collect();
    let token = words
        .iter()
        .skip(1)
        .find(|w| KEY_UNITS.iter().any(|(t, ..)| t == *w))?;
    Some((block, name.clone(), (*token).to_string()))
}

/// Converts the value at `block.name` to the unit [`KEY_UNITS`] pairs with
/// `token` and renames the key accordingly (the label is the key's name);
/// four more decimals than the original, as [`convert_series`].
fn convert_key(
    document: &mut Value,
    file: &str,
    block: &str,
    name: &str,
    token: &str,
) -> Option<UnitChange> {
    let (_, new_token, from, to, factor, offset) = *KEY_UNITS.iter().find(|(t, ..)| *t == token)?;
    let mut here = &mut *document;
    for part in block.split('.').filter(|p| !p.is_empty()) {
        here = here.get_mut(part)?;
    }
    let object = here.as_object_mut()?;
    let renamed: String = name
        .split('_')
        .enumerate()
        .map(|(i, w)| if i > 0 && w == token { new_token } else { w })
        .collect::<Vec<_>>()
        .join("_");
    if object.contains_key(&renamed) {
        return None;
    }
    let position = object.keys().position(|k| k == name)?;
    let original = object.get(name)?.clone();
    let mut items: Vec<Value> = match &original {
        Value::Array(items) => items.clone(),
        other => vec![other.clone()],
    };
    let (decimals, integer_positions, converted_sum) = convert_values(&mut items, factor, offset);
    let length = items.len();
    let new_value = if original.is_array() {
        Value::Array(items)
    } else {
        items.into_iter().next()?
    };
    // Rebuild the object with the renamed key in the same place.
    let entries: Vec<(String, Value)> = std::mem::take(object).into_iter().collect();
    for (k, v) in entries {
        if k == name {
            object.insert(renamed.clone(), new_value.clone());
        } else {
            object.insert(k, v);
        }
    }
    Some(UnitChange {
        file: file.to_string(),
        block: block.to_string(),
        variable: name.to_string(),
        from: from.to_string(),
        to: to.to_string(),
        factor,
        offset,
        decimals,
        integer_positions,
        length,
        converted_sum,
        adapted_program: false,
        renamed_to: Some(renamed),
        key_position: Some(position),
        text_original: None,
        text_converted: None,
    })
}

/// Units of measurements in text, as written, with a physically
/// equivalent unit: `(unit, new unit, factor, offset)`. Longer spellings
/// first, so `km/h` is not read as `km`.
const TEXT_UNITS: [(&str, &str, f64, f64); 22] = [
    ("millimetres", "inches", 1.0 / 25.4, 0.0),
    ("millimeters", "inches", 1.0 / 25.4, 0.0),
    ("inches", "mm", 25.4, 0.0),
    ("hectares", "acres", 2.471_054, 0.0),
    ("acres", "hectares", 0.404_686, 0.0),
    ("square kilometres", "square miles", 0.386_102, 0.0),
    ("square kilometers", "square miles", 0.386_102, 0.0),
    ("km²", "square miles", 0.386_102, 0.0),
    ("km2", "square miles", 0.386_102, 0.0),
    ("kilometres", "miles", 1.0 / 1.609_344, 0.0),
    ("kilometers", "miles", 1.0 / 1.609_344, 0.0),
    ("miles", "km", 1.609_344, 0.0),
    ("km/h", "m/s", 1.0 / 3.6, 0.0),
    ("mph", "km/h", 1.609_344, 0.0),
    ("m/s", "km/h", 3.6, 0.0),
    ("knots", "km/h", 1.852, 0.0),
    ("hPa", "kPa", 0.1, 0.0),
    ("°C", "°F", 1.8, 32.0),
    ("°F", "°C", 5.0 / 9.0, -160.0 / 9.0),
    ("mm", "inches", 1.0 / 25.4, 0.0),
    ("cm", "mm", 10.0, 0.0),
    ("km", "miles", 1.0 / 1.609_344, 0.0),
];

/// The first measurement of `text` (a number, an optional space, a unit of
/// [`TEXT_UNITS`] ending at a word boundary) whose unit the program names
/// in one of its `literals`, converted: the changed text and the change.
/// Two more decimals than written (at least two), so the converted value
/// stays exact to the original's precision.
fn convert_text(text: &str, file: &str, literals: &[String]) -> Option<(String, UnitChange)> {
    let named = |unit: &str| {
        let lower = unit.to_lowercase();
        literals.iter().any(|l| l.to_lowercase().contains(&lower))
    };
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts_number = bytes[i].is_ascii_digit()
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'.'));
        if !starts_number {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < bytes.len()
            && (bytes[j].is_ascii_digit()
                || ((bytes[j] == b'.' || bytes[j] == b',')
                    && j + 1 < bytes.len()
                    && bytes[j + 1].is_ascii_digit()))
        {
            j += 1;
        }
        let number = &text[i..j];
        let after = &text[j..];
        let (gap, rest) = match after
            .strip_prefix(' ')
            .or_else(|| after.strip_prefix('\u{a0}'))
        {
            Some(rest) => (after.len() - rest.len(), rest),
            None => (0, after),
        };
        let unit = TEXT_UNITS.iter().find(|(u, ..)| {
            rest.starts_with(u)
                && !rest[u.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_alphanumeric() || c == '/' || c == '²')
        });
        if let (Some(&(unit, to, factor, offset)), Ok(x)) =
            (unit, number.replace(',', "").parse::<f64>())
        {
            if named(unit) {
                let decimals = number.rsplit_once('.').map_or(0, |(_, d)| d.len()) + 2;
                let y = x * factor + offset;
                let converted = format!("{y:.decimals$} {to}");
                let end = j + gap + unit.len();
                let original = text[i..end].to_string();
                let changed = format!("{}{converted}{}", &text[..i], &text[end..]);
                if changed.matches(&converted).count() == 1 {
                    return Some((
                        changed,
                        UnitChange {
                            file: file.to_string(),
                            block: String::new(),
                            variable: String::new(),
                            from: unit.to_string(),
                            to: to.to_string(),
                            factor,
                            offset,
                            decimals: u32::try_from(decimals).unwrap_or(u32::MAX),
                            integer_positions: Vec::new(),
                            length: 1,
                            converted_sum: y,
                            adapted_program: false,
                            renamed_to: None,
                            key_position: None,
                            text_original: Some(original),
                            text_converted: Some(converted),
                        },
                    ));
                }
            }
        }
        i = j.max(i + 1);
    }
    None
}

/// Converts every number of `values` in place (`x * factor + offset`,
/// four decimals more than the most any value has, so converting back and
/// rounding restores each exactly). Returns those original decimals, the
/// positions of JSON integers, and the sum of the converted numbers: what
/// [`UnitChange`] records for the adapted program.
fn convert_values(values: &mut [Value], factor: f64, offset: f64) -> (u32, Vec<usize>, f64) {
    let decimals = values
        .iter()
        .filter_map(Value::as_f64)
        .map(decimals_of)
        .max()
        .unwrap_or(0);
    let integer_positions: Vec<usize> = values
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_i64() || v.is_u64())
        .map(|(i, _)| i)
        .collect();
    let mut converted_sum = 0.0;
    for v in values.iter_mut() {
        if let Some(x) = v.as_f64() {
            let y = round_to(x * factor + offset, decimals.saturating_add(4));
            converted_sum += y;
            *v = json!(y);
        }
    }
    (decimals, integer_positions, converted_sum)
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
    let (decimals, integer_positions, converted_sum) = convert_values(series, factor, offset);
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
        adapted_program: false,
        renamed_to: None,
        key_position: None,
        text_original: None,
        text_converted: None,
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
        "renamed_to": change.renamed_to,
        "key_position": change.key_position,
        "file": change.file,
        "text_original": change.text_original,
        "text_converted": change.text_converted,
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

/// Hard-links (or copies) every file below `from` to `to`. A package
/// folder that is a symlink (data on shared storage) is followed, and so is
/// a file that is a symlink (its target is linked, not the link).
fn copy_tree(from: &Path, to: &Path) -> Result<(), PerturbError> {
    let from = &std::fs::canonicalize(from).map_err(io(from))?;
    for entry in walkdir::WalkDir::new(from).sort_by_file_name() {
        let entry = entry.map_err(|e| PerturbError::Io {
            path: e.path().unwrap_or(from).to_path_buf(),
            source: e.into(),
        })?;
        if entry.file_type().is_dir() {
            continue;
        }
        let rel = entry.path().strip_prefix(from).unwrap_or(entry.path());
        if entry.path_is_symlink() {
            let real = std::fs::canonicalize(entry.path()).map_err(io(entry.path()))?;
            if real.is_file() {
                link_or_copy(&real, &to.join(rel))?;
            }
            continue;
        }
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

/// Where a perturbed release keeps its manifests (outside every package).
pub const MANIFESTS_DIR: &str = "perturbations";

/// Writes the `kind` perturbation of `release` (every task, or only
/// `tasks`) to `out` with `seed`, targeting each task's evidence as its
/// reference analysis reads it ([`ReferenceReads::load_or_audit_tasks`] of
/// those tasks, cached
/// in [`crate::reads::default_cache_dir`]). Returns the manifests in task
/// order.
///
/// # Errors
/// [`PerturbError`] when `out` is not empty, the reads cannot be found, or
/// a file cannot be read or written.
pub fn perturb_release(
    release: &Release,
    kind: PerturbationKind,
    seed: u64,
    out: &Path,
    tasks: Option<&BTreeSet<String>>,
) -> Result<Vec<TaskPerturbation>, PerturbError> {
    let reads = ReferenceReads::load_or_audit_tasks(
        release,
        tasks,
        None,
        crate::reads::default_cache_dir().as_deref(),
    )?;
    perturb_release_with(release, kind, seed, out, tasks, &reads)
}

/// [`perturb_release`] with the reference reads given.
///
/// # Errors
/// As [`perturb_release`].
pub fn perturb_release_with(
    release: &Release,
    kind: PerturbationKind,
    seed: u64,
    out: &Path,
    tasks: Option<&BTreeSet<String>>,
    reads: &ReferenceReads,
) -> Result<Vec<TaskPerturbation>, PerturbError> {
    // The original is never written: the output may not be it, lie in it,
    // or hold it.
    earthverse_package_model::ensure_output_outside(
        out,
        &[
            ("the release", release.root()),
            ("the release's packages", release.packages_root()),
        ],
        earthverse_package_model::Overlap::Disjoint,
    )?;
    let existed = out.exists();
    if existed && std::fs::read_dir(out).map_err(io(out))?.next().is_some() {
        return Err(PerturbError::OutputNotEmpty(out.to_path_buf()));
    }
    // The release is written into a staging folder beside `out` and renamed
    // into place when complete: a failed run (a full disk) or a killed one
    // never leaves a partial release at `out`, and a rerun starts afresh
    // (it removes the staging folder a killed run left).
    let Some(staging) = staging_dir(out) else {
        return perturb_into(release, kind, seed, out, tasks, reads);
    };
    // Every failure names `out` (the staging folder's name is ours, not
    // the user's): a read-only or full parent fails here already.
    let writing = |e: PerturbError| PerturbError::Writing {
        out: out.to_path_buf(),
        source: Box::new(e),
    };
    if staging.exists() {
        std::fs::remove_dir_all(&staging)
            .map_err(io(&staging))
            .map_err(writing)?;
    }
    std::fs::create_dir_all(&staging)
        .map_err(io(&staging))
        .map_err(writing)?;
    match perturb_into(release, kind, seed, &staging, tasks, reads) {
        Ok(manifests) => {
            let placed = if existed {
                std::fs::remove_dir(out)
            } else {
                Ok(())
            }
            .and_then(|()| std::fs::rename(&staging, out));
            if let Err(e) = placed {
                let _ = std::fs::remove_dir_all(&staging);
                return Err(writing(io(out)(e)));
            }
            Ok(manifests)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            Err(writing(e))
        }
    }
}

/// `PARENT/.NAME.perturbing` for `out = PARENT/NAME`, or `None` when `out`
/// has no file name.
fn staging_dir(out: &Path) -> Option<PathBuf> {
    let name = out.file_name()?.to_string_lossy().into_owned();
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Some(parent.join(format!(".{name}.perturbing")))
}

fn perturb_into(
    release: &Release,
    kind: PerturbationKind,
    seed: u64,
    out: &Path,
    tasks: Option<&BTreeSet<String>>,
    reads: &ReferenceReads,
) -> Result<Vec<TaskPerturbation>, PerturbError> {
    let chosen: Vec<&Task> = release
        .tasks()
        .iter()
        .filter(|t| tasks.is_none_or(|ids| ids.contains(&t.task_id)))
        .collect();
    // Every package's files, listed once (the distractor pool).
    let all_files: BTreeMap<String, Vec<String>> = release
        .event_ids()
        .iter()
        .map(|e| (e.clone(), files_of(&release.package_dir(e))))
        .collect();
    let mut manifests = Vec::new();
    for task in chosen {
        // One generator per task: a task's choices do not depend on which
        // other tasks are perturbed.
        let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(
            seed ^ u64::from_le_bytes(
                sha2::Sha256::digest(task.task_id.as_bytes())[..8]
                    .try_into()
                    .unwrap_or([0; 8]),
            ),
        );
        let task_reads = reads.of(task);
        let target = out
            .join(TASK_PACKAGES_DIR)
            .join(&task.task_id)
            .join(&task.event_id);
        copy_tree(&release.task_package_dir(task), &target)?;
        let mut manifest = TaskPerturbation {
            task_id: task.task_id.clone(),
            event_id: task.event_id.clone(),
            kind,
            seed,
            reads: task_reads.method,
            target: None,
            changes: Vec::new(),
            not_applicable: None,
            unit_change: None,
        };
        let mut records: Vec<(String, Option<(u64, String)>)> = Vec::new();
        match plan_task(release, &all_files, task, &task_reads, kind, &mut rng) {
            Err(reason) => manifest.not_applicable = Some(reason),
            Ok(edit) => {
                manifest.unit_change = edit.unit_change;
                manifest.target = edit.target;
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
        // The task's inventory follows its package.
        let from = release
            .root()
            .join("tasks")
            .join(format!("{}.json", task.task_id));
        let to = out.join("tasks").join(format!("{}.json", task.task_id));
        let text = std::fs::read(&from).map_err(io(&from))?;
        let mut value: Value = serde_json::from_slice(&text).map_err(|e| PerturbError::Task {
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
        // A unit change: the program converts the series back (the ground
        // truth stays in the question's units).
        if let (Some(change), Some(program)) =
            (manifest.unit_change.as_mut(), task.compute_gt_py.as_deref())
        {
            value["compute_gt_py"] = Value::String(adapted_compute_gt(program, change));
            change.adapted_program = true;
        }
        let bytes = serde_json::to_vec_pretty(&value).map_err(|e| PerturbError::Task {
            path: to.clone(),
            message: e.to_string(),
        })?;
        write_new(&to, &bytes)?;
        let dir = out.join(MANIFESTS_DIR);
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let path = dir.join(format!("{}.json", task.task_id));
        let text = serde_json::to_vec_pretty(&manifest).map_err(|e| PerturbError::Task {
            path: path.clone(),
            message: e.to_string(),
        })?;
        std::fs::write(&path, text).map_err(io(&path))?;
        manifests.push(manifest);
    }
    Ok(manifests)
}

/// The manifest of `task_id` in a perturbed release, if it is one.
pub fn read_manifest(release_root: &Path, task_id: &str) -> Option<TaskPerturbation> {
    let path = release_root
        .join(MANIFESTS_DIR)
        .join(format!("{task_id}.json"));
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_text_measurement_in_a_unit_the_program_names_is_converted_exactly_once() {
        let text = "Gauges recorded 12.5 mm on day one, then 310 mm in 24 hours; winds 90 km/h.";
        // The program looks for millimetres: the first `mm` value is taken.
        let literals = vec![r"(\d+(?:\.\d+)?)\s*mm".to_string()];
        let (changed, change) = convert_text(text, "data/r.html", &literals).unwrap();
        assert_eq!(change.text_original.as_deref(), Some("12.5 mm"));
        assert_eq!(change.text_converted.as_deref(), Some("0.492 inches"));
        assert_eq!(changed.matches("0.492 inches").count(), 1);
        assert!(changed.contains("310 mm"), "only one measurement changes");
        // Reverting is one exact substitution.
        assert_eq!(changed.replace("0.492 inches", "12.5 mm"), text);
        // A unit the program never names is left alone; `km/h` is not `km`.
        let literals = vec!["km".to_string()];
        assert!(convert_text(text, "data/r.html", &literals).is_none());
        let literals = vec!["km/h".to_string()];
        let (_, change) = convert_text(text, "data/r.html", &literals).unwrap();
        assert_eq!(change.text_original.as_deref(), Some("90 km/h"));
        assert_eq!(change.to, "m/s");
    }

    #[test]
    fn a_unit_named_key_is_renamed_in_place_with_its_value_converted() {
        let mut doc = json!({"stats": {"n": 3, "precipitation_sum_mm_max": 25.4, "z": 1}});
        let (block, name, token) = unit_key(&doc, "stats.precipitation_sum_mm_max").unwrap();
        assert_eq!((block.as_str(), token.as_str()), ("stats", "mm"));
        let change = convert_key(&mut doc, "f.json", &block, &name, &token).unwrap();
        assert_eq!(
            change.renamed_to.as_deref(),
            Some("precipitation_sum_inch_max")
        );
        let keys: Vec<&String> = doc["stats"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["n", "precipitation_sum_inch_max", "z"], "same place");
        assert_eq!(doc["stats"]["precipitation_sum_inch_max"], json!(1.0));
        assert_eq!(change.key_position, Some(1));
        // A key whose first word only looks like a unit is not one.
        assert!(unit_key(&json!({"mm_count": 2}), "mm_count").is_none());
    }

    #[test]
    fn a_secondary_window_moves_three_days_and_numbers_scale_at_the_looked_up_key() {
        let mut doc = json!({"temporal_window": {"start_date": "2021-06-29", "end_date": "2021-07-01T00:00"}});
        let (key, what) = shift_dates(&mut doc, &["temporal_window".to_string()]).unwrap();
        assert_eq!(key, "temporal_window");
        assert!(what.contains("2 date(s)"), "{what}");
        assert_eq!(doc["temporal_window"]["start_date"], "2021-07-02");
        assert_eq!(doc["temporal_window"]["end_date"], "2021-07-04T00:00");
        let mut doc =
            json!({"meta": {"year": 2021}, "stats": {"rain_mm_max": 10, "rain_mm_mean": 0}});
        let (key, _) = conflict_json(&mut doc, &["stats.rain_mm_max".into()], &[]).unwrap();
        assert_eq!(key, "stats.rain_mm_max");
        assert_eq!(doc["stats"]["rain_mm_max"], json!(15));
        assert_eq!(doc["meta"]["year"], json!(2021), "other values untouched");
        // Without looked-up keys: the key sharing most quantity words.
        let (key, _) = conflict_json(&mut doc, &[], &["rain".into(), "mean".into()]).unwrap();
        assert_eq!(key, "stats.rain_mm_mean");
        assert_eq!(doc["stats"]["rain_mm_mean"], json!(1));
    }
}
