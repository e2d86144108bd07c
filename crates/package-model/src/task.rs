//! Records of the release: [`Task`], [`GroundTruth`], [`Rubric`],
//! [`Criterion`], [`Event`], [`FileRecord`] and typed [`Tolerance`]s.
//!
//! Every record keeps the fields it does not model in `extra`, so that
//! loading and re-serialising a record loses nothing (the release mixes
//! `schema_version` `1.0`, `2.0` and `crossscale_extreme_event_bench_v1`,
//! and ground-truth objects carry dozens of task-specific keys).

use crate::labels::{CapabilityDimension, DifficultyLevel, EvaluationMode, HazardFamily};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One task of the release (`tasks/<task_id>.json`): the public question,
/// the hidden solution and ground truth, and the event it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// Task id, e.g. `CSX-001_Q1`.
    pub task_id: String,
    /// Event (package) id, e.g. `CSX-001`.
    pub event_id: String,
    /// Title of the investigation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Name of the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_name: Option<String>,
    /// Hazard family (one of 19).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hazard_family: Option<HazardFamily>,
    /// Human-readable hazard label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hazard_label: Option<String>,
    /// Region, e.g. `North America`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Spatial scale, e.g. `global_synoptic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<String>,
    /// Difficulty as written, e.g. `L2_quantitative_event_diagnosis`; see
    /// [`Task::difficulty_level`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty: Option<String>,
    /// Why this difficulty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty_rationale: Option<String>,
    /// The primary capability dimension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_dimension: Option<CapabilityDimension>,
    /// All capability dimensions the task exercises.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimensions: Option<Vec<CapabilityDimension>>,
    /// Why these dimensions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dimension_rationale: Option<String>,
    /// Task type, e.g. `short_answer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
    /// Target family, e.g. `expert_source_arbitration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_family: Option<String>,
    /// Number of files in the event package.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_count: Option<u64>,
    /// Files per category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category_counts: Option<BTreeMap<String, u64>>,
    /// The public question (Markdown) — all a solver is shown.
    pub question: String,
    /// The expert solution (hidden).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub solution: Option<String>,
    /// Ground truth and scoring contract (hidden).
    pub ground_truth: GroundTruth,
    /// The executable ground-truth program (hidden).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compute_gt_py: Option<String>,
    /// The event record with the source audit of Appendix E.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Event>,
    /// The package inventory.
    #[serde(default)]
    pub event_files: Vec<FileRecord>,
    /// Fields this type does not model, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Task {
    /// The hidden reference texts, those present: the expert solution and
    /// `compute_gt.py`.
    pub fn reference_texts(&self) -> Vec<&str> {
        [self.solution.as_deref(), self.compute_gt_py.as_deref()]
            .into_iter()
            .flatten()
            .collect()
    }

    /// The package-relative paths of the `event_files` inventory, in order.
    pub fn inventory_paths(&self) -> Vec<&str> {
        self.event_files
            .iter()
            .map(|f| f.relative_path.as_str())
            .collect()
    }

    /// The difficulty level, from `difficulty` or else the ground truth's
    /// `difficulty_level`.
    pub fn difficulty_level(&self) -> Option<DifficultyLevel> {
        self.difficulty
            .as_deref()
            .and_then(DifficultyLevel::parse)
            .or_else(|| {
                self.ground_truth
                    .difficulty_level
                    .as_deref()
                    .and_then(DifficultyLevel::parse)
            })
    }

    /// The hazard family, from the task or else its event record.
    pub fn hazard_family(&self) -> Option<&HazardFamily> {
        self.hazard_family
            .as_ref()
            .or_else(|| self.event.as_ref().and_then(|e| e.hazard_family.as_ref()))
    }

    /// All capability dimensions (empty when the task lists none).
    pub fn dimensions(&self) -> &[CapabilityDimension] {
        self.dimensions.as_deref().unwrap_or(&[])
    }

    /// The evaluation mode, classified.
    pub fn evaluation_mode(&self) -> EvaluationMode {
        self.ground_truth.evaluation_mode()
    }
}

