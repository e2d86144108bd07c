//! Every domain operation against a published or independently computed
//! reference value. Each case names its source. File-based cases run on a
//! small package this test writes with the real libraries (GDAL GeoTIFF,
//! NetCDF, Parquet, PNG). Needs the `gdal` and `netcdf` features.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![cfg(all(feature = "gdal", feature = "netcdf"))]

use earthverse_domain_ops::operation;
use earthverse_tool_registry::ToolContext;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

static COVERED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

struct Package {
    _dir: tempfile::TempDir,
    root: PathBuf,
    scratch: PathBuf,
}

fn write_geotiff(
    path: &Path,
    width: usize,
    height: usize,
    transform: [f64; 6],
    values: &[f64],
    nodata: Option<f64>,
) {
    let driver = gdal::DriverManager::get_driver_by_name("GTiff").unwrap();
    let mut ds = driver
        .create_with_band_type::<f32, _>(path, width, height, 1)
        .unwrap();
    ds.set_geo_transform(&transform).unwrap();
    let srs = gdal::spatial_ref::SpatialRef::from_epsg(4326).unwrap();
    ds.set_spatial_ref(&srs).unwrap();
    let mut band = ds.rasterband(1).unwrap();
    if let Some(nd) = nodata {
        band.set_no_data_value(Some(nd)).unwrap();
    }
    let data: Vec<f32> = values.iter().map(|v| *v as f32).collect();
    let mut buf = gdal::raster::Buffer::new((width, height), data);
    band.write((0, 0), (width, height), &mut buf).unwrap();
}

fn write_netcdf(path: &Path, values: &[f64]) {
    let mut f = netcdf::create(path).unwrap();
    f.add_dimension("time", 2).unwrap();
    f.add_dimension("lat", 2).unwrap();
    f.add_dimension("lon", 3).unwrap();
    let mut lat = f.add_variable::<f64>("lat", &["lat"]).unwrap();
    lat.put_values(&[0.0, 60.0], ..).unwrap();
    let mut lon = f.add_variable::<f64>("lon", &["lon"]).unwrap();
    lon.put_values(&[0.0, 1.0, 2.0], ..).unwrap();
    let mut time = f.add_variable::<f64>("time", &["time"]).unwrap();
    time.put_values(&[0.0, 1.0], ..).unwrap();
    let mut v = f
        .add_variable::<f64>("t2m", &["time", "lat", "lon"])
        .unwrap();
    v.put_values(values, ..).unwrap();
}

/// float32 (time 3, lat [0, 60], lon 2) with `_FillValue` −999, NaN, ±inf
/// and values beyond ±9e35: `x` plain, `p` the same raw values packed with
/// scale_factor 2 and add_offset 1. Per cell over time: cell 0 = 1, 3, 5;
/// cell 1 = fill, 2, fill; cell 2 = NaN, 1e36, inf (no valid value);
/// cell 3 = 4, 6, 8 (and −1e37 never appears as valid).
fn write_netcdf_gappy(path: &Path) {
    let mut f = netcdf::create(path).unwrap();
    f.add_dimension("time", 3).unwrap();
    f.add_dimension("lat", 2).unwrap();
    f.add_dimension("lon", 2).unwrap();
    let mut lat = f.add_variable::<f64>("lat", &["lat"]).unwrap();
    lat.put_values(&[0.0, 60.0], ..).unwrap();
    let raw: [f32; 12] = [
        1.0,
        -999.0,
        f32::NAN,
        4.0,
        3.0,
        2.0,
        1.0e36,
        6.0,
        5.0,
        -999.0,
        f32::INFINITY,
        8.0,
    ];
    for (name, packed) in [("x", false), ("p", true)] {
        let mut v = f
            .add_variable::<f32>(name, &["time", "lat", "lon"])
            .unwrap();
        v.put_attribute("_FillValue", -999.0f32).unwrap();
        if packed {
            v.put_attribute("scale_factor", 2.0f32).unwrap();
            v.put_attribute("add_offset", 1.0f32).unwrap();
        }
        v.put_values(&raw, ..).unwrap();
    }
}

fn package() -> &'static Package {
    static PKG: OnceLock<Package> = OnceLock::new();
    PKG.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("TEST-001");
        let data = root.join("data");
        std::fs::create_dir_all(&data).unwrap();
        write_geotiff(
            &data.join("grid.tif"),
            4,
            3,
            [0.0, 0.5, 0.0, 1.5, 0.0, -0.5],
            &[1., 2., 3., 4., 5., 6., 7., 8., 9., 10., 11., -9999.],
            Some(-9999.0),
        );
        write_netcdf(&data.join("field.nc"), &(1..=12).map(f64::from).collect::<Vec<_>>());
        write_netcdf(&data.join("clim.nc"), &[2.0; 12]);
        write_netcdf_gappy(&data.join("gappy.nc"));
        let img = image::RgbImage::from_fn(2, 1, |x, _| if x == 0 { image::Rgb([255, 0, 0]) } else { image::Rgb([0, 0, 255]) });
        img.save(data.join("photo.png")).unwrap();
        std::fs::write(
            data.join("report.html"),
            "<html><head><style>p{}</style><script>var x=1;</script></head><body><h1>Heat</h1><p>Lytton reached 49.6 °C on 29 June 2021.</p>\
             <table><tr><th>Station</th><th>Tmax</th></tr><tr><td>Lytton</td><td>49.6</td></tr></table></body></html>",
        )
        .unwrap();
        std::fs::write(
            data.join("report.txt"),
            "On 2021-06-29 Lytton set a Canadian record. Officials reported 619 deaths in British Columbia. \
             Later, on 30 June 2021 a fire destroyed the village.",
        )
        .unwrap();
        std::fs::write(data.join("report2.txt"), "A later count gave 526 deaths.").unwrap();
        std::fs::write(
            data.join("fires.csv"),
            "latitude,longitude,acq_date,frp,confidence\n50.2,-121.6,2021-06-30,120.5,90\n50.3,-121.5,2021-06-30,80.0,85\n50.1,-121.7,2021-07-01,10.0,40\n",
        )
        .unwrap();
        std::fs::write(
            data.join("series.json"),
            serde_json::to_vec(&json!({"hourly": {
                "time": (0..48).map(|h| format!("2021-06-{:02}T{:02}:00", 25 + h / 24, h % 24)).collect::<Vec<_>>(),
                "temperature_2m": (0..48).map(f64::from).collect::<Vec<_>>()
            }}))
            .unwrap(),
        )
        .unwrap();
        let zones = json!({"type": "FeatureCollection", "features": [
            {"type": "Feature", "properties": {"name": "Z1"}, "geometry": {"type": "Polygon", "coordinates": [[[0,0],[1,0],[1,1],[0,1],[0,0]]]}},
            {"type": "Feature", "properties": {"name": "Z2"}, "geometry": {"type": "Polygon", "coordinates": [[[2,0],[3,0],[3,1],[2,1],[2,0]]]}}
        ]});
        std::fs::write(data.join("zones.geojson"), zones.to_string()).unwrap();
        let points = json!({"type": "FeatureCollection", "features": [
            {"type": "Feature", "properties": {"pop": 10, "class": "house", "value": 100, "type": "hospital", "name": "H"}, "geometry": {"type": "Point", "coordinates": [0.5, 0.5]}},
            {"type": "Feature", "properties": {"pop": 20, "class": "school", "value": 200, "type": "school", "name": "S"}, "geometry": {"type": "Point", "coordinates": [2.5, 0.5]}},
            {"type": "Feature", "properties": {"pop": 30, "class": "house", "value": 300, "type": "school", "name": "F"}, "geometry": {"type": "Point", "coordinates": [5.0, 5.0]}}
        ]});
        std::fs::write(data.join("points.geojson"), points.to_string()).unwrap();
        write_parquet(&data.join("table.parquet"));
        let scratch = dir.path().join("scratch");
        Package { _dir: dir, root, scratch }
    })
}

