//! Leaderboard (Table 2), slices (Table 8, difficulty, hazard family) and
//! the cost table (Table 11).

use crate::{Error, Metric, Result, TaskOutcome};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashSet};

/// One row of the leaderboard of Table 2: per-task means over a system's
/// outcomes (failures count as zero and stay in the denominator).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LeaderboardRow {
    /// System id.
    pub system: String,
    /// Number of task outcomes (the denominator).
    pub runs: usize,
    /// Failed runs among them.
    pub failures: usize,
    /// Mean answer correctness `A`.
    pub answer: f64,
    /// Mean process score `P`.
    pub process: f64,
    /// Combined Core `(1/2N) Σ (A + P)`.
    pub core: f64,
    /// Percentage of tasks with `U ≥ 95`.
    pub strict95: f64,
    /// Number of tasks with `U ≥ 95`.
    pub strict95_count: usize,
    /// Mean unit accuracy `U`.
    pub unit_acc: f64,
    /// Mean model rounds per task.
    pub rounds: Option<f64>,
    /// Mean tool calls per task.
    pub tool_calls: Option<f64>,
    /// Mean file reads per task.
    pub reads: Option<f64>,
    /// Mean distinct files per task.
    pub files: Option<f64>,
    /// Mean Python calls per task.
    pub python: Option<f64>,
    /// Mean latency per task in seconds.
    pub latency_s: Option<f64>,
    /// Mean total tokens per task.
    pub tokens: Option<f64>,
    /// Total cost in USD over the runs, when every run has one.
    pub cost_usd: Option<f64>,
}

impl LeaderboardRow {
    /// Number of cells in [`LeaderboardRow::cells`].
    pub const CELLS: usize = 14;

    /// The row's cells in Table 2's column order: system, runs, answer,
    /// process, Core, Strict@95 (%), unit accuracy, rounds, tool calls,
    /// reads, files, Python calls, latency (s), tokens (k). Scores and
    /// means have two decimals, latency none, tokens are in thousands with
    /// one; a mean that no run recorded is [`crate::UNDEFINED`]. The CLI's text table
    /// and the HTML report both print these, so the two cannot drift.
    pub fn cells(&self) -> [String; Self::CELLS] {
        let mean = |value: Option<f64>, digits: usize| format!("{:.digits$}", crate::shown(value));
        [
            self.system.clone(),
            self.runs.to_string(),
            format!("{:.2}", self.answer),
            format!("{:.2}", self.process),
            format!("{:.2}", self.core),
            format!("{:.2}", self.strict95),
            format!("{:.2}", self.unit_acc),
            mean(self.rounds, 2),
            mean(self.tool_calls, 2),
            mean(self.reads, 2),
            mean(self.files, 2),
            mean(self.python, 2),
            mean(self.latency_s, 0),
            mean(self.tokens.map(|t| t / 1e3), 1),
        ]
    }
}

