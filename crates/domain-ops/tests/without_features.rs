//! A build without the heavy C libraries (`gdal`, `netcdf` off, the default)
//! refuses the operations that need them with a typed error that names the
//! operation and the missing feature, on the project's own GeoTIFF and
//! NetCDF fixtures; it never reads them another way. CI runs this file with
//! default features (`.ci/run`); with the features on it compiles to nothing.
#![cfg(not(all(feature = "gdal", feature = "netcdf")))]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_domain_ops::operation;
use earthverse_tool_registry::{CallStatus, Tool, ToolContext};
use serde_json::json;
use std::path::{Path, PathBuf};

fn fixture_package(event: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/release/packages/event_packages/standard_event_packages/packages")
        .join(event)
}

async fn refusal(event: &str, op: &str, args: serde_json::Value) -> String {
    let scratch = tempfile::tempdir().unwrap();
    let ctx = ToolContext::new(fixture_package(event), scratch.path().to_path_buf());
    let tool = operation(op).unwrap_or_else(|| panic!("no operation {op}"));
    let out = tool.call(&ctx, args).await;
    assert!(!out.ok, "{op} answered without its feature: {}", out.output);
    assert_ne!(out.status, CallStatus::Ok, "{op}");
    format!("{} {}", out.output, out.warnings.join(" "))
}

#[cfg(not(feature = "gdal"))]
#[tokio::test]
async fn raster_operations_name_the_missing_gdal_feature() {
    let tif = "data/remote_sensing/remote_sensing_001_land_surface_temperature.tif";
    assert!(fixture_package("FIX-001").join(tif).is_file());
    for op in ["raster_info", "raster_band_stats", "raster_sample_points"] {
        let args = json!({"path": tif, "xs": [0.0], "ys": [0.0]});
        let message = refusal("FIX-001", op, args).await;
        assert!(
            message.contains(op) && message.contains("`gdal`"),
            "{op}: {message}"
        );
    }
}

#[cfg(not(feature = "netcdf"))]
#[tokio::test]
async fn netcdf_operations_name_the_missing_netcdf_feature() {
    let nc = "data/physical_hazard/physical_hazard_002_gridded_daily_tmax.nc";
    assert!(fixture_package("FIX-001").join(nc).is_file());
    for op in ["netcdf_info", "netcdf_field_mean", "netcdf_time_stat"] {
        let args = json!({"path": nc, "variable": "tmax"});
        let message = refusal("FIX-001", op, args).await;
        assert!(
            message.contains(op) && message.contains("`netcdf`"),
            "{op}: {message}"
        );
    }
}
