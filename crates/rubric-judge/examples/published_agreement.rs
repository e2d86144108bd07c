//! Scores recorded runs with the deterministic judge and prints agreement
//! with the published judge scores stored in them.
//!
//! ```text
//! cargo run -p earthverse-rubric-judge --example published_agreement -- \
//!     ../shared/earthverse-dev/data
//! ```

use earthverse_answer_units::shown;
use earthverse_rubric_judge::{
    agreement, approximate_rubric_weighted, compare_published, evaluate_deterministic, find_runs,
    load_tasks, Agreement, AnswerUnitsScorer, UNIT_WEIGHT,
};
use std::path::PathBuf;

fn show(name: &str, a: &Agreement) {
    println!(
        "{name:<12} n={:<4} MAE={:>6.2} bias={:>+6.2} Pearson={:>6.3} Spearman={:>6.3} within5={:>5.1}% within10={:>5.1}%",
        a.n, shown(a.mae), shown(a.bias), shown(a.pearson), shown(a.spearman), shown(a.within5), shown(a.within10)
    );
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("../shared/earthverse-dev/data"));
    let tasks = load_tasks(&root)?;
    let runs = find_runs(&root.join("exploration/trajectories"))?;
    let scorer = AnswerUnitsScorer::default();
    let records: Vec<_> = runs
        .iter()
        .map(|rf| evaluate_deterministic(&scorer, &tasks[&rf.run.task_id], &rf.run))
        .collect();
    let a = compare_published(&records, &runs);
    println!("{} runs", a.runs);
    show("U", &a.unit_accuracy);
    show("H", &a.answer_correctness);
    show("P", &a.rubric);
    show("Core", &a.core);
    show("Core/system", &a.system_core);

    // Rubric study: P = U alone, and the weight of U, tuned on events with
    // an even number and measured on the others.
    let published: Vec<f64> = runs
        .iter()
        .map(|rf| {
            rf.run
                .published_scores
                .as_ref()
                .and_then(|s| s.rubric)
                .unwrap_or(0.0)
        })
        .collect();
    let u_only: Vec<f64> = records.iter().map(|r| r.unit_accuracy).collect();
    show("P := U", &agreement(&u_only, &published));
    // The rubric approximation alone: fed the published U instead of ours.
    let with_published_u: Vec<f64> = runs
        .iter()
        .map(|rf| {
            let u = rf
                .run
                .published_scores
                .as_ref()
                .and_then(|s| s.unit_accuracy)
                .unwrap_or(0.0);
            let ledger =
                approximate_rubric_weighted(&tasks[&rf.run.task_id], &rf.run, u, UNIT_WEIGHT);
            100.0 * ledger.iter().map(|c| c.points_earned).sum::<f64>() / 20.0
        })
        .collect();
    show("P(pub U)", &agreement(&with_published_u, &published));
    let even = |id: &str| {
        id.get(4..7)
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n % 2 == 0)
    };
    for w in [0.0, 0.2, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0] {
        let mut split = [(Vec::new(), Vec::new()), (Vec::new(), Vec::new())];
        for ((rf, rec), p) in runs.iter().zip(&records).zip(&published) {
            let ledger =
                approximate_rubric_weighted(&tasks[&rf.run.task_id], &rf.run, rec.unit_accuracy, w);
            let ours = 100.0 * ledger.iter().map(|c| c.points_earned).sum::<f64>()
                / ledger
                    .iter()
                    .map(|c| c.points_possible)
                    .sum::<f64>()
                    .max(1e-9);
            let side = usize::from(!even(&rf.run.task_id));
            split[side].0.push(ours);
            split[side].1.push(*p);
        }
        show(
            &format!("P w={w} even"),
            &agreement(&split[0].0, &split[0].1),
        );
        show(
            &format!("P w={w} odd"),
            &agreement(&split[1].0, &split[1].1),
        );
    }
    Ok(())
}
