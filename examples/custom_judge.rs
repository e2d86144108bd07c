//! Plugs a different judge (all-or-nothing answers) into scoring and
//! prints its leaderboard beside the deterministic judge's.
//!
//! `cargo run -p earthverse-examples --example custom_judge [RELEASE]`

use earthverse_examples::judge::AllOrNothingJudge;
use earthverse_examples::scoring::{
    deterministic_judge, format_leaderboard, leaderboard_of, recorded_runs_dir, score_runs,
};

fn main() -> anyhow::Result<()> {
    let release = earthverse_examples::release_from_args();
    let runs = recorded_runs_dir(&release);
    let (ours, theirs) = earthverse_examples::block_on(async {
        let ours = score_runs(&release, &runs, &AllOrNothingJudge).await?;
        let theirs = score_runs(&release, &runs, &deterministic_judge()).await?;
        anyhow::Ok((ours, theirs))
    })??;
    println!("judge all-or-nothing-v1:");
    print!("{}", format_leaderboard(&leaderboard_of(&ours)?));
    println!("judge deterministic-v1:");
    print!("{}", format_leaderboard(&leaderboard_of(&theirs)?));
    Ok(())
}
