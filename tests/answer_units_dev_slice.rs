//! Answer units on the development slice (needs `--features dev-slice`):
//! unit counts against an independent count, exact answers scoring 100 on
//! every task, and agreement with the published judge on the recorded runs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_answer_units::{
    agreement, count_units, decompose, extract_label_aliases, extract_tolerances, is_tuning_event,
    score_answer, score_task, shown, system_gap_noise, Agreement, JudgeReference, RunPair,
    ScoringContext, UnitScore,
};
use earthverse_package_model::{
    load_recorded_answers_with_errors, load_recorded_runs, Release, Task,
};
use serde_json::{json, Value};

fn context(task: &Task) -> ScoringContext {
    let raw = serde_json::to_value(&task.ground_truth).unwrap_or(Value::Null);
    ScoringContext::new(task.question.clone())
        .with_tolerances(extract_tolerances(&raw))
        .unwrap_or_else(|e| panic!("tolerances of {}: {e}", task.task_id))
        .with_label_aliases(extract_label_aliases(&raw))
        .with_solution(task.solution.as_deref().unwrap_or_default())
}

/// An independent count: an explicit stack over the task file's own JSON
/// (not the package model's), every non-container value counting one.
fn independent_count(task_file: &std::path::Path) -> usize {
    let bytes = std::fs::read(task_file).unwrap_or_else(|e| panic!("{}: {e}", task_file.display()));
    let task: Value =
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", task_file.display()));
    let mut stack = vec![&task["ground_truth"]["primary_gt"]];
    let mut count = 0;
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => stack.extend(map.values()),
            Value::Array(items) => stack.extend(items.iter()),
            _ => count += 1,
        }
    }
    count
}

#[test]
fn unit_counts_match_an_independent_count() {
    let root = earthverse_tests::dev_slice();
    let release = Release::load(&root).expect("dev slice loads");
    assert_eq!(release.tasks().len(), 150, "the dev slice has 150 tasks");
    let mut total = 0;
    for task in release.tasks() {
        let file = root.join("tasks").join(format!("{}.json", task.task_id));
        let expected = independent_count(&file);
        let gt = &task.ground_truth.primary_gt;
        assert_eq!(count_units(gt), expected, "count_units of {}", task.task_id);
        assert_eq!(
            decompose(gt, &context(task)).len(),
            expected,
            "decompose of {}",
            task.task_id
        );
        total += expected;
    }
    println!(
        "dev slice: {total} answer units over {} tasks ({:.2} per task)",
        release.tasks().len(),
        total as f64 / release.tasks().len() as f64
    );
    assert!(total > 0);
}

/// The units an answer missed, with why (for failure messages).
fn missed(score: &UnitScore) -> Vec<(&String, &String)> {
    score
        .ledger
        .iter()
        .filter(|e| !e.matched)
        .map(|e| (&e.path, &e.why))
        .collect()
}

#[test]
fn the_ground_truth_as_answer_scores_100_on_every_task() {
    let release = Release::load(&earthverse_tests::dev_slice()).expect("dev slice loads");
    for task in release.tasks() {
        let gt = &task.ground_truth.primary_gt;
        let ctx = context(task);
        let as_text = serde_json::to_string_pretty(gt).expect("serialises");
        for answer in [
            gt.clone(),
            json!(as_text),
            json!(format!("Final answer:\n```json\n{as_text}\n```\nDone.")),
        ] {
            let score = score_answer(gt, &answer, &ctx);
            assert_eq!(score.units_total, count_units(gt), "{}", task.task_id);
            let missed = missed(&score);
            assert_eq!(
                score.u_all, 100.0,
                "{} u_all; missed {missed:?}",
                task.task_id
            );
            assert_eq!(score.u_required, 100.0, "{} u_required", task.task_id);
        }
    }
}

