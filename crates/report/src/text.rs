//! Plain-text tables of `earthverse leaderboard` and `compare`: the
//! leaderboard (Table 2's columns), capability slices (Table 3), the
//! evaluation cost (Table 11), paired deltas with their bootstrap interval
//! (§4.1) and win / tie / loss shares.

use earthverse_stats_bootstrap::{
    shown, CostRow, LeaderboardRow, PairedDelta, SliceTable, WinTieLoss, UNDEFINED,
};
use std::fmt::Write as _;

/// The leaderboard as an aligned text table.
pub fn leaderboard(rows: &[LeaderboardRow]) -> String {
    const HEADERS: [&str; LeaderboardRow::CELLS] = [
        "System",
        "Runs",
        "Answer",
        "Process",
        "Core",
        "Strict@95",
        "Unit acc",
        "Rounds",
        "Tools",
        "Reads",
        "Files",
        "Python",
        "Latency",
        "Tokens(k)",
    ];
    // Widths of the numeric columns (right-aligned); the system column
    // is as wide as the longest name.
    const WIDTHS: [usize; LeaderboardRow::CELLS] = [0, 5, 7, 7, 7, 9, 8, 7, 6, 6, 6, 6, 8, 8];
    let mut out = String::new();
    let system_width = rows
        .iter()
        .map(|r| r.system.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let mut line = |cells: &[String]| {
        let _ = write!(out, "{:<system_width$}", cells[0]);
        for (cell, width) in cells.iter().zip(WIDTHS).skip(1) {
            let _ = write!(out, " {cell:>width$}");
        }
        out.push('\n');
    };
    line(&HEADERS.map(str::to_owned));
    for r in rows {
        line(&r.cells());
    }
    out
}

/// A capability (or other) slice table: Core and the number of tasks per
/// cell.
pub fn slices(table: &SliceTable) -> String {
    let mut out = String::new();
    let width = table
        .rows
        .iter()
        .map(|r| r.system.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let _ = write!(out, "{:<width$}", "System");
    for c in &table.columns {
        let _ = write!(out, " {:>14}", crate::plots::short_capability(c));
    }
    let _ = writeln!(out);
    for row in &table.rows {
        let _ = write!(out, "{:<width$}", row.system);
        for cell in &row.cells {
            let _ = write!(
                out,
                " {:>14}",
                cell.map_or(UNDEFINED.to_owned(), |c| format!("{:.2} ({})", c.core, c.n))
            );
        }
        let _ = writeln!(out);
    }
    out
}

/// The evaluation cost table (Table 11), with its heading.
pub fn costs(costs: &[CostRow]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nEvaluation cost (Table 11)");
    let _ = writeln!(
        out,
        "{:<24} {:>7} {:>14} {:>12} {:>12}",
        "System", "Core", "Tokens/task(k)", "Price(USD/M)", "Cost(USD)"
    );
    for c in costs {
        let _ = writeln!(
            out,
            "{:<24} {:>7.2} {:>14.1} {:>12} {:>12.2}",
            c.system,
            c.core,
            c.tokens_per_task_k,
            format!("{:.2}", shown(c.price_usd_per_m)),
            c.cost_usd
        );
    }
    out
}

/// One paired difference of `metric` with its interval, as one line.
pub fn delta(d: &PairedDelta, metric: &str) -> String {
    format!(
        "{} − {}: Δ{metric} = {:+.2}  {:.0}% CI [{:+.2}, {:+.2}]  (n = {} paired tasks, {} resamples, seed {}; means {:.2} vs {:.2})\n",
        d.a, d.b, d.delta, d.confidence * 100.0, d.ci_low, d.ci_high, d.n_tasks, d.resamples, d.seed, d.mean_a, d.mean_b
    )
}

/// Win / tie / loss shares of one pair, as one line.
pub fn win_tie_loss(w: &WinTieLoss) -> String {
    format!(
        "{} vs {}: win {:.1}%  tie {:.1}%  loss {:.1}%  net {:+.1}  ({} wins, {} ties, {} losses over {} paired tasks; tie within {} points)\n",
        w.a, w.b, w.win, w.tie, w.loss, w.net, w.wins, w.ties, w.losses, w.tasks, w.margin
    )
}
