//! The solver loop (App. E, App. C.2; `reference-harness.md`).
//!
//! One run: system and task messages; research turns, each one model call
//! answered by a tool action (executed, its envelope returned as an
//! observation) or a final answer; at most `max_repairs` format repairs per
//! run, after which the run fails; when turns or research time run out, one
//! forced finalisation call without tools, and if that fails the fallback
//! answer and a `_fallback` termination reason; optionally a bounded final
//! evidence review and a required-tool policy. A run never returns an error:
//! it always ends with a [`RunRecord`].

use crate::context::{build_context, Entry, EntryKind};
use crate::prompts;
use crate::protocol::{parse_reply, Action, FinalAnswer, ToolAction};
use crate::record::{
    ModelCallLog, RunNotes, RunRecord, RunRecordBuilder, Snippet, TerminationReason, TextField,
    ToolCallRecord,
};
use crate::settings::{ControllerSettings, Protocol};
use crate::text::{cap_head, char_len};
use crate::toolbox::{render_output_text, CatalogueSession, Resolution, ToolBox, ToolCallOutcome};
use earthverse_model_provider::{
    ChatModel, ChatRequest, ChatResponse, Message, ProviderError, Role, ToolCall, ToolDefinition,
};
use earthverse_tool_registry::{CallStatus, ToolContext, ToolOutput};
use serde_json::{json, Value};
use sha1::{Digest, Sha1};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Instant;

/// The review note when the research time runs out during a review.
const TIME_RAN_OUT: &str = "research time ran out";

/// The name of the synthetic tool that submits the answer in native mode.
pub const FINAL_ANSWER_TOOL: &str = "final_answer";

pub use crate::task::TaskInput;

/// The solver loop over one model and one tool box.
pub struct Controller {
    model: Arc<dyn ChatModel>,
    tools: Arc<dyn ToolBox>,
    settings: ControllerSettings,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("model", &self.model.model_id())
            .field("settings", &self.settings)
            .finish()
    }
}

/// The two kinds of turn of the [`RunState::Step`] state.
enum Phase {
    /// Research: tool calls until the model submits an answer.
    Research,
    /// The optional final evidence review of a draft answer (App. E).
    Review { draft: FinalAnswer, turns_left: u32 },
}

/// The states of one run. The loop of [`Controller::run_task`] stays in
/// `Step` until a turn ends the run; [`Controller::finalise`] then turns
/// the [`End`] into the record's answer, termination reason and error.
enum RunState {
    /// One turn: a model call and the actions of its reply.
    Step(Phase),
    /// The run is over for the reason given; what is left is to finalise it.
    Finalise(End),
}

/// Why the `Step` state was left.
enum End {
    /// The model submitted an answer.
    Answered(FinalAnswer),
    /// A budget ran out (`round_limit` or `research_time_limit`): one forced
    /// finalisation call, else the fallback answer.
    BudgetExhausted(&'static str),
    /// The run failed.
    Failed {
        reason: &'static str,
        message: String,
    },
}

impl From<End> for RunState {
    fn from(end: End) -> Self {
        RunState::Finalise(end)
    }
}

/// How a run ends: what [`Controller::finalise`] hands the record builder.
struct Ending {
    answer: FinalAnswer,
    termination: TerminationReason,
    error: Option<String>,
}

enum CallError {
    Deadline,
    Provider(String),
}

/// Everything one run accumulates between the states.
struct Run {
    ctx: ToolContext,
    release_prefix: String,
    /// Research deadline (tool calls and research turns end here).
    research_deadline: Instant,
    /// Whole-task deadline (the forced finalisation call ends here at the latest).
    task_deadline: Instant,
    /// Model turns taken (research and review).
    turns: u32,
    history: Vec<Entry>,
    /// Tool calls, model rounds and usage: the diagnostics derive from it.
    builder: RunRecordBuilder,
    model_calls: Vec<ModelCallLog>,
    snippets: Vec<Snippet>,
    notes: RunNotes,
    step: u32,
    specialist_seen: HashSet<String>,
    specialist_counted: usize,
    /// Compliance with the required-tool policy, when it is on.
    required: Option<crate::record::RequiredToolOutcome>,
    /// The run's view of the tools under a catalogue condition.
    catalogue: Option<Box<dyn CatalogueSession>>,
    /// A catalogue change to tell the model after this turn's observations.
    catalogue_update: Option<String>,
}

impl Run {
    /// The run's record, ending with `ending`.
    fn into_record(self, ending: Ending) -> RunRecord {
        let Run {
            history,
            builder,
            model_calls,
            snippets,
            notes,
            required,
            ..
        } = self;
        let mut record = builder.finish(ending.answer, ending.termination, ending.error);
        record.trajectory.required_tools = required.map(|mut r| {
            r.repair_rounds = notes.refused_finals;
            r
        });
        record.conversation = history;
        record.model_calls = model_calls;
        record.notes = notes;
        record.snippets = snippets;
        record
    }
}

impl Controller {
    /// A controller over `model` and `tools` with `settings`.
    pub fn new(
        model: Arc<dyn ChatModel>,
        tools: Arc<dyn ToolBox>,
        settings: ControllerSettings,
    ) -> Self {
        Self {
            model,
            tools,
            settings,
        }
    }

