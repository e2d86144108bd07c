//! The adapter from recorded runs to the claim–evidence ledger
//! (`earthverse-evidence-ledger`): a run's tool steps as observations, the
//! files its answer cites, and a task's reference analysis files. A
//! package-model `RecordedRun` (the release's recorded runs and our own
//! `trajectory.json`) is read as a [`RunContext`]
//! ([`RunContext::from_recorded_run`]) and its `tool_trace` converted here.

use crate::input::{RunContext, TaskContext, ToolStep};
use earthverse_answer_units::UnitLedgerEntry;
use earthverse_evidence_ledger::{
    reference_files, Claim, Observation, ObservationKind, TraceIndex,
};
use earthverse_package_model::Task;
use regex::Regex;
use serde_json::Value;
use std::sync::OnceLock;

/// The files of a task's reference analysis: inventory paths named by the
/// expert solution or `compute_gt.py`.
pub fn task_reference_files(task: &Task) -> Vec<String> {
    reference_files(&task.reference_texts(), &task.inventory_paths())
}

/// The claims `earthverse score` writes into a record: the ledger of the
/// given unit ledger (the reading the record's U used).
pub fn record_claims(
    task: &TaskContext,
    references: &[String],
    run: &RunContext,
    units: &[UnitLedgerEntry],
) -> Vec<Claim> {
    let observations = observations(&run.tool_trace);
    TraceIndex::new(&task.question, &observations, references).claims(units)
}

/// The files the final submission cites (`evidence[].source_file`).
pub fn cited_files(evidence: &[Value]) -> Vec<String> {
    evidence
        .iter()
        .filter_map(|e| e.get("source_file").and_then(Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// Tools whose output shows one file's content.
const READ_TOOLS: &[&str] = &[
    "read_text_file",
    "read_textfile",
    "read_selected_files",
    "summarize_table_or_json",
    "inspect_image",
    "summary_images",
    "browser.open",
];
/// Tools whose output lists paths or snippets of many files.
const SEARCH_TOOLS: &[&str] = &[
    "list_package_files",
    "search_package_files",
    "search_packagefiles",
    "browser.search",
    "browser.list",
];

/// The observations of a trajectory. A read tool's files are its `path`
/// (or `paths`) arguments; `python_exec`'s are the package paths its code
/// names; a domain operation's, every path-like string of its arguments;
/// any step's recorded `evidence_files` are added. Any tool not known as a
/// read or a search (`python_exec`, domain operations) is a computation.
pub fn observations(steps: &[ToolStep]) -> Vec<Observation> {
    steps
        .iter()
        .map(|s| {
            let tool = s.tool.trim().trim_end_matches([',', ' ']);
            let kind = if READ_TOOLS.contains(&tool) {
                ObservationKind::Read
            } else if SEARCH_TOOLS.contains(&tool) {
                ObservationKind::Search
            } else {
                ObservationKind::Computed
            };
            let mut files: Vec<String> = Vec::new();
            // Package files only: the runner's copies of the code
            // (`.../python_snippets/step_NN_*.py`) are not evidence.
            let mut push = |f: &str| {
                let f = f.trim();
                if !f.is_empty() && !f.contains("python_snippets/") && !files.iter().any(|g| g == f)
                {
                    files.push(f.to_owned());
                }
            };
            match kind {
                ObservationKind::Read => {
                    if let Some(p) = s.args.get("path").and_then(Value::as_str) {
                        push(p);
                    }
                    for p in s
                        .args
                        .get("paths")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                    {
                        if let Some(p) = p.as_str() {
                            push(p);
                        }
                    }
                }
                ObservationKind::Computed => {
                    let mut code = String::new();
                    for key in ["code", "code_preview"] {
                        if let Some(c) = s.args.get(key).and_then(Value::as_str) {
                            code.push_str(c);
                            code.push('\n');
                        }
                    }
                    code.push_str(&s.code);
                    for m in path_re().find_iter(&code) {
                        push(m.as_str());
                    }
                    if !s.tool.contains("python") {
                        path_strings(&s.args, &mut push);
                    }
                }
                ObservationKind::Search | ObservationKind::Prompt => {}
            }
            for f in &s.evidence_files {
                push(f);
            }
            let mut text = s.output.clone();
            if !s.stdout.is_empty() && !text.contains(s.stdout.as_str()) {
                text.push('\n');
                text.push_str(&s.stdout);
            }
            Observation {
                step: s.step,
                tool: s.tool.clone(),
                kind,
                files,
                text,
            }
        })
        .collect()
}

fn path_strings(value: &Value, push: &mut impl FnMut(&str)) {
    match value {
        Value::String(s) if path_re().is_match(s) && !s.contains(char::is_whitespace) => push(s),
        Value::Array(items) => items.iter().for_each(|v| path_strings(v, push)),
        Value::Object(map) => map.values().for_each(|v| path_strings(v, push)),
        _ => {}
    }
}

/// A package path inside code: `data/...` or `metadata/...` (with any
/// prefix) ending in a file extension.
fn path_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"[A-Za-z0-9_.\-/]*(?:data|metadata)/[A-Za-z0-9_.\-/]+\.[A-Za-z0-9]{1,8}")
            .unwrap_or_else(|_| unreachable!("constant regex"))
    })
}

