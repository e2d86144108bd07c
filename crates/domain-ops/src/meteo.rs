//! Meteorology and climate (paper §3.4): thermodynamics (MetPy, Bolton
//! 1980), heat stress (NWS, thermofeel, Environment Canada), xclim-style
//! climate indices, drought indices (SPI, SPEI), evapotranspiration (FAO-56,
//! PyET) and forecast verification (xskillscore).

use crate::op::{opt, req, vals, Kind, OpCall, Operation};
use crate::stats;
use crate::{DomainError, Result};
use earthverse_tool_registry::ToolFamily;
use serde_json::{json, Value};

const F: ToolFamily = ToolFamily::MeteorologyClimate;
/// Rd / cp for dry air (MetPy `kappa`).
pub const KAPPA: f64 = 0.285_714_3;
/// Gas constant of dry air, J kg⁻¹ K⁻¹.
pub const RD: f64 = 287.047_49;
/// Standard gravity, m s⁻².
pub const G: f64 = 9.806_65;

/// Saturation vapour pressure over water, hPa (Bolton 1980, eq. 10).
pub fn es_hpa(t_c: f64) -> f64 {
    6.112 * (17.67 * t_c / (t_c + 243.5)).exp()
}

/// Dewpoint (°C) from vapour pressure (hPa), inverse of [`es_hpa`].
pub fn dewpoint_from_e(e_hpa: f64) -> f64 {
    let l = (e_hpa / 6.112).ln();
    243.5 * l / (17.67 - l)
}

/// Mixing ratio (kg/kg) from vapour pressure and pressure (hPa).
pub fn mixing_ratio(e_hpa: f64, p_hpa: f64) -> f64 {
    0.622 * e_hpa / (p_hpa - e_hpa)
}

/// NWS heat index (°F) from temperature (°F) and RH (%): Steadman's simple
/// form, then Rothfusz's regression with the NWS adjustments.
pub fn heat_index_f(t: f64, rh: f64) -> f64 {
    let simple = 0.5 * (t + 61.0 + (t - 68.0) * 1.2 + rh * 0.094);
    if (simple + t) / 2.0 < 80.0 {
        return simple;
    }
    let mut hi = -42.379 + 2.049_015_23 * t + 10.143_331_27 * rh
        - 0.224_755_41 * t * rh
        - 0.006_837_83 * t * t
        - 0.054_817_17 * rh * rh
        + 0.001_228_74 * t * t * rh
        + 0.000_852_82 * t * rh * rh
        - 0.000_001_99 * t * t * rh * rh;
    if rh < 13.0 && (80.0..=112.0).contains(&t) {
        hi -= ((13.0 - rh) / 4.0) * ((17.0 - (t - 95.0).abs()) / 17.0).sqrt();
    } else if rh > 85.0 && (80.0..=87.0).contains(&t) {
        hi += ((rh - 85.0) / 10.0) * ((87.0 - t) / 5.0);
    }
    hi
}

/// NWS wind chill (°F) from temperature (°F) and wind (mph).
pub fn wind_chill_f(t: f64, v_mph: f64) -> f64 {
    let p = v_mph.powf(0.16);
    35.74 + 0.6215 * t - 35.75 * p + 0.4275 * t * p
}

fn c_to_f(c: f64) -> f64 {
    c * 9.0 / 5.0 + 32.0
}

fn f_to_c(f: f64) -> f64 {
    (f - 32.0) * 5.0 / 9.0
}

/// Applies `f` elementwise to equally long inputs; returns a number when
/// every input was a scalar, else an array (NaN → null).
fn elementwise(c: &OpCall<'_>, names: &[&str], f: impl Fn(&[f64]) -> f64) -> Result<Value> {
    let inputs: Vec<Vec<f64>> = names.iter().map(|n| vals(c, n)).collect::<Result<_>>()?;
    let n = inputs.iter().map(Vec::len).max().unwrap_or(0);
    for (name, v) in names.iter().zip(&inputs) {
        if v.len() != n && v.len() != 1 {
            return Err(c.invalid(name, format!("has {} values; expected 1 or {n}", v.len())));
        }
    }
    let out: Vec<f64> = (0..n)
        .map(|i| {
            let row: Vec<f64> = inputs
                .iter()
                .map(|v| if v.len() == 1 { v[0] } else { v[i] })
                .collect();
            f(&row)
        })
        .collect();
    let all_scalar = names
        .iter()
        .all(|n| !matches!(c.args().get(*n), Some(Value::Array(_))));
    Ok(if all_scalar && out.len() == 1 {
        stats::num(out[0])
    } else {
        Value::Array(out.into_iter().map(stats::num).collect())
    })
}