/// Groups outcomes by system, keeping systems in first-seen order.
///
/// # Errors
/// [`Error::DuplicateOutcome`] when a (system, task) pair repeats;
/// [`Error::ScoreOutOfRange`] for an invalid score.
pub fn by_system(outcomes: &[TaskOutcome]) -> Result<Vec<(String, Vec<&TaskOutcome>)>> {
    let mut order: Vec<(String, Vec<&TaskOutcome>)> = Vec::new();
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    for outcome in outcomes {
        outcome.validate()?;
        if !seen.insert((&outcome.system, &outcome.task)) {
            return Err(Error::DuplicateOutcome {
                system: outcome.system.clone(),
                task: outcome.task.clone(),
            });
        }
        let slot = *index.entry(&outcome.system).or_insert_with(|| {
            order.push((outcome.system.clone(), Vec::new()));
            order.len() - 1
        });
        order[slot].1.push(outcome);
    }
    Ok(order)
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

/// Mean of a trajectory figure over the runs that report it (a failed run
/// still reports what it did); `None` when no run does.
fn mean_present(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
    let present: Vec<f64> = values.flatten().collect();
    (!present.is_empty()).then(|| mean(present.into_iter()))
}

/// A count figure as a float, for the means and sums.
fn count(value: Option<u64>) -> Option<f64> {
    value.map(|v| v as f64)
}

/// The row of one system.
pub fn row(system: &str, outcomes: &[&TaskOutcome]) -> LeaderboardRow {
    let m = |metric: Metric| mean(outcomes.iter().map(|o| o.metric(metric)));
    let t = |pick: fn(&TaskOutcome) -> Option<f64>| mean_present(outcomes.iter().map(|o| pick(o)));
    let strict95_count = outcomes.iter().filter(|o| o.is_strict95()).count();
    let cost_usd = outcomes
        .iter()
        .map(|o| o.trajectory.cost_usd)
        .collect::<Option<Vec<f64>>>()
        .filter(|c| !c.is_empty())
        .map(|c| c.iter().sum());
    LeaderboardRow {
        system: system.to_owned(),
        runs: outcomes.len(),
        failures: outcomes.iter().filter(|o| o.failed).count(),
        answer: m(Metric::Answer),
        process: m(Metric::Process),
        core: m(Metric::Core),
        strict95: m(Metric::Strict95),
        strict95_count,
        unit_acc: m(Metric::UnitAccuracy),
        rounds: t(|o| count(o.trajectory.model_rounds)),
        tool_calls: t(|o| count(o.trajectory.tool_calls)),
        reads: t(|o| count(o.trajectory.file_reads)),
        files: t(|o| count(o.trajectory.unique_evidence_files)),
        python: t(|o| count(o.trajectory.python_calls)),
        latency_s: t(|o| o.trajectory.latency_s),
        tokens: t(|o| count(o.trajectory.total_tokens)),
        cost_usd,
    }
}

/// The leaderboard of Table 2, one row per system, highest Core first
/// (ties keep first-seen order).
///
/// # Errors
/// As [`by_system`].
pub fn leaderboard(outcomes: &[TaskOutcome]) -> Result<Vec<LeaderboardRow>> {
    let mut rows: Vec<LeaderboardRow> = by_system(outcomes)?
        .iter()
        .map(|(system, runs)| row(system, runs))
        .collect();
    rows.sort_by(|a, b| b.core.total_cmp(&a.core));
    Ok(rows)
}

/// Adds a failure outcome (all scores zero) for every task of `tasks` that a
/// system lacks, so that every system is scored over the same denominator
/// (§4.1: failures score 0 and stay in the denominator). Returns how many
/// were added.
pub fn fill_missing_as_failures(outcomes: &mut Vec<TaskOutcome>, tasks: &[String]) -> usize {
    let systems: Vec<String> = {
        let mut seen = BTreeSet::new();
        outcomes
            .iter()
            .filter(|o| seen.insert(o.system.clone()))
            .map(|o| o.system.clone())
            .collect()
    };
    let present: HashSet<(String, String)> = outcomes
        .iter()
        .map(|o| (o.system.clone(), o.task.clone()))
        .collect();
    let mut added = 0;
    for system in &systems {
        for task in tasks {
            if !present.contains(&(system.clone(), task.clone())) {
                outcomes.push(TaskOutcome::failure(system.clone(), task.clone()));
                added += 1;
            }
        }
    }
    added
}

/// What a slice table groups tasks by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum SliceBy {
    /// Capability tags (Table 8); tags overlap, so a task counts in several columns.
    Capability,
    /// Difficulty level (`L2`…`L5`).
    Difficulty,
    /// Hazard family.
    Hazard,
}

/// One cell: the Core of a system on the tasks of one slice.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SliceCell {
    /// Mean Core over the slice's tasks.
    pub core: f64,
    /// Number of tasks in the slice for this system.
    pub n: usize,
}

