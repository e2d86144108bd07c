//! The scientific environments of Table 7 / Table 14 (issue 46) on real
//! dev-slice inputs: every operation of every installed environment runs
//! through its adapter in the OS sandbox, and its value is compared with
//! the same library or runtime called directly, outside the adapter
//! (Python: the library in the same interpreter, `tests/environments/
//! reference.py`, one invocation for all cases; CDO/NCO: their command
//! lines; R: `Rscript`; NCL: `ncl`; Fortran: a numpy reference of the same
//! formula). Tolerance: 1e-9 relative unless a case says otherwise (the
//! runtimes' text output: 1e-6 relative).
//!
//! The dev slice has no wind direction and no package with humidity and
//! pressure together: the kinematics and moisture-transport cases read
//! `crates/environments/tests/fixtures/PKG-ENV` (an authored station
//! record), and the refusals of those inputs are checked on the slice.
//!
//! Needs `EARTHVERSE_PYTHON` (the environment of `scripts/python-env.sh`),
//! bubblewrap, and the runtimes of `scripts/bootstrap.sh`. This binary is
//! its own sandbox helper (no libtest harness).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_environments::{tools, EnvironmentSettings, FailureClass, Outcome};
use earthverse_tool_registry::{PythonConfig, Tool, ToolContext};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

const PKGS: &str = "packages/event_packages/standard_event_packages/packages";
const HOURLY: &str = "data/physical_hazard/physical_hazard_001_Open-Meteo_historical_archive.json";
const DAILY60: &str = "data/physical_hazard/physical_hazard_001_Open-Meteo_daily_weather_fill.json";
const WIND: &str =
    "data/physical_hazard/physical_hazard_002_Open-Meteo_historical_wind_rain_point_API.json";
const DAILY15: &str =
    "data/physical_hazard/physical_hazard_001_Open-Meteo_historical_daily_point_sample.json";
const STATION: &str = "data/station.json";
const DAILY3Y: &str = "data/station_daily.json";

