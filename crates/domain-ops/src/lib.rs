//! # earthverse-domain-ops
//!
//! The paper's registry of reusable domain operations (§3.4: "170 reusable
//! operations for reports, time series, vector and exposure, raster and
//! Earth observation, meteorology and climate, fire and geophysics,
//! infrastructure, and output assembly"), each behind the tool-registry
//! [`Tool`] trait with a JSON Schema, a
//! family, the methods it implements, an applicability check that refuses
//! with a machine-readable reason (App. A.4, D.6), and units and provenance
//! on its output (App. B.3).
//!
//! Inputs come inline or from package files through package-model's safe
//! resolver. GeoTIFF and vector layers need the `gdal` feature, NetCDF the
//! `netcdf` feature; without them those operations answer with a clear
//! execution error.
//!
//! ```
//! use earthverse_domain_ops::operation;
//! use earthverse_tool_registry::ToolContext;
//! use serde_json::json;
//!
//! let op = operation("heat_index").expect("registered");
//! let ctx = ToolContext::new("/nonexistent/PKG", std::env::temp_dir());
//! // NWS heat-index table: 90 °F at 70 % RH reads 106 °F.
//! let (out, _) = op.run(&ctx, &json!({"t": 90, "rh_pct": 70, "units": "degF"})).unwrap();
//! assert_eq!(out["heat_index"].as_f64().unwrap().round(), 106.0);
//! ```
#![deny(missing_docs)]

pub mod climate;
mod error;
pub mod fire;
mod formats;
mod geometry;
pub mod infra;
pub mod input;
pub mod meteo;
#[cfg(feature = "netcdf")]
mod nc_tiles;
pub mod op;
pub mod output;
pub mod raster;
pub mod reports;
pub mod stats;
pub mod suites;
pub mod tables;
pub mod timeseries;
pub mod vector;

pub use error::{DomainError, Result};
pub use op::Operation;

use earthverse_tool_registry::Tool;
use std::sync::Arc;

/// Every domain operation, as concrete [`Operation`]s, in family order.
pub fn operation_list() -> Vec<Operation> {
    let mut ops = Vec::new();
    ops.extend(reports::operations());
    ops.extend(timeseries::operations());
    ops.extend(vector::operations());
    ops.extend(raster::operations());
    ops.extend(meteo::operations());
    ops.extend(fire::operations());
    ops.extend(infra::operations());
    ops.extend(output::operations());
    ops
}

/// Every domain operation as registry-ready tools.
pub fn all_operations() -> Vec<Arc<dyn Tool>> {
    operation_list()
        .into_iter()
        .map(|op| Arc::new(op) as Arc<dyn Tool>)
        .collect()
}

/// One operation by name. The catalogue is built once per process; this
/// clones only the operation asked for.
pub fn operation(name: &str) -> Option<Operation> {
    static CATALOGUE: std::sync::OnceLock<Vec<Operation>> = std::sync::OnceLock::new();
    CATALOGUE
        .get_or_init(operation_list)
        .iter()
        .find(|op| op.name == name)
        .cloned()
}
