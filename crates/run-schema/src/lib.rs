//! # earthverse-run-schema
//!
//! The vocabulary of a run record (`trajectory.json`, in the schema of the
//! public recorded runs `exploration/trajectories/<system>/<task>.json`)
//! that the run writer (`earthverse-agent-controller`), the readers
//! (`earthverse-package-model`, the judges) and the statistics
//! (`earthverse-stats-bootstrap`) share, one type per concept:
//!
//! - [`RunStatus`] and [`TerminationReason`]: whether a run finished
//!   (§4.1: a failed run scores zero and stays in the denominator) and why
//!   it ended (App. C.2 budgets);
//! - [`RunDiagnostics`]: the `diagnostics` object, written by our runner
//!   and read from any recorded run, serialised field for field as the
//!   public records and our `trajectory.json` hold it;
//! - [`TrajectoryFigures`]: the trajectory figures reported beside the
//!   scores (Table 2's right half, App. D.3), never entering them (§4.1).
//!
//! Pure data: serde only, no IO.
//!
//! ```
//! use earthverse_run_schema::{RunDiagnostics, RunStatus, TerminationReason};
//! let d: RunDiagnostics = serde_json::from_str(
//!     r#"{"run_status": "ok", "termination_reason": null, "tool_calls": 3, "total_tokens": "1200"}"#,
//! ).unwrap();
//! assert_eq!(d.run_status, Some(RunStatus::Ok));
//! assert_eq!(d.termination(), None);
//! assert_eq!(d.total_tokens(), Some(1200));
//! assert_eq!(d.figures().tool_calls, Some(3));
//! // Read and written back unchanged, the string token count included.
//! assert_eq!(
//!     serde_json::to_string(&d).unwrap(),
//!     r#"{"run_status":"ok","termination_reason":null,"tool_calls":3,"total_tokens":"1200"}"#
//! );
//! assert!(TerminationReason::from_name("round_limit").is_budget());
//! ```
#![deny(missing_docs)]

mod diagnostics;
mod figures;
mod status;

pub use diagnostics::{RunDiagnostics, TokenCount};
pub use figures::TrajectoryFigures;
pub use status::{RunStatus, TerminationReason};