fn n(name: &'static str, doc: &'static str) -> crate::op::Param {
    req(name, Kind::Any, doc)
}

/// The meteorology-and-climate operations.
pub fn operations() -> Vec<Operation> {
    let mut ops = vec![
        Operation::new(
            "wind_speed",
            F,
            "Horizontal wind speed sqrt(u²+v²) from u and v components (MetPy wind_speed); numbers or arrays, same units out as in.",
            vec![n("u", "eastward component"), n("v", "northward component")],
            |c| Ok(json!({"wind_speed": elementwise(c, &["u", "v"], |x| x[0].hypot(x[1]))?})),
        ),
        Operation::new(
            "wind_direction",
            F,
            "Meteorological wind direction (degrees the wind blows FROM, 0–360, calm = 0) from u and v (MetPy wind_direction).",
            vec![n("u", "eastward component"), n("v", "northward component")],
            |c| {
                Ok(json!({"wind_direction_deg": elementwise(c, &["u", "v"], |x| {
                    if x[0] == 0.0 && x[1] == 0.0 {
                        return 0.0;
                    }
                    let d = 90.0 - (-x[1]).atan2(-x[0]).to_degrees();
                    let d = d.rem_euclid(360.0);
                    if d == 0.0 { 360.0 } else { d }
                })?, "units": "degree"}))
            },
        ),
        Operation::new(
            "dewpoint_from_rh",
            F,
            "Dewpoint (°C) from air temperature (°C) and relative humidity (%) via Bolton's saturation vapour pressure (MetPy dewpoint_from_relative_humidity).",
            vec![n("t_c", "air temperature, °C"), n("rh_pct", "relative humidity, %")],
            |c| Ok(json!({"dewpoint_c": elementwise(c, &["t_c", "rh_pct"], |x| dewpoint_from_e(x[1] / 100.0 * es_hpa(x[0])))?, "units": "degC"})),
        ),
        Operation::new(
            "rh_from_dewpoint",
            F,
            "Relative humidity (%) from temperature and dewpoint (°C): 100·es(Td)/es(T) (MetPy relative_humidity_from_dewpoint).",
            vec![n("t_c", "air temperature, °C"), n("td_c", "dewpoint, °C")],
            |c| Ok(json!({"rh_pct": elementwise(c, &["t_c", "td_c"], |x| 100.0 * es_hpa(x[1]) / es_hpa(x[0]))?, "units": "percent"})),
        ),
        Operation::new(
            "saturation_vapor_pressure",
            F,
            "Saturation vapour pressure over water (hPa) at temperature (°C), Bolton (1980) eq. 10.",
            vec![n("t_c", "temperature, °C")],
            |c| Ok(json!({"es_hpa": elementwise(c, &["t_c"], |x| es_hpa(x[0]))?, "units": "hPa"})),
        ),
        Operation::new(
            "vapor_pressure_deficit",
            F,
            "Vapour pressure deficit es(T)·(1 − RH/100) in hPa and kPa.",
            vec![n("t_c", "air temperature, °C"), n("rh_pct", "relative humidity, %")],
            |c| Ok(json!({"vpd_hpa": elementwise(c, &["t_c", "rh_pct"], |x| es_hpa(x[0]) * (1.0 - x[1] / 100.0))?, "units": "hPa"})),
        ),
        Operation::new(
            "potential_temperature",
            F,
            "Potential temperature θ = T (1000/p)^κ, κ = Rd/cp (MetPy potential_temperature); p in hPa, T in K.",
            vec![n("p_hpa", "pressure, hPa"), n("t_k", "temperature, K")],
            |c| Ok(json!({"theta_k": elementwise(c, &["p_hpa", "t_k"], |x| x[1] * (1000.0 / x[0]).powf(KAPPA))?, "units": "K"})),
        ),
        Operation::new(
            "equivalent_potential_temperature",
            F,
            "Equivalent potential temperature θe (K), Bolton (1980) eq. 39 with the LCL temperature of eq. 15 (as MetPy).",
            vec![n("p_hpa", "pressure, hPa"), n("t_c", "temperature, °C"), n("td_c", "dewpoint, °C")],
            |c| Ok(json!({"theta_e_k": elementwise(c, &["p_hpa", "t_c", "td_c"], |x| theta_e(x[0], x[1], x[2]))?, "units": "K"})),
        ),
        Operation::new(
            "wet_bulb_temperature",
            F,
            "Wet-bulb temperature (°C) from T (°C) and RH (%) by Stull (2011)'s empirical fit (valid RH 5–99 %, T −20–50 °C; refused outside).",
            vec![n("t_c", "air temperature, °C"), n("rh_pct", "relative humidity, %")],
            |c| {
                let t = vals(c, "t_c")?;
                let rh = vals(c, "rh_pct")?;
                if rh.iter().any(|r| r.is_finite() && !(5.0..=99.0).contains(r))
                    || t.iter().any(|v| v.is_finite() && !(-20.0..=50.0).contains(v))
                {
                    return Err(c.refuse(
                        json!({"outside_validity_range": {"rh_pct": [5, 99], "t_c": [-20, 50]}}),
                        "Stull (2011) is valid only for RH 5–99 % and T −20–50 °C",
                    ));
                }
                Ok(json!({"wet_bulb_c": elementwise(c, &["t_c", "rh_pct"], |x| stull_wet_bulb(x[0], x[1]))?, "units": "degC"}))
            },
        ),
        Operation::new(
            "lcl",
            F,
            "Lifting condensation level: temperature (Bolton 1980 eq. 15) and pressure by Poisson's equation, plus Espy's height estimate 125 m/K·(T−Td).",
            vec![req("p_hpa", Kind::Number, "surface pressure, hPa"), req("t_c", Kind::Number, "temperature, °C"), req("td_c", Kind::Number, "dewpoint, °C")],
            |c| {
                let (p, t, td) = (c.num("p_hpa")?, c.num("t_c")?, c.num("td_c")?);
                if td > t {
                    return Err(c.invalid("td_c", "dewpoint above temperature"));
                }
                let tl = lcl_temperature_k(t + 273.15, td + 273.15);
                let pl = p * (tl / (t + 273.15)).powf(1.0 / KAPPA);
                Ok(json!({"lcl_pressure_hpa": pl, "lcl_temperature_c": tl - 273.15, "lcl_height_m_espy": 125.0 * (t - td), "units": {"pressure": "hPa", "temperature": "degC", "height": "m"}}))
            },
        ),
        Operation::new(
            "cape_cin",
            F,
            "Surface-based CAPE and CIN (J/kg) of a sounding: the surface parcel follows the dry adiabat to its LCL and the saturated (pseudo)adiabat above; positive/negative areas Rd∫(Tp−Te) d ln p (MetPy surface_based_cape_cin without virtual correction).",
            vec![req("p_hpa", Kind::Numbers, "pressure levels, hPa, decreasing"), req("t_c", Kind::Numbers, "temperature, °C"), req("td_c", Kind::Numbers, "dewpoint, °C")],
            cape_cin,
        )
        .min_len("p_hpa", 3),
        Operation::new(
            "precipitable_water",
            F,
            "Precipitable water (mm) = (1/(ρw g)) ∫ q dp over a sounding, trapezoidal in pressure (MetPy precipitable_water).",
            vec![req("p_hpa", Kind::Numbers, "pressure levels, hPa"), req("td_c", Kind::Numbers, "dewpoint, °C")],
            |c| {
                let p = c.numbers("p_hpa")?;
                let td = c.numbers("td_c")?;
                if p.len() != td.len() {
                    return Err(c.invalid("td_c", "must have one value per pressure level"));
                }
                let q: Vec<f64> = p
                    .iter()
                    .zip(&td)
                    .map(|(p, td)| {
                        let w = mixing_ratio(es_hpa(*td), *p);
                        w / (1.0 + w)
                    })
                    .collect();
                let mut pw = 0.0;
                for i in 1..p.len() {
                    pw += 0.5 * (q[i] + q[i - 1]) * (p[i - 1] - p[i]) * 100.0;
                }
                Ok(json!({"precipitable_water_mm": pw.abs() / G, "units": "mm"}))
            },
        )
        .min_len("p_hpa", 2),
        Operation::new(
            "heat_index",
            F,
            "NWS heat index (Rothfusz regression with Steadman's simple form below 80 °F and the NWS low/high humidity adjustments); temperature in °C or °F.",
            vec![n("t", "air temperature"), n("rh_pct", "relative humidity, %"), opt("units", Kind::Text, "degC or degF", json!("degC"))],
            |c| {
                let celsius = unit_is_c(c)?;
                let v = elementwise(c, &["t", "rh_pct"], |x| {
                    let tf = if celsius { c_to_f(x[0]) } else { x[0] };
                    let hi = heat_index_f(tf, x[1]);
                    if celsius { f_to_c(hi) } else { hi }
                })?;
                Ok(json!({"heat_index": v, "units": if celsius {"degC"} else {"degF"}}))
            },
        ),
        Operation::new(
            "windchill",
            F,
            "NWS (2001) wind chill temperature; defined for T ≤ 50 °F and wind ≥ 3 mph (refused outside). Temperature in °C with wind in km/h, or °F with mph.",
            vec![n("t", "air temperature"), n("wind", "wind speed at 10 m"), opt("units", Kind::Text, "degC (with km/h) or degF (with mph)", json!("degC"))],
            |c| {
                let celsius = unit_is_c(c)?;
                let t = vals(c, "t")?;
                let w = vals(c, "wind")?;
                let tf: Vec<f64> = t.iter().map(|x| if celsius { c_to_f(*x) } else { *x }).collect();
                let mph: Vec<f64> = w.iter().map(|x| if celsius { x / 1.609_344 } else { *x }).collect();
                if tf.iter().any(|x| *x > 50.0) || mph.iter().any(|x| *x < 3.0) {
                    return Err(c.refuse(json!({"outside_validity_range": {"t_max_degF": 50, "wind_min_mph": 3}}), "wind chill is defined only for T ≤ 50 °F and wind ≥ 3 mph"));
                }
                let v = elementwise(c, &["t", "wind"], |x| {
                    let (t, v) = if celsius { (c_to_f(x[0]), x[1] / 1.609_344) } else { (x[0], x[1]) };
                    let wc = wind_chill_f(t, v);
                    if celsius { f_to_c(wc) } else { wc }
                })?;
                Ok(json!({"wind_chill": v, "units": if celsius {"degC"} else {"degF"}}))
            },
        ),
        Operation::new(
            "apparent_temperature",
            F,
            "Apparent temperature as MetPy: heat index when T > 80 °F, wind chill when T ≤ 50 °F and wind > 3 mph, else the air temperature (°C, wind km/h).",
            vec![n("t_c", "air temperature, °C"), n("rh_pct", "relative humidity, %"), n("wind_kmh", "wind speed, km/h")],
            |c| Ok(json!({"apparent_temperature_c": elementwise(c, &["t_c", "rh_pct", "wind_kmh"], |x| {
                let tf = c_to_f(x[0]);
                let mph = x[2] / 1.609_344;
                if tf > 80.0 { f_to_c(heat_index_f(tf, x[1])) } else if tf <= 50.0 && mph > 3.0 { f_to_c(wind_chill_f(tf, mph)) } else { x[0] }
            })?, "units": "degC"})),
        ),
        Operation::new(
            "humidex",
            F,
            "Canadian humidex = T + 0.5555 (e − 10), e from dewpoint (Masterton & Richardson 1979).",
            vec![n("t_c", "air temperature, °C"), n("td_c", "dewpoint, °C")],
            |c| Ok(json!({"humidex": elementwise(c, &["t_c", "td_c"], |x| {
                let e = 6.11 * (5417.753 * (1.0 / 273.16 - 1.0 / (x[1] + 273.15))).exp();
                x[0] + 0.5555 * (e - 10.0)
            })?, "units": "degC"})),
        ),
        Operation::new(
            "mean_radiant_temperature",
            F,
            "Mean radiant temperature (°C) from black-globe temperature, air temperature and wind (ISO 7726 forced convection, 150 mm globe, ε = 0.95).",
            vec![n("tg_c", "globe temperature, °C"), n("ta_c", "air temperature, °C"), n("wind_ms", "air speed, m/s"), opt("diameter_m", Kind::Number, "globe diameter, m", json!(0.15)), opt("emissivity", Kind::Number, "globe emissivity", json!(0.95))],
            |c| {
                let d = c.num("diameter_m")?;
                let eps = c.num("emissivity")?;
                Ok(json!({"mrt_c": elementwise(c, &["tg_c", "ta_c", "wind_ms"], |x| {
                    ((x[0] + 273.0).powi(4) + 1.1e8 * x[2].powf(0.6) / (eps * d.powf(0.4)) * (x[0] - x[1])).powf(0.25) - 273.0
                })?, "units": "degC"}))
            },
        ),
        Operation::new(
            "wbgt",
            F,
            "Wet-bulb globe temperature: outdoor 0.7 Tw + 0.2 Tg + 0.1 Ta, or indoor 0.7 Tw + 0.3 Tg (ISO 7243).",
            vec![n("tw_c", "natural wet-bulb, °C"), n("tg_c", "globe temperature, °C"), opt("ta_c", Kind::Any, "air temperature, °C (outdoor)", Value::Null), opt("indoor", Kind::Bool, "indoor formula", json!(false))],
            |c| {
                if c.flag("indoor")? {
                    return Ok(json!({"wbgt_c": elementwise(c, &["tw_c", "tg_c"], |x| 0.7 * x[0] + 0.3 * x[1])?, "units": "degC"}));
                }
                if c.args().get("ta_c").is_none_or(Value::is_null) {
                    return Err(c.invalid("ta_c", "outdoor WBGT needs the air temperature"));
                }
                Ok(json!({"wbgt_c": elementwise(c, &["tw_c", "tg_c", "ta_c"], |x| 0.7 * x[0] + 0.2 * x[1] + 0.1 * x[2])?, "units": "degC"}))
            },
        ),
    ];
    ops.extend(crate::climate::operations());
    ops
}

