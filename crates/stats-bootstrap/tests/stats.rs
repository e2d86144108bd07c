//! Integration tests of earthverse-stats-bootstrap: tables computed by hand,
//! bootstrap determinism, and interval coverage on synthetic data.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_stats_bootstrap::*;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::collections::BTreeMap;

fn outcome(system: &str, task: &str, h: f64, u: f64, p: f64) -> TaskOutcome {
    TaskOutcome::from_judgment(system, task, h, u, p).unwrap()
}

fn close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

#[test]
fn answer_is_min_of_holistic_and_units_and_core_averages_with_process() {
    let o = outcome("s", "t", 90.0, 60.0, 80.0);
    close(o.answer, 60.0);
    close(o.core(), 70.0);
    assert!(!o.is_strict95());
    let o = outcome("s", "t", 50.0, 95.0, 80.0);
    close(o.answer, 50.0);
    assert!(o.is_strict95(), "U = 95 counts for Strict@95");
    let f = TaskOutcome::failure("s", "t");
    close(f.core(), 0.0);
    assert!(!f.is_strict95());
}

#[test]
fn out_of_range_scores_are_rejected_with_the_field_name() {
    let err = TaskOutcome::from_judgment("s", "CSX-1_Q1", 101.0, 50.0, 50.0).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("holistic") && text.contains("CSX-1_Q1"),
        "{text}"
    );
    assert!(TaskOutcome::from_scores("s", "t", 10.0, f64::NAN, 10.0).is_err());
}

#[test]
fn leaderboard_rows_match_hand_computed_means_with_failures_in_the_denominator() {
    let mut outcomes = vec![
        outcome("a", "t1", 100.0, 100.0, 90.0),
        outcome("a", "t2", 80.0, 50.0, 70.0),
        outcome("b", "t1", 60.0, 70.0, 60.0),
        TaskOutcome::failure("b", "t2"),
    ];
    outcomes[0].trajectory.total_tokens = Some(1000);
    outcomes[1].trajectory.total_tokens = Some(3000);
    outcomes[0].trajectory.model_rounds = Some(4);
    let rows = leaderboard(&outcomes).unwrap();
    assert_eq!(rows.len(), 2);
    let a = &rows[0];
    assert_eq!(a.system, "a");
    close(a.answer, (100.0 + 50.0) / 2.0);
    close(a.process, 80.0);
    close(a.core, ((100.0 + 90.0) / 2.0 + (50.0 + 70.0) / 2.0) / 2.0);
    close(a.unit_acc, 75.0);
    close(a.strict95, 50.0);
    assert_eq!(a.strict95_count, 1);
    assert_eq!(a.tokens, Some(2000.0));
    assert_eq!(a.rounds, Some(4.0));
    assert_eq!(a.tool_calls, None);
    let b = &rows[1];
    assert_eq!((b.runs, b.failures), (2, 1));
    close(b.answer, 30.0);
    close(b.core, 30.0);
    close(b.strict95, 0.0);
}

#[test]
fn leaderboard_cells_follow_table_2_and_mark_missing_means() {
    let mut outcomes = vec![
        outcome("a", "t1", 100.0, 100.0, 90.0),
        outcome("a", "t2", 80.0, 50.0, 70.0),
    ];
    outcomes[0].trajectory.total_tokens = Some(1000);
    outcomes[1].trajectory.total_tokens = Some(3500);
    outcomes[0].trajectory.latency_s = Some(10.4);
    outcomes[1].trajectory.latency_s = Some(20.0);
    let rows = leaderboard(&outcomes).unwrap();
    let cells = rows[0].cells();
    // (100 + 50) / 2 = 75 answer, (90 + 70) / 2 = 80 process, Core 77.5,
    // one of two tasks at U >= 95, U mean 75, latency 15.2 s, 2.25 k tokens.
    assert_eq!(
        cells,
        [
            "a", "2", "75.00", "80.00", "77.50", "50.00", "75.00", "n/a", "n/a", "n/a", "n/a",
            "n/a", "15", "2.2"
        ]
    );
}

#[test]
fn duplicate_outcomes_are_an_error() {
    let outcomes = vec![
        outcome("a", "t1", 1.0, 1.0, 1.0),
        outcome("a", "t1", 2.0, 2.0, 2.0),
    ];
    assert!(matches!(
        leaderboard(&outcomes),
        Err(Error::DuplicateOutcome { .. })
    ));
}

#[test]
fn missing_tasks_can_be_filled_as_failures() {
    let mut outcomes = vec![
        outcome("a", "t1", 80.0, 80.0, 80.0),
        outcome("b", "t2", 60.0, 60.0, 60.0),
    ];
    let added = fill_missing_as_failures(&mut outcomes, &["t1".into(), "t2".into()]);
    assert_eq!(added, 2);
    let rows = leaderboard(&outcomes).unwrap();
    close(rows[0].core, 40.0);
    close(rows[1].core, 30.0);
}

