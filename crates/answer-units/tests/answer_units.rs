//! Integration tests of the answer-units crate: data-driven checks through
//! one `check` helper, and property tests of the scorer and the parser.

#[cfg(feature = "code-reading")]
use earthverse_answer_units::read_code;
use earthverse_answer_units::{
    count_units, decompose, extract_label_aliases, parse_answer, parse_answer_text, score_answer,
    score_answer_text, score_task, solution_final_answer, AnswerShape, JudgeReference,
    ScoringContext, UnitScore,
};
use proptest::prelude::*;
use serde_json::{json, Map, Value};

/// Scores `answer` against `gt` with `question` and checks (u_all, u_required).
fn check(gt: Value, answer: Value, question: &str, expected: (f64, f64)) {
    let ctx = ScoringContext::new(question);
    let score = score_answer(&gt, &answer, &ctx);
    let got = (round2(score.u_all), round2(score.u_required));
    assert_eq!(
        got, expected,
        "gt {gt}\nanswer {answer}\nledger {:#?}",
        score.ledger
    );
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[test]
fn scoring_rules() {
    let q = "Return {\"peak_c\", \"label\", \"dates\", \"ok\", \"source\"}";
    let gt = json!({"peak_c": 35.5, "label": "very_high", "dates": ["2021-06-27", "2021-06-29"], "ok": true, "source": "data/a/b.json"});
    // Exact answer.
    check(gt.clone(), gt.clone(), q, (100.0, 100.0));
    // Flattened differently, numbers as strings with units, pass words, path prefix, set order.
    check(
        gt.clone(),
        json!({"result": {"peak_c": "35.52 °C", "label": "Very High", "ok": "PASS"},
               "dates": ["2021-06-29", "2021-06-27"], "source": "packages/CSX-1/data/a/b.json"}),
        q,
        (100.0, 100.0),
    );
    // Wrong values.
    check(
        gt.clone(),
        json!({"peak_c": 30, "label": "low", "dates": ["2021-06-27"], "ok": false, "source": "data/a/c.json"}),
        q,
        (16.67, 10.0),
    );
    // Empty answer.
    check(gt.clone(), json!({}), q, (0.0, 0.0));
    // Unasked units count only when matched.
    check(
        json!({"a": 1, "extra": "zzz"}),
        json!({"a": 1}),
        "give a",
        (50.0, 100.0),
    );
    // Percent for fraction.
    check(
        json!({"share": 0.43}),
        json!({"share": "43%"}),
        "share",
        (100.0, 100.0),
    );
    check(
        json!({"count": 0}),
        json!({"count": 40}),
        "count",
        (0.0, 0.0),
    );
    // Lists of objects matched by row content, not position.
    check(
        json!({"rows": [{"id": "a", "v": 1.5}, {"id": "b", "v": 2.5}]}),
        json!({"rows": [{"id": "b", "v": 2.5}, {"id": "a", "v": 1.5}]}),
        "rows id v",
        (100.0, 100.0),
    );
}

#[test]
fn row_labels_given_by_the_question_are_not_units() {
    let q = "Build a ledger with rows `wind_check` and `rain_check`: {\"rows\": [{\"test\", \"value\"}]}";
    let gt = json!({"rows": [{"test": "wind_check", "value": 12.5}, {"test": "rain_check", "value": 3.25}]});
    // Row labels echoed, values wrong: nothing earned for restating the question.
    let echo =
        json!({"rows": [{"test": "wind_check", "value": 0}, {"test": "rain_check", "value": 0}]});
    let ctx = ScoringContext::new(q);
    let score = score_answer(&gt, &echo, &ctx);
    assert_eq!(score.u_required, 0.0, "{:#?}", score.ledger);
    assert!(score.ledger.iter().filter(|e| e.given).all(|e| !e.counted));
    assert_eq!(score.ledger.iter().filter(|e| e.given).count(), 2);
    // The exact answer still scores 100, and the labels count when nothing else does.
    check(gt.clone(), gt.clone(), q, (100.0, 100.0));
    let only_labels = json!({"test": "wind_check"});
    let gt_labels = json!({"rows": [{"test": "wind_check"}]});
    check(gt_labels, only_labels, q, (100.0, 100.0));
}

#[test]
fn canonical_labels_match_exactly() {
    let q = "Return {\"final_label\": \"...\", \"mechanism\": \"...\"}";
    let gt = json!({"final_label": "hourly_burst_with_larger_storm_total", "mechanism": "hourly_burst_with_larger_storm_total"});
    let words = "supports combined hourly burst plus larger storm total";
    let ctx = ScoringContext::new(q);
    let paraphrase = score_answer(
        &gt,
        &json!({"final_label": words, "mechanism": words}),
        &ctx,
    );
    let entry = |score: &UnitScore, path: &str| {
        let found = score.ledger.iter().find(|e| e.path == path);
        assert!(found.is_some(), "no {path} in {:#?}", score.ledger);
        found
            .map(|e| (e.matched, e.why.clone()))
            .unwrap_or_default()
    };
    // Under a key naming a label, most of the words are not the label ...
    assert!(
        !entry(&paraphrase, "final_label").0,
        "{:#?}",
        paraphrase.ledger
    );
    // ... under any other key the same words still match by token overlap.
    let (matched, why) = entry(&paraphrase, "mechanism");
    assert!(matched && why.starts_with("label token recall"), "{why}");
    // The label spelled with spaces or case, or leading a reason, matches.
    for answer in [
        "Hourly burst with larger storm total",
        "hourly-burst-with-larger-storm-total",
        "hourly_burst_with_larger_storm_total: the hourly peak sits inside the storm",
    ] {
        let score = score_answer(&gt, &json!({"final_label": answer}), &ctx);
        assert!(
            entry(&score, "final_label").0,
            "{answer}: {:#?}",
            score.ledger
        );
    }
    // With the rule off, token overlap matches the label again.
    let mut loose = ScoringContext::new(q);
    loose.rules.canonical_labels_exact = false;
    let score = score_answer(&gt, &json!({"final_label": words}), &loose);
    assert!(entry(&score, "final_label").0, "{:#?}", score.ledger);
    // A label with spaces is not an identifier: overlap still decides.
    let spaced = json!({"final_label": "hourly burst with larger storm total"});
    let score = score_answer(&spaced, &json!({"final_label": words}), &ctx);
    assert!(entry(&score, "final_label").0, "{:#?}", score.ledger);
}

#[test]
fn labels_the_ground_truth_declares_equivalent_match() {
    let task_gt = json!({
        "primary_gt": {"final_label": "dry_hotspot_smoke_signature", "peak_c": 31.5},
        "key_values": {"aliases": ["dry_hotspot_smoke_signature", "dry_fire_smoke_report_signature"]},
        "acceptable_variants": ["Equivalent short labels are acceptable if all ledgers and flags match."]
    });
    let groups = extract_label_aliases(&task_gt);
    assert_eq!(groups.len(), 1, "{groups:?}");
    let q = "Return {\"final_label\": \"...\", \"peak_c\": 0}";
    let ctx = ScoringContext::new(q).with_label_aliases(groups);
    let gt = &task_gt["primary_gt"];
    let label = |answer: Value, ctx: &ScoringContext| {
        let score = score_answer(gt, &answer, ctx);
        let entry = score
            .ledger
            .iter()
            .find(|e| e.path == "final_label")
            .cloned();
        assert!(entry.is_some(), "{:#?}", score.ledger);
        entry.map(|e| (e.matched, e.why)).unwrap_or_default()
    };
    // The declared alias, spelled with spaces, matches and says why ...
    let (matched, why) = label(
        json!({"final_label": "Dry fire smoke report signature"}),
        &ctx,
    );
    assert!(matched && why.contains("equivalent label"), "{why}");
    // ... without the declaration it is a different canonical label ...
    let plain = ScoringContext::new(q);
    assert!(
        !label(
            json!({"final_label": "dry_fire_smoke_report_signature"}),
            &plain
        )
        .0
    );
    // ... and a label the ground truth did not list still does not match.
    assert!(
        !label(
            json!({"final_label": "dry_spring_fire_smoke_signature"}),
            &ctx
        )
        .0
    );
    // A group never matches a unit whose label is outside it.
    let other = json!({"final_label": "wet_signature"});
    let score = score_answer(
        &other,
        &json!({"final_label": "dry_hotspot_smoke_signature"}),
        &ctx,
    );
    assert!(!score.ledger[0].matched, "{:#?}", score.ledger);
}

#[test]
fn a_repeated_value_counts_once() {
    let q = "Return {\"process_model\": {\"window_start\", \"peak_c\", \"days\"}, \"scenario\": {\"window_start\", \"peak_c\", \"days\"}}";
    let gt = json!({
        "process_model": {"window_start": "2021-06-27", "peak_c": 41.7, "days": 3},
        "scenario": {"window_start": "2021-06-27", "peak_c": 42.9, "days": 3}
    });
    // The answer gives the shared start date once, wrong elsewhere.
    let answer =
        json!({"process_model": {"window_start": "2021-06-27", "peak_c": 30.0, "days": 5}});
    let ctx = ScoringContext::new(q);
    let score = score_answer(&gt, &answer, &ctx);
    let repeats: Vec<_> = score
        .ledger
        .iter()
        .filter(|e| e.path == "scenario.window_start")
        .map(|e| (e.repeat_of.as_deref(), e.counted))
        .collect();
    assert_eq!(repeats, [(Some("process_model.window_start"), false)]);
    // Small whole numbers are not distinctive: both `days` count.
    assert!(score
        .ledger
        .iter()
        .filter(|e| e.key.as_deref() == Some("days"))
        .all(|e| e.counted && e.repeat_of.is_none()));
    // Counted: start date (matched), two peaks, two day counts → 1 of 5.
    assert_eq!(round2(score.u_required), 20.0, "{:#?}", score.ledger);
    // Without the rule the repeated start date counts twice: 2 of 6.
    let mut off = ScoringContext::new(q);
    off.rules.merge_repeated_units = false;
    assert_eq!(round2(score_answer(&gt, &answer, &off).u_required), 33.33);
    // The exact answer still scores 100.
    check(gt.clone(), gt.clone(), q, (100.0, 100.0));
    // Rows of one list are distinct facts, even with the same value: two
    // edges into the same node are both counted.
    let gt = json!({"edges": [{"from": "heavy_rainfall_total", "to": "river_flood_peak"},
                              {"from": "saturated_soils_early", "to": "river_flood_peak"}]});
    let answer = json!({"edges": [{"from": "heavy_rainfall_total", "to": "river_flood_peak"}]});
    let score = score_answer(&gt, &answer, &ScoringContext::new("edges: from, to"));
    assert!(
        score.ledger.iter().all(|e| e.repeat_of.is_none()),
        "{:#?}",
        score.ledger
    );
    assert_eq!(score.units_counted, 4, "{:#?}", score.ledger);
}

#[test]
fn answer_under_the_templates_own_key() {
    // The template calls the answer `diagnosis`; the ground truth `answer`.
    let q = "Return {\"diagnosis\": \"<label>\", \"index_value\": <number>}";
    let gt = json!({"answer": "coupled_summit_drainage_lerz_effusion", "index_value": 1.0});
    let answer = json!({"diagnosis": "coupled summit-drainage and lower-rift effusion system", "index_value": 0.4});
    let mut ctx = ScoringContext::new(q);
    // Off by default (see the README's variant log): only the index counts.
    assert_eq!(score_answer(&gt, &answer, &ctx).u_required, 0.0);
    ctx.rules.answer_from_template_keys = true;
    let score = score_answer(&gt, &answer, &ctx);
    let found: Vec<_> = score
        .ledger
        .iter()
        .filter(|e| e.path == "answer")
        .map(|e| (e.matched, e.found_at.clone()))
        .collect();
    assert_eq!(found, [(true, Some("$.diagnosis".to_owned()))]);
    assert_eq!(score.u_required, 50.0);
    // A template field that does not match leaves the unit as before.
    let wrong = json!({"diagnosis": "isolated summit collapse", "index_value": 1.0});
    assert_eq!(score_answer(&gt, &wrong, &ctx).u_required, 100.0);
}

/// Counterexamples the repeated-subtree property test found in list
/// alignment (each failed before the fix it names).
#[test]
fn list_alignment_counterexamples() {
    // Rows are chosen by units matched inside them: values found elsewhere
    // in the answer must not make the wrong row look best.
    let sub = json!([null, {"key1x": 100, "key2x": -100, "key3x": 103, "key4x": -100},
                     null, {"key5x": null, "key6x": null, "key7x": -100}]);
    let gt = json!({"first": sub.clone(), "second": sub});
    let q = "key5x, key7x, second, key2x, key4x";
    let mut answer = gt.clone();
    answer["second"][1]["key3x"] = json!(null);
    let ctx = ScoringContext::new(q);
    let before = score_answer(&gt, &answer, &ctx);
    let found: Vec<_> = before
        .ledger
        .iter()
        .filter(|e| e.path == "second[3].key5x")
        .map(|e| e.found_at.as_deref())
        .collect();
    assert_eq!(found, [Some("$.second[3].key5x")]);
    answer["first"][1]["key3x"] = json!([]);
    assert_not_raised(&before, &score_answer(&gt, &answer, &ctx));

    // Ties between rows go to the row at the same position of the answer's
    // list, counted over all its elements (not over its rows only).
    let gt =
        json!({"key1x": [null, {"key2x": "a  aa a aa  aaaaaaa "}, {"key3x": "_", "key4x": 100}]});
    check(gt.clone(), gt, "", (100.0, 100.0));

    // A list inside a list is aligned with the answer's list at the same
    // position.
    let sub = json!([{}, [{"key1x": "a", "key2x": 100}]]);
    let gt = json!({"first": sub.clone(), "second": sub});
    check(gt.clone(), gt, "key1x", (100.0, 100.0));

    // A row's missing field is not borrowed from another part of the answer.
    let sub = json!([{"key1x": null, "key2x": null, "key3x": null, "key4x": null},
                     {"key5x": null, "key6x": null, "key7x": null, "key8x": null}]);
    let gt = json!({"first": sub.clone(), "second": sub});
    let q = "key5x, second, key1x, key2x, key3x, key4x, key7x, key8x";
    let ctx = ScoringContext::new(q);
    let mut answer = gt.clone();
    answer["second"][1]["key5x"] = json!(false);
    let before = score_answer(&gt, &answer, &ctx);
    answer["second"][0]["key1x"] = json!([]);
    assert_not_raised(&before, &score_answer(&gt, &answer, &ctx));
}

#[test]
fn prose_and_fenced_answers() {
    let gt = json!({"peak_c": 35.5, "label": "very_high"});
    let ctx = ScoringContext::new("peak_c label");
    let prose = score_answer_text(&gt, "The peak was 35.5 C and the label is very high.", &ctx);
    assert_eq!(prose.parse.shape, AnswerShape::Prose);
    assert_eq!(prose.units_matched, 2);
    let fenced = score_answer_text(&gt, "Here:\n```json\n{\"peak_c\": 35.5}\n```\nthanks", &ctx);
    assert_eq!(fenced.parse.shape, AnswerShape::FencedBlock);
    assert_eq!(fenced.parse.remainder, "Here:\n\nthanks");
    assert_eq!(fenced.units_matched, 1);
}

#[test]
fn decomposition_kinds_and_required() {
    let gt = json!({"a": {"b": [1, "two", null], "c": {}}, "d": "a long sentence that explains what happened and why it matters", "tolerances": {"a": 1}});
    let units = decompose(&gt, &ScoringContext::new("return b and d"));
    assert_eq!(units.len(), count_units(&gt));
    let paths: Vec<&str> = units.iter().map(|u| u.path.as_str()).collect();
    assert_eq!(paths, ["a.b[0]", "a.b[1]", "a.b[2]", "d", "tolerances.a"]);
    assert!(units[0].required && units[0].list_element);
    assert!(units[3].required);
    assert!(units[4].meta);
    assert_eq!(format!("{:?}", units[3].kind), "LongText");
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|i| json!(i)),
        (-1e6f64..1e6).prop_map(|f| json!((f * 100.0).round() / 100.0)),
        "[a-z_]{1,12}".prop_map(Value::String),
        "[a-z ]{20,60}".prop_map(Value::String),
        "20[0-2][0-9]-0[1-9]-[12][0-9]".prop_map(Value::String),
        "data/[a-z]{1,6}/[a-z_]{1,8}\\.json".prop_map(Value::String),
    ]
}

