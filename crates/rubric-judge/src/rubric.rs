//! Task rubrics (paper App. E, RUBRIC prompt) and their validation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Rubric points must sum to exactly this (App. C.7 gate 6, App. E RUBRIC).
pub const RUBRIC_TOTAL_POINTS: f64 = 20.0;
/// Fewest criteria a rubric may have (App. E RUBRIC: "5-8 criteria").
pub const MIN_CRITERIA: usize = 5;
/// Most criteria a rubric may have.
pub const MAX_CRITERIA: usize = 8;

/// One rubric criterion: "name, points, description, and partial_credit"
/// (App. E RUBRIC). Releases also carry `id`, `full_credit` and
/// `no_credit`; list-valued texts are joined with "; ".
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Criterion {
    /// Event-specific name.
    pub name: String,
    /// Points the criterion is worth.
    pub points: f64,
    /// Full-credit requirement.
    #[serde(default, deserialize_with = "text_or_list")]
    pub description: String,
    /// Partial-credit and error rule.
    #[serde(default, deserialize_with = "text_or_list")]
    pub partial_credit: String,
    /// Explicit full-credit conditions, when given.
    #[serde(
        default,
        deserialize_with = "text_or_list",
        skip_serializing_if = "String::is_empty"
    )]
    pub full_credit: String,
    /// Explicit no-credit conditions, when given.
    #[serde(
        default,
        deserialize_with = "text_or_list",
        skip_serializing_if = "String::is_empty"
    )]
    pub no_credit: String,
    /// Stable id, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

fn text_or_list<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(joined_text(&Value::deserialize(d)?))
}

/// A criterion text that may be a string or a list of strings, as one
/// string (list items joined with "; ").
fn joined_text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|v| match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join("; "),
        other => other.to_string(),
    }
}

impl From<&earthverse_package_model::Criterion> for Criterion {
    /// The judge's view of a release criterion: `partial_credit`,
    /// `full_credit` and `no_credit` as text (lists joined with "; "), and
    /// `id` when it is a string.
    fn from(criterion: &earthverse_package_model::Criterion) -> Self {
        let text = |key: &str| {
            criterion
                .extra
                .get(key)
                .map(joined_text)
                .unwrap_or_default()
        };
        Criterion {
            name: criterion.name.clone(),
            points: criterion.points,
            description: criterion.description.clone(),
            partial_credit: text("partial_credit"),
            full_credit: text("full_credit"),
            no_credit: text("no_credit"),
            id: criterion
                .extra
                .get("id")
                .and_then(Value::as_str)
                .map(str::to_string),
        }
    }
}

impl From<&earthverse_package_model::Rubric> for Rubric {
    fn from(rubric: &earthverse_package_model::Rubric) -> Self {
        Rubric {
            criteria: rubric.criteria.iter().map(Criterion::from).collect(),
            total_points: rubric.total_points,
        }
    }
}

/// A task's 20-point process rubric (`ground_truth.rubric`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Rubric {
    /// Criteria, in order.
    pub criteria: Vec<Criterion>,
    /// Declared total (should be 20).
    #[serde(default)]
    pub total_points: Option<f64>,
}

/// The coverage bands of the App. E RUBRIC prompt ("REQUIRED COVERAGE"):
/// a keyword family recognising the block and its allowed point range.
#[derive(Debug, Clone, Copy)]
pub struct CoverageBand {
    /// Short label of the block.
    pub label: &'static str,
    /// Allowed points for the block, inclusive.
    pub min_points: f64,
    /// Upper bound.
    pub max_points: f64,
    /// Lower-case keywords; a criterion whose name or description holds one
    /// is counted as covering the block.
    pub keywords: &'static [&'static str],
}

/// The seven coverage bands, quoted from App. E RUBRIC.
pub const COVERAGE_BANDS: [CoverageBand; 7] = [
    CoverageBand {
        label: "final conclusion / numeric target / threshold state / ranking / stance (3-4 points)",
        min_points: 3.0,
        max_points: 4.0,
        keywords: &["conclusion", "final", "diagnosis", "threshold", "ranking", "rank", "stance", "verdict", "label", "decision", "classification"],
    },
    CoverageBand {
        label: "quantitative extraction or calculation (3-5 points)",
        min_points: 3.0,
        max_points: 5.0,
        keywords: &["extract", "calculat", "comput", "value", "mean", "sum", "count", "total", "peak", "maximum", "minimum"],
    },
    CoverageBand {
        label: "formula / index / process-window / causal-chain / score-ledger logic (2-4 points)",
        min_points: 2.0,
        max_points: 4.0,
        keywords: &["formula", "index", "window", "causal", "ledger", "logic", "rule", "score"],
    },
    CoverageBand {
        label: "fusion of reports, time series, rasters, imagery, exposure, infrastructure or trajectory evidence (2-4 points)",
        min_points: 2.0,
        max_points: 4.0,
        keywords: &["fusion", "report", "time series", "raster", "imagery", "image", "exposure", "infrastructure", "source", "record", "file", "evidence"],
    },
    CoverageBand {
        label: "event-specific consequence (1-3 points)",
        min_points: 1.0,
        max_points: 3.0,
        keywords: &["consequence", "impact", "implication", "interpretation", "effect"],
    },
    CoverageBand {
        label: "rejection of competing mechanisms or overclaims (1-3 points)",
        min_points: 1.0,
        max_points: 3.0,
        keywords: &["reject", "competing", "alternative", "overclaim", "distractor", "invalid", "mechanism", "caveat", "limitation"],
    },
    CoverageBand {
        label: "complete, concise output in the requested structure (1-2 points)",
        min_points: 1.0,
        max_points: 2.0,
        keywords: &["output", "json", "structure", "format", "field", "schema"],
    },
];

