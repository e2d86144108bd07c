//! The ledger's input and output types.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a trajectory step did with the package, as far as provenance goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObservationKind {
    /// The task prompt (step 0): values found only here are `given`.
    Prompt,
    /// A file's content shown to the agent (`read_text_file`,
    /// `summarize_table_or_json`, `inspect_image`).
    Read,
    /// A search or listing: snippets and paths, no single file.
    Search,
    /// Output of code (`python_exec`) or of a domain operation over files.
    Computed,
}

/// One observation of a trajectory: what the agent saw after a tool call.
///
/// Narrow on purpose: any trajectory format can be turned into a list of
/// these (the `earthverse` CLI converts the release's recorded runs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Step of the call (1-based; the prompt is step 0).
    pub step: u64,
    /// Tool name as recorded.
    pub tool: String,
    /// What kind of observation it is.
    pub kind: ObservationKind,
    /// Package files the step read: the file shown (reads) or the files
    /// the code or operation opened (computations). Package-relative or
    /// longer paths ending in the package-relative one.
    pub files: Vec<String>,
    /// The observation text (the tool output as the agent saw it).
    pub text: String,
}

/// Provenance status of one claim (an answer unit's value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStatus {
    /// The value appears verbatim (at its written precision, or within the
    /// unit's tolerance) in a read or search observation.
    Observed,
    /// The value was first printed by code or a domain operation.
    Computed,
    /// The value is a unit or scale change of an observed value.
    Transformed,
    /// The value appears first in the task prompt itself.
    Given,
    /// A conclusion rather than a datum: a boolean, `null` or long text;
    /// not traced.
    Judgement,
    /// The value appears nowhere before the answer.
    Unsupported,
    /// The answer gives no value for the unit.
    Missing,
}

impl ClaimStatus {
    /// Every status, in display order.
    pub const ALL: [ClaimStatus; 7] = [
        ClaimStatus::Observed,
        ClaimStatus::Computed,
        ClaimStatus::Transformed,
        ClaimStatus::Given,
        ClaimStatus::Judgement,
        ClaimStatus::Unsupported,
        ClaimStatus::Missing,
    ];

    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimStatus::Observed => "observed",
            ClaimStatus::Computed => "computed",
            ClaimStatus::Transformed => "transformed",
            ClaimStatus::Given => "given",
            ClaimStatus::Judgement => "judgement",
            ClaimStatus::Unsupported => "unsupported",
            ClaimStatus::Missing => "missing",
        }
    }

    /// Observed, computed or transformed: traced to the investigation.
    pub fn is_traced(self) -> bool {
        matches!(
            self,
            ClaimStatus::Observed | ClaimStatus::Computed | ClaimStatus::Transformed
        )
    }
}

/// How much a trace is worth (see the crate docs, "small integers").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strength {
    /// Found with its key's words before it, or a value too specific to
    /// turn up by chance.
    Strong,
    /// A whole number below 100 found only without its key nearby.
    Weak,
}

/// Why an unsatisfied unit is wrong (the paper's error families, Figs. 8–10).
/// The first rule that applies decides; see the crate docs for the order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorFamily {
    /// No value given.
    Missing,
    /// The value is not traceable to anything the agent saw.
    Unsupported,
    /// Traced to a file other than the reference analysis' files (or a
    /// wrong file path given).
    WrongSource,
    /// Matches the expected value after a unit or scale conversion.
    UnitOrScale,
    /// Matches the expected value rounded to the answer's precision, or
    /// within 5 %.
    RoundingOrPrecision,
    /// A value of the right file at another time or place (or a wrong date).
    WindowOrSubset,
    /// Computed from the right (or inline) inputs, result wrong.
    Arithmetic,
    /// A wrong label, decision or text.
    LabelMismatch,
    /// None of the above.
    Other,
}

impl ErrorFamily {
    /// Every family, in display order.
    pub const ALL: [ErrorFamily; 9] = [
        ErrorFamily::Missing,
        ErrorFamily::Unsupported,
        ErrorFamily::WrongSource,
        ErrorFamily::UnitOrScale,
        ErrorFamily::RoundingOrPrecision,
        ErrorFamily::WindowOrSubset,
        ErrorFamily::Arithmetic,
        ErrorFamily::LabelMismatch,
        ErrorFamily::Other,
    ];

    /// The snake_case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorFamily::Missing => "missing",
            ErrorFamily::Unsupported => "unsupported",
            ErrorFamily::WrongSource => "wrong_source",
            ErrorFamily::UnitOrScale => "unit_or_scale",
            ErrorFamily::RoundingOrPrecision => "rounding_or_precision",
            ErrorFamily::WindowOrSubset => "window_or_subset",
            ErrorFamily::Arithmetic => "arithmetic",
            ErrorFamily::LabelMismatch => "label_mismatch",
            ErrorFamily::Other => "other",
        }
    }
}

/// Where a claim's value entered the investigation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// Step of the observation.
    pub step: u64,
    /// Its tool.
    pub tool: String,
    /// The file the value was read from (reads), or the first file the
    /// code read (computations); `None` for searches and the prompt.
    pub file: Option<String>,
    /// Every file the observation's step read (the code's inputs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Byte range of the value in the observation text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<[usize; 2]>,
    /// The observation text around the value (at most ~120 characters).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub excerpt: String,
    /// The conversion applied, for `transformed` claims (`°F→°C`, `×100`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transform: Option<String>,
}

/// A value the same key had earlier in the run, superseded by the active
/// one (the claim's value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replaced {
    /// Step where the earlier value was seen.
    pub step: u64,
    /// The earlier value.
    pub value: f64,
}

/// One answer unit of a run, with its value's provenance and, when it is
/// not satisfied, its error family.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// Path of the unit in its reference (`event_window.start_date`).
    pub unit: String,
    /// The value the answer gives (the expected value when a prose
    /// answer matched without an aligned value); `None` when missing.
    pub value: Option<Value>,
    /// The expected value.
    pub expected: Value,
    /// Provenance status.
    pub status: ClaimStatus,
    /// The unit is satisfied (matched).
    pub satisfied: bool,
    /// The unit counts in the judge-like U.
    pub counted: bool,
    /// Strength of the trace (traced claims only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strength: Option<Strength>,
    /// Where the value entered the investigation.
    pub source: Option<Source>,
    /// Why the unit is wrong (counted, unsatisfied units only).
    pub error_family: Option<ErrorFamily>,
    /// Earlier values of the same key, superseded by this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaced: Vec<Replaced>,
}

/// The ledger of one run.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct RunLedger {
    /// One claim per unit of the unit ledger given, in its order.
    pub claims: Vec<Claim>,
    /// Files the final answer cites that no step read.
    pub cited_unread: Vec<String>,
    /// Files some step read, in first-read order.
    pub files_read: Vec<String>,
}
