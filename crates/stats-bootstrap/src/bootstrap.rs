//! Paired bootstrap confidence intervals of score differences (App. C.5).
//!
//! The paper's intervals use 5,000 resamples of task-level score
//! differences with seed 2026 and percentile intervals. Here every pair of
//! systems is read from **one shared resample matrix**: resample `r` draws
//! the same task indices for every system, so all pairwise intervals are
//! mutually consistent and cost one pass over the data.
//!
//! The draws are fully specified, so they are reproducible across versions
//! and platforms: `rand_chacha::ChaCha20Rng::seed_from_u64(seed)`, then for
//! resample `r = 0..R` and slot `j = 0..n` one index in `0..n` from
//! Lemire's unbiased multiply-and-reject method on `next_u32()`. Tasks are
//! indexed in sorted task-id order.

use crate::{Error, Metric, Result, TaskOutcome};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Resamples of the paper's intervals (App. C.5).
pub const PAPER_RESAMPLES: usize = 5_000;
/// Seed of the paper's intervals (App. C.5).
pub const PAPER_SEED: u64 = 2026;
/// Confidence level of the paper's intervals.
pub const PAPER_CONFIDENCE: f64 = 0.95;

/// How to bootstrap: resamples, seed, confidence level. With the `clap`
/// feature it is the shared `--resamples`, `--seed`, `--confidence` flags
/// of every command that draws intervals, defaulting to the paper's.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct BootstrapConfig {
    /// Bootstrap resamples `R` (App. C.5: 5,000).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PAPER_RESAMPLES))]
    pub resamples: usize,
    /// ChaCha20 seed of the resampling (App. C.5: 2026).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PAPER_SEED))]
    pub seed: u64,
    /// Two-sided confidence level of the intervals (App. C.5: 0.95).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PAPER_CONFIDENCE))]
    pub confidence: f64,
}

impl Default for BootstrapConfig {
    /// The paper's setting: 5,000 resamples, seed 2026, 95% (App. C.5).
    fn default() -> Self {
        Self {
            resamples: PAPER_RESAMPLES,
            seed: PAPER_SEED,
            confidence: PAPER_CONFIDENCE,
        }
    }
}

impl BootstrapConfig {
    fn validate(&self) -> Result<()> {
        if self.resamples < 2 {
            return Err(Error::InvalidConfig {
                reason: format!("resamples = {} (need at least 2)", self.resamples),
            });
        }
        if !(self.confidence > 0.0 && self.confidence < 1.0) {
            return Err(Error::InvalidConfig {
                reason: format!("confidence = {} (need 0 < c < 1)", self.confidence),
            });
        }
        Ok(())
    }
}

/// One index in `0..n` from Lemire's unbiased method (n > 0).
fn bounded_index(rng: &mut ChaCha20Rng, n: u32) -> u32 {
    let mut product = u64::from(rng.next_u32()) * u64::from(n);
    let mut low = product as u32;
    if low < n {
        let threshold = n.wrapping_neg() % n;
        while low < threshold {
            product = u64::from(rng.next_u32()) * u64::from(n);
            low = product as u32;
        }
    }
    (product >> 32) as u32
}

/// The shared resample matrix: for each resample, how often each task was
/// drawn (`counts[r * n + j]`). Counts rather than indices make every
/// system's resampled mean a contiguous dot product.
#[derive(Debug, Clone, PartialEq)]
pub struct ResampleMatrix {
    n_tasks: usize,
    resamples: usize,
    counts: Vec<f64>,
}

