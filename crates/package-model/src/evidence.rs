//! Safe evidence access: the one place where a path written by a tool or a
//! model becomes a file on disk (paper §3.4: tools are package-scoped; the
//! hidden artifacts of Appendix E are never shown to a solver).
//!
//! [`resolve`] accepts
//! - package-relative paths: `data/event_reports/x.bin`, `./data/x`;
//! - release-relative paths: `event_packages/standard_event_packages/packages/<ID>/data/x`,
//!   also prefixed with `packages/` or `data/packages/` (the viewer path),
//!
//! and refuses, each with its own [`AccessError`] variant: NUL bytes, other
//! control characters, absolute paths (Unix, Windows drive, UNC), URLs,
//! `~` home paths, any `..` component, another package's paths, the hidden
//! artifacts (`computed_gt.json`, `solution_en.md`, `review.json`,
//! `compute_gt.py`, case-insensitively, as any component, before and after
//! following symlinks), symlinks (at any depth) that lead outside the
//! package, hard links to a file of the release's `tasks/` tree (where the
//! hidden artifacts live; compared by inode, on Unix), and paths that do
//! not exist.

use crate::release::PACKAGE_PATH_PREFIX;
use std::path::{Component, Path, PathBuf};

/// The artifacts a solver must never read (Appendix E): the expert solution,
/// the ground truth, its program and the review record.
pub const HIDDEN_ARTIFACTS: [&str; 4] = [
    "computed_gt.json",
    "solution_en.md",
    "review.json",
    "compute_gt.py",
];

/// Longest path accepted, in bytes.
pub const MAX_PATH_BYTES: usize = 4096;

/// A path resolved inside a package.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The canonical absolute path on disk.
    pub absolute: PathBuf,
    /// The path relative to the package root, `/`-separated (`""` for the
    /// package root itself).
    pub package_relative: String,
}

/// Why a requested path was refused. Messages name the path as requested
/// and never reveal where the package lives on disk.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AccessError {
    /// The path contains a NUL byte.
    #[error("path {requested:?} contains a NUL byte")]
    NulByte {
        /// The path as requested.
        requested: String,
    },
    /// The path contains a control character.
    #[error("path {requested:?} contains a control character")]
    ControlCharacter {
        /// The path as requested.
        requested: String,
    },
    /// The path is longer than [`MAX_PATH_BYTES`].
    #[error("path of {len} bytes is too long")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The path is absolute (`/x`, `C:\x`, `\\server\x`).
    #[error("path {requested:?} is absolute; give a package-relative path such as data/...")]
    AbsolutePath {
        /// The path as requested.
        requested: String,
    },
    /// The path is a URL (`file:///x`, `http://x`).
    #[error("path {requested:?} is a URL; give a package-relative path")]
    UrlScheme {
        /// The path as requested.
        requested: String,
    },
    /// The path starts with `~`.
    #[error("path {requested:?} refers to a home directory")]
    HomeDirectory {
        /// The path as requested.
        requested: String,
    },
    /// The path has a `..` component.
    #[error("path {requested:?} contains `..`")]
    ParentTraversal {
        /// The path as requested.
        requested: String,
    },
    /// The path names another event package.
    #[error("path {requested:?} belongs to package {other}, not {package}")]
    OtherPackage {
        /// The path as requested.
        requested: String,
        /// The package it names.
        other: String,
        /// The package being accessed.
        package: String,
    },
    /// The path names a hidden artifact.
    #[error("path {requested:?} names hidden artifact {artifact}, which is not available")]
    HiddenArtifact {
        /// The path as requested.
        requested: String,
        /// The artifact name matched.
        artifact: String,
    },
    /// The file is a hard link to a file of the release's `tasks/` tree
    /// (a task file, or an authoring task folder's hidden artifact).
    #[error("path {requested:?} is linked to a hidden task file, which is not available")]
    LinkedToHidden {
        /// The path as requested.
        requested: String,
    },
    /// The path (through a symlink) leads outside the package.
    #[error("path {requested:?} leads outside the package")]
    OutsidePackage {
        /// The path as requested.
        requested: String,
        /// Where it leads (for logs; not part of the message).
        target: PathBuf,
    },
    /// Nothing exists at the path.
    #[error("path {requested:?} does not exist in the package")]
    NotFound {
        /// The path as requested.
        requested: String,
    },
    /// The package root itself is missing or unreadable.
    #[error("package root is not available: {message}")]
    PackageUnavailable {
        /// The package root.
        package_root: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// The matched hidden artifact name, if `component` is one
/// (case-insensitive; trailing dots and spaces ignored).
pub fn hidden_artifact_name(component: &str) -> Option<&'static str> {
    let trimmed = component.trim_end_matches(['.', ' ']);
    HIDDEN_ARTIFACTS
        .iter()
        .copied()
        .find(|name| trimmed.eq_ignore_ascii_case(name))
}