/// The ground-truth object of a task: `primary_gt` (the scored answer),
/// `key_values`, the rubric, tolerances, provenance and the event window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroundTruth {
    /// `1.0`, `2.0` or `crossscale_extreme_event_bench_v1` on the release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<String>,
    /// Task id, repeated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Event id, repeated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id: Option<String>,
    /// Task type, repeated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<String>,
    /// Difficulty level, e.g. `L3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub difficulty_level: Option<String>,
    /// Evaluation mode label as written (free-form; see
    /// [`GroundTruth::evaluation_mode`]).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "evaluation_mode"
    )]
    pub evaluation_mode_label: Option<String>,
    /// The primary ground truth: the object answers are scored against.
    pub primary_gt: Value,
    /// Intermediate values worth checking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_values: Option<Value>,
    /// The 20-point process rubric.
    pub rubric: Rubric,
    /// Tolerances, shape 1 (see [`GroundTruth::tolerances`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numeric_tolerances: Option<Value>,
    /// Tolerances, shape 2 (see [`GroundTruth::tolerances`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerances: Option<Value>,
    /// Anchors for the judge; may hold `required_metrics[]{name, tolerance, value}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_anchors: Option<Value>,
    /// How the ground truth was computed and from which files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provenance: Option<Value>,
    /// The event (and usually its window) as the ground truth states it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<Value>,
    /// Fields this type does not model, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl GroundTruth {
    /// The evaluation mode, classified from `evaluation_mode` (or the
    /// older `eval_mode`).
    pub fn evaluation_mode(&self) -> EvaluationMode {
        let label = self
            .evaluation_mode_label
            .as_deref()
            .or_else(|| self.extra.get("eval_mode").and_then(Value::as_str))
            .unwrap_or("");
        EvaluationMode::classify(label)
    }

    /// The files the ground truth was computed from
    /// (`provenance.source_files`), package-relative.
    pub fn source_files(&self) -> Vec<&str> {
        self.provenance
            .as_ref()
            .and_then(|p| p.get("source_files"))
            .and_then(Value::as_array)
            .map(|files| files.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// The event window `(start, end)` as written, looked up under the
    /// spellings the release uses (`event_window`, `event_date_or_window`,
    /// `temporal_window`, `window_start`/`window_end`, `start_date`/`end_date`, ...).
    pub fn event_window(&self) -> Option<Value> {
        let event = self.event.as_ref()?.as_object()?;
        for key in [
            "event_window",
            "event_date_or_window",
            "temporal_window",
            "locked_event_date_or_window",
            "event_period",
            "period",
            "window",
            "date_span",
            "event_date",
            "date",
        ] {
            if let Some(value) = event.get(key) {
                return Some(value.clone());
            }
        }
        for (start, end) in [("window_start", "window_end"), ("start_date", "end_date")] {
            if let (Some(s), Some(e)) = (event.get(start), event.get(end)) {
                return Some(serde_json::json!({ "start": s, "end": e }));
            }
        }
        None
    }

    /// Every tolerance the ground truth states, by field name, merged from
    /// `numeric_tolerances`, then `tolerances`, then
    /// `judge_anchors.required_metrics[]` (an earlier source wins on a
    /// name clash). Shapes understood:
    /// `{tolerance|absolute_tolerance|abs_tolerance|absolute, value|target|expected}`,
    /// `{relative}`, `{min, max}`, a bare number (absolute), `"exact"` or
    /// `true` (exact), a list (accepted values), any other string
    /// (a textual rule).
    pub fn tolerances(&self) -> BTreeMap<String, Tolerance> {
        let mut out = BTreeMap::new();
        for source in [&self.numeric_tolerances, &self.tolerances]
            .into_iter()
            .flatten()
        {
            if let Some(map) = source.as_object() {
                for (name, value) in map {
                    out.entry(name.clone())
                        .or_insert_with(|| Tolerance::from_value(value));
                }
            }
        }
        if let Some(metrics) = self
            .judge_anchors
            .as_ref()
            .and_then(|a| a.get("required_metrics"))
            .and_then(Value::as_array)
        {
            for metric in metrics {
                if let Some(name) = metric.get("name").and_then(Value::as_str) {
                    out.entry(name.to_string())
                        .or_insert_with(|| Tolerance::from_value(metric));
                }
            }
        }
        out
    }

    /// The declared tolerances that are a distance around the target, as
    /// absolute distances (what answer matching needs): absolute ones as
    /// they are, relative ones times their stated target, ranges as the
    /// larger side around it; exact, listed and textual rules are left out.
    pub fn absolute_tolerances(&self) -> Vec<(String, f64)> {
        self.tolerances()
            .into_iter()
            .filter_map(|(name, stated)| {
                let value = match stated.rule {
                    ToleranceRule::Absolute { tolerance } => Some(tolerance.abs()),
                    ToleranceRule::Relative { tolerance } => {
                        stated.target.map(|t| (tolerance * t).abs())
                    }
                    ToleranceRule::Range { min, max } => {
                        stated.target.map(|t| (t - min).abs().max((max - t).abs()))
                    }
                    _ => None,
                };
                value.filter(|v| v.is_finite()).map(|v| (name, v))
            })
            .collect()
    }
}

/// A tolerance on one answer field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Tolerance {
    /// The expected value, when the tolerance states one.
    pub target: Option<f64>,
    /// The rule.
    pub rule: ToleranceRule,
    /// The unit, when stated.
    pub unit: Option<String>,
}

