//! Agreement between our scores and the published judge's: the one
//! agreement-statistics module of the workspace (MAE, bias, Pearson,
//! Spearman, share within k points, per-system means, the per-system noise
//! floor), used by `earthverse units`, the rubric judge's
//! `compare_published` and `earthverse score --compare-published`.
//!
//! **Undefined values are `None`** (`null` in JSON), never 0 or NaN: a
//! correlation of fewer than two pairs or of a constant side, any mean or
//! share of no pairs, the standard error of fewer than two differences, the
//! largest gap over no system, and the noise-floor quantiles and shares
//! when no system is compared. [`shown`] prints them as `n/a`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One scored run: the system, our U and the published `unit_accuracy`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunPair {
    /// The system (model) that produced the run.
    pub system: String,
    /// Our U (0–100).
    pub ours: f64,
    /// The published judge's unit accuracy (0–100).
    pub published: f64,
}

/// Per-system mean U, ours against published.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SystemAgreement {
    /// The system.
    pub system: String,
    /// Runs of the system.
    pub runs: usize,
    /// Our mean U.
    pub ours: f64,
    /// The published mean unit accuracy.
    pub published: f64,
    /// Standard error of the mean per-run difference (ours − published), in
    /// points (`None` for a single run): a gap within about two of these is
    /// within sampling noise.
    pub gap_se: Option<f64>,
}

/// Systems with fewer runs than this are listed, but left out of
/// [`Agreement::max_system_gap_min_runs`]: with 2–8 runs a per-system mean
/// moves by several points with a single run.
pub const MIN_RUNS_FOR_SYSTEM_GAP: usize = 10;

/// Agreement figures over a set of runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Agreement {
    /// Number of runs.
    pub runs: usize,
    /// Mean absolute difference, in points (`None` for no run).
    pub mae: Option<f64>,
    /// Mean signed difference (ours − published), in points (`None` for no run).
    pub bias: Option<f64>,
    /// Pearson correlation (`None` when undefined, see [`pearson`]).
    pub pearson: Option<f64>,
    /// Spearman rank correlation with average ranks for ties (`None` when
    /// undefined).
    pub spearman: Option<f64>,
    /// Percentage of runs within 5 points (`None` for no run).
    pub within5: Option<f64>,
    /// Percentage of runs within 10 points (`None` for no run).
    pub within10: Option<f64>,
    /// Largest |ours − published| among per-system means (`None` for no run).
    pub max_system_gap: Option<f64>,
    /// Largest |ours − published| among systems with at least
    /// [`MIN_RUNS_FOR_SYSTEM_GAP`] runs (`None` when there is none).
    pub max_system_gap_min_runs: Option<f64>,
    /// Pearson correlation of the per-system means (`None` when undefined).
    pub system_pearson: Option<f64>,
    /// Per-system means, sorted by system name.
    pub per_system: Vec<SystemAgreement>,
}

