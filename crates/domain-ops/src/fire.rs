//! Fire weather and geophysics (paper §3.4): the Canadian Forest Fire
//! Weather Index System (Van Wagner 1987, as xclim `cffwis`), KBDI,
//! McArthur FFDI, HDW, active-fire summaries, and seismology / tsunami /
//! landslide screening relations.

use crate::meteo::es_hpa;
use crate::op::need;
use crate::op::{opt, req, Kind, OpCall, Operation};
use crate::stats::{self, num};
use crate::tables::parse_csv;
use crate::{DomainError, Result};
use earthverse_tool_registry::ToolFamily;
use serde_json::{json, Value};
use std::collections::BTreeMap;

const F: ToolFamily = ToolFamily::FireGeophysics;

/// Fine Fuel Moisture Code (Van Wagner 1987, eqs. 1–10).
pub fn ffmc(t: f64, rh: f64, wind_kmh: f64, rain_mm: f64, ffmc0: f64) -> f64 {
    let mut mo = 147.2 * (101.0 - ffmc0) / (59.5 + ffmc0);
    if rain_mm > 0.5 {
        let rf = rain_mm - 0.5;
        let base = 42.5 * rf * (-100.0 / (251.0 - mo)).exp() * (1.0 - (-6.93 / rf).exp());
        mo = if mo > 150.0 {
            mo + base + 0.0015 * (mo - 150.0).powi(2) * rf.sqrt()
        } else {
            mo + base
        };
        mo = mo.min(250.0);
    }
    let ed = 0.942 * rh.powf(0.679)
        + 11.0 * ((rh - 100.0) / 10.0).exp()
        + 0.18 * (21.1 - t) * (1.0 - (-0.115 * rh).exp());
    let m = if mo > ed {
        let ko = 0.424 * (1.0 - (rh / 100.0).powf(1.7))
            + 0.0694 * wind_kmh.sqrt() * (1.0 - (rh / 100.0).powi(8));
        let kd = ko * 0.581 * (0.0365 * t).exp();
        ed + (mo - ed) * 10f64.powf(-kd)
    } else {
        let ew = 0.618 * rh.powf(0.753)
            + 10.0 * ((rh - 100.0) / 10.0).exp()
            + 0.18 * (21.1 - t) * (1.0 - (-0.115 * rh).exp());
        if mo < ew {
            let k1 = 0.424 * (1.0 - ((100.0 - rh) / 100.0).powf(1.7))
                + 0.0694 * wind_kmh.sqrt() * (1.0 - ((100.0 - rh) / 100.0).powi(8));
            let kw = k1 * 0.581 * (0.0365 * t).exp();
            ew - (ew - mo) * 10f64.powf(-kw)
        } else {
            mo
        }
    };
    (59.5 * (250.0 - m) / (147.2 + m)).clamp(0.0, 101.0)
}

const DMC_DAYLENGTH: [f64; 12] = [
    6.5, 7.5, 9.0, 12.8, 13.9, 13.9, 12.4, 10.9, 9.4, 8.0, 7.0, 6.0,
];
const DC_DAYLENGTH: [f64; 12] = [
    -1.6, -1.6, -1.6, 0.9, 3.8, 5.8, 6.4, 5.0, 2.4, 0.4, -1.6, -1.6,
];

/// Duff Moisture Code (Van Wagner 1987, eqs. 11–17; northern mid-latitude day lengths).
pub fn dmc(t: f64, rh: f64, rain_mm: f64, dmc0: f64, month: usize) -> f64 {
    let t = t.max(-1.1);
    let rk = 1.894 * (t + 1.1) * (100.0 - rh) * DMC_DAYLENGTH[(month.clamp(1, 12)) - 1] * 1e-4;
    let pr = if rain_mm > 1.5 {
        let rw = 0.92 * rain_mm - 1.27;
        let wmi = 20.0 + 280.0 / (0.023 * dmc0).exp();
        let b = if dmc0 <= 33.0 {
            100.0 / (0.5 + 0.3 * dmc0)
        } else if dmc0 <= 65.0 {
            14.0 - 1.3 * dmc0.ln()
        } else {
            6.2 * dmc0.ln() - 17.2
        };
        let wmr = wmi + 1000.0 * rw / (48.77 + b * rw);
        (43.43 * (5.6348 - (wmr - 20.0).ln())).max(0.0)
    } else {
        dmc0
    };
    (pr + rk).max(0.0)
}

