//! Domain operations on the real files of the dev slice's event packages
//! (issue: at least 20 operations on real data). Expected values come from
//! the tasks' published ground truth, the `event_files` inventory, or an
//! independent parse of the same file in this test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_domain_ops::operation;
use earthverse_tool_registry::ToolContext;
use serde_json::{json, Value};
use std::path::PathBuf;

fn package(event: &str) -> PathBuf {
    earthverse_tests::dev_slice()
        .join("packages/event_packages/standard_event_packages/packages")
        .join(event)
}

fn run(event: &str, op: &str, args: Value) -> Value {
    let scratch = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(package(event), scratch.path());
    let (v, provenance) = operation(op)
        .unwrap()
        .run(&ctx, &args)
        .unwrap_or_else(|e| panic!("{op} on {event}: {e}"));
    assert!(
        !provenance.is_empty()
            || args
                .as_object()
                .is_none_or(|a| !a.values().any(Value::is_string)),
        "{op} recorded no provenance"
    );
    v
}

fn gt(task: &str) -> Value {
    let t: Value = serde_json::from_slice(
        &std::fs::read(earthverse_tests::dev_slice().join(format!("tasks/{task}.json"))).unwrap(),
    )
    .unwrap();
    t["ground_truth"]["primary_gt"].clone()
}

const OPEN_METEO: &str =
    "data/physical_hazard/physical_hazard_001_Open-Meteo_historical_archive.json";
const ERA5: &str = "data/physical_hazard/physical_hazard_002_ERA5-Land_hourly_aggregate_stats.json";

fn series(field: &str) -> Value {
    json!({"path": OPEN_METEO, "field": field, "time_field": field.split('.').next().unwrap().to_string() + ".time"})
}

#[test]
fn heat_wave_figures_of_csx_001_match_the_published_ground_truth() {
    let truth = gt("CSX-001_Q1");
    let calc = &truth["selected_calculation"];
    // peak daily Tmax and its date
    let v = run(
        "CSX-001",
        "ts_peak",
        json!({"series": series("daily.temperature_2m_max")}),
    );
    assert_eq!(v["max"].as_f64(), calc["peak_daily_tmax_c"].as_f64());
    assert_eq!(v["max_time"], calc["peak_tmax_date"]);
    // hottest 3-day mean Tmax
    let v = run(
        "CSX-001",
        "ts_rolling",
        json!({"series": series("daily.temperature_2m_max"), "window": 3}),
    );
    assert!(
        (v["max"].as_f64().unwrap() - calc["hottest_3day_mean_tmax_c"].as_f64().unwrap()).abs()
            < 0.05,
        "{v}"
    );
    assert_eq!(
        v["max_end"].as_str(),
        calc["hottest_3day_window"]
            .as_str()
            .and_then(|w| w.split('/').nth(1))
    );
    // hours at or above 30 °C
    let v = run(
        "CSX-001",
        "ts_exceedance_count",
        json!({"series": series("hourly.temperature_2m"), "threshold": 30, "inclusive": true}),
    );
    assert_eq!(v["count"].as_u64(), calc["hot_hours_ge_30c"].as_u64());
    // the ERA5-Land aggregate maximum that the task rejects
    let v = run(
        "CSX-001",
        "ts_peak",
        json!({"series": {"path": ERA5, "field": "stats.temperature_2m_max_c_max"}}),
    );
    let rejected = truth["invalid_alternative"]["rejected_value_c"]
        .as_f64()
        .unwrap();
    assert!((v["max"].as_f64().unwrap() - rejected).abs() < 0.05, "{v}");
    // the peak understatement if the aggregate were used
    let v = run(
        "CSX-001",
        "percent_change",
        json!({"a": 35.5, "b": 31.26191101074221}),
    );
    assert!(
        (v["difference"].as_f64().unwrap().abs()
            - truth["invalid_alternative"]["peak_underestimate_if_used_c"]
                .as_f64()
                .unwrap())
        .abs()
            < 0.05
    );
}

