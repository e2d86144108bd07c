//! Study manifests: their types, reading (TOML or JSON) and validation.

use crate::error::{io, Error, Result};
use crate::kinds::{oracle_of, perturbation_of};
use earthverse_agent_controller::Condition;
use earthverse_package_model::RunCondition;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The task manifest of a study: exactly one of its ways is given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskSelection {
    /// Explicit task ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    /// Every task of the release.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub all: bool,
    /// A seeded difficulty-stratified draw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw: Option<StratifiedDraw>,
    /// The reasoning-effort manifest of App. C.5: historically difficult
    /// tasks plus a seeded draw from the rest preferring distinct events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<EffortDraw>,
    /// The smaller paired manifest of App. C.5, drawn from an effort
    /// manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired: Option<PairedDraw>,
}

impl TaskSelection {
    /// How many ways the selection gives (a valid one gives exactly one).
    pub fn ways(&self) -> usize {
        usize::from(!self.ids.is_empty())
            + usize::from(self.all)
            + usize::from(self.draw.is_some())
            + usize::from(self.effort.is_some())
            + usize::from(self.paired.is_some())
    }

    /// Whether resolving it needs the per-task history of the recorded
    /// runs ([`crate::TaskHistory`]).
    pub fn needs_history(&self) -> bool {
        self.effort.is_some() || self.paired.is_some()
    }
}

/// A difficulty-stratified draw (App. B: fixed, difficulty-stratified
/// subsets): `per_level` tasks of each difficulty level, chosen by a
/// ChaCha20 shuffle of the level's sorted ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StratifiedDraw {
    /// Tasks per difficulty level (all of a level when it has fewer).
    pub per_level: usize,
    /// Seed of the draw.
    pub seed: u64,
}

/// The reasoning-effort manifest of App. C.5: "a fixed manifest containing
/// historically difficult tasks and a fixed-seed random draw from the rest
/// of the release, preferring distinct events" ([`crate::draw_effort`]).
/// The paper does not give the two counts; the manifests of `studies/`
/// choose them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffortDraw {
    /// Historically difficult tasks: the lowest mean published Core over
    /// the systems of the release's recorded runs.
    pub difficult: usize,
    /// Tasks drawn from the rest.
    pub random: usize,
    /// Seed of the draw (App. C.5: 2026).
    pub seed: u64,
}

/// The paired manifest of App. C.5: "a smaller paired manifest drawn from"
/// the effort manifest ([`crate::draw_paired`]). Give the effort manifest
/// either inline (`effort`) or as the manifest file that holds it
/// (`from`, relative to this manifest's folder); reading the manifest
/// resolves `from` into `effort`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PairedDraw {
    /// The manifest whose `[tasks] effort` this is drawn from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<PathBuf>,
    /// The effort manifest it is drawn from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<EffortDraw>,
    /// Tasks drawn.
    pub count: usize,
    /// Seed of the draw (App. C.5: 2026).
    pub seed: u64,
}

/// A study manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyManifest {
    /// Study name.
    pub name: String,
    /// What it reproduces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Release root (relative to the working directory); the runner may
    /// override it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<PathBuf>,
    /// Which tasks.
    pub tasks: TaskSelection,
    /// Name of the reference condition for ΔCore and win/tie/loss.
    pub reference: String,
    /// The conditions: `name` plus condition keys.
    pub conditions: Vec<StudyCondition>,
}

/// One condition of a study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyCondition {
    /// Name: a table label and, unless the runs are shared with an
    /// identical condition, the folder of its runs.
    pub name: String,
    /// The paper's row this condition reproduces (a table label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// For a required-environment condition: the difficulty-balanced
    /// compatible manifest of App. C.5 in place of the study's tasks when
    /// some of them lack the environment's inputs
    /// ([`crate::compatible_manifest`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compatible_manifest: Option<CompatibleDraw>,
    /// The condition's keys (absent = the paper's default).
    #[serde(flatten)]
    pub condition: RunCondition,
}

