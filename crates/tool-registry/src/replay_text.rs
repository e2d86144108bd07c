//! The text summaries of the replay reports (`earthverse tools replay`):
//! totals, the comparable share, per-tool counts, differences by category,
//! skips by reason, and each difference.

use crate::python_replay::PythonReplayReport;
use crate::replay::ReplayReport;
use std::fmt;

impl fmt::Display for ReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let report = self;
        writeln!(
            f,
            "runs {}  calls {}  compared {}  identical {} ({:.2}%)  differing {}  skipped {}",
            report.runs,
            report.calls,
            report.compared,
            report.identical,
            100.0 * report.identical_fraction(),
            report.differing.len(),
            report.skipped.len()
        )?;
        let comparable = report.comparable();
        writeln!(
            f,
            "comparable (inputs unchanged in the public release) {comparable}: identical {} ({:.2}%)",
            report.identical,
            100.0 * report.identical as f64 / comparable.max(1) as f64
        )?;
        writeln!(f, "\nper tool (calls / compared / identical):")?;
        for (tool, t) in &report.by_tool {
            writeln!(
                f,
                "  {tool:<28} {:>6} {:>6} {:>6}",
                t.calls, t.compared, t.identical
            )?;
        }
        writeln!(f, "\ndifferences by category:")?;
        for (c, n) in report.difference_categories() {
            writeln!(f, "  {c:<20} {n}")?;
        }
        writeln!(f, "\nskipped by reason:")?;
        for (r, n) in report.skip_reasons() {
            writeln!(f, "  {n:>6}  {r}")?;
        }
        writeln!(f, "\ndifferences:")?;
        for d in &report.differing {
            writeln!(
                f,
                "  [{}] {}/{} step {:?} {} {}: {}",
                d.category, d.system, d.task, d.step, d.tool, d.args, d.reason
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for PythonReplayReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let report = self;
        writeln!(
            f,
            "\npython_exec ({}): runs {}  calls {}  compared {}  identical {} ({:.2}% of compared)  skipped {}  in {:.1} s",
            report.interpreter,
            report.runs,
            report.calls,
            report.compared,
            report.identical,
            100.0 * report.identical_share_of_compared(),
            report.skipped.len(),
            report.seconds
        )?;
        writeln!(
            f,
            "comparable (inputs as recorded, not refused by the authors' harness) {}: identical {} ({:.2}%)",
            report.comparable,
            report.identical,
            100.0 * report.identical_share_of_comparable()
        )?;
        for (how, n) in &report.identical_normalised {
            writeln!(f, "  identical after normalising {how}: {n}")?;
        }
        writeln!(f, "\npython_exec differences by category:")?;
        for (c, n) in &report.categories {
            writeln!(f, "  {c:<28} {n}")?;
        }
        writeln!(f, "\npython_exec not re-executed, by reason:")?;
        for (r, n) in &report.skip_reasons {
            writeln!(f, "  {n:>6}  {r}")?;
        }
        writeln!(f, "\npython_exec differences:")?;
        for d in &report.differing {
            writeln!(
                f,
                "  [{}] {}/{} step {:?}: {}",
                d.category, d.system, d.task, d.step, d.reason
            )?;
        }
        Ok(())
    }
}