#[test]
fn slices_overlap_for_capabilities_and_use_the_same_core() {
    let mut t1 = outcome("a", "t1", 100.0, 100.0, 80.0);
    t1.capabilities = vec!["causal_chain".into(), "quantitative_calculation".into()];
    t1.difficulty = Some("L2".into());
    t1.hazard_family = Some("flood".into());
    let mut t2 = outcome("a", "t2", 40.0, 40.0, 60.0);
    t2.capabilities = vec!["causal_chain".into()];
    t2.difficulty = Some("L3".into());
    t2.hazard_family = Some("flood".into());
    let table = slice_table(&[t1.clone(), t2.clone()], SliceBy::Capability).unwrap();
    assert_eq!(
        table.columns,
        vec!["causal_chain", "quantitative_calculation"]
    );
    let cells = &table.rows[0].cells;
    close(cells[0].unwrap().core, (90.0 + 50.0) / 2.0);
    assert_eq!(cells[0].unwrap().n, 2);
    close(cells[1].unwrap().core, 90.0);
    let table = slice_table(&[t1.clone(), t2.clone()], SliceBy::Difficulty).unwrap();
    assert_eq!(table.columns, vec!["L2", "L3"]);
    let table = slice_table(&[t1, t2], SliceBy::Hazard).unwrap();
    close(table.rows[0].cells[0].unwrap().core, 70.0);
}

#[test]
fn cost_table_uses_tokens_times_price_and_descends_by_cost() {
    let mut outcomes = Vec::new();
    for (system, tokens) in [("cheap", 100_000.0), ("dear", 200_000.0), ("unpriced", 1.0)] {
        for task in ["t1", "t2"] {
            let mut o = outcome(system, task, 50.0, 50.0, 50.0);
            o.trajectory.total_tokens = Some(tokens as u64);
            outcomes.push(o);
        }
    }
    let prices = BTreeMap::from([("cheap".to_owned(), 1.5), ("dear".to_owned(), 50.0)]);
    let rows = cost_table(&outcomes, &prices).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].system, "dear");
    close(rows[0].cost_usd, 400_000.0 * 50.0 / 1e6);
    close(rows[1].tokens_per_task_k, 100.0);
}

#[test]
fn percentile_matches_numpy_linear_interpolation() {
    // numpy.percentile([1, 2, 3, 4, 10], [2.5, 50, 97.5]) == [1.1, 3.0, 9.4]
    let mut v = vec![10.0, 3.0, 1.0, 4.0, 2.0];
    close(percentile(&mut v, 0.025), 1.1);
    close(percentile(&mut v, 0.5), 3.0);
    close(percentile(&mut v, 0.975), 9.4);
}

#[test]
fn resample_matrix_is_deterministic_per_seed_and_uniform() {
    let a = ResampleMatrix::draw(405, 200, 2026).unwrap();
    let b = ResampleMatrix::draw(405, 200, 2026).unwrap();
    let c = ResampleMatrix::draw(405, 200, 2027).unwrap();
    assert_eq!(a, b);
    assert_ne!(a, c);
    let mut totals = vec![0.0; 405];
    for r in 0..200 {
        let row = a.counts(r).unwrap();
        assert_eq!(row.iter().sum::<f64>(), 405.0);
        for (t, c) in totals.iter_mut().zip(row) {
            *t += c;
        }
    }
    // Each task is expected 200 times; a chi-square over 404 dof stays well below 520.
    let chi2: f64 = totals
        .iter()
        .map(|t| (t - 200.0) * (t - 200.0) / 200.0)
        .sum();
    assert!(chi2 < 520.0, "chi2 = {chi2}");
}

fn synthetic_pair(rng: &mut ChaCha20Rng, n: usize, delta: f64) -> (Vec<f64>, Vec<f64>) {
    // Standard normals by Box–Muller from the ChaCha stream.
    let mut normal = || {
        let u1 = (f64::from(rng.next_u32()) + 1.0) / 4_294_967_297.0;
        let u2 = f64::from(rng.next_u32()) / 4_294_967_296.0;
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    };
    let mut a = Vec::with_capacity(n);
    let mut b = Vec::with_capacity(n);
    for _ in 0..n {
        let base = 60.0 + 15.0 * normal();
        b.push(base);
        a.push(base + delta + 8.0 * normal());
    }
    (a, b)
}

