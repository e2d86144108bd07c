//! Run records: `trajectory.json` in the schema of the public recorded runs
//! (`exploration/trajectories/<system>/<task>.json`), and the reference
//! runner's other artifacts (`answer.md`, `tool_trace.md`, `run_notes.md`,
//! `raw_conversation.json`), written atomically (temporary file + rename),
//! `trajectory.json` last so that its presence marks a finished run.

use crate::context::Entry;
use crate::error::{ControllerError, Result};
use crate::settings::ControllerSettings;
use earthverse_model_provider::{FinishReason, RetryAttempt, TokenUsage};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::Write;
use std::path::Path;

pub use earthverse_package_model::{RunDiagnostics, RunStatus, TerminationReason, TokenCount};

/// A text field of a recorded tool call (`{text, truncated, original_chars}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TextField {
    /// The (possibly shortened) text.
    pub text: String,
    /// Whether `text` was shortened.
    pub truncated: bool,
    /// Characters before shortening.
    pub original_chars: usize,
}

impl TextField {
    /// A text kept whole or previewed to `prefix_chars` characters.
    pub fn new(text: &str, prefix_chars: Option<usize>) -> Self {
        let original_chars = crate::text::char_len(text);
        match prefix_chars {
            Some(n) => {
                let (text, truncated) = crate::text::preview(text, n);
                Self {
                    text,
                    truncated,
                    original_chars,
                }
            }
            None => Self {
                text: text.to_string(),
                truncated: false,
                original_chars,
            },
        }
    }
}

/// One tool call as the public records keep it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// 1-based step.
    pub step: u32,
    /// Tool name as called.
    pub tool: String,
    /// Envelope `ok`.
    pub ok: bool,
    /// The model's reason.
    pub reason: String,
    /// Arguments (for `python_exec`: `code_chars`, `code_sha1`,
    /// `code_preview`, `code_path`, as in the public records).
    pub args: Value,
    /// Pretty JSON of the envelope's `output`.
    pub output: TextField,
    /// `python_exec` code preview.
    #[serde(default)]
    pub code: TextField,
    /// `python_exec` standard output.
    #[serde(default)]
    pub stdout: TextField,
    /// `python_exec` standard error.
    #[serde(default)]
    pub stderr: TextField,
    /// `python_exec` return code.
    #[serde(default)]
    pub returncode: Option<i64>,
    /// Envelope warnings.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Release-relative evidence paths.
    #[serde(default)]
    pub evidence_files: Vec<String>,
}

/// `trajectory.json`: the public recorded-run schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trajectory {
    /// Task id (`CSX-001_Q1`).
    pub task_id: String,
    /// System id.
    pub model_id: String,
    /// Display name.
    pub model_name: String,
    /// Judge scores; an empty object `{}` until judged.
    #[serde(default = "empty_object")]
    pub scores: Value,
    /// Run diagnostics: the one diagnostics type of the writer and every
    /// reader (`earthverse-run-schema`); our runner fills every field.
    pub diagnostics: RunDiagnostics,
    /// Every tool call, failed ones included.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Evidence items of the final answer.
    #[serde(default)]
    pub evidence: Vec<Value>,
    /// Reasoning summary of the final answer.
    #[serde(default)]
    pub reasoning_summary: Vec<String>,
    /// Unsupported or unresolved elements.
    #[serde(default)]
    pub unsupported_or_unresolved: Vec<String>,
    /// The submitted answer.
    pub final_answer: Value,
    /// Judge rationale; `null` until judged.
    #[serde(default)]
    pub judge_rationale: Option<Value>,
    /// What the run's tools ran on (ours; absent from the public records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<RunEnvironment>,
    /// The experimental condition of the run (ours; absent keys and an
    /// absent object mean the paper's default condition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<earthverse_package_model::RunCondition>,
    /// What a direct answer mode injected (ours; absent for interactive
    /// runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direct_input: Option<DirectInput>,
    /// Compliance with the required-tool policy (App. A.4, C.5, D.6;
    /// Table 14's Comply and Success columns); absent without the policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_tools: Option<RequiredToolOutcome>,
}

