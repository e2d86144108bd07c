//! Replays the recorded tool calls of a release and prints a summary:
//! `cargo run -p earthverse-tool-registry --example replay -- <release-root>`.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let release = std::env::args()
        .nth(1)
        .ok_or("usage: replay <release-root> [--json]")?;
    let json = std::env::args().any(|a| a == "--json");
    let report = earthverse_tool_registry::replay::replay(std::path::Path::new(&release), None)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "runs {} calls {} compared {} identical {} ({:.2}%) differing {} skipped {}",
        report.runs,
        report.calls,
        report.compared,
        report.identical,
        100.0 * report.identical_fraction(),
        report.differing.len(),
        report.skipped.len()
    );
    for (tool, t) in &report.by_tool {
        println!(
            "  {tool:<28} {:>6} {:>6} {:>6}",
            t.calls, t.compared, t.identical
        );
    }
    println!("{:?}", report.difference_categories());
    for (r, n) in report.skip_reasons() {
        println!("  skip {n:>6} {r}");
    }
    Ok(())
}
