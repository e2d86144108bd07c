//! Controlled interventions of the EarthVerse studies (paper App. A.3,
//! Table 4): the four answer-free **oracles** of App. A.3.1, the **leak
//! guard** that proves none of them reveals a target value, and the
//! evidence **perturbations** of App. A.3.3 ([`perturb`]).
//!
//! Each oracle removes one information bottleneck and is derived only from
//! the task's hidden data (the expert solution, `compute_gt.py`, the
//! ground truth's `key_values`, the package inventory), never stating a
//! target:
//!
//! - [`OracleKind::RelevantFiles`]: the package-relative files the
//!   reference analysis uses (the inventory paths the solution or the
//!   program names);
//! - [`OracleKind::EvidenceMap`]: those files with their source roles, and
//!   the intermediate quantities to derive (names and units, not values);
//! - [`OracleKind::ToolSubset`]: the useful tool classes, and the domain
//!   operations a router picks for the reference analysis;
//! - [`OracleKind::Plan`]: a short answer-free plan.
//!
//! [`guard`] checks an oracle text against the task's ground truth: no
//! number of `primary_gt` or `key_values` in any formatting within its
//! tolerance, and no label or long-text answer, may appear in it unless the
//! public question already states it. [`oracle`] drops any item that would
//! leak (an inventory path that is itself an answer value, say) and names
//! what it dropped; the text it returns has passed the guard.
#![deny(missing_docs)]

pub mod check;
mod guard;
mod oracle;
pub mod perturb;
pub mod reads;

pub use check::{check_perturbed, CheckError, KindCheck, TaskCheck};
pub use guard::{
    ground_truth_values, guard, localisation_leaks, localising_terms, Leak, Localisation,
};
pub use oracle::{oracle, oracle_with_reads, Oracle, OracleError, OracleKind};
pub use perturb::{
    adapted_compute_gt, perturb_release, perturb_release_with, PerturbError, PerturbationKind,
    Target, TaskPerturbation, UnitChange,
};
pub use reads::{ReadsError, ReadsMethod, ReferenceReads, TaskReads};
