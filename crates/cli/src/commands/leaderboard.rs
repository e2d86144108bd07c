//! `earthverse leaderboard`: outcomes (evaluation records or recorded runs,
//! `earthverse-outcomes`) → Table 2, capability/difficulty/hazard slices or
//! the cost table (`earthverse-stats-bootstrap`), printed by
//! `earthverse-report`'s text tables, and optionally written as JSONL or
//! Parquet.

use earthverse_outcomes::{task_rows, write_table, OutcomeSources};
use earthverse_stats_bootstrap::{leaderboard, slice_table, SliceBy};
use serde_json::json;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `earthverse leaderboard`.
#[derive(Debug, clap::Args)]
pub struct LeaderboardArgs {
    #[command(flatten)]
    sources: OutcomeSources,
    /// Core by capability (Table 8), difficulty or hazard family instead of
    /// Table 2.
    #[arg(long, value_enum)]
    by: Option<SliceBy>,
    /// Print JSON (`{rows: [...]}`, plus `slices` with `--by`).
    #[arg(long)]
    json: bool,
    /// Also write the rows to FILE (`.jsonl` or `.parquet`).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Also write the per-task outcomes to FILE (`.jsonl` or `.parquet`).
    #[arg(long, value_name = "FILE")]
    tasks_out: Option<PathBuf>,
}

/// Runs `earthverse leaderboard`.
pub fn run_leaderboard(args: LeaderboardArgs) -> anyhow::Result<ExitCode> {
    super::inputs::refuse_outputs(
        &[
            ("--out", args.out.as_deref()),
            ("--tasks-out", args.tasks_out.as_deref()),
        ],
        &args.sources.input_paths(),
    )?;
    let loaded = args.sources.load()?;
    let rows = leaderboard(&loaded.outcomes)?;
    let slices = args
        .by
        .map(|by| slice_table(&loaded.outcomes, by))
        .transpose()?;
    if let Some(path) = &args.out {
        write_table(path, &rows)?;
    }
    if let Some(path) = &args.tasks_out {
        write_table(path, &task_rows(&loaded.outcomes))?;
    }
    let costs = match &args.sources.prices {
        Some(_) => Some(earthverse_stats_bootstrap::cost_table(
            &loaded.outcomes,
            &loaded.flat_prices,
        )?),
        None => None,
    };
    let out = if args.json {
        let mut doc = json!({ "rows": rows, "source": loaded.source });
        if let Some(c) = &costs {
            doc["cost"] = serde_json::to_value(c)?;
        }
        if let Some(s) = &slices {
            doc["slices"] = serde_json::to_value(s)?;
        }
        format!("{}\n", serde_json::to_string_pretty(&doc)?)
    } else if let Some(table) = &slices {
        earthverse_report::text::slices(table)
    } else {
        let mut out = earthverse_report::text::leaderboard(&rows);
        if let Some(costs) = &costs {
            out.push_str(&earthverse_report::text::costs(costs));
        }
        out
    };
    super::inputs::emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