/// How close an answer must be.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToleranceRule {
    /// `|x − target| ≤ tolerance`.
    Absolute {
        /// The half-width.
        tolerance: f64,
    },
    /// `|x − target| ≤ tolerance · |target|`.
    Relative {
        /// The relative half-width.
        tolerance: f64,
    },
    /// `min ≤ x ≤ max`.
    Range {
        /// Lower bound (inclusive).
        min: f64,
        /// Upper bound (inclusive).
        max: f64,
    },
    /// Must match exactly.
    Exact,
    /// One of these values.
    OneOf {
        /// The accepted values.
        values: Vec<Value>,
    },
    /// A rule stated in words (e.g. "package-relative exact or semantically
    /// identical existing package path").
    Text {
        /// The rule.
        text: String,
    },
    /// A shape this parser does not know; kept verbatim.
    Unparsed {
        /// The raw value.
        raw: Value,
    },
}

impl Tolerance {
    /// Parses one tolerance entry in any shape the release uses.
    pub fn from_value(value: &Value) -> Self {
        match value {
            Value::Number(n) => Tolerance {
                target: None,
                rule: ToleranceRule::Absolute {
                    tolerance: n.as_f64().unwrap_or(0.0),
                },
                unit: None,
            },
            Value::Bool(true) => Tolerance {
                target: None,
                rule: ToleranceRule::Exact,
                unit: None,
            },
            Value::String(s) if s.trim().eq_ignore_ascii_case("exact") => Tolerance {
                target: None,
                rule: ToleranceRule::Exact,
                unit: None,
            },
            Value::String(s) => Tolerance {
                target: None,
                rule: ToleranceRule::Text { text: s.clone() },
                unit: None,
            },
            Value::Array(values) => Tolerance {
                target: None,
                rule: ToleranceRule::OneOf {
                    values: values.clone(),
                },
                unit: None,
            },
            Value::Object(map) => {
                let number =
                    |keys: &[&str]| keys.iter().find_map(|k| map.get(*k).and_then(number_of));
                let target = number(&["value", "target", "expected"]);
                let unit = ["unit", "units"]
                    .iter()
                    .find_map(|k| map.get(*k).and_then(Value::as_str))
                    .map(str::to_string);
                let rule = if let Some(t) = number(&[
                    "tolerance",
                    "absolute_tolerance",
                    "abs_tolerance",
                    "absolute",
                ]) {
                    ToleranceRule::Absolute { tolerance: t }
                } else if let Some(t) = number(&["relative", "relative_tolerance", "rel_tolerance"])
                {
                    ToleranceRule::Relative { tolerance: t }
                } else if let (Some(min), Some(max)) = (number(&["min"]), number(&["max"])) {
                    ToleranceRule::Range { min, max }
                } else if map
                    .get("tolerance")
                    .and_then(Value::as_str)
                    .is_some_and(|s| s.eq_ignore_ascii_case("exact"))
                {
                    ToleranceRule::Exact
                } else {
                    ToleranceRule::Unparsed { raw: value.clone() }
                };
                Tolerance { target, rule, unit }
            }
            _ => Tolerance {
                target: None,
                rule: ToleranceRule::Unparsed { raw: value.clone() },
                unit: None,
            },
        }
    }