/// How a run met the required-tool compliance contract (App. C.5: at least
/// 2 successful, distinct specialist calls, target 3, at most 4 counted;
/// App. D.6: compliance apart from call success).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RequiredToolOutcome {
    /// What was required (e.g. the scientific environment `xclim`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Successful distinct calls needed (2).
    pub min_successful: usize,
    /// Target (3).
    pub target: usize,
    /// Counted at most (4).
    pub max_counted: usize,
    /// Whether the run made at least `min_successful` successful, distinct
    /// calls (capped count >= minimum).
    pub compliant: bool,
    /// Calls of the required tools (probes excluded), whatever their outcome.
    pub attempts: usize,
    /// Of those, calls that succeeded (repeats included).
    pub successful_calls: usize,
    /// Successful distinct calls counted, capped at `max_counted`.
    pub counted: usize,
    /// Failed calls by class: the outcome's `failure_class` (`adapter`,
    /// `argument`, `input_incompatibility`, `runtime`) when the tool gives
    /// one, else the call status (`execution_error`, `not_applicable`).
    pub failure_classes: std::collections::BTreeMap<String, usize>,
    /// Corrective rounds: final answers the policy refused and sent back.
    pub repair_rounds: u32,
    /// Versions of the required environment's libraries and runtimes,
    /// detected when the run was set up (absent in older records).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub versions: std::collections::BTreeMap<String, String>,
}

pub use crate::settings::RunEnvironment;

/// What a direct run injected, recorded in `trajectory.json`
/// (`direct_input`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectInput {
    /// The serialisation.
    pub mode: crate::settings::DirectMode,
    /// Package-relative files whose content was injected, in order.
    pub files: Vec<String>,
    /// Files listed but not injected, each with the reason.
    pub omitted: Vec<OmittedFile>,
    /// Characters of the serialisation.
    pub chars: usize,
    /// Its size in tokens at four characters per token (an estimate; the
    /// provider's count is in the diagnostics' `prompt_tokens`).
    pub approx_tokens: usize,
}

/// A file a serialisation left out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OmittedFile {
    /// Package-relative path.
    pub path: String,
    /// Why (`budget`, `not text`, the tool's refusal, ...).
    pub reason: String,
}

impl Trajectory {
    /// Reads a `trajectory.json` (ours or a public recorded run).
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|source| ControllerError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| ControllerError::Json {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Whether the run finished (`run_status: ok`).
    pub fn is_ok(&self) -> bool {
        self.diagnostics.run_status == Some(RunStatus::Ok)
    }
}

/// `run_status` as written in the Markdown artifacts (`error` when a
/// record read back has none).
fn status_name(d: &RunDiagnostics) -> String {
    d.run_status.unwrap_or(RunStatus::Error).to_string()
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// One model call, for `raw_conversation.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelCallLog {
    /// `research`, `review` or `finalization`.
    pub phase: String,
    /// Messages sent (after compaction).
    pub request_messages: usize,
    /// Characters sent.
    pub request_chars: usize,
    /// Whether older observations were summarised for this request.
    pub compacted: bool,
    /// Reply text (empty on failure).
    pub text: String,
    /// Native tool calls of the reply.
    pub tool_calls: Vec<earthverse_model_provider::ToolCall>,
    /// Finish reason.
    pub finish_reason: Option<FinishReason>,
    /// Token usage.
    pub usage: TokenUsage,
    /// Seconds, retries included.
    pub latency_s: f64,
    /// Provider retries before the reply.
    pub retries: Vec<RetryAttempt>,
    /// Error when the call failed.
    pub error: Option<String>,
    /// Raw response body.
    pub raw: Option<Value>,
}

impl ModelCallLog {
    /// The log of a request about to be sent (`phase`, its size, whether
    /// older observations were summarised); the reply fills in the rest.
    pub fn request(phase: &str, messages: usize, chars: usize, compacted: bool) -> Self {
        Self {
            phase: phase.to_string(),
            request_messages: messages,
            request_chars: chars,
            compacted,
            text: String::new(),
            tool_calls: Vec::new(),
            finish_reason: None,
            usage: TokenUsage::default(),
            latency_s: 0.0,
            retries: Vec::new(),
            error: None,
            raw: None,
        }
    }

