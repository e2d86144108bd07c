//! The study report (`earthverse study report`) as text tables and as one
//! self-contained HTML page: the paper's table shape (Tables 3, 4, 6:
//! Answer, Process, Core, Unit acc., ΔCore with its paired 95% interval),
//! win / tie / loss against the reference (Fig. 7's shares), the
//! trajectory diagnostics of Tables 9, 10, 12 and 13, Core by capability,
//! and, when computed, the opponent-balanced shares of every condition.

use crate::html::escape;
use earthverse_study::{ConditionRow, Diagnostics, StudyReport};
use std::fmt::Write as _;

fn opt(v: Option<f64>, digits: usize) -> String {
    format!("{:.digits$}", earthverse_stats_bootstrap::shown(v))
}

fn delta_cells(r: &ConditionRow, reference: &str) -> (String, String) {
    match &r.delta_core {
        Some(d) => (
            format!("{:+.2}", d.delta),
            format!("[{:+.2}, {:+.2}]", d.ci_low, d.ci_high),
        ),
        None => (reference.to_string(), String::new()),
    }
}

fn wtl(r: &ConditionRow) -> String {
    r.vs_reference.as_ref().map_or_else(String::new, |w| {
        format!("{:.0}/{:.0}/{:.0}", w.win, w.tie, w.loss)
    })
}

/// The diagnostics columns: header, and the cells of one row.
const DIAG_HEADER: [&str; 15] = [
    "Rounds", "Calls", "OK %", "Lists", "Search", "Reads", "Files", "Refs", "Python", "Injected",
    "Prompt", "Complet.", "Cached", "Total", "Lat. s",
];

fn diag_cells(x: &Diagnostics) -> [String; 15] {
    [
        format!("{:.2}", x.rounds),
        format!("{:.2}", x.tool_calls),
        opt(x.tool_success_pct, 2),
        format!("{:.2}", x.lists),
        format!("{:.2}", x.searches),
        format!("{:.2}", x.reads),
        format!("{:.2}", x.files),
        format!("{:.2}", x.evidence_refs),
        format!("{:.2}", x.python_calls),
        opt(x.injected_files, 2),
        format!("{:.0}", x.prompt_tokens),
        format!("{:.0}", x.completion_tokens),
        opt(x.cached_tokens, 0),
        format!("{:.0}", x.total_tokens),
        format!("{:.2}", x.latency_s),
    ]
}

/// Table 14's execution and resource columns (App. D.6): Comply %,
/// Success %, model rounds, tokens and latency, per task.
const TABLE14_HEADER: [&str; 6] = [
    "Tasks",
    "Comply %",
    "Success %",
    "Rounds",
    "Tokens",
    "Latency (s)",
];

/// The rows of Table 14: conditions whose runs record `required_tools`.
fn table14_rows(report: &StudyReport) -> impl Iterator<Item = &ConditionRow> {
    report
        .rows
        .iter()
        .filter(|r| r.resources.comply_pct.is_some())
}

fn table14_cells(r: &ConditionRow) -> [String; 6] {
    let x = &r.resources;
    let pct = |v: Option<f64>| format!("{:.2}", earthverse_stats_bootstrap::shown(v));
    let tasks = if r.own_manifest {
        format!("{}*", r.tasks)
    } else {
        r.tasks.to_string()
    };
    [
        tasks,
        pct(x.comply_pct),
        pct(x.specialist_success_pct),
        format!("{:.2}", x.rounds),
        format!("{:.0}", x.total_tokens),
        format!("{:.2}", x.latency_s),
    ]
}

