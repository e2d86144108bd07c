//! The ledger on small hand-made runs: each rule of the crate docs, with
//! unit ledgers computed by `earthverse-answer-units` from real answers.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_answer_units::{score_answer, ScoringContext, UnitLedgerEntry};
use earthverse_evidence_ledger::{
    build_ledger, reference_files, summarize, Claim, ClaimStatus, ErrorFamily, Observation,
    ObservationKind, Strength, TraceIndex,
};
use serde_json::{json, Value};

const OPEN_METEO: &str = "data/physical_hazard/physical_hazard_001_Open-Meteo.json";
const ERA5: &str = "data/physical_hazard/physical_hazard_002_ERA5_aggregate.json";
const ANCHOR: &str = "data/event_reports/event_reports_003_anchor.json";

fn obs(step: u64, tool: &str, kind: ObservationKind, files: &[&str], text: &str) -> Observation {
    Observation {
        step,
        tool: tool.to_owned(),
        kind,
        files: files
            .iter()
            .map(|f| format!("event_packages/pkgs/CSX-001/{f}"))
            .collect(),
        text: text.to_owned(),
    }
}

fn units(gt: &Value, answer: &Value, question: &str) -> Vec<UnitLedgerEntry> {
    score_answer(gt, answer, &ScoringContext::new(question)).ledger
}

fn claim<'a>(claims: &'a [Claim], unit: &str) -> &'a Claim {
    claims
        .iter()
        .find(|c| c.unit == unit)
        .unwrap_or_else(|| panic!("no claim {unit} in {claims:#?}"))
}

/// A run in the shape of the release's: an anchor read, two physical
/// hazard files, a python computation over the right one.
fn trajectory() -> Vec<Observation> {
    vec![
        obs(1, "list_package_files", ObservationKind::Search, &[], "files: 3"),
        obs(
            2,
            "read_text_file",
            ObservationKind::Read,
            &[ANCHOR],
            "{\"event_start\": \"2021-06-25\", \"event_end\": \"2021-06-30\", \"peak_station_temp_f\": 115.3}",
        ),
        obs(
            3,
            "read_text_file",
            ObservationKind::Read,
            &[ERA5],
            "{\"t2m_mean_c\": 31.92, \"rh_mean_pct\": 22.5}",
        ),
        obs(
            4,
            "read_text_file",
            ObservationKind::Read,
            &[OPEN_METEO],
            "{\"daily\": {\"time\": [\"2021-06-27\", \"2021-06-28\"], \"temperature_2m_max\": [40.1, 44.3]}}",
        ),
        obs(
            5,
            "python_exec",
            ObservationKind::Computed,
            &[OPEN_METEO],
            "{\"stdout\": \"heat load: 13.2\\nhot hours: 7\\n\"}",
        ),
        obs(
            6,
            "python_exec",
            ObservationKind::Computed,
            &[OPEN_METEO],
            "{\"stdout\": \"heat load: 14.1\\nhot hours: 9\\nmean rh: 10.36\\n\"}",
        ),
    ]
}

const QUESTION: &str = "Return JSON {\"start_date\": \"\", \"peak_tmax_c\": 0, \"heat_load\": 0, \
    \"hot_hours\": 0, \"mean_rh_pct\": 0, \"peak_c\": 0}. Use a 39 C threshold.";

fn references() -> Vec<String> {
    vec![OPEN_METEO.to_owned(), ANCHOR.to_owned()]
}

