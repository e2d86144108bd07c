//! The page: tables, inlined plots and the drill-down.

use crate::{plots, Error, Result};
use earthverse_stats_bootstrap::{
    by_system, compare, cost_table, leaderboard, slice_table, BootstrapConfig, LeaderboardRow,
    Metric, PairedDelta, SliceBy, SliceTable, TaskOutcome,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

/// One answer unit in the drill-down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitRow {
    /// Unit key path or name.
    pub unit: String,
    /// Expected value, as text.
    pub expected: String,
    /// Value found in the answer, as text.
    pub found: String,
    /// Whether it is satisfied.
    pub satisfied: bool,
    /// Rule or mismatch note.
    pub note: String,
}

/// One rubric criterion in the drill-down.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CriterionRow {
    /// Criterion name.
    pub name: String,
    /// Points earned.
    pub earned: f64,
    /// Points possible.
    pub possible: f64,
    /// Judge's note.
    pub note: String,
}

/// What the judge said about one run, for the drill-down.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskDetail {
    /// System id.
    pub system: String,
    /// Task id.
    pub task: String,
    /// Verdict label.
    pub verdict: Option<String>,
    /// One-sentence rationale.
    pub rationale: Option<String>,
    /// Unit ledger (empty when the record has none).
    pub units: Vec<UnitRow>,
    /// Rubric ledger (empty when the record has none).
    pub criteria: Vec<CriterionRow>,
}

/// Everything the report shows.
#[derive(Debug, Clone)]
pub struct ReportInput {
    /// Page title.
    pub title: String,
    /// Where the data came from (shown under the title).
    pub source: String,
    /// The per-task outcomes.
    pub outcomes: Vec<TaskOutcome>,
    /// Drill-down details, matched to outcomes by (system, task).
    pub details: Vec<TaskDetail>,
    /// Bootstrap setting of the forest plot (paper default: 5,000, seed 2026).
    pub bootstrap: BootstrapConfig,
    /// List prices in USD per million tokens for the cost table.
    pub prices_usd_per_m: BTreeMap<String, f64>,
}

impl ReportInput {
    /// An empty report with the paper's bootstrap setting.
    pub fn new(title: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            source: String::new(),
            outcomes: Vec::new(),
            details: Vec::new(),
            bootstrap: BootstrapConfig::default(),
            prices_usd_per_m: BTreeMap::new(),
        }
    }
}

/// Escapes text for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str =
    "body{font-family:system-ui,sans-serif;margin:24px auto;max-width:1200px;color:#222}\
h1{margin-bottom:4px}.src{color:#666;margin-top:0}\
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}\
th,td{border:1px solid #ddd;padding:3px 7px;text-align:right}\
th{background:#f4f6f8}td:first-child,th:first-child{text-align:left}\
figure{margin:8px 0 24px}figure svg{max-width:100%;height:auto}\
details{margin:4px 0}summary{cursor:pointer}.ok{color:#1a7f37}.bad{color:#c62828}\
nav a{margin-right:12px}";

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "–".to_owned(), |v| format!("{v:.digits$}"))
}