/// What a judge needs to write the claim ledger of its records: the unit
/// reading (the deterministic judge's own; for an LLM judge, the
/// answer-units reading beside its verdicts) and each task's reference
/// analysis files (task id → files, e.g. [`task_reference_files`]).
#[derive(Debug, Clone)]
pub struct ClaimSource {
    /// Reading of U whose unit ledger is traced.
    pub reading: crate::units::UnitReading,
    /// Reference analysis files per task id.
    pub references: std::collections::BTreeMap<String, Vec<String>>,
}

impl ClaimSource {
    /// The claim ledger of `run`: its answer scored, its unit ledger traced
    /// through the run's observations. A failed run has none.
    pub fn claims(&self, task: &TaskContext, run: &RunContext) -> Vec<Claim> {
        if run.run_status == crate::record::RunStatus::Error {
            return Vec::new();
        }
        let score = earthverse_answer_units::score_task(
            &task.primary_gt,
            &run.final_answer,
            &crate::units::scoring_context(task),
        );
        self.claims_from_score(task, run, &score)
    }

    /// [`ClaimSource::claims`] from an answer already scored.
    pub fn claims_from_score(
        &self,
        task: &TaskContext,
        run: &RunContext,
        score: &earthverse_answer_units::TaskScore,
    ) -> Vec<Claim> {
        use crate::units::UnitReading;
        let mut units = match self.reading {
            UnitReading::Judge => score.judge_score().ledger.clone(),
            UnitReading::Required | UnitReading::All => score.units.ledger.clone(),
        };
        if self.reading == UnitReading::All {
            // Every leaf counts in this reading.
            units.iter_mut().for_each(|u| u.counted = true);
        }
        let refs = self
            .references
            .get(&task.task_id)
            .map(Vec::as_slice)
            .unwrap_or_default();
        record_claims(task, refs, run, &units)
    }
}

/// The ledger of one run, as printed by `--json`.
#[derive(Debug, serde::Serialize)]
pub struct RunEvidence {
    /// System id.
    pub system: String,
    /// Task id.
    pub task_id: String,
    /// The judge-like U of the run (the reading of `claims`).
    pub u_judge: f64,
    /// `solution` (the expert solution's Final Answer) or `primary_gt`.
    pub reading: &'static str,
    /// The final answer as submitted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub final_answer: Option<Value>,
    /// One claim per unit of the judge-like reading.
    pub claims: Vec<Claim>,
    /// The claims of the `primary_gt` reading, when the judge-like reading
    /// is the solution's Final Answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_claims: Option<Vec<Claim>>,
    /// Cited files no step read.
    pub cited_unread: Vec<String>,
    /// Files some step read.
    pub files_read: Vec<String>,
    /// Reference analysis files of the task.
    pub reference_files: Vec<String>,
}

impl RunEvidence {
    /// The claims of the judge-like reading as a [`earthverse_evidence_ledger::RunLedger`] (for summaries).
    pub fn ledger_view(&self) -> earthverse_evidence_ledger::RunLedger {
        earthverse_evidence_ledger::RunLedger {
            claims: self.claims.clone(),
            cited_unread: self.cited_unread.clone(),
            files_read: Vec::new(),
        }
    }
}

/// The reference analysis files of every task of a release, by task id.
pub fn task_references(
    release: &earthverse_package_model::Release,
) -> std::collections::BTreeMap<&str, Vec<String>> {
    use rayon::prelude::*;
    // Each task's texts are searched for its inventory paths: on all cores.
    release
        .tasks()
        .par_iter()
        .map(|t| (t.task_id.as_str(), task_reference_files(t)))
        .collect()
}

/// The ledger of one run in the judge-like reading (and the `primary_gt`
/// reading when they differ), scored with `ctx` (the task's
/// [`crate::scoring_context`]).
pub fn run_evidence(
    task: &TaskContext,
    ctx: &earthverse_answer_units::ScoringContext,
    references: &[String],
    run: &RunContext,
    with_answer: bool,
) -> RunEvidence {
    let score = earthverse_answer_units::score_task(&task.primary_gt, &run.final_answer, ctx);
    let observations = observations(&run.tool_trace);
    let index = TraceIndex::new(&task.question, &observations, references);
    let cited = cited_files(&run.evidence);
    let judge = index.ledger(&score.judge_score().ledger, &cited);
    let primary_claims = score
        .solution
        .as_ref()
        .map(|_| index.claims(&score.units.ledger));
    RunEvidence {
        system: run.system.clone(),
        task_id: run.task_id.clone(),
        u_judge: score.u_judge(),
        reading: if score.solution.is_some() {
            "solution"
        } else {
            "primary_gt"
        },
        final_answer: with_answer.then(|| run.final_answer.clone()),
        claims: judge.claims,
        primary_claims,
        cited_unread: judge.cited_unread,
        files_read: judge.files_read,
        reference_files: references.to_vec(),
    }
}