/// The first fenced JSON block of the solution, when it comes before the
/// solution's second top-level heading (the release puts the answer
/// section first): read here without the scorer's section reader.
fn first_section_fenced_json(solution: &str) -> Option<Value> {
    let second_heading = solution
        .match_indices("\n# ")
        .map(|(i, _)| i)
        .find(|&i| i > 0)
        .unwrap_or(solution.len());
    let start = solution.find("```json")?;
    if start > second_heading {
        return None;
    }
    let body = solution[start + 7..].split("```").next()?;
    serde_json::from_str(body).ok()
}

#[test]
fn the_solution_final_answer_as_answer_scores_100_on_the_judge_reading() {
    let release = Release::load(&earthverse_tests::dev_slice()).expect("dev slice loads");
    let mut with_reference = 0;
    for task in release.tasks() {
        let ctx = context(task);
        let solution = task.solution.as_deref().unwrap_or_default();
        assert_eq!(
            ctx.solution_answer,
            first_section_fenced_json(solution),
            "{}: the Final Answer object read from the solution",
            task.task_id
        );
        let Some(reference) = ctx.solution_answer.clone() else {
            continue;
        };
        with_reference += 1;
        let score = score_task(&task.ground_truth.primary_gt, &reference, &ctx);
        assert_eq!(score.judge_reference(), JudgeReference::Solution);
        let judged = score.judge_score();
        assert_eq!(
            judged.units_total,
            count_units(&reference),
            "{}",
            task.task_id
        );
        let missed = missed(judged);
        assert_eq!(judged.u_all, 100.0, "{}; missed {missed:?}", task.task_id);
        assert_eq!(score.u_judge(), 100.0, "{}", task.task_id);
    }
    println!(
        "{with_reference} of {} tasks have a JSON Final Answer",
        release.tasks().len()
    );
    assert!(with_reference > 0);
}

fn show(name: &str, a: &Agreement) {
    println!(
        "{name:<9} runs {:4} MAE {:5.2} bias {:+5.2} Pearson {:.3} Spearman {:.3} within5 {:5.1}% within10 {:5.1}% max system gap {:.2} system r {:.3}",
        a.runs, shown(a.mae), shown(a.bias), shown(a.pearson), shown(a.spearman), shown(a.within5), shown(a.within10), shown(a.max_system_gap), shown(a.system_pearson)
    );
}

