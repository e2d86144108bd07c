//! The page: tables, inlined plots and the drill-down.

use crate::{plots, Error, Result};
use earthverse_evidence_ledger::{summarize, Claim, ErrorFamily, RunLedger, SystemSummary};
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
    /// Claim–evidence ledger (empty when the record has none): gives the
    /// run its own page and the system its error-family counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub claims: Vec<Claim>,
    /// The final answer as submitted, as text, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
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
    /// Run-level failure families for Figs. 8–10, when computed.
    pub families: Option<crate::families::FamilyFigures>,
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
            families: None,
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
nav a{margin-right:12px}.runpage{display:none;border-top:3px solid #1f77b4;margin-top:24px}\
.runpage:target{display:block}pre{white-space:pre-wrap;background:#f7f7f7;padding:8px;font-size:12px}\
td.x{text-align:left;font-family:monospace;font-size:11px;max-width:420px}";

fn opt(v: Option<f64>, digits: usize) -> String {
    format!("{:.digits$}", earthverse_stats_bootstrap::shown(v))
}

/// Figs. 8–10: three sections from the run-level families.
fn families_sections(page: &mut String, f: &crate::families::FamilyFigures) -> Result<()> {
    use crate::families::{fig10, fig8, fig9};
    let _ = writeln!(
        page,
        "<section id=\"fig8\"><h2>Diagnosed failure families by system family (Fig. 8)</h2>\
         <p>Run-level families of <code>earthverse-evidence-ledger</code> (issue #48): loop \
         failures (budget exhaustion, premature stop, tool failure, failed recovery), the \
         answer contract (schema, missing output) and unit-level errors carried up.</p>\
         <figure>{}</figure></section>\n\
         <section id=\"fig9\"><h2>System family, primary failure family and Core band (Fig. 9)</h2>\
         <figure>{}</figure></section>\n\
         <section id=\"fig10\"><h2>Within-system Core differences (Fig. 10)</h2>\
         <p>Runs with the family minus the same system's runs without it; percentile 95% \
         bootstrap intervals over the runs with it. Red: loop failures.</p>{}",
        fig8(&f.runs)?,
        fig9(&f.runs)?,
        if f.effects.iter().any(|e| e.delta.value.is_some()) {
            format!("<figure>{}</figure>", fig10(&f.effects)?)
        } else {
            "<p>No family is found in some but not all runs of a system: no \
             within-system difference to show.</p>"
                .to_owned()
        }
    );
    page.push_str("<table><tr><th>Families found together</th><th>Runs</th><th>Lift</th></tr>");
    for (a, b, n, lift) in &f.co_occurrences {
        let _ = write!(
            page,
            "<tr><td>{} + {}</td><td>{n}</td><td>{lift:.2}</td></tr>",
            a.as_str(),
            b.as_str()
        );
    }
    page.push_str("</table></section>\n");
    Ok(())
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
         <a href=\"#evidence\">Evidence</a><a href=\"#fig8\">Failure families</a>\
         <a href=\"#cost\">Cost</a>\
         <a href=\"#drilldown\">Tasks</a></nav>\n",
        title = escape(&input.title),
        src = if input.source.is_empty() {
            String::new()
        } else {
            format!("{}. ", escape(&input.source))
        },
        n_out = input.outcomes.len(),
        n_sys = rows.len(),
    );
    let with_claims: Vec<&TaskDetail> = input
        .details
        .iter()
        .filter(|d| !d.claims.is_empty())
        .collect();
    let systems_with_claims: std::collections::HashSet<&str> =
        with_claims.iter().map(|d| d.system.as_str()).collect();
    leaderboard_section(&mut page, &rows, &systems_with_claims);
    evidence_section(&mut page, &with_claims, &order)?;
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
    if let Some(f) = &input.families {
        families_sections(&mut page, f)?;
    }
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
    for d in &with_claims {
        run_page(&mut page, d);
    }
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

fn leaderboard_section(
    page: &mut String,
    rows: &[LeaderboardRow],
    with_claims: &std::collections::HashSet<&str>,
) {
    page.push_str(
        "<section id=\"leaderboard\"><h2>Leaderboard (Table 2)</h2><table><tr><th>System</th>\
         <th>Runs</th><th>Answer</th><th>Process</th><th>Core</th><th>Strict@95 (%)</th>\
         <th>Unit acc.</th><th>Rounds</th><th>Tool calls</th><th>Reads</th><th>Files</th>\
         <th>Python</th><th>Latency (s)</th><th>Tokens (k)</th></tr>",
    );
    for r in rows {
        page.push_str("<tr>");
        for (column, cell) in r.cells().iter().enumerate() {
            // Core (column 4) is the headline score, in bold.
            if column == 4 {
                let _ = write!(page, "<td><b>{}</b></td>", escape(cell));
            } else if column == 0 && with_claims.contains(r.system.as_str()) {
                // The system's error families and its runs' pages.
                let _ = write!(
                    page,
                    "<td><a href=\"#ev-{}\">{}</a></td>",
                    slug(&r.system),
                    escape(cell)
                );
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
                None => {
                    let _ = write!(page, "<td>{}</td>", earthverse_stats_bootstrap::UNDEFINED);
                }
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
            let task_cell = match detail.filter(|d| !d.claims.is_empty()) {
                Some(d) => format!(
                    "<a href=\"#{}\">{}</a>",
                    run_anchor(&d.system, &d.task),
                    escape(&o.task)
                ),
                None => escape(&o.task),
            };
            let _ = write!(
                page,
                "<tr><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td>\
                 <td>{}</td><td>{}</td></tr>",
                task_cell,
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

/// An HTML id fragment from any text.
fn slug(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

fn run_anchor(system: &str, task: &str) -> String {
    format!("run-{}--{}", slug(system), slug(task))
}

/// The error-family tables and plots (Figs. 8–10) and, per system, links
/// to its runs' pages.
fn evidence_section(
    page: &mut String,
    details: &[&TaskDetail],
    order: &HashMap<&str, usize>,
) -> Result<()> {
    page.push_str("<section id=\"evidence\"><h2>Claim–evidence ledger and error families</h2>");
    if details.is_empty() {
        page.push_str(
            "<p>No record carries a claim ledger (records of <code>earthverse score</code> \
             do; see <code>earthverse evidence</code>).</p></section>\n",
        );
        return Ok(());
    }
    let ledgers: Vec<RunLedger> = details
        .iter()
        .map(|d| RunLedger {
            claims: d.claims.clone(),
            ..RunLedger::default()
        })
        .collect();
    let mut summaries: Vec<SystemSummary> =
        summarize(details.iter().map(|d| d.system.as_str()).zip(&ledgers));
    summaries.sort_by_key(|s| order.get(s.system.as_str()).copied().unwrap_or(usize::MAX));
    page.push_str(
        "<p>Each answer unit's value is traced to where it entered the run: <i>observed</i> \
         in a read or search output, <i>computed</i> by code or a domain operation, \
         <i>transformed</i> (a unit or scale change of an observed value), <i>given</i> by the \
         prompt, or <i>unsupported</i>. Traced share: satisfied numeric units observed, \
         computed or transformed (weak traces, small integers found without their key, in \
         the second column). Wrong units are sorted into the error families of Figs. 8–10 by \
         the documented rules of <code>earthverse-evidence-ledger</code>.</p>",
    );
    let shares: Vec<(String, f64, f64)> = summaries
        .iter()
        .map(|s| (s.system.clone(), s.traced_share, s.traced_share_with_weak))
        .collect();
    let families: Vec<(String, [usize; 9])> = summaries
        .iter()
        .map(|s| {
            let mut counts = [0usize; 9];
            for (k, f) in ErrorFamily::ALL.iter().enumerate() {
                counts[k] = s.families.get(f).copied().unwrap_or(0);
            }
            (s.system.clone(), counts)
        })
        .collect();
    let _ = write!(
        page,
        "<figure>{}</figure><figure>{}</figure>",
        plots::traced_share(&shares)?,
        plots::error_families(&families)?
    );
    page.push_str(
        "<table><tr><th>System</th><th>Runs</th><th>Sat. numeric</th><th>Traced (%)</th>\
         <th>+ weak (%)</th>",
    );
    for f in ErrorFamily::ALL {
        // A break opportunity after each underscore keeps the 14 columns on
        // the page.
        let _ = write!(page, "<th>{}</th>", f.as_str().replace('_', "_<wbr>"));
    }
    page.push_str("</tr>");
    for (s, (_, counts)) in summaries.iter().zip(&families) {
        let _ = write!(
            page,
            "<tr id=\"ev-{}\"><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td>",
            slug(&s.system),
            escape(&s.system),
            s.runs,
            s.numeric_satisfied,
            100.0 * s.traced_share,
            100.0 * s.traced_share_with_weak
        );
        for c in counts {
            let _ = write!(page, "<td>{c}</td>");
        }
        page.push_str("</tr>");
    }
    page.push_str("</table><h3>Runs</h3>");
    for s in &summaries {
        let _ = write!(
            page,
            "<details><summary>{} — {} runs</summary><p>",
            escape(&s.system),
            s.runs
        );
        let mut runs: Vec<&&TaskDetail> = details.iter().filter(|d| d.system == s.system).collect();
        runs.sort_by(|a, b| a.task.cmp(&b.task));
        for d in runs {
            let wrong = d.claims.iter().filter(|c| c.error_family.is_some()).count();
            let _ = write!(
                page,
                "<a href=\"#{}\">{}</a> ({} wrong) ",
                run_anchor(&d.system, &d.task),
                escape(&d.task),
                wrong
            );
        }
        page.push_str("</p></details>");
    }
    page.push_str("</section>\n");
    Ok(())
}

fn value_text(v: Option<&serde_json::Value>) -> String {
    match v {
        None => earthverse_stats_bootstrap::UNDEFINED.to_owned(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// A run's own page (shown when its anchor is the target): the answer, and
/// each unit with its verdict, provenance and error family.
fn run_page(page: &mut String, d: &TaskDetail) {
    let _ = write!(
        page,
        "<section class=\"runpage\" id=\"{}\"><h2>{} — {}</h2>\
         <p><a href=\"#ev-{}\">back to {}</a> · <a href=\"#evidence\">error families</a></p>",
        run_anchor(&d.system, &d.task),
        escape(&d.system),
        escape(&d.task),
        slug(&d.system),
        escape(&d.system)
    );
    if let Some(v) = &d.verdict {
        let _ = write!(page, "<p>Verdict: {}</p>", escape(v));
    }
    if let Some(answer) = &d.answer {
        let _ = write!(page, "<h3>Answer</h3><pre>{}</pre>", escape(answer));
    }
    page.push_str(
        "<h3>Units</h3><table><tr><th>Unit</th><th>Answer</th><th>Expected</th><th>OK</th>\
         <th>Status</th><th>Source</th><th>Observation</th><th>Error family</th>\
         <th>Replaced</th></tr>",
    );
    for c in d.claims.iter().filter(|c| c.counted) {
        let source = c.source.as_ref().map_or_else(
            || earthverse_stats_bootstrap::UNDEFINED.to_owned(),
            |s| {
                let mut text = format!("step {} · {}", s.step, s.tool);
                if let Some(f) = &s.file {
                    text.push_str(" · ");
                    text.push_str(f.rsplit('/').next().unwrap_or(f));
                }
                if let Some(t) = &s.transform {
                    text.push_str(" · ");
                    text.push_str(t);
                }
                text
            },
        );
        let excerpt = c.source.as_ref().map(|s| s.excerpt.as_str()).unwrap_or("");
        let replaced: Vec<String> = c
            .replaced
            .iter()
            .map(|r| format!("{} (step {})", r.value, r.step))
            .collect();
        let strength = match c.strength {
            Some(earthverse_evidence_ledger::Strength::Weak) => " (weak)",
            _ => "",
        };
        let _ = write!(
            page,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}{}</td>\
             <td>{}</td><td class=\"x\">{}</td><td>{}</td><td>{}</td></tr>",
            escape(&c.unit),
            escape(&value_text(c.value.as_ref())),
            escape(&value_text(Some(&c.expected))),
            if c.satisfied { "ok" } else { "bad" },
            if c.satisfied { "✓" } else { "✗" },
            c.status.as_str(),
            strength,
            escape(&source),
            escape(excerpt),
            c.error_family.map_or("", ErrorFamily::as_str),
            escape(&replaced.join(", "))
        );
    }
    page.push_str("</table></section>\n");
}