    /// The settings.
    pub fn settings(&self) -> &ControllerSettings {
        &self.settings
    }

    /// The `model_id` its records carry: the settings' override, else the
    /// model's own id.
    pub fn model_id(&self) -> String {
        self.settings
            .model_id
            .clone()
            .unwrap_or_else(|| self.model.model_id().to_string())
    }

    /// Runs one task to the end and returns its record. Never fails: model,
    /// tool and format failures end in a record with `run_status: error`
    /// or a `_fallback` termination.
    pub async fn run_task(&self, task: &TaskInput) -> RunRecord {
        use tracing::Instrument;
        // The span is attached to the future, not entered across its awaits.
        let span =
            tracing::info_span!("run_task", task_id = %task.task_id, model = %self.model_id());
        if let Some(direct) = &self.settings.direct {
            // A direct answer mode (App. A.1): one call, no tools.
            let briefed = TaskInput {
                question: self.briefed_question(task),
                ..task.clone()
            };
            return crate::direct::run_direct(
                self.model.as_ref(),
                self.tools.as_ref(),
                &self.settings,
                direct,
                self.model_id(),
                &briefed,
            )
            .instrument(span)
            .await;
        }
        self.run_task_in_span(task).instrument(span).await
    }

    /// The state machine: `Step` until a turn ends the run, then `finalise`.
    async fn run_task_in_span(&self, task: &TaskInput) -> RunRecord {
        let mut run = self.start_run(task);
        let mut state = RunState::Step(Phase::Research);
        let end = loop {
            match state {
                RunState::Step(phase) => state = self.step(&mut run, phase).await,
                RunState::Finalise(end) => break end,
            }
        };
        let ending = self.finalise(&mut run, end).await;
        run.into_record(ending)
    }

    /// The question as the task message shows it: the public question,
    /// then the run's oracle text (App. A.3.1; `condition.oracle.text` of
    /// the settings) when it has one. Tools are routed on the public
    /// question alone, so an oracle run is offered the same router outputs
    /// as its reference (App. C.5).
    fn briefed_question(&self, task: &TaskInput) -> String {
        let oracle = self
            .settings
            .condition
            .as_ref()
            .and_then(|c| c.oracle.as_ref())
            .and_then(|o| o.get("text"))
            .and_then(serde_json::Value::as_str);
        match oracle {
            Some(text) => format!("{}\n\n{text}", task.question),
            None => task.question.clone(),
        }
    }

