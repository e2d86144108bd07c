//! What a judge sees: the task side (hidden from the solver) and the run side.
//!
//! Both are read through `earthverse-package-model`'s types ([`Task`] and
//! [`RecordedRun`]), the one reader of `tasks/<id>.json` and of recorded
//! runs and `trajectory.json`, so the judge and the rest of the workspace
//! agree on what a task and a run are.

use crate::error::{JudgeError, Result};
use crate::record::{RunStatus, TaskLabels, TrajectoryFigures};
use crate::rubric::Rubric;
use earthverse_package_model::{RecordedRun, RunScores, Task};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// The task side of a judgement: metadata, question, ground truth, expert
/// solution and rubric (paper App. E JUDGE payload).
#[derive(Debug, Clone)]
pub struct TaskContext {
    /// Task id.
    pub task_id: String,
    /// `<<TASK_METADATA>>`: id, event, hazard, difficulty, task type, mode.
    pub metadata: Value,
    /// `<<QUESTION>>`: the public prompt.
    pub question: String,
    /// `<<GROUND_TRUTH>>`: the structured ground truth without the rubric.
    pub ground_truth: Value,
    /// `primary_gt`, the answer units' source.
    pub primary_gt: Value,
    /// The expert solution (markdown).
    pub solution: String,
    /// The 20-point rubric.
    pub rubric: Rubric,
    /// Labels for slicing.
    pub labels: TaskLabels,
    /// Absolute numeric tolerances the ground truth declares: the typed
    /// ones of package-model (`GroundTruth::absolute_tolerances`) and every
    /// `tolerances` object found anywhere in it (`extract_tolerances`).
    pub tolerances: Vec<(String, f64)>,
}

/// One tool step of a trajectory.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolStep {
    /// 1-based step.
    pub step: u64,
    /// Tool name.
    pub tool: String,
    /// Whether the call succeeded.
    pub ok: bool,
    /// The model's stated reason.
    pub reason: String,
    /// Arguments.
    pub args: Value,
    /// Output (text or structured).
    pub output: String,
    /// Python code, if any.
    pub code: String,
    /// Python stdout, if any.
    pub stdout: String,
    /// Evidence files touched.
    pub evidence_files: Vec<String>,
}

/// The run side of a judgement: final answer, trace and notes.
#[derive(Debug, Clone)]
pub struct RunContext {
    /// Task id the run answers.
    pub task_id: String,
    /// System (model or agent) id.
    pub system: String,
    /// Solver run status.
    pub run_status: RunStatus,
    /// Final answer (object, string, ... as submitted).
    pub final_answer: Value,
    /// Tool steps.
    pub tool_trace: Vec<ToolStep>,
    /// Evidence list of the final submission.
    pub evidence: Vec<Value>,
    /// Reasoning summary lines.
    pub reasoning_summary: Vec<Value>,
    /// Unsupported or unresolved items declared by the solver.
    pub unsupported_or_unresolved: Vec<Value>,
    /// Trajectory figures.
    pub figures: TrajectoryFigures,
    /// Published scores stored in a recorded run (`scores`), if any.
    pub published_scores: Option<RunScores>,
    /// The published judge's `critical_errors` (`judge_rationale`), if
    /// the record carries them (the release's recorded runs do).
    pub published_critical_errors: Vec<String>,
}

