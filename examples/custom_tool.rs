//! Defines a new tool (schema + applicability check), registers it beside
//! the research tools and calls it through the registry on FIX-001.
//!
//! `cargo run -p earthverse-examples --example custom_tool [RELEASE]`

use earthverse_examples::tools::{ThresholdExceedance, THRESHOLD_EXCEEDANCE};
use earthverse_package_model::Release;
use earthverse_tool_registry::{Registry, ResearchToolsConfig, ToolContext};
use serde_json::json;
use std::sync::Arc;

fn main() -> anyhow::Result<()> {
    let release = Release::load(&earthverse_examples::release_from_args())?;
    let mut registry = Registry::with_research_tools(ResearchToolsConfig::default());
    registry.register(Arc::new(ThresholdExceedance))?;
    println!("registry holds {} tools", registry.len());
    let scratch = std::env::temp_dir().join(format!(
        "earthverse-example-custom-tool-{}",
        std::process::id()
    ));
    let mut ctx = ToolContext::new(release.package_dir("FIX-001"), &scratch);
    ctx.package_id = "FIX-001".into();
    let csv = "data/physical_hazard/physical_hazard_001_station_daily_temperature.csv";
    let calls = [
        (
            "tmax_c >= 35",
            json!({"path": csv, "column": "tmax_c", "threshold": 35.0}),
        ),
        (
            "missing column",
            json!({"path": csv, "column": "wind_ms", "threshold": 10.0}),
        ),
        (
            "record too short",
            json!({"path": csv, "column": "tmax_c", "threshold": 35.0, "min_records": 1000}),
        ),
        ("bad arguments", json!({"path": csv})),
    ];
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    for (label, args) in calls {
        let record = rt.block_on(registry.call(&ctx, THRESHOLD_EXCEEDANCE, args));
        println!(
            "{label}: status={:?} args={} output={}",
            record.status, record.args, record.envelope.output
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}
