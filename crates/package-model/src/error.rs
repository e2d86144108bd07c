//! The crate's error type.

use std::path::PathBuf;

/// Errors of `earthverse-package-model`, each naming the file (and, where it
/// applies, the field) it is about.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum PackageError {
    /// Reading or writing a file or directory failed.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A JSON file is not valid JSON or does not fit the expected record.
    #[error("{path}: field `{field}`: {message}")]
    Json {
        /// The file.
        path: PathBuf,
        /// The JSON path of the offending field (`.` when the document itself is bad).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// A directory that the layout requires is missing.
    #[error("{path}: not a release root: {message}")]
    Layout {
        /// The directory that was expected.
        path: PathBuf,
        /// What is missing.
        message: String,
    },
    /// An event id is unknown to the release.
    #[error("unknown event `{event_id}`")]
    UnknownEvent {
        /// The event id asked for.
        event_id: String,
    },
    /// Task files of a release did not load, and the caller needs every
    /// task ([`crate::Release::require_all_tasks`]).
    #[error("{}", unloadable_message(.errors))]
    UnloadableTasks {
        /// Each file, its field and what is wrong, in path order.
        errors: Vec<LoadError>,
    },
    /// Writing a CSV file failed.
    #[error("{path}: {message}")]
    Csv {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

impl PackageError {
    /// Builds an [`PackageError::Io`] for `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        PackageError::Io {
            path: path.into(),
            source,
        }
    }
}

fn unloadable_message(errors: &[LoadError]) -> String {
    let mut text = format!("{} task file(s) did not load:", errors.len());
    for e in errors {
        text.push_str(&format!("\n  {e}"));
    }
    text
}

/// The crate's result type.
pub type Result<T, E = PackageError> = std::result::Result<T, E>;

/// A file that could not be loaded, with the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LoadError {
    /// The file.
    pub path: PathBuf,
    /// JSON path of the offending field (`.` for the whole document).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for LoadError {
    /// `PATH: field `F`: MESSAGE`, or `PATH: MESSAGE` when the whole
    /// document is at fault (a file that cannot be read, cut JSON).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.field == "." {
            return write!(f, "{}: {}", self.path.display(), self.message);
        }
        write!(
            f,
            "{}: field `{}`: {}",
            self.path.display(),
            self.field,
            self.message
        )
    }
}

impl From<LoadError> for PackageError {
    fn from(e: LoadError) -> Self {
        PackageError::Json {
            path: e.path,
            field: e.field,
            message: e.message,
        }
    }
}

#[cfg(test)]
mod load_error_tests {
    use super::LoadError;

    #[test]
    fn a_whole_document_error_names_no_field() {
        let e = |field: &str| LoadError {
            path: "tasks/T.json".into(),
            field: field.into(),
            message: "Permission denied (os error 13)".into(),
        };
        assert_eq!(
            e(".").to_string(),
            "tasks/T.json: Permission denied (os error 13)"
        );
        assert_eq!(
            e("question").to_string(),
            "tasks/T.json: field `question`: Permission denied (os error 13)"
        );
    }
}