    /// Records a successful reply: text, calls, finish reason, usage,
    /// retries, the raw body, and the longer of the measured and the
    /// reported latency.
    pub fn reply(&mut self, response: &earthverse_model_provider::ChatResponse) {
        self.text = response.text.clone();
        self.tool_calls = response.tool_calls.clone();
        self.finish_reason = Some(response.finish_reason.clone());
        self.usage = response.usage;
        self.latency_s = response.latency.as_secs_f64().max(self.latency_s);
        self.retries = response.retries.clone();
        self.raw = response.raw.clone();
    }
}

/// Controller-side facts of a run, for `run_notes.md`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunNotes {
    /// Protocol used.
    pub protocol: String,
    /// Format repairs used.
    pub repairs_used: u32,
    /// Whether the forced finalisation call was made.
    pub forced_finalization: bool,
    /// Review turns used (0 when review is off).
    pub review_turns: u32,
    /// Whether the review revised the draft answer.
    pub review_revised: Option<bool>,
    /// Specialist calls counted by the required-tool policy (capped).
    pub specialist_calls_counted: Option<usize>,
    /// Final answers refused by the required-tool policy.
    pub refused_finals: u32,
    /// Requests whose older observations were summarised.
    pub compacted_requests: u32,
    /// Provider retries over all calls.
    pub provider_retries: u32,
    /// Free-form events, in order.
    pub events: Vec<String>,
}

/// A Python snippet executed during the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Snippet {
    /// Run-relative path (`python_snippets/step_05_<sha1>.py`).
    pub path: String,
    /// Full code.
    pub code: String,
}

/// Everything a run produced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The public-schema record.
    pub trajectory: Trajectory,
    /// Confidence of the final answer.
    pub confidence: Option<f64>,
    /// The full, uncompacted conversation.
    pub conversation: Vec<Entry>,
    /// Every model call.
    pub model_calls: Vec<ModelCallLog>,
    /// Controller notes.
    pub notes: RunNotes,
    /// Python snippets.
    pub snippets: Vec<Snippet>,
    /// Settings the run used.
    pub settings: ControllerSettings,
}

impl RunRecord {
    /// An `error` record for a run that could not even start (bad task,
    /// provider construction failure). It scores zero.
    pub fn error(task_id: &str, model_id: &str, message: &str) -> Self {
        let answer = crate::protocol::FinalAnswer::fallback("error", "controller_error");
        Self {
            trajectory: Trajectory {
                task_id: task_id.to_string(),
                model_id: model_id.to_string(),
                model_name: model_id.to_string(),
                scores: empty_object(),
                diagnostics: RunDiagnostics {
                    run_status: Some(RunStatus::Error),
                    termination_reason: Some(TerminationReason::ControllerError),
                    latency_s: Some(0.0),
                    tool_calls: Some(0),
                    model_rounds: Some(0),
                    file_reads: Some(0),
                    unique_evidence_files: Some(0),
                    python_calls: Some(0),
                    tool_errors: Some(0),
                    prompt_tokens: Some(0),
                    completion_tokens: Some(0),
                    total_tokens: Some(TokenCount::Count(0)),
                    cached_tokens: Some(0),
                    cost_usd: Some(None),
                    error: Some(message.to_string()),
                    extra: serde_json::Map::new(),
                },
                tool_calls: Vec::new(),
                evidence: Vec::new(),
                reasoning_summary: answer.reasoning_summary,
                unsupported_or_unresolved: answer.unsupported_or_unresolved,
                final_answer: answer.final_answer,
                judge_rationale: None,
                environment: None,
                condition: None,
                direct_input: None,
                required_tools: None,
            },
            confidence: None,
            conversation: Vec::new(),
            model_calls: Vec::new(),
            notes: RunNotes {
                events: vec![format!("run failed before it started: {message}")],
                ..RunNotes::default()
            },
            snippets: Vec::new(),
            settings: ControllerSettings::default(),
        }
    }