#[test]
fn twenty_operations_run_on_real_package_files() {
    let doc: Value =
        serde_json::from_slice(&std::fs::read(package("CSX-001").join(OPEN_METEO)).unwrap())
            .unwrap();
    let hourly: Vec<f64> = doc["hourly"]["temperature_2m"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let tmax: Vec<f64> = doc["daily"]["temperature_2m_max"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let tmin: Vec<f64> = doc["daily"]["temperature_2m_min"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let mut ran = std::collections::BTreeSet::new();
    let mut check = |op: &str, event: &str, args: Value| {
        ran.insert(op.to_string());
        run(event, op, args)
    };

    let v = check(
        "ts_describe",
        "CSX-001",
        json!({"series": series("hourly.temperature_2m")}),
    );
    assert_eq!(v["count"].as_u64(), Some(hourly.len() as u64));
    assert!(
        (v["mean"].as_f64().unwrap() - hourly.iter().sum::<f64>() / hourly.len() as f64).abs()
            < 1e-9
    );
    let v = check(
        "ts_resample",
        "CSX-001",
        json!({"series": series("hourly.temperature_2m"), "period": "day", "how": "max"}),
    );
    assert_eq!(v["rows"].as_array().unwrap().len(), 7);
    let v = check(
        "tx_days_above",
        "CSX-001",
        json!({"tasmax": series("daily.temperature_2m_max"), "threshold": 30}),
    );
    assert_eq!(
        v["days_above"].as_u64(),
        Some(tmax.iter().filter(|t| **t > 30.0).count() as u64)
    );
    let v = check(
        "heat_wave_max_length",
        "CSX-001",
        json!({"tasmin": series("daily.temperature_2m_min"), "tasmax": series("daily.temperature_2m_max"), "thresh_tasmin": 14, "thresh_tasmax": 30, "window": 2}),
    );
    let independent = tmin
        .iter()
        .zip(&tmax)
        .fold((0, 0), |(best, cur), (n, x)| {
            let c = if *n > 14.0 && *x > 30.0 { cur + 1 } else { 0 };
            (best.max(c), c)
        })
        .0;
    assert_eq!(
        v["heat_wave_max_length_days"].as_u64(),
        Some(if independent >= 2 { independent } else { 0 } as u64)
    );
    let v = check(
        "degree_days",
        "CSX-001",
        json!({"tas": series("daily.temperature_2m_max"), "kind": "cooling", "base": 18}),
    );
    assert!(
        (v["degree_days"].as_f64().unwrap()
            - tmax.iter().map(|t| (t - 18.0).max(0.0)).sum::<f64>())
        .abs()
            < 1e-9
    );
    let v = check(
        "ts_lag_correlation",
        "CSX-001",
        json!({"a": series("hourly.temperature_2m"), "b": series("hourly.apparent_temperature"), "max_lag": 2}),
    );
    assert_eq!(v["best_lag"], 0);
    let v = check(
        "verif_continuous",
        "CSX-001",
        json!({"forecast": series("hourly.apparent_temperature"), "observed": series("hourly.temperature_2m")}),
    );
    assert_eq!(v["n"].as_u64(), Some(168));
    let v = check(
        "ts_rate_of_change",
        "CSX-001",
        json!({"series": series("hourly.temperature_2m"), "lag": 24}),
    );
    assert!(v["max_rise"].as_f64().unwrap() > 0.0);
    let v = check(
        "ts_events",
        "CSX-001",
        json!({"series": series("daily.temperature_2m_max"), "threshold": 30}),
    );
    assert_eq!(v["events"][0]["start"], "2021-06-26");
    for (op, field) in [
        ("ts_describe", "stats.gpm_event_precip_mm_max"),
        ("ts_peak", "stats.gpm_event_precip_mm_max"),
    ] {
        let v = check(
            op,
            "CSX-001",
            json!({"series": {"path": "data/physical_hazard/physical_hazard_004_GPM_IMERG_V07_event_accumulated_precipitation.json", "field": field}}),
        );
        assert!(v["max"].as_f64().unwrap() > 26.0, "{v}");
    }
    let v = check(
        "ts_cumulative",
        "CSX-001",
        json!({"series": {"path": "data/physical_hazard/physical_hazard_006_CHIRPS_daily_event_accumulated_precipitation.json", "field": "stats.chirps_event_precip_mm_mean"}}),
    );
    assert!((v["total"].as_f64().unwrap() - 5.0027515682979375).abs() < 1e-12);
    let v = check(
        "source_conflicts",
        "CSX-001",
        json!({"reports": [{"source": "GPM", "value": 26.39749960973859}, {"source": "CHIRPS", "value": 26.354912757873535}]}),
    );
    assert_eq!(v["consistent"], true);
    let v = check(
        "ts_anomaly",
        "CSX-001",
        json!({"series": series("daily.temperature_2m_max"), "baseline": series("daily.temperature_2m_min")}),
    );
    assert!(
        (v["baseline_mean"].as_f64().unwrap() - tmin.iter().sum::<f64>() / tmin.len() as f64).abs()
            < 1e-9
    );
    let v = check(
        "ts_peak",
        "CSX-001",
        json!({"series": {"path": "data/physical_hazard/physical_hazard_008_Sentinel-2_SR_Harmonized_dNBR.json", "field": "stats.sentinel2_dnbr_max"}}),
    );
    assert!((v["max"].as_f64().unwrap() - 1.9285103146686948).abs() < 1e-12);
    // geometry: the per-event AOI polygon
    let aoi = "data/geospatial_context/geospatial_context_002_compact_per-event_AOI_derived_from_event_bbox.json";
    let v = check("polygon_area", "CSX-001", json!({"layer": aoi}));
    assert!(v["total_km2"].as_f64().unwrap() > 1000.0, "{v}");
    let v = check("centroid_bbox", "CSX-001", json!({"layer": aoi}));
    assert!(v["centroid_lon"].as_f64().unwrap() < -100.0, "{v}");
    // Natural Earth admin-0 shapefile inside a zip (GDAL /vsizip/)
    let ne =
        "data/geospatial_context/geospatial_context_001_Natural_Earth_Admin-0_physical_basemap.zip";
    let v = check("geojson_summary", "CSX-130", json!({"layer": ne}));
    assert_eq!(
        v["features"].as_u64(),
        Some(177),
        "ne_110m_admin_0_countries has 177 features"
    );
    let v = check(
        "nearest_features",
        "CSX-130",
        json!({"layer": ne, "lat": 48.8566, "lon": 2.3522, "k": 1}),
    );
    assert_eq!(v["nearest"][0]["ADMIN"], "France");
    assert_eq!(v["nearest"][0]["distance_km"].as_f64(), Some(0.0));
    let v = check(
        "top_k_affected",
        "CSX-130",
        json!({"layer": ne, "field": "POP_EST", "k": 2}),
    );
    let top: Vec<&str> = v["top"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["ADMIN"].as_str())
        .collect();
    assert!(top.contains(&"China") && top.contains(&"India"), "{top:?}");
    let v = check(
        "group_by_admin",
        "CSX-130",
        json!({"layer": ne, "group": "CONTINENT", "value": "POP_EST"}),
    );
    assert!(v["groups"].as_array().unwrap().len() >= 6);
    // reports: HTML and a `.bin` that is JSON
    let html = "data/event_reports/event_reports_004_NOAA_Climate.gov_Event_Tracker_-_Pacific_Northwest_heat.html";
    let v = check(
        "html_to_text",
        "CSX-001",
        json!({"path": html, "max_chars": 100000}),
    );
    assert!(
        v["text"].as_str().unwrap().contains("Lytton"),
        "the Climate.gov tracker names Lytton"
    );
    let v = check(
        "report_keyword_hits",
        "CSX-001",
        json!({"path": html, "keywords": ["Lytton", "record"]}),
    );
    assert!(v["hits"][0]["count"].as_u64().unwrap() >= 1);
    let v = check("report_extract_numbers", "CSX-001", json!({"path": html}));
    assert!(v["total_found"].as_u64().unwrap() > 10);
    let v = check(
        "report_extract_dates",
        "CSX-001",
        json!({"path": "data/event_reports/event_reports_003_Locked_event_anchor_June_2021_Pacific_Northwest_heat_wave.json"}),
    );
    assert_eq!(v["earliest"], "2021-06-25");
    let v = check("claim_sentences", "CSX-001", json!({"path": html}));
    assert!(v["count"].as_u64().unwrap() >= 1);
    // images
    let v = check(
        "image_rgb_stats",
        "CSX-001",
        json!({"path": "data/remote_sensing/remote_sensing_005_pre.jpg"}),
    );
    assert!(v["width"].as_u64().unwrap() > 0);
    // provenance hashes equal the sha256 prefixes in the published inventory
    let task: Value = serde_json::from_slice(
        &std::fs::read(earthverse_tests::dev_slice().join("tasks/CSX-001_Q1.json")).unwrap(),
    )
    .unwrap();
    let record = task["event_files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["relative_path"] == OPEN_METEO)
        .unwrap();
    let v = check(
        "provenance_bundle",
        "CSX-001",
        json!({"files": [OPEN_METEO]}),
    );
    assert!(v["files"][0]["sha256"]
        .as_str()
        .unwrap()
        .starts_with(record["sha256_16"].as_str().unwrap()));
    assert!(
        ran.len() >= 20,
        "only {} distinct operations ran: {ran:?}",
        ran.len()
    );
}
