//! What a judge sees: the task side (hidden from the solver) and the run side.
//!
//! Both are read from the release's own JSON (`tasks/<id>.json` and a
//! recorded-run `trajectory.json`), so any loader can feed a judge.

use crate::error::{JudgeError, Result};
use crate::record::{RunStatus, TaskLabels, TrajectoryFigures};
use crate::rubric::Rubric;
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
    pub published_scores: Option<Value>,
}

fn str_field(obj: &Map<String, Value>, key: &str) -> String {
    match obj.get(key) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn text_of(value: Option<&Value>) -> String {
    match value {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => match o.get("text") {
            Some(Value::String(s)) => s.clone(),
            _ => Value::Object(o.clone()).to_string(),
        },
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

impl TaskContext {
    /// Builds the task side from a release task JSON (`tasks/<id>.json`).
    pub fn from_task_json(task: &Value) -> Result<Self> {
        let obj = task.as_object().ok_or_else(|| JudgeError::BadInput {
            what: "task",
            id: "?".into(),
            field: "(root)".into(),
            problem: "not a JSON object".into(),
        })?;
        let task_id = str_field(obj, "task_id");
        let bad = |field: &str, problem: &str| JudgeError::BadInput {
            what: "task",
            id: task_id.clone(),
            field: field.into(),
            problem: problem.into(),
        };
        if task_id.is_empty() {
            return Err(bad("task_id", "missing"));
        }
        let gt = obj
            .get("ground_truth")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("ground_truth", "missing or not an object"))?;
        let rubric_value = gt
            .get("rubric")
            .ok_or_else(|| bad("ground_truth.rubric", "missing"))?;
        let rubric = Rubric::from_json(rubric_value)
            .map_err(|e| bad("ground_truth.rubric", &e.to_string()))?;
        let primary_gt = gt
            .get("primary_gt")
            .cloned()
            .ok_or_else(|| bad("ground_truth.primary_gt", "missing"))?;
        let mut ground_truth = gt.clone();
        ground_truth.remove("rubric");
        let mut metadata = Map::new();
        for key in [
            "task_id",
            "event_id",
            "title",
            "event_name",
            "hazard_family",
            "hazard_label",
            "region",
            "scale",
            "difficulty",
            "primary_dimension",
            "dimensions",
            "task_type",
            "target_family",
        ] {
            if let Some(v) = obj.get(key) {
                metadata.insert(key.to_string(), v.clone());
            }
        }
        if let Some(mode) = gt.get("evaluation_mode") {
            metadata.insert("evaluation_mode".into(), mode.clone());
        }
        let opt = |k: &str| {
            let s = str_field(obj, k);
            (!s.is_empty()).then_some(s)
        };
        let labels = TaskLabels {
            event_id: opt("event_id"),
            hazard_family: opt("hazard_family"),
            difficulty: opt("difficulty"),
            capabilities: obj
                .get("dimensions")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default(),
            task_type: opt("task_type"),
        };
        Ok(TaskContext {
            question: str_field(obj, "question"),
            solution: str_field(obj, "solution"),
            metadata: Value::Object(metadata),
            ground_truth: Value::Object(ground_truth),
            primary_gt,
            rubric,
            labels,
            task_id,
        })
    }
}

impl RunContext {
    /// Builds the run side from a recorded-run / `trajectory.json` record.
    pub fn from_run_json(run: &Value) -> Result<Self> {
        let obj = run.as_object().ok_or_else(|| JudgeError::BadInput {
            what: "run",
            id: "?".into(),
            field: "(root)".into(),
            problem: "not a JSON object".into(),
        })?;
        let task_id = str_field(obj, "task_id");
        if task_id.is_empty() {
            return Err(JudgeError::BadInput {
                what: "run",
                id: "?".into(),
                field: "task_id".into(),
                problem: "missing".into(),
            });
        }
        let system = ["model_id", "system", "model_name"]
            .iter()
            .map(|k| str_field(obj, k))
            .find(|s| !s.is_empty())
            .unwrap_or_else(|| "unknown".to_string());
        let empty = Map::new();
        let diag = obj
            .get("diagnostics")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let status = str_field(diag, "run_status");
        let status = if status.is_empty() {
            str_field(obj, "run_status")
        } else {
            status
        };
        let final_answer = obj.get("final_answer").cloned().unwrap_or(Value::Null);
        // Anything but "ok" (or no status at all) is a solver failure, and so
        // is a run without a final answer (§4.1: it scores zero).
        let run_status = if (status.is_empty() || status == "ok") && !final_answer.is_null() {
            RunStatus::Ok
        } else {
            RunStatus::Error
        };
        let u = |k: &str| diag.get(k).and_then(Value::as_u64);
        let figures = TrajectoryFigures {
            model_rounds: u("model_rounds"),
            tool_calls: u("tool_calls"),
            file_reads: u("file_reads"),
            unique_evidence_files: u("unique_evidence_files"),
            python_calls: u("python_calls"),
            tool_errors: u("tool_errors"),
            latency_s: diag.get("latency_s").and_then(Value::as_f64),
            prompt_tokens: u("prompt_tokens"),
            completion_tokens: u("completion_tokens"),
            total_tokens: u("total_tokens"),
            termination_reason: diag
                .get("termination_reason")
                .and_then(Value::as_str)
                .map(str::to_string),
        };
        let tool_trace = obj
            .get("tool_calls")
            .and_then(Value::as_array)
            .map(|steps| {
                steps
                    .iter()
                    .enumerate()
                    .filter_map(|(i, s)| {
                        let s = s.as_object()?;
                        Some(ToolStep {
                            step: s
                                .get("step")
                                .and_then(Value::as_u64)
                                .unwrap_or(i as u64 + 1),
                            tool: str_field(s, "tool"),
                            ok: s.get("ok").and_then(Value::as_bool).unwrap_or(false),
                            reason: str_field(s, "reason"),
                            args: s.get("args").cloned().unwrap_or(Value::Null),
                            output: text_of(s.get("output")),
                            code: text_of(s.get("code")),
                            stdout: text_of(s.get("stdout")),
                            evidence_files: s
                                .get("evidence_files")
                                .and_then(Value::as_array)
                                .map(|a| {
                                    a.iter()
                                        .filter_map(|v| v.as_str().map(str::to_string))
                                        .collect()
                                })
                                .unwrap_or_default(),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        let list = |k: &str| {
            obj.get(k)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        Ok(RunContext {
            task_id,
            system,
            run_status,
            final_answer,
            tool_trace,
            evidence: list("evidence"),
            reasoning_summary: list("reasoning_summary"),
            unsupported_or_unresolved: list("unsupported_or_unresolved"),
            figures,
            published_scores: obj.get("scores").cloned(),
        })
    }
}
