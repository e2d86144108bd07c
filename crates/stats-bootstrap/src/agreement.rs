//! Agreement between two raters over the same items: Cohen's κ and raw
//! agreement (and, for two binary raters, recall and precision of one
//! against the other), each with a percentile bootstrap interval over
//! items (App. C.5's setting by default: 5,000 resamples, seed 2026).
//!
//! κ = (p_o − p_e) / (1 − p_e) with p_o the share of items both raters put
//! in the same category and p_e = Σ_k p_a(k)·p_b(k). κ is undefined when
//! p_e = 1 (both raters always give one and the same category); it is
//! then `None`, and resamples where it is undefined are left out of its
//! interval (their number is reported).

use crate::bootstrap::{percentile, BootstrapConfig, ResampleMatrix};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// A figure with its bootstrap interval (`None` when undefined).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// The figure on all items.
    pub value: Option<f64>,
    /// Lower bound of the interval.
    pub ci_low: Option<f64>,
    /// Upper bound of the interval.
    pub ci_high: Option<f64>,
}

impl Estimate {
    /// `0.42 [0.31, 0.53]`, or `n/a`.
    pub fn shown(&self) -> String {
        match (self.value, self.ci_low, self.ci_high) {
            (Some(v), Some(l), Some(h)) => format!("{v:.2} [{l:.2}, {h:.2}]"),
            (Some(v), _, _) => format!("{v:.2}"),
            _ => crate::UNDEFINED.to_owned(),
        }
    }
}

/// Agreement of two raters over the same items.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agreement {
    /// Items rated by both.
    pub n: usize,
    /// Cohen's κ.
    pub kappa: Estimate,
    /// Share of items with the same rating.
    pub raw: Estimate,
    /// Resamples where κ was undefined (left out of its interval).
    pub undefined_resamples: usize,
}

/// Agreement of a binary rater ("ours") with a binary reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BinaryAgreement {
    /// κ and raw agreement.
    pub agreement: Agreement,
    /// Items both mark.
    pub both: usize,
    /// Items only ours marks.
    pub ours_only: usize,
    /// Items only the reference marks.
    pub reference_only: usize,
    /// Share of the reference's marked items that ours marks too.
    pub recall: Estimate,
    /// Share of our marked items that the reference marks too.
    pub precision: Estimate,
}

/// Weighted κ and raw agreement of category codes `a`, `b` (`w` = how
/// often each item is drawn); `None` κ when undefined.
fn kappa_raw(a: &[usize], b: &[usize], w: &[f64], k: usize) -> (Option<f64>, f64) {
    let mut pa = vec![0.0; k];
    let mut pb = vec![0.0; k];
    let (mut same, mut total) = (0.0, 0.0);
    for ((&x, &y), &wt) in a.iter().zip(b).zip(w) {
        pa[x] += wt;
        pb[y] += wt;
        total += wt;
        if x == y {
            same += wt;
        }
    }
    if total <= 0.0 {
        return (None, f64::NAN);
    }
    let po = same / total;
    let pe: f64 = pa.iter().zip(&pb).map(|(p, q)| p * q).sum::<f64>() / (total * total);
    let kappa = (1.0 - pe > 1e-12).then(|| (po - pe) / (1.0 - pe));
    (kappa, po)
}

fn interval(mut values: Vec<f64>, config: &BootstrapConfig) -> (Option<f64>, Option<f64>) {
    if values.is_empty() {
        return (None, None);
    }
    let tail = (1.0 - config.confidence) / 2.0;
    let lo = percentile(&mut values, tail);
    let hi = percentile(&mut values, 1.0 - tail);
    (Some(lo), Some(hi))
}

fn check(a_len: usize, b_len: usize) -> Result<()> {
    if a_len != b_len {
        return Err(Error::InvalidConfig {
            reason: format!("{a_len} ratings of one rater against {b_len} of the other"),
        });
    }
    if a_len == 0 {
        return Err(Error::InvalidConfig {
            reason: "no items rated by both raters".into(),
        });
    }
    Ok(())
}

