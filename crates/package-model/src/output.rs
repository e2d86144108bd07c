//! The one check every writer makes before writing: its output is not one
//! of its inputs, not inside one, and (for [`Overlap::Disjoint`]) does not
//! hold one.
//!
//! Paths are compared canonically (symlinks followed, `..` resolved). An
//! output that does not exist yet is placed by canonicalising its nearest
//! existing ancestor and appending the rest, so `REL/packages/new/x` is
//! seen to be inside `REL` before anything is created, and a symlink
//! named as the output is followed to where the writes would land.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use earthverse_package_model::output::{ensure_output_outside, Overlap};
//! let root = tempfile::tempdir()?;
//! let release = root.path().join("release");
//! std::fs::create_dir_all(release.join("tasks"))?;
//! let inputs = [("the release", release.as_path())];
//! // A new folder beside the release is fine ...
//! ensure_output_outside(&root.path().join("perturbed"), &inputs, Overlap::Disjoint)?;
//! // ... one inside it (even one that does not exist yet) is refused, naming both.
//! let err = ensure_output_outside(&release.join("packages/x"), &inputs, Overlap::Disjoint)
//!     .unwrap_err()
//!     .to_string();
//! assert!(err.contains("packages/x") && err.contains("inside the release"), "{err}");
//! // So is the release itself, and, for a disjoint output, a folder holding it.
//! assert!(ensure_output_outside(&release, &inputs, Overlap::Disjoint).is_err());
//! assert!(ensure_output_outside(root.path(), &inputs, Overlap::Disjoint).is_err());
//! assert!(ensure_output_outside(root.path(), &inputs, Overlap::Outside).is_ok());
//! # Ok(()) }
//! ```

use std::path::{Component, Path, PathBuf};

/// How an output may sit relative to the inputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overlap {
    /// The output may hold an input (the command never reads what it
    /// writes there), but may not be an input or lie inside one.
    Outside,
    /// The output may neither be, lie inside, nor hold an input: the
    /// command would otherwise read its own output or write over an input.
    Disjoint,
}

/// An output that would land on an input, or a path that cannot be placed.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The output is the input itself.
    #[error("output {output} is {what} ({input}) itself: refusing to write over an input; choose a new folder outside it")]
    Same {
        /// The output as given.
        output: PathBuf,
        /// What the input is (`the release`, `--runs`, ...).
        what: String,
        /// The input as given.
        input: PathBuf,
    },
    /// The output lies inside the input.
    #[error("output {output} is inside {what} ({input}): writing there would change an input; choose a folder outside it")]
    Inside {
        /// The output as given.
        output: PathBuf,
        /// What the input is.
        what: String,
        /// The input as given.
        input: PathBuf,
    },
    /// The output holds the input.
    #[error("output {output} holds {what} ({input}): the command would read its own output; choose a folder that does not contain it")]
    Holds {
        /// The output as given.
        output: PathBuf,
        /// What the input is.
        what: String,
        /// The input as given.
        input: PathBuf,
    },
    /// Writing the output failed (nothing was left at `path`: see
    /// [`write_atomic`]).
    #[error("writing {path}: {source}")]
    Write {
        /// The output being written.
        path: PathBuf,
        /// The underlying error (a full disk, a read-only folder, ...).
        #[source]
        source: std::io::Error,
    },
    /// A path could not be canonicalised.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
}