/// Drought Code (Van Wagner 1987, eqs. 18–23).
pub fn dc(t: f64, rain_mm: f64, dc0: f64, month: usize) -> f64 {
    let t = t.max(-2.8);
    let pe = ((0.36 * (t + 2.8) + DC_DAYLENGTH[(month.clamp(1, 12)) - 1]) / 2.0).max(0.0);
    let dr = if rain_mm > 2.8 {
        let rw = 0.83 * rain_mm - 1.27;
        let smi = 800.0 * (-dc0 / 400.0).exp();
        (dc0 - 400.0 * (1.0 + 3.937 * rw / smi).ln()).max(0.0)
    } else {
        dc0
    };
    dr + pe
}

/// Initial Spread Index (eqs. 24–26).
pub fn isi(ffmc: f64, wind_kmh: f64) -> f64 {
    let mo = 147.2 * (101.0 - ffmc) / (59.5 + ffmc);
    let ff = 91.9 * (-0.1386 * mo).exp() * (1.0 + mo.powf(5.31) / 4.93e7);
    ff * 0.208 * (0.05039 * wind_kmh).exp()
}

/// Buildup Index (eqs. 27a–b).
pub fn bui(dmc: f64, dc: f64) -> f64 {
    let b = if dmc <= 0.4 * dc {
        0.8 * dmc * dc / (dmc + 0.4 * dc)
    } else {
        dmc - (1.0 - 0.8 * dc / (dmc + 0.4 * dc)) * (0.92 + (0.0114 * dmc).powf(1.7))
    };
    if b.is_finite() {
        b.max(0.0)
    } else {
        0.0
    }
}

/// Fire Weather Index (eqs. 28–30).
pub fn fwi(isi: f64, bui: f64) -> f64 {
    let fd = if bui <= 80.0 {
        0.626 * bui.powf(0.809) + 2.0
    } else {
        1000.0 / (25.0 + 108.64 * (-0.023 * bui).exp())
    };
    let b = 0.1 * isi * fd;
    if b <= 1.0 {
        b
    } else {
        (2.72 * (0.434 * b.ln()).powf(0.647)).exp()
    }
}

/// EFFIS fire danger class of an FWI value.
pub fn fwi_class(v: f64) -> &'static str {
    match v {
        x if x < 5.2 => "very_low",
        x if x < 11.2 => "low",
        x if x < 21.3 => "moderate",
        x if x < 38.0 => "high",
        x if x < 50.0 => "very_high",
        _ => "extreme",
    }
}

/// McArthur Forest Fire Danger Index (Noble, Bary & Gill 1980).
pub fn ffdi(t: f64, rh: f64, wind_kmh: f64, drought_factor: f64) -> f64 {
    2.0 * (-0.450 + 0.987 * drought_factor.ln() - 0.0345 * rh + 0.0338 * t + 0.0234 * wind_kmh)
        .exp()
}

fn ffdi_class(v: f64) -> &'static str {
    match v {
        x if x < 12.0 => "low_moderate",
        x if x < 25.0 => "high",
        x if x < 50.0 => "very_high",
        x if x < 75.0 => "severe",
        x if x < 100.0 => "extreme",
        _ => "catastrophic",
    }
}

