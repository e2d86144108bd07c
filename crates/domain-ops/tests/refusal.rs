//! The refusal paths (paper App. A.4): every operation answers a call it
//! cannot support with a typed outcome — a justified `not_applicable`
//! refusal with a machine-readable reason when the record cannot support
//! the method, an execution error naming the argument otherwise — and never
//! a guess or a panic.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_domain_ops::{all_operations, operation, DomainError};
use earthverse_tool_registry::{CallStatus, ToolContext};
use serde_json::{json, Value};

fn ctx() -> (tempfile::TempDir, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("PKG");
    std::fs::create_dir_all(root.join("data")).unwrap();
    std::fs::write(
        root.join("data/short.csv"),
        "day,t\n2021-01-01,1\n2021-01-02,2\n",
    )
    .unwrap();
    std::fs::write(root.join("data/computed_gt.json"), "{}").unwrap();
    let ctx = ToolContext::new(&root, dir.path().join("scratch"));
    (dir, ctx)
}

#[tokio::test]
async fn every_operation_refuses_an_empty_call_with_a_typed_outcome() {
    let (_dir, ctx) = ctx();
    for tool in all_operations() {
        let out = tool.call(&ctx, json!({})).await;
        assert!(
            !out.ok,
            "{} accepted an empty call: {}",
            tool.name(),
            out.output
        );
        assert_ne!(out.status, CallStatus::Ok, "{}", tool.name());
        let message = out.warnings.join(" ");
        assert!(
            !message.is_empty(),
            "{} refused without saying why",
            tool.name()
        );
    }
}

/// (operation, arguments, expected machine-readable reason key)
fn not_applicable_cases() -> Vec<(&'static str, Value, &'static str)> {
    let short: Vec<f64> = (0..7).map(f64::from).collect();
    vec![
        (
            "ts_mann_kendall",
            json!({"series": short}),
            "record_too_short",
        ),
        (
            "ts_linear_trend",
            json!({"series": [1, 2]}),
            "record_too_short",
        ),
        ("eva_fit_gev", json!({"maxima": short}), "record_too_short"),
        (
            "eva_return_level",
            json!({"maxima": short, "return_period": 100}),
            "record_too_short",
        ),
        (
            "eva_return_period",
            json!({"maxima": short, "value": 3}),
            "record_too_short",
        ),
        (
            "eva_fit_gpd",
            json!({"series": short, "threshold": 1}),
            "record_too_short",
        ),
        (
            "eva_mean_residual_life",
            json!({"series": short}),
            "record_too_short",
        ),
        (
            "spi",
            json!({"pr_monthly": vec![10.0; 120]}),
            "record_too_short",
        ),
        (
            "spei",
            json!({"pr_monthly": vec![10.0; 120], "pet_monthly": vec![5.0; 120]}),
            "record_too_short",
        ),
        (
            "pet_thornthwaite",
            json!({"tas_monthly": [10, 12], "lat": 45}),
            "record_too_short",
        ),
        (
            "gutenberg_richter_b",
            json!({"magnitudes": [3.0, 3.1, 3.5], "mc": 3.0}),
            "record_too_short",
        ),
        (
            "omori_decay",
            json!({"t_days": [1, 2], "counts": [10, 5]}),
            "record_too_short",
        ),
        (
            "heat_wave_frequency",
            json!({"tasmin": [23], "tasmax": [31]}),
            "record_too_short",
        ),
        (
            "max_n_day_precip",
            json!({"pr": [1, 2], "n": 5}),
            "record_too_short",
        ),
        (
            "very_wet_day_total",
            json!({"pr": [5, 6]}),
            "record_too_short",
        ),
        (
            "ts_mann_kendall",
            json!({"series": {"path": "data/short.csv", "field": "t"}}),
            "record_too_short",
        ),
        (
            "ts_resample",
            json!({"series": [1, 2, 3]}),
            "time_axis_missing",
        ),
        (
            "wet_bulb_temperature",
            json!({"t_c": 20, "rh_pct": 2}),
            "outside_validity_range",
        ),
        (
            "windchill",
            json!({"t": 20, "wind": 10}),
            "outside_validity_range",
        ),
        (
            "slope_failure_screen",
            json!({"intensity_mmh": 5, "duration_h": 2000, "slope_deg": 30}),
            "outside_validity_range",
        ),
        (
            "rational_peak_flow",
            json!({"c": 0.5, "i_mmh": 20, "area_km2": 500}),
            "outside_validity_range",
        ),
        (
            "cape_cin",
            json!({"p_hpa": [900, 950, 1000], "t_c": [20, 22, 25], "td_c": [10, 10, 10]}),
            "sampling",
        ),
        (
            "raster_difference",
            json!({"pre": [1, 2, 3], "post": [1, 2]}),
            "grid_mismatch",
        ),
        (
            "dem_slope_aspect",
            json!({"dem": [1, 2, 3, 4], "width": 2, "cell_size_m": 10}),
            "grid_too_small",
        ),
        (
            "restoration_time",
            json!({"customers_out": [0, 100, 90, 80]}),
            "not_reached",
        ),
        (
            "shortest_path_detour",
            json!({"edges": [["a", "b", 1]], "from": "a", "to": "z"}),
            "unreachable",
        ),
        (
            "tsunami_travel_time",
            json!({"segment_km": [10], "depth_m": [0]}),
            "invalid_depth",
        ),
        (
            "points_in_polygon",
            json!({"points": {"type": "Point", "coordinates": [0, 0]}, "polygons": {"type": "Point", "coordinates": [1, 1]}}),
            "geometry_mismatch",
        ),
        (
            "exposure_population",
            json!({"population": {"type": "Point", "coordinates": [0, 0]}, "footprint": {"type": "Point", "coordinates": [1, 1]}}),
            "variable_absent",
        ),
        (
            "map_spec",
            json!({"layers": [{"name": "x", "geojson": {}}]}),
            "empty_layers",
        ),
    ]
}

