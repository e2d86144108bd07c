//! Calls one research tool and prints its output as the reference rendered
//! it: `cargo run -p earthverse-tool-registry --example call -- <tool> <package-dir> '<json args>'`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (tool, package, json) = match (args.next(), args.next(), args.next()) {
        (Some(t), Some(p), Some(j)) => (t, p, j),
        _ => return Err("usage: call <tool> <package-dir> '<json args>'".into()),
    };
    let registry = earthverse_tool_registry::Registry::with_research_tools(
        earthverse_tool_registry::ResearchToolsConfig::reference(),
    );
    let scratch = std::env::temp_dir().join(format!("earthverse-call-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let ctx = earthverse_tool_registry::ToolContext::new(package, &scratch);
    let rt = tokio::runtime::Runtime::new()?;
    let record = rt.block_on(registry.call(&ctx, &tool, serde_json::from_str(&json)?));
    print!(
        "{}",
        earthverse_tool_registry::render::render_output_text(&record.envelope.output)
    );
    std::fs::remove_dir_all(&scratch)?;
    Ok(())
}
