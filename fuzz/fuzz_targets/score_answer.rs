//! Any bytes as an answer (text, or JSON when they parse), scored against a
//! ground truth with every unit kind (a canonical label among them), must give U within 0–100 and a ledger
//! with one entry per unit, without panicking. The first byte picks whether
//! the bytes are also tried as a ground truth. The bytes are also read as an
//! expert solution: its Final Answer, if any, is a second reference for
//! `score_task`.
#![no_main]

use earthverse_answer_units::{
    count_units, score_answer, score_answer_text, score_task, ScoringContext,
};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

fuzz_target!(|data: &[u8]| {
    let gt = json!({
        "answer": "point_split_grid_dry_consensus",
        "final_label": "landfall_window_confirmed",
        "event_date": "2024-05-24",
        "peak_c": 35.5,
        "count": 12,
        "share": 0.43,
        "passes": true,
        "missing": null,
        "source": "data/physical_hazard/a_b.json",
        "note": "a long explanation of the cause and the expected effect on people and roads",
        "rows": [{"id": "r1", "value": 1.25}, {"id": "r2", "value": 2}],
        "labels": ["high", "low", 3],
        "tolerances": {"peak_c": 0.1}
    });
    let ctx = ScoringContext::new(
        "Return {\"answer\", \"final_label\", \"event_date\", \"peak_c\", \"rows\", \"labels\"}",
    )
    .with_tolerances([("count".to_owned(), 1.0)])
    .unwrap_or_default();
    let text = String::from_utf8_lossy(data);
    let check = |score: earthverse_answer_units::UnitScore, gt: &Value| {
        assert_eq!(score.ledger.len(), count_units(gt));
        assert!((0.0..=100.0).contains(&score.u_all));
        assert!((0.0..=100.0).contains(&score.u_required));
    };
    check(score_answer_text(&gt, &text, &ctx), &gt);
    let with_solution = ctx.clone().with_solution(&text);
    if let Some(reference) = with_solution.solution_answer.clone() {
        let task = score_task(&gt, &gt, &with_solution);
        check(task.units, &gt);
        check(task.solution.expect("a solution score"), &reference);
    }
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        check(score_answer(&gt, &value, &ctx), &gt);
        if data.first().is_some_and(|b| b % 2 == 0) {
            check(score_answer(&value, &gt, &ctx), &value);
            check(score_answer(&value, &value, &ctx), &value);
        }
    }
});