#[tokio::test]
async fn unsupported_records_are_refused_with_a_machine_readable_reason() {
    let (_dir, ctx) = ctx();
    for (name, args, reason) in not_applicable_cases() {
        let op = operation(name).unwrap_or_else(|| panic!("no {name}"));
        let out = earthverse_tool_registry::Tool::call(&op, &ctx, args.clone()).await;
        assert_eq!(
            out.status,
            CallStatus::NotApplicable,
            "{name} {args}: {}",
            out.output
        );
        assert!(
            out.output["not_applicable"].get(reason).is_some(),
            "{name}: reason {} lacks `{reason}`",
            out.output
        );
    }
}

#[test]
fn inline_minimum_lengths_are_checked_before_running() {
    let (_dir, ctx) = ctx();
    let op = operation("ts_mann_kendall").unwrap();
    let check =
        earthverse_tool_registry::Tool::check_applicable(&op, &ctx, &json!({"series": [1, 2, 3]}));
    match check {
        earthverse_tool_registry::Applicability::NotApplicable { reason, .. } => {
            assert_eq!(reason["record_too_short"]["have"], 3);
            assert_eq!(reason["record_too_short"]["need"], 8);
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn bad_arguments_and_hidden_files_are_execution_errors_naming_the_argument() {
    let (_dir, ctx) = ctx();
    let err = operation("heat_index")
        .unwrap()
        .run(&ctx, &json!({"t": 30, "rh_pct": 50, "units": "kelvin"}))
        .unwrap_err();
    assert!(
        matches!(err, DomainError::BadArgument { ref argument, .. } if argument == "units"),
        "{err}"
    );
    let err = operation("ts_describe")
        .unwrap()
        .run(
            &ctx,
            &json!({"series": {"path": "data/computed_gt.json", "field": "x"}}),
        )
        .unwrap_err();
    assert!(matches!(err, DomainError::Input { .. }), "{err}");
    assert!(err.to_string().contains("computed_gt.json"), "{err}");
    let err = operation("csv_output")
        .unwrap()
        .run(&ctx, &json!({"file_name": "../escape.csv", "rows": []}))
        .unwrap_err();
    assert!(
        matches!(err, DomainError::BadArgument { ref argument, .. } if argument == "file_name"),
        "{err}"
    );
    let err = operation("ts_describe")
        .unwrap()
        .run(
            &ctx,
            &json!({"series": {"path": "../../etc/passwd", "field": "x"}}),
        )
        .unwrap_err();
    assert!(matches!(err, DomainError::Input { .. }), "{err}");
}