/// Resolves `requested` inside the package at `package_root`.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use earthverse_package_model::evidence::{resolve, AccessError};
/// let dir = tempfile::tempdir()?;
/// let package = dir.path().join("CSX-001");
/// std::fs::create_dir_all(package.join("data"))?;
/// std::fs::write(package.join("data/a.json"), "{}")?;
/// let ok = resolve(&package, "event_packages/standard_event_packages/packages/CSX-001/data/a.json")?;
/// assert_eq!(ok.package_relative, "data/a.json");
/// assert!(matches!(resolve(&package, "../CSX-002/data/a.json"), Err(AccessError::ParentTraversal { .. })));
/// # Ok(()) }
/// ```
pub fn resolve(package_root: &Path, requested: &str) -> Result<ResolvedPath, AccessError> {
    let owned = || requested.to_string();
    if requested.len() > MAX_PATH_BYTES {
        return Err(AccessError::TooLong {
            len: requested.len(),
        });
    }
    if requested.contains('\0') {
        return Err(AccessError::NulByte { requested: owned() });
    }
    if requested.chars().any(char::is_control) {
        return Err(AccessError::ControlCharacter { requested: owned() });
    }
    let trimmed = requested.trim();
    let normalised = trimmed.replace('\\', "/");
    if normalised.starts_with('/') || is_windows_drive(&normalised) {
        return Err(AccessError::AbsolutePath { requested: owned() });
    }
    if let Some(colon) = normalised.find("://") {
        if normalised[..colon]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '-' || c == '.')
        {
            return Err(AccessError::UrlScheme { requested: owned() });
        }
    }
    if normalised.starts_with('~') {
        return Err(AccessError::HomeDirectory { requested: owned() });
    }

    let mut parts: Vec<&str> = Vec::new();
    for part in normalised.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(AccessError::ParentTraversal { requested: owned() }),
            other => parts.push(other),
        }
    }
    for part in &parts {
        if let Some(artifact) = hidden_artifact_name(part) {
            return Err(AccessError::HiddenArtifact {
                requested: owned(),
                artifact: artifact.to_string(),
            });
        }
    }

    let package_id = package_root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let parts =
        strip_release_prefix(&parts, &package_id).map_err(|other| AccessError::OtherPackage {
            requested: owned(),
            other,
            package: package_id.clone(),
        })?;

    let canonical_root =
        package_root
            .canonicalize()
            .map_err(|e| AccessError::PackageUnavailable {
                package_root: package_root.to_path_buf(),
                message: e.to_string(),
            })?;
    let mut candidate = canonical_root.clone();
    for part in parts {
        candidate.push(part);
    }
    let canonical = match candidate.canonicalize() {
        Ok(path) => path,
        Err(_) => {
            // A dangling symlink whose target is outside is still an escape.
            if let Ok(target) = std::fs::read_link(&candidate) {
                let absolute = candidate
                    .parent()
                    .map(|p| p.join(&target))
                    .unwrap_or(target);
                if !lexically_inside(&absolute, &canonical_root) {
                    return Err(AccessError::OutsidePackage {
                        requested: owned(),
                        target: absolute,
                    });
                }
            }
            return Err(AccessError::NotFound { requested: owned() });
        }
    };
    if !canonical.starts_with(&canonical_root) {
        return Err(AccessError::OutsidePackage {
            requested: owned(),
            target: canonical,
        });
    }
    let relative = canonical
        .strip_prefix(&canonical_root)
        .map(|p| {
            p.components()
                .filter_map(|c| match c {
                    Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                    _ => None,
                })
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    for part in &relative {
        if let Some(artifact) = hidden_artifact_name(part) {
            return Err(AccessError::HiddenArtifact {
                requested: owned(),
                artifact: artifact.to_string(),
            });
        }
    }
    if linked_to_hidden_file(&canonical, &canonical_root) {
        return Err(AccessError::LinkedToHidden { requested: owned() });
    }
    Ok(ResolvedPath {
        absolute: canonical,
        package_relative: relative.join("/"),
    })
}

/// Whether a regular file with more than one link shares its inode with a
/// file under the release's `tasks/` tree, where the hidden artifacts live
/// (a task file of the public layout holds its solution and ground truth;
/// an authoring task folder holds `computed_gt.json`, ...). Names and
/// symlinks are checked above; a hard link has neither, so only the inode
/// tells. The release root is found from the package root's own layout
/// (`<root>/event_packages/standard_event_packages/packages/<ID>`); a
/// package outside that layout has no `tasks/` tree to compare with.
#[cfg(unix)]
fn linked_to_hidden_file(canonical: &Path, canonical_root: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(canonical) else {
        return false;
    };
    if !meta.is_file() || meta.nlink() < 2 {
        return false;
    }
    let inode = (meta.dev(), meta.ino());
    task_trees_of(canonical_root).into_iter().any(|tasks| {
        walkdir::WalkDir::new(tasks)
            .follow_links(false)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_file())
            .filter_map(|entry| entry.metadata().ok())
            .any(|other| (other.dev(), other.ino()) == inode)
    })
}

