//! `earthverse units` (not yet implemented).

use std::process::ExitCode;

/// Arguments of `earthverse units`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs the command.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`earthverse units` is not implemented yet")
}
