//! Per-system summaries of run ledgers.

use crate::model::{ClaimStatus, ErrorFamily, RunLedger, Strength};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The ledger figures of one system over its runs. Claims are the
/// counted units (the judge-like denominator) of each run's reading.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SystemSummary {
    /// System id.
    pub system: String,
    /// Runs.
    pub runs: usize,
    /// Counted claims.
    pub claims: usize,
    /// Counted claims whose expected value is a number.
    pub numeric: usize,
    /// Satisfied numeric claims.
    pub numeric_satisfied: usize,
    /// Satisfied numeric claims traced (observed, computed or
    /// transformed) with a strong trace.
    pub numeric_satisfied_traced: usize,
    /// The same, weak traces (small integers without their key) included.
    pub numeric_satisfied_traced_with_weak: usize,
    /// `numeric_satisfied_traced / numeric_satisfied` (0 when none).
    pub traced_share: f64,
    /// `numeric_satisfied_traced_with_weak / numeric_satisfied`.
    pub traced_share_with_weak: f64,
    /// Counted claims by status.
    pub status: BTreeMap<ClaimStatus, usize>,
    /// Counted unsatisfied claims by error family.
    pub families: BTreeMap<ErrorFamily, usize>,
    /// Cited files no step read, over all runs.
    pub cited_unread: usize,
    /// Claims with at least one superseded earlier value.
    pub claims_with_replaced: usize,
}

/// Summarises run ledgers per system, systems in sorted order.
pub fn summarize<'a>(
    runs: impl IntoIterator<Item = (&'a str, &'a RunLedger)>,
) -> Vec<SystemSummary> {
    let mut by: BTreeMap<&str, SystemSummary> = BTreeMap::new();
    for (system, ledger) in runs {
        let s = by.entry(system).or_insert_with(|| SystemSummary {
            system: system.to_owned(),
            ..SystemSummary::default()
        });
        s.runs += 1;
        s.cited_unread += ledger.cited_unread.len();
        for c in ledger.claims.iter().filter(|c| c.counted) {
            s.claims += 1;
            *s.status.entry(c.status).or_default() += 1;
            if let Some(f) = c.error_family {
                *s.families.entry(f).or_default() += 1;
            }
            if !c.replaced.is_empty() {
                s.claims_with_replaced += 1;
            }
            if c.expected.is_number() {
                s.numeric += 1;
                if c.satisfied {
                    s.numeric_satisfied += 1;
                    if c.status.is_traced() {
                        s.numeric_satisfied_traced_with_weak += 1;
                        if c.strength != Some(Strength::Weak) {
                            s.numeric_satisfied_traced += 1;
                        }
                    }
                }
            }
        }
    }
    by.into_values()
        .map(|mut s| {
            let share = |n: usize| {
                if s.numeric_satisfied == 0 {
                    0.0
                } else {
                    n as f64 / s.numeric_satisfied as f64
                }
            };
            s.traced_share = share(s.numeric_satisfied_traced);
            s.traced_share_with_weak = share(s.numeric_satisfied_traced_with_weak);
            s
        })
        .collect()
}