struct Case {
    id: &'static str,
    op: &'static str,
    pkg: PathBuf,
    inputs: Vec<(&'static str, &'static str, String, &'static str)>,
    params: Value,
}

fn case(
    id: &'static str,
    op: &'static str,
    pkg: &Path,
    inputs: &[(&'static str, &'static str, &str, &'static str)],
    params: Value,
) -> Case {
    Case {
        id,
        op,
        pkg: pkg.to_path_buf(),
        inputs: inputs
            .iter()
            .map(|(n, f, field, t)| (*n, *f, field.to_string(), *t))
            .collect(),
        params,
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * b.abs().max(1.0)
}

fn num(v: &Value) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("expected a number, got {v}"))
}

fn assert_close(what: &str, got: &Value, want: &Value, rel: f64) {
    match (got, want) {
        (Value::Array(a), Value::Array(b)) => {
            assert_eq!(a.len(), b.len(), "{what}: {got} vs {want}");
            for (x, y) in a.iter().zip(b) {
                assert_close(what, x, y, rel);
            }
        }
        (Value::Null, Value::Null) => {}
        _ => assert!(
            close(num(got), num(want), rel),
            "{what}: adapter {got} vs direct {want}"
        ),
    }
}

fn main() {
    earthverse_tool_registry::sandbox::run_helper_if_invoked();
    let started = Instant::now();
    let data = earthverse_tests::dev_slice();
    let python = std::env::var_os("EARTHVERSE_PYTHON")
        .map(PathBuf::from)
        .expect("set EARTHVERSE_PYTHON to the interpreter of scripts/python-env.sh");
    let pkg = |id: &str| data.join(PKGS).join(id);
    let fixture =
        earthverse_tests::project_root().join("crates/environments/tests/fixtures/PKG-ENV");
    let (csx001, csx175, csx130, csx232) = (
        pkg("CSX-001"),
        pkg("CSX-175"),
        pkg("CSX-130"),
        pkg("CSX-232"),
    );
    let h = |k: &str| format!("hourly.{k}");
    let d = |k: &str| format!("daily.{k}");
    let cases = vec![
        case(
            "rain",
            "metpy_rain_summary",
            &csx130,
            &[("precipitation", WIND, &h("precipitation"), "hourly.time")],
            json!({}),
        ),
        case(
            "profile",
            "metpy_profile",
            &csx001,
            &[
                ("temperature", HOURLY, &h("temperature_2m"), "hourly.time"),
                (
                    "relative_humidity",
                    HOURLY,
                    &h("relative_humidity_2m"),
                    "hourly.time",
                ),
            ],
            json!({}),
        ),
        case(
            "profile_p",
            "metpy_profile",
            &fixture,
            &[
                ("temperature", STATION, &h("temperature_2m"), ""),
                ("relative_humidity", STATION, &h("relative_humidity_2m"), ""),
                ("pressure", STATION, &h("pressure_msl"), ""),
            ],
            json!({}),
        ),
        case(
            "kin",
            "metpy_kinematics",
            &fixture,
            &[
                ("speed", STATION, &h("wind_speed_10m"), ""),
                ("direction", STATION, &h("wind_direction_10m"), ""),
            ],
            json!({}),
        ),
        case(
            "heat",
            "xclim_heat_extremes",
            &csx175,
            &[("tasmax", DAILY60, &d("temperature_2m_max"), "daily.time")],
            json!({"threshold_degC": 25}),
        ),
        case(
            "rainx",
            "xclim_rain_extremes",
            &csx175,
            &[("pr", DAILY60, &d("precipitation_sum"), "daily.time")],
            json!({}),
        ),
        case(
            "spells",
            "xclim_spells",
            &csx175,
            &[("pr", DAILY60, &d("precipitation_sum"), "daily.time")],
            json!({}),
        ),
        case(
            "utci",
            "thermofeel_utci",
            &fixture,
            &[
                ("temperature", STATION, &h("temperature_2m"), ""),
                ("wind", STATION, &h("wind_speed_10m"), ""),
                ("dewpoint", STATION, &h("dew_point_2m"), ""),
            ],
            json!({}),
        ),
        case(
            "hi",
            "thermofeel_heat_index",
            &csx001,
            &[
                ("temperature", HOURLY, &h("temperature_2m"), ""),
                ("relative_humidity", HOURLY, &h("relative_humidity_2m"), ""),
            ],
            json!({}),
        ),
        case(
            "wc",
            "thermofeel_wind_chill",
            &csx175,
            &[
                ("temperature", DAILY60, &d("temperature_2m_min"), ""),
                ("wind", DAILY60, &d("wind_speed_10m_max"), ""),
            ],
            json!({}),
        ),
        case(
            "pm",
            "pyet_penman_monteith",
            &csx175,
            &[
                ("tmax", DAILY60, &d("temperature_2m_max"), "daily.time"),
                ("tmin", DAILY60, &d("temperature_2m_min"), "daily.time"),
                ("wind", DAILY60, &d("wind_speed_10m_max"), "daily.time"),
            ],
            json!({"latitude": 45.0, "elevation_m": 100.0}),
        ),
        case(
            "hg",
            "pyet_hargreaves",
            &csx175,
            &[
                ("tmax", DAILY60, &d("temperature_2m_max"), "daily.time"),
                ("tmin", DAILY60, &d("temperature_2m_min"), "daily.time"),
            ],
            json!({"latitude": 45.0}),
        ),
        case(
            "pet3y",
            "climate_indices_pet",
            &fixture,
            &[(
                "temperature",
                DAILY3Y,
                &d("temperature_2m_max"),
                "daily.time",
            )],
            json!({"latitude": 48.1}),
        ),
        case(
            "spi3y",
            "climate_indices_spi",
            &fixture,
            &[(
                "precipitation",
                DAILY3Y,
                &d("precipitation_sum"),
                "daily.time",
            )],
            json!({"scale_months": 3}),
        ),
        case(
            "spei3y",
            "climate_indices_spei",
            &fixture,
            &[
                (
                    "precipitation",
                    DAILY3Y,
                    &d("precipitation_sum"),
                    "daily.time",
                ),
                (
                    "temperature",
                    DAILY3Y,
                    &d("temperature_2m_max"),
                    "daily.time",
                ),
            ],
            json!({"latitude": 48.1, "scale_months": 3}),
        ),
        case(
            "pet",
            "climate_indices_pet",
            &csx175,
            &[(
                "temperature",
                DAILY60,
                &d("temperature_2m_max"),
                "daily.time",
            )],
            json!({"latitude": 45.0}),
        ),
        case(
            "spi",
            "climate_indices_spi",
            &csx175,
            &[(
                "precipitation",
                DAILY60,
                &d("precipitation_sum"),
                "daily.time",
            )],
            json!({}),
        ),
        case(
            "spei",
            "climate_indices_spei",
            &csx175,
            &[
                (
                    "precipitation",
                    DAILY60,
                    &d("precipitation_sum"),
                    "daily.time",
                ),
                (
                    "temperature",
                    DAILY60,
                    &d("temperature_2m_max"),
                    "daily.time",
                ),
            ],
            json!({"latitude": 45.0}),
        ),
        case(
            "rmse",
            "xskillscore_rmse",
            &csx001,
            &[
                (
                    "forecast",
                    HOURLY,
                    &h("apparent_temperature"),
                    "hourly.time",
                ),
                ("observation", HOURLY, &h("temperature_2m"), "hourly.time"),
            ],
            json!({}),
        ),
        case(
            "r",
            "xskillscore_pearson_r",
            &csx001,
            &[
                (
                    "forecast",
                    HOURLY,
                    &h("apparent_temperature"),
                    "hourly.time",
                ),
                ("observation", HOURLY, &h("temperature_2m"), "hourly.time"),
            ],
            json!({}),
        ),
        case(
            "brier",
            "xskillscore_brier",
            &csx001,
            &[
                (
                    "forecast",
                    HOURLY,
                    &h("apparent_temperature"),
                    "hourly.time",
                ),
                ("observation", HOURLY, &h("temperature_2m"), "hourly.time"),
            ],
            json!({"threshold": 25}),
        ),
        case(
            "crps",
            "xskillscore_crps",
            &csx001,
            &[
                (
                    "forecast",
                    HOURLY,
                    &h("apparent_temperature"),
                    "hourly.time",
                ),
                ("observation", HOURLY, &h("temperature_2m"), "hourly.time"),
            ],
            json!({}),
        ),
        case(
            "bm",
            "pyextremes_block_maxima",
            &csx130,
            &[("series", WIND, &h("wind_speed_10m"), "hourly.time")],
            json!({}),
        ),
        case(
            "pot",
            "pyextremes_pot",
            &csx130,
            &[("series", WIND, &h("wind_speed_10m"), "hourly.time")],
            json!({"threshold": 40}),
        ),
        case(
            "rl",
            "pyextremes_return_levels",
            &csx130,
            &[("series", WIND, &h("wind_speed_10m"), "hourly.time")],
            json!({"block_size": "12h"}),
        ),
        case(
            "frain",
            "fortran_rain",
            &csx130,
            &[("precipitation", WIND, &h("precipitation"), "")],
            json!({"window": 24}),
        ),
        case(
            "fkin",
            "fortran_kinematics",
            &fixture,
            &[
                ("speed", STATION, &h("wind_speed_10m"), ""),
                ("direction", STATION, &h("wind_direction_10m"), ""),
            ],
            json!({}),
        ),
        case(
            "fmoist",
            "fortran_moisture_transport",
            &fixture,
            &[
                ("dewpoint", STATION, &h("dew_point_2m"), ""),
                ("pressure", STATION, &h("pressure_msl"), ""),
                ("speed", STATION, &h("wind_speed_10m"), ""),
            ],
            json!({}),
        ),
        case(
            "cdo_t",
            "cdo_temporal_aggregate",
            &csx175,
            &[("series", DAILY60, &d("temperature_2m_max"), "daily.time")],
            json!({"stat": "mean", "period": "month"}),
        ),
        case(
            "cdo_f",
            "cdo_field_aggregate",
            &csx175,
            &[
                ("series", DAILY60, &d("temperature_2m_max"), "daily.time"),
                ("series2", DAILY60, &d("temperature_2m_min"), "daily.time"),
            ],
            json!({"stat": "mean"}),
        ),
        case(
            "nco_i",
            "nco_inspect",
            &csx232,
            &[("series", DAILY15, &d("temperature_2m_max"), "daily.time")],
            json!({}),
        ),
        case(
            "nco_w",
            "nco_weighted_mean",
            &csx175,
            &[
                ("series", DAILY60, &d("temperature_2m_max"), "daily.time"),
                ("weight", DAILY60, &d("precipitation_sum"), "daily.time"),
            ],
            json!({}),
        ),
        case(
            "nco_d",
            "nco_derive_field",
            &csx175,
            &[
                ("a", DAILY60, &d("temperature_2m_max"), "daily.time"),
                ("b", DAILY60, &d("temperature_2m_min"), "daily.time"),
            ],
            json!({"expression": "(a+b)/2"}),
        ),
        case(
            "r_sum",
            "r_climate_summary",
            &csx130,
            &[("series", WIND, &h("wind_speed_10m"), "")],
            json!({}),
        ),
        case(
            "r_trend",
            "r_climate_trend",
            &csx130,
            &[("series", WIND, &h("pressure_msl"), "")],
            json!({}),
        ),
        case(
            "r_gev",
            "r_climate_gev",
            &csx130,
            &[("series", WIND, &h("wind_speed_10m"), "")],
            json!({"block_length": 12, "return_periods": [10, 50]}),
        ),
        case(
            "ncl",
            "ncl_summary",
            &csx130,
            &[("series", WIND, &h("wind_speed_10m"), "")],
            json!({}),
        ),
        case(
            "r_spei",
            "r_climate_spei",
            &csx175,
            &[
                (
                    "precipitation",
                    DAILY60,
                    &d("precipitation_sum"),
                    "daily.time",
                ),
                ("tmax", DAILY60, &d("temperature_2m_max"), "daily.time"),
                ("tmin", DAILY60, &d("temperature_2m_min"), "daily.time"),
            ],
            json!({"latitude": 45.0, "scale_days": 7}),
        ),
    ];
    let settings = Arc::new(EnvironmentSettings {
        python: PythonConfig {
            interpreter: python.clone(),
            ..PythonConfig::default()
        },
        path: None,
    });
    let rt = tokio::runtime::Runtime::new().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    // Every tool of every environment tested here (Julia is not installed).
    let mut all: BTreeMap<String, Arc<dyn Tool>> = BTreeMap::new();
    for env in earthverse_environments::ENVIRONMENTS
        .iter()
        .filter(|e| e.tested_here)
    {
        for tool in rt
            .block_on(tools(env.slug, settings.clone()))
            .unwrap_or_else(|e| panic!("{e}"))
        {
            all.insert(tool.name().to_string(), tool);
        }
    }
    let covered: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.op).collect();
    let untested: Vec<&String> = all
        .keys()
        .filter(|k| !covered.contains(k.as_str()))
        .collect();
    assert!(
        untested.is_empty(),
        "operations without a case: {untested:?}"
    );

    // The adapters, in the sandbox, two at a time (two cores).
    let permits = Arc::new(tokio::sync::Semaphore::new(2));
    let mut handles = Vec::new();
    for (step, c) in cases.iter().enumerate() {
        let mut args = c.params.clone();
        for (name, file, field, time) in &c.inputs {
            let mut r = json!({"path": file, "field": field});
            if !time.is_empty() {
                r["time_field"] = json!(time);
            }
            args[*name] = r;
        }
        let dir = scratch.path().join(c.id);
        let ctx = ToolContext::new(&c.pkg, &dir).with_step(step as u32);
        let (env, op) = earthverse_environments::operation(c.op).unwrap();
        assert!(all.contains_key(c.op));
        let tool = earthverse_environments::EnvironmentTool::new(env, op, settings.clone());
        let permits = permits.clone();
        let id = c.id;
        handles.push(rt.spawn(async move {
            let _permit = permits.acquire_owned().await.unwrap();
            let t = Instant::now();
            let outcome = tool.run(&ctx, &args).await;
            println!(
                "{:>8.2} s  {:<28} {} {:?}",
                t.elapsed().as_secs_f64(),
                tool.name(),
                outcome.status,
                outcome.message
            );
            (id, outcome, dir)
        }));
    }
    let mut outcomes: BTreeMap<&str, (Outcome, PathBuf)> = BTreeMap::new();
    for h in handles {
        let (id, outcome, dir) = rt.block_on(h).unwrap();
        outcomes.insert(id, (outcome, dir));
    }

    // The direct calls: one Python invocation for every case.
    let reference_cases: Vec<Value> = cases
        .iter()
        .map(|c| {
            let inputs: serde_json::Map<String, Value> = c
                .inputs
                .iter()
                .map(|(n, f, field, t)| {
                    let time = if t.is_empty() { Value::Null } else { json!(t) };
                    (n.to_string(), json!([c.pkg.join(f), field, time]))
                })
                .collect();
            json!({"id": c.id, "op": c.op, "inputs": inputs, "params": c.params})
        })
        .collect();
    let cases_file = scratch.path().join("cases.json");
    std::fs::write(&cases_file, serde_json::to_vec(&reference_cases).unwrap()).unwrap();
    let out = Command::new(&python)
        .arg(earthverse_tests::project_root().join("tests/environments/reference.py"))
        .arg(&cases_file)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "reference.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let reference: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();

    check_all(&outcomes, &reference);
    check_runtimes(&outcomes);
    println!(
        "environments: {} cases in {:.1} s",
        cases.len(),
        started.elapsed().as_secs_f64()
    );
    println!("{} passed, 0 failed", cases.len());
}

fn ok<'a>(outcomes: &'a BTreeMap<&str, (Outcome, PathBuf)>, id: &str) -> &'a Value {
    let (o, _) = &outcomes[id];
    assert_eq!(
        o.status, "ok",
        "{id}: {:?} {:?}",
        o.failure_class, o.message
    );
    assert!(
        o.sandbox.iter().any(|p| p.contains("network namespaces")),
        "{id} ran in the sandbox"
    );
    &o.result
}

