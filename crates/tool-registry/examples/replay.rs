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
    // The report's text summary (`earthverse tools replay` prints the same).
    print!("{report}");
    Ok(())
}
