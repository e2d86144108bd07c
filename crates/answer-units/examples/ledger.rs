//! Prints the unit ledger of one recorded run.
//!
//! `cargo run -p earthverse-answer-units --example ledger -- <release-root> <system> <task-id>`
//!
//! Prints the ledger against `primary_gt`, then (when the expert solution
//! has a JSON Final Answer) the judge-like ledger against it.

use earthverse_answer_units::{
    extract_label_aliases, extract_tolerances, score_task, ScoringContext, UnitScore,
};
use serde_json::Value;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [root, system, task_id] = args.as_slice() else {
        return Err("usage: ledger <release-root> <system> <task-id>".into());
    };
    let root = PathBuf::from(root);
    let task: Value = serde_json::from_slice(&std::fs::read(
        root.join("tasks").join(format!("{task_id}.json")),
    )?)?;
    let run_path = root
        .join("exploration/trajectories")
        .join(system)
        .join(format!("{task_id}.json"));
    let run: Value = serde_json::from_slice(&std::fs::read(run_path)?)?;
    let gt = &task["ground_truth"];
    let ctx = ScoringContext::new(task["question"].as_str().unwrap_or_default())
        .with_tolerances(extract_tolerances(gt))?
        .with_label_aliases(extract_label_aliases(gt))
        .with_solution(task["solution"].as_str().unwrap_or_default());
    let score = score_task(&gt["primary_gt"], &run["final_answer"], &ctx);
    print_ledger("primary_gt", &score.units);
    if let Some(solution) = &score.solution {
        print_ledger("solution Final Answer (judge-like)", solution);
    }
    println!(
        "u_judge {:.2} | published {} ({}/{})",
        score.u_judge(),
        run["scores"]["unit_accuracy"],
        run["scores"]["answer_units_correct"],
        run["scores"]["answer_units_total"],
    );
    println!("judge: {}", run["judge_rationale"]);
    Ok(())
}

fn print_ledger(reference: &str, score: &UnitScore) {
    println!("== against {reference}");
    for e in &score.ledger {
        println!(
            "{} {} {:<50} exp={:<30} found={:<30} at={:<35} {}",
            if e.matched { "✔" } else { "✘" },
            if e.counted {
                "C"
            } else if e.required {
                "r"
            } else {
                "-"
            },
            e.path,
            short(&e.expected),
            e.found.as_ref().map(short).unwrap_or_default(),
            e.found_at.clone().unwrap_or_default(),
            e.why
        );
    }
    println!(
        "u_all {:.2} u_required {:.2} counted {} | parse {:?}",
        score.u_all, score.u_required, score.units_counted, score.parse.shape
    );
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 30 {
        format!("{}…", s.chars().take(29).collect::<String>())
    } else {
        s
    }
}
