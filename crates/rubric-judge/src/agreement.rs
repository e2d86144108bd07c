//! Agreement between two score series (ours vs. published): MAE, Pearson,
//! Spearman, share within 5 and 10 points. Pure. The correlations are
//! `earthverse-answer-units`' (one implementation in the workspace).

use earthverse_answer_units::{pearson, spearman};
use serde::{Deserialize, Serialize};

/// Agreement figures of paired scores on 0–100.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// Pairs compared.
    pub n: usize,
    /// Mean absolute error.
    pub mae: f64,
    /// Mean of ours − published.
    pub bias: f64,
    /// Pearson correlation (NaN when a side is constant).
    pub pearson: f64,
    /// Spearman rank correlation (average ranks for ties).
    pub spearman: f64,
    /// Share of pairs with |Δ| ≤ 5, in percent.
    pub within5: f64,
    /// Share of pairs with |Δ| ≤ 10, in percent.
    pub within10: f64,
}

/// Agreement of `ours` with `published` (same length; extra items of the
/// longer side are ignored).
///
/// ```
/// let a = earthverse_rubric_judge::agreement(&[0.0, 50.0, 100.0], &[10.0, 50.0, 90.0]);
/// assert!((a.mae - 20.0 / 3.0).abs() < 1e-12);
/// assert!((a.spearman - 1.0).abs() < 1e-12);
/// assert!((a.within10 - 100.0).abs() < 1e-12);
/// ```
pub fn agreement(ours: &[f64], published: &[f64]) -> Agreement {
    let n = ours.len().min(published.len());
    let (x, y) = (&ours[..n], &published[..n]);
    if n == 0 {
        return Agreement {
            n,
            mae: f64::NAN,
            bias: f64::NAN,
            pearson: f64::NAN,
            spearman: f64::NAN,
            within5: f64::NAN,
            within10: f64::NAN,
        };
    }
    let diffs: Vec<f64> = x.iter().zip(y).map(|(a, b)| a - b).collect();
    let nf = n as f64;
    Agreement {
        n,
        mae: diffs.iter().map(|d| d.abs()).sum::<f64>() / nf,
        bias: diffs.iter().sum::<f64>() / nf,
        pearson: pearson(x, y),
        spearman: spearman(x, y),
        within5: 100.0 * diffs.iter().filter(|d| d.abs() <= 5.0 + 1e-9).count() as f64 / nf,
        within10: 100.0 * diffs.iter().filter(|d| d.abs() <= 10.0 + 1e-9).count() as f64 / nf,
    }
}