    /// A fresh run of `task`: system and task messages, deadlines from now.
    fn start_run(&self, task: &TaskInput) -> Run {
        let start = Instant::now();
        let budgets = &self.settings.budgets;
        let question_path = task
            .question_path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| format!("tasks/{}.json", task.task_id));
        // The package's files are cues of the cue-routed catalogue (App.
        // A.3.4); an unreadable package gives none.
        let package_files: Vec<String> =
            earthverse_package_model::evidence::list_package_files(&task.package_root)
                .map(|files| files.into_iter().map(|f| f.package_relative).collect())
                .unwrap_or_default();
        let catalogue = self.tools.open_session(&task.question, &package_files);
        let task_text = prompts::task_message(
            &task.task_id,
            &task.event_id,
            &question_path,
            &task.package_root.display().to_string(),
            &self.briefed_question(task),
            &catalogue
                .as_ref()
                .map_or_else(|| self.tools.catalogue(), |c| c.catalogue()),
        );
        Run {
            ctx: task.tool_context(),
            release_prefix: task.release_prefix(),
            research_deadline: start + budgets.research_time(),
            task_deadline: start + budgets.task_time,
            turns: 0,
            history: vec![
                Entry {
                    message: Message::system(prompts::system_message()),
                    kind: EntryKind::System,
                },
                Entry {
                    message: Message::user(task_text),
                    kind: EntryKind::Task,
                },
            ],
            builder: RunRecordBuilder::new(task.task_id.clone(), self.model_id())
                .started_at(start)
                .model_name(self.settings.model_name.clone())
                .price(self.settings.price)
                .environment(self.settings.environment.clone())
                .settings(self.settings.clone()),
            model_calls: Vec::new(),
            snippets: Vec::new(),
            notes: RunNotes {
                protocol: match self.settings.protocol {
                    Protocol::JsonInMessage => "json_in_message".into(),
                    Protocol::NativeTools => "native_tools".into(),
                },
                specialist_calls_counted: self.settings.required_tools.as_ref().map(|_| 0),
                ..RunNotes::default()
            },
            step: 0,
            specialist_seen: HashSet::new(),
            specialist_counted: 0,
            required: self.settings.required_tools.as_ref().map(|p| {
                crate::record::RequiredToolOutcome {
                    label: p.label.clone(),
                    versions: p.versions.clone(),
                    min_successful: p.min_successful,
                    target: p.target,
                    max_counted: p.max_counted,
                    ..Default::default()
                }
            }),
            catalogue,
            catalogue_update: None,
        }
    }

    /// The state after a budget ran out in `phase`: a review ends with its
    /// draft, research with a forced finalisation.
    fn out_of_budget(
        &self,
        run: &mut Run,
        phase: Phase,
        reason: &'static str,
        review_note: &str,
    ) -> RunState {
        match phase {
            Phase::Review { .. } => self.end_review(run, phase, review_note),
            Phase::Research => End::BudgetExhausted(reason).into(),
        }
    }

