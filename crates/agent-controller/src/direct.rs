//! The direct answer modes of the answer-mode study (paper §5.2, App. A.1,
//! Tables 3 and 10): the package is serialised once, deterministically,
//! and the model answers in one call with no tools.
//!
//! - **compressed direct** (`compressed-direct`): a bounded evidence
//!   summary. Every package file in path order gets one entry, by what its
//!   bytes are (sniffed as the tools do, never by suffix: a `.bin` holding
//!   HTML is text): tables and JSON through `summarize_table_or_json`, text
//!   documents through the head of `read_text_file`, other files (images,
//!   rasters, archives) as one inventory line; each entry capped at
//!   [`DirectSettings::per_file_chars`], the whole at
//!   [`DirectSettings::budget_chars`].
//! - **all-text direct** (`all-text-direct`): every readable file's text
//!   through `read_text_file`, in path order, until the budget is spent.
//!
//! Files are read through the run's tool box, so the same evidence-access
//! rules hold as in an interactive run (hidden task files are refused and
//! never serialised). The budgets are ours, sized after Table 10's input
//! means (≈13k tokens compressed, ≈81k tokens all-text, at about four
//! characters per token). The record keeps what was injected
//! ([`DirectInput`]: files, characters, omitted files and why).

use crate::protocol::{parse_reply, Action, FinalAnswer};
use crate::record::{ModelCallLog, RunRecord, RunRecordBuilder, TerminationReason};
use crate::settings::ControllerSettings;
use crate::task::TaskInput;
use crate::toolbox::{render_output_text, ToolBox};
use earthverse_model_provider::{ChatModel, ChatRequest, Message};
use earthverse_package_model::evidence::list_package_files;
use earthverse_package_model::{sniff_file, FileKind};
use serde_json::json;
use std::time::Instant;

pub use crate::record::{DirectInput, OmittedFile};
pub use crate::settings::{DirectMode, DirectSettings};

/// A serialisation and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Serialisation {
    /// The text injected into the task message.
    pub text: String,
    /// What it holds.
    pub input: DirectInput,
}

/// Kinds the compressed serialisation summarises as tables (JSON, CSV,
/// Parquet); other textual kinds are read as text.
fn is_table(kind: FileKind) -> bool {
    matches!(kind, FileKind::Json | FileKind::Csv | FileKind::Parquet)
}

fn suffix(path: &str) -> String {
    std::path::Path::new(path)
        .extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default()
}

fn cap(text: &str, max_chars: usize) -> String {
    crate::text::cap_head(text, max_chars).0
}

/// Serialises the package of `task` for `settings.mode`, reading through
/// `tools` (the six research tools must be among them).
pub async fn serialise(
    tools: &dyn ToolBox,
    task: &TaskInput,
    settings: &DirectSettings,
) -> Serialisation {
    let ctx = task.tool_context();
    let files = list_package_files(&task.package_root).unwrap_or_default();
    let mut text = String::new();
    let mut input = DirectInput {
        mode: settings.mode,
        files: Vec::new(),
        omitted: Vec::new(),
        chars: 0,
        approx_tokens: 0,
    };
    let mut used = 0usize;
    for file in files {
        let path = file.package_relative.clone();
        let remaining = settings.budget_chars.saturating_sub(used);
        if remaining == 0 {
            input.omitted.push(OmittedFile {
                path,
                reason: "budget".into(),
            });
            continue;
        }
        let kind = suffix(&path);
        // What the bytes are, as the tools judge them (a `.bin` holding
        // HTML or JSON is text; suffixes are never trusted).
        let sniffed = sniff_file(&task.package_root.join(&path)).ok();
        let header = format!(
            "### FILE: {} ({} bytes)\n",
            ctx.release_path(&path),
            file.bytes
        );
        let max_chars = match settings.mode {
            DirectMode::Compressed => settings.per_file_chars,
            DirectMode::AllText => remaining.min(settings.per_file_chars),
        };
        let read_text = (
            "read_text_file",
            json!({"path": path, "max_chars": max_chars}),
        );
        // The tools to try, in order; the first that reads the file wins (a
        // JSON document in a `.bin` is no table to `summarize_table_or_json`,
        // which keeps the reference's suffix rule, but `read_text_file`
        // reads it by content).
        let calls: Vec<(&str, serde_json::Value)> = match settings.mode {
            DirectMode::Compressed if sniffed.is_some_and(is_table) => vec![
                ("summarize_table_or_json", json!({"path": path})),
                read_text,
            ],
            DirectMode::Compressed if sniffed.is_some_and(FileKind::is_textual) => vec![read_text],
            DirectMode::Compressed => Vec::new(),
            DirectMode::AllText => vec![read_text],
        };
        if calls.is_empty() {
            // An inventory line: the model knows the file exists.
            let entry = format!("{header}(not serialised: .{kind} file)\n\n");
            if entry.chars().count() <= remaining {
                used += entry.chars().count();
                text.push_str(&entry);
            }
            input.omitted.push(OmittedFile {
                path,
                reason: format!("not text (.{kind})"),
            });
            continue;
        }
        let mut body = None;
        let mut refusals = Vec::new();
        for (tool, args) in calls {
            let outcome = tools.call(&ctx, tool, args).await;
            if !outcome.envelope.ok {
                let why = render_output_text(tools, &outcome.envelope.output);
                refusals.push(format!("{tool} refused: {}", cap(&why, 200)));
                continue;
            }
            body = Some(match (tool, &outcome.envelope.output) {
                ("read_text_file", v) => v
                    .get("text")
                    .and_then(|t| t.as_str())
                    .map(str::to_string)
                    .unwrap_or_else(|| render_output_text(tools, v)),
                (_, v) => render_output_text(tools, v),
            });
            break;
        }
        let Some(body) = body else {
            input.omitted.push(OmittedFile {
                path,
                reason: refusals.join("; "),
            });
            continue;
        };
        let room = remaining
            .saturating_sub(header.chars().count() + 2)
            .min(settings.per_file_chars);
        if room == 0 {
            input.omitted.push(OmittedFile {
                path,
                reason: "budget".into(),
            });
            continue;
        }
        let entry = format!("{header}{}\n\n", cap(&body, room));
        used += entry.chars().count();
        text.push_str(&entry);
        input.files.push(path);
    }
    input.chars = text.chars().count();
    input.approx_tokens = input.chars.div_ceil(4);
    Serialisation { text, input }
}