/// Ground truths with unique keys (so that removing a key cannot make the
/// lookup align with a different key of the same name).
fn ground_truth() -> impl Strategy<Value = Value> {
    leaf()
        .prop_recursive(4, 48, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
                prop::collection::vec(inner, 0..6).prop_map(|vals| {
                    Value::Object(
                        vals.into_iter()
                            .enumerate()
                            .map(|(i, v)| (format!("k{i}"), v))
                            .collect::<Map<_, _>>(),
                    )
                }),
            ]
        })
        .prop_map(|v| {
            let mut counter = 0;
            rename_unique(v, &mut counter)
        })
}

fn rename_unique(v: Value, counter: &mut usize) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(_, v)| {
                    *counter += 1;
                    let key = format!("key{counter}x");
                    (key, rename_unique(v, counter))
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|v| rename_unique(v, counter))
                .collect(),
        ),
        other => other,
    }
}

/// Paths (as index lists) of every scalar leaf.
fn leaf_paths(v: &Value, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    match v {
        Value::Object(map) => {
            for (i, child) in map.values().enumerate() {
                prefix.push(i);
                leaf_paths(child, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                prefix.push(i);
                leaf_paths(child, prefix, out);
                prefix.pop();
            }
        }
        _ => out.push(prefix.clone()),
    }
}

fn leaf_mut<'a>(v: &'a mut Value, path: &[usize]) -> Option<&'a mut Value> {
    let Some((&first, rest)) = path.split_first() else {
        return Some(v);
    };
    match v {
        Value::Object(map) => leaf_mut(map.values_mut().nth(first)?, rest),
        Value::Array(items) => leaf_mut(items.get_mut(first)?, rest),
        _ => None,
    }
}