const TABLE14_NOTE: &str = "Comply: runs meeting the contract (App. C.5: at least 2 successful, \
     distinct specialist calls); Success: successful specialist calls of all attempted; Rounds, \
     Tokens, Latency: per task. * = the condition's own difficulty-balanced compatible manifest \
     (App. C.5), paired with the reference's runs of those tasks.";

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The report as text tables.
pub fn render_study_text(report: &StudyReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Study {}: {} tasks per condition; ΔCore against {} with paired 95% bootstrap CI",
        report.study, report.tasks, report.reference
    );
    let _ = writeln!(
        out,
        "\n{:<28} {:>7} {:>8} {:>7} {:>9} {:>8} {:>18} {:>5} {:>11}",
        "Condition", "Answer", "Process", "Core", "Unit acc.", "ΔCore", "95% CI", "fail", "W/T/L %"
    );
    for r in &report.rows {
        let (delta, ci) = delta_cells(r, "ref");
        let _ = writeln!(
            out,
            "{:<28} {:>7.2} {:>8.2} {:>7.2} {:>9.2} {:>8} {:>18} {:>5} {:>11}",
            r.condition,
            r.scores.answer,
            r.scores.process,
            r.scores.core,
            r.scores.unit_acc,
            delta,
            ci,
            r.scores.failures,
            wtl(r)
        );
    }
    let _ = writeln!(
        out,
        "(W/T/L: per-task Core against {} won / tied (within {} points) / lost, in % of tasks)",
        report.reference, report.tie_margin
    );
    if !report.skipped_task_files.is_empty() {
        let _ = writeln!(
            out,
            "({} task file(s) of the release did not load and were skipped (--skip-invalid); not among the {} tasks:",
            report.skipped_task_files.len(),
            report.tasks
        );
        for file in &report.skipped_task_files {
            let _ = writeln!(out, "   {file}");
        }
        let _ = writeln!(out, ")");
    }
    for r in report.rows.iter().filter(|r| r.not_applicable > 0) {
        let _ = writeln!(
            out,
            "({}: {} of {} tasks not applicable, left out of its means and pairs)",
            r.condition, r.not_applicable, report.tasks
        );
    }
    for name in &report.no_compatible_task {
        let _ = writeln!(
            out,
            "({name}: no task of the release holds its environment's inputs; not run)"
        );
    }
    if report.rows.iter().any(|r| r.description.is_some()) {
        let _ = writeln!(out, "\nRows");
        for r in &report.rows {
            if let Some(d) = &r.description {
                let _ = writeln!(out, "  {:<26} {}", r.condition, d);
            }
        }
    }
    let _ = write!(out, "\n{:<28}", "Diagnostics (per task)");
    for h in DIAG_HEADER {
        let _ = write!(out, " {h:>8}");
    }
    let _ = writeln!(out);
    for r in &report.rows {
        let _ = write!(out, "{:<28}", r.condition);
        for cell in diag_cells(&r.resources) {
            let _ = write!(out, " {cell:>8}");
        }
        let _ = writeln!(out);
    }
    // Table 14's execution columns, for conditions that required tools.
    if table14_rows(report).next().is_some() {
        let _ = write!(out, "\n{:<28}", "Required tools (Table 14)");
        for h in TABLE14_HEADER {
            let _ = write!(out, " {h:>11}");
        }
        let _ = writeln!(out);
        for r in table14_rows(report) {
            let _ = write!(out, "{:<28}", r.condition);
            for cell in table14_cells(r) {
                let _ = write!(out, " {cell:>11}");
            }
            let _ = writeln!(out);
        }
        let _ = writeln!(out, "({TABLE14_NOTE})");
    }
    let table = &report.core_by_capability;
    if !table.columns.is_empty() {
        let _ = write!(out, "\n{:<28}", "Core by capability");
        for c in &table.columns {
            let _ = write!(out, " {:>14}", truncate(c, 14));
        }
        let _ = writeln!(out);
        for c in &report.rows {
            let Some(row) = table.rows.iter().find(|r| r.system == c.condition) else {
                continue;
            };
            let _ = write!(out, "{:<28}", row.system);
            for cell in &row.cells {
                let _ = write!(out, " {:>14}", opt(cell.map(|c| c.core), 2));
            }
            let _ = writeln!(out);
        }
    }
    if !report.pairwise.is_empty() {
        let _ = writeln!(
            out,
            "\n{:<28} {:>7} {:>7} {:>7} {:>7}",
            "Opponent-balanced (Core)", "Win %", "Tie %", "Loss %", "Net"
        );
        for s in &report.pairwise {
            let _ = writeln!(
                out,
                "{:<28} {:>7.2} {:>7.2} {:>7.2} {:>+7.2}",
                s.system, s.win, s.tie, s.loss, s.net
            );
        }
    }
    out
}

