//! The LLM judge: the paper's judge prompt through any [`ChatModel`].

use crate::cache::{cache_key, JudgeCache};
use crate::error::{JudgeError, Result};
use crate::evidence::ClaimSource;
use crate::input::{RunContext, TaskContext};
use crate::judge::Judge;
use crate::parse::parse_judge_reply;
use crate::prompt::{render_judge_user_message, JUDGE_PROMPT_VERSION, JUDGE_SYSTEM_PROMPT};
use crate::record::{EvaluationRecord, RunStatus};
use async_trait::async_trait;
use earthverse_model_provider::{ChatModel, ChatRequest, Message, Sampling};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Default bound on judge calls per record (§4.1: "judge-service failures
/// are rerun until a valid judgment is obtained"; we stop after this many
/// and return [`JudgeError::InvalidJudgeOutput`]).
pub const DEFAULT_MAX_JUDGE_ATTEMPTS: u32 = 4;

/// Seed sent to backends that accept one (App. C.2: seed 2026).
pub const JUDGE_SEED: u64 = 2026;

/// Counters of an [`LlmJudge`]'s work.
#[derive(Debug, Default)]
pub struct JudgeStats {
    /// Records served from the cache.
    pub cache_hits: AtomicU64,
    /// Model calls made.
    pub model_calls: AtomicU64,
    /// Replies rejected as invalid and re-asked.
    pub invalid_replies: AtomicU64,
}

/// Judges runs with a chat model and the App. E JUDGE prompt; invalid
/// replies are re-asked with the reason, up to a bound; valid records are
/// cached on disk.
pub struct LlmJudge {
    model: Arc<dyn ChatModel>,
    id: String,
    cache: Option<JudgeCache>,
    max_attempts: u32,
    stats: JudgeStats,
    claims: Option<Arc<ClaimSource>>,
}

impl std::fmt::Debug for LlmJudge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmJudge")
            .field("id", &self.id)
            .field("cache", &self.cache)
            .field("max_attempts", &self.max_attempts)
            .finish()
    }
}

impl LlmJudge {
    /// A judge over `model`, without a cache.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        let id = model.model_id().to_string();
        Self {
            model,
            id,
            cache: None,
            max_attempts: DEFAULT_MAX_JUDGE_ATTEMPTS,
            stats: JudgeStats::default(),
            claims: None,
        }
    }

    /// Writes the claim ledger of each record from `claims` (the
    /// answer-units reading beside the model's verdicts).
    pub fn with_claims(mut self, claims: Arc<ClaimSource>) -> Self {
        self.claims = Some(claims);
        self
    }

    /// Caches records in `cache`.
    pub fn with_cache(mut self, cache: JudgeCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Sets the bound on calls per record (at least 1).
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// Work counters.
    pub fn stats(&self) -> &JudgeStats {
        &self.stats
    }

    /// The messages the judge model sees for this run.
    pub fn messages(task: &TaskContext, run: &RunContext) -> Vec<Message> {
        vec![
            Message::system(JUDGE_SYSTEM_PROMPT),
            Message::user(render_judge_user_message(task, run)),
        ]
    }

    /// The cache key: sha256 over the prompt version, the judge model id
    /// and every message the judge sees.
    pub fn cache_key_for(&self, messages: &[Message]) -> String {
        let mut parts: Vec<&str> = vec![JUDGE_PROMPT_VERSION, &self.id];
        for m in messages {
            parts.push(match m.role {
                earthverse_model_provider::Role::System => "system",
                earthverse_model_provider::Role::User => "user",
                earthverse_model_provider::Role::Assistant => "assistant",
                earthverse_model_provider::Role::Tool => "tool",
            });
            parts.push(&m.content);
        }
        cache_key(&parts)
    }
}

#[async_trait]
impl Judge for LlmJudge {
    fn judge_id(&self) -> &str {
        &self.id
    }

    async fn evaluate(&self, task: &TaskContext, run: &RunContext) -> Result<EvaluationRecord> {
        let mut record = self.judge_run(task, run).await?;
        if let Some(source) = &self.claims {
            record.claims = source.claims(task, run);
        }
        Ok(record)
    }
}