fn unit_is_c(c: &OpCall<'_>) -> Result<bool> {
    match c.text("units")?.as_str() {
        "degC" | "C" | "celsius" | "°C" => Ok(true),
        "degF" | "F" | "fahrenheit" | "°F" => Ok(false),
        other => Err(c.invalid("units", format!("`{other}` is not degC or degF"))),
    }
}

/// Stull (2011) wet-bulb temperature, °C.
pub fn stull_wet_bulb(t: f64, rh: f64) -> f64 {
    t * (0.151_977 * (rh + 8.313_659).sqrt()).atan() + (t + rh).atan() - (rh - 1.676_331).atan()
        + 0.003_918_38 * rh.powf(1.5) * (0.023_101 * rh).atan()
        - 4.686_035
}

/// LCL temperature (K), Bolton (1980) eq. 15.
pub fn lcl_temperature_k(t_k: f64, td_k: f64) -> f64 {
    1.0 / (1.0 / (td_k - 56.0) + (t_k / td_k).ln() / 800.0) + 56.0
}

/// θe (K), Bolton (1980) eq. 39.
pub fn theta_e(p_hpa: f64, t_c: f64, td_c: f64) -> f64 {
    let t = t_c + 273.15;
    let e = es_hpa(td_c);
    let r = mixing_ratio(e, p_hpa) * 1000.0;
    let tl = lcl_temperature_k(t, td_c + 273.15);
    let th_l = t * (1000.0 / (p_hpa - e)).powf(KAPPA) * (t / tl).powf(0.28e-3 * r);
    th_l * ((3036.0 / tl - 1.78) * r * 1e-3 * (1.0 + 0.448e-3 * r)).exp()
}