/// Computes the agreement figures.
///
/// ```
/// use earthverse_answer_units::{agreement, RunPair};
/// let pairs = vec![
///     RunPair { system: "a".into(), ours: 50.0, published: 54.0 },
///     RunPair { system: "b".into(), ours: 80.0, published: 70.0 },
///     RunPair { system: "b".into(), ours: 10.0, published: 20.0 },
/// ];
/// let a = agreement(&pairs);
/// assert_eq!(a.runs, 3);
/// assert!((a.mae.unwrap() - 8.0).abs() < 1e-9);
/// assert!((a.within5.unwrap() - 100.0 / 3.0).abs() < 1e-9);
/// assert_eq!(a.per_system[0].gap_se, None); // one run: undefined
/// assert_eq!(a.per_system[1].published, 45.0);
/// ```
pub fn agreement(pairs: &[RunPair]) -> Agreement {
    let ours: Vec<f64> = pairs.iter().map(|p| p.ours).collect();
    let published: Vec<f64> = pairs.iter().map(|p| p.published).collect();
    let figures = paired(&ours, &published);
    let mut groups: BTreeMap<&str, (usize, f64, f64, Vec<f64>)> = BTreeMap::new();
    for p in pairs {
        let g = groups
            .entry(p.system.as_str())
            .or_insert((0, 0.0, 0.0, Vec::new()));
        g.0 += 1;
        g.1 += p.ours;
        g.2 += p.published;
        g.3.push(p.ours - p.published);
    }
    let per_system: Vec<SystemAgreement> = groups
        .into_iter()
        .map(|(system, (runs, o, p, d))| SystemAgreement {
            system: system.to_owned(),
            runs,
            ours: o / runs as f64,
            published: p / runs as f64,
            gap_se: standard_error(&d),
        })
        .collect();
    let sys_ours: Vec<f64> = per_system.iter().map(|s| s.ours).collect();
    let sys_pub: Vec<f64> = per_system.iter().map(|s| s.published).collect();
    let largest_gap = |min_runs: usize| {
        per_system
            .iter()
            .filter(|s| s.runs >= min_runs)
            .map(|s| (s.ours - s.published).abs())
            .reduce(f64::max)
    };
    Agreement {
        runs: figures.n,
        mae: figures.mae,
        bias: figures.bias,
        pearson: figures.pearson,
        spearman: figures.spearman,
        within5: figures.within5,
        within10: figures.within10,
        max_system_gap: largest_gap(0),
        max_system_gap_min_runs: largest_gap(MIN_RUNS_FOR_SYSTEM_GAP),
        system_pearson: pearson(&sys_ours, &sys_pub),
        per_system,
    }
}

/// Agreement figures of two paired score series on 0–100 (ours against
/// published): what [`paired`] computes, and the rubric judge's
/// `Agreement`. Undefined figures are `None`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PairedAgreement {
    /// Pairs compared.
    pub n: usize,
    /// Mean absolute error.
    pub mae: Option<f64>,
    /// Mean of ours − published.
    pub bias: Option<f64>,
    /// Pearson correlation.
    pub pearson: Option<f64>,
    /// Spearman rank correlation (average ranks for ties).
    pub spearman: Option<f64>,
    /// Share of pairs with |Δ| ≤ 5, in percent.
    pub within5: Option<f64>,
    /// Share of pairs with |Δ| ≤ 10, in percent.
    pub within10: Option<f64>,
}

/// The paired agreement of `ours` with `published` (extra items of the
/// longer side are ignored).
///
/// ```
/// let a = earthverse_answer_units::paired(&[0.0, 50.0, 100.0], &[10.0, 50.0, 90.0]);
/// assert!((a.mae.unwrap() - 20.0 / 3.0).abs() < 1e-12);
/// assert!((a.spearman.unwrap() - 1.0).abs() < 1e-12);
/// assert_eq!(a.within10, Some(100.0));
/// assert_eq!(earthverse_answer_units::paired(&[], &[]).mae, None);
/// ```
pub fn paired(ours: &[f64], published: &[f64]) -> PairedAgreement {
    let n = ours.len().min(published.len());
    let (x, y) = (&ours[..n], &published[..n]);
    let diffs: Vec<f64> = x.iter().zip(y).map(|(a, b)| a - b).collect();
    let abs: Vec<f64> = diffs.iter().map(|d| d.abs()).collect();
    PairedAgreement {
        n,
        mae: mean(&abs),
        bias: mean(&diffs),
        pearson: pearson(x, y),
        spearman: spearman(x, y),
        within5: within(&diffs, 5.0),
        within10: within(&diffs, 10.0),
    }
}

/// Mean; `None` for no values.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Percentage of differences with |d| ≤ `k` points (1e-9 slack for
/// rounding); `None` for no differences.
pub fn within(diffs: &[f64], k: f64) -> Option<f64> {
    (!diffs.is_empty()).then(|| {
        100.0 * diffs.iter().filter(|d| d.abs() <= k + 1e-9).count() as f64 / diffs.len() as f64
    })
}

/// How every text table and page of the workspace prints a figure or value
/// it does not have: an undefined statistic (a correlation of constant
/// series, a κ of one class), a figure no run recorded, an absent value.
/// One spelling everywhere, so a reader never wonders whether `-`, `–` and
/// `n/a` mean different things.
pub const UNDEFINED: &str = "n/a";

