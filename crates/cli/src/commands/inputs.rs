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

/// Writes `path` atomically: the bytes go to a temporary file beside it
/// (`.NAME.tmp.PID`), which is renamed over `path` only once complete; on
/// any error (a full disk) the temporary file is removed and `path` is left
/// as it was. A temporary file of the same target left by a killed process
/// is removed when the target is written (agent-controller's
/// `write_atomic` rule), so a rerun after a kill leaves no stray file.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let result = (|| -> anyhow::Result<()> {
        let mut file = std::fs::File::create(&tmp).with_context(|| {
            format!(
                "writing {}: creating a temporary file in {}",
                path.display(),
                dir.display()
            )
        })?;
        write(&mut file).with_context(|| format!("writing {}", path.display()))?;
        file.sync_all()
            .with_context(|| format!("writing {}", path.display()))?;
        drop(file);
        std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
        return result;
    }
    earthverse_agent_controller::record::remove_stale_temporaries(dir, &name);
    Ok(())
}
