//! Pairwise win / tie / loss shares from per-task scores (paper Fig. 7,
//! App. D.2: "wins, losses, and ties in opponent-balanced comparisons ...
//! Net is win share minus loss share").
//!
//! The paper's Fig. 7 comes from an LLM pairwise judge and states no rule
//! for a score-based comparison; the rule here is ours. On every task both
//! systems have, A *wins* when its score exceeds B's by more than the tie
//! margin, *loses* when B's exceeds A's by more than the margin, and ties
//! otherwise ([`PAIRWISE_TIE_MARGIN`]: 1 Core point, so two runs the judge
//! scored alike, e.g. both failed, or rounding of stored scores, are a
//! tie). Shares are percentages of the paired tasks. When one system is
//! compared with several opponents, each opponent weighs the same
//! ([`opponent_balanced`]): the shares are the means of the per-opponent
//! shares, so an opponent with more paired tasks does not count more.

use crate::{Error, Metric, Result, TaskOutcome};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Default tie margin, in score points (ours: the paper gives none for a
/// score-based comparison).
pub const PAIRWISE_TIE_MARGIN: f64 = 1.0;

/// Win / tie / loss of system `a` against system `b` over their paired
/// tasks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WinTieLoss {
    /// System A (the point of view).
    pub a: String,
    /// System B.
    pub b: String,
    /// Score compared.
    pub metric: Metric,
    /// Tie margin in score points.
    pub margin: f64,
    /// Paired tasks.
    pub tasks: usize,
    /// Tasks A won.
    pub wins: usize,
    /// Tasks tied.
    pub ties: usize,
    /// Tasks A lost.
    pub losses: usize,
    /// Win share, percent.
    pub win: f64,
    /// Tie share, percent.
    pub tie: f64,
    /// Loss share, percent.
    pub loss: f64,
    /// Net = win − loss, percentage points.
    pub net: f64,
}

/// Opponent-balanced shares of one system against several opponents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BalancedShares {
    /// The system.
    pub system: String,
    /// Its opponents, each weighed equally.
    pub opponents: Vec<String>,
    /// Mean win share over opponents, percent.
    pub win: f64,
    /// Mean tie share over opponents, percent.
    pub tie: f64,
    /// Mean loss share over opponents, percent.
    pub loss: f64,
    /// Net = win − loss.
    pub net: f64,
}

fn scores_of(
    outcomes: &[TaskOutcome],
    system: &str,
    metric: Metric,
) -> Result<BTreeMap<String, f64>> {
    let mut scores = BTreeMap::new();
    for o in outcomes.iter().filter(|o| o.system == system) {
        if scores.insert(o.task.clone(), o.metric(metric)).is_some() {
            return Err(Error::DuplicateOutcome {
                system: system.to_owned(),
                task: o.task.clone(),
            });
        }
    }
    if scores.is_empty() {
        return Err(Error::UnknownSystem {
            system: system.to_owned(),
        });
    }
    Ok(scores)
}

/// Win / tie / loss of `a` against `b` on `metric` over the tasks both
/// have, ties within `margin` points (see the module docs).
///
/// # Errors
/// [`Error::UnknownSystem`], [`Error::DuplicateOutcome`],
/// [`Error::NoCommonTasks`], or [`Error::InvalidConfig`] for a negative
/// or non-finite margin.
pub fn win_tie_loss(
    outcomes: &[TaskOutcome],
    a: &str,
    b: &str,
    metric: Metric,
    margin: f64,
) -> Result<WinTieLoss> {
    if !(margin.is_finite() && margin >= 0.0) {
        return Err(Error::InvalidConfig {
            reason: format!("tie margin = {margin} (need a finite value ≥ 0)"),
        });
    }
    let sa = scores_of(outcomes, a, metric)?;
    let sb = scores_of(outcomes, b, metric)?;
    let (mut wins, mut ties, mut losses) = (0usize, 0usize, 0usize);
    for (task, x) in &sa {
        let Some(y) = sb.get(task) else { continue };
        let d = x - y;
        if d > margin {
            wins += 1;
        } else if d < -margin {
            losses += 1;
        } else {
            ties += 1;
        }
    }
    let tasks = wins + ties + losses;
    if tasks == 0 {
        return Err(Error::NoCommonTasks {
            systems: format!("{a}, {b}"),
        });
    }
    let share = |k: usize| 100.0 * k as f64 / tasks as f64;
    Ok(WinTieLoss {
        a: a.to_owned(),
        b: b.to_owned(),
        metric,
        margin,
        tasks,
        wins,
        ties,
        losses,
        win: share(wins),
        tie: share(ties),
        loss: share(losses),
        net: share(wins) - share(losses),
    })
}

/// Opponent-balanced shares of `system` against each of `opponents`
/// (each weighed equally; see the module docs).
///
/// # Errors
/// As [`win_tie_loss`], for any opponent; [`Error::InvalidConfig`] when
/// `opponents` is empty or holds `system`.
pub fn opponent_balanced(
    outcomes: &[TaskOutcome],
    system: &str,
    opponents: &[&str],
    metric: Metric,
    margin: f64,
) -> Result<BalancedShares> {
    if opponents.is_empty() || opponents.contains(&system) {
        return Err(Error::InvalidConfig {
            reason: format!("opponents of {system} must be other systems, at least one"),
        });
    }
    let mut sums = (0.0, 0.0, 0.0);
    for opponent in opponents {
        let w = win_tie_loss(outcomes, system, opponent, metric, margin)?;
        sums.0 += w.win;
        sums.1 += w.tie;
        sums.2 += w.loss;
    }
    let k = opponents.len() as f64;
    let (win, tie, loss) = (sums.0 / k, sums.1 / k, sums.2 / k);
    Ok(BalancedShares {
        system: system.to_owned(),
        opponents: opponents.iter().map(|s| s.to_string()).collect(),
        win,
        tie,
        loss,
        net: win - loss,
    })
}