/// A figure for printing: the value with the caller's width and precision,
/// or [`UNDEFINED`] (padded to the width) when undefined.
///
/// ```
/// use earthverse_answer_units::shown;
/// assert_eq!(format!("{:5.2}", shown(Some(1.0))), " 1.00");
/// assert_eq!(format!("{:>5.2}", shown(None)), "  n/a");
/// assert_eq!(format!("{:.2}", shown(None)), "n/a");
/// ```
pub fn shown(value: Option<f64>) -> Shown {
    Shown(value)
}

/// See [`shown`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shown(pub Option<f64>);

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(v) => std::fmt::Display::fmt(&v, f),
            // Right-aligned to the width like a number; the precision
            // (which `pad` would apply as a maximum length) is not a width.
            None => write!(f, "{:>width$}", UNDEFINED, width = f.width().unwrap_or(0)),
        }
    }
}

/// Standard error of the mean (sample standard deviation over √n); `None`
/// for fewer than two values.
pub fn standard_error(values: &[f64]) -> Option<f64> {
    let n = values.len();
    if n < 2 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1) as f64;
    Some((var / n as f64).sqrt())
}

/// Pearson correlation; `None` (undefined) when there are fewer than two
/// pairs, either side is constant, or the lengths differ.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len();
    if n < 2 || y.len() != n {
        return None;
    }
    let mx = x.iter().sum::<f64>() / n as f64;
    let my = y.iter().sum::<f64>() / n as f64;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x.iter().zip(y) {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    if sxx <= 0.0 || syy <= 0.0 {
        None
    } else {
        Some(sxy / (sxx * syy).sqrt())
    }
}

/// Spearman rank correlation: Pearson on ranks, ties given their average
/// rank; `None` when undefined, as [`pearson`].
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    pearson(&ranks(x), &ranks(y))
}

/// Ranks (1-based) with ties given their average rank.
fn ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut out = vec![0.0; values.len()];
    let mut i = 0;
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && values[order[j + 1]] == values[order[i]] {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            out[k] = rank;
        }
        i = j + 1;
    }
    out
}

