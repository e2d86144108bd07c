//! `earthverse tools` (not yet implemented).

use std::process::ExitCode;

/// `earthverse tools` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ToolsCommand {
    /// List the registered tools.
    List,
}

/// Runs the command.
pub fn run(_cmd: ToolsCommand) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`earthverse tools` is not implemented yet")
}
