//! Time series and extreme-value analysis (paper §3.4): summaries,
//! resampling, thresholds and spells, trends (OLS, Mann–Kendall, Theil–Sen),
//! and pyextremes-style block maxima / peaks over threshold with GEV and GPD
//! fits by L-moments (Hosking 1990).

use crate::climate::runs;
use crate::input::Series;
use crate::op::need;
use crate::op::{opt, req, Kind, OpCall, Operation};
use crate::stats::{self, num};
use crate::Result;
use earthverse_tool_registry::ToolFamily;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const F: ToolFamily = ToolFamily::TimeSeries;

fn s(name: &'static str, doc: &'static str) -> crate::op::Param {
    req(name, Kind::Series, doc)
}

/// Summary statistics of finite values (numpy conventions, sample std).
pub fn describe(x: &[f64]) -> Value {
    let v = stats::finite(x);
    json!({
        "count": v.len(), "missing": x.len() - v.len(),
        "min": num(v.iter().copied().fold(f64::INFINITY, f64::min)),
        "max": num(v.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
        "mean": num(stats::mean(&v)), "std": num(stats::std(&v, 1)),
        "p5": num(stats::percentile(&v, 5.0)), "p50": num(stats::percentile(&v, 50.0)), "p95": num(stats::percentile(&v, 95.0)),
    })
}

fn period_key(label: &str, period: &str) -> Option<String> {
    let n = match period {
        "hour" => 13,
        "day" => 10,
        "month" => 7,
        "year" => 4,
        _ => return None,
    };
    label.get(..n).map(str::to_string)
}

fn aggregate(v: &[f64], how: &str) -> f64 {
    let f = stats::finite(v);
    if f.is_empty() {
        return f64::NAN;
    }
    match how {
        "sum" => f.iter().sum(),
        "max" => f.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        "min" => f.iter().copied().fold(f64::INFINITY, f64::min),
        "count" => f.len() as f64,
        _ => stats::mean(&f),
    }
}

fn labelled(c: &OpCall<'_>, name: &str) -> Result<(Series, Vec<String>)> {
    let series = c.series(name)?;
    let Some(times) = series.times.clone() else {
        return Err(c.refuse(
            json!({"time_axis_missing": {"argument": name}}),
            format!("`{name}` needs a time axis: give {{path, field, time_field}}"),
        ));
    };
    Ok((series, times))
}

/// GEV parameters (location ξ, scale α, shape k in Hosking's sign: k > 0 is bounded above).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Gev {
    /// Location.
    pub loc: f64,
    /// Scale.
    pub scale: f64,
    /// Shape (Hosking's k; scipy's c has the same sign).
    pub k: f64,
}

impl Gev {
    /// L-moment fit (Hosking, Wallis & Wood 1985).
    pub fn fit(x: &[f64]) -> Option<Gev> {
        let (l1, l2, t3) = stats::l_moments(x)?;
        let c = 2.0 / (3.0 + t3) - 2f64.ln() / 3f64.ln();
        let k = 7.8590 * c + 2.9554 * c * c;
        let g = stats::ln_gamma(1.0 + k).exp();
        let scale = l2 * k / ((1.0 - 2f64.powf(-k)) * g);
        let loc = l1 - scale * (1.0 - g) / k;
        (scale > 0.0 && scale.is_finite()).then_some(Gev { loc, scale, k })
    }

    /// Quantile for non-exceedance probability p.
    pub fn quantile(&self, p: f64) -> f64 {
        let y = -(p.ln());
        if self.k.abs() < 1e-9 {
            self.loc - self.scale * y.ln()
        } else {
            self.loc + self.scale / self.k * (1.0 - y.powf(self.k))
        }
    }

