//! The review sheet of one run: what the expert sees.

use crate::sample::Stratum;
use earthverse_evidence_ledger::{Claim, RunDiagnosis};
use earthverse_rubric_judge::{CriterionEntry, RunContext, TaskContext};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One answer unit to judge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewUnit {
    /// Path of the unit.
    pub path: String,
    /// Expected value.
    pub expected: Value,
    /// The answer's value (`None`: missing).
    pub value: Option<Value>,
    /// The ledger's provenance status.
    pub status: String,
    /// Source step, tool and file of the value.
    pub source_step: Option<u64>,
    /// Source tool.
    pub source_tool: Option<String>,
    /// Source file.
    pub source_file: Option<String>,
    /// The observation text around the value.
    pub excerpt: String,
    /// Our deterministic judge (judge-like reading) counts it right.
    pub deterministic_correct: bool,
    /// The ledger's error family of a wrong unit.
    pub ledger_family: Option<String>,
}

/// One rubric criterion to score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewCriterion {
    /// Name, as in the rubric.
    pub name: String,
    /// Points possible.
    pub points_possible: f64,
    /// Full-credit requirement.
    pub description: String,
    /// Points our deterministic judge gives.
    pub deterministic_points: f64,
}

/// One tool step, so a unit's source can be opened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewStep {
    /// Step number.
    pub step: u64,
    /// Tool.
    pub tool: String,
    /// Files it read.
    pub files: Vec<String>,
    /// Its observation (at most 6,000 characters).
    pub text: String,
}

/// Everything the expert sees of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewRun {
    /// System id.
    pub system: String,
    /// Task id.
    pub task_id: String,
    /// Its stratum.
    pub stratum: Stratum,
    /// The question.
    pub question: String,
    /// The final answer as submitted.
    pub final_answer: Value,
    /// Counted units of the judge-like reading.
    pub units: Vec<ReviewUnit>,
    /// Rubric criteria.
    pub criteria: Vec<ReviewCriterion>,
    /// Tool steps.
    pub steps: Vec<ReviewStep>,
    /// The published judge's critical errors.
    pub judge_critical_errors: Vec<String>,
    /// Our run-level families.
    pub our_families: Vec<String>,
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(n).collect();
        out.push_str("\n…[clipped]");
        out
    }
}

/// Builds the sheet of one run from its claims (judge-like reading), the
/// deterministic judge's rubric ledger, and its run-level diagnosis.
pub fn review_run(
    task: &TaskContext,
    run: &RunContext,
    stratum: Stratum,
    claims: &[Claim],
    rubric: &[CriterionEntry],
    diagnosis: &RunDiagnosis,
) -> ReviewRun {
    let units = claims
        .iter()
        .filter(|c| c.counted)
        .map(|c| ReviewUnit {
            path: c.unit.clone(),
            expected: c.expected.clone(),
            value: c.value.clone(),
            status: c.status.as_str().to_owned(),
            source_step: c.source.as_ref().map(|s| s.step),
            source_tool: c.source.as_ref().map(|s| s.tool.clone()),
            source_file: c.source.as_ref().and_then(|s| s.file.clone()),
            excerpt: c
                .source
                .as_ref()
                .map(|s| s.excerpt.clone())
                .unwrap_or_default(),
            deterministic_correct: c.satisfied,
            ledger_family: c.error_family.map(|f| f.as_str().to_owned()),
        })
        .collect();
    let criteria = task
        .rubric
        .criteria
        .iter()
        .map(|c| ReviewCriterion {
            name: c.name.clone(),
            points_possible: c.points,
            description: c.description.clone(),
            deterministic_points: rubric
                .iter()
                .find(|e| e.name == c.name)
                .map_or(0.0, |e| e.points_earned),
        })
        .collect();
    let observations = earthverse_rubric_judge::evidence::observations(&run.tool_trace);
    let steps = observations
        .into_iter()
        .map(|o| ReviewStep {
            step: o.step,
            tool: o.tool,
            files: o.files,
            text: clip(&o.text, 6_000),
        })
        .collect();
    ReviewRun {
        system: run.system.clone(),
        task_id: run.task_id.clone(),
        stratum,
        question: task.question.clone(),
        final_answer: run.final_answer.clone(),
        units,
        criteria,
        steps,
        judge_critical_errors: run.published_critical_errors.clone(),
        our_families: diagnosis
            .families
            .iter()
            .map(|h| h.family.as_str().to_owned())
            .collect(),
    }
}
