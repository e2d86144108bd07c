//! A whole controlled study from a program (no CLI): the conditions of
//! `earthverse_examples::study::MANIFEST` run with the baseline agent on a
//! release, scored, and reported.
//!
//! ```text
//! cargo run -p earthverse-examples --example embed_study [RELEASE [STUDY_DIR]]
//! ```

use earthverse_examples::study::{format_conditions, run_embedded_study, Notes};
use earthverse_examples::{block_on, release_from_args};
use std::path::PathBuf;

fn main() -> anyhow::Result<()> {
    let release = release_from_args();
    let kept = std::env::args_os().nth(2).map(PathBuf::from);
    let scratch = tempfile::tempdir()?;
    let out = kept.unwrap_or_else(|| scratch.path().join("study"));
    let notes = Notes::default();
    let report = block_on(run_embedded_study(&release, &out, &notes))??;
    for line in notes.0.lock().map(|n| n.clone()).unwrap_or_default() {
        eprintln!("{line}");
    }
    print!("{}", format_conditions(&report));
    print!("{}", earthverse_report::render_study_text(&report));
    Ok(())
}
