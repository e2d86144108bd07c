//! Agreement of the expert's labels with every judge.
//!
//! Comparisons (each Cohen's κ and raw agreement with bootstrap intervals
//! over the items both rated):
//! - **unit** (right/wrong): expert vs our deterministic judge. The
//!   published LLM judge gives only a count of right units per run, not
//!   which ones, so it has no per-unit row.
//! - **family** (units the expert marks wrong and the ledger diagnoses):
//!   expert's error family vs the ledger's.
//! - **run kind** (per reviewed run with at least one labelled unit, per
//!   kind label / numeric / missing / unit / schema): does the expert name
//!   the kind (through the families they pick) vs does the published
//!   judge (its typed critical errors), and vs our run-level families.
//! - **rubric criterion** (0 / partial / full credit): expert vs our
//!   deterministic judge. The published judge gives only the rubric total.

use crate::error::{Error, Result};
use crate::labels::{latest_labels, Label, Target};
use crate::sheet::ReviewRun;
use earthverse_evidence_ledger::{judge_kinds, ErrorKind};
use earthverse_stats_bootstrap::{agreement, Agreement, BootstrapConfig};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Which two raters a row compares, at which level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Comparison {
    /// `unit`, `family`, `run kind: <kind>`, `rubric criterion`.
    pub level: String,
    /// The rater compared with the expert.
    pub against: String,
}

/// One row of the agreement table.
#[derive(Debug, Clone, Serialize)]
pub struct AgreementRow {
    /// What is compared.
    pub comparison: Comparison,
    /// κ and raw agreement; `None` when no item was rated by both.
    pub agreement: Option<Agreement>,
}

/// Kind a unit family name stands for (numeric families for numbers).
fn kind_of_family(family: &str, numeric: bool) -> Option<ErrorKind> {
    match family {
        "label_mismatch" => Some(ErrorKind::Label),
        "missing" => Some(ErrorKind::Missing),
        "unit_or_scale" => Some(ErrorKind::Unit),
        "schema_error" => Some(ErrorKind::Schema),
        _ if numeric => Some(ErrorKind::Numeric),
        _ => None,
    }
}

fn our_kind(family: &str) -> Option<ErrorKind> {
    match family {
        "label_error" => Some(ErrorKind::Label),
        "numeric_error" => Some(ErrorKind::Numeric),
        "missing_output" => Some(ErrorKind::Missing),
        "unit_error" => Some(ErrorKind::Unit),
        "schema_error" => Some(ErrorKind::Schema),
        _ => None,
    }
}

fn band(points: f64, possible: f64) -> usize {
    if points <= 1e-9 {
        0
    } else if points + 1e-9 >= possible {
        2
    } else {
        1
    }
}

