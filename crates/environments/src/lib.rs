//! # earthverse-environments
//!
//! The paper's professional scientific environments (App. A.4, D.6; Table 7
//! and Table 14): seven Python libraries (MetPy, xclim, thermofeel, PyET,
//! climate-indices, xskillscore, pyextremes) and six compiled or
//! domain-language runtimes (Julia, R climate, CDO, NCO, NCL, Fortran).
//!
//! Each environment has a name (the paper's), a detection step (the
//! library importable in the scientific interpreter at the version pinned in
//! `crates/sandbox/python-requirements.txt`; the runtime's binaries on
//! `PATH`) and a refusal that names what is missing and how to install it
//! ([`EnvironmentError::Missing`]). Each audited operation of Table 14 is a
//! [`Tool`](earthverse_tool_registry::Tool) ([`EnvironmentTool`]) with a
//! JSON Schema: it reads package-relative inputs (file and field), writes
//! them to a per-call directory in the run's scratch (a JSON request for
//! the Python adapter; CSV, plain values, or CDL that `ncgen` turns into
//! NetCDF inside the sandbox for the runtimes), runs the real library or
//! runtime inside the OS sandbox of `python_exec` (package read-only, no
//! network, the same time and memory limits) and returns an [`Outcome`]:
//! success, or a [`FailureClass`] (adapter, argument, input
//! incompatibility, runtime). Nothing falls back to Rust code: a missing
//! environment is refused.
//!
//! ```
//! use earthverse_environments::{environment, ENVIRONMENTS};
//! assert_eq!(ENVIRONMENTS.len(), 13);
//! let xclim = environment("xclim").expect("Table 7 names it");
//! assert!(xclim.operations.iter().any(|o| o.name == "xclim_spells"));
//! ```
#![deny(missing_docs)]

mod call;
pub mod catalog;
pub mod coverage;
pub mod detect;
mod error;
pub mod outcome;
pub mod runner;
pub mod runtime;
pub mod tool;

pub use catalog::{environment, operation, EnvKind, Environment, OperationSpec, ENVIRONMENTS};
pub use detect::{detect, pinned_version, Detected, DetectionContext};
pub use error::{EnvironmentError, Result};
pub use outcome::{Failure, FailureClass, Outcome};
pub use tool::{EnvironmentSettings, EnvironmentTool};

use std::sync::Arc;

/// The tools of the environment named `name` (slug or paper name), after
/// detecting it: an unknown name or a missing environment is an error
/// naming what is missing and how to install it.
pub async fn tools(
    name: &str,
    settings: Arc<EnvironmentSettings>,
) -> Result<Vec<Arc<dyn earthverse_tool_registry::Tool>>> {
    Ok(load(name, settings).await?.1)
}

/// [`tools`], with what detection found (the versions a run records).
pub async fn load(
    name: &str,
    settings: Arc<EnvironmentSettings>,
) -> Result<(Detected, Vec<Arc<dyn earthverse_tool_registry::Tool>>)> {
    let env = environment(name).ok_or_else(|| EnvironmentError::Unknown {
        name: name.to_string(),
        known: ENVIRONMENTS
            .iter()
            .map(|e| e.slug)
            .collect::<Vec<_>>()
            .join(", "),
    })?;
    let detected = detect(env, &settings.detection()).await?;
    let tools = env
        .operations
        .iter()
        .map(|op| {
            Arc::new(EnvironmentTool::new(env, op, settings.clone()))
                as Arc<dyn earthverse_tool_registry::Tool>
        })
        .collect();
    Ok((detected, tools))
}
