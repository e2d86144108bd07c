//! The published judge's typed critical errors, and the same kinds read
//! from our run-level families, so the two can be compared run by run.
//!
//! The judge writes each critical error as `prefix: text` (App. E JUDGE
//! record). Its prefixes are not a closed list: beside the typed ones
//! (`numeric_value:`, `critical_label:`, `missing_field:`, `schema:`,
//! `unit:`, `reasoning:`) it writes field names (`event_window:`), prose
//! (`final classification error:`) or no prefix at all. Only these
//! prefixes are read as a kind (case-insensitive, the text before the
//! first `:` trimmed); every other error is untyped and counts for no kind:
//! - numeric: `numeric_value`, `numerical_value`
//! - label: `critical_label`, `label`, `wrong_label`, `final_label`
//! - missing: `missing_field`
//! - schema: `schema`, `json_contract`
//! - unit: `unit`
//! - reasoning: `reasoning`

use crate::run_family::{RunDiagnosis, RunFamily};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// A kind of error both the published judge and our diagnosis can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// A wrong label, decision or class.
    Label,
    /// A wrong number.
    Numeric,
    /// A required field missing.
    Missing,
    /// A unit or scale error.
    Unit,
    /// The answer breaks its contract.
    Schema,
    /// Faulty reasoning (no family of ours names it).
    Reasoning,
}

impl ErrorKind {
    /// Every kind, in display order.
    pub const ALL: [ErrorKind; 6] = [
        ErrorKind::Label,
        ErrorKind::Numeric,
        ErrorKind::Missing,
        ErrorKind::Unit,
        ErrorKind::Schema,
        ErrorKind::Reasoning,
    ];

    /// The snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Label => "label",
            ErrorKind::Numeric => "numeric",
            ErrorKind::Missing => "missing",
            ErrorKind::Unit => "unit",
            ErrorKind::Schema => "schema",
            ErrorKind::Reasoning => "reasoning",
        }
    }

    /// The run family that names this kind (`None` for reasoning).
    pub fn family(self) -> Option<RunFamily> {
        match self {
            ErrorKind::Label => Some(RunFamily::LabelError),
            ErrorKind::Numeric => Some(RunFamily::NumericError),
            ErrorKind::Missing => Some(RunFamily::MissingOutput),
            ErrorKind::Unit => Some(RunFamily::UnitError),
            ErrorKind::Schema => Some(RunFamily::SchemaError),
            ErrorKind::Reasoning => None,
        }
    }
}

/// The kind of one critical error by its prefix (module docs), if typed.
pub fn judge_kind(error: &str) -> Option<ErrorKind> {
    let (prefix, _) = error.split_once(':')?;
    Some(match prefix.trim().to_ascii_lowercase().as_str() {
        "numeric_value" | "numerical_value" => ErrorKind::Numeric,
        "critical_label" | "label" | "wrong_label" | "final_label" => ErrorKind::Label,
        "missing_field" => ErrorKind::Missing,
        "schema" | "json_contract" => ErrorKind::Schema,
        "unit" => ErrorKind::Unit,
        "reasoning" => ErrorKind::Reasoning,
        _ => return None,
    })
}

/// The kinds the published judge names for a run.
pub fn judge_kinds<S: AsRef<str>>(critical_errors: &[S]) -> BTreeSet<ErrorKind> {
    critical_errors
        .iter()
        .filter_map(|e| judge_kind(e.as_ref()))
        .collect()
}

/// The kinds our diagnosis names for a run.
pub fn diagnosed_kinds(diagnosis: &RunDiagnosis) -> BTreeSet<ErrorKind> {
    ErrorKind::ALL
        .into_iter()
        .filter(|k| k.family().is_some_and(|f| diagnosis.has(f)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_read_strictly() {
        assert_eq!(judge_kind("numeric_value: x off"), Some(ErrorKind::Numeric));
        assert_eq!(judge_kind("critical_label:wrong"), Some(ErrorKind::Label));
        assert_eq!(judge_kind("Schema : list"), Some(ErrorKind::Schema));
        assert_eq!(judge_kind("event_window: dates wrong"), None);
        assert_eq!(judge_kind("incorrect value (12 vs 14)"), None);
    }
}