    /// Writes every artifact into `dir` (created if needed), each atomically,
    /// `trajectory.json` last.
    pub fn write_to(&self, dir: &Path) -> Result<()> {
        std::fs::create_dir_all(dir).map_err(|source| ControllerError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        for snippet in &self.snippets {
            write_atomic(&dir.join(&snippet.path), snippet.code.as_bytes())?;
        }
        write_atomic(&dir.join("answer.md"), self.answer_md().as_bytes())?;
        write_atomic(&dir.join("tool_trace.md"), self.tool_trace_md().as_bytes())?;
        write_atomic(&dir.join("run_notes.md"), self.run_notes_md().as_bytes())?;
        let raw = serde_json::json!({
            "task_id": self.trajectory.task_id,
            "model_id": self.trajectory.model_id,
            "settings": self.settings,
            "messages": self.conversation,
            "model_calls": self.model_calls,
        });
        write_json_atomic(&dir.join("raw_conversation.json"), &raw)?;
        write_json_atomic(&dir.join("trajectory.json"), &self.trajectory)
    }

    /// `answer.md`.
    pub fn answer_md(&self) -> String {
        let t = &self.trajectory;
        let mut out = format!(
            "# Answer: {} ({})\n\nrun_status: {} · termination: {}\n\n## Final answer\n\n```json\n{}\n```\n",
            t.task_id,
            t.model_id,
            status_name(&t.diagnostics),
            t.diagnostics
                .termination_reason
                .as_ref()
                .map_or_else(|| "none".to_string(), TerminationReason::name),
            serde_json::to_string_pretty(&t.final_answer).unwrap_or_default()
        );
        if let Some(c) = self.confidence {
            out.push_str(&format!("\nConfidence: {c}\n"));
        }
        out.push_str("\n## Evidence\n\n");
        for e in &t.evidence {
            let field = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
            out.push_str(&format!(
                "- {} — `{}` ({})\n",
                field("claim"),
                field("source_file"),
                field("support_type")
            ));
        }
        out.push_str("\n## Reasoning summary\n\n");
        for (i, s) in t.reasoning_summary.iter().enumerate() {
            out.push_str(&format!("{}. {s}\n", i + 1));
        }
        out.push_str("\n## Unsupported or unresolved\n\n");
        for s in &t.unsupported_or_unresolved {
            out.push_str(&format!("- {s}\n"));
        }
        out
    }

    /// `tool_trace.md`.
    pub fn tool_trace_md(&self) -> String {
        let mut out = format!(
            "# Tool trace: {} ({})\n\n",
            self.trajectory.task_id, self.trajectory.model_id
        );
        for c in &self.trajectory.tool_calls {
            out.push_str(&format!(
                "## Step {} · `{}` · {}\n\nReason: {}\n\nArguments:\n\n```json\n{}\n```\n\nOutput:\n\n```\n{}\n```\n",
                c.step,
                c.tool,
                if c.ok { "ok" } else { "failed" },
                c.reason,
                serde_json::to_string_pretty(&c.args).unwrap_or_default(),
                c.output.text
            ));
            if !c.warnings.is_empty() {
                out.push_str(&format!("\nWarnings: {}\n", c.warnings.join("; ")));
            }
            if !c.evidence_files.is_empty() {
                out.push_str(&format!("\nEvidence: {}\n", c.evidence_files.join(", ")));
            }
            out.push('\n');
        }
        out
    }

    /// `run_notes.md`.
    pub fn run_notes_md(&self) -> String {
        let d = &self.trajectory.diagnostics;
        let n = &self.notes;
        let mut out = format!(
            "# Run notes: {} ({})\n\n| field | value |\n|---|---|\n",
            self.trajectory.task_id, self.trajectory.model_id
        );
        let count = |v: Option<u64>| v.unwrap_or(0).to_string();
        let rows: Vec<(&str, String)> = vec![
            ("run_status", status_name(d)),
            (
                "termination_reason",
                d.termination_reason
                    .as_ref()
                    .map(TerminationReason::name)
                    .unwrap_or_default(),
            ),
            ("latency_s", format!("{:.3}", d.latency_s.unwrap_or(0.0))),
            ("model_rounds", count(d.model_rounds)),
            ("tool_calls", count(d.tool_calls)),
            ("tool_errors", count(d.tool_errors)),
            ("file_reads", count(d.file_reads)),
            ("python_calls", count(d.python_calls)),
            ("unique_evidence_files", count(d.unique_evidence_files)),
            ("prompt_tokens", count(d.prompt_tokens)),
            ("completion_tokens", count(d.completion_tokens)),
            ("cached_tokens", count(d.cached_tokens)),
            (
                "cost_usd",
                d.cost()
                    .map(|c| format!("{c:.6}"))
                    .unwrap_or("unknown".into()),
            ),
            ("protocol", n.protocol.clone()),
            ("repairs_used", n.repairs_used.to_string()),
            ("forced_finalization", n.forced_finalization.to_string()),
            ("review_turns", n.review_turns.to_string()),
            (
                "specialist_calls_counted",
                n.specialist_calls_counted
                    .map(|c| c.to_string())
                    .unwrap_or("policy off".into()),
            ),
            ("refused_finals", n.refused_finals.to_string()),
            ("compacted_requests", n.compacted_requests.to_string()),
            ("provider_retries", n.provider_retries.to_string()),
        ];
        for (k, v) in rows {
            out.push_str(&format!("| {k} | {v} |\n"));
        }
        if let Some(e) = &d.error {
            out.push_str(&format!("\n## Error\n\n{e}\n"));
        }
        out.push_str("\n## Events\n\n");
        for e in &n.events {
            out.push_str(&format!("- {e}\n"));
        }
        out.push_str(&format!(
            "\n## Budgets\n\n```json\n{}\n```\n",
            serde_json::to_string_pretty(&self.settings.budgets).unwrap_or_default()
        ));
        out
    }
}

/// Writes `bytes` to `path` atomically
/// ([`earthverse_package_model::output::write_atomic`], the workspace's one
/// atomic writer).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    earthverse_package_model::output::write_atomic(path, |file| file.write_all(bytes)).map_err(
        |e| match e {
            earthverse_package_model::OutputError::Write { path, source } => {
                ControllerError::Io { path, source }
            }
            other => ControllerError::Io {
                path: path.to_path_buf(),
                source: std::io::Error::other(other.to_string()),
            },
        },
    )
}

