//! # earthverse-agent-controller
//!
//! The multi-round solver loop of paper Appendix E and C.2 (48 turns, 1,800 s,
//! 12,000-character observations, context compaction, repair, review), run
//! records in the public trajectory schema, and the resumable batch runner.
#![deny(missing_docs)]