/// Without inodes to compare, hard links are not detected.
#[cfg(not(unix))]
fn linked_to_hidden_file(_canonical: &Path, _canonical_root: &Path) -> bool {
    false
}

/// The `tasks/` trees beside a package root's layout: the authoring
/// layout's `<root>/tasks` above `<root>/event_packages/standard_event_packages/packages/<ID>`,
/// and the public release's `<root>/tasks` above
/// `<root>/packages/event_packages/...`. Only directories that exist.
#[cfg(unix)]
fn task_trees_of(package_root: &Path) -> Vec<PathBuf> {
    let mut dir = package_root.parent();
    for expected in PACKAGE_PATH_PREFIX.rsplit('/') {
        dir = dir.filter(|d| d.file_name().is_some_and(|n| n == expected));
        dir = dir.and_then(Path::parent);
    }
    let Some(above_layout) = dir else {
        return Vec::new();
    };
    let mut roots = vec![above_layout];
    if above_layout.file_name().is_some_and(|n| n == "packages") {
        roots.extend(above_layout.parent());
    }
    roots
        .into_iter()
        .map(|root| root.join("tasks"))
        .filter(|tasks| tasks.is_dir())
        .collect()
}

fn is_windows_drive(path: &str) -> bool {
    let bytes = path.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

fn lexically_inside(path: &Path, root: &Path) -> bool {
    let mut stack: Vec<Component<'_>> = Vec::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                if stack.pop().is_none() {
                    return false;
                }
            }
            Component::CurDir => {}
            other => stack.push(other),
        }
    }
    let normalised: PathBuf = stack.iter().collect();
    normalised.starts_with(root)
}

