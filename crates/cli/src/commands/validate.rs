//! `earthverse validate` (not yet implemented).

use std::process::ExitCode;

/// Arguments of `earthverse validate`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the command.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`earthverse validate` is not implemented yet")
}
