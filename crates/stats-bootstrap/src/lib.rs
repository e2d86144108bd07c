//! # earthverse-stats-bootstrap
//!
//! Turns per-task outcomes into the paper's tables: the leaderboard of
//! Table 2 (§4.1: `A = min(H, U)`, Combined Core `(A + P)/2`, Strict@95 when
//! `U ≥ 95`, failures score 0 and stay in the denominator), capability /
//! difficulty / hazard-family slices (Table 8), the cost table (Table 11),
//! and paired bootstrap 95% intervals of score differences (App. C.5: 5,000
//! resamples, seed 2026, ChaCha20, percentile intervals), with every pair of
//! many systems read from one shared resample matrix, and pairwise win /
//! tie / loss shares with opponent balancing (Fig. 7), and agreement of
//! two raters (Cohen's κ, raw agreement, recall, with bootstrap intervals).
//!
//! Pure: no IO, no async; randomness only from a seeded ChaCha20 RNG.
//!
//! ```
//! use earthverse_stats_bootstrap::{compare, leaderboard, BootstrapConfig, Metric, TaskOutcome};
//!
//! let mut outcomes = Vec::new();
//! for (i, (a, b)) in [(90.0, 80.0), (70.0, 65.0), (100.0, 90.0), (40.0, 45.0)].iter().enumerate() {
//!     let task = format!("T{i}");
//!     // holistic H, unit accuracy U, process P
//!     outcomes.push(TaskOutcome::from_judgment("alpha", &task, 100.0, *a, *a).unwrap());
//!     outcomes.push(TaskOutcome::from_judgment("beta", &task, 100.0, *b, *b).unwrap());
//! }
//! outcomes.push(TaskOutcome::failure("beta", "T4")); // scores 0, stays in the denominator
//!
//! let rows = leaderboard(&outcomes).unwrap();
//! assert_eq!(rows[0].system, "alpha");
//! assert_eq!(rows[0].core, 75.0);
//! assert_eq!(rows[0].strict95, 25.0); // one of four tasks has U ≥ 95
//! assert_eq!(rows[1].runs, 5);
//!
//! let delta = compare(&outcomes, "alpha", "beta", Metric::Core, &BootstrapConfig::default()).unwrap();
//! assert_eq!(delta.n_tasks, 4); // paired over the tasks both have
//! assert!((delta.delta - 5.0).abs() < 1e-12);
//! assert!(delta.ci_low <= delta.delta && delta.delta <= delta.ci_high);
//! ```
#![deny(missing_docs)]

mod agreement;
mod bootstrap;
mod error;
mod leaderboard;
mod outcome;
mod pairwise;

pub use agreement::{agreement, binary_agreement, Agreement, BinaryAgreement, Estimate};
pub use bootstrap::{
    all_pairs, compare, pairs_of, percentile, BootstrapConfig, MissingPolicy, PairedDelta,
    PairedScores, ResampleMatrix, PAPER_CONFIDENCE, PAPER_RESAMPLES, PAPER_SEED,
};
pub use earthverse_answer_units::{shown, Shown, UNDEFINED};
pub use error::{Error, Result};
pub use leaderboard::{
    by_system, cost_table, fill_missing_as_failures, leaderboard, row, slice_table, CostRow,
    LeaderboardRow, SliceBy, SliceCell, SliceRow, SliceTable,
};
pub use outcome::{Metric, TaskOutcome, TrajectoryFigures, STRICT_THRESHOLD};
pub use pairwise::{
    balanced_all, opponent_balanced, win_tie_loss, BalancedShares, WinTieLoss, PAIRWISE_TIE_MARGIN,
};