/// Opponent-balanced shares of every system against all the others
/// (Fig. 7), in system-name order.
///
/// # Errors
/// As [`opponent_balanced`]; [`Error::InvalidConfig`] with fewer than two
/// systems.
pub fn balanced_all(
    outcomes: &[TaskOutcome],
    metric: Metric,
    margin: f64,
) -> Result<Vec<BalancedShares>> {
    let systems: BTreeSet<&str> = outcomes.iter().map(|o| o.system.as_str()).collect();
    if systems.len() < 2 {
        return Err(Error::InvalidConfig {
            reason: "win/tie/loss shares need at least two systems".into(),
        });
    }
    systems
        .iter()
        .map(|s| {
            let others: Vec<&str> = systems.iter().copied().filter(|o| o != s).collect();
            opponent_balanced(outcomes, s, &others, metric, margin)
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Outcomes whose Core equals the given values (A = P = core).
    fn system(name: &str, cores: &[f64]) -> Vec<TaskOutcome> {
        cores
            .iter()
            .enumerate()
            .map(|(i, c)| TaskOutcome::from_scores(name, format!("T{i}"), *c, *c, *c).unwrap())
            .collect()
    }

    #[test]
    fn shares_follow_the_margin_on_hand_computed_tasks() {
        // Δ per task: +10, +1 (tie: not more than 1), −0.5 (tie), −30, +1.5.
        let mut o = system("a", &[60.0, 51.0, 49.5, 20.0, 81.5]);
        o.extend(system("b", &[50.0, 50.0, 50.0, 50.0, 80.0]));
        let w = win_tie_loss(&o, "a", "b", Metric::Core, PAIRWISE_TIE_MARGIN).unwrap();
        assert_eq!((w.tasks, w.wins, w.ties, w.losses), (5, 2, 2, 1));
        assert_eq!((w.win, w.tie, w.loss, w.net), (40.0, 40.0, 20.0, 20.0));
        // With no margin only exact equality ties: +1 becomes a win.
        let w = win_tie_loss(&o, "a", "b", Metric::Core, 0.0).unwrap();
        assert_eq!((w.wins, w.ties, w.losses), (3, 0, 2));
        // B's point of view mirrors A's.
        let w = win_tie_loss(&o, "b", "a", Metric::Core, 1.0).unwrap();
        assert_eq!((w.wins, w.ties, w.losses), (1, 2, 2));
        assert_eq!(w.net, -20.0);
    }

    #[test]
    fn only_paired_tasks_count_and_failures_score_zero() {
        let mut o = system("a", &[10.0, 10.0]);
        o.push(TaskOutcome::failure("a", "T2"));
        o.extend(system("b", &[0.0, 10.0, 0.0, 99.0])); // T3 unpaired
        let w = win_tie_loss(&o, "a", "b", Metric::Core, 1.0).unwrap();
        assert_eq!((w.tasks, w.wins, w.ties, w.losses), (3, 1, 2, 0));
    }

    #[test]
    fn each_opponent_weighs_the_same() {
        // a vs b: 4 paired tasks, 4 wins (100 %). a vs c: 1 paired task, a
        // loss (0 % win). Pooled tasks would give 80 % wins; balanced 50 %.
        let mut o = system("a", &[90.0, 90.0, 90.0, 90.0]);
        o.extend(system("b", &[10.0, 10.0, 10.0, 10.0]));
        o.push(TaskOutcome::from_scores("c", "T0", 100.0, 100.0, 100.0).unwrap());
        let s = opponent_balanced(&o, "a", &["b", "c"], Metric::Core, 1.0).unwrap();
        assert_eq!((s.win, s.tie, s.loss, s.net), (50.0, 0.0, 50.0, 0.0));
        let all = balanced_all(&o, Metric::Core, 1.0).unwrap();
        let names: Vec<&str> = all.iter().map(|s| s.system.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        // b: loses all 4 to a (0 % win, 100 % loss); vs c: loses T0.
        assert_eq!((all[1].win, all[1].loss, all[1].net), (0.0, 100.0, -100.0));
        // c: beats a on T0 and b on T0.
        assert_eq!((all[2].win, all[2].net), (100.0, 100.0));
    }

    #[test]
    fn bad_inputs_are_named() {
        let o = system("a", &[1.0]);
        assert!(matches!(
            win_tie_loss(&o, "a", "z", Metric::Core, 1.0),
            Err(Error::UnknownSystem { .. })
        ));
        assert!(matches!(
            win_tie_loss(&o, "a", "a", Metric::Core, -1.0),
            Err(Error::InvalidConfig { .. })
        ));
        let mut o2 = o.clone();
        o2.push(TaskOutcome::from_scores("b", "X", 1.0, 1.0, 1.0).unwrap());
        assert!(matches!(
            win_tie_loss(&o2, "a", "b", Metric::Core, 1.0),
            Err(Error::NoCommonTasks { .. })
        ));
    }
}
