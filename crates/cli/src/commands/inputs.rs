//! The rules every command shares about its inputs and outputs:
//!
//! - **Unloadable tasks** (one rule with run files): a command that runs or
//!   scores a release's tasks fails when a task file does not load, naming
//!   each file and field; `--skip-invalid` ([`SkipInvalid`]) goes on without
//!   them and names them in the command's summary.
//! - **Outputs never land on inputs**: every writer checks its output with
//!   package-model's [`ensure_output_outside`] before writing.

use anyhow::Context;
use earthverse_package_model::{ensure_output_outside, LoadError, Overlap, Release};
use std::path::Path;

/// `--skip-invalid`, shared by the commands that run or score tasks.
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct SkipInvalid {
    /// Go on without the task files that do not load, naming each in the
    /// summary (and in a study's report); without it such a file is an
    /// error naming it and its field.
    #[arg(long)]
    pub skip_invalid: bool,
}

impl SkipInvalid {
    /// Applies the rule to a loaded release: `Ok` with the skipped files
    /// (empty when every task loaded), or the error naming each file.
    pub fn check(&self, release: &Release, command: &str) -> anyhow::Result<Vec<LoadError>> {
        match release.require_all_tasks() {
            Ok(()) => Ok(Vec::new()),
            Err(_) if self.skip_invalid => {
                let skipped = release.load_errors().to_vec();
                for e in &skipped {
                    eprintln!("{command}: skipping task file {e} (--skip-invalid)");
                }
                Ok(skipped)
            }
            Err(e) => Err(anyhow::Error::from(e)).with_context(|| {
                format!(
                    "{command}: the release {} has task files that do not load; fix them, \
                     or give --skip-invalid to go on without them (they are then named in the summary)",
                    release.root().display()
                )
            }),
        }
    }
}

/// The summary's note of skipped task files: empty when none were.
pub fn skipped_note(skipped: &[LoadError]) -> String {
    if skipped.is_empty() {
        return String::new();
    }
    let files: Vec<String> = skipped
        .iter()
        .map(|e| e.path.display().to_string())
        .collect();
    format!(
        "; {} task file(s) not loaded and skipped (--skip-invalid): {}",
        skipped.len(),
        files.join(", ")
    )
}

/// Refuses an output (named by its flag) that lands on an input.
pub fn refuse_output_on_inputs(
    flag: &str,
    output: &Path,
    inputs: &[(&str, &Path)],
    overlap: Overlap,
) -> anyhow::Result<()> {
    ensure_output_outside(output, inputs, overlap).with_context(|| flag.to_string())
}

/// Refuses each given output (named by its flag) that lands on one of the
/// inputs.
pub fn refuse_outputs(
    outputs: &[(&str, Option<&Path>)],
    inputs: &[(&str, &Path)],
) -> anyhow::Result<()> {
    for (flag, path) in outputs {
        if let Some(path) = path {
            refuse_output_on_inputs(flag, path, inputs, Overlap::Outside)?;
        }
    }
    Ok(())
}

/// Writes command output to stdout; a closed pipe (`| head`) is not an error.
pub fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}