/// Replaces the value of the leaf at `path` with something no unit matches.
fn remove_value(v: &mut Value, path: &[usize]) {
    if let Some(slot) = leaf_mut(v, path) {
        *slot = json!([]);
    }
}

fn question_for(gt: &Value, mask: u64) -> String {
    let mut keys = Vec::new();
    collect_keys(gt, &mut keys);
    keys.into_iter()
        .enumerate()
        .filter(|(i, _)| mask >> (i % 64) & 1 == 1)
        .map(|(_, k)| k)
        .collect::<Vec<_>>()
        .join(", ")
}

fn collect_keys(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                out.push(k.clone());
                collect_keys(child, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|c| collect_keys(c, out)),
        _ => {}
    }
}

/// Removing a value did not raise the judge-like U.
fn assert_not_raised(before: &UnitScore, after: &UnitScore) {
    assert!(
        after.u_required <= before.u_required,
        "{} -> {}",
        before.u_required,
        after.u_required
    );
}

/// Scores a partly wrong answer (the ground truth with `edits` applied to
/// some leaves) before and after the leaf at `pick` loses its value; `None`
/// for a ground truth without leaves.
fn before_and_after_removal(
    gt: &Value,
    ctx: &ScoringContext,
    edits: Vec<(prop::sample::Index, Value)>,
    pick: prop::sample::Index,
) -> Option<(UnitScore, UnitScore)> {
    let mut paths = Vec::new();
    leaf_paths(gt, &mut Vec::new(), &mut paths);
    if paths.is_empty() {
        return None;
    }
    let mut answer = gt.clone();
    for (index, value) in edits {
        if let Some(slot) = leaf_mut(&mut answer, &paths[index.index(paths.len())]) {
            *slot = value;
        }
    }
    let before = score_answer(gt, &answer, ctx);
    remove_value(&mut answer, &paths[pick.index(paths.len())]);
    Some((before, score_answer(gt, &answer, ctx)))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn answer_equal_to_ground_truth_scores_100(gt in ground_truth(), mask in any::<u64>()) {
        let ctx = ScoringContext::new(question_for(&gt, mask));
        let score = score_answer(&gt, &gt, &ctx);
        prop_assert_eq!(score.units_total, count_units(&gt));
        if score.units_total > 0 {
            prop_assert_eq!(score.u_all, 100.0, "{:#?}", score.ledger);
            prop_assert_eq!(score.u_required, 100.0);
        }
    }

    #[test]
    fn removing_a_value_never_raises_u(
        gt in ground_truth(),
        mask in any::<u64>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), leaf()), 0..4),
        pick in any::<prop::sample::Index>(),
    ) {
        let ctx = ScoringContext::new(question_for(&gt, mask));
        let Some((before, after)) = before_and_after_removal(&gt, &ctx, edits, pick) else {
            return Err(TestCaseError::reject("no leaves"));
        };
        prop_assert!(after.u_all <= before.u_all + 1e-9, "u_all {} -> {}", before.u_all, after.u_all);
        prop_assert!(after.u_required <= before.u_required + 1e-9, "u_required {} -> {}\n{:#?}\n{:#?}", before.u_required, after.u_required, before.ledger, after.ledger);
    }

    /// The same two properties on ground truths that repeat a subtree under
    /// another key, so that repeated units (counted once) are exercised.
    #[test]
    fn repeated_subtrees_keep_both_properties(
        sub in ground_truth(),
        mask in any::<u64>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), leaf()), 0..4),
        pick in any::<prop::sample::Index>(),
    ) {
        let gt = json!({"first": sub.clone(), "second": sub});
        let ctx = ScoringContext::new(question_for(&gt, mask));
        let exact = score_answer(&gt, &gt, &ctx);
        if exact.units_total > 0 {
            prop_assert_eq!(exact.u_required, 100.0, "{:#?}", exact.ledger);
        }
        let Some((before, after)) = before_and_after_removal(&gt, &ctx, edits, pick) else {
            return Err(TestCaseError::reject("no leaves"));
        };
        prop_assert!(after.u_required <= before.u_required + 1e-9, "u_required {} -> {}\n{:#?}\n{:#?}", before.u_required, after.u_required, before.ledger, after.ledger);
    }

    /// `score_task` reads one answer index for both references: each of its
    /// scores equals `score_answer` against that reference alone, and the
    /// judge-like U is the solution's `u_required` (100 for the solution
    /// itself as the answer).
    #[test]
    fn score_task_scores_each_reference_like_score_answer(
        gt in ground_truth(),
        reference in ground_truth(),
        mask in any::<u64>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), leaf()), 0..4),
    ) {
        let mut ctx = ScoringContext::new(question_for(&reference, mask));
        let mut paths = Vec::new();
        leaf_paths(&reference, &mut Vec::new(), &mut paths);
        let mut answer = reference.clone();
        for (index, value) in edits.into_iter().filter(|_| !paths.is_empty()) {
            if let Some(slot) = leaf_mut(&mut answer, &paths[index.index(paths.len())]) {
                *slot = value;
            }
        }
        let without = score_task(&gt, &answer, &ctx);
        prop_assert_eq!(without.judge_reference(), JudgeReference::PrimaryGt);
        prop_assert_eq!(without.u_judge(), without.units.u_required);
        ctx.solution_answer = Some(reference.clone());
        let both = score_task(&gt, &answer, &ctx);
        prop_assert_eq!(&both.units, &score_answer(&gt, &answer, &ctx));
        let solution = score_answer(&reference, &answer, &ctx);
        prop_assert_eq!(both.solution.as_ref(), Some(&solution));
        prop_assert_eq!(both.judge_reference(), JudgeReference::Solution);
        prop_assert_eq!(both.u_judge(), solution.u_required);
        let exact = score_task(&gt, &reference, &ctx);
        if count_units(&reference) > 0 {
            prop_assert_eq!(exact.u_judge(), 100.0);
        }
    }

    /// Any text under a Final Answer heading is read without panicking, and
    /// a reference, when found, is an object with units.
    #[test]
    fn any_solution_text_is_read_safely(
        head in "(#{1,7} ?(Final|Correct|The)? ?Answers?\n)?",
        body in "[#`\\[\\]{}\",:0-9a-z \n-]{0,300}",
    ) {
        let text = format!("{head}{body}");
        if let Some(reference) = solution_final_answer(&text) {
            prop_assert!(reference.is_object());
            prop_assert!(count_units(&reference) > 0);
        }
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let text = String::from_utf8_lossy(&bytes);
        let parsed = parse_answer_text(&text);
        prop_assert!(parsed.report.remainder.len() <= text.len() || parsed.json.is_none());
        let _ = solution_final_answer(&text);
        let gt = json!({"a": 1.5, "b": "label", "c": [1, 2], "d": {"e": true, "f": null}});
        let score = score_answer_text(&gt, &text, &ScoringContext::new("a b c d e f"));
        prop_assert!((0.0..=100.0).contains(&score.u_all));
        prop_assert!((0.0..=100.0).contains(&score.u_required));
    }

    #[test]
    fn json_like_text_never_panics(text in "[\\[\\]{}\",:0-9a-z .eE+\\-`\n]{0,400}") {
        let gt = json!({"a": 1.5, "rows": [{"x": 1}, {"x": 2}], "c": ["p", "q"]});
        let score = score_answer_text(&gt, &text, &ScoringContext::new("a rows x c"));
        prop_assert!((0.0..=100.0).contains(&score.u_required));
    }

    #[cfg(feature = "code-reading")]
    #[test]
    fn python_like_code_never_panics(
        code in "([a-z]{1,3}|[0-9.e_]{1,4}|[-+*/%<>=!(),:.\\[\\]{}'\"#]|\\*\\*|//|==| |\n|\n    |if |else|elif |def |return |for |in |and |or |not |round|max|date)*"
    ) {
        let reading = read_code(&code);
        prop_assert!(reading.skipped.iter().all(|s| s.statement.len() <= code.len()));
        let answer = json!({"action": "python_exec", "code": code});
        let parsed = parse_answer(&answer);
        prop_assert_eq!(parsed.report.shape, AnswerShape::PendingCode);
        prop_assert!(parsed.report.remainder.len() <= code.len());
        let gt = json!({"a": 1.5, "b": "label"});
        let score = score_answer(&gt, &answer, &ScoringContext::new("a b"));
        prop_assert!((0.0..=100.0).contains(&score.u_all));
    }

    #[test]
    fn huge_and_odd_numbers_never_panic(x in any::<f64>(), i in any::<i64>(), u in any::<u64>()) {
        let gt = json!({"a": x, "b": i, "c": u, "d": format!("{x} mm")});
        let answer = json!({"a": u, "b": x, "c": format!("{i}%"), "d": i});
        let score = score_answer(&gt, &answer, &ScoringContext::new("a b c d"));
        prop_assert!((0.0..=100.0).contains(&score.u_all));
        let text = format!("{{\"a\": 1e308, \"b\": -1e999, \"c\": {u}, \"d\": 123456789012345678901234567890}}");
        let _ = score_answer_text(&gt, &text, &ScoringContext::new("a"));
    }
}