impl LlmJudge {
    /// [`Judge::evaluate`] without the claim ledger.
    async fn judge_run(&self, task: &TaskContext, run: &RunContext) -> Result<EvaluationRecord> {
        let ledger = crate::deterministic::empty_rubric_ledger(&task.rubric);
        if run.run_status == RunStatus::Error {
            let mut record = EvaluationRecord::solver_failure(
                &task.task_id,
                &run.system,
                &self.id,
                ledger,
                &run.figures
                    .termination_reason
                    .as_ref()
                    .map_or_else(|| "run_status error".to_string(), |t| t.name()),
            );
            record.labels = task.labels.clone();
            record.trajectory = run.figures.clone();
            return Ok(record);
        }
        let mut messages = Self::messages(task, run);
        let key = self.cache_key_for(&messages);
        if let Some(cache) = &self.cache {
            if let Some(mut record) = cache.get(&key)? {
                self.stats.cache_hits.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(task = %task.task_id, system = %run.system, "judge cache hit");
                record.judge_attempts = 0;
                return Ok(record);
            }
        }
        let mut last_problem = String::new();
        for attempt in 1..=self.max_attempts {
            let mut request = ChatRequest::new(messages.clone());
            request.json_mode = true;
            request.sampling = Sampling {
                temperature: Some(0.0),
                seed: Some(JUDGE_SEED),
                ..Sampling::default()
            };
            self.stats.model_calls.fetch_add(1, Ordering::Relaxed);
            let response =
                self.model
                    .chat(request)
                    .await
                    .map_err(|source| JudgeError::Provider {
                        model: self.id.clone(),
                        task_id: task.task_id.clone(),
                        system: run.system.clone(),
                        source: Box::new(source),
                    })?;
            match parse_judge_reply(&response.text, &task.rubric) {
                Ok(parsed) => {
                    let units_total = parsed.answer_units.len() as u64;
                    let units_correct =
                        parsed.answer_units.iter().filter(|u| u.satisfied).count() as f64;
                    let u = 100.0 * units_correct / units_total as f64;
                    let earned = parsed.rubric_ledger.iter().map(|c| c.points_earned).sum();
                    let total = parsed.rubric_ledger.iter().map(|c| c.points_possible).sum();
                    let mut record = EvaluationRecord {
                        task_id: task.task_id.clone(),
                        system: run.system.clone(),
                        judge: self.id.clone(),
                        run_status: RunStatus::Ok,
                        answer_correctness_score: parsed.answer_correctness_score,
                        llm_rubric_score: parsed.llm_rubric_score,
                        unit_accuracy: u,
                        answer_units_correct: units_correct,
                        answer_units_total: units_total,
                        answer: 0.0,
                        core: 0.0,
                        strict95: false,
                        rubric_points_earned: earned,
                        rubric_points_total: total,
                        answer_units: parsed.answer_units,
                        rubric_ledger: parsed.rubric_ledger,
                        verdict: parsed.verdict,
                        critical_errors: parsed.critical_errors,
                        missing_elements: parsed.missing_elements,
                        unsupported_claims: parsed.unsupported_claims,
                        rationale: parsed.rationale,
                        labels: task.labels.clone(),
                        trajectory: run.figures.clone(),
                        judge_attempts: attempt,
                        judge_input_sha256: key.clone(),
                        claims: Vec::new(),
                    };
                    record.recompute_scores();
                    if let Some(cache) = &self.cache {
                        cache.put(&key, &record)?;
                    }
                    return Ok(record);
                }
                Err(problem) => {
                    self.stats.invalid_replies.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(task = %task.task_id, system = %run.system, attempt, %problem, "invalid judge reply; re-asking");
                    messages.push(Message::assistant(response.text));
                    messages.push(Message::user(format!(
                        "Your reply is not a valid evaluation record: {problem}. \
                         Reply again with exactly one JSON object following the EVALUATION RECORD keys."
                    )));
                    last_problem = problem;
                }
            }
        }
        Err(JudgeError::InvalidJudgeOutput {
            model: self.id.clone(),
            task_id: task.task_id.clone(),
            system: run.system.clone(),
            attempts: self.max_attempts,
            last_problem,
        })
    }
}