    /// Whether `answer` is within tolerance of `expected` (the tolerance's
    /// own target is used when `expected` is `None`). `None` when the rule
    /// is not numeric or no target is known.
    pub fn accepts(&self, answer: f64, expected: Option<f64>) -> Option<bool> {
        let target = expected.or(self.target);
        match &self.rule {
            ToleranceRule::Absolute { tolerance } => {
                Some((answer - target?).abs() <= tolerance.abs() + 1e-12)
            }
            ToleranceRule::Relative { tolerance } => {
                let t = target?;
                Some((answer - t).abs() <= tolerance.abs() * t.abs() + 1e-12)
            }
            ToleranceRule::Range { min, max } => Some(answer >= *min && answer <= *max),
            ToleranceRule::Exact => Some(answer == target?),
            _ => None,
        }
    }
}

fn number_of(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

/// The 20-point process rubric of a task (paper §4.1, Appendix E).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rubric {
    /// The criteria (5–8 on a valid task).
    #[serde(default)]
    pub criteria: Vec<Criterion>,
    /// Stated total (20 on a valid task).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_opt_points"
    )]
    pub total_points: Option<f64>,
    /// Fields this type does not model, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Rubric {
    /// The sum of the criteria's points.
    pub fn points_sum(&self) -> f64 {
        self.criteria.iter().map(|c| c.points).sum()
    }
}

/// One rubric criterion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Criterion {
    /// Short name.
    pub name: String,
    /// What earns the points.
    #[serde(default)]
    pub description: String,
    /// Points (integers on the release, a few halves).
    #[serde(serialize_with = "serialize_points")]
    pub points: f64,
    /// Fields this type does not model (`partial_credit`, `full_credit`,
    /// `no_credit`, `id`, ...), kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Criterion {
    /// The `partial_credit` guidance as text (lists joined by newlines).
    pub fn partial_credit(&self) -> Option<String> {
        self.extra.get("partial_credit").map(text_of)
    }
}

fn text_of(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(text_of).collect::<Vec<_>>().join("\n"),
        other => other.to_string(),
    }
}

/// Points are integers on almost every task: write an integral value back
/// as an integer so a record re-serialises as it was read.
fn serialize_points<S: Serializer>(points: &f64, serializer: S) -> Result<S::Ok, S::Error> {
    if points.fract() == 0.0 && points.abs() < 1e15 {
        serializer.serialize_i64(*points as i64)
    } else {
        serializer.serialize_f64(*points)
    }
}

fn serialize_opt_points<S: Serializer>(
    points: &Option<f64>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match points {
        Some(p) => serialize_points(p, serializer),
        None => serializer.serialize_none(),
    }
}

/// The event record of a task, with the source-audit fields of Appendix E
/// (existence verdict, temporal/spatial/hazard match, source reliability,
/// correspondence score, release decision, readiness, data integrity).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// Package id, e.g. `CSX-001`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_id: Option<String>,
    /// Event name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_name: Option<String>,
    /// Canonical event key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub canonical_event_key: Option<String>,
    /// Hazard family.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hazard_family: Option<HazardFamily>,
    /// Hazard label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hazard_label: Option<String>,
    /// Scale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale: Option<String>,
    /// Region.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// Primary evidence URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub primary_evidence_url: Option<String>,
    /// Source audit: does the event exist (`confirmed`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub existence_verdict: Option<String>,
    /// Source audit: temporal match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temporal_match: Option<String>,
    /// Source audit: spatial match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spatial_match: Option<String>,
    /// Source audit: hazard match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hazard_match: Option<String>,
    /// Source audit: reliability of the sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_reliability: Option<String>,
    /// Source audit: correspondence score (a string or number on the release).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correspondence_score: Option<Value>,
    /// Release decision (`keep`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_decision: Option<String>,
    /// Benchmark readiness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub benchmark_readiness: Option<String>,
    /// Data-integrity audit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_integrity: Option<Value>,
    /// Inventory summary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_inventory: Option<Value>,
    /// Fields this type does not model, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Event {
    /// The correspondence score as a number (the release writes `"96"`).
    pub fn correspondence_score(&self) -> Option<f64> {
        match self.correspondence_score.as_ref()? {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }
}