#[test]
fn deep_nesting_never_panics() {
    // Deeper than serde_json's parser accepts, as text.
    let deep_text = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
    let score = score_answer_text(&json!({"a": 1}), &deep_text, &ScoringContext::new("a"));
    assert_eq!(score.units_matched, 0);
    // Deeply nested values built in memory (beyond the walker's depth limit).
    let mut answer = json!(1);
    let mut gt = json!("x");
    for _ in 0..400 {
        answer = json!({"a": answer});
        gt = json!([gt]);
    }
    let score = score_answer(&json!({"a": 1}), &answer, &ScoringContext::new("a"));
    assert!(score.u_all <= 100.0);
    let score = score_answer(&gt, &answer, &ScoringContext::new("a"));
    assert!(score.u_all <= 100.0);
    // Leak the deep values: dropping them recursively is serde_json's
    // business and not what this test is about.
    std::mem::forget(answer);
    std::mem::forget(gt);
}

/// Regression (found by the proptest in CI): a ground truth whose text
/// normalises to nothing must still match an identical answer.
#[test]
fn identical_text_that_normalises_to_nothing_still_matches() {
    for text in ["_", "--", "…"] {
        let gt = serde_json::json!(text);
        let score = earthverse_answer_units::score_answer(&gt, &gt, &ScoringContext::new(""));
        assert_eq!(score.u_all, 100.0, "{text:?}: {:?}", score.ledger);
    }
}