/// Phrases the RUBRIC prompt forbids as criteria ("HARD RULES").
const VAGUE_PHRASES: [&str; 4] = [
    "good reasoning",
    "uses evidence well",
    "good analysis",
    "well reasoned",
];

/// Outcome of [`Rubric::validate`]: hard-rule violations (`errors`) and
/// coverage-rule findings (`warnings`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RubricReport {
    /// Hard rules broken: criteria count outside 5–8, total ≠ 20, bad points,
    /// empty names, duplicate names, missing descriptions.
    pub errors: Vec<String>,
    /// Coverage rules of the App. E RUBRIC prompt not met (advice only).
    pub warnings: Vec<String>,
}

impl RubricReport {
    /// True when no hard rule is broken.
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

impl Rubric {
    /// Reads `ground_truth.rubric` (or a bare rubric object).
    pub fn from_json(value: &Value) -> Result<Self, serde_json::Error> {
        serde_json::from_value(value.clone())
    }

    /// Sum of criterion points.
    pub fn points_sum(&self) -> f64 {
        self.criteria.iter().map(|c| c.points).sum()
    }

    /// Checks the hard rules (5–8 criteria; points positive and summing to
    /// exactly 20; each criterion with a name and description; no duplicate
    /// names; no vague criteria) and reports the App. E coverage rules as
    /// warnings.
    ///
    /// ```
    /// use earthverse_rubric_judge::{Criterion, Rubric};
    /// let c = |n: &str, p: f64| Criterion { name: n.into(), points: p,
    ///     description: format!("{n} requirement"), ..Criterion::default() };
    /// let rubric = Rubric { criteria: vec![c("a", 4.0), c("b", 4.0), c("c", 4.0), c("d", 4.0)],
    ///     total_points: Some(16.0) };
    /// let report = rubric.validate();
    /// assert_eq!(report.errors.len(), 3); // 4 criteria, sum 16, declared 16
    /// ```
    pub fn validate(&self) -> RubricReport {
        let mut report = RubricReport::default();
        let n = self.criteria.len();
        if !(MIN_CRITERIA..=MAX_CRITERIA).contains(&n) {
            report.errors.push(format!(
                "has {n} criteria; the rubric must have {MIN_CRITERIA}-{MAX_CRITERIA}"
            ));
        }
        let sum = self.points_sum();
        if (sum - RUBRIC_TOTAL_POINTS).abs() > 1e-9 {
            report.errors.push(format!(
                "criterion points sum to {sum}; they must sum to exactly {RUBRIC_TOTAL_POINTS}"
            ));
        }
        if let Some(total) = self.total_points {
            if (total - RUBRIC_TOTAL_POINTS).abs() > 1e-9 {
                report.errors.push(format!(
                    "total_points is {total}; it must be {RUBRIC_TOTAL_POINTS}"
                ));
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, c) in self.criteria.iter().enumerate() {
            let label = if c.name.trim().is_empty() {
                format!("criterion {}", i + 1)
            } else {
                format!("criterion {} ({:?})", i + 1, c.name)
            };
            if c.name.trim().is_empty() {
                report.errors.push(format!("{label} has no name"));
            } else if !seen.insert(c.name.trim().to_lowercase()) {
                report.errors.push(format!("{label} repeats a name"));
            }
            if !(c.points.is_finite() && c.points > 0.0) {
                report
                    .errors
                    .push(format!("{label} has points {}; must be > 0", c.points));
            }
            if c.description.trim().is_empty() {
                report.errors.push(format!("{label} has no description"));
            }
            if c.partial_credit.trim().is_empty() {
                report
                    .warnings
                    .push(format!("{label} has no partial_credit rule"));
            }
            let text = format!("{} {}", c.name, c.description).to_lowercase();
            for phrase in VAGUE_PHRASES {
                if text.contains(phrase) {
                    report
                        .warnings
                        .push(format!("{label} uses the vague phrase {phrase:?}"));
                }
            }
        }
        for band in COVERAGE_BANDS {
            let matching: Vec<&Criterion> = self
                .criteria
                .iter()
                .filter(|c| {
                    let text = format!("{} {}", c.name, c.description).to_lowercase();
                    band.keywords.iter().any(|k| text.contains(k))
                })
                .collect();
            if matching.is_empty() {
                report
                    .warnings
                    .push(format!("no criterion appears to cover: {}", band.label));
                continue;
            }
            let in_band = matching
                .iter()
                .any(|c| c.points >= band.min_points && c.points <= band.max_points);
            if !in_band {
                report.warnings.push(format!(
                    "criteria covering {} carry {:?} points, outside the band",
                    band.label,
                    matching.iter().map(|c| c.points).collect::<Vec<_>>()
                ));
            }
        }
        report
    }
}
