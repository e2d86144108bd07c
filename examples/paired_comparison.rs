//! Compares the two recorded systems of a release with the paired
//! bootstrap (5,000 resamples, seed 2026) and prints ΔCore with its 95%
//! interval.
//!
//! `cargo run -p earthverse-examples --example paired_comparison [RELEASE [A B]]`

use earthverse_examples::scoring::{
    deterministic_judge, format_delta, leaderboard_of, paired_core, recorded_runs_dir, score_runs,
};

fn main() -> anyhow::Result<()> {
    let release = earthverse_examples::release_from_args();
    let records = earthverse_examples::block_on(score_runs(
        &release,
        &recorded_runs_dir(&release),
        &deterministic_judge(),
    ))??;
    // By default: the best system against the runner-up.
    let args: Vec<String> = std::env::args().skip(2).collect();
    let (a, b) = match args.as_slice() {
        [a, b, ..] => (a.clone(), b.clone()),
        _ => {
            let rows = leaderboard_of(&records)?;
            anyhow::ensure!(rows.len() >= 2, "need two systems, found {}", rows.len());
            (rows[0].system.clone(), rows[1].system.clone())
        }
    };
    println!("{}", format_delta(&paired_core(&records, &a, &b)?));
    Ok(())
}
