//! Numerical helpers shared by the operations: summary statistics with
//! numpy's conventions, regression, correlation, special functions and
//! distribution fits.

use serde_json::Value;

/// A finite number as JSON, NaN/inf as `null`.
pub fn num(x: f64) -> Value {
    serde_json::Number::from_f64(x)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// Finite values only.
pub fn finite(xs: &[f64]) -> Vec<f64> {
    xs.iter().copied().filter(|x| x.is_finite()).collect()
}

/// Arithmetic mean (NaN for no values).
pub fn mean(xs: &[f64]) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// Standard deviation with `ddof` (0 = population, 1 = sample).
pub fn std(xs: &[f64], ddof: usize) -> f64 {
    if xs.len() <= ddof {
        return f64::NAN;
    }
    let m = mean(xs);
    (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (xs.len() - ddof) as f64).sqrt()
}

/// Percentile `q` (0–100) with numpy's default linear interpolation.
pub fn percentile(xs: &[f64], q: f64) -> f64 {
    let mut v = finite(xs);
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let pos = (q / 100.0).clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// Ordinary least squares y = a + b x: (intercept, slope, r²).
pub fn ols(x: &[f64], y: &[f64]) -> (f64, f64, f64) {
    let (mx, my) = (mean(x), mean(y));
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let syy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    let slope = sxy / sxx;
    let r2 = if syy == 0.0 {
        1.0
    } else {
        sxy * sxy / (sxx * syy)
    };
    (my - slope * mx, slope, r2)
}

/// Pearson correlation.
pub fn pearson(x: &[f64], y: &[f64]) -> f64 {
    let (mx, my) = (mean(x), mean(y));
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    let syy: f64 = y.iter().map(|b| (b - my).powi(2)).sum();
    sxy / (sxx * syy).sqrt()
}

/// Average ranks (1-based, ties averaged).
pub fn ranks(x: &[f64]) -> Vec<f64> {
    let mut idx: Vec<usize> = (0..x.len()).collect();
    idx.sort_by(|a, b| x[*a].total_cmp(&x[*b]));
    let mut r = vec![0.0; x.len()];
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && x[idx[j + 1]] == x[idx[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for k in i..=j {
            r[idx[k]] = avg;
        }
        i = j + 1;
    }
    r
}

/// Spearman rank correlation.
pub fn spearman(x: &[f64], y: &[f64]) -> f64 {
    pearson(&ranks(x), &ranks(y))
}

/// Standard normal CDF.
pub fn norm_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// Complementary error function (Numerical Recipes erfc, |rel err| < 1.2e-7).
pub fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87
                                        + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// Inverse standard normal CDF (Acklam's rational approximation, refined by
/// one Halley step).
pub fn norm_ppf(p: f64) -> f64 {
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let pl = 0.024_25;
    let x = if p < pl {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - pl {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        let q = (-2.0 * (1.0 - p).ln()).sqrt();
        -(((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let e = norm_cdf(x) - p;
    let u = e * (2.0 * std::f64::consts::PI).sqrt() * (x * x / 2.0).exp();
    x - u / (1.0 + x * u / 2.0)
}

/// ln Γ(x) (Lanczos, g = 7).
pub fn ln_gamma(x: f64) -> f64 {
    const COEF: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = COEF[0];
    let t = x + 7.5;
    for (i, c) in COEF.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// Regularised lower incomplete gamma P(a, x).
pub fn gamma_p(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x < a + 1.0 {
        let mut sum = 1.0 / a;
        let mut del = sum;
        let mut ap = a;
        for _ in 0..500 {
            ap += 1.0;
            del *= x / ap;
            sum += del;
            if del.abs() < sum.abs() * 1e-14 {
                break;
            }
        }
        sum * (-x + a * x.ln() - ln_gamma(a)).exp()
    } else {
        // continued fraction for Q
        let mut b = x + 1.0 - a;
        let mut c = 1.0 / 1e-300;
        let mut d = 1.0 / b;
        let mut h = d;
        for i in 1..500 {
            let an = -(i as f64) * (i as f64 - a);
            b += 2.0;
            d = an * d + b;
            if d.abs() < 1e-300 {
                d = 1e-300;
            }
            c = b + an / c;
            if c.abs() < 1e-300 {
                c = 1e-300;
            }
            d = 1.0 / d;
            let del = d * c;
            h *= del;
            if (del - 1.0).abs() < 1e-14 {
                break;
            }
        }
        1.0 - (-x + a * x.ln() - ln_gamma(a)).exp() * h
    }
}

/// Gamma maximum-likelihood estimate by Thom's approximation (as used by
/// SPI implementations): returns (shape α, scale β).
pub fn gamma_fit_thom(xs: &[f64]) -> Option<(f64, f64)> {
    let pos: Vec<f64> = xs.iter().copied().filter(|x| *x > 0.0).collect();
    if pos.len() < 2 {
        return None;
    }
    let m = mean(&pos);
    let a_stat = m.ln() - pos.iter().map(|x| x.ln()).sum::<f64>() / pos.len() as f64;
    if a_stat <= 0.0 {
        return None;
    }
    let alpha = (1.0 + (1.0 + 4.0 * a_stat / 3.0).sqrt()) / (4.0 * a_stat);
    Some((alpha, m / alpha))
}

/// Sample L-moments l1, l2, t3 (Hosking 1990, unbiased probability-weighted moments).
pub fn l_moments(xs: &[f64]) -> Option<(f64, f64, f64)> {
    let mut v = finite(xs);
    let n = v.len();
    if n < 3 {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let nf = n as f64;
    let (mut b0, mut b1, mut b2) = (0.0, 0.0, 0.0);
    for (j, x) in v.iter().enumerate() {
        let jf = j as f64;
        b0 += x;
        b1 += x * jf / (nf - 1.0);
        b2 += x * jf * (jf - 1.0) / ((nf - 1.0) * (nf - 2.0));
    }
    b0 /= nf;
    b1 /= nf;
    b2 /= nf;
    let l1 = b0;
    let l2 = 2.0 * b1 - b0;
    let l3 = 6.0 * b2 - 6.0 * b1 + b0;
    Some((l1, l2, l3 / l2))
}

/// Mann–Kendall statistic S, its variance (with tie correction), Z and the
/// two-sided p-value (normal approximation with continuity correction).
pub fn mann_kendall(x: &[f64]) -> (f64, f64, f64, f64) {
    let n = x.len();
    let mut s = 0.0;
    for i in 0..n {
        for j in i + 1..n {
            s += (x[j] - x[i]).signum() * if x[j] == x[i] { 0.0 } else { 1.0 };
        }
    }
    let mut sorted = x.to_vec();
    sorted.sort_by(f64::total_cmp);
    let mut ties = 0.0;
    let mut i = 0;
    while i < n {
        let mut j = i;
        while j + 1 < n && sorted[j + 1] == sorted[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        ties += t * (t - 1.0) * (2.0 * t + 5.0);
        i = j + 1;
    }
    let nf = n as f64;
    let var = (nf * (nf - 1.0) * (2.0 * nf + 5.0) - ties) / 18.0;
    let z = if s > 0.0 {
        (s - 1.0) / var.sqrt()
    } else if s < 0.0 {
        (s + 1.0) / var.sqrt()
    } else {
        0.0
    };
    let p = 2.0 * (1.0 - norm_cdf(z.abs()));
    (s, var, z, p)
}

/// Theil–Sen slope (median of pairwise slopes) and intercept (median of
/// y − slope·x).
pub fn sens_slope(x: &[f64], y: &[f64]) -> (f64, f64) {
    let mut slopes = Vec::new();
    for i in 0..x.len() {
        for j in i + 1..x.len() {
            if x[j] != x[i] {
                slopes.push((y[j] - y[i]) / (x[j] - x[i]));
            }
        }
    }
    let slope = percentile(&slopes, 50.0);
    let resid: Vec<f64> = x.iter().zip(y).map(|(a, b)| b - slope * a).collect();
    (slope, percentile(&resid, 50.0))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn percentile_matches_numpy_linear() {
        // numpy.percentile([1, 2, 3, 4], 25) == 1.75
        assert!((percentile(&[4.0, 1.0, 3.0, 2.0], 25.0) - 1.75).abs() < 1e-12);
    }

    #[test]
    fn normal_functions_invert() {
        for p in [0.001, 0.05, 0.5, 0.9, 0.999] {
            assert!((norm_cdf(norm_ppf(p)) - p).abs() < 1e-7, "{p}");
        }
        // Φ(1.959964) = 0.975
        assert!((norm_cdf(1.959_964) - 0.975).abs() < 1e-6);
    }

    #[test]
    fn gamma_functions_match_known_values() {
        // Γ(5) = 24; P(1, x) = 1 − e^{−x}
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-10);
        assert!((gamma_p(1.0, 2.0) - (1.0 - (-2f64).exp())).abs() < 1e-10);
        assert!((gamma_p(3.0, 10.0) - 0.997_230_604_284_488_6).abs() < 1e-9);
    }
}