/// Serialises `value` as pretty JSON and writes it atomically.
pub fn write_json_atomic<T: Serialize + ?Sized>(path: &Path, value: &T) -> Result<()> {
    let text = serde_json::to_string_pretty(value).map_err(|source| ControllerError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    write_atomic(path, text.as_bytes())
}

/// Builds a run record from the steps a solver reports (each successful
/// model call with its token usage, each tool call), deriving every
/// diagnostics figure the public records hold (rounds, calls, reads,
/// distinct evidence files, Python calls, tool errors, tokens, cost,
/// latency), so a solver never fills them by hand. Our `Controller` builds
/// its records with it; so can any other [`crate::Solver`].
#[derive(Debug, Clone)]
pub struct RunRecordBuilder {
    task_id: String,
    model_id: String,
    model_name: Option<String>,
    started: std::time::Instant,
    rounds: u32,
    usage: TokenUsage,
    tool_calls: Vec<ToolCallRecord>,
    price: Option<crate::settings::Price>,
    environment: Option<RunEnvironment>,
    settings: ControllerSettings,
}

impl RunRecordBuilder {
    /// A run of `model_id` on `task_id`, starting now.
    pub fn new(task_id: impl Into<String>, model_id: impl Into<String>) -> Self {
        Self {
            task_id: task_id.into(),
            model_id: model_id.into(),
            model_name: None,
            started: std::time::Instant::now(),
            rounds: 0,
            usage: TokenUsage::default(),
            tool_calls: Vec::new(),
            price: None,
            environment: None,
            settings: ControllerSettings::default(),
        }
    }

    /// The run started at `started` (latency is measured from it).
    pub fn started_at(mut self, started: std::time::Instant) -> Self {
        self.started = started;
        self
    }

    /// Display name (default: the model id).
    pub fn model_name(mut self, name: Option<String>) -> Self {
        self.model_name = name;
        self
    }

    /// Price for `cost_usd` (`None` writes `null`).
    pub fn price(mut self, price: Option<crate::settings::Price>) -> Self {
        self.price = price;
        self
    }

    /// What the tools ran on (`environment` of the record).
    pub fn environment(mut self, environment: Option<RunEnvironment>) -> Self {
        self.environment = environment;
        self
    }

    /// The settings written into `raw_conversation.json`.
    pub fn settings(mut self, settings: ControllerSettings) -> Self {
        self.settings = settings;
        self
    }

    /// One successful model call and its usage.
    pub fn model_round(&mut self, usage: &TokenUsage) {
        self.rounds += 1;
        self.usage.prompt_tokens += usage.prompt_tokens;
        self.usage.completion_tokens += usage.completion_tokens;
        self.usage.cached_tokens += usage.cached_tokens;
    }

    /// The model that served a response, kept from the first response
    /// that names one (`environment.served_model`).
    pub fn served(&mut self, response: &earthverse_model_provider::ChatResponse) {
        let known = self
            .environment
            .as_ref()
            .is_some_and(|e| e.served_model.is_some());
        if known {
            return;
        }
        if let Some(served) = response.served_model() {
            self.environment
                .get_or_insert_with(RunEnvironment::default)
                .served_model = Some(served);
        }
    }

    /// One tool call, failed ones included.
    pub fn tool_call(&mut self, record: ToolCallRecord) {
        self.tool_calls.push(record);
    }

    /// The tool calls so far.
    pub fn tool_calls(&self) -> &[ToolCallRecord] {
        &self.tool_calls
    }

    /// The diagnostics of the run so far, ended with `status` for
    /// `termination` (and, for a failed run, `error`).
    pub fn diagnostics(
        &self,
        status: RunStatus,
        termination: TerminationReason,
        error: Option<String>,
    ) -> RunDiagnostics {
        let records = &self.tool_calls;
        let count = |names: &[&str]| {
            records
                .iter()
                .filter(|r| names.contains(&r.tool.as_str()))
                .count() as u64
        };
        let unique: std::collections::BTreeSet<&str> = records
            .iter()
            .flat_map(|r| r.evidence_files.iter().map(String::as_str))
            .collect();
        let usage = self.usage;
        RunDiagnostics {
            run_status: Some(status),
            termination_reason: Some(termination),
            latency_s: Some((self.started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0),
            tool_calls: Some(records.len() as u64),
            model_rounds: Some(u64::from(self.rounds)),
            file_reads: Some(count(&[
                "read_text_file",
                "summarize_table_or_json",
                "inspect_image",
            ])),
            unique_evidence_files: Some(unique.len() as u64),
            python_calls: Some(count(&["python_exec"])),
            tool_errors: Some(records.iter().filter(|r| !r.ok).count() as u64),
            prompt_tokens: Some(usage.prompt_tokens),
            completion_tokens: Some(usage.completion_tokens),
            total_tokens: Some(TokenCount::Count(usage.total())),
            cached_tokens: Some(usage.cached_tokens),
            cost_usd: Some(self.price.map(|p| {
                p.cost(
                    usage.prompt_tokens,
                    usage.cached_tokens,
                    usage.completion_tokens,
                )
            })),
            error,
            extra: serde_json::Map::new(),
        }
    }

    /// The record of a run that ended with `answer`: `ok` unless
    /// `termination` is a failure (`format_error`, `model_error`,
    /// `controller_error`), with `error` saying why.
    pub fn finish(
        self,
        answer: crate::protocol::FinalAnswer,
        termination: TerminationReason,
        error: Option<String>,
    ) -> RunRecord {
        let status = if termination.is_failure() {
            RunStatus::Error
        } else {
            RunStatus::Ok
        };
        let diagnostics = self.diagnostics(status, termination, error);
        let model_name = self.model_name.unwrap_or_else(|| self.model_id.clone());
        RunRecord {
            trajectory: Trajectory {
                task_id: self.task_id,
                model_id: self.model_id,
                model_name,
                scores: empty_object(),
                diagnostics,
                tool_calls: self.tool_calls,
                evidence: answer.evidence,
                reasoning_summary: answer.reasoning_summary,
                unsupported_or_unresolved: answer.unsupported_or_unresolved,
                final_answer: answer.final_answer,
                judge_rationale: None,
                environment: self.environment,
                condition: self.settings.condition.clone(),
                direct_input: None,
                required_tools: None,
            },
            confidence: answer.confidence,
            conversation: Vec::new(),
            model_calls: Vec::new(),
            notes: RunNotes::default(),
            snippets: Vec::new(),
            settings: self.settings,
        }
    }
}
