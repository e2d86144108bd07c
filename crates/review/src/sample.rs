//! Stratified sampling of runs for review.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The stratum of a run: system family (Table 2), Core band (Fig. 9) and
/// the task's first capability.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Stratum {
    /// System family.
    pub system_family: String,
    /// Core band (`<40`, `40-70`, `>=70`).
    pub core_band: String,
    /// Capability.
    pub capability: String,
}

/// A run that can be drawn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    /// System id.
    pub system: String,
    /// Task id.
    pub task_id: String,
    /// Its stratum.
    pub stratum: Stratum,
}

/// Draws `n` runs: each stratum's runs in a ChaCha20 shuffle (seeded by
/// `seed`), then one run per stratum in turn (strata in sorted order)
/// until `n` are drawn or none are left. The same candidates and seed
/// always give the same sample, whatever the candidates' order.
pub fn stratified_sample(candidates: &[Candidate], n: usize, seed: u64) -> Vec<Candidate> {
    let mut strata: BTreeMap<&Stratum, Vec<&Candidate>> = BTreeMap::new();
    for c in candidates {
        strata.entry(&c.stratum).or_default().push(c);
    }
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let mut queues: Vec<Vec<&Candidate>> = strata
        .into_values()
        .map(|mut v| {
            v.sort_by(|a, b| (&a.system, &a.task_id).cmp(&(&b.system, &b.task_id)));
            for i in (1..v.len()).rev() {
                let j = rng.gen_range(0..=i);
                v.swap(i, j);
            }
            v.reverse();
            v
        })
        .collect();
    let mut out = Vec::with_capacity(n);
    while out.len() < n && queues.iter().any(|q| !q.is_empty()) {
        for q in &mut queues {
            if out.len() == n {
                break;
            }
            if let Some(c) = q.pop() {
                out.push(c.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidates() -> Vec<Candidate> {
        let mut out = Vec::new();
        for (family, n) in [("hosted", 30), ("open_weight", 5), ("agent_framework", 2)] {
            for i in 0..n {
                out.push(Candidate {
                    system: format!("{family}-{}", i % 3),
                    task_id: format!("T{i}"),
                    stratum: Stratum {
                        system_family: family.into(),
                        core_band: if i % 2 == 0 { "<40" } else { ">=70" }.into(),
                        capability: "x".into(),
                    },
                });
            }
        }
        out
    }

    #[test]
    fn every_stratum_before_any_twice_and_order_free() {
        let all = candidates();
        let sample = stratified_sample(&all, 6, 2026);
        // six strata (3 families x 2 bands): one run of each
        let strata: std::collections::BTreeSet<_> = sample.iter().map(|c| &c.stratum).collect();
        assert_eq!(strata.len(), 6);
        let mut reversed = all.clone();
        reversed.reverse();
        assert_eq!(stratified_sample(&reversed, 6, 2026), sample);
        assert_ne!(
            stratified_sample(&all, 30, 7),
            stratified_sample(&all, 30, 2026)
        );
        // never more than there are, never a run twice
        let everything = stratified_sample(&all, 1_000, 1);
        assert_eq!(everything.len(), all.len());
        let ids: std::collections::BTreeSet<_> =
            everything.iter().map(|c| (&c.system, &c.task_id)).collect();
        assert_eq!(ids.len(), all.len());
    }
}