#[test]
fn template_fields_the_solution_leaves_out_can_come_from_primary_gt() {
    let q = "Return {\"label\": \"<label>\", \"peak\": <number>}. Add a top-level \
             `reasoning_depth` object with `evidence_weighting`.";
    let gt = json!({
        "label": "wet_extreme",
        "peak": 41.2,
        "reasoning_depth": {"evidence_weighting": "gauge record outweighs the news report"}
    });
    let solution = "# Final Answer\n```json\n{\"label\": \"wet_extreme\", \"peak\": 41.2}\n```\n";
    let answer = json!({"label": "wet_extreme", "peak": 41.2});
    let mut ctx = ScoringContext::new(q).with_solution(solution);
    // Off by default: the solution's Final Answer alone is the reference.
    let off = score_task(&gt, &answer, &ctx);
    assert_eq!(off.judge_reference(), JudgeReference::Solution);
    assert_eq!(off.u_judge(), 100.0);
    ctx.rules.template_keys_from_gt = true;
    let on = score_task(&gt, &answer, &ctx);
    let paths: Vec<&str> = on
        .judge_score()
        .ledger
        .iter()
        .map(|e| e.path.as_str())
        .collect();
    assert!(
        paths.contains(&"reasoning_depth.evidence_weighting"),
        "{paths:?}"
    );
    assert!(on.u_judge() < 100.0, "{}", on.u_judge());
    // An answer that gives the addendum scores 100 again.
    let full = json!({
        "label": "wet_extreme",
        "peak": 41.2,
        "reasoning_depth": {"evidence_weighting": "the gauge record outweighs the news report"}
    });
    assert_eq!(score_task(&gt, &full, &ctx).u_judge(), 100.0);
    // A key the question does not name is never added.
    let gt_extra = json!({"label": "wet_extreme", "peak": 41.2, "station_count": 3});
    let ledger_len = score_task(&gt_extra, &answer, &ctx)
        .judge_score()
        .ledger
        .len();
    assert_eq!(ledger_len, 2);
}