/// Cohen's κ and raw agreement of two raters' category codes over the
/// same items, with bootstrap intervals over items.
///
/// # Errors
/// [`Error::InvalidConfig`] for ratings of different lengths, no items, or
/// an unusable configuration.
pub fn agreement(a: &[usize], b: &[usize], config: &BootstrapConfig) -> Result<Agreement> {
    check(a.len(), b.len())?;
    let k = a.iter().chain(b).max().map_or(1, |m| m + 1);
    let ones = vec![1.0; a.len()];
    let (kappa, raw) = kappa_raw(a, b, &ones, k);
    let matrix = ResampleMatrix::draw(a.len(), config.resamples, config.seed)?;
    let mut kappas = Vec::with_capacity(config.resamples);
    let mut raws = Vec::with_capacity(config.resamples);
    for r in 0..matrix.resamples() {
        let w = matrix.counts(r).unwrap_or_default();
        let (kr, pr) = kappa_raw(a, b, w, k);
        kappas.extend(kr);
        raws.push(pr);
    }
    let undefined_resamples = config.resamples - kappas.len();
    let (kl, kh) = interval(kappas, config);
    let (rl, rh) = interval(raws, config);
    Ok(Agreement {
        n: a.len(),
        kappa: Estimate {
            value: kappa,
            ci_low: kl,
            ci_high: kh,
        },
        raw: Estimate {
            value: Some(raw),
            ci_low: rl,
            ci_high: rh,
        },
        undefined_resamples,
    })
}

/// Agreement of binary ratings `ours` with a binary `reference`: κ, raw
/// agreement, recall (share of the reference's marks ours shares) and
/// precision, with bootstrap intervals from one resample matrix.
///
/// # Errors
/// As [`agreement`].
pub fn binary_agreement(
    ours: &[bool],
    reference: &[bool],
    config: &BootstrapConfig,
) -> Result<BinaryAgreement> {
    check(ours.len(), reference.len())?;
    let a: Vec<usize> = ours.iter().map(|&x| usize::from(x)).collect();
    let b: Vec<usize> = reference.iter().map(|&x| usize::from(x)).collect();
    let agreement = agreement(&a, &b, config)?;
    let matrix = ResampleMatrix::draw(a.len(), config.resamples, config.seed)?;
    let share = |w: &[f64], given: &[bool], other: &[bool]| {
        let (mut hit, mut total) = (0.0, 0.0);
        for ((&g, &o), &wt) in given.iter().zip(other).zip(w) {
            if g {
                total += wt;
                if o {
                    hit += wt;
                }
            }
        }
        (total > 0.0).then(|| hit / total)
    };
    let estimate = |given: &[bool], other: &[bool]| {
        let ones = vec![1.0; given.len()];
        let values: Vec<f64> = (0..matrix.resamples())
            .filter_map(|r| share(matrix.counts(r).unwrap_or_default(), given, other))
            .collect();
        let (l, h) = interval(values, config);
        Estimate {
            value: share(&ones, given, other),
            ci_low: l,
            ci_high: h,
        }
    };
    let count = |f: &dyn Fn(bool, bool) -> bool| {
        ours.iter()
            .zip(reference)
            .filter(|(&o, &r)| f(o, r))
            .count()
    };
    Ok(BinaryAgreement {
        agreement,
        both: count(&|o, r| o && r),
        ours_only: count(&|o, r| o && !r),
        reference_only: count(&|o, r| !o && r),
        recall: estimate(reference, ours),
        precision: estimate(ours, reference),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn quick() -> BootstrapConfig {
        BootstrapConfig {
            resamples: 500,
            ..BootstrapConfig::default()
        }
    }

    #[test]
    fn kappa_matches_a_hand_computation() {
        // 2x2 table: both yes 20, a only 5, b only 10, neither 15 (n = 50).
        let mut a = Vec::new();
        let mut b = Vec::new();
        for (x, y, n) in [(1, 1, 20), (1, 0, 5), (0, 1, 10), (0, 0, 15)] {
            a.extend(std::iter::repeat_n(x, n));
            b.extend(std::iter::repeat_n(y, n));
        }
        let ag = agreement(&a, &b, &quick()).unwrap();
        // p_o = 0.7; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; κ = 0.4.
        assert!((ag.kappa.value.unwrap() - 0.4).abs() < 1e-12);
        assert!((ag.raw.value.unwrap() - 0.7).abs() < 1e-12);
        let (l, h) = (ag.kappa.ci_low.unwrap(), ag.kappa.ci_high.unwrap());
        assert!(l < 0.4 && 0.4 < h && h - l < 0.8);
    }

    #[test]
    fn constant_raters_have_no_kappa() {
        let ag = agreement(&[1, 1, 1], &[1, 1, 1], &quick()).unwrap();
        assert_eq!(ag.kappa.value, None);
        assert_eq!(ag.raw.value, Some(1.0));
        assert!(agreement(&[1], &[1, 0], &quick()).is_err());
    }

    #[test]
    fn recall_and_precision() {
        let ours = [true, true, false, false];
        let reference = [true, false, true, false];
        let b = binary_agreement(&ours, &reference, &quick()).unwrap();
        assert_eq!((b.both, b.ours_only, b.reference_only), (1, 1, 1));
        assert_eq!(b.recall.value, Some(0.5));
        assert_eq!(b.precision.value, Some(0.5));
    }
}