/// Agreement of the expert's latest labels (file `path`, for error
/// messages) with the judges over the runs' sheets.
///
/// # Errors
/// [`Error::UnknownRun`] for a label of a run not in `runs` (naming the
/// file and line), [`Error::Stats`] for a bad configuration.
pub fn review_agreement(
    labels: &[Label],
    path: &Path,
    runs: &BTreeMap<(String, String), ReviewRun>,
    config: &BootstrapConfig,
) -> Result<Vec<AgreementRow>> {
    let latest = latest_labels(labels);
    let mut unit_pairs: (Vec<usize>, Vec<usize>) = Default::default();
    let mut family_pairs: (Vec<String>, Vec<String>) = Default::default();
    let mut rubric_pairs: (Vec<usize>, Vec<usize>) = Default::default();
    // run → kinds the expert names (runs with a labelled unit only)
    let mut expert_kinds: BTreeMap<(String, String), BTreeSet<ErrorKind>> = BTreeMap::new();
    for (line, label) in latest.values() {
        let key = (label.system.clone(), label.task_id.clone());
        let run = runs.get(&key).ok_or_else(|| Error::UnknownRun {
            path: path.to_path_buf(),
            line: *line,
            system: label.system.clone(),
            task_id: label.task_id.clone(),
        })?;
        match label.target {
            Target::Unit => {
                let Some(unit) = run.units.iter().find(|u| u.path == label.key) else {
                    continue;
                };
                let kinds = expert_kinds.entry(key).or_default();
                if let Some(correct) = label.correct {
                    unit_pairs.0.push(usize::from(correct));
                    unit_pairs.1.push(usize::from(unit.deterministic_correct));
                }
                if let (Some(fam), Some(false)) = (&label.family, label.correct) {
                    kinds.extend(kind_of_family(fam, unit.expected.is_number()));
                    if let Some(ours) = &unit.ledger_family {
                        family_pairs.0.push(fam.clone());
                        family_pairs.1.push(ours.clone());
                    }
                }
            }
            Target::Rubric => {
                let (Some(points), Some(c)) = (
                    label.points,
                    run.criteria.iter().find(|c| c.name == label.key),
                ) else {
                    continue;
                };
                rubric_pairs.0.push(band(points, c.points_possible));
                rubric_pairs
                    .1
                    .push(band(c.deterministic_points, c.points_possible));
            }
        }
    }
    let row = |level: &str, against: &str, a: &[usize], b: &[usize]| -> Result<AgreementRow> {
        Ok(AgreementRow {
            comparison: Comparison {
                level: level.to_owned(),
                against: against.to_owned(),
            },
            agreement: if a.is_empty() {
                None
            } else {
                Some(agreement(a, b, config)?)
            },
        })
    };
    let mut out = vec![row(
        "unit",
        "deterministic judge",
        &unit_pairs.0,
        &unit_pairs.1,
    )?];
    // Families as category codes over both raters' names.
    let names: BTreeSet<&String> = family_pairs.0.iter().chain(&family_pairs.1).collect();
    let code = |s: &String| names.iter().position(|n| *n == s).unwrap_or(0);
    let fa: Vec<usize> = family_pairs.0.iter().map(code).collect();
    let fb: Vec<usize> = family_pairs.1.iter().map(code).collect();
    out.push(row("family", "ledger", &fa, &fb)?);
    for kind in ErrorKind::ALL.into_iter().filter(|k| k.family().is_some()) {
        let (mut e, mut j, mut o) = (Vec::new(), Vec::new(), Vec::new());
        for (key, kinds) in &expert_kinds {
            let run = &runs[key];
            e.push(usize::from(kinds.contains(&kind)));
            j.push(usize::from(
                judge_kinds(&run.judge_critical_errors).contains(&kind),
            ));
            o.push(usize::from(
                run.our_families.iter().any(|f| our_kind(f) == Some(kind)),
            ));
        }
        let level = format!("run kind: {}", kind.as_str());
        out.push(row(&level, "published LLM judge", &e, &j)?);
        out.push(row(&level, "our run families", &e, &o)?);
    }
    out.push(row(
        "rubric criterion",
        "deterministic judge",
        &rubric_pairs.0,
        &rubric_pairs.1,
    )?);
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::sample::Stratum;
    use crate::sheet::{ReviewCriterion, ReviewUnit};
    use serde_json::{json, Value};

    fn unit(path: &str, expected: Value, right: bool, family: Option<&str>) -> ReviewUnit {
        ReviewUnit {
            path: path.into(),
            expected,
            value: None,
            status: "observed".into(),
            source_step: None,
            source_tool: None,
            source_file: None,
            excerpt: String::new(),
            deterministic_correct: right,
            ledger_family: family.map(str::to_owned),
        }
    }

    fn label(task: &str, key: &str, correct: bool, family: Option<&str>) -> Label {
        Label {
            reviewer: "ana".into(),
            time: "t".into(),
            system: "s".into(),
            task_id: task.into(),
            target: Target::Unit,
            key: key.into(),
            correct: Some(correct),
            family: family.map(str::to_owned),
            points: None,
        }
    }

    fn runs() -> BTreeMap<(String, String), ReviewRun> {
        let run = |task: &str, judge: Vec<String>, ours: Vec<String>| ReviewRun {
            system: "s".into(),
            task_id: task.into(),
            stratum: Stratum {
                system_family: "hosted".into(),
                core_band: "<40".into(),
                capability: "x".into(),
            },
            question: String::new(),
            final_answer: Value::Null,
            units: vec![
                unit("a", json!(1.0), true, None),
                unit("b", json!(2.0), false, Some("arithmetic")),
                unit("c", json!("x_y"), false, Some("label_mismatch")),
            ],
            criteria: vec![ReviewCriterion {
                name: "c1".into(),
                points_possible: 4.0,
                description: String::new(),
                deterministic_points: 4.0,
            }],
            steps: Vec::new(),
            judge_critical_errors: judge,
            our_families: ours,
        };
        [
            run(
                "T1",
                vec!["numeric_value: b".into()],
                vec!["numeric_error".into()],
            ),
            run("T2", vec![], vec!["label_error".into()]),
        ]
        .into_iter()
        .map(|r| ((r.system.clone(), r.task_id.clone()), r))
        .collect()
    }

    #[test]
    fn the_expert_is_compared_with_every_judge() {
        let labels = vec![
            label("T1", "a", true, None),
            label("T1", "b", false, Some("arithmetic")),
            label("T1", "c", true, None),
            label("T2", "a", true, None),
            label("T2", "c", false, Some("label_mismatch")),
            // a later label of the same item replaces the earlier one
            label("T2", "a", false, Some("wrong_source")),
        ];
        let config = BootstrapConfig {
            resamples: 200,
            ..BootstrapConfig::default()
        };
        let rows = review_agreement(&labels, Path::new("l.jsonl"), &runs(), &config).unwrap();
        let find = |level: &str, against: &str| {
            rows.iter()
                .find(|r| r.comparison.level == level && r.comparison.against == against)
                .and_then(|r| r.agreement.clone())
        };
        // units: expert right,wrong,right,wrong,wrong vs judge right,wrong,wrong,right,wrong
        let unit = find("unit", "deterministic judge").unwrap();
        assert_eq!(unit.n, 5);
        assert!((unit.raw.value.unwrap() - 0.6).abs() < 1e-12);
        // families: arithmetic=arithmetic, label=label, wrong_source vs (none): 2 compared
        let family = find("family", "ledger").unwrap();
        assert_eq!(family.n, 2);
        assert_eq!(family.raw.value, Some(1.0));
        // numeric kind: the expert names it in T1 and T2 (wrong_source on a
        // number); the judge in T1 only
        let numeric = find("run kind: numeric", "published LLM judge").unwrap();
        assert_eq!(numeric.n, 2);
        assert_eq!(numeric.raw.value, Some(0.5));
        let label_ours = find("run kind: label", "our run families").unwrap();
        assert_eq!(label_ours.raw.value, Some(1.0));

        let mut bad = labels.clone();
        bad.push(label("T9", "a", true, None));
        let err = review_agreement(&bad, Path::new("l.jsonl"), &runs(), &config)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("l.jsonl:7: unknown run s/T9"), "{err}");
    }
}
