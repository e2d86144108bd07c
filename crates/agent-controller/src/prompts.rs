//! The prompts of the solver loop.
//!
//! [`SOLVER_SYSTEM`], the task message of [`task_message`], the two response
//! contracts and [`REVIEW_PROMPT`] are copied from paper Appendix E (SOLVER
//! "EarthVerse interactive solver" and REVIEW "Final evidence review"), line
//! for line. The JSON shapes appended to each contract are the reference
//! runner's wire form (`reference-harness.md` "Protocol"). The paper does not
//! print the repair, finalisation and required-tool prompts; ours are marked
//! as such and carry no answer-bearing hint (App. C.4).

/// SYSTEM part of the App. E SOLVER prompt.
pub const SOLVER_SYSTEM: &str =
    "You are an autonomous extreme-event benchmark solver. You must solve the task
by planning, selecting local files, executing tools, reading observations, and
then producing a structured final answer. Use only local event-package evidence
returned by tools. Do not use web knowledge. Never read computed_gt.json,
solution_en.md, review.json, or compute_gt.py. Prefer deterministic Python
calculations when the task asks for metrics. You must make real tool calls
before finalizing. Every assistant message must follow one of the two response
contracts below.";

/// TOOL ACTION CONTRACT of App. E, followed by its JSON wire form.
pub const TOOL_ACTION_CONTRACT: &str = "TOOL ACTION CONTRACT
Action tool_call
Tool one registered tool name
Arguments only the arguments required by that tool
Reason why this call is needed for the current analysis
JSON form (one object, nothing else):
{\"action\": \"tool_call\", \"tool\": \"<tool name>\", \"args\": {...}, \"reason\": \"...\"}";

/// FINAL ANSWER CONTRACT of App. E, followed by its JSON wire form.
pub const FINAL_ANSWER_CONTRACT: &str = "FINAL ANSWER CONTRACT
Action final_answer
Answer the exact structure requested by the public question
Confidence one numeric confidence value
Evidence for each claim: package-relative source file and support type
(direct metric, report claim, metadata, image context, table
value, derived metric, or unsupported boundary)
Research a brief ordered summary of the reasoning
Limitations important unsupported or unresolved elements
JSON form (one object, nothing else):
{\"action\": \"final_answer\", \"final_answer\": <the requested structure>, \"confidence\": 0.0-1.0,
 \"evidence\": [{\"claim\": \"...\", \"source_file\": \"...\", \"support_type\": \"direct_metric|report_claim|metadata|image_context|table_metric|derived_metric|unsupported_boundary\"}],
 \"reasoning_summary\": [\"...\"], \"unsupported_or_unresolved\": [\"...\"]}";

/// Last line of the App. E SOLVER prompt.
pub const START_INSTRUCTION: &str =
    "Start by inspecting the package inventory, then choose only the files needed
for this event-specific disaster analysis.";

/// The App. E REVIEW prompt with `<<MAX_REVIEW_TURNS>>` as a placeholder.
pub const REVIEW_PROMPT: &str =
    "Begin a final evidence-review phase before submitting the answer. Treat the
prior answer as a draft: re-check its evidence provenance, formulas, units,
intermediate values, competing physical explanations, and every required
output field against the package. Use additional tools when verification is
useful. Return either one tool action or a revised final answer; do not merely
endorse the draft. You have at most <<MAX_REVIEW_TURNS>> review turns.";

/// Forced-finalisation prompt (ours; App. C.4: "Finalization receives the
/// accumulated research state and required schema but no answer-bearing
/// hint"). `<<REASON>>` is `round_limit` or `research_time_limit`.
pub const FINALIZATION_PROMPT: &str =
    "The research budget is exhausted (<<REASON>>). No more tool calls are possible.
Using only the evidence gathered above, return the final answer now as one JSON
object that follows the FINAL ANSWER CONTRACT:
{\"action\": \"final_answer\", \"final_answer\": <the structure requested by the public question>,
 \"confidence\": 0.0-1.0, \"evidence\": [...], \"reasoning_summary\": [...],
 \"unsupported_or_unresolved\": [...]}
Mark values you could not establish as unresolved instead of guessing.";

/// Format-repair prompt (ours), sent when a reply holds no usable JSON action.
pub const REPAIR_PROMPT: &str = "Your previous message did not follow either response contract: <<PROBLEM>>.
Reply with exactly one JSON object, either
{\"action\": \"tool_call\", \"tool\": \"<tool name>\", \"args\": {...}, \"reason\": \"...\"}
or
{\"action\": \"final_answer\", \"final_answer\": ..., \"confidence\": ..., \"evidence\": [...], \"reasoning_summary\": [...], \"unsupported_or_unresolved\": [...]}.
Repairs left after this one: <<REPAIRS_LEFT>>.";

/// Corrective prompt of the required-tool policy (ours; App. A.4, C.5).
pub const REQUIRED_TOOLS_PROMPT: &str =
    "Your final answer was not accepted yet: this environment requires at least
<<MIN>> successful, distinct calls of its specialist tools (target <<TARGET>>);
so far <<COUNT>> count. Calls that fail, are not applicable, use the `probe`
operation or repeat an earlier call exactly do not count. Specialist tools:
<<TOOLS>>. Continue the analysis with a tool action.";

/// Renders the App. E TASK MESSAGE.
pub fn task_message(
    task_id: &str,
    event_id: &str,
    question_path: &str,
    package_root: &str,
    question: &str,
    catalogue: &str,
) -> String {
    format!(
        "Task id: {task_id}\nEvent id: {event_id}\nQuestion path: {question_path}\n\
         Event package path: {package_root}\nQuestion:\n{question}\n\
         Evidence boundary:\nStrict package-only mode: only the current question and event package evidence\n\
         are visible.\nTools:\n{catalogue}\n\n{START_INSTRUCTION}"
    )
}

/// The full system message: the App. E SYSTEM text and both contracts.
pub fn system_message() -> String {
    format!("{SOLVER_SYSTEM}\n\n{TOOL_ACTION_CONTRACT}\n\n{FINAL_ANSWER_CONTRACT}")
}

/// The REVIEW prompt with its turn bound filled in.
pub fn review_prompt(max_review_turns: u32) -> String {
    REVIEW_PROMPT.replace("<<MAX_REVIEW_TURNS>>", &max_review_turns.to_string())
}

/// The forced-finalisation prompt for a termination reason.
pub fn finalization_prompt(reason: &str) -> String {
    FINALIZATION_PROMPT.replace("<<REASON>>", reason)
}

/// The repair prompt for a parse problem.
pub fn repair_prompt(problem: &str, repairs_left: u32) -> String {
    REPAIR_PROMPT
        .replace("<<PROBLEM>>", problem)
        .replace("<<REPAIRS_LEFT>>", &repairs_left.to_string())
}

/// The required-tool corrective prompt.
pub fn required_tools_prompt(min: usize, target: usize, count: usize, tools: &[String]) -> String {
    let tools = if tools.is_empty() {
        "the specialist tools listed in the catalogue".to_string()
    } else {
        tools.join(", ")
    };
    REQUIRED_TOOLS_PROMPT
        .replace("<<MIN>>", &min.to_string())
        .replace("<<TARGET>>", &target.to_string())
        .replace("<<COUNT>>", &count.to_string())
        .replace("<<TOOLS>>", &tools)
}