#[test]
fn keys_with_the_same_meaning_words_align() {
    let q = "Return {\"hail_ledger\": {\"max_cm\", \"italy_share_pct\"}}";
    let gt = json!({"hail_ledger": {"max_cm": 19, "italy_share_pct": 91.7}});
    // The answer spells the keys out, with the unit in the value.
    let answer = json!({"hail_ledger": {"maximum_hail_size": "19 cm",
                                        "italy_share_of_giant_hail_reports": "91.7%"}});
    let ctx = ScoringContext::new(q);
    let score = score_answer(&gt, &answer, &ctx);
    let found: Vec<_> = score
        .ledger
        .iter()
        .map(|e| (e.path.as_str(), e.found_at.as_deref(), e.matched))
        .collect();
    assert_eq!(
        found,
        [
            (
                "hail_ledger.max_cm",
                Some("$.hail_ledger.maximum_hail_size"),
                true
            ),
            (
                "hail_ledger.italy_share_pct",
                Some("$.hail_ledger.italy_share_of_giant_hail_reports"),
                true
            ),
        ],
        "{:#?}",
        score.ledger
    );
    // Without the rule neither key is aligned; 19 is too small a number to
    // be looked for elsewhere, and 91.7 is found only as a stray value.
    let mut off = ScoringContext::new(q);
    off.rules.key_word_subset = false;
    let before = score_answer(&gt, &answer, &off);
    assert!(before
        .ledger
        .iter()
        .all(|e| e.found_at.as_deref() != Some("$.hail_ledger.maximum_hail_size")));
    assert!(before.u_required < score.u_required);
    // Two answer keys that both hold the words: ambiguous, so neither is
    // taken for `max_cm` (the wrong one would be as likely as the right).
    let ambiguous = json!({"hail_ledger": {"maximum_hail_size": 19, "maximum_hail_depth": 7}});
    let score = score_answer(&gt, &ambiguous, &ctx);
    let max: Vec<_> = score
        .ledger
        .iter()
        .filter(|e| e.path == "hail_ledger.max_cm")
        .map(|e| (e.found_at.as_deref(), e.matched))
        .collect();
    assert_eq!(max, [(None, false)], "{:#?}", score.ledger);
}

