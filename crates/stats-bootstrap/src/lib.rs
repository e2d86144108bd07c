//! # earthverse-stats-bootstrap
//!
//! Leaderboard aggregation (paper Table 2), capability / difficulty / hazard
//! slices, cost tables and paired bootstrap intervals (Appendix C.5: 5,000
//! resamples, seed 2026). Pure: no IO; randomness from a seeded ChaCha RNG.
#![deny(missing_docs)]