/// Refuses an `output` that is one of `inputs` (each named by what it is,
/// e.g. `("the release", root)`), lies inside one, or, with
/// [`Overlap::Disjoint`], holds one. Inputs that do not exist are skipped
/// (nothing can be overwritten there).
pub fn ensure_output_outside(
    output: &Path,
    inputs: &[(&str, &Path)],
    overlap: Overlap,
) -> Result<(), OutputError> {
    let out = place(output)?;
    for (what, input) in inputs {
        let Ok(inp) = input.canonicalize() else {
            continue;
        };
        let err = if out == inp {
            OutputError::Same {
                output: output.to_path_buf(),
                what: what.to_string(),
                input: input.to_path_buf(),
            }
        } else if out.starts_with(&inp) {
            OutputError::Inside {
                output: output.to_path_buf(),
                what: what.to_string(),
                input: input.to_path_buf(),
            }
        } else if overlap == Overlap::Disjoint && inp.starts_with(&out) {
            OutputError::Holds {
                output: output.to_path_buf(),
                what: what.to_string(),
                input: input.to_path_buf(),
            }
        } else {
            continue;
        };
        return Err(err);
    }
    Ok(())
}

/// Where writes to `path` would land: its canonical form when it exists,
/// else its nearest existing ancestor's canonical form with the rest
/// appended (`..` in the rest undone lexically: the missing folders it
/// steps out of cannot be symlinks).
pub fn place(path: &Path) -> Result<PathBuf, OutputError> {
    place_at_depth(path, 0)
}

/// Symlinks followed by hand (dangling ones) before giving up on a loop.
const MAX_LINKS: usize = 40;

fn place_at_depth(path: &Path, depth: usize) -> Result<PathBuf, OutputError> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|source| OutputError::Io {
                path: path.to_path_buf(),
                source,
            })?
            .join(path)
    };
    let mut existing = absolute.as_path();
    let mut rest: Vec<Component<'_>> = Vec::new();
    loop {
        let found = match existing.canonicalize() {
            Ok(canonical) => Some(canonical),
            // A dangling symlink: writes through it land at its target.
            Err(_) if existing.is_symlink() => {
                if depth >= MAX_LINKS {
                    return Err(OutputError::Io {
                        path: path.to_path_buf(),
                        source: std::io::Error::other("too many levels of symbolic links"),
                    });
                }
                let target = std::fs::read_link(existing).map_err(|source| OutputError::Io {
                    path: existing.to_path_buf(),
                    source,
                })?;
                let target = match existing.parent() {
                    Some(parent) if target.is_relative() => parent.join(target),
                    _ => target,
                };
                Some(place_at_depth(&target, depth + 1)?)
            }
            Err(_) => None,
        };
        if let Some(canonical) = found {
            let mut placed = canonical;
            for component in rest.iter().rev() {
                match component {
                    Component::ParentDir => {
                        placed.pop();
                    }
                    Component::CurDir => {}
                    other => placed.push(other.as_os_str()),
                }
            }
            return Ok(placed);
        }
        let Some(parent) = existing.parent() else {
            return Err(OutputError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no existing ancestor folder",
                ),
            });
        };
        if let Some(last) = existing.components().next_back() {
            rest.push(last);
        }
        existing = parent;
    }
}

/// Writes `path` atomically: `write` fills a temporary file beside it
/// (`.NAME.tmp.PID`), which is synced and renamed over `path` only once
/// complete. On any error (a full disk, a read-only folder) the temporary
/// file is removed and `path` is left as it was. Temporary files of the same
/// target left by a process that was killed while writing it are removed
/// when the target is written ([`remove_stale_temporaries`]), so a rerun
/// after a kill leaves the same files as an uninterrupted run. The parent
/// folder is created if missing.
///
/// This is the one atomic writer of the workspace: run records, batch
/// plans, score sidecars, tables, reports and study outputs all go through
/// it.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use earthverse_package_model::output::write_atomic;
/// use std::io::Write as _;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("table.jsonl");
/// write_atomic(&path, |file| file.write_all(b"{}\n"))?;
/// // A failed write leaves the previous content and no temporary file.
/// let failed = write_atomic(&path, |_| Err(std::io::Error::other("disk full")));
/// assert!(failed.unwrap_err().to_string().contains("table.jsonl"));
/// assert_eq!(std::fs::read(&path)?, b"{}\n");
/// assert_eq!(std::fs::read_dir(dir.path())?.count(), 1);
/// # Ok(()) }
/// ```
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut std::fs::File) -> std::io::Result<()>,
) -> Result<(), OutputError> {
    use std::io::Write as _;
    let failed = |source| OutputError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir).map_err(failed)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        write(&mut file)?;
        file.flush()?;
        file.sync_all()?;
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if let Err(source) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(failed(source));
    }
    remove_stale_temporaries(dir, &name);
    Ok(())
}