    /// CDF.
    pub fn cdf(&self, x: f64) -> f64 {
        let z = (x - self.loc) / self.scale;
        if self.k.abs() < 1e-9 {
            (-(-z).exp()).exp()
        } else {
            let t = 1.0 - self.k * z;
            if t <= 0.0 {
                return if self.k > 0.0 { 1.0 } else { 0.0 };
            }
            (-(t.powf(1.0 / self.k))).exp()
        }
    }
}

/// GPD fitted to exceedances y = x − u by L-moments: scale σ and shape ξ
/// (ξ > 0 heavy tail; Hosking & Wallis 1987 with k = −ξ).
pub fn gpd_fit(excess: &[f64]) -> Option<(f64, f64)> {
    let (l1, l2, _) = stats::l_moments(excess)?;
    let k = l1 / l2 - 2.0;
    let sigma = (1.0 + k) * l1;
    (sigma > 0.0).then_some((sigma, -k))
}

fn block_maxima(series: &Series, times: &[String], period: &str) -> Vec<(String, f64)> {
    let mut groups: BTreeMap<String, f64> = BTreeMap::new();
    for (v, t) in series.values.iter().zip(times) {
        if let (true, Some(k)) = (v.is_finite(), period_key(t, period)) {
            let e = groups.entry(k).or_insert(f64::NEG_INFINITY);
            *e = e.max(*v);
        }
    }
    groups.into_iter().collect()
}

fn declustered_peaks(x: &[f64], threshold: f64, r: usize) -> Vec<(usize, f64)> {
    let mut peaks: Vec<(usize, f64)> = Vec::new();
    let mut last_exceed: Option<usize> = None;
    for (i, v) in x.iter().enumerate() {
        if *v > threshold {
            match (peaks.last_mut(), last_exceed) {
                (Some(p), Some(le)) if i - le <= r => {
                    if *v > p.1 {
                        *p = (i, *v);
                    }
                }
                _ => peaks.push((i, *v)),
            }
            last_exceed = Some(i);
        }
    }
    peaks
}

