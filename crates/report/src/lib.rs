//! # earthverse-report
//!
//! One self-contained HTML file a researcher opens first: the leaderboard of
//! Table 2, the landscape plot of Fig. 1(b) (unit accuracy against tokens per
//! task), the capability heat map of Table 8, difficulty and hazard-family
//! slices, a forest plot of paired ΔCore with 95% bootstrap intervals
//! (App. C.5), the distribution of task Core per system (Fig. 8), the cost
//! table (Table 11) when costs are known, and a per-task drill-down with the
//! unit and rubric ledgers when the records carry them, and, when given
//! run-level failure families ([`families::FamilyFigures`]), Figs. 8–10. The study report
//! of `earthverse study report` (`earthverse-study`'s `StudyReport`) renders
//! as text tables and as its own page ([`render_study_text`],
//! [`render_study_html`]).
//!
//! Plots are SVG drawn by `plotters` and inlined; the page loads nothing
//! from anywhere and runs no script. The crate does no IO: it returns the
//! page as a string.
//!
//! ```
//! use earthverse_report::{render_html, ReportInput};
//! use earthverse_stats_bootstrap::TaskOutcome;
//!
//! let mut input = ReportInput::new("Demo");
//! for (system, u) in [("alpha", 90.0), ("beta", 60.0)] {
//!     for task in ["T1", "T2"] {
//!         let mut o = TaskOutcome::from_judgment(system, task, 100.0, u, u).unwrap();
//!         o.trajectory.total_tokens = Some(120_000);
//!         input.outcomes.push(o);
//!     }
//! }
//! let html = render_html(&input).unwrap();
//! assert!(html.starts_with("<!DOCTYPE html>"));
//! assert!(html.contains("id=\"landscape\"") && html.contains("<circle"));
//! ```
#![deny(missing_docs)]

/// `?` for a plotters result inside a plot function: the error becomes
/// [`Error::Plot`] naming the plot.
macro_rules! tri {
    ($plot:expr, $e:expr) => {
        $e.map_err(|e| $crate::Error::Plot {
            plot: $plot,
            message: e.to_string(),
        })?
    };
}

mod error;
pub mod families;
mod html;
pub mod plots;
mod study;
pub mod text;

pub use error::{Error, Result};
pub use html::{escape, render_html, CriterionRow, ReportInput, TaskDetail, UnitRow};
pub use study::{render_study_html, render_study_text};
