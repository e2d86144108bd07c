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