/// Saturated pseudo-adiabatic lapse dT/dp (K/hPa) at p (hPa), T (K).
fn moist_lapse(p: f64, t: f64) -> f64 {
    const LV: f64 = 2.501e6;
    const CP: f64 = 1004.666;
    const EPS: f64 = 0.622;
    let es = es_hpa(t - 273.15);
    let rs = EPS * es / (p - es);
    let num = (RD * t + LV * rs) / p;
    let den = CP + LV * LV * rs * EPS / (RD * t * t);
    num / den
}

/// Parcel temperatures (K) at each level for a surface parcel.
pub fn parcel_profile(p: &[f64], t0_c: f64, td0_c: f64) -> Vec<f64> {
    let t0 = t0_c + 273.15;
    let tl = lcl_temperature_k(t0, td0_c + 273.15);
    let pl = p[0] * (tl / t0).powf(1.0 / KAPPA);
    let mut out = Vec::with_capacity(p.len());
    for &pi in p {
        if pi >= pl {
            out.push(t0 * (pi / p[0]).powf(KAPPA));
        } else {
            // integrate the moist adiabat from the LCL in small steps (RK4)
            let mut t = tl;
            let mut pc = pl;
            let steps = (((pl - pi) / 2.0).ceil() as usize).max(1);
            let h = (pi - pl) / steps as f64;
            for _ in 0..steps {
                let k1 = moist_lapse(pc, t);
                let k2 = moist_lapse(pc + h / 2.0, t + h / 2.0 * k1);
                let k3 = moist_lapse(pc + h / 2.0, t + h / 2.0 * k2);
                let k4 = moist_lapse(pc + h, t + h * k3);
                t += h / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4);
                pc += h;
            }
            out.push(t);
        }
    }
    out
}

