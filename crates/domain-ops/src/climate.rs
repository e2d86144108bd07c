//! Climate indices (xclim), drought indices (climate-indices SPI/SPEI),
//! evapotranspiration (FAO-56, PyET) and forecast verification
//! (xskillscore / properscoring). Part of the meteorology-and-climate family.

use crate::op::{need, opt, req, Kind, OpCall, Operation};
use crate::stats::{self, num};
use crate::Result;
use earthverse_tool_registry::ToolFamily;
use serde_json::{json, Value};

const F: ToolFamily = ToolFamily::MeteorologyClimate;

/// Lengths of runs of `true`, with their start indices.
pub fn runs(mask: &[bool]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, m) in mask.iter().enumerate() {
        match (m, start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, i - s));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, mask.len() - s));
    }
    out
}

fn series_vals(c: &OpCall<'_>, name: &str) -> Result<(Vec<f64>, Option<Vec<String>>)> {
    let s = c.series(name)?;
    Ok((s.values, s.times))
}

fn threshold_at(th: &[f64], i: usize) -> f64 {
    if th.len() == 1 {
        th[0]
    } else {
        th.get(i).copied().unwrap_or(f64::NAN)
    }
}

fn spell_days(x: &[f64], th: &[f64], min_len: usize, above: bool) -> (usize, usize) {
    let mask: Vec<bool> = x
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let t = threshold_at(th, i);
            if above {
                *v > t
            } else {
                *v < t
            }
        })
        .collect();
    let spells: Vec<(usize, usize)> = runs(&mask)
        .into_iter()
        .filter(|(_, l)| *l >= min_len)
        .collect();
    (spells.iter().map(|(_, l)| l).sum(), spells.len())
}

/// Days of year (1-based) at the 15th of each month (FAO-56 practice).
const MID_MONTH_DOY: [f64; 12] = [
    15.0, 46.0, 74.0, 105.0, 135.0, 166.0, 196.0, 227.0, 258.0, 288.0, 319.0, 349.0,
];
const DAYS_IN_MONTH: [f64; 12] = [
    31.0, 28.0, 31.0, 30.0, 31.0, 30.0, 31.0, 31.0, 30.0, 31.0, 30.0, 31.0,
];

/// Solar declination (rad), FAO-56 eq. 24.
pub fn declination(doy: f64) -> f64 {
    0.409 * (2.0 * std::f64::consts::PI / 365.0 * doy - 1.39).sin()
}

/// Sunset hour angle (rad), FAO-56 eq. 25.
pub fn sunset_hour_angle(lat_rad: f64, doy: f64) -> f64 {
    (-lat_rad.tan() * declination(doy).tan())
        .clamp(-1.0, 1.0)
        .acos()
}

/// Extraterrestrial radiation Ra (MJ m⁻² day⁻¹), FAO-56 eq. 21.
pub fn extraterrestrial_radiation(lat_deg: f64, doy: f64) -> f64 {
    let phi = lat_deg.to_radians();
    let dr = 1.0 + 0.033 * (2.0 * std::f64::consts::PI / 365.0 * doy).cos();
    let d = declination(doy);
    let ws = sunset_hour_angle(phi, doy);
    24.0 * 60.0 / std::f64::consts::PI
        * 0.0820
        * dr
        * (ws * phi.sin() * d.sin() + phi.cos() * d.cos() * ws.sin())
}

/// Slope of the saturation vapour pressure curve Δ (kPa/°C), FAO-56 eq. 13.
pub fn delta_svp(t: f64) -> f64 {
    4098.0 * (0.6108 * (17.27 * t / (t + 237.3)).exp()) / (t + 237.3).powi(2)
}

/// Saturation vapour pressure e°(T) (kPa), FAO-56 eq. 11.
pub fn e0(t: f64) -> f64 {
    0.6108 * (17.27 * t / (t + 237.3)).exp()
}

/// Psychrometric constant γ (kPa/°C) at elevation z (m), FAO-56 eqs. 7–8.
pub fn psychrometric(z: f64) -> f64 {
    let p = 101.3 * ((293.0 - 0.0065 * z) / 293.0).powf(5.26);
    0.665e-3 * p
}

/// Standardises accumulated values per calendar position (12 for monthly)
/// with a fitted CDF, returning Φ⁻¹(F).
fn standardise(
    acc: &[f64],
    period: usize,
    cdf_fit: impl Fn(&[f64]) -> Option<Box<dyn Fn(f64) -> f64>>,
) -> Vec<f64> {
    let mut out = vec![f64::NAN; acc.len()];
    for m in 0..period {
        let sample: Vec<f64> = acc
            .iter()
            .skip(m)
            .step_by(period)
            .copied()
            .filter(|x| x.is_finite())
            .collect();
        if let Some(cdf) = cdf_fit(&sample) {
            for i in (m..acc.len()).step_by(period) {
                if acc[i].is_finite() {
                    out[i] = stats::norm_ppf(cdf(acc[i]).clamp(1e-6, 1.0 - 1e-6));
                }
            }
        }
    }
    out
}