#[test]
fn dotted_path_keys_read_as_nested_objects() {
    let q = "Return {\"basin_metrics\": {\"below0_h\", \"snow_h\"}, \"source\"}";
    let gt = json!({"basin_metrics": {"below0_h": 0, "snow_h": 3}, "source": "data/a/b.json"});
    // The answer writes the nested keys as paths, one of them next to an
    // object already under `basin_metrics`.
    let answer = json!({"basin_metrics": {"snow_h": 3}, "basin_metrics.below0_h": 0,
                        "source": "data/a/b.json"});
    check(gt.clone(), answer, q, (100.0, 100.0));
    // A path that would overwrite a value stays a key: `snow_h` keeps 3.
    let answer = json!({"basin_metrics": {"snow_h": 3, "below0_h": 0}, "basin_metrics.snow_h": 9});
    let parsed = parse_answer(&answer);
    assert_eq!(
        parsed.json,
        Some(json!({"basin_metrics": {"snow_h": 3, "below0_h": 0}, "basin_metrics.snow_h": 9}))
    );
    // File names and numbers are not paths.
    let answer = json!({"report.json": 1, "share_ge_0.5": 2, "data/a.json": 3, "a..b": 4});
    assert_eq!(parse_answer(&answer).json, Some(answer.clone()));
    // A ground truth with a dotted key is read the same way, so an answer
    // equal to it still scores 100.
    let gt = json!({"metrics.peak_c": 41.7, "metrics": {"days": 3}});
    check(gt.clone(), gt, "metrics peak_c days", (100.0, 100.0));
}