fn write_parquet(path: &Path) {
    use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let batch = RecordBatch::try_from_iter(vec![
        (
            "day",
            Arc::new(StringArray::from(vec![
                "2021-06-25",
                "2021-06-26",
                "2021-06-27",
            ])) as ArrayRef,
        ),
        (
            "tmax",
            Arc::new(Float64Array::from(vec![30.0, 35.5, 33.0])) as ArrayRef,
        ),
    ])
    .unwrap();
    let file = std::fs::File::create(path).unwrap();
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn run(op: &str, args: Value) -> Value {
    COVERED.lock().unwrap().insert(op.to_string());
    let pkg = package();
    let ctx = ToolContext::new(&pkg.root, &pkg.scratch);
    let operation = operation(op).unwrap_or_else(|| panic!("no operation {op}"));
    match operation.run(&ctx, &args) {
        Ok((v, _)) => v,
        Err(e) => panic!("{op} failed: {e}"),
    }
}

fn f(v: &Value, path: &str) -> f64 {
    let mut cur = v;
    for seg in path.split('.') {
        cur = match (cur, seg.parse::<usize>()) {
            (Value::Array(_), Ok(i)) => &cur[i],
            _ => &cur[seg],
        };
    }
    cur.as_f64()
        .unwrap_or_else(|| panic!("no number at {path} in {v}"))
}

fn close(v: &Value, path: &str, expected: f64, tol: f64) {
    let got = f(v, path);
    assert!(
        (got - expected).abs() <= tol,
        "{path}: got {got}, expected {expected} ± {tol}\n{v}"
    );
}

// ---------------------------------------------------------------- reports

#[test]
fn reports_and_text() {
    let v = run(
        "report_extract_numbers",
        json!({"text": "The heat wave killed 619 people. Peak temperature reached 49.6 °C at Lytton."}),
    );
    close(&v, "numbers.0.value", 619.0, 0.0);
    assert_eq!(v["numbers"][0]["unit"], "people");
    close(&v, "numbers.1.value", 49.6, 1e-9);
    let v = run(
        "report_extract_dates",
        json!({"text": "From 25 June 2021 to July 1, 2021, peaking 2021-06-29."}),
    );
    assert_eq!(
        (v["earliest"].as_str(), v["latest"].as_str()),
        (Some("2021-06-25"), Some("2021-07-01"))
    );
    let v = run(
        "report_extract_places",
        json!({"text": "Flooding in Ahr Valley at 50.5°N, 7.1°E and near Bad Neuenahr."}),
    );
    close(&v, "coordinates.0.lat", 50.5, 0.0);
    close(&v, "coordinates.0.lon", 7.1, 0.0);
    let v = run(
        "report_keyword_hits",
        json!({"text": "Rain, rain and more RAIN.", "keywords": ["rain"]}),
    );
    close(&v, "hits.0.count", 3.0, 0.0);
    let v = run("report_sections", json!({"text": "# A\nx\n## B\ny"}));
    assert_eq!(v["sections"][1]["title"], "B");
    let v = run("html_to_text", json!({"path": "data/report.html"}));
    let text = v["text"].as_str().unwrap();
    assert!(
        text.contains("Lytton reached 49.6") && !text.contains("var x"),
        "{text}"
    );
    let v = run("html_tables", json!({"path": "data/report.html"}));
    assert_eq!(v["tables"][0][1], json!(["Lytton", "49.6"]));
    let v = run(
        "claim_sentences",
        json!({"text": "Rainfall reached 250 mm. The sky was grey. Wind was calm."}),
    );
    close(&v, "count", 1.0, 0.0);
    // 1 kt = 1852 m / 3600 s (definition); 32 °F = 0 °C
    close(
        &run(
            "unit_convert",
            json!({"value": 100, "from": "kt", "to": "m/s"}),
        ),
        "value",
        51.444_444,
        1e-5,
    );
    close(
        &run(
            "unit_convert",
            json!({"value": 32, "from": "degF", "to": "degC"}),
        ),
        "value",
        0.0,
        1e-12,
    );
    close(
        &run(
            "unit_convert",
            json!({"value": 29.92, "from": "inHg", "to": "hPa"}),
        ),
        "value",
        1013.2,
        0.1,
    );
    close(
        &run("percent_change", json!({"a": 200, "b": 250})),
        "percent_change",
        25.0,
        1e-12,
    );
    let v = run(
        "source_conflicts",
        json!({"reports": [{"source": "A", "value": 100}, {"source": "B", "value": 102}, {"source": "C", "value": 150}]}),
    );
    close(&v, "median", 102.0, 0.0);
    assert_eq!(v["conflicting"][0]["source"], "C");
    let v = run("event_timeline", json!({"paths": ["data/report.txt"]}));
    assert_eq!(v["timeline"][0]["date"], "2021-06-29");
    assert_eq!(v["timeline"][1]["date"], "2021-06-30");
    let v = run(
        "impact_tally",
        json!({"paths": ["data/report.txt", "data/report2.txt"]}),
    );
    close(&v, "by_source.0.deaths", 619.0, 0.0);
    close(&v, "ranges.deaths.min", 526.0, 0.0);
    // NHC Saffir–Simpson: 113–136 kt is category 4; NWS EF scale: 136–165 mph is EF3; Beaufort 5 is 8.0–10.7 m/s
    assert_eq!(
        run(
            "severity_scale",
            json!({"scale": "saffir_simpson_kt", "value": 130})
        )["class"],
        "category_4"
    );
    assert_eq!(
        run(
            "severity_scale",
            json!({"scale": "enhanced_fujita_mph", "value": 150})
        )["class"],
        "EF3"
    );
    assert_eq!(
        run(
            "severity_scale",
            json!({"scale": "beaufort_ms", "value": 10})
        )["class"],
        "5"
    );
    let v = run(
        "warning_level_lookup",
        json!({"value": 42, "levels": [{"level": "yellow", "threshold": 35}, {"level": "orange", "threshold": 40}, {"level": "red", "threshold": 45}]}),
    );
    assert_eq!(v["level"], "orange");
    let v = run(
        "csv_filter_aggregate",
        json!({"path": "data/fires.csv", "value": "frp", "group_by": "acq_date"}),
    );
    close(&v, "groups.0.value", 200.5, 1e-9);
}

// ------------------------------------------------------------ time series

#[test]
fn time_series_and_extremes() {
    let v = run("ts_describe", json!({"series": [1, 2, 3, 4, 5]}));
    close(&v, "mean", 3.0, 0.0);
    close(&v, "std", 1.581_138_83, 1e-8); // sample std, numpy ddof=1
    let v = run(
        "ts_describe",
        json!({"series": {"path": "data/table.parquet", "field": "tmax"}}),
    );
    close(&v, "max", 35.5, 0.0);
    let v = run(
        "ts_resample",
        json!({"series": {"path": "data/series.json", "field": "hourly.temperature_2m", "time_field": "hourly.time"}, "period": "day", "how": "mean"}),
    );
    close(&v, "rows.0.value", 11.5, 1e-12);
    close(&v, "rows.1.value", 35.5, 1e-12);
    close(
        &run("ts_rolling", json!({"series": [1, 2, 3, 4], "window": 2})),
        "max",
        3.5,
        0.0,
    );
    close(
        &run("ts_anomaly", json!({"series": [1, 2, 3]})),
        "anomalies.0",
        -1.0,
        0.0,
    );
    // numpy.percentile(range(1, 11), 90) == 9.1
    close(
        &run(
            "ts_percentile_threshold",
            json!({"series": [1,2,3,4,5,6,7,8,9,10]}),
        ),
        "threshold",
        9.1,
        1e-12,
    );
    close(
        &run(
            "ts_exceedance_count",
            json!({"series": [1, 5, 7, 3], "threshold": 4}),
        ),
        "count",
        2.0,
        0.0,
    );
    let v = run(
        "ts_longest_spell",
        json!({"series": [5, 5, 1, 5, 5, 5], "threshold": 4}),
    );
    close(&v, "length", 3.0, 0.0);
    close(&v, "start_index", 3.0, 0.0);
    let v = run(
        "ts_events",
        json!({"series": [0, 5, 6, 0, 7, 0], "threshold": 4}),
    );
    close(&v, "event_count", 2.0, 0.0);
    close(&v, "events.0.integral", 3.0, 0.0);
    let v = run("ts_peak", json!({"series": [3, 9, 1]}));
    close(&v, "max_index", 1.0, 0.0);
    close(&v, "min", 1.0, 0.0);
    let v = run("ts_cumulative", json!({"series": [1, null, 2]}));
    close(&v, "total", 3.0, 0.0);
    close(&v, "missing", 1.0, 0.0);
    let v = run(
        "ts_rate_of_change",
        json!({"series": [1010, 1005, 990, 1000]}),
    );
    close(&v, "max_fall", -15.0, 0.0);
    close(&v, "max_rise", 10.0, 0.0);
    let v = run(
        "ts_linear_trend",
        json!({"series": [1, 3, 5, 7, 9, 11], "per": 10}),
    );
    close(&v, "slope", 2.0, 1e-12);
    close(&v, "slope_per", 20.0, 1e-12);
    close(&v, "r2", 1.0, 1e-12);
    // Mann–Kendall on 1..10: S = 45, Var(S) = n(n−1)(2n+5)/18 = 125, Z = 44/√125
    let v = run("ts_mann_kendall", json!({"series": [1,2,3,4,5,6,7,8,9,10]}));
    close(&v, "s", 45.0, 0.0);
    close(&v, "var_s", 125.0, 1e-9);
    close(&v, "z", 3.935_479_64, 1e-6);
    close(&v, "p_value", 8.303e-5, 1e-6);
    // Theil–Sen: median of the 10 pairwise slopes of [1,2,3,4,100] is 1 (robust to the outlier)
    close(
        &run("ts_sens_slope", json!({"series": [1, 2, 3, 4, 100]})),
        "slope",
        1.0,
        0.0,
    );
    let v = run(
        "ts_seasonal_cycle",
        json!({"series": {"path": "data/series.json", "field": "hourly.temperature_2m", "time_field": "hourly.time"}}),
    );
    close(&v, "monthly_mean.06", 23.5, 1e-12);
    let v = run(
        "ts_lag_correlation",
        json!({"a": [1, 5, 2, 8, 3, 9, 4, 7], "b": [0, 0, 1, 5, 2, 8, 3, 9], "max_lag": 3}),
    );
    close(&v, "best_lag", 2.0, 0.0);
    close(&v, "best_r", 1.0, 1e-12);
    let s = json!({"path": "data/series.json", "field": "hourly.temperature_2m", "time_field": "hourly.time"});
    let v = run("ts_align", json!({"a": s, "b": s, "match_chars": 10}));
    close(&v, "matched", 48.0, 0.0);
    let v = run("eva_block_maxima", json!({"series": s, "block": "day"}));
    close(&v, "maxima.1.max", 47.0, 0.0);
    let v = run(
        "eva_peaks_over_threshold",
        json!({"series": [0, 5, 6, 0, 0, 0, 7], "threshold": 4, "r": 1}),
    );
    close(&v, "count", 2.0, 0.0);
    close(&v, "peaks.0.value", 6.0, 0.0);
    // GEV with known parameters (ξ=10, α=2, k=0.1): quantiles at plotting positions, refit by L-moments
    let gev: Vec<f64> = (0..2000)
        .map(|i| {
            let p = (i as f64 + 0.5) / 2000.0;
            10.0 + 2.0 / 0.1 * (1.0 - (-p.ln()).powf(0.1))
        })
        .collect();
    let v = run("eva_fit_gev", json!({"maxima": gev}));
    close(&v, "location", 10.0, 0.05);
    close(&v, "scale", 2.0, 0.05);
    close(&v, "shape_k", 0.1, 0.02);
    // GPD excesses with σ=2, ξ=0.2 above u=5
    let gpd: Vec<f64> = (0..2000)
        .map(|i| {
            let p = (i as f64 + 0.5) / 2000.0;
            5.0 + 2.0 / 0.2 * ((1.0 - p).powf(-0.2) - 1.0)
        })
        .collect();
    let v = run("eva_fit_gpd", json!({"series": gpd, "threshold": 5.0}));
    close(&v, "scale", 2.0, 0.1);
    close(&v, "shape_xi", 0.2, 0.03);
    // Gumbel(0, 1): the 100-block return level is −ln(−ln 0.99) = 4.600
    let gum: Vec<f64> = (0..2000)
        .map(|i| {
            let p = (i as f64 + 0.5) / 2000.0;
            -(-p.ln()).ln()
        })
        .collect();
    close(
        &run(
            "eva_return_level",
            json!({"maxima": gum, "return_period": 100, "bootstrap": 50}),
        ),
        "return_level",
        4.600,
        0.1,
    );
    close(
        &run("eva_return_period", json!({"maxima": gum, "value": 4.600})),
        "return_period",
        100.0,
        10.0,
    );
    // exponential data: mean excess is the scale (1) at every threshold
    let ex: Vec<f64> = (0..4000)
        .map(|i| -(1.0 - (i as f64 + 0.5) / 4000.0).ln())
        .collect();
    close(
        &run("eva_mean_residual_life", json!({"series": ex})),
        "mrl.0.mean_excess",
        1.0,
        0.05,
    );
}

// --------------------------------------------------------- vector/exposure

#[test]
fn vector_and_exposure() {
    let v = run("geojson_summary", json!({"layer": "data/points.geojson"}));
    close(&v, "features", 3.0, 0.0);
    close(&v, "bbox.2", 5.0, 0.0);
    // one degree of arc on a sphere of R = 6371.0088 km
    close(
        &run(
            "haversine_distance",
            json!({"lat1": 0, "lon1": 0, "lat2": 0, "lon2": 1}),
        ),
        "distance_km",
        111.195_08,
        1e-4,
    );
    close(
        &run(
            "haversine_distance",
            json!({"lat1": 0, "lon1": 0, "lat2": 0, "lon2": 1}),
        ),
        "initial_bearing_deg",
        90.0,
        1e-9,
    );
    let v = run(
        "nearest_features",
        json!({"layer": "data/points.geojson", "lat": 0.6, "lon": 0.5, "k": 1}),
    );
    close(&v, "nearest.0.pop", 10.0, 0.0);
    close(
        &run(
            "points_in_polygon",
            json!({"points": "data/points.geojson", "polygons": "data/zones.geojson"}),
        ),
        "inside_count",
        2.0,
        0.0,
    );
    close(
        &run(
            "within_distance",
            json!({"layer": "data/points.geojson", "lat": 0.5, "lon": 0.5, "radius_km": 1}),
        ),
        "count",
        1.0,
        0.0,
    );
    // 1°×1° cell on the equator: R²·Δλ·(sin 1° − sin 0°) = 12,363.72 km²
    let v = run("polygon_area", json!({"layer": "data/zones.geojson"}));
    close(&v, "areas_km2.0", 12_363.718, 0.01);
    let line = json!({"type": "Feature", "properties": {}, "geometry": {"type": "LineString", "coordinates": [[0, 0], [0, 1], [1, 1]]}});
    close(
        &run("line_length", json!({"layer": line})),
        "total_km",
        222.373_22,
        1e-3,
    );
    close(
        &run("centroid_bbox", json!({"layer": "data/points.geojson"})),
        "centroid_lon",
        8.0 / 3.0,
        1e-12,
    );
    assert_eq!(
        run(
            "spatial_join",
            json!({"points": "data/points.geojson", "polygons": "data/zones.geojson", "key": "name"})
        )["rows"][1]["joined"],
        "Z2"
    );
    let v = run(
        "group_by_admin",
        json!({"layer": "data/points.geojson", "group": "class", "value": "pop"}),
    );
    close(&v, "groups.0.sum", 40.0, 0.0);
    let v = run(
        "exposure_population",
        json!({"population": "data/points.geojson", "footprint": "data/zones.geojson", "field": "pop"}),
    );
    close(&v, "exposed_population", 30.0, 0.0);
    close(&v, "share_pct", 50.0, 1e-12);
    let v = run(
        "exposure_assets",
        json!({"assets": "data/points.geojson", "footprint": "data/zones.geojson"}),
    );
    close(&v, "by_class.1.value", 200.0, 0.0);
    let dmg = json!({"type": "FeatureCollection", "features": [
        {"type": "Feature", "properties": {"damage_grade": "destroyed"}, "geometry": null},
        {"type": "Feature", "properties": {"damage_grade": "damaged"}, "geometry": null},
        {"type": "Feature", "properties": {"damage_grade": "damaged"}, "geometry": null}]});
    close(
        &run("damage_grade_distribution", json!({"layer": dmg})),
        "grades.0.count",
        2.0,
        0.0,
    );
    let v = run(
        "vulnerability_curve_apply",
        json!({"intensities": [0.5, 3], "curve_x": [0, 1, 2], "curve_y": [0, 0.5, 1]}),
    );
    close(&v, "damage_ratio.0", 0.25, 1e-12);
    close(&v, "damage_ratio.1", 1.0, 0.0);
    close(
        &run(
            "expected_loss",
            json!({"values": [100, 200], "damage_ratios": [0.1, 0.5]}),
        ),
        "expected_loss",
        110.0,
        1e-12,
    );
    close(
        &run(
            "top_k_affected",
            json!({"layer": "data/points.geojson", "field": "pop", "k": 1}),
        ),
        "top.0.pop",
        30.0,
        0.0,
    );
    let v = run(
        "track_speed_heading",
        json!({"lats": [0, 0], "lons": [0, 1], "hours": [0, 10]}),
    );
    close(&v, "segments.0.speed_kmh", 11.119_508, 1e-5);
    close(&v, "segments.0.heading_deg", 90.0, 1e-9);
    let v = run(
        "track_closest_approach",
        json!({"lats": [0, 0], "lons": [0, 2], "hours": [0, 10], "site_lat": 1, "site_lon": 1}),
    );
    close(&v, "min_distance_km", 111.195, 1e-2);
    close(&v, "time_hours", 5.0, 1e-9);
}

// ---------------------------------------------------------- raster and EO

#[test]
fn raster_and_earth_observation() {
    let v = run("raster_info", json!({"path": "data/grid.tif"}));
    close(&v, "width", 4.0, 0.0);
    close(&v, "height", 3.0, 0.0);
    // values 1..11 with one nodata pixel: population std of 1..11 is √10
    let v = run("raster_band_stats", json!({"path": "data/grid.tif"}));
    close(&v, "mean", 6.0, 1e-12);
    close(&v, "std", 10f64.sqrt(), 1e-9);
    close(&v, "valid_fraction", 11.0 / 12.0, 1e-12);
    // numpy.histogram([1, 2, 3, 4], [0, 2, 4]) → [1, 3]
    assert_eq!(
        run(
            "raster_histogram",
            json!({"pixels": [1, 2, 3, 4], "edges": [0, 2, 4]})
        )["counts"],
        json!([1, 3])
    );
    // pixels 10 and 11 lie in the row spanning 0–0.5°N: area R²·0.5°·sin 0.5° each
    let v = run(
        "raster_threshold_area",
        json!({"pixels": "data/grid.tif", "value": 10}),
    );
    close(&v, "pixels", 2.0, 0.0);
    close(&v, "area_km2", 2.0 * 3_091.047_234, 0.01);
    let zone = json!({"type": "Feature", "properties": {"name": "NW"}, "geometry": {"type": "Polygon", "coordinates": [[[0, 0.5], [1, 0.5], [1, 1.5], [0, 1.5], [0, 0.5]]]}});
    close(
        &run(
            "raster_zonal_stats",
            json!({"path": "data/grid.tif", "zones": zone}),
        ),
        "zones.0.mean",
        3.5,
        1e-12,
    );
    let v = run(
        "raster_sample_points",
        json!({"path": "data/grid.tif", "xs": [0.25, 1.75], "ys": [1.25, 0.25]}),
    );
    assert_eq!(v["values"], json!([1.0, null]));
    let v = run(
        "raster_difference",
        json!({"pre": [1, 2, 3], "post": [2, 2, 1]}),
    );
    close(&v, "mean", -1.0 / 3.0, 1e-12);
    close(&v, "increase_pixels", 1.0, 0.0);
    let v = run(
        "raster_reclassify",
        json!({"pixels": [1, 5, 10], "breaks": [2, 8]}),
    );
    close(&v, "classes.1.pixels", 1.0, 0.0);
    let v = run(
        "raster_patches",
        json!({"pixels": [1, 1, 0, 0, 0, 0, 1, 0, 1], "width": 3, "value": 1}),
    );
    close(&v, "patch_count", 3.0, 0.0);
    close(&v, "largest_pixels.0", 2.0, 0.0);
    close(
        &run("index_ndvi", json!({"nir": [0.5], "red": [0.1]})),
        "ndvi.mean",
        0.4 / 0.6,
        1e-12,
    );
    close(
        &run(
            "index_ndwi",
            json!({"green": [0.3, 0.1], "nir_or_swir": [0.1, 0.3]}),
        ),
        "water_pixels",
        1.0,
        0.0,
    );
    // NBR pre = 0.4/0.6, post = −0.1/0.5 → dNBR 0.8667: USGS "high severity" (≥ 0.66)
    let v = run(
        "index_nbr_dnbr",
        json!({"nir_pre": [0.5], "swir_pre": [0.1], "nir_post": [0.2], "swir_post": [0.3]}),
    );
    close(&v, "dnbr.mean", 0.4 / 0.6 + 0.2, 1e-12);
    close(&v, "severity_classes.high", 1.0, 0.0);
    let v = run(
        "flood_extent_change",
        json!({"pre": [0, 1, 0, 1], "post": [1, 1, 0, 0], "pixel_area_km2": 2}),
    );
    close(&v, "newly_flooded_pixels", 1.0, 0.0);
    close(&v, "newly_flooded_km2", 2.0, 0.0);
    close(
        &run("burned_area", json!({"dnbr": [0.05, 0.2, 0.5]})),
        "burned_pixels",
        2.0,
        0.0,
    );
    // plane z = x·10 m on 10 m cells: slope 45°, facing west (downslope to −x)
    let plane: Vec<f64> = (0..9).map(|i| (i % 3) as f64 * 10.0).collect();
    let v = run(
        "dem_slope_aspect",
        json!({"dem": plane, "width": 3, "cell_size_m": 10}),
    );
    close(&v, "first_slope_deg", 45.0, 1e-9);
    close(&v, "first_aspect_deg", 270.0, 1e-9);
    let v = run(
        "dem_bathtub_inundation",
        json!({"dem": [0, 1, 2, 3], "water_level_m": 1.5, "pixel_area_km2": 1}),
    );
    close(&v, "inundated_km2", 2.0, 0.0);
    close(&v, "mean_depth_m", 1.0, 1e-12);
    let v = run("image_rgb_stats", json!({"path": "data/photo.png"}));
    close(&v, "channels.0.mean", 127.5, 1e-12);
    close(&v, "channels.0.std", 127.5, 1e-12);
    let v = run("netcdf_info", json!({"path": "data/field.nc"}));
    close(&v, "dimensions.lon", 3.0, 0.0);
    // t2m = 1..12 over (time 2, lat [0, 60], lon 3)
    close(
        &run(
            "netcdf_subset",
            json!({"path": "data/field.nc", "variable": "t2m", "lat_min": 50, "lat_max": 70}),
        ),
        "mean",
        8.0,
        1e-12,
    );
    // cos-lat weights 1 and 0.5: t0 = (6 + 0.5·15)/4.5 = 3, t1 = (24 + 0.5·33)/4.5 = 9
    let v = run(
        "netcdf_field_mean",
        json!({"path": "data/field.nc", "variable": "t2m"}),
    );
    close(&v, "field_mean.0", 3.0, 1e-12);
    close(&v, "field_mean.1", 9.0, 1e-12);
    close(
        &run(
            "netcdf_time_stat",
            json!({"path": "data/field.nc", "variable": "t2m"}),
        ),
        "weighted_mean",
        6.0,
        1e-12,
    );
    // per-cell stats skip fill, NaN, inf and |x| > 9e35; cell 2 has none
    // valid. cos-lat weights 1, 1, (cell 2 skipped), 0.5:
    // mean [3, 2, –, 6] → (3 + 2 + 3)/2.5 = 3.2; max [5, 2, –, 8] → 4.4;
    // min [1, 2, –, 4] → 2; packed (2x + 1) mean [7, 5, –, 13] → 7.4
    for (var, stat, wmean, min, max) in [
        ("x", "mean", 3.2, 2.0, 6.0),
        ("x", "max", 4.4, 2.0, 8.0),
        ("x", "min", 2.0, 1.0, 4.0),
        ("p", "mean", 7.4, 5.0, 13.0),
        ("p", "max", 9.8, 5.0, 17.0),
    ] {
        let v = run(
            "netcdf_time_stat",
            json!({"path": "data/gappy.nc", "variable": var, "stat": stat}),
        );
        close(&v, "weighted_mean", wmean, 1e-12);
        close(&v, "min", min, 0.0);
        close(&v, "max", max, 0.0);
        close(&v, "valid_count", 3.0, 0.0);
        close(&v, "valid_fraction", 0.75, 0.0);
    }
    close(
        &run(
            "netcdf_anomaly",
            json!({"path": "data/field.nc", "variable": "t2m", "climatology_path": "data/clim.nc"}),
        ),
        "anomaly.1",
        7.0,
        1e-12,
    );
}

// -------------------------------------------------- meteorology and climate

#[test]
fn meteorology_thermodynamics_and_heat() {
    close(
        &run("wind_speed", json!({"u": 3, "v": 4})),
        "wind_speed",
        5.0,
        0.0,
    );
    // MetPy docs: wind_direction(10 m/s, 10 m/s) = 225°
    close(
        &run("wind_direction", json!({"u": 10, "v": 10})),
        "wind_direction_deg",
        225.0,
        1e-9,
    );
    // Bolton-based values, evaluated independently in Python
    close(
        &run("dewpoint_from_rh", json!({"t_c": 25, "rh_pct": 50})),
        "dewpoint_c",
        13.8676,
        1e-3,
    );
    close(
        &run("rh_from_dewpoint", json!({"t_c": 25, "td_c": 13.867_617})),
        "rh_pct",
        50.0,
        1e-4,
    );
    // WMO tables: es(20 °C) = 23.39 hPa; Bolton's fit gives 23.37
    close(
        &run("saturation_vapor_pressure", json!({"t_c": 20})),
        "es_hpa",
        23.39,
        0.03,
    );
    close(
        &run("vapor_pressure_deficit", json!({"t_c": 20, "rh_pct": 50})),
        "vpd_hpa",
        11.6847,
        1e-3,
    );
    // MetPy docs: potential_temperature(800 hPa, 273 K) = 290.96 K
    close(
        &run("potential_temperature", json!({"p_hpa": 800, "t_k": 273})),
        "theta_k",
        290.96,
        0.02,
    );
    close(
        &run(
            "equivalent_potential_temperature",
            json!({"p_hpa": 850, "t_c": 20, "td_c": 18}),
        ),
        "theta_e_k",
        353.94,
        0.05,
    );
    // Stull (2011): T = 20 °C, RH = 50 % gives Tw = 13.7 °C
    close(
        &run("wet_bulb_temperature", json!({"t_c": 20, "rh_pct": 50})),
        "wet_bulb_c",
        13.7,
        0.05,
    );
    let v = run("lcl", json!({"p_hpa": 1000, "t_c": 30, "td_c": 20}));
    close(&v, "lcl_temperature_c", 17.665, 1e-3);
    close(&v, "lcl_pressure_hpa", 864.68, 0.01);
    close(&v, "lcl_height_m_espy", 1250.0, 0.0);
    // parcel below the LCL follows the dry adiabat T0 (p/p0)^κ; an environment 1 K colder
    // than the parcel above the surface gives CAPE = Rd·(½ ln(p0/p1) + ln(p1/pN))
    let p = [1000.0, 950.0, 900.0, 800.0, 700.0, 600.0, 500.0];
    let probe = run(
        "cape_cin",
        json!({"p_hpa": p, "t_c": [30, 25, 20, 15, 5, -5, -15], "td_c": [20, 0, 0, 0, -10, -20, -30]}),
    );
    close(&probe, "parcel_temperature_c.1", 25.5897, 1e-3);
    let parcel: Vec<f64> = probe["parcel_temperature_c"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let env: Vec<f64> = parcel
        .iter()
        .enumerate()
        .map(|(i, t)| if i == 0 { *t } else { t - 1.0 })
        .collect();
    let v = run(
        "cape_cin",
        json!({"p_hpa": p, "t_c": env, "td_c": [20, 0, 0, 0, -10, -20, -30]}),
    );
    let expected = 287.04749 * (0.5 * (1000f64 / 950.0).ln() + (950f64 / 500.0).ln());
    close(&v, "cape_j_per_kg", expected, 1e-6);
    close(&v, "cin_j_per_kg", 0.0, 0.0);
    let es = |t: f64| 6.112 * (17.67 * t / (t + 243.5)).exp();
    let q = |p: f64, td: f64| {
        let w = 0.622 * es(td) / (p - es(td));
        w / (1.0 + w)
    };
    let pw = 0.5 * (q(1000.0, 20.0) + q(900.0, 10.0)) * 10_000.0 / 9.80665;
    close(
        &run(
            "precipitable_water",
            json!({"p_hpa": [1000, 900], "td_c": [20, 10]}),
        ),
        "precipitable_water_mm",
        pw,
        1e-9,
    );
    // NWS heat-index chart: 90 °F/70 % → 106 °F; 86 °F/90 % → 105 °F; 100 °F/40 % → 109 °F
    close(
        &run(
            "heat_index",
            json!({"t": 90, "rh_pct": 70, "units": "degF"}),
        ),
        "heat_index",
        106.0,
        0.5,
    );
    close(
        &run(
            "heat_index",
            json!({"t": 86, "rh_pct": 90, "units": "degF"}),
        ),
        "heat_index",
        105.0,
        0.5,
    );
    close(
        &run(
            "heat_index",
            json!({"t": 100, "rh_pct": 40, "units": "degF"}),
        ),
        "heat_index",
        109.0,
        0.5,
    );
    // NWS wind-chill chart: 0 °F with 15 mph → −19 °F
    close(
        &run("windchill", json!({"t": 0, "wind": 15, "units": "degF"})),
        "wind_chill",
        -19.0,
        0.5,
    );
    // 90 °F = 32.22 °C at 70 %: the heat index (106 °F = 41.1 °C)
    close(
        &run(
            "apparent_temperature",
            json!({"t_c": 32.2222, "rh_pct": 70, "wind_kmh": 5}),
        ),
        "apparent_temperature_c",
        41.1,
        0.3,
    );
    // Environment Canada humidex table: 30 °C with dewpoint 15 °C → 34
    close(
        &run("humidex", json!({"t_c": 30, "td_c": 15})),
        "humidex",
        34.0,
        0.1,
    );
    close(
        &run(
            "mean_radiant_temperature",
            json!({"tg_c": 40, "ta_c": 30, "wind_ms": 0.5}),
        ),
        "mrt_c",
        52.5295,
        1e-3,
    );
    close(
        &run("wbgt", json!({"tw_c": 25, "tg_c": 40, "ta_c": 30})),
        "wbgt_c",
        28.5,
        1e-12,
    );
}

#[test]
fn climate_indices_drought_and_evapotranspiration() {
    let v = run(
        "heat_wave_frequency",
        json!({"tasmin": [23, 23, 23, 10, 23, 23, 23, 23], "tasmax": [31, 31, 31, 31, 31, 31, 31, 31]}),
    );
    close(&v, "heat_wave_events", 2.0, 0.0);
    close(
        &run(
            "heat_wave_max_length",
            json!({"tasmin": [23, 23, 23, 10, 23, 23, 23, 23], "tasmax": [31, 31, 31, 31, 31, 31, 31, 31]}),
        ),
        "heat_wave_max_length_days",
        4.0,
        0.0,
    );
    close(
        &run("tx_days_above", json!({"tasmax": [24, 26, 30]})),
        "days_above",
        2.0,
        0.0,
    );
    close(
        &run("frost_days", json!({"tasmin": [-1, 0, 1]})),
        "frost_days",
        1.0,
        0.0,
    );
    close(
        &run(
            "warm_spell_duration_index",
            json!({"tasmax": [31, 31, 31, 31, 31, 31, 20, 31], "tx90": 30}),
        ),
        "wsdi_days",
        6.0,
        0.0,
    );
    close(
        &run(
            "cold_spell_duration_index",
            json!({"tasmin": [-5, -5, -5, -5, -5, -5, -5, 3], "tn10": -2}),
        ),
        "csdi_days",
        7.0,
        0.0,
    );
    close(
        &run("degree_days", json!({"tas": [12, 8, 15], "base": 10})),
        "degree_days",
        7.0,
        0.0,
    );
    close(
        &run(
            "max_consecutive_dry_days",
            json!({"pr": [0, 0, 5, 0, 0, 0]}),
        ),
        "cdd_days",
        3.0,
        0.0,
    );
    close(
        &run("max_consecutive_wet_days", json!({"pr": [1, 2, 0, 3]})),
        "cwd_days",
        2.0,
        0.0,
    );
    close(
        &run("max_n_day_precip", json!({"pr": [1, 10, 20, 5], "n": 2})),
        "rx_nday_mm",
        30.0,
        0.0,
    );
    close(
        &run("heavy_precip_days", json!({"pr": [5, 10, 25]})),
        "days",
        2.0,
        0.0,
    );
    // numpy.percentile(1..20, 95) = 19.05: only the 20 mm day lies above
    close(
        &run(
            "very_wet_day_total",
            json!({"pr": (1..=20).collect::<Vec<_>>()}),
        ),
        "very_wet_total_mm",
        20.0,
        0.0,
    );
    // exponential (= gamma with α = 1) monthly totals: SPI(x) = Φ⁻¹(F(x)); the median month has SPI ≈ 0
    let u: Vec<f64> = (0..30).map(|y| (y as f64 + 0.5) / 30.0).collect();
    let pr: Vec<f64> = (0..360)
        .map(|i| -50.0 * (1.0 - u[(i / 12 * 7 + i % 12) % 30]).ln())
        .collect();
    let v = run("spi", json!({"pr_monthly": pr, "scale": 1}));
    let spi: Vec<f64> = v["spi"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect();
    let mean = spi.iter().sum::<f64>() / spi.len() as f64;
    assert!(mean.abs() < 0.1, "SPI mean {mean}");
    let idx = pr
        .iter()
        .enumerate()
        .min_by(|a, b| {
            (a.1 - 50.0 * 2f64.ln())
                .abs()
                .total_cmp(&(b.1 - 50.0 * 2f64.ln()).abs())
        })
        .unwrap()
        .0;
    assert!(spi[idx].abs() < 0.15, "SPI at the median {}", spi[idx]);
    let v = run(
        "spei",
        json!({"pr_monthly": pr, "pet_monthly": vec![10.0; 360], "scale": 1}),
    );
    let spei: Vec<f64> = v["spei"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    let m = spei.iter().sum::<f64>() / spei.len() as f64;
    let sd = (spei.iter().map(|x| (x - m).powi(2)).sum::<f64>() / spei.len() as f64).sqrt();
    assert!(
        m.abs() < 0.15 && (sd - 1.0).abs() < 0.15,
        "SPEI mean {m} sd {sd}"
    );
    // Thornthwaite (1948) equations evaluated independently in Python for a 45°N climate
    let t = [2, 4, 8, 12, 16, 20, 22, 21, 17, 12, 6, 3];
    let v = run("pet_thornthwaite", json!({"tas_monthly": t, "lat": 45}));
    close(&v, "heat_index_I", 50.8653, 1e-3);
    close(&v, "pet_mm.6", 138.128, 0.01);
    // FAO-56 Example 8 and 9: 20°S on 3 September: Ra = 32.2 MJ m⁻² d⁻¹, N = 11.7 h
    let v = run(
        "extraterrestrial_radiation",
        json!({"lat": -20, "doy": 246}),
    );
    close(&v, "ra_mj_m2_day", 32.2, 0.05);
    close(&v, "daylight_hours", 11.7, 0.05);
    close(
        &run(
            "pet_hargreaves",
            json!({"tmin_c": 20, "tmax_c": 30, "lat": -20, "doy": 246}),
        ),
        "et0_mm_day",
        4.0889,
        1e-3,
    );
    // FAO-56 Example 18 (Uccle, 6 July): Rn = 13.28 MJ m⁻² d⁻¹, ET0 = 3.9 mm/day
    let v = run(
        "et0_fao56",
        json!({"tmin_c": 12.3, "tmax_c": 21.5, "rh_min": 63, "rh_max": 84, "u2": 2.078, "rs": 22.07, "lat": 50.8, "doy": 187, "elevation_m": 100}),
    );
    close(&v, "rn_mj_m2_day", 13.28, 0.05);
    close(&v, "et0_mm_day", 3.9, 0.05);
    close(
        &run("et0_priestley_taylor", json!({"t_c": 20, "rn": 15})),
        "et_mm_day",
        5.2642,
        1e-3,
    );
    close(
        &run("et0_oudin", json!({"t_c": 20, "lat": -20, "doy": 246})),
        "pe_mm_day",
        3.2851,
        1e-3,
    );
}

#[test]
fn forecast_verification() {
    let v = run(
        "verif_continuous",
        json!({"forecast": [1, 2, 3], "observed": [1, 2, 5]}),
    );
    close(&v, "rmse", (4.0f64 / 3.0).sqrt(), 1e-12);
    close(&v, "bias", -2.0 / 3.0, 1e-12);
    let v = run(
        "verif_contingency",
        json!({"forecast": [1, 1, 0, 0], "observed": [1, 0, 1, 0]}),
    );
    close(&v, "pod", 0.5, 0.0);
    close(&v, "csi", 1.0 / 3.0, 1e-12);
    close(&v, "hss", 0.0, 0.0);
    close(
        &run(
            "verif_brier",
            json!({"probability": [0.5, 0.5], "observed": [1, 0]}),
        ),
        "brier_score",
        0.25,
        0.0,
    );
    // properscoring.crps_ensemble(2, [1, 2, 3]) = 2/3 − 4/9 = 0.2222
    close(
        &run(
            "verif_crps_ensemble",
            json!({"ensemble": [[1, 2, 3]], "observed": [2]}),
        ),
        "crps_mean",
        2.0 / 9.0,
        1e-12,
    );
    assert_eq!(
        run(
            "verif_rank_histogram",
            json!({"ensemble": [[1, 2], [1, 2], [1, 2]], "observed": [0, 1.5, 3]})
        )["rank_counts"],
        json!([1, 1, 1])
    );
}

// --------------------------------------------------------- fire/geophysics

#[test]
fn fire_weather_and_geophysics() {
    // Van Wagner & Pickett (1985) test day: T 17 °C, RH 42 %, wind 25 km/h, no rain, April,
    // from FFMC 85, DMC 6, DC 15 → FFMC 87.7, DMC 8.5, DC 19.0, ISI 10.9, BUI 8.5, FWI 10.1
    let w = json!({"t_c": [17], "rh_pct": [42], "wind_kmh": [25], "rain_mm": [0]});
    close(&run("fwi_ffmc", w.clone()), "final", 87.69, 0.05);
    close(
        &run(
            "fwi_dmc",
            json!({"t_c": [17], "rh_pct": [42], "rain_mm": [0], "month": 4}),
        ),
        "final",
        8.55,
        0.05,
    );
    close(
        &run("fwi_dc", json!({"t_c": [17], "rain_mm": [0], "month": 4})),
        "final",
        19.01,
        0.05,
    );
    close(
        &run("fwi_isi", json!({"ffmc": 87.69, "wind_kmh": 25})),
        "isi",
        10.85,
        0.05,
    );
    close(
        &run("fwi_bui", json!({"dmc": 8.545, "dc": 19.014})),
        "bui",
        8.49,
        0.05,
    );
    let v = run(
        "fwi_fwi",
        json!({"t_c": 17, "rh_pct": 42, "wind_kmh": 25, "rain_mm": 0, "month": 4}),
    );
    close(&v, "fwi", 10.10, 0.06);
    assert_eq!(v["danger_class"], "low");
    // one dry 30 °C day from 0 with 1,000 mm/yr: Keetch & Byram (1968) drought factor, evaluated in Python
    close(
        &run(
            "kbdi",
            json!({"tmax_c": [30], "rain_mm": [0], "annual_rain_mm": 1000}),
        ),
        "final",
        15.0705,
        1e-3,
    );
    close(
        &run(
            "mcarthur_ffdi",
            json!({"t_c": 40, "rh_pct": 10, "wind_kmh": 40, "drought_factor": 10}),
        ),
        "ffdi",
        86.3837,
        1e-3,
    );
    close(
        &run(
            "hot_dry_windy_index",
            json!({"t_c": [30], "td_c": [10], "wind_ms": [10]}),
        ),
        "hdw",
        301.8406,
        1e-3,
    );
    let v = run(
        "hotspot_summary",
        json!({"path": "data/fires.csv", "min_confidence": 50}),
    );
    close(&v, "detections", 2.0, 0.0);
    close(&v, "days.0.frp_sum_mw", 200.5, 1e-9);
    // Mw 9.0: M0 = 10^(1.5·9 + 9.1) = 3.98e22 N·m
    close(
        &run("moment_magnitude_energy", json!({"mw": 9.0})),
        "m0_nm",
        3.981e22,
        1e19,
    );
    // synthetic Gutenberg–Richter catalogue with b = 1, binned to 0.1 above Mc = 2.0
    let mags: Vec<f64> = (0..2000)
        .map(|i| {
            let u = (i as f64 + 0.5) / 2000.0;
            ((1.95 - u.log10()) * 10.0).round() / 10.0
        })
        .collect();
    close(
        &run(
            "gutenberg_richter_b",
            json!({"magnitudes": mags, "mc": 2.0}),
        ),
        "b_value",
        1.0,
        0.05,
    );
    let t: Vec<f64> = (1..=20).map(f64::from).collect();
    let n: Vec<f64> = t.iter().map(|t| 100.0 / (t + 0.5f64).powf(1.1)).collect();
    close(
        &run("omori_decay", json!({"t_days": t, "counts": n})),
        "p",
        1.1,
        0.02,
    );
    close(
        &run(
            "hypocentral_distance",
            json!({"eq_lat": 0, "eq_lon": 0, "depth_km": 30, "site_lat": 0, "site_lon": 0}),
        ),
        "hypocentral_km",
        30.0,
        1e-9,
    );
    // Wald et al. (1999): MMI = 3.66 log10(PGA) − 1.66 → 5.66 at 100 cm/s²
    close(
        &run("mmi_from_pga_pgv", json!({"pga_cms2": 100})),
        "mmi_from_pga",
        5.66,
        1e-9,
    );
    close(
        &run(
            "tsunami_travel_time",
            json!({"segment_km": [1000], "depth_m": [4000]}),
        ),
        "travel_time_s",
        5049.05,
        0.01,
    );
    // Caine (1980): I = 14.82·D^−0.39 → 6.04 mm/h for 10 h
    let v = run(
        "slope_failure_screen",
        json!({"intensity_mmh": 10, "duration_h": 10, "slope_deg": 30}),
    );
    close(&v, "threshold_mmh", 6.0374, 1e-3);
    assert_eq!(v["screen_positive"], true);
}

// --------------------------------------------------------- infrastructure

#[test]
fn infrastructure() {
    close(
        &run(
            "outage_summary",
            json!({"customers_out": [0, 500, 1000, 200], "customers_total": 10000}),
        ),
        "peak_pct_out",
        10.0,
        1e-12,
    );
    close(
        &run(
            "restoration_time",
            json!({"customers_out": [0, 1000, 500, 100, 0]}),
        ),
        "steps",
        2.0,
        0.0,
    );
    close(
        &run(
            "resilience_loss",
            json!({"functionality_pct": [100, 50, 100]}),
        ),
        "resilience_loss_pct_hours",
        50.0,
        0.0,
    );
    let e = json!([["a", "b"], ["b", "c"], ["d", "e"]]);
    close(
        &run("network_components", json!({"edges": e})),
        "components",
        2.0,
        0.0,
    );
    close(
        &run(
            "network_components",
            json!({"edges": e, "closed": [["b", "c"]]}),
        ),
        "components",
        3.0,
        0.0,
    );
    let v = run(
        "shortest_path_detour",
        json!({"edges": [["a", "b", 1], ["b", "c", 1], ["a", "c", 5]], "from": "a", "to": "c", "closed": [["a", "b"]]}),
    );
    close(&v, "detour", 3.0, 0.0);
    close(
        &run(
            "service_area",
            json!({"edges": [["a", "b", 1], ["b", "c", 2], ["c", "d", 5]], "facilities": ["a"], "max_distance": 3}),
        ),
        "served_count",
        3.0,
        0.0,
    );
    close(
        &run(
            "critical_facility_exposure",
            json!({"facilities": "data/points.geojson", "hazard": "data/zones.geojson"}),
        ),
        "exposed_by_type.hospital",
        1.0,
        0.0,
    );
    close(
        &run(
            "flood_depth_at_assets",
            json!({"depths_m": [0.2, 0.8, 2.5]}),
        ),
        "assets_above.1.count",
        2.0,
        0.0,
    );
    let v = run(
        "flood_depth_at_assets",
        json!({"depth_raster": "data/grid.tif", "xs": [0.25], "ys": [1.25]}),
    );
    close(&v, "depths_m.0", 1.0, 0.0);
    let v = run(
        "depth_damage_loss",
        json!({"depths_ft": [1.5], "values": [100000], "curve_depth_ft": [0, 1, 2], "curve_damage_pct": [10, 20, 30]}),
    );
    close(&v, "total_loss", 25000.0, 1e-9);
    close(
        &run(
            "wind_fragility",
            json!({"wind": 50, "medians": [50, 100], "betas": [0.3, 0.3]}),
        ),
        "exceedance_probabilities.0",
        0.5,
        1e-7,
    );
    let v = run(
        "stage_exceedance",
        json!({"stage": [1, 3, 5, 2], "flood_stage": 2.5}),
    );
    close(&v, "steps_above", 2.0, 0.0);
    close(&v, "crest", 5.0, 0.0);
    close(
        &run(
            "rating_curve",
            json!({"stage": 5, "a": 2, "b": 1.5, "h0": 1}),
        ),
        "discharge.0",
        16.0,
        1e-12,
    );
    // USDA TR-55: P = 5 in (127 mm), CN = 80 → Q = 2.89 in (73.4 mm)
    close(
        &run("scs_curve_number_runoff", json!({"p_mm": 127, "cn": 80})),
        "runoff_mm",
        73.48,
        0.05,
    );
    close(
        &run(
            "rational_peak_flow",
            json!({"c": 0.5, "i_mmh": 36, "area_km2": 1}),
        ),
        "peak_discharge_m3s",
        5.0,
        1e-12,
    );
    let v = run(
        "reservoir_storage_change",
        json!({"storage": [80, 60, 70], "capacity": 100}),
    );
    close(&v, "change", -10.0, 0.0);
    close(&v, "min_pct_capacity", 60.0, 0.0);
}

// --------------------------------------------------------- output assembly

#[test]
fn output_assembly() {
    let v = run(
        "answer_schema_validate",
        json!({"template": {"a": 0, "b": {"c": ""}}, "answer": {"a": 1, "b": {}, "z": 1}}),
    );
    assert_eq!(
        (v["missing"].clone(), v["extra"].clone()),
        (json!(["b.c"]), json!(["z"]))
    );
    close(
        &run(
            "answer_unit_normalize",
            json!({"items": [{"key": "wind", "value": 10, "from": "kt", "to": "m/s", "decimals": 2}]}),
        ),
        "items.0.value",
        5.14,
        1e-12,
    );
    close(
        &run("round_significant", json!({"value": 123456, "sig": 3})),
        "value",
        123000.0,
        0.0,
    );
    close(
        &run("round_significant", json!({"value": 2.346, "decimals": 2})),
        "value",
        2.35,
        1e-12,
    );
    let v = run(
        "ranking_output",
        json!({"items": [{"name": "a", "score": 3}, {"name": "b", "score": 5}, {"name": "c", "score": 5}]}),
    );
    assert_eq!(
        v["ranking"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["rank"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![1, 1, 3]
    );
    assert_eq!(
        run(
            "multiple_choice_resolve",
            json!({"options": {"A": "heat wave record temperature", "B": "river flood crest"}, "evidence": "The heat wave set a record temperature."})
        )["best"],
        "A"
    );
    let v = run(
        "evidence_table",
        json!({"rows": [{"claim": "x", "source_file": "data/fires.csv", "support_type": "table_metric"}, {"claim": "y", "source_file": "data/none.csv", "support_type": "guess"}]}),
    );
    close(&v, "invalid_rows", 1.0, 0.0);
    close(
        &run(
            "uncertainty_statement",
            json!({"estimate": 10, "low": 8, "high": 12}),
        ),
        "relative_uncertainty",
        0.2,
        1e-12,
    );
    assert_eq!(
        run("threshold_statement", json!({"value": 35, "threshold": 35}))["met"],
        true
    );
    assert!(run(
        "briefing_compose",
        json!({"title": "T", "facts": {"peak": 49.6}})
    )["markdown"]
        .as_str()
        .unwrap()
        .contains("- peak: 49.6"));
    let v = run(
        "geojson_output",
        json!({"file_name": "out.geojson", "features": [{"type": "Feature", "properties": {}, "geometry": null}]}),
    );
    let written: Value =
        serde_json::from_slice(&std::fs::read(package().scratch.join("out.geojson")).unwrap())
            .unwrap();
    assert_eq!(
        (
            v["features"].as_u64(),
            written["features"].as_array().map(Vec::len)
        ),
        (Some(1), Some(1))
    );
    run(
        "csv_output",
        json!({"file_name": "out.csv", "rows": [{"a": 1, "b": "x"}, {"a": 2}]}),
    );
    assert_eq!(
        std::fs::read_to_string(package().scratch.join("out.csv")).unwrap(),
        "a,b\n1,x\n2,\n"
    );
    assert_eq!(
        run("chart_spec", json!({"x": [1, 2], "y": [3, 4]}))["spec"]["encoding"]["x"]["type"],
        "quantitative"
    );
    let sq = json!({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]]});
    assert_eq!(
        run(
            "map_spec",
            json!({"layers": [{"name": "zone", "geojson": sq}]})
        )["map"]["bbox"],
        json!([0.0, 0.0, 1.0, 1.0])
    );
    assert_eq!(
        run("cross_check", json!({"a": 100, "b": 100.5}))["agree"],
        true
    );
    // SHA-256 by the coreutils tool, independent of the crate under test
    let v = run("provenance_bundle", json!({"files": ["data/fires.csv"]}));
    let out = std::process::Command::new("sha256sum")
        .arg(package().root.join("data/fires.csv"))
        .output()
        .unwrap();
    let expected = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert_eq!(v["files"][0]["sha256"], expected);
}

#[test]
fn zz_every_operation_has_a_reference_case() {
    // the other tests in this binary run first in name order only when single-threaded;
    // run them here too so coverage does not depend on scheduling
    reports_and_text();
    time_series_and_extremes();
    vector_and_exposure();
    raster_and_earth_observation();
    meteorology_thermodynamics_and_heat();
    climate_indices_drought_and_evapotranspiration();
    forecast_verification();
    fire_weather_and_geophysics();
    infrastructure();
    output_assembly();
    let covered = COVERED.lock().unwrap().clone();
    let missing: Vec<String> = earthverse_domain_ops::operation_list()
        .into_iter()
        .map(|o| o.name.to_string())
        .filter(|n| !covered.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "operations without a reference case: {missing:?}"
    );
}