/// Renders the whole page.
///
/// # Errors
/// [`Error::Empty`] without outcomes; [`Error::Stats`] for invalid
/// outcomes (duplicates, scores out of range); [`Error::Plot`] when a plot
/// cannot be drawn.
pub fn render_html(input: &ReportInput) -> Result<String> {
    if input.outcomes.is_empty() {
        return Err(Error::Empty);
    }
    let rows = leaderboard(&input.outcomes)?;
    let capabilities = slice_table(&input.outcomes, SliceBy::Capability)?;
    let difficulty = slice_table(&input.outcomes, SliceBy::Difficulty)?;
    let hazard = slice_table(&input.outcomes, SliceBy::Hazard)?;
    let costs = cost_table(&input.outcomes, &input.prices_usd_per_m)?;
    let deltas = leader_deltas(&input.outcomes, &rows, &input.bootstrap)?;
    let groups = by_system(&input.outcomes)?;
    let order: HashMap<&str, usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| (r.system.as_str(), i))
        .collect();
    let mut per_system: Vec<(String, Vec<f64>)> = groups
        .iter()
        .map(|(s, runs)| (s.clone(), runs.iter().map(|o| o.core()).collect()))
        .collect();
    per_system.sort_by_key(|(s, _)| order.get(s.as_str()).copied().unwrap_or(usize::MAX));

    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <title>{title}</title><style>{STYLE}</style></head><body>\n\
         <h1>{title}</h1><p class=\"src\">{src}{n_out} task outcomes of {n_sys} systems. \
         Scores are percentages (§4.1): A = min(H, U), Core = (A + P)/2, Strict@95 = share of \
         tasks with U ≥ 95; failures score 0 and stay in the denominator.</p>\n\
         <nav><a href=\"#leaderboard\">Leaderboard</a><a href=\"#landscape\">Landscape</a>\
         <a href=\"#capabilities\">Capabilities</a><a href=\"#slices\">Slices</a>\
         <a href=\"#forest\">Paired ΔCore</a><a href=\"#distribution\">Distribution</a>\
         <a href=\"#cost\">Cost</a><a href=\"#drilldown\">Tasks</a></nav>\n",
        title = escape(&input.title),
        src = if input.source.is_empty() {
            String::new()
        } else {
            format!("{}. ", escape(&input.source))
        },
        n_out = input.outcomes.len(),
        n_sys = rows.len(),
    );
    leaderboard_section(&mut page, &rows);
    let _ = writeln!(
        page,
        "<section id=\"landscape\"><h2>Landscape (Fig. 1b)</h2><figure>{}</figure></section>",
        plots::landscape(&rows)?
    );
    let _ = write!(
        page,
        "<section id=\"capabilities\"><h2>Core by capability (Table 8)</h2>\
         <p>Tags overlap: a task counts in every column it is tagged with.</p><figure>{}</figure>",
        plots::heat_map(&capabilities)?
    );
    slice_section(&mut page, &capabilities, "Capability");
    page.push_str("</section>\n<section id=\"slices\"><h2>Difficulty and hazard family</h2>");
    slice_section(&mut page, &difficulty, "Difficulty");
    slice_section(&mut page, &hazard, "Hazard family");
    let _ = write!(
        page,
        "</section>\n<section id=\"forest\"><h2>Paired ΔCore against the leader</h2>\
         <p>Percentile {conf:.0}% intervals from {r} paired bootstrap resamples of task-level \
         differences over the tasks both systems ran, seed {seed}, ChaCha20 (App. C.5). Red \
         points: the interval excludes 0.</p><figure>{svg}</figure>",
        conf = input.bootstrap.confidence * 100.0,
        r = input.bootstrap.resamples,
        seed = input.bootstrap.seed,
        svg = plots::forest(&deltas, "Core")?,
    );
    delta_table(&mut page, &deltas);
    let _ = writeln!(
        page,
        "</section>\n<section id=\"distribution\"><h2>Distribution of task Core (Fig. 8)</h2>\
         <figure>{}</figure></section>",
        plots::distribution(&per_system)?
    );
    page.push_str("<section id=\"cost\"><h2>Evaluation cost (Table 11)</h2>");
    if costs.is_empty() {
        page.push_str("<p>No run carries a cost and no price list was given.</p>");
    } else {
        page.push_str(
            "<table><tr><th>System</th><th>Core</th><th>Tokens/task (k)</th>\
             <th>Price (USD/M)</th><th>Cost (USD)</th></tr>",
        );
        for c in &costs {
            let _ = write!(
                page,
                "<tr><td>{}</td><td>{:.2}</td><td>{:.1}</td><td>{}</td><td>{:.2}</td></tr>",
                escape(&c.system),
                c.core,
                c.tokens_per_task_k,
                opt(c.price_usd_per_m, 2),
                c.cost_usd
            );
        }
        page.push_str("</table>");
    }
    page.push_str("</section>\n");
    drilldown(&mut page, &groups, &order, &input.details);
    page.push_str("</body></html>\n");
    Ok(page)
}