/// One system's row of a slice table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceRow {
    /// System id.
    pub system: String,
    /// One cell per column; `None` when the system has no task there.
    pub cells: Vec<Option<SliceCell>>,
}

/// Core by slice, systems in leaderboard order (Table 8 shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SliceTable {
    /// What the columns are.
    pub by: SliceBy,
    /// Column labels, sorted.
    pub columns: Vec<String>,
    /// Rows, highest overall Core first.
    pub rows: Vec<SliceRow>,
}

fn slice_keys(outcome: &TaskOutcome, by: SliceBy) -> Vec<&str> {
    match by {
        SliceBy::Capability => outcome.capabilities.iter().map(String::as_str).collect(),
        SliceBy::Difficulty => outcome.difficulty.as_deref().into_iter().collect(),
        SliceBy::Hazard => outcome.hazard_family.as_deref().into_iter().collect(),
    }
}

/// The capability (Table 8), difficulty or hazard-family table: the same
/// Core calculation applied to each slice of tasks (§4.1).
///
/// # Errors
/// As [`by_system`].
pub fn slice_table(outcomes: &[TaskOutcome], by: SliceBy) -> Result<SliceTable> {
    let groups = by_system(outcomes)?;
    let columns: Vec<String> = outcomes
        .iter()
        .flat_map(|o| slice_keys(o, by))
        .collect::<BTreeSet<&str>>()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let mut rows: Vec<(f64, SliceRow)> = groups
        .iter()
        .map(|(system, runs)| {
            let mut sums: BTreeMap<&str, (f64, usize)> = BTreeMap::new();
            for run in runs {
                for key in slice_keys(run, by) {
                    let entry = sums.entry(key).or_default();
                    entry.0 += run.core();
                    entry.1 += 1;
                }
            }
            let cells = columns
                .iter()
                .map(|c| {
                    sums.get(c.as_str()).map(|&(sum, n)| SliceCell {
                        core: sum / n as f64,
                        n,
                    })
                })
                .collect();
            let overall = mean(runs.iter().map(|o| o.core()));
            (
                overall,
                SliceRow {
                    system: system.clone(),
                    cells,
                },
            )
        })
        .collect();
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    Ok(SliceTable {
        by,
        columns,
        rows: rows.into_iter().map(|(_, r)| r).collect(),
    })
}

/// One row of the cost table of Table 11.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CostRow {
    /// System id.
    pub system: String,
    /// Mean Core.
    pub core: f64,
    /// Mean tokens per task, in thousands.
    pub tokens_per_task_k: f64,
    /// List price in USD per million tokens, when given.
    pub price_usd_per_m: Option<f64>,
    /// Total cost in USD: the runs' own costs when every run has one, else
    /// total tokens × price.
    pub cost_usd: f64,
}

/// The cost table of Table 11, rows descending by total cost. Systems with
/// neither per-run costs nor a price in `prices_usd_per_m` are left out.
///
/// # Errors
/// As [`by_system`].
pub fn cost_table(
    outcomes: &[TaskOutcome],
    prices_usd_per_m: &BTreeMap<String, f64>,
) -> Result<Vec<CostRow>> {
    let mut rows = Vec::new();
    for (system, runs) in by_system(outcomes)? {
        let summary = row(&system, &runs);
        let total_tokens: f64 = runs
            .iter()
            .filter_map(|o| count(o.trajectory.total_tokens))
            .sum();
        let price = prices_usd_per_m.get(&system).copied();
        let cost = match (summary.cost_usd, price) {
            (Some(cost), _) => cost,
            (None, Some(price)) => total_tokens * price / 1e6,
            (None, None) => continue,
        };
        rows.push(CostRow {
            system,
            core: summary.core,
            tokens_per_task_k: summary.tokens.unwrap_or(0.0) / 1e3,
            price_usd_per_m: price,
            cost_usd: cost,
        });
    }
    rows.sort_by(|a, b| b.cost_usd.total_cmp(&a.cost_usd));
    Ok(rows)
}