    /// The `Step` state: budget checks, one model call, its actions; the
    /// next state.
    async fn step(&self, run: &mut Run, mut phase: Phase) -> RunState {
        let budgets = &self.settings.budgets;
        if let Phase::Review { turns_left: 0, .. } = phase {
            return self.end_review(run, phase, "review turns exhausted");
        }
        if run.turns >= budgets.max_turns {
            return self.out_of_budget(run, phase, "round_limit", "turn limit reached");
        }
        if Instant::now() >= run.research_deadline {
            return self.out_of_budget(run, phase, "research_time_limit", TIME_RAN_OUT);
        }
        let phase_name = match phase {
            Phase::Research => "research",
            Phase::Review { .. } => "review",
        };
        let tools = match self.settings.protocol {
            Protocol::JsonInMessage => Vec::new(),
            Protocol::NativeTools => self.native_definitions(Some(run)),
        };
        let research_deadline = run.research_deadline;
        let response = match self
            .call_model(run, phase_name, tools, research_deadline, None)
            .await
        {
            Ok(r) => r,
            Err(CallError::Deadline) => {
                return self.out_of_budget(run, phase, "research_time_limit", TIME_RAN_OUT)
            }
            Err(CallError::Provider(message)) => {
                return End::Failed {
                    reason: "model_error",
                    message,
                }
                .into()
            }
        };
        run.turns += 1;
        let turns = run.turns;
        if let Phase::Review { turns_left, .. } = &mut phase {
            *turns_left -= 1;
            run.notes.review_turns += 1;
        }
        run.history.push(Entry {
            message: Message {
                role: Role::Assistant,
                content: response.text.clone(),
                tool_calls: response.tool_calls.clone(),
                tool_call_id: None,
            },
            kind: EntryKind::Assistant,
        });

        let actions = match self.interpret(&response) {
            Ok(actions) => actions,
            Err(problem) => {
                // Native calls must each be answered before anything else.
                for call in &response.tool_calls {
                    push_tool_reply(run, call, "Not executed: the reply was malformed.");
                }
                if run.notes.repairs_used < budgets.max_repairs {
                    run.notes.repairs_used += 1;
                    let left = budgets.max_repairs - run.notes.repairs_used;
                    run.notes
                        .events
                        .push(format!("turn {turns}: format repair ({problem})"));
                    push_harness(run, prompts::repair_prompt(&problem, left));
                    return RunState::Step(phase);
                }
                return End::Failed {
                    reason: "format_error",
                    message: format!(
                        "no valid action after {} format repair(s): {problem}",
                        budgets.max_repairs
                    ),
                }
                .into();
            }
        };

        let mut submitted: Option<(FinalAnswer, Option<ToolCall>)> = None;
        for (action, native_call) in actions {
            match action {
                Action::ToolCall(call) => {
                    self.execute(run, call, native_call.as_ref(), research_deadline)
                        .await;
                }
                Action::Final(answer) => {
                    if submitted.is_none() {
                        submitted = Some((answer, native_call));
                    } else if let Some(extra) = native_call {
                        push_tool_reply(run, &extra, "Ignored: one final answer per turn.");
                    }
                }
            }
        }
        if let Some(update) = run.catalogue_update.take() {
            push_harness(run, update);
        }
        let Some((answer, native_call)) = submitted else {
            return RunState::Step(phase);
        };
        match phase {
            Phase::Research => {
                if let Some(refusal) = self.policy_refusal(run) {
                    run.notes.refused_finals += 1;
                    run.notes.events.push(format!(
                        "turn {turns}: final answer refused by the required-tool policy"
                    ));
                    match native_call {
                        Some(call) => push_tool_reply(run, &call, &refusal),
                        None => push_harness(run, refusal),
                    }
                    return RunState::Step(Phase::Research);
                }
                if self.settings.review.enabled {
                    let max = self.settings.review.max_review_turns;
                    run.notes
                        .events
                        .push(format!("turn {turns}: draft answer; review phase begins"));
                    let prompt = prompts::review_prompt(max);
                    match native_call {
                        Some(call) => push_tool_reply(run, &call, &prompt),
                        None => push_harness(run, prompt),
                    }
                    return RunState::Step(Phase::Review {
                        draft: answer,
                        turns_left: max,
                    });
                }
                if let Some(call) = native_call {
                    push_tool_reply(run, &call, "Final answer received.");
                }
                End::Answered(answer).into()
            }
            Phase::Review { draft, .. } => {
                run.notes.review_revised = Some(answer.final_answer != draft.final_answer);
                if let Some(call) = native_call {
                    push_tool_reply(run, &call, "Final answer received.");
                }
                End::Answered(answer).into()
            }
        }
    }

    /// The end states: a submitted answer stands; an exhausted budget gets
    /// one forced finalisation call (the fallback answer and a `_fallback`
    /// reason when it fails); a failure gets the error fallback.
    async fn finalise(&self, run: &mut Run, end: End) -> Ending {
        match end {
            End::Answered(answer) => Ending {
                answer,
                termination: TerminationReason::ModelFinal,
                error: None,
            },
            End::BudgetExhausted(reason) => {
                run.notes.forced_finalization = true;
                run.notes
                    .events
                    .push(format!("{reason}: forced finalisation call"));
                let budget = TerminationReason::from_name(reason);
                match self.forced_finalisation_call(run, reason).await {
                    Some(answer) => Ending {
                        answer,
                        termination: budget,
                        error: None,
                    },
                    None => Ending {
                        answer: FinalAnswer::fallback("budget_exhausted", reason),
                        termination: budget.fallback(),
                        error: None,
                    },
                }
            }
            End::Failed { reason, message } => {
                run.notes.events.push(format!("run failed: {message}"));
                Ending {
                    answer: FinalAnswer::fallback("error", reason),
                    termination: TerminationReason::from_name(reason),
                    error: Some(message),
                }
            }
        }
    }

