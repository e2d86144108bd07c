//! The label store: JSON lines, one per click, appended atomically.

use crate::error::{Error, Result};
use fs2::FileExt;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

/// What a label is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// An answer unit (`key` = its path).
    Unit,
    /// A rubric criterion (`key` = its name).
    Rubric,
}

/// One expert judgement, as written to the label file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Label {
    /// Reviewer's name.
    pub reviewer: String,
    /// When (RFC 3339, UTC).
    pub time: String,
    /// System id of the run.
    pub system: String,
    /// Task id of the run.
    pub task_id: String,
    /// Unit or rubric criterion.
    pub target: Target,
    /// The unit's path or the criterion's name.
    pub key: String,
    /// Unit judged right (`true`) or wrong.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct: Option<bool>,
    /// Error family of a wrong unit (the ledger's family names).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub family: Option<String>,
    /// Points given to a rubric criterion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub points: Option<f64>,
}

/// What a later label replaces: the same reviewer on the same item.
pub type LabelKey = (String, String, String, Target, String);

impl Label {
    /// The item this label judges, for its reviewer.
    pub fn item(&self) -> LabelKey {
        (
            self.reviewer.clone(),
            self.system.clone(),
            self.task_id.clone(),
            self.target,
            self.key.clone(),
        )
    }
}

/// Appends one label as one line: the file is opened for appending,
/// locked exclusively (so two tabs or two servers never interleave), the
/// line written in one call and synced to disk before returning.
///
/// # Errors
/// [`Error::Io`] naming the file.
pub fn append_label(path: &Path, label: &Label) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut line = serde_json::to_string(label).map_err(|e| io(e.into()))?;
    line.push('\n');
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    file.lock_exclusive().map_err(io)?;
    let written = file
        .write_all(line.as_bytes())
        .and_then(|()| file.sync_data());
    let unlocked = FileExt::unlock(&file);
    written.map_err(io)?;
    unlocked.map_err(io)
}

/// Checks that labels can be appended to `path` before a review starts:
/// an existing file is opened for appending, a new one is created and
/// removed again (the first label creates it). A reviewer's clicks are
/// never the first to find a read-only folder.
///
/// # Errors
/// [`Error::Io`] naming the file.
pub fn check_appendable(path: &Path) -> Result<()> {
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(io)?;
        return Ok(());
    }
    std::fs::OpenOptions::new()
        .create_new(true)
        .append(true)
        .open(path)
        .map_err(io)?;
    std::fs::remove_file(path).map_err(io)
}

/// Reads every label of a file (a missing file has none). Blank lines
/// are skipped; any other line that is not a label is an error naming
/// the file and line.
///
/// # Errors
/// [`Error::Io`], [`Error::MalformedLabel`].
pub fn read_labels(path: &Path) -> Result<Vec<Label>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(Error::Io {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        // The problem names the field (`correct: invalid type ...`).
        let label: Label =
            serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(line))
                .map_err(|e| Error::MalformedLabel {
                    path: path.to_path_buf(),
                    line: i + 1,
                    problem: match e.path().to_string() {
                        field if field == "." => e.inner().to_string(),
                        field => format!("field `{field}`: {}", e.inner()),
                    },
                })?;
        out.push(label);
    }
    Ok(out)
}

/// Reads the labels of a file that must exist: for commands that judge
/// labels already given (`review agreement`), where a mistyped path must
/// not read as "no labels". Otherwise as [`read_labels`].
///
/// # Errors
/// [`Error::Io`] naming the file when it is missing or unreadable;
/// [`Error::MalformedLabel`].
pub fn read_existing_labels(path: &Path) -> Result<Vec<Label>> {
    if let Err(source) = std::fs::metadata(path) {
        return Err(Error::Io {
            path: path.to_path_buf(),
            source,
        });
    }
    read_labels(path)
}

/// The latest label of each item (later lines replace earlier ones),
/// with the 1-based line it came from.
pub fn latest_labels(labels: &[Label]) -> BTreeMap<LabelKey, (usize, &Label)> {
    let mut out = BTreeMap::new();
    for (i, l) in labels.iter().enumerate() {
        out.insert(l.item(), (i + 1, l));
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_new_label_file_is_checked_without_being_left_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("labels.jsonl");
        check_appendable(&path).unwrap();
        assert!(!path.exists());
        append_label(&path, &label("a", true)).unwrap();
        check_appendable(&path).unwrap();
        assert_eq!(read_labels(&path).unwrap().len(), 1);
        // A folder that does not exist: named (mode-denied folders are the
        // CLI fault matrix's, where file modes bind).
        let missing = dir.path().join("no/such/labels.jsonl");
        let err = check_appendable(&missing).unwrap_err().to_string();
        assert!(err.contains("no/such/labels.jsonl"), "{err}");
    }

    #[test]
    fn a_field_of_the_wrong_type_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("labels.jsonl");
        let line = serde_json::to_string(&label("a", true))
            .unwrap()
            .replace("\"correct\":true", "\"correct\":\"yes\"");
        std::fs::write(&path, line).unwrap();
        let err = read_labels(&path).unwrap_err().to_string();
        assert!(
            err.contains("labels.jsonl:1: not a label: field `correct`"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_label_file_is_no_labels_to_resume_but_an_error_to_judge() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nope.jsonl");
        assert!(read_labels(&path).unwrap().is_empty());
        let err = read_existing_labels(&path).unwrap_err().to_string();
        assert!(err.contains("nope.jsonl"), "{err}");
    }

    fn label(key: &str, correct: bool) -> Label {
        Label {
            reviewer: "ana".into(),
            time: "2026-12-07T22:00:00Z".into(),
            system: "s".into(),
            task_id: "T".into(),
            target: Target::Unit,
            key: key.into(),
            correct: Some(correct),
            family: None,
            points: None,
        }
    }

    #[test]
    fn appended_labels_read_back_and_the_latest_wins() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("labels.jsonl");
        append_label(&path, &label("a", true)).unwrap();
        append_label(&path, &label("b", true)).unwrap();
        append_label(&path, &label("a", false)).unwrap();
        let all = read_labels(&path).unwrap();
        assert_eq!(all.len(), 3);
        let latest = latest_labels(&all);
        assert_eq!(latest.len(), 2);
        let a = latest.values().find(|(_, l)| l.key == "a").unwrap();
        assert_eq!((a.0, a.1.correct), (3, Some(false)));
    }

    #[test]
    fn a_malformed_line_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("labels.jsonl");
        append_label(&path, &label("a", true)).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"{\"reviewer\": 3}\n")
            .unwrap();
        let err = read_labels(&path).unwrap_err().to_string();
        assert!(err.contains("labels.jsonl:2:"), "{err}");
    }

    #[test]
    fn concurrent_writers_lose_no_line() {
        // Two tabs (or two servers) clicking at once: every label lands
        // whole on its own line.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("labels.jsonl");
        std::thread::scope(|s| {
            for t in 0..6 {
                let path = &path;
                s.spawn(move || {
                    for i in 0..40 {
                        append_label(path, &label(&format!("t{t}-u{i}"), i % 2 == 0)).unwrap();
                    }
                });
            }
        });
        let all = read_labels(&path).unwrap();
        assert_eq!(all.len(), 240);
        assert_eq!(latest_labels(&all).len(), 240);
    }
}