#[test]
fn fixed_seed_gives_identical_intervals_run_to_run() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let (a, b) = synthetic_pair(&mut rng, 120, 3.0);
    let scores = PairedScores::from_rows(
        vec!["a".into(), "b".into()],
        (0..120).map(|i| format!("t{i}")).collect(),
        &[a, b],
    )
    .unwrap();
    let config = BootstrapConfig::default();
    let first = all_pairs(&scores, &config).unwrap();
    let second = all_pairs(&scores, &config).unwrap();
    assert_eq!(first, second);
    assert_eq!((first[0].resamples, first[0].seed), (5_000, 2026));
    let other = all_pairs(
        &scores,
        &BootstrapConfig {
            seed: 2027,
            ..config
        },
    )
    .unwrap();
    assert_ne!(first[0].ci_low, other[0].ci_low);
}

#[test]
fn all_pairs_share_one_resample_matrix() {
    // With one shared matrix, Δ(a,c) = Δ(a,b) + Δ(b,c) in every resample, so
    // the bootstrap means of the three differences add up exactly; the
    // standard errors also obey the triangle inequality.
    let mut rng = ChaCha20Rng::seed_from_u64(11);
    let (a, b) = synthetic_pair(&mut rng, 50, 2.0);
    let (c, _) = synthetic_pair(&mut rng, 50, -1.0);
    let scores = PairedScores::from_rows(
        vec!["a".into(), "b".into(), "c".into()],
        (0..50).map(|i| format!("t{i}")).collect(),
        &[a, b, c],
    )
    .unwrap();
    let config = BootstrapConfig {
        resamples: 400,
        ..Default::default()
    };
    let pairs = all_pairs(&scores, &config).unwrap();
    assert_eq!(pairs.len(), 3);
    let (ab, ac, bc) = (&pairs[0], &pairs[1], &pairs[2]);
    assert_eq!((ab.a.as_str(), ab.b.as_str()), ("a", "b"));
    close(ab.delta + bc.delta, ac.delta);
    // A pair computed alone equals the same pair computed among all.
    let alone = pairs_of(&scores, &[(1, 2)], &config).unwrap();
    assert_eq!(&alone[0], bc);
}

#[test]
fn compare_pairs_over_common_tasks_and_zero_fill_counts_missing_as_failures() {
    let outcomes = vec![
        outcome("a", "t1", 80.0, 80.0, 80.0),
        outcome("a", "t2", 60.0, 60.0, 60.0),
        outcome("b", "t1", 70.0, 70.0, 70.0),
    ];
    let d = compare(
        &outcomes,
        "a",
        "b",
        Metric::Core,
        &BootstrapConfig::default(),
    )
    .unwrap();
    assert_eq!(d.n_tasks, 1);
    close(d.delta, 10.0);
    close(d.ci_low, 10.0);
    let filled =
        PairedScores::from_outcomes(&outcomes, None, Metric::Core, MissingPolicy::ZeroFill)
            .unwrap();
    assert_eq!(filled.row(1).unwrap(), &[70.0, 0.0]);
    assert!(matches!(
        PairedScores::from_outcomes(&outcomes, None, Metric::Core, MissingPolicy::Require),
        Err(Error::MissingPairedTask { .. })
    ));
    assert!(matches!(
        compare(
            &outcomes,
            "a",
            "zzz",
            Metric::Core,
            &BootstrapConfig::default()
        ),
        Err(Error::UnknownSystem { .. })
    ));
}

/// Coverage of the 95% percentile interval on synthetic paired data with a
/// known mean difference of 3 points: 1,000 independent data sets of 60
/// tasks, each bootstrapped with 500 resamples (fewer than the paper's
/// 5,000 so the test stays fast in a debug build; the interval's coverage
/// depends on the data, not on the resample count beyond Monte Carlo noise).
#[test]
fn ninety_five_percent_interval_covers_the_true_difference_93_to_97_percent() {
    const REPS: u64 = 1_000;
    const TASKS: usize = 60;
    const DELTA: f64 = 3.0;
    let mut data_rng = ChaCha20Rng::seed_from_u64(20_260_101);
    let tasks: Vec<String> = (0..TASKS).map(|i| format!("t{i}")).collect();
    let mut covered = 0;
    for rep in 0..REPS {
        let (a, b) = synthetic_pair(&mut data_rng, TASKS, DELTA);
        let scores =
            PairedScores::from_rows(vec!["a".into(), "b".into()], tasks.clone(), &[a, b]).unwrap();
        let config = BootstrapConfig {
            resamples: 500,
            seed: rep,
            confidence: 0.95,
        };
        let d = &all_pairs(&scores, &config).unwrap()[0];
        if d.ci_low <= DELTA && DELTA <= d.ci_high {
            covered += 1;
        }
    }
    let coverage = covered as f64 / REPS as f64;
    eprintln!("coverage of the 95% interval over {REPS} data sets: {coverage:.3}");
    assert!((0.93..=0.97).contains(&coverage), "coverage {coverage}");
}
