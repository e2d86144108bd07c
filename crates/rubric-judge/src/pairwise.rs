//! Pairwise comparison of two systems' runs on the same task (win / tie /
//! loss, paper Fig. 7), through the same [`ChatModel`] trait.
//!
//! The paper gives no pairwise prompt; ours asks the judge to compare the
//! two complete answers and traces against the task's ground truth and
//! rubric, and is asked twice with the order swapped to cancel position
//! bias: a side wins only if it wins both orders, otherwise it is a tie.

use crate::error::{JudgeError, Result};
use crate::input::{RunContext, TaskContext};
use crate::prompt::{render_tool_trace, JUDGE_SYSTEM_PROMPT};
use earthverse_model_provider::{ChatModel, ChatRequest, Message, Sampling};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Outcome for system A against system B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairOutcome {
    /// A is preferred.
    Win,
    /// Neither.
    Tie,
    /// B is preferred.
    Loss,
}

/// One pairwise comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairwiseRecord {
    /// Task id.
    pub task_id: String,
    /// System A.
    pub system_a: String,
    /// System B.
    pub system_b: String,
    /// A's outcome.
    pub outcome: PairOutcome,
    /// Preference with A shown first ("first", "second", "tie").
    pub a_first_choice: String,
    /// Preference with B shown first.
    pub b_first_choice: String,
    /// Judge model id.
    pub judge: String,
}

/// Instruction of the pairwise judge (ours; see module docs).
pub const PAIRWISE_INSTRUCTION: &str = "Compare two model responses to the same extreme-event \
benchmark task. Judge which one better establishes the required answer units (see the ground \
truth) and better supports them with a sound research process (see the 20-point rubric): \
evidence, intermediate values, transformations and conclusions must agree. Do not reward \
length, fluency or many tool calls. Reply with exactly one JSON object: \
{\"preferred\": \"first\" | \"second\" | \"tie\", \"reason\": string}.";

fn render_side(label: &str, run: &RunContext) -> String {
    format!(
        "<{label}_FINAL_ANSWER>\n{}\n</{label}_FINAL_ANSWER>\n<{label}_TOOL_TRACE>\n{}\n</{label}_TOOL_TRACE>",
        serde_json::to_string_pretty(&run.final_answer).unwrap_or_default(),
        render_tool_trace(run)
    )
}

fn parse_choice(text: &str) -> std::result::Result<String, String> {
    let body = text.trim();
    let body = body
        .strip_prefix("```json")
        .or_else(|| body.strip_prefix("```"))
        .and_then(|b| b.strip_suffix("```"))
        .unwrap_or(body)
        .trim();
    let v: Value = serde_json::from_str(body).map_err(|e| format!("not one JSON object: {e}"))?;
    match v.get("preferred").and_then(Value::as_str) {
        Some(p @ ("first" | "second" | "tie")) => Ok(p.to_string()),
        other => Err(format!(
            "`preferred` must be first, second or tie, found {other:?}"
        )),
    }
}

async fn ask(
    model: &dyn ChatModel,
    task: &TaskContext,
    first: &RunContext,
    second: &RunContext,
    max_attempts: u32,
) -> Result<String> {
    let rubric = serde_json::to_string_pretty(&task.rubric).unwrap_or_default();
    let mut messages = vec![
        Message::system(JUDGE_SYSTEM_PROMPT),
        Message::user(format!(
            "{PAIRWISE_INSTRUCTION}\n\n<QUESTION>\n{}\n</QUESTION>\n<GROUND_TRUTH>\n{}\n</GROUND_TRUTH>\n<RUBRIC>\n{rubric}\n</RUBRIC>\n\n{}\n\n{}",
            task.question,
            serde_json::to_string_pretty(&task.ground_truth).unwrap_or_default(),
            render_side("FIRST", first),
            render_side("SECOND", second),
        )),
    ];
    let mut last = String::new();
    for _ in 0..max_attempts.max(1) {
        let mut req = ChatRequest::new(messages.clone());
        req.json_mode = true;
        req.sampling = Sampling {
            temperature: Some(0.0),
            seed: Some(crate::llm::JUDGE_SEED),
            ..Sampling::default()
        };
        let resp = model
            .chat(req)
            .await
            .map_err(|source| JudgeError::Provider {
                model: model.model_id().to_string(),
                task_id: task.task_id.clone(),
                system: format!("{} vs {}", first.system, second.system),
                source: Box::new(source),
            })?;
        match parse_choice(&resp.text) {
            Ok(choice) => return Ok(choice),
            Err(problem) => {
                messages.push(Message::assistant(resp.text));
                messages.push(Message::user(format!(
                    "Invalid reply: {problem}. Reply with exactly one JSON object."
                )));
                last = problem;
            }
        }
    }
    Err(JudgeError::InvalidJudgeOutput {
        model: model.model_id().to_string(),
        task_id: task.task_id.clone(),
        system: format!("{} vs {}", first.system, second.system),
        attempts: max_attempts.max(1),
        last_problem: last,
    })
}

/// Compares run `a` with run `b` on `task`, asking in both orders.
pub async fn compare_pair(
    model: &dyn ChatModel,
    task: &TaskContext,
    a: &RunContext,
    b: &RunContext,
) -> Result<PairwiseRecord> {
    let attempts = crate::llm::DEFAULT_MAX_JUDGE_ATTEMPTS;
    let a_first = ask(model, task, a, b, attempts).await?;
    let b_first = ask(model, task, b, a, attempts).await?;
    let outcome = match (a_first.as_str(), b_first.as_str()) {
        ("first", "second") => PairOutcome::Win,
        ("second", "first") => PairOutcome::Loss,
        _ => PairOutcome::Tie,
    };
    Ok(PairwiseRecord {
        task_id: task.task_id.clone(),
        system_a: a.system.clone(),
        system_b: b.system.clone(),
        outcome,
        a_first_choice: a_first,
        b_first_choice: b_first,
        judge: model.model_id().to_string(),
    })
}

/// Win, tie and loss shares (percent) and net = win − loss, of outcomes
/// from one system's point of view (Fig. 7).
pub fn win_tie_loss(outcomes: &[PairOutcome]) -> (f64, f64, f64, f64) {
    if outcomes.is_empty() {
        return (0.0, 0.0, 0.0, 0.0);
    }
    let n = outcomes.len() as f64;
    let share = |o: PairOutcome| 100.0 * outcomes.iter().filter(|x| **x == o).count() as f64 / n;
    let (w, t, l) = (
        share(PairOutcome::Win),
        share(PairOutcome::Tie),
        share(PairOutcome::Loss),
    );
    (w, t, l, w - l)
}
