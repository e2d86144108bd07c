//! Properties of the ledger (proptest; `scripts/test.sh` sets
//! `PROPTEST_RNG_SEED=2026`): it never panics on any trajectory, a value
//! planted in an observation is found at that step, and an answer of
//! values never observed is all `unsupported`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_answer_units::{score_answer, ScoringContext, UnitKind, UnitLedgerEntry};
use earthverse_evidence_ledger::{
    build_ledger, diagnose_run, ClaimStatus, Observation, ObservationKind, RunFacts, RunFamily,
    StepFact, Termination, TraceIndex,
};
use proptest::prelude::*;
use serde_json::{json, Value};

fn kind() -> impl Strategy<Value = ObservationKind> {
    prop_oneof![
        Just(ObservationKind::Prompt),
        Just(ObservationKind::Read),
        Just(ObservationKind::Search),
        Just(ObservationKind::Computed),
    ]
}

/// Any text, with numbers, escapes, multi-byte characters and newlines
/// mixed in.
fn any_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            "\\PC{0,12}",
            "[0-9.,\\-−eE+]{1,8}",
            Just("\\n".to_owned()),
            Just("\n".to_owned()),
            Just("°C ü 漢字 ".to_owned()),
            "[a-z_ ]{1,10}: ",
        ],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

fn observation() -> impl Strategy<Value = Observation> {
    (
        0u64..40,
        "[a-z_.]{0,12}",
        kind(),
        prop::collection::vec("[a-zA-Z0-9_./\\-]{0,30}", 0..3),
        any_text(),
    )
        .prop_map(|(step, tool, kind, files, text)| Observation {
            step,
            tool,
            kind,
            files,
            text,
        })
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<f64>()
            .prop_map(|x| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)),
        (-1000i64..1000).prop_map(Value::from),
        any_text().prop_map(Value::String),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null),
        Just(json!([1, "a"])),
    ]
}

fn unit_kind() -> impl Strategy<Value = UnitKind> {
    prop_oneof![
        Just(UnitKind::Number),
        Just(UnitKind::Label),
        Just(UnitKind::LongText),
        Just(UnitKind::Date),
        Just(UnitKind::Path),
        Just(UnitKind::Bool),
    ]
}

