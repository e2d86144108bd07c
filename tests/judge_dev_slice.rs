//! The deterministic judge on every recorded run of the dev slice, against
//! the published judge scores stored in the runs (what `earthverse score
//! --judge deterministic --compare-published` reports). The asserted
//! levels are the ones reached when this test was written, with a little
//! slack; a regression in answer units or the rubric approximation fails.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use earthverse_rubric_judge::{
    compare_published, evaluate_deterministic, find_runs, load_tasks, AnswerUnitsScorer, RunStatus,
};

#[test]
fn deterministic_judge_agrees_with_published_scores() {
    let root = earthverse_tests::dev_slice();
    let tasks = load_tasks(&root).expect("tasks load");
    assert_eq!(tasks.len(), 150);
    for task in tasks.values() {
        let report = task.rubric.validate();
        assert!(report.is_valid(), "{}: {:?}", task.task_id, report.errors);
    }
    let runs = find_runs(&root.join("exploration/trajectories")).expect("runs load");
    assert_eq!(runs.len(), 817);
    let scorer = AnswerUnitsScorer::default();
    let records: Vec<_> = runs
        .iter()
        .map(|rf| evaluate_deterministic(&scorer, &tasks[&rf.run.task_id], &rf.run))
        .collect();
    for r in &records {
        assert_eq!(r.run_status, RunStatus::Ok);
        assert!((r.answer - r.answer_correctness_score.min(r.unit_accuracy)).abs() < 1e-9);
        assert!((r.core - (r.answer + r.llm_rubric_score) / 2.0).abs() < 1e-9);
        assert_eq!(r.strict95, r.unit_accuracy >= 95.0);
        assert!((r.rubric_points_total - 20.0).abs() < 1e-9);
        assert!(r.rubric_points_earned >= 0.0 && r.rubric_points_earned <= 20.0);
    }
    let a = compare_published(&records, &runs);
    assert_eq!(a.runs, 817);
    eprintln!("{a:#?}");
    // Per run, measured with the answer-units of commit 1a6e309: U MAE 10.82
    // r .860; P MAE 10.63 r .855; Core MAE 10.69 r .862 rho .828 within10
    // 60.3%; per system Core r .978 MAE 4.79.
    assert!(
        a.unit_accuracy.mae.unwrap_or(f64::NAN) < 12.0,
        "U MAE {}",
        a.unit_accuracy.mae.unwrap_or(f64::NAN)
    );
    assert!(
        a.unit_accuracy.pearson.unwrap_or(f64::NAN) > 0.83,
        "U r {}",
        a.unit_accuracy.pearson.unwrap_or(f64::NAN)
    );
    assert!(
        a.rubric.mae.unwrap_or(f64::NAN) < 12.0,
        "P MAE {}",
        a.rubric.mae.unwrap_or(f64::NAN)
    );
    assert!(
        a.rubric.pearson.unwrap_or(f64::NAN) > 0.83,
        "P r {}",
        a.rubric.pearson.unwrap_or(f64::NAN)
    );
    assert!(
        a.core.mae.unwrap_or(f64::NAN) < 12.0,
        "Core MAE {}",
        a.core.mae.unwrap_or(f64::NAN)
    );
    assert!(
        a.core.pearson.unwrap_or(f64::NAN) > 0.83,
        "Core r {}",
        a.core.pearson.unwrap_or(f64::NAN)
    );
    assert!(
        a.core.spearman.unwrap_or(f64::NAN) > 0.80,
        "Core rho {}",
        a.core.spearman.unwrap_or(f64::NAN)
    );
    assert!(
        a.core.within10.unwrap_or(f64::NAN) > 57.0,
        "Core within 10 {}",
        a.core.within10.unwrap_or(f64::NAN)
    );
    // Per system (25 systems): the leaderboard order survives.
    assert_eq!(a.system_core.n, 25);
    assert!(
        a.system_core.pearson.unwrap_or(f64::NAN) > 0.95,
        "system r {}",
        a.system_core.pearson.unwrap_or(f64::NAN)
    );
    assert!(
        a.system_core.mae.unwrap_or(f64::NAN) < 6.0,
        "system MAE {}",
        a.system_core.mae.unwrap_or(f64::NAN)
    );
}