fn check_all(outcomes: &BTreeMap<&str, (Outcome, PathBuf)>, r: &Value) {
    const REL: f64 = 1e-9;
    let g = |id: &str| ok(outcomes, id).clone();
    let v = g("rain");
    assert_close("rain total", &v["total_mm"], &r["rain"]["total_mm"], REL);
    assert_close("rain max", &v["max_mm"], &r["rain"]["max_mm"], REL);
    assert_eq!(v["wet_steps"], r["rain"]["wet_steps"]);
    assert_close(
        "dewpoint",
        &g("profile")["dewpoint_degC"]["mean"],
        &r["profile"]["dewpoint_degC"]["mean"],
        REL,
    );
    let p = g("profile_p");
    assert_close(
        "theta",
        &p["potential_temperature_K"]["mean"],
        &r["profile_p"]["potential_temperature_K"]["mean"],
        REL,
    );
    assert_close(
        "theta-e",
        &p["equivalent_potential_temperature_K"]["max"],
        &r["profile_p"]["equivalent_potential_temperature_K"]["max"],
        REL,
    );
    let k = g("kin");
    assert_close("u", &k["u_m_s"]["mean"], &r["kin"]["u_mean"], REL);
    assert_close("v", &k["v_m_s"]["mean"], &r["kin"]["v_mean"], REL);
    let x = g("heat");
    assert_close("tx_max", &x["tx_max_degC"], &r["heat"]["tx_max"], REL);
    assert_close(
        "tx_days_above",
        &x["tx_days_above"],
        &r["heat"]["tx_days_above"],
        REL,
    );
    let x = g("rainx");
    assert_close("rx1day", &x["rx1day_mm"], &r["rainx"]["rx1day"], REL);
    assert_close("rx5day", &x["rxnday_mm"], &r["rainx"]["rxnday"], REL);
    assert_close("wet days", &x["wet_days"], &r["rainx"]["wet_days"], REL);
    let x = g("spells");
    assert_close(
        "cdd",
        &x["max_consecutive_dry_days"],
        &r["spells"]["cdd"],
        REL,
    );
    assert_close(
        "cwd",
        &x["max_consecutive_wet_days"],
        &r["spells"]["cwd"],
        REL,
    );
    assert_close(
        "utci",
        &g("utci")["utci_degC"]["mean"],
        &r["utci"]["mean"],
        REL,
    );
    assert_close(
        "heat index",
        &g("hi")["heat_index_degC"]["mean"],
        &r["hi"]["mean"],
        REL,
    );
    assert_close(
        "wind chill",
        &g("wc")["wind_chill_degC"]["mean"],
        &r["wc"]["mean"],
        REL,
    );
    assert_close("pm", &g("pm")["et0"]["total_mm"], &r["pm"]["total_mm"], REL);
    assert_close(
        "hargreaves",
        &g("hg")["et0"]["total_mm"],
        &r["hg"]["total_mm"],
        REL,
    );
    // climate-indices on three years (fixture): values as the library's.
    for id in ["pet3y", "spi3y", "spei3y"] {
        let key = if id == "pet3y" {
            "pet_mm_month"
        } else if id == "spi3y" {
            "spi"
        } else {
            "spei"
        };
        let got = &g(id)[key];
        assert!(
            got.as_array()
                .unwrap()
                .iter()
                .filter(|v| v.is_f64())
                .count()
                >= 30,
            "{id}: {got}"
        );
        assert_close(id, got, &r[id]["values"], REL);
    }
    // On the dev slice (two to three months): the library itself returns no
    // finite value (it calibrates per calendar month over whole years) and
    // the adapter refuses the input.
    for id in ["pet", "spi", "spei"] {
        let finite = r[id]["values"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v.is_f64())
            .count();
        assert_eq!(finite, 0, "{id}: the library gives no finite value here");
        let (o, _) = &outcomes[id];
        assert_eq!(
            o.failure_class,
            Some(FailureClass::InputIncompatibility),
            "{id}: {:?}",
            o.message
        );
    }
    assert_close("rmse", &g("rmse")["rmse"], &r["rmse"]["v"], REL);
    assert_close("pearson", &g("r")["pearson_r"], &r["r"]["v"], REL);
    assert_close("brier", &g("brier")["brier_score"], &r["brier"]["v"], REL);
    assert_close("crps", &g("crps")["crps"], &r["crps"]["v"], REL);
    let b = g("bm");
    assert_eq!(b["count"], r["bm"]["count"]);
    assert_close("bm mean", &b["maxima"]["mean"], &r["bm"]["mean"], REL);
    let b = g("pot");
    assert_eq!(b["count"], r["pot"]["count"]);
    assert_close("pot max", &b["exceedances"]["max"], &r["pot"]["max"], REL);
    // An MLE fit: the optimiser runs again, so 1e-6.
    assert_close(
        "return level",
        &g("rl")["levels"][0]["return_level"],
        &r["rl"]["level"],
        1e-6,
    );
    // Fortran against numpy of the same formulas (text output: 1e-12).
    let f = g("frain");
    assert_close("f total", &f["total_mm"], &r["frain"]["total"], 1e-12);
    assert_close("f max", &f["max_mm"], &r["frain"]["max"], 1e-12);
    assert_eq!(f["wet_steps"], r["frain"]["wet"]);
    assert_close(
        "f window",
        &f["max_window_total_mm"],
        &r["frain"]["window"],
        1e-12,
    );
    let f = g("fkin");
    assert_close("f u", &f["u_mean_m_s"], &r["fkin"]["u"], 1e-12);
    assert_close("f v", &f["v_mean_m_s"], &r["fkin"]["v"], 1e-12);
    // ... and against MetPy's components of the same winds.
    assert_close("f u vs metpy", &f["u_mean_m_s"], &r["kin"]["u_mean"], 1e-9);
    let f = g("fmoist");
    assert_close(
        "f flux mean",
        &f["mean_flux_g_kg_m_s"],
        &r["fmoist"]["mean"],
        1e-12,
    );
    assert_close(
        "f flux max",
        &f["max_flux_g_kg_m_s"],
        &r["fmoist"]["max"],
        1e-12,
    );
    // The runtimes' values against the package values read by Python.
    let values = |id: &str| -> Vec<f64> {
        r[id]["values"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_f64)
            .collect()
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let s = values("r_sum");
    assert_close(
        "R mean vs package",
        &g("r_sum")["mean"],
        &json!(mean(&s)),
        1e-12,
    );
    assert_close(
        "NCL mean vs package",
        &g("ncl")["mean"],
        &json!(mean(&s)),
        1e-12,
    );
    // R's SPEI against numpy of the same formulas.
    let v = g("r_spei");
    assert_close("spei beta", &v["beta"], &r["r_spei"]["beta"], 1e-9);
    assert_close(
        "spei pet",
        &v["pet_total_mm"],
        &r["r_spei"]["pet_total"],
        1e-9,
    );
    assert_close(
        "spei last",
        &v["spei_last"],
        &r["r_spei"]["spei_last"],
        1e-9,
    );
    assert_close("spei min", &v["spei_min"], &r["r_spei"]["spei_min"], 1e-9);
    let cdo = g("cdo_t");
    let steps = cdo["steps"].as_array().unwrap();
    assert!(steps.len() >= 2, "{cdo}");
}

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// CDO, NCO, R and NCL called directly on the files the adapter wrote.
fn check_runtimes(outcomes: &BTreeMap<&str, (Outcome, PathBuf)>) {
    let work = |id: &str| -> PathBuf {
        let root = outcomes[id].1.join("environments");
        std::fs::read_dir(&root)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path()
    };
    let result = |id: &str| outcomes[id].0.result.clone();
    // CDO monthly means and field means: the command line outside the sandbox.
    let table = run(Command::new("cdo")
        .args(["-s", "outputtab,value", "-monmean"])
        .arg(work("cdo_t").join("input.nc")));
    let direct: Vec<f64> = table
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    let got: Vec<f64> = result("cdo_t")["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| num(&s["value"]))
        .collect();
    assert_eq!(got.len(), direct.len());
    for (a, b) in got.iter().zip(&direct) {
        assert!(close(*a, *b, 1e-6), "cdo monmean {a} vs {b}");
    }
    let table = run(Command::new("cdo")
        .args(["-s", "outputtab,value", "-timmean", "-fldmean"])
        .arg(work("cdo_f").join("input.nc")));
    let direct: f64 = table
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .find_map(|l| l.trim().parse().ok())
        .unwrap();
    assert!(close(
        num(&result("cdo_f")["mean_over_steps"]),
        direct,
        1e-6
    ));
    // NCO: ncwa and ncap2 on the adapter's input file.
    let dir = tempfile::tempdir().unwrap();
    let w = dir.path().join("w.nc");
    run(Command::new("ncwa")
        .args(["-O", "-a", "time", "-w", "weight", "-v", "series"])
        .arg(work("nco_w").join("input.nc"))
        .arg(&w));
    let direct = run(Command::new("ncks")
        .args(["-H", "-C", "--trd", "-v", "series"])
        .arg(&w));
    let direct: f64 = direct
        .split('=')
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        close(num(&result("nco_w")["series"]), direct, 1e-6),
        "ncwa {} vs {direct}",
        result("nco_w")
    );
    let d = dir.path().join("d.nc");
    run(Command::new("ncap2")
        .args(["-O", "-v", "-s", "out=(a+b)/2;m=out.avg();"])
        .arg(work("nco_d").join("input.nc"))
        .arg(&d));
    let direct = run(Command::new("ncks")
        .args(["-H", "-C", "--trd", "-v", "m"])
        .arg(&d));
    let direct: f64 = direct
        .split('=')
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(close(num(&result("nco_d")["out_mean"]), direct, 1e-6));
    let meta = result("nco_i");
    assert!(meta["variables"]["series"].is_object(), "{meta}");
    // R: Rscript directly on the adapter's CSV.
    let r = run(Command::new("Rscript").arg("-e").arg(format!(
        "x <- read.csv('{}')$series; t <- seq_along(x); ok <- is.finite(x); cat(sprintf('%.17g', c(mean(x[ok]), sd(x[ok]), coef(lm(x[ok] ~ t[ok]))[2])), '\\n')",
        work("r_sum").join("input.csv").display()
    )));
    let v: Vec<f64> = r.split_whitespace().map(|s| s.parse().unwrap()).collect();
    assert!(close(num(&result("r_sum")["mean"]), v[0], 1e-12));
    assert!(close(num(&result("r_sum")["sd"]), v[1], 1e-12));
    let r = run(Command::new("Rscript").arg("-e").arg(format!(
        "x <- read.csv('{}')$series; t <- seq_along(x); cat(sprintf('%.17g', c(coef(lm(x ~ t))[2], cor(t, x, method='kendall'))), '\\n')",
        work("r_trend").join("input.csv").display()
    )));
    let v: Vec<f64> = r.split_whitespace().map(|s| s.parse().unwrap()).collect();
    assert!(close(num(&result("r_trend")["slope_per_step"]), v[0], 1e-9));
    assert!(close(num(&result("r_trend")["kendall_tau"]), v[1], 1e-9));
    let r = run(Command::new("Rscript").arg("-e").arg(format!(
        "suppressPackageStartupMessages(library(evd)); x <- read.csv('{}')$series; x <- x[is.finite(x)]; nb <- length(x) %/% 12; m <- sapply(seq_len(nb), function(i) max(x[((i-1)*12+1):(i*12)])); e <- fgev(m)$estimate; cat(sprintf('%.17g', qgev(1 - 1/50, e['loc'], e['scale'], e['shape'])), '\\n')",
        work("r_gev").join("input.csv").display()
    )));
    assert!(close(
        num(&result("r_gev")["return_levels"][1]),
        r.trim().parse().unwrap(),
        1e-9
    ));
    // NCL directly on the adapter's values file.
    let script = dir.path().join("s.ncl");
    std::fs::write(&script, format!(
        "begin\n x = asciiread(\"{}\", -1, \"double\")\n x@_FillValue = -9.e33\n print(sprintf(\"%.15g\", dim_avg(x)))\n print(sprintf(\"%.15g\", dim_stddev(x)))\nend\n",
        work("ncl").join("values.txt").display()
    )).unwrap();
    let out = run(Command::new("ncl")
        .args(["-n", "-Q"])
        .arg(&script)
        .env("NCARG_ROOT", "/usr"));
    let v: Vec<f64> = out
        .lines()
        .filter_map(|l| l.split_whitespace().last()?.parse().ok())
        .collect();
    assert!(close(num(&result("ncl")["mean"]), v[0], 1e-12), "{out}");
    assert!(close(num(&result("ncl")["stddev"]), v[1], 1e-12), "{out}");
}
