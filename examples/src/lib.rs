//! # earthverse-examples
//!
//! The logic behind the runnable examples of earthverse-rs, one module per
//! swap point, so that the examples stay short and the tests in
//! `examples/tests` can check the same values the examples print.
//!
//! | example | module | swap point |
//! | --- | --- | --- |
//! | `score_recorded_runs` | [`scoring`] | deterministic judge + leaderboard |
//! | `custom_tool` | [`tools`] | a new [`earthverse_tool_registry::Tool`] |
//! | `custom_provider` | [`provider`] | a new [`earthverse_model_provider::ChatModel`] |
//! | `custom_controller` | [`controller`] | your own loop instead of the controller |
//! | `custom_judge` | [`judge`] | a new [`earthverse_rubric_judge::Judge`] |
//! | `paired_comparison` | [`scoring`] | paired bootstrap ΔCore |
//! | `embed_study` | [`study`] | a whole controlled study from a program |
//!
//! Every example runs on the bundled mini release (`fixtures/release`) with
//! `cargo run -p earthverse-examples --example NAME`, or on another release
//! given as the first argument.
//!
//! ```
//! let release = earthverse_examples::fixture_release();
//! assert!(release.join("tasks").is_dir());
//! ```
#![deny(missing_docs)]

pub mod controller;
pub mod judge;
pub mod provider;
pub mod scoring;
pub mod study;
pub mod tools;

use std::path::PathBuf;

/// The bundled mini release (`fixtures/release` at the project root).
pub fn fixture_release() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("fixtures")
        .join("release")
}

/// The release an example runs on: its first command-line argument, or
/// the bundled fixtures.
pub fn release_from_args() -> PathBuf {
    std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(fixture_release)
}

/// Runs a future to completion on a fresh current-thread Tokio runtime.
///
/// # Errors
/// When the runtime cannot start.
pub fn block_on<F: std::future::Future>(future: F) -> anyhow::Result<F::Output> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    Ok(runtime.block_on(future))
}