/// The deterministic tuning/held-out split of events used for the agreement
/// study: FNV-1a (64-bit) of the event id, even → tuning half, odd → held out.
///
/// ```
/// use earthverse_answer_units::is_tuning_event;
/// assert_ne!(is_tuning_event("CSX-001"), is_tuning_event("CSX-006"));
/// ```
pub fn is_tuning_event(event_id: &str) -> bool {
    use std::hash::Hasher;
    let mut hash = fnv::FnvHasher::default();
    hash.write(event_id.as_bytes());
    hash.finish() % 2 == 0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Runs of systems `a`, `b`, `c` on 12 tasks with the given difference.
    fn runs(diff: impl Fn(usize, usize) -> f64) -> (Vec<RunPair>, Vec<String>) {
        let mut pairs = Vec::new();
        let mut tasks = Vec::new();
        for t in 0..12 {
            for (s, system) in ["a", "b", "c"].into_iter().enumerate() {
                let published = 10.0 * s as f64 + t as f64;
                pairs.push(RunPair {
                    system: system.into(),
                    ours: published + diff(t, s),
                    published,
                });
                tasks.push(format!("t{t}"));
            }
        }
        (pairs, tasks)
    }

    #[test]
    fn system_gap_noise_of_task_level_errors_is_the_observed_gap() {
        // Every run of a task is off by the same amount: shuffling within
        // tasks changes nothing, so the observed gap is the noise floor.
        let (pairs, tasks) = runs(|t, _| if t % 2 == 0 { 4.0 } else { 1.0 });
        let noise = system_gap_noise(&pairs, &tasks, 3.0, 100, 7);
        assert_eq!(noise.systems, 3);
        assert!((noise.observed_max_gap.unwrap() - 2.5).abs() < 1e-12);
        assert!((noise.median_max_gap.unwrap() - 2.5).abs() < 1e-12);
        assert_eq!(noise.share_all_within, Some(1.0));
        assert_eq!(noise.share_at_least_observed, Some(1.0));
    }

    #[test]
    fn system_gap_noise_detects_a_lean_and_is_deterministic() {
        // System `c` is over-credited by 6 on every task, the others not.
        let (pairs, tasks) = runs(|_, s| if s == 2 { 6.0 } else { 0.0 });
        let noise = system_gap_noise(&pairs, &tasks, 3.0, 500, 2026);
        assert_eq!(noise.observed_max_gap, Some(6.0));
        // Spread over three systems the lean averages 2 per system.
        let median = noise.median_max_gap.unwrap();
        assert!((2.0..6.0).contains(&median), "{median}");
        assert!(noise.share_at_least_observed.unwrap() < 0.01);
        assert_eq!(noise, system_gap_noise(&pairs, &tasks, 3.0, 500, 2026));
        // Fewer than MIN_RUNS_FOR_SYSTEM_GAP runs: nothing compared.
        let few = system_gap_noise(&pairs[..9], &tasks[..9], 3.0, 10, 1);
        assert_eq!(few.systems, 0);
        assert_eq!(few.observed_max_gap, None);
        assert!(few.share_all_within.is_none() && few.median_max_gap.is_none());
    }

    #[test]
    fn correlations() {
        assert!((pearson(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(pearson(&[1.0, 1.0], &[1.0, 2.0]), None);
        assert_eq!(pearson(&[1.0], &[1.0]), None);
        assert!((spearman(&[1.0, 5.0, 9.0], &[2.0, 3.0, 100.0]).unwrap() - 1.0).abs() < 1e-12);
        assert_eq!(ranks(&[10.0, 20.0, 10.0]), vec![1.5, 3.0, 1.5]);
        assert_eq!(standard_error(&[1.0]), None);
        assert!((standard_error(&[1.0, 3.0]).unwrap() - 1.0).abs() < 1e-12);
        let none = agreement(&[]);
        assert_eq!(
            (none.runs, none.mae, none.within5, none.max_system_gap),
            (0, None, None, None)
        );
    }
}

/// How large the per-system gaps of [`Agreement`] would be if the scorer
/// treated no system differently from the others on the same task: the
/// noise floor of "every per-system mean within `tolerance` points".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SystemGapNoise {
    /// Systems with at least [`MIN_RUNS_FOR_SYSTEM_GAP`] runs (the ones compared).
    pub systems: usize,
    /// The tolerance tested, in points.
    pub tolerance: f64,
    /// Resamples drawn.
    pub resamples: usize,
    /// Seed of the resampling.
    pub seed: u64,
    /// The observed largest per-system gap (as
    /// [`Agreement::max_system_gap_min_runs`]; `None` when no system is
    /// compared).
    pub observed_max_gap: Option<f64>,
    /// Median of the largest per-system gap over the resamples.
    pub median_max_gap: Option<f64>,
    /// 90th percentile of the largest per-system gap over the resamples.
    pub p90_max_gap: Option<f64>,
    /// Share of resamples in which every per-system gap is within `tolerance`.
    pub share_all_within: Option<f64>,
    /// Share of resamples whose largest gap is at least the observed one
    /// (a permutation p-value: small means a real per-system lean).
    pub share_at_least_observed: Option<f64>,
}

/// The noise floor of the per-system gaps: each run's difference
/// (ours − published) is shuffled among the runs of the same task, which
/// keeps every system's task mix and every task's error level but removes
/// any lean towards or against a system, and the largest per-system gap
/// (systems with at least [`MIN_RUNS_FOR_SYSTEM_GAP`] runs) is recorded.
/// `tasks[i]` is the task of `pairs[i]`. Deterministic for a seed. With no
/// system compared, the quantiles and shares are `None` (null in JSON).
///
/// ```
/// use earthverse_answer_units::{system_gap_noise, RunPair};
/// let mut pairs = Vec::new();
/// let mut tasks = Vec::new();
/// for t in 0..12 {
///     for (system, diff) in [("a", 8.0), ("b", -8.0)] {
///         let published = 50.0;
///         pairs.push(RunPair { system: system.into(), ours: published + diff, published });
///         tasks.push(format!("task-{t}"));
///     }
/// }
/// let noise = system_gap_noise(&pairs, &tasks, 3.0, 200, 2026);
/// assert_eq!(noise.observed_max_gap, Some(8.0));
/// // Shuffled within tasks, the two systems' leans mostly cancel.
/// assert!(noise.median_max_gap.unwrap() < 8.0);
/// assert!(noise.share_at_least_observed.unwrap() < 0.05);
/// ```
pub fn system_gap_noise(
    pairs: &[RunPair],
    tasks: &[impl AsRef<str>],
    tolerance: f64,
    resamples: usize,
    seed: u64,
) -> SystemGapNoise {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let n = pairs.len().min(tasks.len());
    let mut system_index: BTreeMap<&str, usize> = BTreeMap::new();
    for p in &pairs[..n] {
        let next = system_index.len();
        system_index.entry(p.system.as_str()).or_insert(next);
    }
    let system_of: Vec<usize> = pairs[..n]
        .iter()
        .map(|p| system_index[p.system.as_str()])
        .collect();
    let mut runs_of = vec![0usize; system_index.len()];
    for &s in &system_of {
        runs_of[s] += 1;
    }
    let compared: Vec<bool> = runs_of
        .iter()
        .map(|&r| r >= MIN_RUNS_FOR_SYSTEM_GAP)
        .collect();
    let diffs: Vec<f64> = pairs[..n].iter().map(|p| p.ours - p.published).collect();
    let mut by_task: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, t) in tasks[..n].iter().enumerate() {
        by_task.entry(t.as_ref()).or_default().push(i);
    }
    // Runs laid out task by task: each slot keeps its system, and the
    // differences are shuffled within each task's range. Shuffling an
    // already shuffled range is again a uniform permutation, so the ranges
    // are shuffled in place from one resample to the next.
    let mut values = Vec::with_capacity(n);
    let mut slot_system = Vec::with_capacity(n);
    let mut ranges = Vec::with_capacity(by_task.len());
    for idx in by_task.values() {
        let start = values.len();
        values.extend(idx.iter().map(|&i| diffs[i]));
        slot_system.extend(idx.iter().map(|&i| system_of[i]));
        ranges.push(start..values.len());
    }
    let mut sums = vec![0.0; runs_of.len()];
    let mut max_gap = |values: &[f64]| {
        sums.iter_mut().for_each(|s| *s = 0.0);
        for (&s, &v) in slot_system.iter().zip(values) {
            sums[s] += v;
        }
        sums.iter()
            .zip(&runs_of)
            .zip(&compared)
            .filter(|(_, &c)| c)
            .map(|((sum, &r), _)| (sum / r as f64).abs())
            .fold(0.0, f64::max)
    };
    let systems = compared.iter().filter(|&&c| c).count();
    let observed = max_gap(&values);
    if systems == 0 {
        // Nothing to compare: the shares and quantiles are undefined.
        return SystemGapNoise {
            systems,
            tolerance,
            resamples: 0,
            seed,
            observed_max_gap: None,
            median_max_gap: None,
            p90_max_gap: None,
            share_all_within: None,
            share_at_least_observed: None,
        };
    }
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut maxima = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for range in &ranges {
            values[range.clone()].shuffle(&mut rng);
        }
        maxima.push(max_gap(&values));
    }
    maxima.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        (!maxima.is_empty())
            .then(|| maxima[((q * maxima.len() as f64) as usize).min(maxima.len() - 1)])
    };
    let share = |f: &dyn Fn(f64) -> bool| {
        (!maxima.is_empty())
            .then(|| maxima.iter().filter(|&&m| f(m)).count() as f64 / maxima.len() as f64)
    };
    SystemGapNoise {
        systems,
        tolerance,
        resamples,
        seed,
        observed_max_gap: Some(observed),
        median_max_gap: quantile(0.5),
        p90_max_gap: quantile(0.9),
        share_all_within: share(&|m| m <= tolerance + 1e-9),
        share_at_least_observed: share(&|m| m >= observed - 1e-9),
    }
}