/// ΔCore of the leader against every other system, each pair over the tasks
/// both ran.
fn leader_deltas(
    outcomes: &[TaskOutcome],
    rows: &[LeaderboardRow],
    config: &BootstrapConfig,
) -> Result<Vec<PairedDelta>> {
    let Some(leader) = rows.first() else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for other in rows.iter().skip(1) {
        match compare(
            outcomes,
            &leader.system,
            &other.system,
            Metric::Core,
            config,
        ) {
            Ok(d) => out.push(d),
            Err(earthverse_stats_bootstrap::Error::NoCommonTasks { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(out)
}

fn leaderboard_section(page: &mut String, rows: &[LeaderboardRow]) {
    page.push_str(
        "<section id=\"leaderboard\"><h2>Leaderboard (Table 2)</h2><table><tr><th>System</th>\
         <th>Runs</th><th>Answer</th><th>Process</th><th>Core</th><th>Strict@95 (%)</th>\
         <th>Unit acc.</th><th>Rounds</th><th>Tool calls</th><th>Reads</th><th>Files</th>\
         <th>Python</th><th>Latency (s)</th><th>Tokens (k)</th></tr>",
    );
    for r in rows {
        page.push_str("<tr>");
        for (column, cell) in r.cells("–").iter().enumerate() {
            // Core (column 4) is the headline score, in bold.
            if column == 4 {
                let _ = write!(page, "<td><b>{}</b></td>", escape(cell));
            } else {
                let _ = write!(page, "<td>{}</td>", escape(cell));
            }
        }
        page.push_str("</tr>");
    }
    page.push_str("</table></section>\n");
}

fn slice_section(page: &mut String, table: &SliceTable, label: &str) {
    if table.columns.is_empty() {
        let _ = write!(page, "<p>No task carries a {} label.</p>", escape(label));
        return;
    }
    let _ = write!(page, "<table><tr><th>System \\ {}</th>", escape(label));
    for c in &table.columns {
        let _ = write!(page, "<th>{}</th>", escape(&plots::short_capability(c)));
    }
    page.push_str("</tr>");
    for row in &table.rows {
        let _ = write!(page, "<tr><td>{}</td>", escape(&row.system));
        for cell in &row.cells {
            match cell {
                Some(c) => {
                    let _ = write!(page, "<td title=\"n={}\">{:.2}</td>", c.n, c.core);
                }
                None => page.push_str("<td>–</td>"),
            }
        }
        page.push_str("</tr>");
    }
    page.push_str("</table>");
}

fn delta_table(page: &mut String, deltas: &[PairedDelta]) {
    page.push_str(
        "<table><tr><th>Pair</th><th>Tasks</th><th>ΔCore</th><th>95% CI</th>\
         <th>SE</th></tr>",
    );
    for d in deltas {
        let _ = write!(
            page,
            "<tr><td>{} − {}</td><td>{}</td><td>{:+.2}</td><td>[{:+.2}, {:+.2}]</td>\
             <td>{:.2}</td></tr>",
            escape(&d.a),
            escape(&d.b),
            d.n_tasks,
            d.delta,
            d.ci_low,
            d.ci_high,
            d.std_error
        );
    }
    page.push_str("</table>");
}

fn drilldown(
    page: &mut String,
    groups: &[(String, Vec<&TaskOutcome>)],
    order: &HashMap<&str, usize>,
    details: &[TaskDetail],
) {
    let by_key: HashMap<(&str, &str), &TaskDetail> = details
        .iter()
        .map(|d| ((d.system.as_str(), d.task.as_str()), d))
        .collect();
    let mut groups: Vec<&(String, Vec<&TaskOutcome>)> = groups.iter().collect();
    groups.sort_by_key(|(s, _)| order.get(s.as_str()).copied().unwrap_or(usize::MAX));
    page.push_str("<section id=\"drilldown\"><h2>Per-task drill-down</h2>");
    for (system, runs) in groups {
        let _ = write!(
            page,
            "<details><summary>{} — {} tasks</summary><table><tr><th>Task</th><th>Answer</th>\
             <th>Process</th><th>Core</th><th>Unit acc.</th><th>Strict@95</th><th>Verdict</th>\
             </tr>",
            escape(system),
            runs.len()
        );
        let mut runs = runs.clone();
        runs.sort_by(|a, b| a.task.cmp(&b.task));
        for o in &runs {
            let detail = by_key.get(&(system.as_str(), o.task.as_str()));
            let verdict = if o.failed {
                "failed".to_owned()
            } else {
                detail.and_then(|d| d.verdict.clone()).unwrap_or_default()
            };
            let _ = write!(
                page,
                "<tr><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td>\
                 <td>{}</td><td>{}</td></tr>",
                escape(&o.task),
                o.answer,
                o.process,
                o.core(),
                o.unit_accuracy,
                if o.is_strict95() { "yes" } else { "no" },
                escape(&verdict)
            );
            if let Some(d) = detail {
                ledger_row(page, d);
            }
        }
        page.push_str("</table></details>");
    }
    page.push_str("</section>\n");
}

fn ledger_row(page: &mut String, d: &TaskDetail) {
    if d.units.is_empty() && d.criteria.is_empty() && d.rationale.is_none() {
        return;
    }
    page.push_str("<tr><td colspan=\"7\"><details><summary>ledgers</summary>");
    if let Some(r) = &d.rationale {
        let _ = write!(page, "<p>{}</p>", escape(r));
    }
    if !d.units.is_empty() {
        page.push_str(
            "<table><tr><th>Unit</th><th>Expected</th><th>Found</th><th>OK</th><th>Note</th></tr>",
        );
        for u in &d.units {
            let _ = write!(
                page,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td></tr>",
                escape(&u.unit),
                escape(&u.expected),
                escape(&u.found),
                if u.satisfied { "ok" } else { "bad" },
                if u.satisfied { "✓" } else { "✗" },
                escape(&u.note)
            );
        }
        page.push_str("</table>");
    }
    if !d.criteria.is_empty() {
        page.push_str("<table><tr><th>Criterion</th><th>Points</th><th>Note</th></tr>");
        for c in &d.criteria {
            let _ = write!(
                page,
                "<tr><td>{}</td><td>{:.1} / {:.1}</td><td>{}</td></tr>",
                escape(&c.name),
                c.earned,
                c.possible,
                escape(&c.note)
            );
        }
        page.push_str("</table>");
    }
    page.push_str("</details></td></tr>");
}