/// `compatible_manifest = { seed = 2026 }` of a required-environment
/// condition (App. C.5: "Core libraries retain the paired manifest;
/// input-dependent environments draw a difficulty-balanced compatible
/// manifest with seed 2026"). The paper gives no size; `count` defaults to
/// the study manifest's size, so every row has as many tasks as the paired
/// manifest (Table 14's Comply column moves in steps of 5 %, 20 tasks).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompatibleDraw {
    /// Seed of the draw (App. C.5: 2026).
    pub seed: u64,
    /// Tasks drawn (default: as many as the study's manifest has).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<usize>,
}

/// The keys a manifest condition may have besides `name` and
/// `description`: those of the run record's `condition`.
pub const CONDITION_KEYS: [&str; 12] = [
    "oracle",
    "perturbation",
    "answer_mode",
    "reasoning_effort",
    "catalogue",
    "tool_names",
    "context",
    "max_turns",
    "task_time_s",
    "temperature",
    "seed",
    "required_environment",
];

/// The keys of a manifest condition that are the study's, not the run
/// record's.
pub const STUDY_CONDITION_KEYS: [&str; 3] = ["name", "description", "compatible_manifest"];

/// Reads a manifest (`.json` as JSON, anything else as TOML), checking
/// every key and value, naming the file and the condition of any problem.
/// A `paired` selection's `from` is read and resolved into its `effort`.
///
/// # Errors
/// [`Error::Io`], [`Error::Parse`], [`Error::UnknownKey`],
/// [`Error::BadCondition`] or [`Error::InvalidManifest`].
pub fn load_manifest(path: &Path) -> Result<StudyManifest> {
    let mut manifest = read_manifest(path)?;
    if let Some(paired) = &mut manifest.tasks.paired {
        if let Some(from) = paired.from.clone() {
            let from_path = path.parent().unwrap_or(Path::new(".")).join(&from);
            // Only its own `effort` is read: no `from` of its own is followed.
            let source = read_manifest(&from_path)?;
            let Some(effort) = source.tasks.effort else {
                return Err(Error::InvalidManifest {
                    path: path.to_path_buf(),
                    message: format!(
                        "[tasks] paired.from = {}: that manifest has no `effort` selection",
                        from.display()
                    ),
                });
            };
            if paired.effort.as_ref().is_some_and(|e| e != &effort) {
                return Err(Error::InvalidManifest {
                    path: path.to_path_buf(),
                    message: format!(
                        "[tasks] paired: `effort` differs from the effort manifest of {}",
                        from.display()
                    ),
                });
            }
            paired.effort = Some(effort);
        }
    }
    Ok(manifest)
}

fn read_manifest(path: &Path) -> Result<StudyManifest> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    let json = path.extension().and_then(|e| e.to_str()) == Some("json");
    parse_manifest(&text, json, path)
}

/// Parses a manifest from text (`json` or TOML); `path` names it in
/// errors. A `paired.from` is left unresolved (see [`load_manifest`]).
///
/// # Errors
/// As [`load_manifest`].
pub fn parse_manifest(text: &str, json: bool, path: &Path) -> Result<StudyManifest> {
    let parse = |message: String| Error::Parse {
        path: path.to_path_buf(),
        message,
    };
    let value: Value = if json {
        serde_json::from_str(text).map_err(|e| parse(format!("not valid JSON: {e}")))?
    } else {
        toml::from_str(text).map_err(|e| parse(format!("not valid TOML: {e}")))?
    };
    for (i, entry) in value
        .get("conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = entry.get("name").and_then(Value::as_str).unwrap_or("?");
        for key in entry.as_object().into_iter().flat_map(|m| m.keys()) {
            if !STUDY_CONDITION_KEYS.contains(&key.as_str())
                && !CONDITION_KEYS.contains(&key.as_str())
            {
                return Err(Error::UnknownKey {
                    path: path.to_path_buf(),
                    index: i + 1,
                    condition: name.to_string(),
                    key: key.clone(),
                    known: format!(
                        "{}, {}",
                        STUDY_CONDITION_KEYS[1..].join(", "),
                        CONDITION_KEYS.join(", ")
                    ),
                });
            }
        }
    }
    let manifest: StudyManifest =
        serde_json::from_value(value).map_err(|e| parse(format!("not a study manifest: {e}")))?;
    check_manifest(&manifest, path)?;
    Ok(manifest)
}