/// The time-series and extreme-value operations.
pub fn operations() -> Vec<Operation> {
    vec![
        Operation::new("ts_describe", F, "Count, missing, min, max, mean, sample std, p5/p50/p95 of a series (inline or a package file column).", vec![s("series", "values")], |c| {
            Ok(describe(&c.series("series")?.values))
        }),
        Operation::new("ts_resample", F, "Aggregate a time-labelled series to hour/day/month/year by sum, mean, max, min or count (ISO labels).", vec![s("series", "values with time_field"), opt("period", Kind::Text, "hour | day | month | year", json!("day")), opt("how", Kind::Text, "sum | mean | max | min | count", json!("mean"))], |c| {
            let (series, times) = labelled(c, "series")?;
            let period = c.text("period")?;
            let how = c.text("how")?;
            let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for (v, t) in series.values.iter().zip(&times) {
                let key = period_key(t, &period).ok_or_else(|| c.invalid("period", format!("`{period}` is not hour/day/month/year, or label `{t}` is too short")))?;
                groups.entry(key).or_default().push(*v);
            }
            let rows: Vec<Value> = groups.iter().map(|(k, v)| json!({"period": k, "value": num(aggregate(v, &how)), "n": v.len()})).collect();
            Ok(json!({"rows": rows, "period": period, "how": how}))
        }),
        Operation::new("ts_rolling", F, "Trailing rolling mean, sum or max over `window` steps (incomplete windows are null).", vec![s("series", "values"), req("window", Kind::Integer, "steps"), opt("how", Kind::Text, "mean | sum | max", json!("mean"))], |c| {
            let x = c.series("series")?;
            let w = c.int("window")?.max(1) as usize;
            need(c, "series", x.values.len(), w)?;
            let how = c.text("how")?;
            let out: Vec<f64> = (0..x.values.len()).map(|i| if i + 1 < w { f64::NAN } else { aggregate(&x.values[i + 1 - w..=i], &how) }).collect();
            let (imax, vmax) = out.iter().enumerate().filter(|(_, v)| v.is_finite()).max_by(|a, b| a.1.total_cmp(b.1)).map(|(i, v)| (i, *v)).unwrap_or((0, f64::NAN));
            Ok(json!({"values": out.iter().map(|v| num(*v)).collect::<Vec<_>>(), "max": num(vmax), "max_end": x.time(imax)}))
        }),
        Operation::new("ts_anomaly", F, "Departure of each value from the mean of a baseline (a separate series, or the record itself).", vec![s("series", "values"), opt("baseline", Kind::Series, "baseline values (default: the record)", Value::Null)], |c| {
            let x = c.series("series")?;
            let base = if c.args().get("baseline").is_some_and(|v| !v.is_null()) { c.series("baseline")?.valid() } else { x.valid() };
            need(c, "baseline", base.len(), 2)?;
            let m = stats::mean(&base);
            Ok(json!({"baseline_mean": m, "anomalies": x.values.iter().map(|v| num(v - m)).collect::<Vec<_>>(), "max_anomaly": num(x.valid().iter().map(|v| v - m).fold(f64::NEG_INFINITY, f64::max))}))
        }),
        Operation::new("ts_percentile_threshold", F, "Baseline percentile threshold: of the whole record, or per calendar day with a centred window (±`window_days`, xclim percentile_doy) when the series has dates.", vec![s("series", "values"), opt("percentile", Kind::Number, "0–100", json!(90.0)), opt("per_calendar_day", Kind::Bool, "per calendar day", json!(false)), opt("window_days", Kind::Integer, "half window, days", json!(2))], |c| {
            let q = c.num("percentile")?;
            if !c.flag("per_calendar_day")? {
                let x = c.series("series")?;
                need(c, "series", x.valid_count(), 10)?;
                return Ok(json!({"threshold": num(stats::percentile(&x.values, q)), "percentile": q}));
            }
            let (series, times) = labelled(c, "series")?;
            let w = c.int("window_days")?.max(0);
            let doy: Vec<Option<i64>> = times.iter().map(|t| chrono::NaiveDate::parse_from_str(t.get(..10).unwrap_or(""), "%Y-%m-%d").ok().map(|d| chrono::Datelike::ordinal(&d) as i64)).collect();
            let mut out = BTreeMap::new();
            for d in 1..=366 {
                let pool: Vec<f64> = series.values.iter().zip(&doy).filter(|(v, dd)| v.is_finite() && dd.is_some_and(|dd| { let diff = (dd - d).rem_euclid(366); diff <= w || 366 - diff <= w })).map(|(v, _)| *v).collect();
                if !pool.is_empty() {
                    out.insert(d, num(stats::percentile(&pool, q)));
                }
            }
            Ok(json!({"threshold_by_day_of_year": out, "percentile": q}))
        }),
        Operation::new("ts_exceedance_count", F, "Number of steps above (or below) a threshold, strictly or inclusively (e.g. hours with T ≥ 30 °C).", vec![s("series", "values"), req("threshold", Kind::Number, "threshold"), opt("below", Kind::Bool, "count values below instead", json!(false)), opt("inclusive", Kind::Bool, "count values equal to the threshold too", json!(false))], |c| {
            let x = c.series("series")?;
            let t = c.num("threshold")?;
            let below = c.flag("below")?;
            let inclusive = c.flag("inclusive")?;
            let n = x.values.iter().filter(|v| (inclusive && **v == t) || if below { **v < t } else { **v > t }).count();
            Ok(json!({"count": n, "valid": x.valid_count(), "share_pct": num(100.0 * n as f64 / x.valid_count() as f64)}))
        }),
        Operation::new("ts_longest_spell", F, "Longest run of consecutive steps above (or below) a threshold, with its start and end labels.", vec![s("series", "values"), req("threshold", Kind::Number, "threshold"), opt("below", Kind::Bool, "spell below instead", json!(false))], |c| {
            let x = c.series("series")?;
            let t = c.num("threshold")?;
            let below = c.flag("below")?;
            let mask: Vec<bool> = x.values.iter().map(|v| if below { *v < t } else { *v > t }).collect();
            let best = runs(&mask).into_iter().max_by_key(|(_, l)| *l);
            Ok(json!({"length": best.map(|b| b.1).unwrap_or(0), "start": best.and_then(|b| x.time(b.0)), "end": best.and_then(|b| x.time(b.0 + b.1 - 1)), "start_index": best.map(|b| b.0)}))
        }),
        Operation::new("ts_events", F, "Threshold events: start, end, duration, peak and integral (Σ excess) of every run above the threshold of at least `min_length` steps.", vec![s("series", "values"), req("threshold", Kind::Number, "threshold"), opt("min_length", Kind::Integer, "steps", json!(1))], |c| {
            let x = c.series("series")?;
            let t = c.num("threshold")?;
            let ml = c.int("min_length")?.max(1) as usize;
            let mask: Vec<bool> = x.values.iter().map(|v| *v > t).collect();
            let events: Vec<Value> = runs(&mask).into_iter().filter(|(_, l)| *l >= ml).map(|(s0, l)| {
                let seg = &x.values[s0..s0 + l];
                json!({"start": x.time(s0), "end": x.time(s0 + l - 1), "start_index": s0, "duration": l, "peak": num(aggregate(seg, "max")), "integral": seg.iter().map(|v| v - t).sum::<f64>()})
            }).collect();
            Ok(json!({"event_count": events.len(), "events": events}))
        }),
        Operation::new("ts_peak", F, "Maximum and minimum values with their time labels (first occurrence).", vec![s("series", "values")], |c| {
            let x = c.series("series")?;
            need(c, "series", x.valid_count(), 1)?;
            let (imax, vmax) = x.values.iter().enumerate().filter(|(_, v)| v.is_finite()).fold((0, f64::NEG_INFINITY), |a, (i, v)| if *v > a.1 { (i, *v) } else { a });
            let (imin, vmin) = x.values.iter().enumerate().filter(|(_, v)| v.is_finite()).fold((0, f64::INFINITY), |a, (i, v)| if *v < a.1 { (i, *v) } else { a });
            Ok(json!({"max": vmax, "max_time": x.time(imax), "max_index": imax, "min": vmin, "min_time": x.time(imin), "min_index": imin}))
        }),
        Operation::new("ts_cumulative", F, "Cumulative sum over the (windowed) series, e.g. event rainfall; missing values count as zero and are reported.", vec![s("series", "values")], |c| {
            let x = c.series("series")?;
            let mut acc = 0.0;
            let cum: Vec<Value> = x.values.iter().map(|v| { if v.is_finite() { acc += v; } num(acc) }).collect();
            Ok(json!({"total": acc, "missing": x.values.len() - x.valid_count(), "cumulative": cum, "first": x.time(0), "last": x.time(x.values.len().saturating_sub(1))}))
        }),
        Operation::new("ts_rate_of_change", F, "Largest change over `lag` steps (rise and fall), e.g. 24 h pressure fall or rapid intensification.", vec![s("series", "values"), opt("lag", Kind::Integer, "steps", json!(1))], |c| {
            let x = c.series("series")?;
            let lag = c.int("lag")?.max(1) as usize;
            need(c, "series", x.values.len(), lag + 1)?;
            let d: Vec<(usize, f64)> = (lag..x.values.len()).map(|i| (i, x.values[i] - x.values[i - lag])).filter(|(_, v)| v.is_finite()).collect();
            let rise = d.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
            let fall = d.iter().copied().min_by(|a, b| a.1.total_cmp(&b.1));
            Ok(json!({"max_rise": rise.map(|r| r.1), "max_rise_end": rise.and_then(|r| x.time(r.0)), "max_fall": fall.map(|f| f.1), "max_fall_end": fall.and_then(|f| x.time(f.0)), "lag": lag}))
        }),
        Operation::new("ts_linear_trend", F, "OLS linear trend of values against step index (or given x), slope per step and per `per` steps (e.g. 10 for per decade of annual data), with r².", vec![s("series", "values"), opt("x", Kind::Numbers, "abscissa (default 0..n)", Value::Null), opt("per", Kind::Number, "scale the slope, e.g. 10 for per decade", json!(1.0))], |c| {
            let y = c.series("series")?.values;
            let x = if c.args().get("x").is_some_and(|v| !v.is_null()) { c.numbers("x")? } else { (0..y.len()).map(|i| i as f64).collect() };
            let (xs, ys): (Vec<f64>, Vec<f64>) = x.iter().zip(&y).filter(|(a, b)| a.is_finite() && b.is_finite()).map(|(a, b)| (*a, *b)).unzip();
            need(c, "series", ys.len(), 3)?;
            let (a, b, r2) = stats::ols(&xs, &ys);
            Ok(json!({"slope": b, "slope_per": b * c.num("per")?, "intercept": a, "r2": r2, "n": ys.len()}))
        }).min_len("series", 3),
        Operation::new("ts_mann_kendall", F, "Mann–Kendall monotonic trend test: S, variance with tie correction, Z, two-sided p-value and Kendall's tau (pymannkendall original_test). Needs ≥ 8 values.", vec![s("series", "values")], |c| {
            let x = c.series("series")?.valid();
            need(c, "series", x.len(), 8)?;
            let (s0, var, z, p) = stats::mann_kendall(&x);
            let n = x.len() as f64;
            Ok(json!({"s": s0, "var_s": var, "z": z, "p_value": p, "tau": s0 / (n * (n - 1.0) / 2.0), "trend": if p < 0.05 { if s0 > 0.0 { "increasing" } else { "decreasing" } } else { "no trend" }}))
        }).min_len("series", 8),
        Operation::new("ts_sens_slope", F, "Theil–Sen slope (median of pairwise slopes) and intercept against step index or given x.", vec![s("series", "values"), opt("x", Kind::Numbers, "abscissa", Value::Null)], |c| {
            let y = c.series("series")?.values;
            let x = if c.args().get("x").is_some_and(|v| !v.is_null()) { c.numbers("x")? } else { (0..y.len()).map(|i| i as f64).collect() };
            let (xs, ys): (Vec<f64>, Vec<f64>) = x.iter().zip(&y).filter(|(a, b)| a.is_finite() && b.is_finite()).map(|(a, b)| (*a, *b)).unzip();
            need(c, "series", ys.len(), 3)?;
            let (slope, intercept) = stats::sens_slope(&xs, &ys);
            Ok(json!({"slope": slope, "intercept": intercept}))
        }),
        Operation::new("ts_seasonal_cycle", F, "Monthly climatology (mean per calendar month) of a dated series, with the months present.", vec![s("series", "values with time_field")], |c| {
            let (series, times) = labelled(c, "series")?;
            let mut groups: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for (v, t) in series.values.iter().zip(&times) {
                if let Some(m) = t.get(5..7) {
                    groups.entry(m.to_string()).or_default().push(*v);
                }
            }
            Ok(json!({"monthly_mean": groups.iter().map(|(k, v)| (k.clone(), num(aggregate(v, "mean")))).collect::<BTreeMap<_, _>>()}))
        }),
        Operation::new("ts_lag_correlation", F, "Pearson cross-correlation of two equally sampled series for lags −max_lag..max_lag (b shifted), and the best lag.", vec![s("a", "first series"), s("b", "second series"), opt("max_lag", Kind::Integer, "steps", json!(5))], |c| {
            let a = c.series("a")?.values;
            let b = c.series("b")?.values;
            let l = c.int("max_lag")?.max(0);
            let mut out = Vec::new();
            for lag in -l..=l {
                let (x, y): (Vec<f64>, Vec<f64>) = (0..a.len() as i64).filter_map(|i| { let j = i + lag; (j >= 0 && (j as usize) < b.len()).then(|| (a[i as usize], b[j as usize])) }).filter(|(p, q)| p.is_finite() && q.is_finite()).unzip();
                if x.len() >= 3 { out.push((lag, stats::pearson(&x, &y))); }
            }
            let best = out.iter().copied().filter(|p| p.1.is_finite()).max_by(|p, q| p.1.abs().total_cmp(&q.1.abs()));
            Ok(json!({"correlations": out.iter().map(|(l, r)| json!({"lag": l, "r": num(*r)})).collect::<Vec<_>>(), "best_lag": best.map(|b| b.0), "best_r": best.map(|b| b.1)}))
        }),
        Operation::new("ts_align", F, "Inner join of two time-labelled series on identical labels (or on a label prefix of `match_chars` characters), giving aligned pairs.", vec![s("a", "first series with time_field"), s("b", "second series with time_field"), opt("match_chars", Kind::Integer, "compare only the first N label characters (0 = whole)", json!(0))], |c| {
            let (sa, ta) = labelled(c, "a")?;
            let (sb, tb) = labelled(c, "b")?;
            let n = c.int("match_chars")?.max(0) as usize;
            let key = |t: &str| if n == 0 { t.to_string() } else { t.chars().take(n).collect() };
            let index: BTreeMap<String, f64> = tb.iter().zip(&sb.values).map(|(t, v)| (key(t), *v)).collect();
            let rows: Vec<Value> = ta.iter().zip(&sa.values).filter_map(|(t, v)| index.get(&key(t)).map(|w| json!({"time": key(t), "a": num(*v), "b": num(*w)}))).collect();
            Ok(json!({"matched": rows.len(), "rows": rows}))
        }),
        Operation::new("eva_block_maxima", F, "Block maxima per year, month or day (pyextremes BM) of a dated series.", vec![s("series", "values with time_field"), opt("block", Kind::Text, "year | month | day", json!("year"))], |c| {
            let (series, times) = labelled(c, "series")?;
            let bm = block_maxima(&series, &times, &c.text("block")?);
            Ok(json!({"maxima": bm.iter().map(|(k, v)| json!({"block": k, "max": v})).collect::<Vec<_>>(), "blocks": bm.len()}))
        }),
        Operation::new("eva_peaks_over_threshold", F, "Declustered peaks over a threshold (pyextremes POT): exceedances closer than `r` steps belong to one cluster whose maximum is kept.", vec![s("series", "values"), req("threshold", Kind::Number, "threshold"), opt("r", Kind::Integer, "declustering run length, steps", json!(24))], |c| {
            let x = c.series("series")?;
            let peaks = declustered_peaks(&x.values, c.num("threshold")?, c.int("r")?.max(0) as usize);
            Ok(json!({"peaks": peaks.iter().map(|(i, v)| json!({"time": x.time(*i), "index": i, "value": v})).collect::<Vec<_>>(), "count": peaks.len()}))
        }),
        Operation::new("eva_fit_gev", F, "GEV fit to block maxima by L-moments (Hosking 1985): location, scale, shape (Hosking's k; scipy genextreme c has the same sign). Needs ≥ 10 maxima.", vec![s("maxima", "block maxima")], |c| {
            let x = c.series("maxima")?.valid();
            need(c, "maxima", x.len(), 10)?;
            let g = Gev::fit(&x).ok_or_else(|| crate::DomainError::compute("eva_fit_gev", "L-moment fit failed (degenerate sample)"))?;
            Ok(json!({"location": g.loc, "scale": g.scale, "shape_k": g.k, "method": "l-moments", "n": x.len()}))
        }).min_len("maxima", 10),
        Operation::new("eva_fit_gpd", F, "Generalized Pareto fit to excesses over a threshold by L-moments (Hosking & Wallis 1987): scale σ and shape ξ (ξ > 0 heavy tail). Needs ≥ 10 exceedances.", vec![s("series", "values (all, or peaks)"), req("threshold", Kind::Number, "threshold u")], |c| {
            let u = c.num("threshold")?;
            let ex: Vec<f64> = c.series("series")?.valid().into_iter().filter(|v| *v > u).map(|v| v - u).collect();
            need(c, "series", ex.len(), 10)?;
            let (sigma, xi) = gpd_fit(&ex).ok_or_else(|| crate::DomainError::compute("eva_fit_gpd", "L-moment fit failed"))?;
            Ok(json!({"threshold": u, "scale": sigma, "shape_xi": xi, "exceedances": ex.len()}))
        }),
        Operation::new("eva_return_level", F, "Return level for return period T (in blocks) from a GEV fitted by L-moments to block maxima, with a percentile bootstrap CI (fixed seed).", vec![s("maxima", "block maxima"), req("return_period", Kind::Number, "T in blocks (years)"), opt("bootstrap", Kind::Integer, "resamples", json!(500))], |c| {
            let x = c.series("maxima")?.valid();
            need(c, "maxima", x.len(), 10)?;
            let t = c.num("return_period")?;
            if t <= 1.0 { return Err(c.invalid("return_period", "must exceed 1")); }
            let p = 1.0 - 1.0 / t;
            let g = Gev::fit(&x).ok_or_else(|| crate::DomainError::compute("eva_return_level", "fit failed"))?;
            let mut state: u64 = 2026;
            let mut levels = Vec::new();
            for _ in 0..c.int("bootstrap")?.max(0) {
                let sample: Vec<f64> = (0..x.len()).map(|_| { state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); x[((state >> 33) % x.len() as u64) as usize] }).collect();
                if let Some(gb) = Gev::fit(&sample) { levels.push(gb.quantile(p)); }
            }
            Ok(json!({"return_period": t, "return_level": g.quantile(p), "ci95": [num(stats::percentile(&levels, 2.5)), num(stats::percentile(&levels, 97.5))], "gev": {"location": g.loc, "scale": g.scale, "shape_k": g.k}}))
        }).min_len("maxima", 10),
        Operation::new("eva_return_period", F, "Return period (in blocks) of an observed value under a GEV fitted by L-moments to block maxima: T = 1/(1 − F(x)).", vec![s("maxima", "block maxima"), req("value", Kind::Number, "observed value")], |c| {
            let x = c.series("maxima")?.valid();
            need(c, "maxima", x.len(), 10)?;
            let g = Gev::fit(&x).ok_or_else(|| crate::DomainError::compute("eva_return_period", "fit failed"))?;
            let f = g.cdf(c.num("value")?);
            Ok(json!({"non_exceedance_probability": f, "return_period": num(1.0 / (1.0 - f))}))
        }).min_len("maxima", 10),
        Operation::new("eva_mean_residual_life", F, "Mean residual life (mean excess over threshold) for `n_thresholds` thresholds between the 50th and 99th percentiles, for threshold choice.", vec![s("series", "values"), opt("n_thresholds", Kind::Integer, "count", json!(20))], |c| {
            let x = c.series("series")?.valid();
            need(c, "series", x.len(), 20)?;
            let n = c.int("n_thresholds")?.max(2) as usize;
            let (lo, hi) = (stats::percentile(&x, 50.0), stats::percentile(&x, 99.0));
            let rows: Vec<Value> = (0..n).map(|i| {
                let u = lo + (hi - lo) * i as f64 / (n - 1) as f64;
                let ex: Vec<f64> = x.iter().filter(|v| **v > u).map(|v| v - u).collect();
                json!({"threshold": u, "mean_excess": num(stats::mean(&ex)), "exceedances": ex.len()})
            }).collect();
            Ok(json!({"mrl": rows}))
        }),
    ]
}