fn rolling_sum(x: &[f64], k: usize) -> Vec<f64> {
    (0..x.len())
        .map(|i| {
            if i + 1 < k {
                f64::NAN
            } else {
                x[i + 1 - k..=i].iter().sum()
            }
        })
        .collect()
}

fn gamma_cdf_fit(sample: &[f64]) -> Option<Box<dyn Fn(f64) -> f64>> {
    let zeros = sample.iter().filter(|x| **x <= 0.0).count() as f64;
    let q = zeros / sample.len().max(1) as f64;
    let (alpha, beta) = stats::gamma_fit_thom(sample)?;
    Some(Box::new(move |x: f64| {
        if x <= 0.0 {
            q
        } else {
            q + (1.0 - q) * stats::gamma_p(alpha, x / beta)
        }
    }))
}

fn loglogistic_cdf_fit(sample: &[f64]) -> Option<Box<dyn Fn(f64) -> f64>> {
    let mut v = sample.to_vec();
    let n = v.len();
    if n < 3 {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let nf = n as f64;
    let mut w = [0.0; 3];
    for (i, x) in v.iter().enumerate() {
        let f = (i as f64 + 1.0 - 0.35) / nf;
        for (s, ws) in w.iter_mut().enumerate() {
            *ws += (1.0 - f).powi(s as i32) * x / nf;
        }
    }
    let beta = (2.0 * w[1] - w[0]) / (6.0 * w[1] - w[0] - 6.0 * w[2]);
    if !beta.is_finite() || beta <= 1.0 {
        return None;
    }
    let g = (stats::ln_gamma(1.0 + 1.0 / beta) + stats::ln_gamma(1.0 - 1.0 / beta)).exp();
    let alpha = (w[0] - 2.0 * w[1]) * beta / g;
    let gamma = w[0] - alpha * g;
    Some(Box::new(move |x: f64| {
        if x <= gamma {
            1e-6
        } else {
            1.0 / (1.0 + (alpha / (x - gamma)).powf(beta))
        }
    }))
}

fn monthly_series(c: &OpCall<'_>, name: &str) -> Result<Vec<f64>> {
    c.series(name).map(|s| s.values)
}

/// The climate-index, drought, evapotranspiration and verification operations.
pub fn operations() -> Vec<Operation> {
    vec![
        Operation::new(
            "heat_wave_frequency",
            F,
            "xclim heat_wave_frequency: number of events with daily Tmin > thresh_tasmin and Tmax > thresh_tasmax for at least `window` consecutive days (defaults 22 °C, 30 °C, 3 days).",
            heat_wave_params(),
            |c| {
                let (mask, w) = heat_mask(c)?;
                let ev: Vec<(usize, usize)> = runs(&mask).into_iter().filter(|(_, l)| *l >= w).collect();
                Ok(json!({"heat_wave_events": ev.len(), "event_days": ev.iter().map(|(_, l)| l).sum::<usize>(), "events": ev.iter().map(|(s, l)| json!({"start_index": s, "length_days": l})).collect::<Vec<_>>()}))
            },
        ),
        Operation::new(
            "heat_wave_max_length",
            F,
            "xclim heat_wave_max_length: longest run of days with Tmin > thresh_tasmin and Tmax > thresh_tasmax (0 when no run reaches `window`).",
            heat_wave_params(),
            |c| {
                let (mask, w) = heat_mask(c)?;
                let longest = runs(&mask).into_iter().map(|(_, l)| l).filter(|l| *l >= w).max().unwrap_or(0);
                Ok(json!({"heat_wave_max_length_days": longest, "units": "days"}))
            },
        ),
        Operation::new(
            "tx_days_above",
            F,
            "Number of days with Tmax strictly above a threshold (xclim tx_days_above; SU25 = 25 °C).",
            vec![req("tasmax", Kind::Series, "daily maximum temperature"), opt("threshold", Kind::Number, "threshold, same units", json!(25.0))],
            |c| {
                let s = c.series("tasmax")?;
                let t = c.num("threshold")?;
                let days = s.values.iter().filter(|v| **v > t).count();
                Ok(json!({"days_above": days, "valid_days": s.valid_count(), "units": "days"}))
            },
        ),
        Operation::new(
            "frost_days",
            F,
            "Number of days with Tmin below 0 °C (xclim frost_days).",
            vec![req("tasmin", Kind::Series, "daily minimum temperature, °C"), opt("threshold", Kind::Number, "°C", json!(0.0))],
            |c| {
                let s = c.series("tasmin")?;
                let t = c.num("threshold")?;
                Ok(json!({"frost_days": s.values.iter().filter(|v| **v < t).count(), "units": "days"}))
            },
        ),
        Operation::new(
            "warm_spell_duration_index",
            F,
            "WSDI (ETCCDI/xclim): days belonging to spells of ≥ `window` consecutive days with Tmax above the calendar-day 90th percentile; the percentile is given per day (array) or as one value.",
            vec![req("tasmax", Kind::Series, "daily maximum temperature"), req("tx90", Kind::Any, "90th-percentile threshold: number or per-day array"), opt("window", Kind::Integer, "days", json!(6))],
            |c| {
                let x = c.series("tasmax")?.values;
                let th = crate::op::vals(c, "tx90")?;
                let (days, spells) = spell_days(&x, &th, c.int("window")? as usize, true);
                Ok(json!({"wsdi_days": days, "spells": spells, "units": "days"}))
            },
        ),
        Operation::new(
            "cold_spell_duration_index",
            F,
            "CSDI (ETCCDI/xclim): days belonging to spells of ≥ `window` consecutive days with Tmin below the calendar-day 10th percentile.",
            vec![req("tasmin", Kind::Series, "daily minimum temperature"), req("tn10", Kind::Any, "10th-percentile threshold: number or per-day array"), opt("window", Kind::Integer, "days", json!(6))],
            |c| {
                let x = c.series("tasmin")?.values;
                let th = crate::op::vals(c, "tn10")?;
                let (days, spells) = spell_days(&x, &th, c.int("window")? as usize, false);
                Ok(json!({"csdi_days": days, "spells": spells, "units": "days"}))
            },
        ),
        Operation::new(
            "degree_days",
            F,
            "Growing (Σ max(T−base, 0)), heating (Σ max(base−T, 0)) or cooling degree days from daily mean temperature (xclim).",
            vec![req("tas", Kind::Series, "daily mean temperature, °C"), opt("kind", Kind::Text, "growing | heating | cooling", json!("growing")), opt("base", Kind::Number, "base temperature, °C (growing default 4, heating 17, cooling 18 in xclim)", Value::Null)],
            |c| {
                let s = c.series("tas")?;
                let kind = c.text("kind")?;
                let (base, above) = match kind.as_str() {
                    "growing" => (c.num_opt("base")?.unwrap_or(4.0), true),
                    "cooling" => (c.num_opt("base")?.unwrap_or(18.0), true),
                    "heating" => (c.num_opt("base")?.unwrap_or(17.0), false),
                    other => return Err(c.invalid("kind", format!("`{other}` is not growing, heating or cooling"))),
                };
                let dd: f64 = s.valid().iter().map(|t| if above { (t - base).max(0.0) } else { (base - t).max(0.0) }).sum();
                Ok(json!({"degree_days": dd, "base_c": base, "kind": kind, "units": "K days"}))
            },
        ),
        Operation::new(
            "max_consecutive_dry_days",
            F,
            "CDD: longest run of days with precipitation below `threshold` (1 mm) (ETCCDI/xclim maximum_consecutive_dry_days).",
            vec![req("pr", Kind::Series, "daily precipitation, mm"), opt("threshold", Kind::Number, "mm/day", json!(1.0))],
            |c| {
                let s = c.series("pr")?;
                let t = c.num("threshold")?;
                let mask: Vec<bool> = s.values.iter().map(|v| *v < t).collect();
                let best = runs(&mask).into_iter().max_by_key(|(_, l)| *l);
                Ok(json!({"cdd_days": best.map(|b| b.1).unwrap_or(0), "start": best.and_then(|b| s.time(b.0).map(str::to_string)), "units": "days"}))
            },
        ),
        Operation::new(
            "max_consecutive_wet_days",
            F,
            "CWD: longest run of days with precipitation ≥ `threshold` (1 mm) (ETCCDI/xclim maximum_consecutive_wet_days).",
            vec![req("pr", Kind::Series, "daily precipitation, mm"), opt("threshold", Kind::Number, "mm/day", json!(1.0))],
            |c| {
                let s = c.series("pr")?;
                let t = c.num("threshold")?;
                let mask: Vec<bool> = s.values.iter().map(|v| *v >= t).collect();
                let best = runs(&mask).into_iter().max_by_key(|(_, l)| *l);
                Ok(json!({"cwd_days": best.map(|b| b.1).unwrap_or(0), "start": best.and_then(|b| s.time(b.0).map(str::to_string)), "units": "days"}))
            },
        ),
        Operation::new(
            "max_n_day_precip",
            F,
            "RxNday: maximum precipitation accumulated over `n` consecutive days (Rx1day, Rx5day), with the window's last time label.",
            vec![req("pr", Kind::Series, "daily precipitation, mm"), opt("n", Kind::Integer, "window length, days", json!(5))],
            |c| {
                let s = c.series("pr")?;
                let n = c.int("n")?.max(1) as usize;
                need(c, "pr", s.values.len(), n)?;
                let sums = rolling_sum(&s.values, n);
                let (i, best) = sums.iter().enumerate().filter(|(_, v)| v.is_finite()).max_by(|a, b| a.1.total_cmp(b.1)).map(|(i, v)| (i, *v)).unwrap_or((0, f64::NAN));
                Ok(json!({"rx_nday_mm": num(best), "n_days": n, "window_end": s.time(i), "units": "mm"}))
            },
        ),
        Operation::new(
            "heavy_precip_days",
            F,
            "Rnnmm: number of days with precipitation ≥ `threshold` mm (R10mm, R20mm).",
            vec![req("pr", Kind::Series, "daily precipitation, mm"), opt("threshold", Kind::Number, "mm/day", json!(10.0))],
            |c| {
                let s = c.series("pr")?;
                let t = c.num("threshold")?;
                Ok(json!({"days": s.values.iter().filter(|v| **v >= t).count(), "threshold_mm": t, "units": "days"}))
            },
        ),
        Operation::new(
            "very_wet_day_total",
            F,
            "R95pTOT/R99pTOT: precipitation on wet days (≥ 1 mm) above the given percentile of wet-day precipitation of a base period (the record itself by default), and its share of the wet-day total.",
            vec![req("pr", Kind::Series, "daily precipitation, mm"), opt("percentile", Kind::Number, "95 or 99", json!(95.0)), opt("base", Kind::Series, "base-period daily precipitation (default: the record)", Value::Null)],
            |c| {
                let s = c.series("pr")?;
                let base = if c.args().get("base").is_some_and(|v| !v.is_null()) { c.series("base")?.values } else { s.values.clone() };
                let wet_base: Vec<f64> = base.into_iter().filter(|v| *v >= 1.0).collect();
                need(c, "base", wet_base.len(), 10)?;
                let th = stats::percentile(&wet_base, c.num("percentile")?);
                let wet: Vec<f64> = s.values.iter().copied().filter(|v| *v >= 1.0).collect();
                let total: f64 = wet.iter().sum();
                let above: f64 = wet.iter().filter(|v| **v > th).sum();
                Ok(json!({"very_wet_total_mm": above, "threshold_mm": th, "share_pct": num(100.0 * above / total), "units": "mm"}))
            },
        ),
        Operation::new(
            "spi",
            F,
            "Standardized Precipitation Index (McKee 1993; climate-indices): k-month sums, a gamma distribution fitted per calendar month (Thom's MLE, mixed with the probability of zero), Φ⁻¹ of the CDF. Needs `min_years` of monthly data (WMO: 30).",
            vec![req("pr_monthly", Kind::Series, "monthly precipitation, starting in January"), opt("scale", Kind::Integer, "accumulation months", json!(3)), opt("min_years", Kind::Integer, "minimum calibration years", json!(30))],
            |c| {
                let x = monthly_series(c, "pr_monthly")?;
                need(c, "pr_monthly", x.iter().filter(|v| v.is_finite()).count(), 12 * c.int("min_years")?.max(1) as usize)?;
                let acc = rolling_sum(&x, c.int("scale")?.max(1) as usize);
                let spi = standardise(&acc, 12, gamma_cdf_fit);
                Ok(json!({"spi": spi.iter().map(|v| num(*v)).collect::<Vec<_>>(), "latest": num(*spi.last().unwrap_or(&f64::NAN)), "min": num(stats::finite(&spi).into_iter().fold(f64::INFINITY, f64::min)), "units": "1"}))
            },
        ),
        Operation::new(
            "spei",
            F,
            "Standardized Precipitation-Evapotranspiration Index (Vicente-Serrano 2010): k-month sums of P − PET, a log-logistic distribution fitted per calendar month by probability-weighted moments, Φ⁻¹ of the CDF.",
            vec![req("pr_monthly", Kind::Series, "monthly precipitation, mm"), req("pet_monthly", Kind::Series, "monthly PET, mm"), opt("scale", Kind::Integer, "accumulation months", json!(3)), opt("min_years", Kind::Integer, "minimum calibration years", json!(30))],
            |c| {
                let p = monthly_series(c, "pr_monthly")?;
                let e = monthly_series(c, "pet_monthly")?;
                if p.len() != e.len() {
                    return Err(c.invalid("pet_monthly", "must match pr_monthly in length"));
                }
                need(c, "pr_monthly", p.iter().filter(|v| v.is_finite()).count(), 12 * c.int("min_years")?.max(1) as usize)?;
                let d: Vec<f64> = p.iter().zip(&e).map(|(a, b)| a - b).collect();
                let acc = rolling_sum(&d, c.int("scale")?.max(1) as usize);
                let spei = standardise(&acc, 12, loglogistic_cdf_fit);
                Ok(json!({"spei": spei.iter().map(|v| num(*v)).collect::<Vec<_>>(), "latest": num(*spei.last().unwrap_or(&f64::NAN)), "units": "1"}))
            },
        ),
        Operation::new(
            "pet_thornthwaite",
            F,
            "Thornthwaite (1948) monthly potential evapotranspiration (mm/month) from monthly mean temperature (starting in January) and latitude, with mid-month day length (climate-indices).",
            vec![req("tas_monthly", Kind::Series, "monthly mean temperature, °C"), req("lat", Kind::Number, "latitude, degrees")],
            |c| {
                let t = monthly_series(c, "tas_monthly")?;
                need(c, "tas_monthly", t.iter().filter(|v| v.is_finite()).count(), 12)?;
                let lat = c.num("lat")?.to_radians();
                let mut clim = [0.0; 12];
                for (m, slot) in clim.iter_mut().enumerate() {
                    *slot = stats::mean(&stats::finite(&t.iter().skip(m).step_by(12).copied().collect::<Vec<_>>()));
                }
                let i: f64 = clim.iter().map(|x| (x.max(0.0) / 5.0).powf(1.514)).sum();
                let a = 6.75e-7 * i.powi(3) - 7.71e-5 * i * i + 1.792e-2 * i + 0.492_39;
                let pet: Vec<f64> = t.iter().enumerate().map(|(k, tm)| {
                    let m = k % 12;
                    let daylen = 24.0 / std::f64::consts::PI * sunset_hour_angle(lat, MID_MONTH_DOY[m]);
                    if *tm <= 0.0 { 0.0 } else { 16.0 * (daylen / 12.0) * (DAYS_IN_MONTH[m] / 30.0) * (10.0 * tm / i).powf(a) }
                }).collect();
                Ok(json!({"pet_mm": pet.iter().map(|v| num(*v)).collect::<Vec<_>>(), "heat_index_I": i, "exponent_a": a, "units": "mm/month"}))
            },
        ),
        Operation::new(
            "pet_hargreaves",
            F,
            "Hargreaves–Samani reference evapotranspiration (FAO-56 eq. 52): 0.0023 (Tmean + 17.8) √(Tmax − Tmin) · 0.408 Ra, with Ra from latitude and day of year (FAO-56 eq. 21).",
            vec![n2("tmin_c", "daily minimum temperature, °C"), n2("tmax_c", "daily maximum temperature, °C"), req("lat", Kind::Number, "latitude, degrees"), n2("doy", "day of year (1–366)")],
            |c| {
                let lat = c.num("lat")?;
                Ok(json!({"et0_mm_day": crate_elementwise(c, &["tmin_c", "tmax_c", "doy"], |x| {
                    let ra = extraterrestrial_radiation(lat, x[2]);
                    0.0023 * ((x[0] + x[1]) / 2.0 + 17.8) * (x[1] - x[0]).max(0.0).sqrt() * 0.408 * ra
                })?, "units": "mm/day"}))
            },
        ),
        Operation::new(
            "extraterrestrial_radiation",
            F,
            "Extraterrestrial radiation Ra (MJ m⁻² day⁻¹) and maximum daylight hours from latitude and day of year (FAO-56 eqs. 21–25, 34).",
            vec![req("lat", Kind::Number, "latitude, degrees"), req("doy", Kind::Number, "day of year")],
            |c| {
                let (lat, doy) = (c.num("lat")?, c.num("doy")?);
                Ok(json!({"ra_mj_m2_day": extraterrestrial_radiation(lat, doy), "daylight_hours": 24.0 / std::f64::consts::PI * sunset_hour_angle(lat.to_radians(), doy), "units": "MJ m-2 day-1"}))
            },
        ),
        Operation::new(
            "et0_fao56",
            F,
            "FAO-56 Penman–Monteith daily reference evapotranspiration (eq. 6). Net radiation is given (`rn`) or derived from solar radiation `rs` with latitude, day of year and elevation (eqs. 21–39). Humidity from RHmin/RHmax (eq. 17).",
            vec![req("tmin_c", Kind::Number, "°C"), req("tmax_c", Kind::Number, "°C"), req("rh_min", Kind::Number, "%"), req("rh_max", Kind::Number, "%"), req("u2", Kind::Number, "wind at 2 m, m/s"), opt("rn", Kind::Number, "net radiation, MJ m-2 day-1", Value::Null), opt("rs", Kind::Number, "solar radiation, MJ m-2 day-1", Value::Null), opt("lat", Kind::Number, "latitude (with rs)", Value::Null), opt("doy", Kind::Number, "day of year (with rs)", Value::Null), opt("elevation_m", Kind::Number, "m", json!(0.0)), opt("g", Kind::Number, "soil heat flux, MJ m-2 day-1", json!(0.0))],
            |c| {
                let (tn, tx) = (c.num("tmin_c")?, c.num("tmax_c")?);
                let z = c.num("elevation_m")?;
                let t = (tn + tx) / 2.0;
                let es = (e0(tx) + e0(tn)) / 2.0;
                let ea = (e0(tn) * c.num("rh_max")? / 100.0 + e0(tx) * c.num("rh_min")? / 100.0) / 2.0;
                let rn = match (c.num_opt("rn")?, c.num_opt("rs")?) {
                    (Some(rn), _) => rn,
                    (None, Some(rs)) => {
                        let lat = c.num_opt("lat")?.ok_or_else(|| c.invalid("lat", "needed with rs"))?;
                        let doy = c.num_opt("doy")?.ok_or_else(|| c.invalid("doy", "needed with rs"))?;
                        let ra = extraterrestrial_radiation(lat, doy);
                        let rso = (0.75 + 2e-5 * z) * ra;
                        let sigma = 4.903e-9;
                        let rnl = sigma * ((tx + 273.16).powi(4) + (tn + 273.16).powi(4)) / 2.0 * (0.34 - 0.14 * ea.sqrt()) * (1.35 * (rs / rso).min(1.0) - 0.35);
                        0.77 * rs - rnl
                    }
                    (None, None) => return Err(c.invalid("rn", "give rn, or rs with lat and doy")),
                };
                let d = delta_svp(t);
                let g = psychrometric(z);
                let u2 = c.num("u2")?;
                let et0 = (0.408 * d * (rn - c.num("g")?) + g * 900.0 / (t + 273.0) * u2 * (es - ea)) / (d + g * (1.0 + 0.34 * u2));
                Ok(json!({"et0_mm_day": et0, "rn_mj_m2_day": rn, "es_kpa": es, "ea_kpa": ea, "delta_kpa_per_c": d, "gamma_kpa_per_c": g, "units": "mm/day"}))
            },
        ),
        Operation::new(
            "et0_priestley_taylor",
            F,
            "Priestley–Taylor evapotranspiration α Δ/(Δ+γ) (Rn − G)/λ with α = 1.26, λ = 2.45 MJ/kg (PyET priestley_taylor).",
            vec![n2("t_c", "mean temperature, °C"), n2("rn", "net radiation, MJ m-2 day-1"), opt("g", Kind::Number, "soil heat flux", json!(0.0)), opt("elevation_m", Kind::Number, "m", json!(0.0)), opt("alpha", Kind::Number, "Priestley–Taylor coefficient", json!(1.26))],
            |c| {
                let (g0, z, alpha) = (c.num("g")?, c.num("elevation_m")?, c.num("alpha")?);
                let gamma = psychrometric(z);
                Ok(json!({"et_mm_day": crate_elementwise(c, &["t_c", "rn"], |x| {
                    let d = delta_svp(x[0]);
                    alpha * d / (d + gamma) * (x[1] - g0) / 2.45
                })?, "units": "mm/day"}))
            },
        ),
        Operation::new(
            "et0_oudin",
            F,
            "Oudin et al. (2005) potential evapotranspiration Ra/(λρ)·(T+5)/100 when T > −5 °C, else 0 (PyET oudin), Ra from latitude and day of year.",
            vec![n2("t_c", "mean temperature, °C"), req("lat", Kind::Number, "latitude"), n2("doy", "day of year")],
            |c| {
                let lat = c.num("lat")?;
                Ok(json!({"pe_mm_day": crate_elementwise(c, &["t_c", "doy"], |x| {
                    if x[0] + 5.0 <= 0.0 { 0.0 } else { extraterrestrial_radiation(lat, x[1]) / (2.45 * 1000.0) * 1000.0 * (x[0] + 5.0) / 100.0 }
                })?, "units": "mm/day"}))
            },
        ),
        Operation::new(
            "verif_continuous",
            F,
            "Continuous verification of forecasts against observations (xskillscore): RMSE, MAE, mean bias, Pearson and Spearman correlation over pairs where both are valid.",
            vec![req("forecast", Kind::Series, "forecast values"), req("observed", Kind::Series, "observed values")],
            |c| {
                let (f, o) = paired(c, "forecast", "observed")?;
                need(c, "forecast", f.len(), 2)?;
                let err: Vec<f64> = f.iter().zip(&o).map(|(a, b)| a - b).collect();
                Ok(json!({"n": f.len(), "rmse": stats::mean(&err.iter().map(|e| e * e).collect::<Vec<_>>()).sqrt(), "mae": stats::mean(&err.iter().map(|e| e.abs()).collect::<Vec<_>>()), "bias": stats::mean(&err), "pearson_r": num(stats::pearson(&f, &o)), "spearman_r": num(stats::spearman(&f, &o))}))
            },
        ),
        Operation::new(
            "verif_contingency",
            F,
            "2×2 contingency verification of yes/no events (forecast ≥ threshold vs observed ≥ threshold): hits, misses, false alarms, correct negatives, POD, FAR, CSI, HSS and frequency bias.",
            vec![req("forecast", Kind::Series, "forecast values (or 0/1)"), req("observed", Kind::Series, "observed values (or 0/1)"), opt("threshold", Kind::Number, "event threshold", json!(0.5))],
            |c| {
                let (f, o) = paired(c, "forecast", "observed")?;
                let t = c.num("threshold")?;
                let (mut a, mut b, mut cc, mut d) = (0.0, 0.0, 0.0, 0.0);
                for (x, y) in f.iter().zip(&o) {
                    match (*x >= t, *y >= t) {
                        (true, true) => a += 1.0,
                        (true, false) => b += 1.0,
                        (false, true) => cc += 1.0,
                        (false, false) => d += 1.0,
                    }
                }
                let n = a + b + cc + d;
                let hss = 2.0 * (a * d - b * cc) / ((a + cc) * (cc + d) + (a + b) * (b + d));
                Ok(json!({"hits": a, "false_alarms": b, "misses": cc, "correct_negatives": d, "pod": num(a / (a + cc)), "far": num(b / (a + b)), "csi": num(a / (a + b + cc)), "hss": num(hss), "frequency_bias": num((a + b) / (a + cc)), "n": n}))
            },
        ),
        Operation::new(
            "verif_brier",
            F,
            "Brier score of probability forecasts against binary outcomes (observed ≥ threshold), with the climatological reference and Brier skill score.",
            vec![req("probability", Kind::Series, "forecast probabilities 0–1"), req("observed", Kind::Series, "observed values or 0/1"), opt("threshold", Kind::Number, "event threshold on observed", json!(0.5))],
            |c| {
                let (p, o) = paired(c, "probability", "observed")?;
                if p.iter().any(|x| !(0.0..=1.0).contains(x)) {
                    return Err(c.invalid("probability", "probabilities must lie in [0, 1]"));
                }
                let t = c.num("threshold")?;
                let y: Vec<f64> = o.iter().map(|v| if *v >= t { 1.0 } else { 0.0 }).collect();
                let bs = stats::mean(&p.iter().zip(&y).map(|(a, b)| (a - b).powi(2)).collect::<Vec<_>>());
                let base = stats::mean(&y);
                let bs_ref = base * (1.0 - base);
                Ok(json!({"brier_score": bs, "climatology_brier": bs_ref, "brier_skill_score": num(1.0 - bs / bs_ref), "n": p.len()}))
            },
        ),
        Operation::new(
            "verif_crps_ensemble",
            F,
            "Continuous ranked probability score of an ensemble forecast, CRPS = E|X − y| − ½ E|X − X′| (properscoring crps_ensemble, as xskillscore), averaged over cases.",
            vec![req("ensemble", Kind::Any, "array of cases, each an array of members"), req("observed", Kind::Numbers, "one observation per case")],
            |c| {
                let obs = c.numbers("observed")?;
                let ens = ensemble(c)?;
                if ens.len() != obs.len() {
                    return Err(c.invalid("ensemble", "needs one member array per observation"));
                }
                let per: Vec<f64> = ens.iter().zip(&obs).map(|(m, y)| crps(m, *y)).collect();
                Ok(json!({"crps_mean": stats::mean(&per), "crps": per}))
            },
        ),
        Operation::new(
            "verif_rank_histogram",
            F,
            "Talagrand rank histogram: counts of the observation's rank among ensemble members (ties broken at random with a fixed seed as xskillscore, here by the midpoint rank).",
            vec![req("ensemble", Kind::Any, "array of cases, each an array of members"), req("observed", Kind::Numbers, "one observation per case")],
            |c| {
                let obs = c.numbers("observed")?;
                let ens = ensemble(c)?;
                if ens.len() != obs.len() {
                    return Err(c.invalid("ensemble", "needs one member array per observation"));
                }
                let m = ens.iter().map(Vec::len).max().unwrap_or(0);
                let mut hist = vec![0usize; m + 1];
                for (members, y) in ens.iter().zip(&obs) {
                    let below = members.iter().filter(|x| **x < *y).count();
                    let equal = members.iter().filter(|x| **x == *y).count();
                    let rank = below + equal / 2;
                    if rank < hist.len() {
                        hist[rank] += 1;
                    }
                }
                Ok(json!({"rank_counts": hist, "cases": obs.len()}))
            },
        ),
    ]
}

fn n2(name: &'static str, doc: &'static str) -> crate::op::Param {
    req(name, Kind::Any, doc)
}

fn crate_elementwise(c: &OpCall<'_>, names: &[&str], f: impl Fn(&[f64]) -> f64) -> Result<Value> {
    let inputs: Vec<Vec<f64>> = names
        .iter()
        .map(|n| crate::op::vals(c, n))
        .collect::<Result<_>>()?;
    let n = inputs.iter().map(Vec::len).max().unwrap_or(0);
    let out: Vec<Value> = (0..n)
        .map(|i| {
            let row: Vec<f64> = inputs
                .iter()
                .map(|v| {
                    if v.len() == 1 {
                        v[0]
                    } else {
                        v.get(i).copied().unwrap_or(f64::NAN)
                    }
                })
                .collect();
            num(f(&row))
        })
        .collect();
    let scalar = names
        .iter()
        .all(|n| !matches!(c.args().get(*n), Some(Value::Array(_))));
    Ok(if scalar && out.len() == 1 {
        out[0].clone()
    } else {
        Value::Array(out)
    })
}

/// Parameters shared by the xclim heat-wave indices.
fn heat_wave_params() -> Vec<crate::op::Param> {
    vec![
        req("tasmin", Kind::Series, "daily minimum temperature, °C"),
        req("tasmax", Kind::Series, "daily maximum temperature, °C"),
        opt("thresh_tasmin", Kind::Number, "°C", json!(22.0)),
        opt("thresh_tasmax", Kind::Number, "°C", json!(30.0)),
        opt(
            "window",
            Kind::Integer,
            "minimum event length, days",
            json!(3),
        ),
    ]
}

fn heat_mask(c: &OpCall<'_>) -> Result<(Vec<bool>, usize)> {
    let (tn, _) = series_vals(c, "tasmin")?;
    let (tx, _) = series_vals(c, "tasmax")?;
    if tn.len() != tx.len() {
        return Err(c.invalid(
            "tasmax",
            format!("has {} days but tasmin has {}", tx.len(), tn.len()),
        ));
    }
    let (a, b) = (c.num("thresh_tasmin")?, c.num("thresh_tasmax")?);
    let w = c.int("window")?.max(1) as usize;
    need(c, "tasmax", tx.iter().filter(|v| v.is_finite()).count(), w)?;
    Ok((
        tn.iter().zip(&tx).map(|(n, x)| *n > a && *x > b).collect(),
        w,
    ))
}

fn paired(c: &OpCall<'_>, a: &str, b: &str) -> Result<(Vec<f64>, Vec<f64>)> {
    let x = c.series(a)?.values;
    let y = c.series(b)?.values;
    if x.len() != y.len() {
        return Err(c.invalid(
            b,
            format!("has {} values but `{a}` has {}", y.len(), x.len()),
        ));
    }
    Ok(x.into_iter()
        .zip(y)
        .filter(|(p, q)| p.is_finite() && q.is_finite())
        .unzip())
}

fn ensemble(c: &OpCall<'_>) -> Result<Vec<Vec<f64>>> {
    let Some(Value::Array(cases)) = c.args().get("ensemble") else {
        return Err(c.invalid("ensemble", "expected an array of member arrays"));
    };
    cases
        .iter()
        .map(|case| match case {
            Value::Array(m) => Ok(m.iter().filter_map(crate::op::as_f64).collect()),
            _ => Err(c.invalid("ensemble", "each case must be an array of members")),
        })
        .collect()
}

/// CRPS of one ensemble against one observation.
pub fn crps(members: &[f64], y: f64) -> f64 {
    let m = members.len() as f64;
    if m == 0.0 {
        return f64::NAN;
    }
    let a: f64 = members.iter().map(|x| (x - y).abs()).sum::<f64>() / m;
    let mut b = 0.0;
    for x in members {
        for z in members {
            b += (x - z).abs();
        }
    }
    a - 0.5 * b / (m * m)
}
