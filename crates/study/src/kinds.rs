//! The kinds a condition record names (`oracle = "plan"`, `perturbation =
//! "missing"`): a leaf module that manifests and the study directory both
//! read.

use earthverse_interventions::{OracleKind, PerturbationKind};
use earthverse_package_model::RunCondition;
use serde_json::Value;

/// The kind a manifest condition names for `key` (`oracle = "plan"`,
/// `perturbation = "missing"`).
fn kind_of<K: std::str::FromStr<Err = String>>(
    key: &str,
    value: &Option<Value>,
) -> std::result::Result<Option<K>, String> {
    match value {
        None => Ok(None),
        Some(Value::String(kind)) => kind.parse().map(Some),
        Some(other) => Err(format!("{key} must be a kind name, not {other}")),
    }
}

/// The oracle kind a manifest condition names (`oracle = "plan"`).
///
/// # Errors
/// The reason, when the value is not an oracle kind.
pub fn oracle_of(condition: &RunCondition) -> std::result::Result<Option<OracleKind>, String> {
    kind_of("oracle", &condition.oracle)
}

/// The perturbation a manifest condition names (`perturbation = "missing"`).
///
/// # Errors
/// The reason, when the value is not a perturbation kind.
pub fn perturbation_of(
    condition: &RunCondition,
) -> std::result::Result<Option<PerturbationKind>, String> {
    kind_of("perturbation", &condition.perturbation)
}
