//! Oracles on the fixture release: every kind for every task either comes
//! out answer-free or is refused with its reason, and the guard catches a
//! ground-truth value however it is written.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_interventions::{ground_truth_values, guard, oracle, OracleError, OracleKind};
use earthverse_package_model::{Release, Task};
use earthverse_tool_registry::{Registry, ResearchToolsConfig, ToolDescriptor};
use serde_json::Value;
use std::path::PathBuf;

fn release() -> Release {
    Release::load(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release"))
        .unwrap()
}

fn tools() -> Vec<ToolDescriptor> {
    Registry::with_research_tools(ResearchToolsConfig::default()).definitions()
}

fn task<'a>(release: &'a Release, id: &str) -> &'a Task {
    release.tasks().iter().find(|t| t.task_id == id).unwrap()
}

/// An independent check: no ground-truth number that the question does not
/// state appears in `text` in its plain, 1-, 2- or 3-decimal form between
/// non-digits, and no label of 4+ characters appears at all.
fn states_no_value(text: &str, task: &Task) -> bool {
    let bounded = |hay: &str, needle: &str| {
        hay.match_indices(needle).any(|(at, _)| {
            let before = hay[..at].chars().next_back();
            let after = hay[at + needle.len()..].chars().next();
            !before.is_some_and(|c| c.is_ascii_digit() || c == '.' || c == '_')
                && !after.is_some_and(|c| c.is_ascii_digit() || c == '_')
        })
    };
    ground_truth_values(task)
        .iter()
        .all(|(_, value)| match value {
            Value::Number(n) => {
                let v = n.as_f64().unwrap();
                let forms = [
                    n.to_string(),
                    format!("{v:.1}"),
                    format!("{v:.2}"),
                    format!("{v:.3}"),
                ];
                forms
                    .iter()
                    .all(|f| bounded(&task.question, f) || !bounded(text, f))
            }
            Value::String(s) => {
                let s = s.to_lowercase();
                task.question.to_lowercase().contains(&s) || !text.to_lowercase().contains(&s)
            }
            _ => true,
        })
}

#[test]
fn every_oracle_of_the_fixtures_is_answer_free_or_refused_with_a_reason() {
    let release = release();
    let tools = tools();
    let mut emitted = 0;
    for task in release.tasks() {
        for kind in OracleKind::ALL {
            match oracle(task, kind, &tools) {
                Ok(o) => {
                    emitted += 1;
                    assert!(guard(&o.text, task).is_empty(), "{}: {kind}", task.task_id);
                    assert!(
                        states_no_value(&o.text, task),
                        "{}: {kind}\n{}",
                        task.task_id,
                        o.text
                    );
                    for f in &o.files {
                        assert!(o.text.contains(f.as_str()));
                    }
                }
                Err(e) => {
                    let reason = e.to_string();
                    assert!(reason.contains(&task.task_id), "{reason}");
                }
            }
        }
    }
    assert!(emitted >= 3 * 5 + 6, "oracles emitted: {emitted}");
}

#[test]
fn a_file_that_is_itself_the_answer_is_withheld() {
    let release = release();
    let t = task(&release, "FIX-001_Q1");
    match oracle(t, OracleKind::RelevantFiles, &tools()) {
        Err(OracleError::AllFilesWithheld { count, .. }) => assert!(count > 0),
        other => panic!("expected every file withheld, got {other:?}"),
    }
}

#[test]
fn the_guard_catches_a_value_in_any_format_and_spares_the_questions_own() {
    let release = release();
    let t = task(&release, "FIX-002_Q1");
    // peak_stage_m = 6.12, highest_affected_share_pct = 42.7, label "Lower Ferry".
    for text in [
        "the gauge peaked at 6.12 m",
        "peak stage 6.120",
        "peak stage 6,12 m",
        "share of 42.70%",
        "the 34,600 people affected",
        "the district is lower ferry",
        "a gap of 1540",
    ] {
        assert!(!guard(text, t).is_empty(), "no leak found in `{text}`");
    }
    for text in [
        "open data/exposure_impact/exposure_impact_001_affected_districts.csv",
        "compare the feed with the table",
        "the 2021 flood",
    ] {
        assert!(
            guard(text, t).is_empty(),
            "false leak in `{text}`: {:?}",
            guard(text, t)
        );
    }
}
