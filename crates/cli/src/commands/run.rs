//! `earthverse run` (not yet implemented).

use std::process::ExitCode;

/// Arguments of `earthverse run`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the command.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`earthverse run` is not implemented yet")
}