/// Checks a manifest: conditions present, names safe and unique, every
/// condition one the runner accepts, the reference among them, exactly
/// one task selection.
///
/// # Errors
/// [`Error::BadCondition`] or [`Error::InvalidManifest`].
pub fn check_manifest(manifest: &StudyManifest, path: &Path) -> Result<()> {
    let invalid = |message: String| Error::InvalidManifest {
        path: path.to_path_buf(),
        message,
    };
    if manifest.conditions.is_empty() {
        return Err(invalid("it lists no condition".into()));
    }
    let mut seen = BTreeSet::new();
    for c in &manifest.conditions {
        if !is_safe_name(&c.name) {
            return Err(invalid(format!(
                "condition name `{}` must be non-empty ASCII letters, digits or - _ . + =",
                c.name
            )));
        }
        if !seen.insert(c.name.as_str()) {
            return Err(invalid(format!(
                "condition name `{}` appears twice",
                c.name
            )));
        }
        check_condition(&c.name, &c.condition, path)?;
        if let Some(draw) = &c.compatible_manifest {
            let bad = |message: &str| Error::BadCondition {
                path: path.to_path_buf(),
                condition: c.name.clone(),
                key: "compatible_manifest".into(),
                message: message.into(),
            };
            if c.condition.required_environment.is_none() {
                return Err(bad(
                    "needs `required_environment` (the environment whose inputs the tasks must hold)",
                ));
            }
            if c.condition.perturbation.is_some() {
                return Err(bad("cannot be combined with `perturbation`"));
            }
            if draw.count == Some(0) {
                return Err(bad("count must be positive"));
            }
        }
    }
    if !seen.contains(manifest.reference.as_str()) {
        return Err(invalid(format!(
            "the reference `{}` is not one of the conditions",
            manifest.reference
        )));
    }
    let t = &manifest.tasks;
    if t.ways() != 1 {
        return Err(invalid(
            "[tasks] must give exactly one of `ids`, `all = true`, `draw`, `effort` or `paired`"
                .into(),
        ));
    }
    if let Some(p) = &t.paired {
        if usize::from(p.from.is_some()) + usize::from(p.effort.is_some()) == 0 {
            return Err(invalid(
                "[tasks] paired needs `from` (the effort manifest's file) or `effort`".into(),
            ));
        }
        if p.count == 0 {
            return Err(invalid("[tasks] paired.count must be positive".into()));
        }
    }
    if let Some(e) = &t.effort {
        if e.difficult + e.random == 0 {
            return Err(invalid(
                "[tasks] effort must draw at least one task (difficult + random > 0)".into(),
            ));
        }
    }
    Ok(())
}

/// Checks one condition's keys: those the controller reads
/// ([`Condition::from_record`]), the oracle and the perturbation.
///
/// # Errors
/// [`Error::BadCondition`] naming the condition and the key.
pub fn check_condition(name: &str, condition: &RunCondition, path: &Path) -> Result<()> {
    let bad = |key: &str, message: String| Error::BadCondition {
        path: path.to_path_buf(),
        condition: name.to_string(),
        key: key.to_string(),
        message,
    };
    // The controller names the flag (`--max-turns`); the manifest's key is
    // `max_turns`. Both are in the message.
    Condition::from_record(condition).map_err(|e| {
        let key = e.setting.trim_start_matches('-').replace('-', "_");
        bad(&key, e.to_string())
    })?;
    oracle_of(condition).map_err(|m| bad("oracle", m))?;
    perturbation_of(condition).map_err(|m| bad("perturbation", m))?;
    Ok(())
}

fn is_safe_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "-_.+=".contains(ch))
}
