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
    if report.rows.iter().any(|r| r.resources.comply_pct.is_some()) {
        let _ = writeln!(
            out,
            "\n{:<28} {:>8} {:>10} {:>8} {:>10} {:>11}",
            "Required tools (Table 14)", "Comply%", "Success%", "Rounds", "Tokens", "Latency(s)"
        );
        for r in report
            .rows
            .iter()
            .filter(|r| r.resources.comply_pct.is_some())
        {
            let x = &r.resources;
            let pct = |v: Option<f64>| format!("{:.2}", earthverse_stats_bootstrap::shown(v));
            let _ = writeln!(
                out,
                "{:<28} {:>8} {:>10} {:>8.2} {:>10.0} {:>11.2}",
                r.condition,
                pct(x.comply_pct),
                pct(x.specialist_success_pct),
                x.rounds,
                x.total_tokens,
                x.latency_s
            );
        }
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

    fn report() -> StudyReport {
        let manifest = parse_manifest(
            "name = \"s<1>\"\nreference = \"ref\"\n[tasks]\nall = true\n\
             [[conditions]]\nname = \"ref\"\ndescription = \"Top-20 <router> & co\"\n\
             [[conditions]]\nname = \"alt\"\ncontext = \"short\"\n",
            false,
            Path::new("s.toml"),
        )
        .unwrap();
        let study = ResolvedStudy {
            name: manifest.name.clone(),
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
                })
                .collect(),
        };
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

    #[test]
    fn html_escapes_names_and_descriptions() {
        let html = render_study_html(&report());
        assert!(html.contains("<title>Study s&lt;1&gt;</title>"));
        assert!(html.contains("Top-20 &lt;router&gt; &amp; co"));
        assert!(!html.contains("<router>"));
        assert!(html.contains("<td>+9.75</td>") && html.contains("<td>50.0</td>"));
    }
}