impl ResampleMatrix {
    /// Draws `resamples` resamples of `n_tasks` task indices with ChaCha20
    /// seeded by `seed` (see the module docs for the exact procedure).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when `n_tasks` is 0 or exceeds `u32::MAX`.
    pub fn draw(n_tasks: usize, resamples: usize, seed: u64) -> Result<Self> {
        let n = u32::try_from(n_tasks)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| Error::InvalidConfig {
                reason: format!("cannot resample {n_tasks} tasks"),
            })?;
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let mut counts = vec![0.0f64; n_tasks * resamples];
        for row in counts.chunks_exact_mut(n_tasks) {
            for _ in 0..n_tasks {
                row[bounded_index(&mut rng, n) as usize] += 1.0;
            }
        }
        Ok(Self {
            n_tasks,
            resamples,
            counts,
        })
    }

    /// Number of tasks per resample.
    pub fn n_tasks(&self) -> usize {
        self.n_tasks
    }

    /// Number of resamples.
    pub fn resamples(&self) -> usize {
        self.resamples
    }

    /// How often each task is drawn in resample `r` (`None` past the end).
    pub fn counts(&self, r: usize) -> Option<&[f64]> {
        self.counts.chunks_exact(self.n_tasks).nth(r)
    }

    /// The mean of `scores` (one per task) in every resample.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when `scores` has the wrong length.
    pub fn resampled_means(&self, scores: &[f64]) -> Result<Vec<f64>> {
        if scores.len() != self.n_tasks {
            return Err(Error::InvalidConfig {
                reason: format!(
                    "{} scores for a resample matrix of {} tasks",
                    scores.len(),
                    self.n_tasks
                ),
            });
        }
        let n = self.n_tasks as f64;
        Ok(self
            .counts
            .chunks_exact(self.n_tasks)
            .map(|row| dot(row, scores) / n)
            .collect())
    }
}

impl ResampleMatrix {
    /// The resampled means of several score vectors in one pass over the
    /// matrix (each resample row is read once for all of them; `out[k][r]`).
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when a vector has the wrong length.
    pub fn resampled_means_of(&self, scores: &[&[f64]]) -> Result<Vec<Vec<f64>>> {
        if let Some(bad) = scores.iter().find(|s| s.len() != self.n_tasks) {
            return Err(Error::InvalidConfig {
                reason: format!(
                    "{} scores for a resample matrix of {} tasks",
                    bad.len(),
                    self.n_tasks
                ),
            });
        }
        let n = self.n_tasks as f64;
        let mut out: Vec<Vec<f64>> = scores
            .iter()
            .map(|_| Vec::with_capacity(self.resamples))
            .collect();
        for row in self.counts.chunks_exact(self.n_tasks) {
            for (values, means) in scores.iter().zip(out.iter_mut()) {
                means.push(dot(row, values) / n);
            }
        }
        Ok(out)
    }
}

/// Dot product in four independent lanes (lets the compiler vectorise).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut lanes = [0.0f64; 4];
    let chunks_a = a.chunks_exact(4);
    let chunks_b = b.chunks_exact(4);
    let tail: f64 = chunks_a
        .remainder()
        .iter()
        .zip(chunks_b.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in chunks_a.zip(chunks_b) {
        for k in 0..4 {
            lanes[k] += x[k] * y[k];
        }
    }
    (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]) + tail
}

/// What to do when a system lacks a task that another system has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MissingPolicy {
    /// Keep only the tasks every system has (paired over the same tasks).
    CommonTasks,
    /// Score a missing task 0, as a solver failure (§4.1).
    ZeroFill,
    /// Fail with [`Error::MissingPairedTask`].
    Require,
}

/// A systems × tasks score matrix for paired comparisons.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedScores {
    systems: Vec<String>,
    tasks: Vec<String>,
    /// Row-major: `scores[s * tasks.len() + j]`.
    scores: Vec<f64>,
}

