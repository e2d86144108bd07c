//! # earthverse-rubric-judge
//!
//! Rubrics (5–8 criteria summing to 20 points), the `Judge` trait with LLM
//! and deterministic judges, and the per-task scores of paper §4.1:
//! A = min(H, U), Core = (A + P) / 2, Strict@95.
#![deny(missing_docs)]