fn entry() -> impl Strategy<Value = UnitLedgerEntry> {
    (
        "[a-z_.\\[\\]0-9]{0,20}",
        prop::option::of("[a-z_0-9]{0,16}"),
        unit_kind(),
        scalar(),
        prop::option::of(scalar()),
        prop::option::of(prop_oneof![any::<f64>(), 0.0f64..10.0]),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(
            |(path, key, kind, expected, found, tolerance, matched, counted)| UnitLedgerEntry {
                group: path.clone(),
                path,
                key,
                kind,
                list_element: false,
                expected,
                tolerance,
                required: counted,
                meta: false,
                given: false,
                found,
                found_at: None,
                matched,
                counted,
                why: String::new(),
                repeat_of: None,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any trajectory, any unit ledger, any citations: a ledger with one
    /// claim per unit, and only counted unsatisfied units get a family.
    #[test]
    fn never_panics(
        question in any_text(),
        observations in prop::collection::vec(observation(), 0..8),
        refs in prop::collection::vec("[a-zA-Z0-9_./]{0,20}", 0..3),
        units in prop::collection::vec(entry(), 0..8),
        cited in prop::collection::vec(any_text(), 0..3),
    ) {
        let ledger = build_ledger(&question, &observations, &refs, &units, &cited);
        prop_assert_eq!(ledger.claims.len(), units.len());
        for (c, u) in ledger.claims.iter().zip(&units) {
            prop_assert_eq!(c.error_family.is_some(), u.counted && !u.matched);
            if let Some(s) = &c.source {
                prop_assert!(s.span.is_none_or(|[a, b]| a <= b));
            }
        }
    }

    /// A number planted after its key in one observation of a run whose
    /// other texts hold no digits is traced to that observation's step,
    /// with the status of its kind.
    #[test]
    fn a_planted_value_is_found_at_its_step(
        fillers in prop::collection::vec(("[a-z ]{0,40}", kind()), 1..8),
        at in any::<prop::sample::Index>(),
        whole in 100u32..100_000,
        cents in 0u32..100,
        kind in prop_oneof![Just(ObservationKind::Read), Just(ObservationKind::Computed)],
    ) {
        let value = f64::from(whole) + f64::from(cents) / 100.0;
        let literal = format!("{value}");
        let at = at.index(fillers.len());
        let observations: Vec<Observation> = fillers
            .iter()
            .enumerate()
            .map(|(i, (text, k))| Observation {
                step: i as u64 + 1,
                tool: "t".into(),
                kind: if i == at { kind } else { *k },
                files: vec![format!("data/f{i}.json")],
                text: if i == at { format!("{text}\nrain total mm: {literal} ok") } else { text.clone() },
            })
            .collect();
        let gt = json!({"rain_total_mm": value});
        let question = "Return {\"rain_total_mm\": 0}";
        let units = score_answer(&gt, &json!({"rain_total_mm": value}), &ScoringContext::new(question)).ledger;
        let claims = TraceIndex::new(question, &observations, &[]).claims(&units);
        let source = claims[0].source.as_ref().expect("traced");
        prop_assert_eq!(source.step, at as u64 + 1);
        let expected_status = match kind {
            ObservationKind::Computed => ClaimStatus::Computed,
            _ => ClaimStatus::Observed,
        };
        prop_assert_eq!(claims[0].status, expected_status);
        let [a, b] = source.span.unwrap();
        prop_assert_eq!(&observations[at].text[a..b], literal.as_str());
    }

    /// Observations and prompt without digits or `#`: numbers, dates and
    /// `#`-labels of the answer are all unsupported.
    #[test]
    fn never_observed_values_are_unsupported(
        texts in prop::collection::vec(("[a-zA-Z ,.:\\n]{0,60}", kind()), 0..6),
        numbers in prop::collection::vec(-1.0e6f64..1.0e6, 1..5),
        label in "[a-z]{2,8}",
    ) {
        let observations: Vec<Observation> = texts
            .iter()
            .enumerate()
            .map(|(i, (text, kind))| Observation {
                step: i as u64 + 1,
                tool: "t".into(),
                kind: *kind,
                files: vec![],
                text: text.clone(),
            })
            .collect();
        let mut gt = serde_json::Map::new();
        let mut answer = serde_json::Map::new();
        for (i, x) in numbers.iter().enumerate() {
            gt.insert(format!("v{i}"), json!(x));
            answer.insert(format!("v{i}"), json!(x));
        }
        gt.insert("day".into(), json!("2024-05-24"));
        answer.insert("day".into(), json!("2024-05-24"));
        gt.insert("tag".into(), json!(format!("#{label}#")));
        answer.insert("tag".into(), json!(format!("#{label}#")));
        let units = score_answer(&Value::Object(gt), &Value::Object(answer), &ScoringContext::new("answer as JSON")).ledger;
        let claims = TraceIndex::new("answer as JSON", &observations, &[]).claims(&units);
        prop_assert_eq!(claims.len(), numbers.len() + 2);
        for c in &claims {
            prop_assert_eq!(c.status, ClaimStatus::Unsupported, "{:?}", c);
            prop_assert!(c.source.is_none());
        }
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        (-1.0e6f64..1.0e6).prop_map(|x| json!(x)),
        "[a-z<> _0-9.]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Any answer against any contract, any steps and claims: the
    /// diagnosis never panics, families come once each in precedence
    /// order, the primary is the first, and every loop failure and carried
    /// unit error names what triggered it.
    #[test]
    fn run_diagnosis_never_panics(
        question in any_text(),
        contract in json_value(),
        answer in json_value(),
        steps in prop::collection::vec(("[a-z_]{1,8}", any::<bool>(), prop::option::of("[a-z/.]{1,10}")), 0..6),
        budget in any::<bool>(),
        units in prop::collection::vec(entry(), 0..6),
    ) {
        let _ = earthverse_evidence_ledger::answer_contract(&question, &question);
        let steps: Vec<StepFact> = steps
            .into_iter()
            .enumerate()
            .map(|(i, (tool, ok, target))| StepFact {
                step: i as u64 + 1,
                tool,
                ok,
                files: target.iter().cloned().collect(),
                target,
            })
            .collect();
        let ledger = build_ledger(&question, &[], &[], &units, &[]);
        let d = diagnose_run(&RunFacts {
            steps: &steps,
            termination: if budget { Termination::Budget } else { Termination::Final },
            rounds: Some(steps.len() as u64),
            turn_budget: 48,
            answer: &answer,
            contract: Some(&contract),
            claims: &ledger.claims,
            reference_files: &[],
        });
        prop_assert_eq!(d.primary, d.families.first().map(|h| h.family));
        prop_assert!(d.families.windows(2).all(|w| w[0].family < w[1].family));
        for h in &d.families {
            if h.family.is_loop_failure() {
                prop_assert!(!h.steps.is_empty());
            } else {
                prop_assert!(!h.detail.is_empty());
            }
        }
        prop_assert_eq!(d.has(RunFamily::BudgetExhaustion), budget);
    }
}