/// One record of a task's `event_files` inventory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRecord {
    /// File id, e.g. `F0001`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_id: Option<String>,
    /// Package-relative path, e.g. `data/event_reports/x.bin`.
    pub relative_path: String,
    /// Release-relative path (`event_packages/...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repository_path: Option<String>,
    /// Viewer path (`data/packages/event_packages/...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viewer_path: Option<String>,
    /// Category, e.g. `event_reports`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// Layer name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layer_name: Option<String>,
    /// Source id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_id: Option<String>,
    /// Source name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_name: Option<String>,
    /// Source type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_type: Option<String>,
    /// Source URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_url: Option<String>,
    /// Size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// First 16 hex digits of the SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256_16: Option<String>,
    /// Status, e.g. `downloaded`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// Preview type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview_type: Option<String>,
    /// MIME type as recorded (not sniffed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Format as recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Fields this type does not model, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(raw: Value, target: Option<f64>, rule: ToleranceRule) {
        let t = Tolerance::from_value(&raw);
        assert_eq!(t.target, target, "{raw}");
        assert_eq!(t.rule, rule, "{raw}");
    }

    #[test]
    fn tolerance_shapes() {
        use ToleranceRule::*;
        check(
            json!({"tolerance": 2.0, "value": 24.0}),
            Some(24.0),
            Absolute { tolerance: 2.0 },
        );
        check(
            json!({"target": 1.385, "absolute_tolerance": 0.001}),
            Some(1.385),
            Absolute { tolerance: 0.001 },
        );
        check(
            json!({"abs_tolerance": 0.005, "expected": 0.963}),
            Some(0.963),
            Absolute { tolerance: 0.005 },
        );
        check(
            json!({"absolute": 0, "value": 0}),
            Some(0.0),
            Absolute { tolerance: 0.0 },
        );
        check(
            json!({"relative": 0.001, "unit": "persons"}),
            None,
            Relative { tolerance: 0.001 },
        );
        check(
            json!({"expected": 11.8, "min": 11.6, "max": 12.0}),
            Some(11.8),
            Range {
                min: 11.6,
                max: 12.0,
            },
        );
        check(json!(0.15), None, Absolute { tolerance: 0.15 });
        check(json!("exact"), None, Exact);
        check(json!(true), None, Exact);
        check(
            json!(["pass", "reject"]),
            None,
            OneOf {
                values: vec![json!("pass"), json!("reject")],
            },
        );
        check(
            json!("package-relative path"),
            None,
            Text {
                text: "package-relative path".into(),
            },
        );
        let t = Tolerance::from_value(&json!({"target": 3, "tolerance": 0, "unit": "days"}));
        assert_eq!(t.unit.as_deref(), Some("days"));
        assert_eq!(t.accepts(3.0, None), Some(true));
        assert_eq!(t.accepts(3.5, None), Some(false));
        let r = Tolerance::from_value(&json!({"relative": 0.01}));
        assert_eq!(r.accepts(101.0, Some(100.0)), Some(true));
        assert_eq!(r.accepts(102.0, Some(100.0)), Some(false));
    }

    #[test]
    fn tolerances_merge_sources() {
        let gt: GroundTruth = serde_json::from_value(json!({
            "primary_gt": {"a": 1},
            "rubric": {"criteria": [], "total_points": 20},
            "numeric_tolerances": {"a": {"tolerance": 0.1, "value": 1.0}},
            "tolerances": {"a": 5, "b": "exact"},
            "judge_anchors": {"required_metrics": [{"name": "c", "tolerance": 0.5, "value": 2.0}, "free text"]}
        }))
        .unwrap();
        let t = gt.tolerances();
        assert_eq!(t.len(), 3);
        assert_eq!(t["a"].rule, ToleranceRule::Absolute { tolerance: 0.1 });
        assert_eq!(t["b"].rule, ToleranceRule::Exact);
        assert_eq!(t["c"].target, Some(2.0));
    }
}
