//! The four answer-free oracles of App. A.3.1.

use crate::guard::{guard, localisation_leaks, Leak};
use crate::reads::{ReadsMethod, TaskReads};
use earthverse_evidence_ledger::reference_files;
use earthverse_package_model::{FileRecord, Task};
use earthverse_tool_registry::catalogue::{Bm25Router, ToolRouter};
use earthverse_tool_registry::{ToolDescriptor, ToolFamily, RESEARCH_TOOL_NAMES};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeSet;

/// Which oracle (App. A.3.1; Table 4a): the kind a run's condition names
/// (`earthverse_package_model::OracleKind`, re-exported here).
pub use earthverse_package_model::OracleKind;

/// An oracle for one task: the exact text injected into its task message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Oracle {
    /// Which oracle.
    pub kind: OracleKind,
    /// The task.
    pub task_id: String,
    /// The text, guard-checked.
    pub text: String,
    /// The reference analysis' files named in it (package-relative; none
    /// for the tool-subset oracle, whose text names no file).
    pub files: Vec<String>,
    /// Items left out because they would reveal a ground-truth value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub withheld: Vec<String>,
}

/// Why no oracle can be given.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OracleError {
    /// The solution and `compute_gt.py` name no file of the inventory.
    #[error("task {task_id}: the reference analysis names no package file, so there is no {kind} oracle")]
    NoReference {
        /// The task.
        task_id: String,
        /// The oracle asked for.
        kind: OracleKind,
    },
    /// Every file the reference analysis uses is itself an answer value
    /// (the task asks which file to use), so naming any would answer it.
    #[error("task {task_id}: every file the reference analysis uses ({count}) is itself a ground-truth answer, so the {kind} oracle would reveal it")]
    AllFilesWithheld {
        /// The task.
        task_id: String,
        /// The oracle asked for.
        kind: OracleKind,
        /// Files withheld.
        count: usize,
    },
    /// The text would reveal a ground-truth value.
    #[error("task {task_id}: the {kind} oracle would reveal {} ground-truth value(s): {}", leaks.len(), describe(leaks))]
    Leak {
        /// The task.
        task_id: String,
        /// The oracle.
        kind: OracleKind,
        /// What it would reveal.
        leaks: Vec<Leak>,
    },
}

fn describe(leaks: &[Leak]) -> String {
    leaks
        .iter()
        .map(|l| format!("{} = {} (as `{}`)", l.field, l.value, l.found))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Unit words of common quantity-name suffixes (`peak_temp_c` → °C).
const UNIT_SUFFIXES: [(&str, &str); 23] = [
    ("_c", "°C"),
    ("_c_days", "°C·days"),
    ("_degc", "°C"),
    ("_k", "K"),
    ("_f", "°F"),
    ("_pct", "%"),
    ("_percent", "%"),
    ("_mm", "mm"),
    ("_cm", "cm"),
    ("_m", "m"),
    ("_km", "km"),
    ("_km2", "km²"),
    ("_ha", "ha"),
    ("_kmh", "km/h"),
    ("_ms", "m/s"),
    ("_kt", "kt"),
    ("_hpa", "hPa"),
    ("_days", "days"),
    ("_hours", "hours"),
    ("_h", "hours"),
    ("_usd", "USD"),
    ("_m3s", "m³/s"),
    ("_ratio", "ratio"),
];

fn unit_of(name: &str) -> Option<&'static str> {
    let lower = name.to_lowercase();
    UNIT_SUFFIXES
        .iter()
        .filter(|(suffix, _)| lower.ends_with(suffix))
        .max_by_key(|(suffix, _)| suffix.len())
        .map(|(_, unit)| *unit)
}

