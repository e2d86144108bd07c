//! `earthverse leaderboard`, `compare` and `report` (not yet implemented).

use std::process::ExitCode;

/// Arguments of `earthverse leaderboard`.
#[derive(Debug, clap::Args)]
pub struct LeaderboardArgs {}
/// Arguments of `earthverse compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {}
/// Arguments of `earthverse report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {}

/// Runs `earthverse leaderboard`.
pub fn run_leaderboard(_args: LeaderboardArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`earthverse leaderboard` is not implemented yet")
}
/// Runs `earthverse compare`.
pub fn run_compare(_args: CompareArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`earthverse compare` is not implemented yet")
}
/// Runs `earthverse report`.
pub fn run_report(_args: ReportArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`earthverse report` is not implemented yet")
}
