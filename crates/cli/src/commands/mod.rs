//! One module per subcommand group; each owns its clap arguments.

pub mod compare;
pub mod environments;
pub mod evidence;
pub mod families;
pub mod inputs;
pub mod leaderboard;
pub mod merge;
pub mod oracle;
pub mod perturb;
pub mod report;
pub mod review;
pub mod review_server;
pub mod run;
pub mod score;
pub mod study;
pub mod tools;
pub mod units;
pub mod validate;

/// The `python_exec` interpreter (harness discovery), its notes printed.
pub(crate) fn python_discovered(
    explicit: Option<std::path::PathBuf>,
) -> anyhow::Result<earthverse_tool_registry::sandbox::PythonConfig> {
    let python = earthverse_harness::discover_python(explicit)?;
    for note in &python.notes {
        eprintln!("{note}");
    }
    Ok(python.config)
}