/// The report as one self-contained HTML page (no scripts, no external
/// resources).
pub fn render_study_html(report: &StudyReport) -> String {
    let mut html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Study {0}</title>\
         <style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin:1em 0}}\
         td,th{{border:1px solid #ccc;padding:.25em .5em;text-align:right}}td:first-child,th:first-child{{text-align:left}}</style>\
         </head><body><h1>Study {0}</h1><p>{1} tasks per condition; ΔCore against <b>{2}</b> \
         with paired 95% bootstrap intervals (App. C.5); W/T/L: per-task Core against the \
         reference won / tied (within {3} points) / lost, in % of tasks.</p>",
        escape(&report.study),
        report.tasks,
        escape(&report.reference),
        report.tie_margin
    );
    if let Some(d) = &report.description {
        let _ = write!(html, "<p>{}</p>", escape(d));
    }
    html.push_str("<table><tr><th>Condition</th><th>Row</th><th>Answer</th><th>Process</th><th>Core</th><th>Unit acc.</th><th>ΔCore</th><th>95% CI</th><th>Failures</th><th>Win %</th><th>Tie %</th><th>Loss %</th></tr>");
    for r in &report.rows {
        let (delta, ci) = delta_cells(r, "reference");
        let (w, t, l) = r.vs_reference.as_ref().map_or_else(
            || (String::new(), String::new(), String::new()),
            |x| {
                (
                    format!("{:.1}", x.win),
                    format!("{:.1}", x.tie),
                    format!("{:.1}", x.loss),
                )
            },
        );
        let _ = write!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&r.condition),
            escape(r.description.as_deref().unwrap_or("")),
            r.scores.answer,
            r.scores.process,
            r.scores.core,
            r.scores.unit_acc,
            delta,
            ci,
            r.scores.failures,
            w,
            t,
            l
        );
    }
    html.push_str("</table>");
    if !report.skipped_task_files.is_empty() {
        let _ = write!(
            html,
            "<p>{} task file(s) of the release did not load and were skipped (--skip-invalid); not among the {} tasks:</p><ul>",
            report.skipped_task_files.len(),
            report.tasks
        );
        for file in &report.skipped_task_files {
            let _ = write!(html, "<li>{}</li>", escape(file));
        }
        html.push_str("</ul>");
    }
    for r in report.rows.iter().filter(|r| r.not_applicable > 0) {
        let _ = write!(
            html,
            "<p>{}: {} of {} tasks not applicable, left out of its means and pairs.</p>",
            escape(&r.condition),
            r.not_applicable,
            report.tasks
        );
    }
    for name in &report.no_compatible_task {
        let _ = write!(
            html,
            "<p>{}: no task of the release holds its environment's inputs; not run.</p>",
            escape(name)
        );
    }
    html.push_str("<table><tr><th>Diagnostics per task</th>");
    for h in DIAG_HEADER {
        let _ = write!(html, "<th>{}</th>", escape(h));
    }
    html.push_str("</tr>");
    for r in &report.rows {
        let _ = write!(html, "<tr><td>{}</td>", escape(&r.condition));
        for cell in diag_cells(&r.resources) {
            let _ = write!(html, "<td>{cell}</td>");
        }
        html.push_str("</tr>");
    }
    html.push_str("</table>");
    if table14_rows(report).next().is_some() {
        html.push_str("<table id=\"table14\"><tr><th>Required tools (Table 14)</th>");
        for h in TABLE14_HEADER {
            let _ = write!(html, "<th>{}</th>", escape(h));
        }
        html.push_str("</tr>");
        for r in table14_rows(report) {
            let _ = write!(html, "<tr><td>{}</td>", escape(&r.condition));
            for cell in table14_cells(r) {
                let _ = write!(html, "<td>{}</td>", escape(&cell));
            }
            html.push_str("</tr>");
        }
        let _ = write!(html, "</table><p>{}</p>", escape(TABLE14_NOTE));
    }
    let table = &report.core_by_capability;
    if !table.columns.is_empty() {
        html.push_str("<table><tr><th>Core by capability</th>");
        for c in &table.columns {
            let _ = write!(html, "<th>{}</th>", escape(c));
        }
        html.push_str("</tr>");
        for c in &report.rows {
            let Some(row) = table.rows.iter().find(|r| r.system == c.condition) else {
                continue;
            };
            let _ = write!(html, "<tr><td>{}</td>", escape(&row.system));
            for cell in &row.cells {
                let _ = write!(html, "<td>{}</td>", opt(cell.map(|c| c.core), 2));
            }
            html.push_str("</tr>");
        }
        html.push_str("</table>");
    }
    if !report.pairwise.is_empty() {
        html.push_str("<table><tr><th>Opponent-balanced (Core)</th><th>Win %</th><th>Tie %</th><th>Loss %</th><th>Net</th></tr>");
        for s in &report.pairwise {
            let _ = write!(
                html,
                "<tr><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:+.2}</td></tr>",
                escape(&s.system),
                s.win,
                s.tie,
                s.loss,
                s.net
            );
        }
        html.push_str("</table>");
    }
    html.push_str("</body></html>\n");
    html
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use earthverse_stats_bootstrap::{BootstrapConfig, TaskOutcome};
    use earthverse_study::{
        build_report, parse_manifest, ReportSettings, ResolvedCondition, ResolvedStudy, TaskDraw,
    };
    use std::collections::BTreeMap;
    use std::path::Path;

    /// The study of `manifest` as `resolve_study` would record it, every
    /// condition in its own folder; `own` gives one condition its own
    /// compatible manifest.
    fn resolved(
        name: &str,
        manifest: &earthverse_study::StudyManifest,
        own: Option<(&str, &earthverse_study::CompatibleManifest)>,
    ) -> ResolvedStudy {
        ResolvedStudy {
            name: name.into(),
            description: None,
            release: "r".into(),
            agent: "baseline".into(),
            selection: manifest.tasks.clone(),
            draw: TaskDraw {
                tasks: vec!["T1".into(), "T2".into()],
                ..TaskDraw::default()
            },
            reference: "ref".into(),
            conditions: manifest
                .conditions
                .iter()
                .map(|c| ResolvedCondition {
                    condition: c.clone(),
                    runs: c.name.clone(),
                    environment_manifest: own
                        .filter(|(condition, _)| *condition == c.name)
                        .map(|(_, m)| m.clone()),
                })
                .collect(),
        }
    }

    fn report() -> StudyReport {
        let manifest = parse_manifest(
            "name = \"s<1>\"\nreference = \"ref\"\n[tasks]\nall = true\n\
             [[conditions]]\nname = \"ref\"\ndescription = \"Top-20 <router> & co\"\n\
             [[conditions]]\nname = \"alt\"\ncontext = \"short\"\n",
            false,
            Path::new("s.toml"),
        )
        .unwrap();
        let study = resolved(&manifest.name, &manifest, None);
        let o = |s: &str, t: &str, c: f64| TaskOutcome::from_scores(s, t, c, c, c).unwrap();
        let scored = BTreeMap::from([
            (
                "ref".to_string(),
                vec![o("ref", "T1", 50.0), o("ref", "T2", 60.0)],
            ),
            (
                "alt".to_string(),
                vec![o("alt", "T1", 70.0), o("alt", "T2", 59.5)],
            ),
        ]);
        let settings = ReportSettings {
            bootstrap: BootstrapConfig {
                resamples: 100,
                ..BootstrapConfig::default()
            },
            all_pairs: true,
            ..ReportSettings::default()
        };
        build_report(&study, &scored, &BTreeMap::new(), &settings).unwrap()
    }

    #[test]
    fn text_holds_the_delta_the_shares_and_the_rows_names() {
        let text = render_study_text(&report());
        // alt − ref: (+20 − 0.5) / 2 = +9.75; one win, one tie (0.5 ≤ 1).
        let alt = text.lines().find(|l| l.starts_with("alt ")).unwrap();
        assert!(alt.contains("+9.75") && alt.contains("50/50/0"), "{alt}");
        assert!(text.contains("Top-20 <router> & co"));
        assert!(text.contains("Opponent-balanced"));
    }

    /// A required-environment condition with its own compatible manifest
    /// (T2, T3) beside a reference on the study's tasks (T1, T2), whose
    /// folder also holds T3: the rows, the pairing, and Table 14's columns
    /// (from the runs' `required_tools` records) in text and HTML.
    #[test]
    fn table_14_columns_and_an_own_manifest_in_text_and_html() {
        let manifest = parse_manifest(
            "name = \"t7\"\nreference = \"ref\"\n[tasks]\nall = true\n\
             [[conditions]]\nname = \"ref\"\n\
             [[conditions]]\nname = \"metpy\"\nrequired_environment = \"metpy\"\n\
             compatible_manifest = { seed = 2026 }\n",
            false,
            Path::new("t7.toml"),
        )
        .unwrap();
        let own = earthverse_study::CompatibleManifest {
            environment: "metpy".into(),
            retained: false,
            tasks: vec!["T2".into(), "T3".into()],
            drawn: vec!["T3".into(), "T2".into()],
            study_compatible: 1,
            compatible_tasks: 2,
            release_tasks: 3,
            levels: BTreeMap::new(),
            count: 2,
            seed: 2026,
        };
        let study = resolved("t7", &manifest, Some(("metpy", &own)));
        assert_eq!(study.folder_tasks("ref"), ["T1", "T2", "T3"]);
        assert_eq!(study.folder_tasks("metpy"), ["T2", "T3"]);
        let o = |s: &str, t: &str, c: f64| TaskOutcome::from_scores(s, t, c, c, c).unwrap();
        let scored = BTreeMap::from([
            (
                "ref".to_string(),
                vec![
                    o("ref", "T1", 50.0),
                    o("ref", "T2", 60.0),
                    o("ref", "T3", 40.0),
                ],
            ),
            (
                "metpy".to_string(),
                vec![o("metpy", "T2", 70.0), o("metpy", "T3", 44.0)],
            ),
        ]);
        let runs: Vec<earthverse_package_model::RecordedRun> = [
            ("T2", true, 3, 4, 20, 1000, 100.0),
            ("T3", false, 1, 4, 30, 3000, 300.0),
        ]
        .iter()
        .map(|(task, compliant, ok, attempts, rounds, tokens, latency)| {
            serde_json::from_value(serde_json::json!({
                "task_id": task, "model_id": "m",
                "diagnostics": {"model_rounds": rounds, "latency_s": latency,
                                "total_tokens": tokens},
                "required_tools": {"compliant": compliant, "successful_calls": ok,
                                   "attempts": attempts, "min_successful": 2, "target": 3,
                                   "max_counted": 4, "counted": ok, "failure_classes": {},
                                   "repair_rounds": 0}
            }))
            .unwrap()
        })
        .collect();
        let diagnostics = BTreeMap::from([(
            "metpy".to_string(),
            earthverse_study::Diagnostics::of_runs(&runs),
        )]);
        let settings = ReportSettings {
            bootstrap: BootstrapConfig {
                resamples: 100,
                ..BootstrapConfig::default()
            },
            ..ReportSettings::default()
        };
        let report = build_report(&study, &scored, &diagnostics, &settings).unwrap();
        // The reference row is on the study's tasks; metpy on its own.
        assert_eq!(report.rows[0].scores.core, 55.0);
        assert_eq!(
            (report.rows[1].tasks, report.rows[1].own_manifest),
            (2, true)
        );
        assert_eq!(report.rows[1].scores.core, 57.0);
        // ΔCore pairs metpy with the reference on T2 and T3: (10 + 4) / 2.
        let d = report.rows[1].delta_core.as_ref().unwrap();
        assert_eq!((d.n_tasks, d.delta), (2, 7.0));
        // Table 14: 1 of 2 compliant, 4 of 8 calls, means 25 rounds,
        // 2,000 tokens, 200 s.
        let want = ["2*", "50.00", "50.00", "25.00", "2000", "200.00"];
        let text = render_study_text(&report);
        let line = text
            .lines()
            .skip_while(|l| !l.starts_with("Required tools (Table 14)"))
            .find(|l| l.starts_with("metpy"))
            .unwrap();
        let cells: Vec<&str> = line.split_whitespace().skip(1).collect();
        assert_eq!(cells, want, "{line}");
        let html = render_study_html(&report);
        let table = &html[html.find("<table id=\"table14\">").unwrap()..];
        let table = &table[..table.find("</table>").unwrap()];
        let row: String = want.iter().map(|c| format!("<td>{c}</td>")).collect();
        assert!(
            table.contains(&format!("<tr><td>metpy</td>{row}</tr>")),
            "{table}"
        );
        assert!(!table.contains("<td>ref</td>"), "no required tools: no row");
        assert!(html.contains("Comply %") && html.contains("Latency (s)"));
    }

    #[test]
    fn html_escapes_names_and_descriptions() {
        let html = render_study_html(&report());
        assert!(html.contains("<title>Study s&lt;1&gt;</title>"));
        assert!(html.contains("Top-20 &lt;router&gt; &amp; co"));
        assert!(!html.contains("<router>"));
        assert!(html.contains("<td>+9.75</td>") && html.contains("<td>50.0</td>"));
    }
}