#[test]
fn agreement_with_the_published_judge() {
    let root = earthverse_tests::dev_slice();
    let release = Release::load(&root).expect("dev slice loads");
    let runs = load_recorded_runs(&root.join("exploration")).expect("recorded runs load");
    assert_eq!(runs.len(), 817, "the dev slice has 817 recorded runs");
    let (mut tuning, mut held_out, mut all) = (Vec::new(), Vec::new(), Vec::new());
    let mut held_out_primary_gt = Vec::new();
    let mut held_out_tasks = Vec::new();
    for entry in &runs {
        let task = release
            .task(&entry.task_id)
            .unwrap_or_else(|| panic!("task {} of {}", entry.task_id, entry.path.display()));
        let published = entry
            .run
            .scores
            .unit_accuracy
            .unwrap_or_else(|| panic!("unit_accuracy in {}", entry.path.display()));
        let score = score_task(
            &task.ground_truth.primary_gt,
            &entry.run.final_answer,
            &context(task),
        );
        let pair = RunPair {
            system: entry.system_id.clone(),
            ours: score.u_judge(),
            published,
        };
        if is_tuning_event(&task.event_id) {
            tuning.push(pair.clone());
        } else {
            held_out_primary_gt.push(RunPair {
                ours: score.units.u_required,
                ..pair.clone()
            });
            held_out.push(pair.clone());
            held_out_tasks.push(entry.task_id.clone());
        }
        all.push(pair);
    }
    let (t, h, a) = (agreement(&tuning), agreement(&held_out), agreement(&all));
    show("tuning", &t);
    show("held-out", &h);
    show("all", &a);
    for s in &a.per_system {
        println!(
            "  {:<24} {:3} ours {:6.2} published {:6.2}",
            s.system, s.runs, s.ours, s.published
        );
    }
    // Measured 2026-12-04 (the rules of the eighth round, unchanged since):
    // held-out MAE 8.34, Pearson 0.902, within10 68.6%; all runs MAE 9.20,
    // Pearson 0.893. The scorer is deterministic, so the guards sit just
    // past these figures: any rule change that moves them shows here.
    assert!(
        h.mae.unwrap_or(f64::NAN) <= 8.40,
        "held-out MAE {}",
        h.mae.unwrap_or(f64::NAN)
    );
    assert!(
        h.pearson.unwrap_or(f64::NAN) >= 0.900,
        "held-out Pearson {}",
        h.pearson.unwrap_or(f64::NAN)
    );
    assert!(
        h.within10.unwrap_or(f64::NAN) >= 68.0,
        "held-out within10 {}",
        h.within10.unwrap_or(f64::NAN)
    );
    assert!(
        a.mae.unwrap_or(f64::NAN) <= 9.25,
        "all-runs MAE {}",
        a.mae.unwrap_or(f64::NAN)
    );
    assert!(
        a.pearson.unwrap_or(f64::NAN) >= 0.890,
        "all-runs Pearson {}",
        a.pearson.unwrap_or(f64::NAN)
    );
    // The solution's Final Answer brings the reading closer to the judge
    // on the events it was not tuned on.
    let h_gt = agreement(&held_out_primary_gt);
    show("held-out, primary_gt only", &h_gt);
    assert!(
        h.mae.unwrap_or(f64::NAN) < h_gt.mae.unwrap_or(f64::NAN),
        "held-out MAE {} vs {}",
        h.mae.unwrap_or(f64::NAN),
        h_gt.mae.unwrap_or(f64::NAN)
    );
    assert!(
        h.pearson.unwrap_or(f64::NAN) > h_gt.pearson.unwrap_or(f64::NAN),
        "held-out r {} vs {}",
        h.pearson.unwrap_or(f64::NAN),
        h_gt.pearson.unwrap_or(f64::NAN)
    );
    // Per-system means: systems with at least 10 runs within 6 points, and
    // the means correlate (systems with 4–6 runs are noisier; see the report).
    for s in a.per_system.iter().filter(|s| s.runs >= 10) {
        assert!(
            (s.ours - s.published).abs() <= 6.0,
            "{} mean {} vs {}",
            s.system,
            s.ours,
            s.published
        );
    }
    assert!(
        a.system_pearson.unwrap_or(f64::NAN) >= 0.95,
        "per-system r {}",
        a.system_pearson.unwrap_or(f64::NAN)
    );
    // No per-system lean beyond noise on the held-out half: with the
    // differences shuffled among the runs of each task, a largest gap at
    // least as large as the observed one comes up often (measured 44%).
    let noise = system_gap_noise(&held_out, &held_out_tasks, 3.0, 2000, 2026);
    println!("held-out per-system gap noise floor: {noise:?}");
    assert!(
        (noise.observed_max_gap.unwrap_or(f64::NAN)
            - h.max_system_gap_min_runs.unwrap_or(f64::NAN))
        .abs()
            < 1e-9
    );
    assert!(
        noise.share_at_least_observed.unwrap_or(0.0) >= 0.05,
        "held-out per-system gaps beyond noise: {noise:?}"
    );
}

#[test]
fn the_answer_loader_reads_what_the_full_loader_reads() {
    let dir = earthverse_tests::dev_slice().join("exploration");
    let runs = load_recorded_runs(&dir).expect("recorded runs load");
    let (answers, errors) = load_recorded_answers_with_errors(&dir).expect("answers load");
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(runs.len(), answers.len());
    for (run, answer) in runs.iter().zip(&answers) {
        assert_eq!(run.system_id, answer.system_id);
        assert_eq!(run.path, answer.path);
        assert_eq!(run.task_id, answer.answer.task_id);
        assert_eq!(run.run.final_answer, answer.answer.final_answer);
        assert_eq!(run.run.scores, answer.answer.scores);
    }
}
