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
            o.trajectory.total_tokens = Some(50_000 * (s as u64 + 1));
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

/// Records with claims: the family table counts them, the leaderboard links
/// the system to it, and each run gets its own page with the claim's source.
#[test]
fn claims_give_family_tables_and_a_page_per_run() {
    use earthverse_answer_units::{score_answer, ScoringContext};
    use earthverse_evidence_ledger::{build_ledger, Observation, ObservationKind};
    use serde_json::json;

    let question = "Return {\"peak_c\": 0, \"hot_days\": 0}";
    let gt = json!({"peak_c": 41.4, "hot_days": 5});
    let observations = vec![Observation {
        step: 3,
        tool: "python_exec".into(),
        kind: ObservationKind::Computed,
        files: vec!["data/physical_hazard/open_meteo.json".into()],
        text: "Peak: 41.4 C\nHot days: 4".into(),
    }];
    let mut input = ReportInput::new("Claims");
    for (system, answer) in [
        ("good", json!({"peak_c": 41.4, "hot_days": 5})),
        ("bad", json!({"peak_c": 41.4, "hot_days": 4})),
    ] {
        let units = score_answer(&gt, &answer, &ScoringContext::new(question)).ledger;
        let ledger = build_ledger(
            question,
            &observations,
            &["data/physical_hazard/open_meteo.json".into()],
            &units,
            &[],
        );
        input
            .outcomes
            .push(TaskOutcome::from_judgment(system, "T1", 100.0, 50.0, 50.0).unwrap());
        input.details.push(TaskDetail {
            system: system.into(),
            task: "T1".into(),
            claims: ledger.claims,
            answer: Some(answer.to_string()),
            ..TaskDetail::default()
        });
    }
    let html = render_html(&input).unwrap();
    let evidence = section(&html, "evidence");
    // One wrong unit, computed over the right file: arithmetic.
    let row = &evidence[evidence.find("<tr id=\"ev-bad\">").unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    let cells: Vec<&str> = row
        .split("<td>")
        .skip(1)
        .map(|c| c.trim_end_matches("</td>"))
        .collect();
    // system, runs, satisfied numeric, traced, +weak, then the nine families
    assert_eq!(cells[0], "bad");
    assert_eq!(cells[2], "1");
    assert_eq!(cells[5 + 6], "1", "arithmetic column: {row}");
    assert_eq!(cells[5..].iter().filter(|c| **c != "0").count(), 1, "{row}");
    assert!(evidence.contains("<svg"));
    // The leaderboard links the system to its row; the run page exists.
    assert!(section(&html, "leaderboard").contains("href=\"#ev-bad\""));
    let page = &html[html.find("id=\"run-bad--T1\"").unwrap()..];
    let page = &page[..page.find("</section>").unwrap()];
    assert!(
        page.contains("step 3 · python_exec · open_meteo.json"),
        "{page}"
    );
    assert!(page.contains("Hot days: 4") && page.contains("arithmetic"));
    assert!(page.contains("&quot;hot_days&quot;:4"));
}

#[test]
fn failure_families_draw_figures_8_to_10() {
    use earthverse_evidence_ledger::RunFamily;
    use earthverse_report::families::{FamilyEffectRow, FamilyFigures, FamilyRunRow};
    use earthverse_stats_bootstrap::Estimate;
    let mut input = ReportInput::new("families");
    let mut runs = Vec::new();
    for (i, (family, core)) in [
        (Some(RunFamily::BudgetExhaustion), 10.0),
        (Some(RunFamily::NumericError), 60.0),
        (None, 95.0),
    ]
    .into_iter()
    .enumerate()
    {
        let task = format!("T{i}");
        input
            .outcomes
            .push(TaskOutcome::from_judgment("alpha", &task, 100.0, core, core).unwrap());
        runs.push(FamilyRunRow {
            system: "alpha".into(),
            system_family: "hosted".into(),
            core,
            primary: family,
            families: family.into_iter().collect(),
        });
    }
    input.families = Some(FamilyFigures {
        runs,
        effects: vec![FamilyEffectRow {
            family: RunFamily::BudgetExhaustion,
            runs_with: 1,
            delta: Estimate {
                value: Some(-67.5),
                ci_low: Some(-67.5),
                ci_high: Some(-67.5),
            },
        }],
        co_occurrences: vec![(RunFamily::BudgetExhaustion, RunFamily::NumericError, 1, 1.5)],
    });
    let html = render_html(&input).unwrap();
    let fig8 = section(&html, "fig8");
    // one bar per family with runs: budget and numeric
    assert!(fig8.contains("hosted (n=3, mean Core 55.0)"), "{fig8}");
    let fig9 = section(&html, "fig9");
    for row in [
        "hosted → budget_exhaustion",
        "hosted → numeric_error",
        "hosted → no failure found",
    ] {
        assert!(fig9.contains(row), "{row}");
    }
    let fig10 = section(&html, "fig10");
    assert_eq!(fig10.matches("<circle").count(), 1);
    assert!(fig10.contains("budget_exhaustion (n=1)"));
    assert!(fig10.contains("<td>budget_exhaustion + numeric_error</td><td>1</td><td>1.50</td>"));
}