/// Strips a release-relative prefix (`[data/][packages/]event_packages/
/// standard_event_packages/packages/<ID>/`). Returns the other package's id
/// when the path names a different package.
fn strip_release_prefix<'a>(
    parts: &'a [&'a str],
    package_id: &str,
) -> Result<&'a [&'a str], String> {
    let prefix: Vec<&str> = PACKAGE_PATH_PREFIX.split('/').collect();
    for skip in [&[][..], &["packages"][..], &["data", "packages"][..]] {
        let head_len = skip.len() + prefix.len();
        if parts.len() > head_len
            && parts[..skip.len()] == *skip
            && parts[skip.len()..head_len] == prefix[..]
        {
            let id = parts[head_len];
            if id != package_id {
                return Err(id.to_string());
            }
            return Ok(&parts[head_len + 1..]);
        }
    }
    // A bare `packages/<OTHER-ID>/...` or `<OTHER-ID>/...` is only treated as
    // another package when it looks like an event id of the release.
    if let Some(first) = parts.first() {
        if *first == package_id {
            return Ok(&parts[1..]);
        }
    }
    Ok(parts)
}

/// Opens every file of a task's inventory (`relative` paths under
/// `package_root`) that exists: the first that does not open (permission
/// denied, a symlink loop) or whose symlink leads outside the package (the
/// agent's tools refuse to follow it, see [`resolve`]) is returned with
/// why. An absent file is not an error here (a `missing` perturbation
/// removes one on purpose). The one check before a run or a replay that
/// the evidence the task lists can be read.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use earthverse_package_model::evidence::first_unopenable;
/// let dir = tempfile::tempdir()?;
/// std::fs::create_dir(dir.path().join("data"))?;
/// std::fs::write(dir.path().join("data/ok.csv"), "a\n1\n")?;
/// std::os::unix::fs::symlink("/etc/hostname", dir.path().join("data/out.csv"))?;
/// assert!(first_unopenable(dir.path(), ["data/ok.csv", "data/absent.csv"]).is_none());
/// let (path, why) = first_unopenable(dir.path(), ["data/out.csv"]).ok_or("missed")?;
/// assert!(path.ends_with("data/out.csv") && why.to_string().contains("outside the package"));
/// # Ok(()) }
/// ```
pub fn first_unopenable<'a>(
    package_root: &Path,
    relative: impl IntoIterator<Item = &'a str>,
) -> Option<(PathBuf, std::io::Error)> {
    let root = std::fs::canonicalize(package_root).unwrap_or_else(|_| package_root.to_path_buf());
    for rel in relative {
        let path = package_root.join(rel);
        match std::fs::File::open(&path) {
            Ok(_) => {
                let real = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
                if !real.starts_with(&root) {
                    let why = std::io::Error::other(format!(
                        "symlink leads outside the package {} (to {})",
                        package_root.display(),
                        real.display()
                    ));
                    return Some((path, why));
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Some((path, e)),
        }
    }
    None
}

/// One file of a package, as listed for a solver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageFile {
    /// Package-relative path, `/`-separated.
    pub package_relative: String,
    /// Size in bytes.
    pub bytes: u64,
}

/// Lists the regular files of a package (sorted), skipping hidden artifacts
/// and any symlink that does not resolve inside the package.
pub fn list_package_files(package_root: &Path) -> crate::Result<Vec<PackageFile>> {
    let canonical_root = package_root
        .canonicalize()
        .map_err(|e| crate::PackageError::io(package_root, e))?;
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(&canonical_root)
        .follow_links(false)
        .sort_by_file_name()
    {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "skipping unreadable package entry");
                continue;
            }
        };
        if entry.depth() == 0 || entry.file_type().is_dir() {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(&canonical_root) else {
            continue;
        };
        let relative = relative
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/");
        match resolve(&canonical_root, &relative) {
            Ok(resolved) => {
                let Ok(meta) = std::fs::metadata(&resolved.absolute) else {
                    continue;
                };
                if meta.is_file() {
                    out.push(PackageFile {
                        package_relative: relative,
                        bytes: meta.len(),
                    });
                }
            }
            Err(_) => continue,
        }
    }
    Ok(out)
}