/// System message of a direct run (ours: the paper does not print the
/// direct prompts). It keeps the SOLVER prompt's evidence rules and the
/// FINAL ANSWER CONTRACT, without tools.
pub fn direct_system_message() -> String {
    format!(
        "You are an extreme-event benchmark solver. Answer the task from the event-package \
         evidence given in the task message only; no tools are available and no further \
         evidence can be requested. Do not use web knowledge. Reply with exactly one JSON \
         object that follows the FINAL ANSWER CONTRACT.\n\n{}",
        crate::prompts::FINAL_ANSWER_CONTRACT
    )
}

/// Task message of a direct run: the App. E task header with the
/// serialisation in place of the tool catalogue.
pub fn direct_task_message(task: &TaskInput, serialisation: &str) -> String {
    format!(
        "Task id: {}\nEvent id: {}\nEvent package path: {}\nQuestion:\n{}\n\
         Evidence boundary:\nStrict package-only mode: only the current question and the \
         package evidence below are visible.\nPackage evidence (a fixed serialisation made \
         before this call):\n{}",
        task.task_id,
        task.event_id,
        task.package_root.display(),
        task.question,
        serialisation
    )
}

/// Runs `task` in a direct mode: serialise, one model call with no tools,
/// parse the final answer. A reply that is not a final answer fails the run
/// (`format_error`, scored zero); a model failure is `model_error`; no
/// reply before the task's wall clock ends is `research_time_limit_fallback`.
pub async fn run_direct(
    model: &dyn ChatModel,
    tools: &dyn ToolBox,
    settings: &ControllerSettings,
    direct: &DirectSettings,
    model_id: String,
    task: &TaskInput,
) -> RunRecord {
    let start = Instant::now();
    let mut builder = RunRecordBuilder::new(task.task_id.clone(), model_id)
        .started_at(start)
        .model_name(settings.model_name.clone())
        .price(settings.price)
        .environment(settings.environment.clone())
        .settings(settings.clone());
    let serialisation = serialise(tools, task, direct).await;
    let messages = vec![
        Message::system(direct_system_message()),
        Message::user(direct_task_message(task, &serialisation.text)),
    ];
    let request_chars = messages.iter().map(|m| m.content.len()).sum();
    let mut request = ChatRequest::new(messages.clone());
    request.json_mode = settings.json_mode;
    request.sampling = settings.sampling.clone();
    let deadline = start + settings.budgets.task_time;
    request.deadline = Some(deadline);
    let mut log = ModelCallLog::request("direct", messages.len(), request_chars, false);
    let call_start = Instant::now();
    let remaining = deadline.saturating_duration_since(call_start);
    let outcome = tokio::time::timeout(remaining, model.chat(request)).await;
    log.latency_s = call_start.elapsed().as_secs_f64();
    let (answer, termination, error) = match outcome {
        Err(_) => {
            log.error = Some(format!("no reply within {:.1} s", remaining.as_secs_f64()));
            (
                FinalAnswer::fallback("budget_exhausted", "research_time_limit"),
                TerminationReason::ResearchTimeLimit.fallback(),
                None,
            )
        }
        Ok(Err(e)) => {
            let message = e.to_string();
            log.error = Some(message.clone());
            log.retries = e.retries().to_vec();
            (
                FinalAnswer::fallback("error", "model_error"),
                TerminationReason::ModelError,
                Some(message),
            )
        }
        Ok(Ok(response)) => {
            builder.model_round(&response.usage);
            builder.served(&response);
            log.reply(&response);
            match parse_reply(&response.text) {
                Ok(Action::Final(answer)) => (answer, TerminationReason::ModelFinal, None),
                Ok(Action::ToolCall(call)) => (
                    FinalAnswer::fallback("error", "format_error"),
                    TerminationReason::FormatError,
                    Some(format!(
                        "direct mode offers no tools, but the reply called `{}`",
                        call.tool
                    )),
                ),
                Err(problem) => (
                    FinalAnswer::fallback("error", "format_error"),
                    TerminationReason::FormatError,
                    Some(format!("the reply is not a final answer: {problem}")),
                ),
            }
        }
    };
    let mut record = builder.finish(answer, termination, error);
    record.trajectory.direct_input = Some(serialisation.input);
    record.conversation = messages
        .into_iter()
        .enumerate()
        .map(|(i, message)| crate::context::Entry {
            message,
            kind: if i == 0 {
                crate::context::EntryKind::System
            } else {
                crate::context::EntryKind::Task
            },
        })
        .collect();
    record.model_calls = vec![log];
    record.notes.protocol = "direct".into();
    record
}