    fn end_review(&self, run: &mut Run, phase: Phase, why: &str) -> RunState {
        run.notes
            .events
            .push(format!("review ended ({why}); the draft answer stands"));
        match phase {
            Phase::Review { draft, .. } => {
                run.notes.review_revised = Some(false);
                End::Answered(draft).into()
            }
            Phase::Research => End::BudgetExhausted("round_limit").into(),
        }
    }

    /// Native tool definitions: the run's offer (`None`: the final-answer
    /// tool only, for finalisation) and the final-answer tool.
    fn native_definitions(&self, run: Option<&Run>) -> Vec<ToolDefinition> {
        let mut defs = match run {
            Some(run) => match &run.catalogue {
                Some(session) => session.definitions(),
                None => self.tools.definitions(),
            },
            None => Vec::new(),
        };
        defs.push(ToolDefinition {
            name: FINAL_ANSWER_TOOL.into(),
            description: "Submit the final answer per the FINAL ANSWER CONTRACT.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "final_answer": {"description": "The exact structure requested by the public question"},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "evidence": {"type": "array", "items": {"type": "object", "properties": {
                        "claim": {"type": "string"}, "source_file": {"type": "string"},
                        "support_type": {"type": "string", "enum": ["direct_metric", "report_claim", "metadata", "image_context", "table_metric", "derived_metric", "unsupported_boundary"]}}}},
                    "reasoning_summary": {"type": "array", "items": {"type": "string"}},
                    "unsupported_or_unresolved": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["final_answer"]
            }),
        });
        defs
    }

    /// Reads a response as actions; native tool calls are paired with the
    /// call they answer.
    fn interpret(
        &self,
        response: &ChatResponse,
    ) -> std::result::Result<Vec<(Action, Option<ToolCall>)>, String> {
        if !response.tool_calls.is_empty() {
            let mut actions = Vec::new();
            for call in &response.tool_calls {
                if call.name == FINAL_ANSWER_TOOL {
                    let mut obj = match &call.arguments {
                        Value::Object(o) => o.clone(),
                        Value::String(s) => match serde_json::from_str::<Value>(s) {
                            Ok(Value::Object(o)) => o,
                            _ => return Err("final_answer arguments are not a JSON object".into()),
                        },
                        _ => return Err("final_answer arguments are not a JSON object".into()),
                    };
                    obj.insert("action".into(), json!("final_answer"));
                    let action = crate::protocol::normalise(Value::Object(obj)).map_err(|p| p.0)?;
                    actions.push((action, Some(call.clone())));
                } else {
                    let args = match &call.arguments {
                        Value::String(s) => serde_json::from_str::<Value>(s)
                            .map_err(|_| format!("arguments of `{}` are not JSON", call.name))?,
                        Value::Null => json!({}),
                        other => other.clone(),
                    };
                    let reason = response.text.trim().to_string();
                    actions.push((
                        Action::ToolCall(ToolAction {
                            tool: call.name.clone(),
                            args,
                            reason,
                        }),
                        Some(call.clone()),
                    ));
                }
            }
            return Ok(actions);
        }
        parse_reply(&response.text)
            .map(|a| vec![(a, None)])
            .map_err(|p| {
                if response.text.trim().is_empty() {
                    "the reply was empty".to_string()
                } else {
                    p.0
                }
            })
    }

    async fn call_model(
        &self,
        run: &mut Run,
        phase: &str,
        tools: Vec<ToolDefinition>,
        deadline: Instant,
        extra: Option<Message>,
    ) -> std::result::Result<ChatResponse, CallError> {
        let mut messages = build_context(&run.history, &self.settings.context);
        let compacted =
            messages.len() < run.history.len()
                && messages.iter().skip(2).take(1).any(|m| {
                    m.role == Role::User && m.content.starts_with("Research state: summary")
                });
        if compacted {
            run.notes.compacted_requests += 1;
        }
        if let Some(m) = extra {
            messages.push(m);
        }
        let request_messages = messages.len();
        let request_chars = messages.iter().map(|m| m.content.len()).sum();
        let mut request = ChatRequest::new(messages);
        request.tools = tools;
        request.json_mode = self.settings.json_mode;
        request.sampling = self.settings.sampling.clone();
        request.deadline = Some(deadline);
        let now = Instant::now();
        let remaining = deadline.saturating_duration_since(now);
        let mut log = ModelCallLog::request(phase, request_messages, request_chars, compacted);
        if remaining.is_zero() {
            log.error = Some("deadline already passed".into());
            run.model_calls.push(log);
            return Err(CallError::Deadline);
        }
        let outcome = tokio::time::timeout(remaining, self.model.chat(request)).await;
        log.latency_s = now.elapsed().as_secs_f64();
        match outcome {
            Err(_) => {
                log.error = Some(format!("no reply within {:.1} s", remaining.as_secs_f64()));
                run.model_calls.push(log);
                Err(CallError::Deadline)
            }
            Ok(Err(e @ ProviderError::DeadlineExceeded { .. })) => {
                log.error = Some("provider: deadline exceeded".into());
                log.retries = e.retries().to_vec();
                run.notes.provider_retries += log.retries.len() as u32;
                run.model_calls.push(log);
                Err(CallError::Deadline)
            }
            Ok(Err(e)) => {
                let message = e.to_string();
                log.error = Some(message.clone());
                // the retries made before the call failed stay visible in the record
                log.retries = e.retries().to_vec();
                run.notes.provider_retries += log.retries.len() as u32;
                run.model_calls.push(log);
                Err(CallError::Provider(message))
            }
            Ok(Ok(response)) => {
                run.builder.model_round(&response.usage);
                run.builder.served(&response);
                run.notes.provider_retries += response.retries.len() as u32;
                log.reply(&response);
                run.model_calls.push(log);
                Ok(response)
            }
        }
    }

    async fn execute(
        &self,
        run: &mut Run,
        call: ToolAction,
        native: Option<&ToolCall>,
        deadline: Instant,
    ) {
        run.step += 1;
        let step = run.step;
        let remaining = deadline.saturating_duration_since(Instant::now());
        let started = Instant::now();
        let ctx = run.ctx.clone().with_step(step);
        // Under a catalogue condition the model calls shown names: the
        // observation keeps the shown name, the record the real tool.
        let shown = call.tool.clone();
        let mut call = call;
        let mut settled: Option<ToolCallOutcome> = None;
        if let Some(session) = run.catalogue.as_mut() {
            match session.resolve(&call.tool, &call.args) {
                Resolution::Call(real) => call.tool = real,
                Resolution::Answer { tool, output } => {
                    call.tool = tool;
                    settled = Some(ToolCallOutcome::new(
                        call.args.clone(),
                        ToolOutput::ok(output, Vec::new()),
                    ));
                }
                Resolution::Refuse(message) => {
                    settled = Some(ToolCallOutcome::new(
                        call.args.clone(),
                        ToolOutput::error(message),
                    ));
                }
            }
        }
        let outcome = if let Some(outcome) = settled {
            outcome
        } else if remaining.is_zero() {
            ToolCallOutcome::new(
                call.args.clone(),
                ToolOutput::error("the research time ran out before the tool could run"),
            )
        } else {
            match tokio::time::timeout(
                remaining,
                self.tools.call(&ctx, &call.tool, call.args.clone()),
            )
            .await
            {
                Ok(out) => out,
                Err(_) => ToolCallOutcome::new(
                    call.args.clone(),
                    ToolOutput::error(format!(
                        "`{}` did not finish within the remaining research time ({:.1} s)",
                        call.tool,
                        remaining.as_secs_f64()
                    )),
                ),
            }
        };
        let envelope = outcome.envelope;
        let call = ToolAction {
            args: outcome.args,
            ..call
        };
        tracing::debug!(step, tool = %call.tool, ok = envelope.ok, elapsed_s = started.elapsed().as_secs_f64(), "tool call");
        self.count_specialist(run, &call, &envelope);

        // The observation the model sees: the envelope as JSON, capped.
        let envelope_json = self.tools.render_json(&json!({
            "ok": envelope.ok,
            "output": envelope.output,
            "evidence_files": envelope.evidence_files,
            "warnings": envelope.warnings,
        }));
        let header = format!("Observation for step {step} ({shown}):\n");
        let max = self
            .settings
            .budgets
            .observation_max_chars
            .saturating_sub(char_len(&header));
        let content = header + &cap_head(&envelope_json, max).0;
        let evidence: Vec<String> = envelope
            .evidence_files
            .iter()
            .map(|p| self.release_path(run, p))
            .collect();
        let status = match envelope.status {
            CallStatus::Ok => "ok",
            CallStatus::ExecutionError => "execution_error",
            CallStatus::NotApplicable => "not_applicable",
        };
        run.history.push(Entry {
            message: Message {
                role: if native.is_some() {
                    Role::Tool
                } else {
                    Role::User
                },
                content,
                tool_calls: Vec::new(),
                tool_call_id: native.map(|c| c.id.clone()),
            },
            kind: EntryKind::Observation {
                step,
                tool: shown,
                status: status.into(),
                evidence_files: evidence.clone(),
            },
        });
        if let Some(session) = run.catalogue.as_mut() {
            let observation = &run.history[run.history.len() - 1].message.content;
            if let Some(update) = session.after_observation(observation) {
                run.catalogue_update = Some(update);
            }
        }
        let record = self.tool_record(run, step, call, &envelope, evidence);
        run.builder.tool_call(record);
    }

    fn release_path(&self, run: &Run, path: &str) -> String {
        if run.release_prefix.is_empty() || path.starts_with("event_packages/") {
            path.to_string()
        } else {
            format!("{}{}", run.release_prefix, path.trim_start_matches("./"))
        }
    }

    fn tool_record(
        &self,
        run: &mut Run,
        step: u32,
        call: ToolAction,
        envelope: &ToolOutput,
        mut evidence_files: Vec<String>,
    ) -> ToolCallRecord {
        let preview = self.settings.record_output_chars;
        let output_text = render_output_text(self.tools.as_ref(), &envelope.output);
        let mut record = ToolCallRecord {
            step,
            tool: call.tool.clone(),
            ok: envelope.ok,
            reason: call.reason,
            args: call.args.clone(),
            output: TextField::new(&output_text, preview),
            code: TextField::default(),
            stdout: TextField::default(),
            stderr: TextField::default(),
            returncode: None,
            warnings: envelope.warnings.clone(),
            evidence_files: Vec::new(),
        };
        if call.tool == "python_exec" {
            if let Some(code) = call.args.get("code").and_then(Value::as_str) {
                // The public records keep a code preview, its length and a
                // SHA-1 prefix in `args`, and the code itself in a snippet.
                let sha = hex::encode(Sha1::digest(code.as_bytes()));
                let sha12 = sha.get(..12).unwrap_or(&sha).to_string();
                let path = format!("python_snippets/step_{step:02}_{sha12}.py");
                let code_preview = TextField::new(code, Some(520));
                record.args = json!({
                    "code_chars": char_len(code),
                    "code_sha1": sha12,
                    "code_preview": code_preview.text,
                    "code_path": path,
                });
                record.code = code_preview;
                run.snippets.push(Snippet {
                    path: path.clone(),
                    code: code.to_string(),
                });
                evidence_files.insert(0, path);
            }
            let field = |k: &str| {
                envelope
                    .output
                    .get(k)
                    .and_then(Value::as_str)
                    .map(|s| TextField::new(s, preview))
                    .unwrap_or_default()
            };
            record.stdout = field("stdout");
            record.stderr = field("stderr");
            record.returncode = envelope.output.get("returncode").and_then(Value::as_i64);
        }
        record.evidence_files = evidence_files;
        record
    }

    fn count_specialist(&self, run: &mut Run, call: &ToolAction, envelope: &ToolOutput) {
        let Some(policy) = &self.settings.required_tools else {
            return;
        };
        let named = if policy.specialist_tools.is_empty() {
            self.tools.is_specialist(&call.tool)
        } else {
            policy.specialist_tools.iter().any(|t| t == &call.tool)
        };
        let probe = ["operation", "mode", "method"]
            .iter()
            .any(|k| call.args.get(*k).and_then(Value::as_str) == Some("probe"));
        if !named || probe {
            return;
        }
        if let Some(required) = run.required.as_mut() {
            required.attempts += 1;
            if envelope.status == CallStatus::Ok {
                required.successful_calls += 1;
            } else {
                let class = envelope
                    .output
                    .get("failure_class")
                    .and_then(Value::as_str)
                    .map(String::from)
                    .unwrap_or_else(|| match envelope.status {
                        CallStatus::NotApplicable => "not_applicable".into(),
                        _ => "execution_error".into(),
                    });
                *required.failure_classes.entry(class).or_default() += 1;
            }
        }
        if envelope.status != CallStatus::Ok {
            return;
        }
        // serde_json with preserve_order keeps key order; sort for identity.
        let key = format!("{}\u{0}{}", call.tool, canonical(&call.args));
        if run.specialist_seen.insert(key) {
            run.specialist_counted += 1;
        }
        let counted = run.specialist_counted.min(policy.max_counted);
        run.notes.specialist_calls_counted = Some(counted);
        if let Some(required) = run.required.as_mut() {
            required.counted = counted;
            required.compliant = counted >= policy.min_successful;
        }
    }

    fn policy_refusal(&self, run: &Run) -> Option<String> {
        let policy = self.settings.required_tools.as_ref()?;
        let counted = run.specialist_counted.min(policy.max_counted);
        if counted >= policy.min_successful {
            return None;
        }
        let tools = if policy.specialist_tools.is_empty() {
            self.tools
                .definitions()
                .into_iter()
                .map(|d| d.name)
                .filter(|n| self.tools.is_specialist(n))
                .collect()
        } else {
            policy.specialist_tools.clone()
        };
        Some(prompts::required_tools_prompt(
            policy.min_successful,
            policy.target,
            counted,
            &tools,
        ))
    }

    /// The forced finalisation call after a budget ran out: no tools (native
    /// mode offers only `final_answer`), bounded by the final-call timeout
    /// and the task deadline.
    async fn forced_finalisation_call(&self, run: &mut Run, reason: &str) -> Option<FinalAnswer> {
        let task_deadline = run.task_deadline;
        let timeout_deadline = Instant::now() + self.settings.budgets.final_call_timeout;
        let deadline = timeout_deadline.min(task_deadline);
        push_harness(run, prompts::finalization_prompt(reason));
        let tools = match self.settings.protocol {
            Protocol::JsonInMessage => Vec::new(),
            Protocol::NativeTools => self.native_definitions(None),
        };
        let response = self
            .call_model(run, "finalization", tools, deadline, None)
            .await
            .ok()?;
        run.history.push(Entry {
            message: Message {
                role: Role::Assistant,
                content: response.text.clone(),
                tool_calls: response.tool_calls.clone(),
                tool_call_id: None,
            },
            kind: EntryKind::Assistant,
        });
        match self.interpret(&response) {
            Ok(actions) => actions.into_iter().find_map(|(a, _)| match a {
                Action::Final(answer) => Some(answer),
                Action::ToolCall(_) => None,
            }),
            Err(problem) => {
                run.notes
                    .events
                    .push(format!("finalisation reply unusable: {problem}"));
                None
            }
        }
    }
}

fn push_harness(run: &mut Run, text: String) {
    run.history.push(Entry {
        message: Message::user(text),
        kind: EntryKind::Harness,
    });
}

fn push_tool_reply(run: &mut Run, call: &ToolCall, text: &str) {
    run.history.push(Entry {
        message: Message {
            role: Role::Tool,
            content: text.to_string(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call.id.clone()),
        },
        kind: EntryKind::Harness,
    });
}

fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let inner: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{k:?}:{}", canonical(&map[k])))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(canonical).collect();
            format!("[{}]", inner.join(","))
        }
        other => other.to_string(),
    }
}
