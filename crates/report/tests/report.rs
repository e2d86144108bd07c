//! The report page: errors, escaping, and one data mark per input in each plot.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_report::{escape, render_html, Error, ReportInput, TaskDetail, UnitRow};
use earthverse_stats_bootstrap::TaskOutcome;

fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html.find(&format!("<section id=\"{id}\">")).unwrap();
    let end = html[start..].find("</section>").unwrap();
    &html[start..start + end]
}

#[test]
fn escape_covers_markup_characters() {
    assert_eq!(
        escape(r#"<a href="x">'&'</a>"#),
        "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
    );
}

#[test]
fn empty_and_invalid_inputs_are_errors() {
    assert!(matches!(
        render_html(&ReportInput::new("t")),
        Err(Error::Empty)
    ));
    let mut input = ReportInput::new("t");
    let o = TaskOutcome::from_judgment("s", "T1", 50.0, 50.0, 50.0).unwrap();
    input.outcomes = vec![o.clone(), o];
    assert!(matches!(render_html(&input), Err(Error::Stats(_))));
}

#[test]
fn every_system_and_task_is_drawn() {
    let mut input = ReportInput::new("Three <systems>");
    for (s, system) in ["a", "b", "c"].iter().enumerate() {
        for t in 0..4 {
            let u = 30.0 + 20.0 * s as f64 + t as f64;
            let mut o = TaskOutcome::from_judgment(*system, format!("T{t}"), 100.0, u, u).unwrap();
            o.capabilities = vec!["causal_chain".into()];
            o.trajectory.tokens = Some(50_000.0 * (s + 1) as f64);
            input.outcomes.push(o);
        }
    }
    input.details.push(TaskDetail {
        system: "a".into(),
        task: "T0".into(),
        units: vec![UnitRow {
            unit: "peak_flow".into(),
            expected: "12".into(),
            found: "11".into(),
            satisfied: false,
            note: "outside 5%".into(),
        }],
        ..TaskDetail::default()
    });
    let html = render_html(&input).unwrap();
    assert!(html.contains("<title>Three &lt;systems&gt;</title>"));
    assert_eq!(section(&html, "landscape").matches("<circle").count(), 3);
    assert_eq!(
        section(&html, "forest").matches("<circle").count(),
        2,
        "leader against two others"
    );
    assert_eq!(
        section(&html, "distribution").matches("<circle").count(),
        12
    );
    assert!(section(&html, "capabilities").matches("<rect").count() >= 3);
    assert!(section(&html, "drilldown").contains("peak_flow"));
    // Rows are ordered by Core: c leads.
    let board = section(&html, "leaderboard");
    assert!(board.find("<td>c</td>").unwrap() < board.find("<td>a</td>").unwrap());
}