impl PairedScores {
    /// Builds the matrix of `metric` for `systems` (all systems, in
    /// first-seen order, when `None`), tasks in sorted order.
    ///
    /// # Errors
    /// [`Error::UnknownSystem`], [`Error::DuplicateOutcome`],
    /// [`Error::NoCommonTasks`], [`Error::MissingPairedTask`].
    pub fn from_outcomes(
        outcomes: &[TaskOutcome],
        systems: Option<&[String]>,
        metric: Metric,
        policy: MissingPolicy,
    ) -> Result<Self> {
        let groups = crate::leaderboard::by_system(outcomes)?;
        let systems: Vec<String> = match systems {
            Some(list) => list.to_vec(),
            None => groups.iter().map(|(s, _)| s.clone()).collect(),
        };
        let mut per_system: Vec<BTreeMap<&str, f64>> = Vec::with_capacity(systems.len());
        for system in &systems {
            let runs = groups
                .iter()
                .find(|(s, _)| s == system)
                .map(|(_, runs)| runs)
                .ok_or_else(|| Error::UnknownSystem {
                    system: system.clone(),
                })?;
            per_system.push(
                runs.iter()
                    .map(|o| (o.task.as_str(), o.metric(metric)))
                    .collect(),
            );
        }
        let all: BTreeSet<&str> = per_system.iter().flat_map(|m| m.keys().copied()).collect();
        let tasks: Vec<String> = match policy {
            MissingPolicy::CommonTasks => all
                .into_iter()
                .filter(|t| per_system.iter().all(|m| m.contains_key(t)))
                .map(str::to_owned)
                .collect(),
            MissingPolicy::ZeroFill | MissingPolicy::Require => {
                all.into_iter().map(str::to_owned).collect()
            }
        };
        if tasks.is_empty() {
            return Err(Error::NoCommonTasks {
                systems: systems.join(", "),
            });
        }
        let mut scores = Vec::with_capacity(systems.len() * tasks.len());
        for (system, map) in systems.iter().zip(&per_system) {
            for task in &tasks {
                match map.get(task.as_str()) {
                    Some(&v) => scores.push(v),
                    None if policy == MissingPolicy::ZeroFill => scores.push(0.0),
                    None => {
                        return Err(Error::MissingPairedTask {
                            system: system.clone(),
                            task: task.clone(),
                        })
                    }
                }
            }
        }
        Ok(Self {
            systems,
            tasks,
            scores,
        })
    }

    /// Builds the matrix from rows of scores, one row per system.
    ///
    /// # Errors
    /// [`Error::InvalidConfig`] when a row's length differs from `tasks`,
    /// or there are no tasks.
    pub fn from_rows(systems: Vec<String>, tasks: Vec<String>, rows: &[Vec<f64>]) -> Result<Self> {
        if tasks.is_empty() || rows.len() != systems.len() {
            return Err(Error::InvalidConfig {
                reason: format!(
                    "{} systems, {} rows, {} tasks",
                    systems.len(),
                    rows.len(),
                    tasks.len()
                ),
            });
        }
        let mut scores = Vec::with_capacity(systems.len() * tasks.len());
        for (system, row) in systems.iter().zip(rows) {
            if row.len() != tasks.len() {
                return Err(Error::InvalidConfig {
                    reason: format!(
                        "system {system} has {} scores for {} tasks",
                        row.len(),
                        tasks.len()
                    ),
                });
            }
            scores.extend_from_slice(row);
        }
        Ok(Self {
            systems,
            tasks,
            scores,
        })
    }

    /// The systems, in row order.
    pub fn systems(&self) -> &[String] {
        &self.systems
    }

    /// The tasks, in column order.
    pub fn tasks(&self) -> &[String] {
        &self.tasks
    }

    /// The scores of system `s` (row `s`).
    pub fn row(&self, s: usize) -> Option<&[f64]> {
        self.scores.chunks_exact(self.tasks.len()).nth(s)
    }
}

/// The paired bootstrap of `Δ = mean(a) − mean(b)` over the same tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedDelta {
    /// First system.
    pub a: String,
    /// Second system.
    pub b: String,
    /// Number of paired tasks.
    pub n_tasks: usize,
    /// Observed mean of `a`.
    pub mean_a: f64,
    /// Observed mean of `b`.
    pub mean_b: f64,
    /// Observed difference `mean_a − mean_b`.
    pub delta: f64,
    /// Lower percentile bound.
    pub ci_low: f64,
    /// Upper percentile bound.
    pub ci_high: f64,
    /// Standard deviation of the resampled differences.
    pub std_error: f64,
    /// Share of resamples with `Δ ≤ 0`.
    pub share_not_positive: f64,
    /// Resamples used.
    pub resamples: usize,
    /// Seed used.
    pub seed: u64,
    /// Confidence level.
    pub confidence: f64,
}

impl PairedDelta {
    /// Whether the interval excludes zero.
    pub fn excludes_zero(&self) -> bool {
        self.ci_low > 0.0 || self.ci_high < 0.0
    }
}

/// Percentile of sorted-or-not `values` with linear interpolation between
/// order statistics (`numpy.percentile`'s default, Hyndman–Fan type 7).
/// `q` in 0..=1. Reorders `values`.
pub fn percentile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    let h = (values.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let (_, &mut x_lo, upper) = values.select_nth_unstable_by(lo, f64::total_cmp);
    let x_hi = upper.iter().copied().min_by(f64::total_cmp).unwrap_or(x_lo);
    x_lo + (h - lo as f64) * (x_hi - x_lo)
}