/// Names of the intermediate quantities: the keys of every `key_values`
/// object of the ground truth (top level or inside `primary_gt`).
fn quantities(task: &Task) -> Vec<String> {
    fn walk(value: &Value, inside: bool, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    if inside && !out.contains(k) {
                        out.push(k.clone());
                    }
                    walk(v, k == "key_values", out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, false, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    if let Some(kv) = &task.ground_truth.key_values {
        walk(kv, true, &mut out);
    }
    walk(&task.ground_truth.primary_gt, false, &mut out);
    out
}

fn role(record: Option<&FileRecord>) -> String {
    let Some(r) = record else {
        return "package file".into();
    };
    let parts: Vec<&str> = [
        r.category.as_deref(),
        r.layer_name.as_deref(),
        r.source_name.as_deref().map(|s| s.trim()),
    ]
    .into_iter()
    .flatten()
    .filter(|s| !s.is_empty())
    .collect();
    if parts.is_empty() {
        "package file".into()
    } else {
        parts.join(" / ")
    }
}

fn families_of(path: &str, record: Option<&FileRecord>) -> Vec<ToolFamily> {
    let lower = path.to_lowercase();
    let category = record
        .and_then(|r| r.category.as_deref())
        .unwrap_or("")
        .to_lowercase();
    let mut out = Vec::new();
    let ext = lower.rsplit('.').next().unwrap_or("");
    match ext {
        "md" | "txt" | "html" | "htm" | "pdf" | "xml" | "bin" => out.push(ToolFamily::ReportsText),
        "geojson" | "shp" | "gpkg" | "kml" => out.push(ToolFamily::VectorExposure),
        "tif" | "tiff" | "png" | "jpg" | "jpeg" => out.push(ToolFamily::RasterEo),
        "nc" => out.extend([ToolFamily::MeteorologyClimate, ToolFamily::RasterEo]),
        "csv" | "json" => out.push(ToolFamily::TimeSeries),
        _ => {}
    }
    if category.contains("physical") || category.contains("meteo") || category.contains("climate") {
        out.push(ToolFamily::MeteorologyClimate);
    }
    if category.contains("remote") {
        out.push(ToolFamily::RasterEo);
    }
    if category.contains("exposure") || category.contains("impact") {
        out.push(ToolFamily::VectorExposure);
    }
    out
}

/// Keeps the lines that reveal nothing; the others go to `withheld`.
fn keep_safe(task: &Task, lines: Vec<String>, withheld: &mut Vec<String>) -> Vec<String> {
    lines
        .into_iter()
        .filter(|line| {
            let leaks = guard(line, task);
            if leaks.is_empty() {
                true
            } else {
                withheld.push(format!("{} ({})", line.trim(), describe(&leaks)));
                false
            }
        })
        .collect()
}

/// The analytical moves of a task, in the order an analysis takes them:
/// scope, sources, extraction, computation, checks, answer. Each move is a
/// generic sentence chosen by what the reference program does (the calls
/// and constructs it uses), plus the task's rubric criterion names as the
/// points the answer must cover; nothing names a file, folder, product,
/// source or quantity key (the caller drops any line that would, and any
/// that states a ground-truth value).
pub(crate) fn plan_steps(task: &Task, files_used: usize) -> Vec<String> {
    let program = task.compute_gt_py.as_deref().unwrap_or("");
    let has = |needles: &[&str]| needles.iter().any(|n| program.contains(n));
    let mut steps = Vec::new();
    if has(&[
        "fromisoformat",
        "strptime",
        "datetime",
        "date(",
        "to_datetime",
        "start_date",
    ]) {
        steps.push(
            "Fix the event's official time window (inclusive ends) and restrict every series \
             and record to it before computing."
                .to_string(),
        );
    }
    if files_used >= 2 || has(&["reject", "alternative", "candidate", "select"]) {
        steps.push(
            "List the candidate sources for each required quantity, check which can actually \
             support the calculation (variables, resolution, coverage), use those and say why \
             the others are rejected."
                .to_string(),
        );
    }
    if has(&[
        "re.search",
        "re.findall",
        "re.match",
        "re.compile",
        "BeautifulSoup",
        "PdfReader",
        "extract_text",
    ]) {
        steps.push(
            "Extract the stated figures and their units from the report text, keeping the \
             sentence each comes from."
                .to_string(),
        );
    }
    if has(&[
        "zipfile",
        "shapefile",
        "geojson",
        "\"features\"",
        "'features'",
        "Polygon",
        "bbox",
    ]) {
        steps.push(
            "Read the geometries and attributes, and relate them spatially (inside, overlap, \
             distance) as the question asks."
                .to_string(),
        );
    }
    if has(&["Image.open", "PIL", "cv2", "imread"]) {
        steps.push("Measure the required quantities from the image pixels.".to_string());
    }
    let mut computes: Vec<&str> = Vec::new();
    if has(&["max(", "min(", ".max()", ".min()", "argmax", "argmin"]) {
        computes.push("the extremes and when or where they occur");
    }
    if has(&["sum(", "mean(", ".mean()", "statistics", "/ len("]) {
        computes.push("sums and means over the window");
    }
    if has(&["[index : index +", "[i : i +", "rolling(", "window"]) {
        computes.push("running multi-day means or totals, picking the extreme window");
    }
    if has(&[">= ", "> ", "<= ", "threshold"]) && has(&["for ", "filter", "sum("]) {
        computes.push("counts of records above or below the stated thresholds");
    }
    if has(&["* 100", "*100", "percent", "ratio", "share"]) {
        computes.push("shares and ratios between quantities");
    }
    if has(&["sorted(", ".sort(", "rank"]) {
        computes.push("rankings in the order the question asks");
    }
    if has(&["radians", "haversine", "sqrt(", "hypot"]) {
        computes.push("distances or magnitudes from coordinates or components");
    }
    if has(&["corr", "polyfit", "linregress", "slope"]) {
        computes.push("correlations or trends between series");
    }
    if !computes.is_empty() {
        steps.push(format!("Compute {}.", computes.join("; ")));
    }
    if has(&[
        "273.15", "* 3.6", "/ 3.6", "25.4", "0.514", "* 1000", "/ 1000",
    ]) {
        steps.push("Convert units so that every source is compared in the same unit.".to_string());
    }
    if has(&["round("]) {
        steps.push(
            "Round only at the end, to the precision the answer contract asks for.".to_string(),
        );
    }
    steps.push(
        "Check each value's unit, time window and spatial support against the question, and \
         reconcile or disclose sources that disagree."
            .to_string(),
    );
    let criteria: Vec<String> = task
        .ground_truth
        .rubric
        .criteria
        .iter()
        .map(|c| c.name.trim().to_string())
        .collect();
    for name in criteria.iter().filter(|n| !n.is_empty()) {
        steps.push(format!("Make sure the answer covers: {name}."));
    }
    steps.push(
        "Fill every field of the requested answer structure with package-relative evidence for \
         each value."
            .to_string(),
    );
    steps
}

/// The `kind` oracle of `task`. `tools` are the descriptors of the
/// registry the run offers (for the tool-subset oracle's operations).
///
/// # Errors
/// [`OracleError::NoReference`] when the reference analysis names no
/// package file; [`OracleError::Leak`] if the assembled text would still
/// reveal a value (a safety net: items that leak are withheld first).
pub fn oracle(
    task: &Task,
    kind: OracleKind,
    tools: &[ToolDescriptor],
) -> Result<Oracle, OracleError> {
    oracle_with_reads(task, kind, tools, None)
}

/// [`oracle`] with the files the task's reference analysis opens, as its
/// audited run shows them ([`crate::reads::ReferenceReads`]): the
/// relevant-file and evidence-map oracles name those files (in first-open
/// order) instead of the files the program's text names. A static reading
/// (or `None`) keeps the text reading.
///
/// # Errors
/// As [`oracle`].
pub fn oracle_with_reads(
    task: &Task,
    kind: OracleKind,
    tools: &[ToolDescriptor],
    reads: Option<&TaskReads>,
) -> Result<Oracle, OracleError> {
    let texts = task.reference_texts();
    let mut withheld = Vec::new();
    let references: Vec<String> = match reads {
        Some(r) if r.method != ReadsMethod::Static && !r.files.is_empty() => {
            r.files.iter().map(|f| f.path.clone()).collect()
        }
        _ => reference_files(&texts, &task.inventory_paths()),
    };
    if matches!(kind, OracleKind::ToolSubset | OracleKind::Plan) {
        // The tool classes derive from every reference file and the plan
        // from the program; neither shows a path.
    } else if references.is_empty() {
        return Err(OracleError::NoReference {
            task_id: task.task_id.clone(),
            kind,
        });
    }
    let files = if matches!(kind, OracleKind::ToolSubset | OracleKind::Plan) {
        // Neither names a file: the plan localises nothing (App. A.3.1).
        Vec::new()
    } else {
        keep_safe(task, references.clone(), &mut withheld)
    };
    if files.is_empty() && !matches!(kind, OracleKind::ToolSubset | OracleKind::Plan) {
        return Err(OracleError::AllFilesWithheld {
            task_id: task.task_id.clone(),
            kind,
            count: references.len(),
        });
    }
    let record = |path: &str| task.event_files.iter().find(|f| f.relative_path == path);
    let bullet = |items: &[String]| {
        items
            .iter()
            .map(|i| format!("- {i}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let quantity_lines = || {
        quantities(task)
            .into_iter()
            .map(|q| match unit_of(&q) {
                Some(unit) => format!("{q} (unit: {unit})"),
                None => q,
            })
            .collect::<Vec<_>>()
    };
    let text = match kind {
        OracleKind::RelevantFiles => format!(
            "Relevant-file oracle: the reference analysis of this task uses these package files \
             (package-relative paths). It does not say what they contain or what the answer is.\n{}",
            bullet(&files)
        ),
        OracleKind::EvidenceMap => {
            let file_lines: Vec<String> = files
                .iter()
                .map(|f| format!("{f} — source role: {}", role(record(f))))
                .collect();
            let file_lines = keep_safe(task, file_lines, &mut withheld);
            let quantity_lines = keep_safe(task, quantity_lines(), &mut withheld);
            let mut text = format!(
                "Evidence-map oracle: the files the reference analysis uses, with their source \
                 roles, and the intermediate quantities it derives (names and units only; no \
                 values, no conclusion).\nFiles:\n{}",
                bullet(&file_lines)
            );
            if !quantity_lines.is_empty() {
                text.push_str(&format!(
                    "\nIntermediate quantities to derive:\n{}",
                    bullet(&quantity_lines)
                ));
            }
            text
        }
        OracleKind::ToolSubset => {
            let mut families: Vec<ToolFamily> = vec![ToolFamily::Research];
            for f in &references {
                for family in families_of(f, record(f)) {
                    if !families.contains(&family) {
                        families.push(family);
                    }
                }
            }
            let others: Vec<ToolDescriptor> = tools
                .iter()
                .filter(|d| !RESEARCH_TOOL_NAMES.contains(&d.name.as_str()))
                .cloned()
                .collect();
            let reference_text = texts.join("\n");
            let operations: Vec<String> = if others.is_empty() || reference_text.is_empty() {
                Vec::new()
            } else {
                Bm25Router::default().top_k(&reference_text, &others, 5)
            };
            let operations = keep_safe(task, operations, &mut withheld);
            let names: BTreeSet<String> = families.iter().map(|f| f.as_str().to_string()).collect();
            let mut text = format!(
                "Tool-subset oracle: tool classes useful for this task: {}.",
                names.into_iter().collect::<Vec<_>>().join(", ")
            );
            if !operations.is_empty() {
                text.push_str(&format!(
                    "\nDomain operations that fit the reference analysis:\n{}",
                    bullet(&operations)
                ));
            }
            text
        }
        OracleKind::Plan => {
            let steps = plan_steps(task, references.len());
            let steps = keep_safe(task, steps, &mut withheld);
            let keys = quantities(task);
            let steps: Vec<String> = steps
                .into_iter()
                .filter(|step| {
                    let found = localisation_leaks(step, task, &keys);
                    if !found.is_empty() {
                        withheld.push(format!(
                            "{} (localises: {})",
                            step.trim(),
                            found
                                .iter()
                                .map(|l| format!("{} `{}`", l.kind, l.term))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                    found.is_empty()
                })
                .collect();
            format!(
                "Planning oracle: the analytical moves of this task, in the order to take them \
                 (first to last). It names no file, source or answer.\n{}",
                bullet(&steps)
            )
        }
    };
    let leaks = guard(&text, task);
    if !leaks.is_empty() {
        return Err(OracleError::Leak {
            task_id: task.task_id.clone(),
            kind,
            leaks,
        });
    }
    Ok(Oracle {
        kind,
        task_id: task.task_id.clone(),
        text,
        files,
        withheld,
    })
}