#[test]
fn traces_each_value_to_the_step_it_entered() {
    let gt = json!({"start_date": "2021-06-25", "peak_tmax_c": 44.3, "heat_load": 14.1,
                    "hot_hours": 9, "mean_rh_pct": 10.36, "peak_c": 46.28});
    let answer = json!({"start_date": "2021-06-25", "peak_tmax_c": 44.3, "heat_load": 14.1,
                        "hot_hours": 9, "mean_rh_pct": 10.36, "peak_c": 46.28});
    let observations = trajectory();
    let ledger = build_ledger(
        QUESTION,
        &observations,
        &references(),
        &units(&gt, &answer, QUESTION),
        &[],
    );
    let c = claim(&ledger.claims, "start_date");
    assert_eq!(c.status, ClaimStatus::Observed);
    assert_eq!(c.source.as_ref().unwrap().step, 2);
    let c = claim(&ledger.claims, "peak_tmax_c");
    assert_eq!(
        (c.status, c.source.as_ref().unwrap().step),
        (ClaimStatus::Observed, 4)
    );
    assert!(c
        .source
        .as_ref()
        .unwrap()
        .file
        .as_deref()
        .unwrap()
        .ends_with(OPEN_METEO));
    // 14.1 first printed by the second computation, which replaced 13.2.
    let c = claim(&ledger.claims, "heat_load");
    assert_eq!(
        (c.status, c.source.as_ref().unwrap().step),
        (ClaimStatus::Computed, 6)
    );
    assert_eq!(c.replaced.len(), 1);
    assert_eq!((c.replaced[0].step, c.replaced[0].value), (5, 13.2));
    assert_eq!(c.source.as_ref().unwrap().files.len(), 1);
    // A small integer found after its key's words: strong.
    let c = claim(&ledger.claims, "hot_hours");
    assert_eq!(
        (c.status, c.strength),
        (ClaimStatus::Computed, Some(Strength::Strong))
    );
    assert_eq!(c.source.as_ref().unwrap().step, 6);
    assert_eq!(
        c.replaced.iter().map(|r| r.value).collect::<Vec<_>>(),
        [7.0]
    );
    // 115.3 °F in the anchor is 46.28 °C.
    let c = claim(&ledger.claims, "peak_c");
    assert_eq!(c.status, ClaimStatus::Transformed);
    assert_eq!(
        c.source.as_ref().unwrap().transform.as_deref(),
        Some("°F→°C")
    );
    assert!(ledger
        .claims
        .iter()
        .all(|c| c.satisfied && c.error_family.is_none()));
}

#[test]
fn values_found_nowhere_are_unsupported_and_missing_values_missing() {
    let gt = json!({"heat_load": 14.1, "mean_rh_pct": 10.36, "peak_tmax_c": 44.3});
    let answer = json!({"heat_load": 18.75, "mean_rh_pct": 55.5});
    let observations = trajectory();
    let ledger = build_ledger(
        QUESTION,
        &observations,
        &references(),
        &units(&gt, &answer, QUESTION),
        &[],
    );
    let c = claim(&ledger.claims, "heat_load");
    assert_eq!(
        (c.status, c.error_family),
        (ClaimStatus::Unsupported, Some(ErrorFamily::Unsupported))
    );
    let c = claim(&ledger.claims, "peak_tmax_c");
    assert_eq!(
        (c.status, c.error_family),
        (ClaimStatus::Missing, Some(ErrorFamily::Missing))
    );
}

#[test]
fn error_families_follow_the_documented_order() {
    let gt = json!({
        "peak_tmax_c": 44.3,     // answered 40.1: same file, other day
        "t2m_mean_c": 35.0,      // answered 31.92: the aggregate file
        "heat_load": 16.0,       // answered 14.1: computed over the right file
        "gap_mm": 0.74,          // answered 0.7: rounded
        "peak_c": 46.28,         // answered 115.3 (°F)
        "start_date": "2021-06-26",
        "source_file": OPEN_METEO,
        "verdict": "humid"
    });
    let answer = json!({"peak_tmax_c": 40.1, "t2m_mean_c": 31.92, "heat_load": 14.1,
        "gap_mm": 0.7, "peak_c": 115.3, "start_date": "2021-06-25",
        "source_file": ERA5, "verdict": "dry"});
    let q = "Return JSON {\"peak_tmax_c\", \"t2m_mean_c\", \"heat_load\", \"gap_mm\", \
             \"peak_c\", \"start_date\", \"source_file\", \"verdict\"}";
    let observations = trajectory();
    let ledger = build_ledger(
        q,
        &observations,
        &references(),
        &units(&gt, &answer, q),
        &[],
    );
    let family = |u: &str| claim(&ledger.claims, u).error_family;
    assert_eq!(family("peak_tmax_c"), Some(ErrorFamily::WindowOrSubset));
    assert_eq!(family("t2m_mean_c"), Some(ErrorFamily::WrongSource));
    assert_eq!(family("heat_load"), Some(ErrorFamily::Arithmetic));
    assert_eq!(family("gap_mm"), Some(ErrorFamily::RoundingOrPrecision));
    assert_eq!(family("peak_c"), Some(ErrorFamily::UnitOrScale));
    assert_eq!(family("start_date"), Some(ErrorFamily::WindowOrSubset));
    assert_eq!(family("source_file"), Some(ErrorFamily::WrongSource));
    assert_eq!(family("verdict"), Some(ErrorFamily::LabelMismatch));
    let s = &summarize([("sys", &ledger)])[0];
    assert_eq!(s.families.values().sum::<usize>(), 8);
    assert_eq!(s.families[&ErrorFamily::WrongSource], 2);
}