/// Removes `.NAME.tmp.PID` files in `dir` whose process is gone (best
/// effort: a file that cannot be read or removed is left; on a system
/// without `/proc` nothing is removed).
pub fn remove_stale_temporaries(dir: &Path, name: &str) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let prefix = format!(".{name}.tmp.");
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|n| n.strip_prefix(&prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn check(out: &Path, input: &Path, overlap: Overlap) -> Option<&'static str> {
        match ensure_output_outside(out, &[("the input", input)], overlap) {
            Ok(()) => None,
            Err(OutputError::Same { .. }) => Some("same"),
            Err(OutputError::Inside { .. }) => Some("inside"),
            Err(OutputError::Holds { .. }) => Some("holds"),
            Err(OutputError::Io { .. } | OutputError::Write { .. }) => Some("io"),
        }
    }

    #[test]
    fn placements() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let rel = root.join("rel");
        std::fs::create_dir_all(rel.join("packages")).unwrap();
        std::fs::create_dir_all(root.join("other")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&rel, root.join("link")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(rel.join("not-yet"), root.join("dangling")).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("loop"), root.join("loop")).unwrap();
        let cases: Vec<(PathBuf, Overlap, Option<&str>)> = vec![
            (rel.clone(), Overlap::Outside, Some("same")),
            (rel.join("."), Overlap::Outside, Some("same")),
            (rel.join("packages/x/y"), Overlap::Outside, Some("inside")),
            (rel.join("packages"), Overlap::Outside, Some("inside")),
            (
                root.join("other/../rel/new"),
                Overlap::Outside,
                Some("inside"),
            ),
            (
                root.join("missing/../rel/new"),
                Overlap::Outside,
                Some("inside"),
            ),
            (rel.join("new/../../fine"), Overlap::Outside, None),
            (root.join("other/new"), Overlap::Disjoint, None),
            (root.join("relx"), Overlap::Disjoint, None),
            (root.to_path_buf(), Overlap::Outside, None),
            (root.to_path_buf(), Overlap::Disjoint, Some("holds")),
            #[cfg(unix)]
            (root.join("link/x"), Overlap::Outside, Some("inside")),
            #[cfg(unix)]
            (root.join("link"), Overlap::Outside, Some("same")),
            #[cfg(unix)]
            (root.join("dangling"), Overlap::Outside, Some("inside")),
            #[cfg(unix)]
            (
                root.join("dangling/deeper"),
                Overlap::Outside,
                Some("inside"),
            ),
            #[cfg(unix)]
            (root.join("loop/x"), Overlap::Outside, Some("io")),
        ];
        for (out, overlap, expected) in cases {
            assert_eq!(check(&out, &rel, overlap), expected, "{}", out.display());
        }
        // An input that does not exist cannot be overwritten.
        assert_eq!(check(&rel, &root.join("nope"), Overlap::Disjoint), None);
    }

    #[test]
    fn message_names_both_paths_and_the_input() {
        let dir = tempfile::tempdir().unwrap();
        let rel = dir.path().join("rel");
        std::fs::create_dir_all(&rel).unwrap();
        let out = rel.join("x");
        let text = ensure_output_outside(&out, &[("--runs", &rel)], Overlap::Outside)
            .unwrap_err()
            .to_string();
        assert!(text.contains(&out.display().to_string()), "{text}");
        assert!(
            text.contains(&format!("--runs ({})", rel.display())),
            "{text}"
        );
    }
}
