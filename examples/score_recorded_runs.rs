//! Scores the recorded runs of a release with the deterministic judge and
//! prints the leaderboard.
//!
//! `cargo run -p earthverse-examples --example score_recorded_runs [RELEASE]`

use earthverse_examples::scoring::{
    deterministic_judge, format_leaderboard, leaderboard_of, recorded_runs_dir, score_runs,
};

fn main() -> anyhow::Result<()> {
    let release = earthverse_examples::release_from_args();
    let judge = deterministic_judge();
    let records =
        earthverse_examples::block_on(score_runs(&release, &recorded_runs_dir(&release), &judge))??;
    println!(
        "scored {} recorded runs with deterministic-v1",
        records.len()
    );
    print!("{}", format_leaderboard(&leaderboard_of(&records)?));
    Ok(())
}