fn cape_cin(c: &mut OpCall<'_>) -> Result<Value> {
    let p = c.numbers("p_hpa")?;
    let t = c.numbers("t_c")?;
    let td = c.numbers("td_c")?;
    if p.len() != t.len() || p.len() != td.len() {
        return Err(c.invalid("t_c", "p_hpa, t_c and td_c must have equal lengths"));
    }
    if p.windows(2).any(|w| w[1] >= w[0]) || p.iter().any(|x| !x.is_finite()) {
        return Err(c.refuse(
            json!({"sampling": "pressure must strictly decrease with height"}),
            "pressure levels must strictly decrease",
        ));
    }
    let parcel = parcel_profile(&p, t[0], td[0]);
    let diff: Vec<f64> = parcel
        .iter()
        .zip(&t)
        .map(|(tp, te)| tp - (te + 273.15))
        .collect();
    // areas between consecutive levels, trapezoidal in ln p
    let mut cape = 0.0;
    let mut cin = 0.0;
    let mut seen_positive = false;
    for i in 1..p.len() {
        let area = RD * 0.5 * (diff[i] + diff[i - 1]) * (p[i - 1] / p[i]).ln();
        if area > 0.0 {
            cape += area;
            seen_positive = true;
        } else if !seen_positive {
            cin += area;
        }
    }
    let tl = lcl_temperature_k(t[0] + 273.15, td[0] + 273.15);
    let lcl_p = p[0] * (tl / (t[0] + 273.15)).powf(1.0 / KAPPA);
    Ok(
        json!({"cape_j_per_kg": cape, "cin_j_per_kg": cin, "lcl_pressure_hpa": lcl_p, "parcel_temperature_c": parcel.iter().map(|x| x - 273.15).collect::<Vec<_>>(), "units": "J/kg"}),
    )
}

/// Marker so callers can name the error type.
pub type MeteoError = DomainError;
