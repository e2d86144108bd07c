//! Shared helpers of the benchmark binaries: locating the project, the dev
//! slice, and timing a reference command in the same run.
#![deny(missing_docs)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The project's root directory.
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// The development slice (`$EARTHVERSE_DATA` or `../shared/earthverse-dev/data`).
pub fn dev_slice() -> PathBuf {
    std::env::var_os("EARTHVERSE_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| project_root().join("../shared/earthverse-dev/data"))
}

/// Runs `f` `repeats` times and returns the fastest wall time.
pub fn best_of<T>(repeats: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..repeats.max(1) {
        let start = Instant::now();
        let value = f();
        best = best.min(start.elapsed());
        last = Some(value);
    }
    match last {
        Some(value) => (best, value),
        None => unreachable!("repeats.max(1) runs at least once"),
    }
}

/// The `earthverse` binary a bench times: `$EARTHVERSE_BIN`, default
/// `target/release/earthverse`.
pub fn earthverse_bin() -> PathBuf {
    std::env::var_os("EARTHVERSE_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| project_root().join("target/release/earthverse"))
}

/// Runs `bin <args>` once, output discarded, and returns its wall time.
///
/// # Panics
/// When the command cannot start or fails: a failing run stops the bench.
pub fn run_timed(bin: &Path, args: &[&OsStr]) -> Duration {
    let start = Instant::now();
    let ok = Command::new(bin)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let took = start.elapsed();
    assert!(ok, "{} {args:?} failed", bin.display());
    took
}
