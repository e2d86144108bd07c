//! The judge prompt and payload of paper App. E ("JUDGE: Answer and
//! research-process evaluation"), copied verbatim, plus the output contract
//! this crate asks for.

use crate::input::{RunContext, TaskContext};
use serde_json::{json, Value};

/// System message, verbatim from App. E JUDGE ("SYSTEM").
pub const JUDGE_SYSTEM_PROMPT: &str =
    "You are a strict but fair evaluator for a local extreme-event benchmark. Your \
job is to judge answer correctness and task-rubric quality. Use partial 0-100 \
scores and avoid old deterministic exact matching.";

/// Calibration core, verbatim from App. E JUDGE ("CALIBRATION CORE").
pub const JUDGE_CALIBRATION_CORE: &str =
    "Evaluate this model response for an extreme-event evidence-and-reasoning \
benchmark. Make one combined evaluation and produce two core 0-100 scores.
- answer_correctness_score is the direct partial-credit comparison between the \
model\u{2019}s final answer and the ground truth. Treat the answer as a set of units: \
required fields, labels, decisions, values, units, orderings, alternatives, \
stage boundaries, and required conclusions. Missing required fields are \
incorrect; correct prose cannot replace a missing structured field.
- llm_rubric_score must come from the task\u{2019}s own 20-point rubric. Compare the \
answer and visible trace against every criterion, assign earned points out of \
20, and convert the result to percent.
- Do not invent extra credit. A plausible narrative, many tool calls, or reading \
the right files is not by itself a correct solution process. Evidence, \
intermediate values, transformations, and conclusions must agree.
- Keep the two scores distinct. A correct-looking final answer cannot substitute \
for missing process evidence, and an attempted method cannot receive full \
rubric credit when its result is wrong.
- Use only the supplied package evidence, ground truth, task solution, rubric, \
final answer, and model trace. Do not rely on web knowledge.";

/// The output contract. The paper lists the record's parts ("EVALUATION
/// RECORD: Scores, Answer units, Rubric ledger, Diagnosis, Rationale") but
/// not their JSON keys; these keys are ours and are what
/// [`crate::parse_judge_reply`] enforces.
pub const JUDGE_OUTPUT_CONTRACT: &str = "EVALUATION RECORD
Reply with exactly one JSON object and nothing else, with these keys:
{
  \"answer_correctness_score\": number 0-100,
  \"llm_rubric_score\": number 0-100 (rubric points earned out of 20, as percent),
  \"answer_units\": [{\"unit\": string, \"expected\": any, \"found\": any, \"satisfied\": boolean}],
  \"rubric_ledger\": [{\"name\": string (criterion name exactly as in the rubric), \"points_earned\": number, \"points_possible\": number, \"note\": string}],
  \"verdict\": \"correct\" | \"mostly_correct\" | \"partial\" | \"incorrect\",
  \"critical_errors\": [string],
  \"missing_elements\": [string],
  \"unsupported_claims\": [string],
  \"rationale\": string (one sentence explaining the score pair)
}
answer_units lists each required unit and whether it was satisfied; rubric_ledger \
has one entry per rubric criterion with points earned out of that criterion's points.";

/// Version of the prompt text; part of every cache key.
pub const JUDGE_PROMPT_VERSION: &str = "earthverse-judge-app-e-v1";

/// Most characters of one tool output shown to the judge.
pub const TRACE_OUTPUT_CHARS: usize = 2_000;
/// Most characters of Python code shown per step.
pub const TRACE_CODE_CHARS: usize = 2_000;

fn cut(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max).collect();
    format!("{head}...[TRUNCATED]...")
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// Renders the tool trace (`<<MODEL_TOOL_TRACE>>`): every step with tool,
/// status, reason, arguments, code, output and evidence paths.
pub fn render_tool_trace(run: &RunContext) -> String {
    if run.tool_trace.is_empty() {
        return "(no tool calls)".into();
    }
    let mut out = String::new();
    for s in &run.tool_trace {
        out.push_str(&format!(
            "## step {} {} ({})\nreason: {}\nargs: {}\n",
            s.step,
            s.tool,
            if s.ok { "ok" } else { "failed" },
            s.reason,
            s.args
        ));
        if !s.code.is_empty() {
            out.push_str(&format!("code:\n{}\n", cut(&s.code, TRACE_CODE_CHARS)));
        }
        let shown = if s.stdout.is_empty() {
            &s.output
        } else {
            &s.stdout
        };
        out.push_str(&format!("output:\n{}\n", cut(shown, TRACE_OUTPUT_CHARS)));
        if !s.evidence_files.is_empty() {
            out.push_str(&format!(
                "evidence_files: {}\n",
                s.evidence_files.join(", ")
            ));
        }
    }
    out
}

/// Renders the run notes (`<<MODEL_RUN_NOTES>>`).
pub fn render_run_notes(run: &RunContext) -> String {
    pretty(&json!({
        "system": run.system,
        "run_status": run.run_status,
        "termination_reason": run.figures.termination_reason,
        "model_rounds": run.figures.model_rounds,
        "tool_calls": run.figures.tool_calls,
        "evidence": run.evidence,
        "reasoning_summary": run.reasoning_summary,
        "unsupported_or_unresolved": run.unsupported_or_unresolved,
    }))
}

/// The user message: calibration core, the runtime payload in the paper's
/// order (task metadata, question, ground truth, solution and 20-point
/// rubric, final answer, tool trace, run notes) and the output contract.
pub fn render_judge_user_message(task: &TaskContext, run: &RunContext) -> String {
    let rubric = serde_json::to_value(&task.rubric).unwrap_or(Value::Null);
    format!(
        "CALIBRATION CORE\n{core}\n\nRuntime payload:\n\n\
         <TASK_METADATA>\n{meta}\n</TASK_METADATA>\n\n\
         <QUESTION>\n{question}\n</QUESTION>\n\n\
         <GROUND_TRUTH>\n{gt}\n</GROUND_TRUTH>\n\n\
         <SOLUTION_AND_20_POINT_RUBRIC>\n{solution}\n\nRUBRIC:\n{rubric}\n</SOLUTION_AND_20_POINT_RUBRIC>\n\n\
         <MODEL_FINAL_ANSWER>\n{answer}\n</MODEL_FINAL_ANSWER>\n\n\
         <MODEL_TOOL_TRACE>\n{trace}\n</MODEL_TOOL_TRACE>\n\n\
         <MODEL_RUN_NOTES>\n{notes}\n</MODEL_RUN_NOTES>\n\n{contract}",
        core = JUDGE_CALIBRATION_CORE,
        meta = pretty(&task.metadata),
        question = task.question,
        gt = pretty(&task.ground_truth),
        solution = task.solution,
        rubric = pretty(&rubric),
        answer = pretty(&run.final_answer),
        trace = render_tool_trace(run),
        notes = render_run_notes(run),
        contract = JUDGE_OUTPUT_CONTRACT,
    )
}