#[test]
fn a_small_integer_without_its_key_is_weak() {
    let gt = json!({"flood_gauges": 3});
    let q = "Return {\"flood_gauges\": 0}";
    let observations = vec![obs(
        2,
        "read_text_file",
        ObservationKind::Read,
        &[ANCHOR],
        "page 3 of 9",
    )];
    let ledger = build_ledger(
        q,
        &observations,
        &[],
        &units(&gt, &json!({"flood_gauges": 3}), q),
        &[],
    );
    assert_eq!(ledger.claims[0].strength, Some(Strength::Weak));
    let s = &summarize([("sys", &ledger)])[0];
    assert_eq!(
        (
            s.numeric_satisfied,
            s.numeric_satisfied_traced,
            s.numeric_satisfied_traced_with_weak
        ),
        (1, 0, 1)
    );
    // With its key on the line it is strong.
    let keyed = vec![obs(
        2,
        "read_text_file",
        ObservationKind::Read,
        &[ANCHOR],
        "page 3 of 9\nflood gauges: 3",
    )];
    let ledger = build_ledger(
        q,
        &keyed,
        &[],
        &units(&gt, &json!({"flood_gauges": 3}), q),
        &[],
    );
    assert_eq!(ledger.claims[0].strength, Some(Strength::Strong));
    assert_eq!(
        ledger.claims[0].source.as_ref().unwrap().span.unwrap()[0],
        "page 3 of 9\nflood gauges: ".len()
    );
}

#[test]
fn cited_files_that_no_step_read() {
    let observations = trajectory();
    let index = TraceIndex::new("", &observations, &[]);
    let cited = vec![
        format!("event_packages/pkgs/CSX-001/{OPEN_METEO}"),
        "data/event_reports/never_opened.pdf".to_owned(),
        ANCHOR.to_owned(),
    ];
    assert_eq!(
        index.cited_unread(&cited),
        ["data/event_reports/never_opened.pdf"]
    );
    assert_eq!(index.files_read().len(), 3);
}

#[test]
fn reference_files_are_inventory_paths_the_reference_names() {
    let inventory = [OPEN_METEO, ERA5, ANCHOR];
    let solution = "Use `data/physical_hazard/physical_hazard_001_Open-Meteo.json`.";
    let code = "ANCHOR = PKG / 'event_reports_003_anchor.json'";
    assert_eq!(
        reference_files(&[solution, code], &inventory),
        [OPEN_METEO, ANCHOR]
    );
    assert!(reference_files(&["nothing here"], &inventory).is_empty());
}

#[test]
fn a_number_only_within_tolerance_needs_its_key_to_be_strong() {
    let gt = json!({"rain_total_mm": 123.4});
    let q = "Return {\"rain_total_mm\": 0}";
    let answer = json!({"rain_total_mm": 123.4});
    // 124.9 is within 2 % of 123.4 but not 123.4 at one decimal.
    let far = vec![obs(
        4,
        "read_text_file",
        ObservationKind::Read,
        &[ERA5],
        "cell 17: 124.9",
    )];
    let ledger = build_ledger(q, &far, &[], &units(&gt, &answer, q), &[]);
    assert_eq!(ledger.claims[0].status, ClaimStatus::Observed);
    assert_eq!(ledger.claims[0].strength, Some(Strength::Weak));
    let keyed = vec![obs(
        4,
        "read_text_file",
        ObservationKind::Read,
        &[ERA5],
        "rain total: 124.9",
    )];
    let ledger = build_ledger(q, &keyed, &[], &units(&gt, &answer, q), &[]);
    assert_eq!(ledger.claims[0].strength, Some(Strength::Strong));
    // A conversion without the key's words is no trace at all: 48.6 in is
    // 1234.4 mm, but the line does not name rain.
    let gt = json!({"rain_total_mm": 1234.4});
    let answer = json!({"rain_total_mm": 1234.4});
    let unkeyed = vec![obs(
        4,
        "read_text_file",
        ObservationKind::Read,
        &[ERA5],
        "cell 17: 48.6",
    )];
    let ledger = build_ledger(q, &unkeyed, &[], &units(&gt, &answer, q), &[]);
    assert_eq!(ledger.claims[0].status, ClaimStatus::Unsupported);
    let keyed = vec![obs(
        4,
        "read_text_file",
        ObservationKind::Read,
        &[ERA5],
        "rain total in: 48.6",
    )];
    let ledger = build_ledger(q, &keyed, &[], &units(&gt, &answer, q), &[]);
    assert_eq!(ledger.claims[0].status, ClaimStatus::Transformed);
}