/// Writes every object nested in an object as dotted-path keys of its
/// parent (`{"a": {"b": 1}}` → `{"a.b": 1}`); arrays are kept, their
/// elements flattened in turn. Empty objects are kept as values.
fn flatten_key_paths(v: &Value) -> Value {
    fn into(map: &Map<String, Value>, prefix: &str, out: &mut Map<String, Value>) {
        for (k, v) in map {
            let key = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match v {
                Value::Object(inner) if !inner.is_empty() => into(inner, &key, out),
                other => {
                    out.insert(key, flatten_key_paths(other));
                }
            }
        }
    }
    match v {
        Value::Object(map) => {
            let mut out = Map::new();
            into(map, "", &mut out);
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(flatten_key_paths).collect()),
        other => other.clone(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// An answer whose nested objects are written as dotted-path keys
    /// scores exactly as the nested answer.
    #[test]
    fn dotted_path_answers_score_as_nested_ones(
        gt in ground_truth(),
        mask in any::<u64>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), leaf()), 0..4),
    ) {
        let ctx = ScoringContext::new(question_for(&gt, mask));
        // A nested answer that differs from the ground truth at a few leaves.
        let mut answer = gt.clone();
        let mut paths = Vec::new();
        leaf_paths(&gt, &mut Vec::new(), &mut paths);
        for (index, value) in edits {
            if paths.is_empty() {
                break;
            }
            if let Some(leaf) = leaf_mut(&mut answer, &paths[index.index(paths.len())]) {
                *leaf = value;
            }
        }
        let nested = score_answer(&gt, &answer, &ctx);
        let flat = score_answer(&gt, &flatten_key_paths(&answer), &ctx);
        prop_assert_eq!(nested.u_all, flat.u_all, "{:#?}\n{:#?}", nested.ledger, flat.ledger);
        prop_assert_eq!(nested.u_required, flat.u_required);
    }
}

#[test]
fn prose_numbers_are_read_after_their_key() {
    let q = "Return {\"score_ledger\": {\"wind\", \"rainfall\", \"impact\", \"public_service\"}, \"total_index_score\"}";
    let gt = json!({
        "score_ledger": {"wind": 3, "rainfall": 3, "impact": 3, "public_service": 3},
        "total_index_score": 12
    });
    let text = "Component scores are: wind severity 3, rainfall severity 1, impact cascade 2, \
                and public-service exposure load: 3.\n\
                The index totals 9. A total of 12 would be extreme.";
    let ctx = ScoringContext::new(q);
    let score = score_answer_text(&gt, text, &ctx);
    assert_eq!(score.parse.shape, AnswerShape::Prose);
    let matched: Vec<(&str, bool)> = score
        .ledger
        .iter()
        .map(|e| (e.path.as_str(), e.matched))
        .collect();
    // Each score is read after its own key: rainfall 1 and impact 2 are
    // not the 3 that follows the wind key or ends the sentence; 12 follows
    // `total` but not `index`, which is in another sentence.
    assert_eq!(
        matched,
        [
            ("score_ledger.wind", true),
            ("score_ledger.rainfall", false),
            ("score_ledger.impact", false),
            ("score_ledger.public_service", true),
            ("total_index_score", false),
        ],
        "{:#?}",
        score.ledger
    );
    // The same answer with the right scores, written the way the key reads.
    let right = "Wind severity: 3. Rainfall severity: 3. Impact cascade score is 3. \
                 Public service load 3. Total index score = 12.";
    let all = score_answer_text(&gt, right, &ctx);
    assert_eq!(all.units_matched, 5, "{:#?}", all.ledger);
    // Without the rule, numbers below 100 are never looked for in prose.
    let mut off = ScoringContext::new(q);
    off.rules.prose_numbers_by_key = false;
    assert_eq!(score_answer_text(&gt, right, &off).units_matched, 0);
}