/// A tool call's text field: a string as is, an object's `text` string,
/// nothing for null, any other value as JSON. A string is moved, not copied.
fn text_owned(value: Value) -> String {
    match value {
        Value::String(s) => s,
        Value::Object(mut o) => {
            if matches!(o.get("text"), Some(Value::String(_))) {
                if let Some(Value::String(s)) = o.swap_remove("text") {
                    return s;
                }
            }
            Value::Object(o).to_string()
        }
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Reads a release record of type `T` from JSON through package-model's
/// types, naming the JSON path of the first field that does not fit. Only
/// a record that fails is read again with path tracking.
fn typed_record<T: DeserializeOwned>(value: &Value, what: &'static str, id: &str) -> Result<T> {
    if let Ok(record) = T::deserialize(value) {
        return Ok(record);
    }
    serde_path_to_error::deserialize(value).map_err(|error| {
        let field = error.path().to_string();
        JudgeError::BadInput {
            what,
            id: id.to_string(),
            field: if field.is_empty() || field == "." {
                "(root)".into()
            } else {
                field
            },
            problem: error.into_inner().to_string(),
        }
    })
}

fn id_of(value: &Value) -> String {
    value
        .get("task_id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .unwrap_or("?")
        .to_string()
}

impl TaskContext {
    /// Builds the task side from a task loaded by `earthverse-package-model`
    /// (the release's one reader of `tasks/<id>.json`).
    ///
    /// `<<GROUND_TRUTH>>` is the typed ground truth without its rubric, with
    /// keys in the typed record's order; [`TaskContext::from_task_json`]
    /// keeps the file's own key order instead.
    pub fn from_task(task: &Task) -> Result<Self> {
        let mut ground_truth =
            serde_json::to_value(&task.ground_truth).map_err(|source| JudgeError::Json {
                context: format!("task {} field `ground_truth`", task.task_id),
                source,
            })?;
        if let Value::Object(gt) = &mut ground_truth {
            gt.shift_remove("rubric");
        }
        Self::with_ground_truth(task, ground_truth)
    }

    /// Builds the task side from a release task JSON (`tasks/<id>.json`),
    /// read through package-model's [`Task`]. A field that does not fit is an
    /// error naming its JSON path. `<<GROUND_TRUTH>>` keeps the file's key
    /// order, so the judge payload is the release's own text.
    pub fn from_task_json(task: &Value) -> Result<Self> {
        let typed: Task = typed_record(task, "task", &id_of(task))?;
        let mut ground_truth = task.get("ground_truth").cloned().unwrap_or(Value::Null);
        if let Value::Object(gt) = &mut ground_truth {
            gt.shift_remove("rubric");
        }
        Self::with_ground_truth(&typed, ground_truth)
    }

    /// The task side of `task`, with `ground_truth` (the rubric taken out)
    /// as the `<<GROUND_TRUTH>>` payload.
    fn with_ground_truth(task: &Task, ground_truth: Value) -> Result<Self> {
        if task.task_id.is_empty() {
            return Err(JudgeError::BadInput {
                what: "task",
                id: "?".into(),
                field: "task_id".into(),
                problem: "missing".into(),
            });
        }
        // Each present field as the release writes it (labels serialise as
        // their text), in a fixed order.
        let fields: [(&str, Option<Value>); 14] = [
            ("task_id", json_of(&task.task_id)),
            ("event_id", json_of(&task.event_id)),
            ("title", json_of(&task.title)),
            ("event_name", json_of(&task.event_name)),
            ("hazard_family", json_of(&task.hazard_family)),
            ("hazard_label", json_of(&task.hazard_label)),
            ("region", json_of(&task.region)),
            ("scale", json_of(&task.scale)),
            ("difficulty", json_of(&task.difficulty)),
            ("primary_dimension", json_of(&task.primary_dimension)),
            ("dimensions", json_of(&task.dimensions)),
            ("task_type", json_of(&task.task_type)),
            ("target_family", json_of(&task.target_family)),
            (
                "evaluation_mode",
                json_of(&task.ground_truth.evaluation_mode_label),
            ),
        ];
        let metadata: Map<String, Value> = fields
            .into_iter()
            .filter_map(|(key, value)| Some((key.to_owned(), value?)))
            .collect();
        let non_empty = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
        let labels = TaskLabels {
            event_id: Some(task.event_id.clone()).filter(|s| !s.is_empty()),
            hazard_family: task.hazard_family().map(|h| h.as_str().to_string()),
            difficulty: non_empty(&task.difficulty),
            capabilities: task
                .dimensions()
                .iter()
                .map(|d| d.as_str().to_string())
                .collect(),
            task_type: non_empty(&task.task_type),
        };
        let mut tolerances = task.ground_truth.absolute_tolerances();
        tolerances.extend(earthverse_answer_units::extract_tolerances(&ground_truth));
        Ok(TaskContext {
            tolerances,
            task_id: task.task_id.clone(),
            metadata: Value::Object(metadata),
            question: task.question.clone(),
            ground_truth,
            primary_gt: task.ground_truth.primary_gt.clone(),
            solution: task.solution.clone().unwrap_or_default(),
            rubric: Rubric::from(&task.ground_truth.rubric),
            labels,
        })
    }
}

/// A typed field as JSON; `None` for an absent one (an `Option` that is
/// `None` serialises as null).
fn json_of<T: Serialize>(field: &T) -> Option<Value> {
    serde_json::to_value(field).ok().filter(|v| !v.is_null())
}

impl RunContext {
    /// Builds the run side from a run loaded by `earthverse-package-model`
    /// (the release's one reader of recorded runs and of our own
    /// `trajectory.json`).
    pub fn from_recorded_run(run: &RecordedRun) -> Result<Self> {
        Self::from_recorded_run_owned(run.clone())
    }

    /// [`RunContext::from_recorded_run`] taking the run by value: its
    /// strings and JSON values are moved into the context, not copied
    /// (what run discovery uses for every file it reads).
    pub fn from_recorded_run_owned(run: RecordedRun) -> Result<Self> {
        if run.task_id.is_empty() {
            return Err(JudgeError::BadInput {
                what: "run",
                id: "?".into(),
                field: "task_id".into(),
                problem: "missing".into(),
            });
        }
        let diag = &run.diagnostics;
        let status = diag.run_status.or_else(|| {
            run.extra
                .get("run_status")
                .and_then(Value::as_str)
                .and_then(RunStatus::read)
        });
        // Anything but "ok" (or no status at all) is a solver failure, and so
        // is a run without a final answer (§4.1: it scores zero).
        let run_status = RunStatus::from_recorded(status, !run.final_answer.is_null());
        let figures = diag.figures();
        let tool_trace = run
            .tool_calls
            .into_iter()
            .enumerate()
            .map(|(i, mut call)| ToolStep {
                step: call.step.unwrap_or(i as u64 + 1),
                ok: call.ok.unwrap_or(false),
                reason: call.reason.take().unwrap_or_default(),
                output: text_owned(call.output),
                code: text_owned(call.extra.swap_remove("code").unwrap_or(Value::Null)),
                stdout: text_owned(call.extra.swap_remove("stdout").unwrap_or(Value::Null)),
                evidence_files: call
                    .extra
                    .get("evidence_files")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default(),
                tool: call.tool,
                args: call.args,
            })
            .collect();
        let published_scores = (run.scores != RunScores::default()).then_some(run.scores);
        let published_critical_errors = run
            .judge_rationale
            .as_ref()
            .and_then(|r| r.get("critical_errors"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|e| e.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ok(RunContext {
            task_id: run.task_id,
            system: run.model_id,
            run_status,
            final_answer: run.final_answer,
            tool_trace,
            evidence: run.evidence,
            reasoning_summary: run.reasoning_summary,
            unsupported_or_unresolved: run.unsupported_or_unresolved,
            figures,
            published_scores,
            published_critical_errors,
        })
    }

    /// Builds the run side from a recorded-run / `trajectory.json` record,
    /// read through package-model's [`RecordedRun`]. A field that does not
    /// fit is an error naming its JSON path.
    pub fn from_run_json(run: &Value) -> Result<Self> {
        let typed: RecordedRun = typed_record(run, "run", &id_of(run))?;
        Self::from_recorded_run(&typed)
    }
}
