//! `earthverse score` (not yet implemented).

use std::process::ExitCode;

/// Arguments of `earthverse score`.
#[derive(Debug, clap::Args)]
pub struct ScoreArgs {}

/// Runs `earthverse score`.
pub fn run_score(_args: ScoreArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`earthverse score` is not implemented yet")
}