fn wx(c: &OpCall<'_>, names: &[&str]) -> Result<Vec<Vec<f64>>> {
    let cols: Vec<Vec<f64>> = names
        .iter()
        .map(|n| c.series(n).map(|s| s.values))
        .collect::<Result<_>>()?;
    let n = cols.first().map(Vec::len).unwrap_or(0);
    for (name, col) in names.iter().zip(&cols) {
        if col.len() != n {
            return Err(c.invalid(name, format!("has {} days, expected {n}", col.len())));
        }
    }
    need(c, names[0], n, 1)?;
    Ok(cols)
}

fn month_of(c: &OpCall<'_>) -> Result<usize> {
    let m = c.int("month")?;
    if !(1..=12).contains(&m) {
        return Err(c.invalid("month", "must be 1–12"));
    }
    Ok(m as usize)
}

/// The fire and geophysics operations.
pub fn operations() -> Vec<Operation> {
    let daily = |n: &'static str, d: &'static str| req(n, Kind::Series, d);
    vec![
        Operation::new("fwi_ffmc", F, "Canadian FWI System Fine Fuel Moisture Code, iterated over daily noon weather from a start value (Van Wagner 1987; xclim cffwis).", vec![daily("t_c", "noon temperature, °C"), daily("rh_pct", "noon RH, %"), daily("wind_kmh", "noon 10 m wind, km/h"), daily("rain_mm", "24 h rain, mm"), opt("ffmc0", Kind::Number, "start value", json!(85.0))], |c| {
            let w = wx(c, &["t_c", "rh_pct", "wind_kmh", "rain_mm"])?;
            let mut v = c.num("ffmc0")?;
            let out: Vec<f64> = (0..w[0].len()).map(|i| { v = ffmc(w[0][i], w[1][i], w[2][i], w[3][i], v); v }).collect();
            Ok(json!({"ffmc": out, "final": v}))
        }),
        Operation::new("fwi_dmc", F, "Duff Moisture Code over daily weather from a start value for a starting month (Van Wagner 1987).", vec![daily("t_c", "°C"), daily("rh_pct", "%"), daily("rain_mm", "mm"), req("month", Kind::Integer, "month of the first day"), opt("dmc0", Kind::Number, "start value", json!(6.0))], |c| {
            let w = wx(c, &["t_c", "rh_pct", "rain_mm"])?;
            let m = month_of(c)?;
            let mut v = c.num("dmc0")?;
            let out: Vec<f64> = (0..w[0].len()).map(|i| { v = dmc(w[0][i], w[1][i], w[2][i], v, m); v }).collect();
            Ok(json!({"dmc": out, "final": v}))
        }),
        Operation::new("fwi_dc", F, "Drought Code over daily weather from a start value (Van Wagner 1987).", vec![daily("t_c", "°C"), daily("rain_mm", "mm"), req("month", Kind::Integer, "month"), opt("dc0", Kind::Number, "start value", json!(15.0))], |c| {
            let w = wx(c, &["t_c", "rain_mm"])?;
            let m = month_of(c)?;
            let mut v = c.num("dc0")?;
            let out: Vec<f64> = (0..w[0].len()).map(|i| { v = dc(w[0][i], w[1][i], v, m); v }).collect();
            Ok(json!({"dc": out, "final": v}))
        }),
        Operation::new("fwi_isi", F, "Initial Spread Index from FFMC and wind speed (km/h).", vec![req("ffmc", Kind::Number, "FFMC"), req("wind_kmh", Kind::Number, "km/h")], |c| {
            Ok(json!({"isi": isi(c.num("ffmc")?, c.num("wind_kmh")?)}))
        }),
        Operation::new("fwi_bui", F, "Buildup Index from DMC and DC.", vec![req("dmc", Kind::Number, "DMC"), req("dc", Kind::Number, "DC")], |c| {
            Ok(json!({"bui": bui(c.num("dmc")?, c.num("dc")?)}))
        }),
        Operation::new("fwi_fwi", F, "Full FWI System for one day (FFMC, DMC, DC, ISI, BUI, FWI) from noon weather and yesterday's codes, with the EFFIS danger class.", vec![req("t_c", Kind::Number, "°C"), req("rh_pct", Kind::Number, "%"), req("wind_kmh", Kind::Number, "km/h"), req("rain_mm", Kind::Number, "mm"), req("month", Kind::Integer, "month"), opt("ffmc0", Kind::Number, "", json!(85.0)), opt("dmc0", Kind::Number, "", json!(6.0)), opt("dc0", Kind::Number, "", json!(15.0))], |c| {
            let (t, h, w, r) = (c.num("t_c")?, c.num("rh_pct")?, c.num("wind_kmh")?, c.num("rain_mm")?);
            if !(0.0..=100.0).contains(&h) { return Err(c.invalid("rh_pct", "must lie in 0–100")); }
            let m = month_of(c)?;
            let f = ffmc(t, h, w, r, c.num("ffmc0")?);
            let d = dmc(t, h, r, c.num("dmc0")?, m);
            let dr = dc(t, r, c.num("dc0")?, m);
            let i = isi(f, w);
            let b = bui(d, dr);
            let v = fwi(i, b);
            Ok(json!({"ffmc": f, "dmc": d, "dc": dr, "isi": i, "bui": b, "fwi": v, "danger_class": fwi_class(v)}))
        }),
        Operation::new("kbdi", F, "Keetch–Byram Drought Index (Keetch & Byram 1968) iterated over daily max temperature and rain (net rain after the first 5.08 mm of a wet spell), in the original 0–800 scale.", vec![daily("tmax_c", "°C"), daily("rain_mm", "mm"), req("annual_rain_mm", Kind::Number, "mean annual rainfall, mm"), opt("kbdi0", Kind::Number, "start value (0–800)", json!(0.0))], |c| {
            let w = wx(c, &["tmax_c", "rain_mm"])?;
            let r_in = c.num("annual_rain_mm")? / 25.4;
            let mut q = c.num("kbdi0")?.clamp(0.0, 800.0);
            let mut spell = 0.0;
            let out: Vec<f64> = (0..w[0].len()).map(|i| {
                let p = w[1][i] / 25.4;
                if p > 0.0 { let before = spell; spell += p; let net = (spell - before.max(0.2)).max(0.0).min(p); q = (q - 100.0 * net).max(0.0); } else { spell = 0.0; }
                let tf = w[0][i] * 9.0 / 5.0 + 32.0;
                if tf > 50.0 { q += (800.0 - q) * (0.968 * (0.0486 * tf).exp() - 8.30) * 1e-3 / (1.0 + 10.88 * (-0.0441 * r_in).exp()); }
                q = q.clamp(0.0, 800.0);
                q
            }).collect();
            Ok(json!({"kbdi": out, "final": q}))
        }),
        Operation::new("mcarthur_ffdi", F, "McArthur Mark 5 Forest Fire Danger Index (Noble et al. 1980) with the Australian rating.", vec![req("t_c", Kind::Number, "°C"), req("rh_pct", Kind::Number, "%"), req("wind_kmh", Kind::Number, "10 m wind, km/h"), req("drought_factor", Kind::Number, "0–10")], |c| {
            let df = c.num("drought_factor")?;
            if !(0.0..=10.0).contains(&df) || df == 0.0 { return Err(c.invalid("drought_factor", "must lie in (0, 10]")); }
            let v = ffdi(c.num("t_c")?, c.num("rh_pct")?, c.num("wind_kmh")?, df);
            Ok(json!({"ffdi": v, "rating": ffdi_class(v)}))
        }),
        Operation::new("hot_dry_windy_index", F, "Hot-Dry-Windy Index (Srock et al. 2018): wind speed (m/s) × vapour pressure deficit (hPa), maximised over the given near-surface levels.", vec![req("t_c", Kind::Numbers, "temperatures of the lowest levels, °C"), req("td_c", Kind::Numbers, "dewpoints, °C"), req("wind_ms", Kind::Numbers, "wind speeds, m/s")], |c| {
            let (t, d, w) = (c.numbers("t_c")?, c.numbers("td_c")?, c.numbers("wind_ms")?);
            if t.len() != d.len() || t.len() != w.len() { return Err(c.invalid("wind_ms", "t_c, td_c and wind_ms must have equal lengths")); }
            need(c, "t_c", t.len(), 1)?;
            let vpd: Vec<f64> = t.iter().zip(&d).map(|(a, b)| es_hpa(*a) - es_hpa(*b)).collect();
            let hdw = vpd.iter().zip(&w).map(|(v, u)| v * u).fold(f64::NEG_INFINITY, f64::max);
            Ok(json!({"hdw": hdw, "max_vpd_hpa": vpd.iter().copied().fold(f64::NEG_INFINITY, f64::max), "max_wind_ms": w.iter().copied().fold(f64::NEG_INFINITY, f64::max)}))
        }),
        Operation::new("hotspot_summary", F, "Active-fire detections (FIRMS-like CSV: latitude, longitude, acq_date, frp, confidence) per day: counts and FRP sums, optionally inside a bounding box and above a confidence.", vec![req("path", Kind::File, "package-relative CSV"), opt("bbox", Kind::Numbers, "[lon_min, lat_min, lon_max, lat_max]", Value::Null), opt("min_confidence", Kind::Number, "numeric confidence threshold", Value::Null)], |c| {
            let (rel, bytes) = c.file_bytes("path")?;
            let t = parse_csv(&bytes).map_err(|m| DomainError::Input { file: rel.clone(), message: m })?;
            let col = |names: &[&str]| names.iter().find_map(|n| t.column(n));
            let (la, lo, dt) = (col(&["latitude", "lat"]), col(&["longitude", "lon"]), col(&["acq_date", "date"]));
            let (Some(la), Some(lo), Some(dt)) = (la, lo, dt) else { return Err(c.refuse(json!({"variable_absent": ["latitude", "longitude", "acq_date"]}), "the CSV lacks latitude/longitude/acq_date columns")); };
            let frp = col(&["frp"]);
            let conf = col(&["confidence"]);
            let bbox = if c.args().get("bbox").is_some_and(|b| !b.is_null()) { Some(c.numbers("bbox")?) } else { None };
            let minc = c.num_opt("min_confidence")?;
            let mut days: BTreeMap<String, (u64, f64)> = BTreeMap::new();
            for r in &t.rows {
                let g = |i: usize| r.get(i).and_then(|s| s.trim().parse::<f64>().ok()).unwrap_or(f64::NAN);
                let (y, x) = (g(la), g(lo));
                if let Some(b) = &bbox { if b.len() == 4 && !(x >= b[0] && y >= b[1] && x <= b[2] && y <= b[3]) { continue; } }
                if let (Some(mc), Some(ci)) = (minc, conf) { if g(ci).is_nan() || g(ci) < mc { continue; } }
                let e = days.entry(r.get(dt).cloned().unwrap_or_default()).or_default();
                e.0 += 1;
                if let Some(fi) = frp { let v = g(fi); if v.is_finite() { e.1 += v; } }
            }
            let total: u64 = days.values().map(|d| d.0).sum();
            let peak = days.iter().max_by_key(|d| d.1 .0).map(|d| d.0.clone());
            Ok(json!({"detections": total, "days": days.iter().map(|(k, (n, f))| json!({"date": k, "count": n, "frp_sum_mw": f})).collect::<Vec<_>>(), "peak_day": peak}))
        }),
        Operation::new("moment_magnitude_energy", F, "Seismic moment M0 = 10^(1.5 Mw + 9.1) N·m (Hanks & Kanamori 1979, IASPEI) and radiated energy log10 E = 1.5 Mw + 4.8 J (Gutenberg–Richter), with the TNT equivalent.", vec![req("mw", Kind::Number, "moment magnitude")], |c| {
            let mw = c.num("mw")?;
            let e = 10f64.powf(1.5 * mw + 4.8);
            Ok(json!({"m0_nm": 10f64.powf(1.5 * mw + 9.1), "energy_j": e, "tnt_tonnes": e / 4.184e9}))
        }),
        Operation::new("gutenberg_richter_b", F, "Gutenberg–Richter b-value by Aki's (1965) maximum likelihood with Utsu's bin correction, completeness Mc by maximum curvature unless given, a-value and Shi & Bolt (1982) uncertainty. Needs ≥ 50 events above Mc.", vec![req("magnitudes", Kind::Series, "catalogue magnitudes"), opt("mc", Kind::Number, "completeness magnitude", Value::Null), opt("bin", Kind::Number, "magnitude bin width", json!(0.1))], |c| {
            let m = c.series("magnitudes")?.valid();
            let dm = c.num("bin")?;
            let mc = match c.num_opt("mc")? {
                Some(v) => v,
                None => {
                    let mut bins: BTreeMap<i64, usize> = BTreeMap::new();
                    for x in &m { *bins.entry((x / dm).round() as i64).or_default() += 1; }
                    bins.iter().max_by_key(|(_, n)| **n).map(|(k, _)| *k as f64 * dm).unwrap_or(f64::NAN)
                }
            };
            let above: Vec<f64> = m.iter().copied().filter(|x| *x >= mc - dm / 2.0 + 1e-9).collect();
            need(c, "magnitudes", above.len(), 50)?;
            let mean = stats::mean(&above);
            let b = std::f64::consts::LOG10_E / (mean - (mc - dm / 2.0));
            let n = above.len() as f64;
            let sigma = 2.3 * b * b * (above.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n * (n - 1.0))).sqrt();
            Ok(json!({"b_value": b, "b_uncertainty": sigma, "a_value": n.log10() + b * mc, "mc": mc, "events_above_mc": above.len()}))
        }),
        Operation::new("omori_decay", F, "Modified Omori law n(t) = K/(t + c)^p fitted to aftershock counts per time bin by least squares in log space over a grid of c.", vec![req("t_days", Kind::Numbers, "bin mid-times since the mainshock, days"), req("counts", Kind::Numbers, "events per unit time in each bin")], |c| {
            let (t, n) = (c.numbers("t_days")?, c.numbers("counts")?);
            if t.len() != n.len() { return Err(c.invalid("counts", "must match t_days")); }
            let pts: Vec<(f64, f64)> = t.iter().zip(&n).filter(|(a, b)| **a > 0.0 && **b > 0.0).map(|(a, b)| (*a, *b)).collect();
            need(c, "counts", pts.len(), 5)?;
            let mut best = (f64::INFINITY, 0.0, 0.0, 0.0);
            for k in 0..=400 {
                let cc = 0.001 * 10f64.powf(k as f64 / 100.0);
                let x: Vec<f64> = pts.iter().map(|(a, _)| (a + cc).ln()).collect();
                let y: Vec<f64> = pts.iter().map(|(_, b)| b.ln()).collect();
                let (a0, slope, _) = stats::ols(&x, &y);
                let sse: f64 = x.iter().zip(&y).map(|(xi, yi)| (yi - a0 - slope * xi).powi(2)).sum();
                if sse < best.0 { best = (sse, cc, -slope, a0.exp()); }
            }
            Ok(json!({"k": best.3, "c_days": best.1, "p": best.2, "sse_log": best.0}))
        }),
        Operation::new("hypocentral_distance", F, "Hypocentral distance √(epicentral² + depth²) from epicentre, depth and site (great circle).", vec![req("eq_lat", Kind::Number, "deg"), req("eq_lon", Kind::Number, "deg"), req("depth_km", Kind::Number, "km"), req("site_lat", Kind::Number, "deg"), req("site_lon", Kind::Number, "deg")], |c| {
            let epi = crate::vector::haversine_km(c.num("eq_lat")?, c.num("eq_lon")?, c.num("site_lat")?, c.num("site_lon")?);
            let d = c.num("depth_km")?;
            Ok(json!({"epicentral_km": epi, "hypocentral_km": epi.hypot(d)}))
        }),
        Operation::new("mmi_from_pga_pgv", F, "Modified Mercalli intensity from peak ground acceleration (cm/s²) and/or velocity (cm/s) by Wald et al. (1999), using the high-intensity branch at MMI ≥ V.", vec![opt("pga_cms2", Kind::Number, "PGA, cm/s²", Value::Null), opt("pgv_cms", Kind::Number, "PGV, cm/s", Value::Null)], |c| {
            let (a, v) = (c.num_opt("pga_cms2")?, c.num_opt("pgv_cms")?);
            if a.is_none() && v.is_none() { return Err(c.invalid("pga_cms2", "give pga_cms2 and/or pgv_cms")); }
            let from_a = a.filter(|x| *x > 0.0).map(|x| { let hi = 3.66 * x.log10() - 1.66; if hi >= 5.0 { hi } else { 2.20 * x.log10() + 1.00 } });
            let from_v = v.filter(|x| *x > 0.0).map(|x| { let hi = 3.47 * x.log10() + 2.35; if hi >= 5.0 { hi } else { 2.10 * x.log10() + 3.40 } });
            Ok(json!({"mmi_from_pga": from_a, "mmi_from_pgv": from_v}))
        }),
        Operation::new("tsunami_travel_time", F, "Tsunami travel time along a path of segments with lengths (km) and mean depths (m) at the shallow-water speed √(g h).", vec![req("segment_km", Kind::Numbers, "segment lengths, km"), req("depth_m", Kind::Numbers, "mean depth of each segment, m")], |c| {
            let (l, h) = (c.numbers("segment_km")?, c.numbers("depth_m")?);
            if l.len() != h.len() { return Err(c.invalid("depth_m", "must match segment_km")); }
            if h.iter().any(|x| x.is_nan() || *x <= 0.0) { return Err(c.refuse(json!({"invalid_depth": "depths must be positive"}), "shallow-water speed needs positive depths")); }
            let s: f64 = l.iter().zip(&h).map(|(a, b)| a * 1000.0 / (crate::meteo::G * b).sqrt()).sum();
            Ok(json!({"travel_time_s": s, "travel_time_h": s / 3600.0, "speeds_kmh": h.iter().map(|b| (crate::meteo::G * b).sqrt() * 3.6).collect::<Vec<_>>()}))
        }),
        Operation::new("slope_failure_screen", F, "Landslide screening: rainfall intensity–duration against Caine's (1980) global threshold I = 14.82 D^−0.39 (mm/h, h) combined with a minimum slope.", vec![req("intensity_mmh", Kind::Number, "mean rainfall intensity, mm/h"), req("duration_h", Kind::Number, "rainfall duration, h"), req("slope_deg", Kind::Number, "slope, degrees"), opt("min_slope_deg", Kind::Number, "susceptible slope", json!(15.0))], |c| {
            let d = c.num("duration_h")?;
            if !(0.167..=500.0).contains(&d) { return Err(c.refuse(json!({"outside_validity_range": {"duration_h": [0.167, 500]}}), "Caine's threshold holds for 10 min to 10 days")); }
            let th = 14.82 * d.powf(-0.39);
            let i = c.num("intensity_mmh")?;
            let steep = c.num("slope_deg")? >= c.num("min_slope_deg")?;
            Ok(json!({"threshold_mmh": th, "exceeds_threshold": i > th, "steep_enough": steep, "screen_positive": i > th && steep, "ratio": num(i / th)}))
        }),
    ]
}
