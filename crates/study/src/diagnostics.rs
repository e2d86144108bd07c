//! Trajectory diagnostics of a condition's runs: the per-task means of
//! Tables 9 and 10 (reasoning modes, direct serialisation), Table 12
//! (system ablations) and Table 13 (interventions). They are reported
//! beside the scores and never enter them (§4.1).

use crate::error::{io, Error, Result};
use earthverse_package_model::RecordedRun;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// File reads of Tables 2, 9 and 13: the research tools that read a file.
pub const READ_TOOLS: [&str; 3] = ["read_text_file", "summarize_table_or_json", "inspect_image"];

/// Per-task means of one condition's runs (Tables 9, 10, 12, 13).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Diagnostics {
    /// Runs found.
    pub runs: usize,
    /// Model rounds.
    pub rounds: f64,
    /// Tool calls.
    pub tool_calls: f64,
    /// Tool calls that returned normally (Table 12 "Calls OK").
    pub calls_ok: f64,
    /// Tool calls that did not (Table 12 "Calls failed").
    pub calls_failed: f64,
    /// Share of tool calls that returned normally, in percent (`None`
    /// without calls).
    pub tool_success_pct: Option<f64>,
    /// `list_package_files` calls.
    pub lists: f64,
    /// `search_package_files` calls.
    pub searches: f64,
    /// File reads ([`READ_TOOLS`]).
    pub reads: f64,
    /// Distinct evidence files (`unique_evidence_files`).
    pub files: f64,
    /// Evidence references of the answer (entries of the run's `evidence`).
    pub evidence_refs: f64,
    /// `python_exec` calls.
    pub python_calls: f64,
    /// Files injected by a direct answer mode (`direct_input.files`; Table
    /// 10), over the runs that record a direct input; `None` when none does.
    pub injected_files: Option<f64>,
    /// Prompt (input) tokens.
    pub prompt_tokens: f64,
    /// Completion (output) tokens.
    pub completion_tokens: f64,
    /// Total tokens.
    pub total_tokens: f64,
    /// Cached prompt tokens, over the runs that record them; `None` when
    /// none does.
    pub cached_tokens: Option<f64>,
    /// Latency in seconds.
    pub latency_s: f64,
    /// Share of runs that met the required-tool compliance contract, in
    /// percent (Table 14 "Comply"; the run's `required_tools.compliant`),
    /// over the runs that record it; `None` when none does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comply_pct: Option<f64>,
    /// Share of the required specialist calls that succeeded, in percent
    /// (Table 14 "Success": `required_tools.successful_calls` over
    /// `attempts`, pooled over the runs); `None` without attempts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub specialist_success_pct: Option<f64>,
}

#[derive(Default)]
struct Sums {
    runs: usize,
    rounds: f64,
    calls: usize,
    calls_ok: usize,
    lists: f64,
    searches: f64,
    reads: f64,
    files: f64,
    refs: f64,
    python: f64,
    injected: (f64, usize),
    prompt: f64,
    completion: f64,
    total: f64,
    cached: (f64, usize),
    latency: f64,
    compliant: (usize, usize),
    specialist: (u64, u64),
}

impl Diagnostics {
    /// The per-task means of `runs`.
    pub fn of_runs<'a>(runs: impl IntoIterator<Item = &'a RecordedRun>) -> Self {
        let mut s = Sums::default();
        for run in runs {
            let d = &run.diagnostics;
            let count = |names: &[&str]| {
                run.tool_calls
                    .iter()
                    .filter(|c| names.contains(&c.tool.as_str()))
                    .count() as f64
            };
            s.runs += 1;
            s.rounds += d.model_rounds.unwrap_or(0) as f64;
            s.calls += run.tool_calls.len();
            s.calls_ok += run.tool_calls.iter().filter(|c| c.ok == Some(true)).count();
            s.lists += count(&["list_package_files"]);
            s.searches += count(&["search_package_files"]);
            s.reads += count(&READ_TOOLS);
            s.files += d.unique_evidence_files.unwrap_or(0) as f64;
            s.refs += run.evidence.len() as f64;
            s.python += count(&["python_exec"]);
            if let Some(files) = injected_files(run) {
                s.injected.0 += files as f64;
                s.injected.1 += 1;
            }
            s.prompt += d.prompt_tokens.unwrap_or(0) as f64;
            s.completion += d.completion_tokens.unwrap_or(0) as f64;
            s.total += d.total_tokens().unwrap_or(0) as f64;
            if let Some(cached) = d.cached_tokens {
                s.cached.0 += cached as f64;
                s.cached.1 += 1;
            }
            s.latency += d.latency_s.unwrap_or(0.0);
            if let Some(r) = run.extra.get("required_tools") {
                s.compliant.1 += 1;
                if r.get("compliant").and_then(Value::as_bool) == Some(true) {
                    s.compliant.0 += 1;
                }
                let n = |k: &str| r.get(k).and_then(Value::as_u64).unwrap_or(0);
                s.specialist.0 += n("successful_calls");
                s.specialist.1 += n("attempts");
            }
        }
        let n = s.runs.max(1) as f64;
        let mean_of = |(sum, k): (f64, usize)| (k > 0).then(|| sum / k as f64);
        Diagnostics {
            runs: s.runs,
            rounds: s.rounds / n,
            tool_calls: s.calls as f64 / n,
            calls_ok: s.calls_ok as f64 / n,
            calls_failed: (s.calls - s.calls_ok) as f64 / n,
            tool_success_pct: (s.calls > 0).then(|| 100.0 * s.calls_ok as f64 / s.calls as f64),
            lists: s.lists / n,
            searches: s.searches / n,
            reads: s.reads / n,
            files: s.files / n,
            evidence_refs: s.refs / n,
            python_calls: s.python / n,
            injected_files: mean_of(s.injected),
            prompt_tokens: s.prompt / n,
            completion_tokens: s.completion / n,
            total_tokens: s.total / n,
            cached_tokens: mean_of(s.cached),
            latency_s: s.latency / n,
            comply_pct: (s.compliant.1 > 0)
                .then(|| 100.0 * s.compliant.0 as f64 / s.compliant.1 as f64),
            specialist_success_pct: (s.specialist.1 > 0)
                .then(|| 100.0 * s.specialist.0 as f64 / s.specialist.1 as f64),
        }
    }

    /// The per-task means of the runs of `tasks` under `dir`
    /// (`<dir>/<task>/trajectory.json`); tasks without a run are skipped.
    ///
    /// # Errors
    /// [`Error::Io`] or [`Error::Run`] for a run file that does not read.
    pub fn of_dir(dir: &Path, tasks: &[String]) -> Result<Self> {
        let mut runs = Vec::new();
        for task in tasks {
            let path = dir.join(task).join("trajectory.json");
            if !path.is_file() {
                continue;
            }
            let text = std::fs::read_to_string(&path).map_err(io(&path))?;
            let run: RecordedRun = serde_json::from_str(&text).map_err(|e| Error::Run {
                path: path.clone(),
                message: format!("not a run record: {e}"),
            })?;
            runs.push(run);
        }
        Ok(Self::of_runs(&runs))
    }
}

/// Files a direct answer mode injected: the length of the record's
/// `direct_input.files` (agent-controller's `DirectInput`).
pub fn injected_files(run: &RecordedRun) -> Option<usize> {
    run.extra
        .get("direct_input")?
        .get("files")
        .and_then(Value::as_array)
        .map(Vec::len)
}