/// Paired bootstrap intervals for every pair `(i, j)`, `i < j`, of the
/// systems of `scores`, all read from one shared resample matrix.
///
/// # Errors
/// [`Error::InvalidConfig`] for an unusable configuration.
pub fn all_pairs(scores: &PairedScores, config: &BootstrapConfig) -> Result<Vec<PairedDelta>> {
    let pairs: Vec<(usize, usize)> = (0..scores.systems.len())
        .flat_map(|i| (i + 1..scores.systems.len()).map(move |j| (i, j)))
        .collect();
    pairs_of(scores, &pairs, config)
}

/// Paired bootstrap intervals for the listed pairs of row indices, all read
/// from one shared resample matrix.
///
/// # Errors
/// [`Error::InvalidConfig`] for an unusable configuration or index.
pub fn pairs_of(
    scores: &PairedScores,
    pairs: &[(usize, usize)],
    config: &BootstrapConfig,
) -> Result<Vec<PairedDelta>> {
    config.validate()?;
    let n = scores.tasks.len();
    let matrix = ResampleMatrix::draw(n, config.resamples, config.seed)?;
    let mut needed: Vec<usize> = pairs.iter().flat_map(|&(i, j)| [i, j]).collect();
    needed.sort_unstable();
    needed.dedup();
    let rows: Vec<&[f64]> = needed
        .iter()
        .map(|&k| {
            scores.row(k).ok_or_else(|| Error::InvalidConfig {
                reason: format!("no system row {k}"),
            })
        })
        .collect::<Result<_>>()?;
    let resampled = matrix.resampled_means_of(&rows)?;
    let mut means: Vec<Option<(f64, &[f64])>> = vec![None; scores.systems.len()];
    for ((&k, row), res) in needed.iter().zip(&rows).zip(&resampled) {
        means[k] = Some((row.iter().sum::<f64>() / n as f64, res.as_slice()));
    }
    let alpha = (1.0 - config.confidence) / 2.0;
    let mut out = Vec::with_capacity(pairs.len());
    let mut deltas = vec![0.0f64; config.resamples];
    for &(i, j) in pairs {
        let (Some(Some((mean_a, res_a))), Some(Some((mean_b, res_b)))) =
            (means.get(i), means.get(j))
        else {
            return Err(Error::InvalidConfig {
                reason: format!("no system row {i} or {j}"),
            });
        };
        for ((d, x), y) in deltas.iter_mut().zip(res_a.iter()).zip(res_b.iter()) {
            *d = x - y;
        }
        let r = deltas.len() as f64;
        let avg = deltas.iter().sum::<f64>() / r;
        let var = deltas.iter().map(|d| (d - avg) * (d - avg)).sum::<f64>() / (r - 1.0);
        let share_not_positive = deltas.iter().filter(|&&d| d <= 0.0).count() as f64 / r;
        let ci_low = percentile(&mut deltas, alpha);
        let ci_high = percentile(&mut deltas, 1.0 - alpha);
        out.push(PairedDelta {
            a: scores.systems[i].clone(),
            b: scores.systems[j].clone(),
            n_tasks: n,
            mean_a: *mean_a,
            mean_b: *mean_b,
            delta: mean_a - mean_b,
            ci_low,
            ci_high,
            std_error: var.sqrt(),
            share_not_positive,
            resamples: config.resamples,
            seed: config.seed,
            confidence: config.confidence,
        });
    }
    Ok(out)
}

/// The paired bootstrap of `metric` between systems `a` and `b` over the
/// tasks both have (App. C.5).
///
/// # Errors
/// [`Error::UnknownSystem`], [`Error::NoCommonTasks`], [`Error::InvalidConfig`].
pub fn compare(
    outcomes: &[TaskOutcome],
    a: &str,
    b: &str,
    metric: Metric,
    config: &BootstrapConfig,
) -> Result<PairedDelta> {
    let systems = [a.to_owned(), b.to_owned()];
    let scores =
        PairedScores::from_outcomes(outcomes, Some(&systems), metric, MissingPolicy::CommonTasks)?;
    let mut deltas = pairs_of(&scores, &[(0, 1)], config)?;
    deltas.pop().ok_or_else(|| Error::InvalidConfig {
        reason: "no pair computed".to_owned(),
    })
}
