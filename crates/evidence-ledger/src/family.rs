//! Error families of unsatisfied units.

use crate::model::{Claim, ClaimStatus, ErrorFamily};
use crate::values::{
    conversion_fits, half_unit, is_small_integer, same_file, value_of, ClaimValue, Conversion,
    CONVERSIONS,
};
use earthverse_answer_units::matching::number_matches;
use earthverse_answer_units::{UnitKind, UnitLedgerEntry};

/// The error family of a counted, unsatisfied unit (`None` otherwise).
/// The first rule that applies decides (the order is documented in the
/// crate docs).
pub(crate) fn diagnose(
    unit: &UnitLedgerEntry,
    value: &ClaimValue,
    claim: &Claim,
    reference_files: &[String],
) -> Option<ErrorFamily> {
    if unit.matched || !unit.counted {
        return None;
    }
    let expected_number = unit.expected.as_f64().filter(|v| v.is_finite());
    Some(match value {
        ClaimValue::Missing => ErrorFamily::Missing,
        _ if expected_number.is_none() => non_numeric(unit),
        ClaimValue::Number(x, decimals) => {
            let v = expected_number.unwrap_or_default();
            numeric(
                v,
                *x,
                *decimals,
                unit.key.as_deref(),
                claim,
                reference_files,
            )
        }
        // A number was expected and the answer holds none.
        ClaimValue::Label(_) | ClaimValue::Judgement => ErrorFamily::Missing,
        ClaimValue::Date(_) | ClaimValue::Path(_) => ErrorFamily::Other,
    })
}

fn non_numeric(unit: &UnitLedgerEntry) -> ErrorFamily {
    let expected_date = matches!(value_of(&unit.expected), ClaimValue::Date(_));
    if unit.kind == UnitKind::Path || matches!(value_of(&unit.expected), ClaimValue::Path(_)) {
        ErrorFamily::WrongSource
    } else if unit.kind == UnitKind::Date || expected_date {
        ErrorFamily::WindowOrSubset
    } else {
        ErrorFamily::LabelMismatch
    }
}

fn numeric(
    v: f64,
    x: f64,
    decimals: u32,
    key: Option<&str>,
    claim: &Claim,
    reference_files: &[String],
) -> ErrorFamily {
    // A conversion of the answer's value gives the expected one.
    // Never for counts (whole numbers below 100): a factor near a small
    // ratio would explain any wrong count.
    if x != 0.0
        && v != 0.0
        && !is_small_integer(v)
        && CONVERSIONS
            .iter()
            .chain(SCALES)
            .filter(|(_, _, words)| conversion_fits(words, key))
            .any(|(_, convert, _)| number_matches(v, convert(x), 0.0))
    {
        return ErrorFamily::UnitOrScale;
    }
    // The expected value rounded to the answer's decimals, or the answer
    // off by one unit of its last (fractional) decimal.
    let eps = 1e-9 * v.abs().max(1.0);
    let rounded = (x - v).abs() <= half_unit(decimals) + eps;
    let last_digit = decimals > 0 && (x - v).abs() <= 2.0 * half_unit(decimals) + eps;
    if rounded || last_digit {
        return ErrorFamily::RoundingOrPrecision;
    }
    let is_reference = |f: &str| reference_files.iter().any(|r| same_file(r, f));
    match claim.status {
        ClaimStatus::Unsupported => ErrorFamily::Unsupported,
        ClaimStatus::Computed => {
            let inputs = claim
                .source
                .as_ref()
                .map(|s| s.files.as_slice())
                .unwrap_or_default();
            if !reference_files.is_empty()
                && !inputs.is_empty()
                && !inputs.iter().any(|f| is_reference(f))
            {
                ErrorFamily::WrongSource
            } else {
                ErrorFamily::Arithmetic
            }
        }
        ClaimStatus::Observed | ClaimStatus::Transformed => {
            match claim.source.as_ref().and_then(|s| s.file.as_deref()) {
                Some(file) if !reference_files.is_empty() && !is_reference(file) => {
                    ErrorFamily::WrongSource
                }
                Some(_) if !reference_files.is_empty() => ErrorFamily::WindowOrSubset,
                _ => ErrorFamily::Other,
            }
        }
        ClaimStatus::Given | ClaimStatus::Judgement | ClaimStatus::Missing => ErrorFamily::Other,
    }
}

/// Decimal scale slips and written multipliers (`1.23 million`), only for
/// diagnosis (too loose for tracing).
const SCALES: &[Conversion] = &[
    ("×10", |y| y * 10.0, &[]),
    ("÷10", |y| y / 10.0, &[]),
    ("×10⁶", |y| y * 1e6, &[]),
    ("÷10⁶", |y| y / 1e6, &[]),
];
