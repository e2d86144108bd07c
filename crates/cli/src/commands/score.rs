//! `earthverse score`: one evaluation record per run (JSONL), with a
//! deterministic or an LLM judge (paper §4.1, App. E JUDGE).

use anyhow::{bail, Context};
use earthverse_answer_units::score_task;
use earthverse_answer_units::ScoringContext;
use earthverse_model_provider::{ChatModel, Endpoint, ProviderSpec};
use earthverse_rubric_judge::{
    compare_published, done_keys, evaluate_deterministic_prepared, find_runs, load_tasks_except,
    read_records, read_run, record_line, run_paths, Agreement, AnswerUnitsScorer, EvaluationRecord,
    Judge, JudgeCache, LlmJudge, PreparedRubric, RecordWriter, RunFile, UnitReading, UnitScorer,
};
use earthverse_rubric_judge::{scoring_context, RunContext, RunStatus, TaskContext};
use rayon::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};

/// Arguments of `earthverse score`.
#[derive(Debug, clap::Args)]
pub struct ScoreArgs {
    /// Release root (holds `tasks/*.json`).
    pub release_root: PathBuf,
    /// Directory of run records (`trajectory.json` or recorded-run JSON), searched recursively.
    #[arg(long)]
    pub runs: PathBuf,
    /// Judge: `deterministic`, `openai:MODEL` or `anthropic:MODEL`.
    #[arg(long, default_value = "deterministic")]
    pub judge: String,
    /// Base URL of the judge endpoint (OpenAI-compatible: up to `/v1`;
    /// Anthropic: without `/v1`). With it, no API key is sent unless
    /// `--api-key-env` names one.
    #[arg(long)]
    pub base_url: Option<String>,
    /// Environment variable holding the judge's API key.
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Judge cache directory (LLM judges; default: `judge-cache` beside `--out`).
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Output JSONL file; records already in it are kept and their runs skipped.
    #[arg(long)]
    pub out: PathBuf,
    /// Start the output afresh instead of resuming it.
    #[arg(long)]
    pub restart: bool,
    /// Concurrent judge calls (LLM judges).
    #[arg(long, default_value_t = 4)]
    pub jobs: usize,
    /// Most judge calls per record before giving up (§4.1 reruns invalid judgments).
    #[arg(long, default_value_t = earthverse_rubric_judge::DEFAULT_MAX_JUDGE_ATTEMPTS)]
    pub max_judge_attempts: u32,
    /// Reading of U for the deterministic judge: `judge` (against the expert
    /// solution's Final Answer when it has one, else `required`), `required`
    /// (units of `primary_gt` the question asks for) or `all` leaves.
    #[arg(long, default_value = "judge")]
    pub units: String,
    /// Score a batch whose plan (`batch-plan.json`, written by `earthverse
    /// run`) lists tasks without a record, with a warning; without it such
    /// a set is refused.
    #[arg(long)]
    pub allow_partial: bool,
    /// Report agreement with the scores stored in the recorded runs.
    #[arg(long)]
    pub compare_published: bool,
    /// Also write the agreement as JSON to this file.
    #[arg(long)]
    pub compare_json: Option<PathBuf>,
    /// Print no summary line on stdout (callers such as `study report`
    /// print their own tables).
    #[arg(skip)]
    pub quiet: bool,
    /// Unloadable task files: an error, or skipped and named.
    #[command(flatten)]
    pub skip: super::inputs::SkipInvalid,
}

fn build_model(args: &ScoreArgs) -> anyhow::Result<Option<Arc<dyn ChatModel>>> {
    if args.judge == "deterministic" {
        return Ok(None);
    }
    let endpoint = Endpoint {
        base_url: args.base_url.clone(),
        api_key_env: args.api_key_env.clone(),
    };
    let model = ProviderSpec::parse_required(&args.judge)
        .and_then(|spec| spec.build(&endpoint))
        .with_context(|| format!("--judge `{}` (or `deterministic`)", args.judge))?;
    Ok(Some(model))
}

fn print_agreement(name: &str, a: &Agreement) {
    use earthverse_answer_units::shown;
    println!(
        "{name:<6} n={:<4} MAE={:>6.2} bias={:>+6.2} Pearson={:>6.3} Spearman={:>6.3} within5={:>5.1}% within10={:>5.1}%",
        a.n, shown(a.mae), shown(a.bias), shown(a.pearson), shown(a.spearman), shown(a.within5), shown(a.within10)
    );
}

/// Runs scored together by the deterministic judge before their records
/// are written: large enough to keep every core busy, small enough that a
/// killed run loses little work.
const DETERMINISTIC_BATCH: usize = 64;

/// Runs `earthverse score`.
pub fn run_score(args: ScoreArgs) -> anyhow::Result<ExitCode> {
    // A refused or failed first scoring leaves no empty output behind (a
    // file that held records is kept: the next run resumes it).
    let existed = args.out.exists();
    let out = args.out.clone();
    let result = score_into(args);
    if result.is_err() && !existed && std::fs::metadata(&out).is_ok_and(|m| m.len() == 0) {
        let _ = std::fs::remove_file(&out);
    }
    result
}

fn score_into(args: ScoreArgs) -> anyhow::Result<ExitCode> {
    let reading = match args.units.as_str() {
        "judge" => UnitReading::Judge,
        "required" => UnitReading::Required,
        "all" => UnitReading::All,
        other => bail!("--units `{other}`: expected judge, required or all"),
    };
    let model = build_model(&args)?;
    // The release first: the one rule for unloadable task files.
    let release = earthverse_package_model::Release::load(&args.release_root)
        .with_context(|| format!("loading release {}", args.release_root.display()))?;
    let skipped = args.skip.check(&release, "score")?;
    let mut outputs = vec![("--out", &args.out)];
    if let Some(path) = &args.compare_json {
        outputs.push(("--compare-json", path));
    }
    for (flag, path) in outputs {
        super::inputs::refuse_output_on_inputs(
            flag,
            path,
            &[
                ("the release", &args.release_root),
                ("the release's packages", release.packages_root()),
                ("--runs", &args.runs),
            ],
            earthverse_package_model::Overlap::Outside,
        )?;
    }
    tracing::debug!("score: loading tasks");
    let skipped_paths: Vec<PathBuf> = skipped.iter().map(|e| e.path.clone()).collect();
    // Runs of a skipped task file (its name is the task id) are not scored
    // either; they are counted and named.
    let skipped_ids: BTreeSet<String> = skipped_paths
        .iter()
        .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .collect();
    let mut runs_of_skipped: Vec<PathBuf> = Vec::new();
    let tasks = load_tasks_except(&args.release_root, &skipped_paths)
        .with_context(|| format!("loading tasks of {}", args.release_root.display()))?;
    for task in tasks.values() {
        let report = task.rubric.validate();
        for problem in &report.errors {
            eprintln!("score: warning: task {} rubric: {problem}", task.task_id);
        }
        for advice in &report.warnings {
            tracing::info!(task = %task.task_id, %advice, "rubric coverage");
        }
    }
    tracing::debug!(tasks = tasks.len(), "score: tasks loaded");
    // The reference analysis files of each task, for the claim ledger.
    let references: BTreeMap<String, Vec<String>> = super::evidence::task_references(&release)
        .into_iter()
        .map(|(id, files)| (id.to_owned(), files))
        .collect();
    tracing::debug!("score: release and references loaded");
    refuse_incomplete(&args)?;
    let previous = if args.restart {
        Vec::new()
    } else {
        read_records(&args.out).with_context(|| format!("resuming {}", args.out.display()))?
    };
    let done = done_keys(&previous);
    let mut writer = RecordWriter::resume(&args.out, &previous)?;
    let mut records: Vec<EvaluationRecord> = previous;
    let runs: Vec<RunFile>;
    match model {
        None => {
            runs = score_deterministic(
                &args,
                (&tasks, &references),
                reading,
                &done,
                &mut writer,
                &mut records,
                (&skipped_ids, &mut runs_of_skipped),
            )?;
            // The per-task structures are large: freed off the main thread.
            drop_in_background((tasks, references));
        }
        Some(model) => {
            let found = find_runs(&args.runs)
                .with_context(|| format!("reading runs under {}", args.runs.display()))?;
            let mut known = Vec::with_capacity(found.len());
            for rf in found {
                if known_task(&tasks, &rf, &args.release_root, &skipped_ids)? {
                    known.push(rf);
                } else {
                    runs_of_skipped.push(rf.path);
                }
            }
            runs = known;
            tracing::debug!(runs = runs.len(), "score: runs read");
            let todo: Vec<_> = runs
                .iter()
                .filter(|rf| !done.contains(&(rf.run.task_id.clone(), rf.run.system.clone())))
                .collect();
            eprintln!(
                "score: {} runs found, {} already in {}, {} to score with judge {}",
                runs.len(),
                runs.len() - todo.len(),
                args.out.display(),
                todo.len(),
                args.judge
            );
            let cache_dir = args.cache.clone().unwrap_or_else(|| {
                args.out
                    .parent()
                    .map(|p| p.join("judge-cache"))
                    .unwrap_or_else(|| PathBuf::from("judge-cache"))
            });
            let judge = Arc::new(
                LlmJudge::new(model)
                    .with_cache(JudgeCache::new(&cache_dir))
                    .with_max_attempts(args.max_judge_attempts),
            );
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .context("starting the async runtime")?;
            let tasks = Arc::new(tasks);
            let references = Arc::new(references);
            let jobs = args.jobs.max(1);
            let mut failures = 0usize;
            runtime.block_on(async {
                let mut set = tokio::task::JoinSet::new();
                let mut queue = todo.into_iter().cloned();
                loop {
                    while set.len() < jobs {
                        let Some(rf) = queue.next() else { break };
                        let judge = Arc::clone(&judge);
                        let tasks = Arc::clone(&tasks);
                        let references = Arc::clone(&references);
                        set.spawn(async move {
                            let task = &tasks[&rf.run.task_id];
                            let mut result = judge.evaluate(task, &rf.run).await;
                            if let Ok(record) = &mut result {
                                record.claims = claims(task, &references, &rf.run, reading);
                            }
                            (rf.path.clone(), result)
                        });
                    }
                    let Some(joined) = set.join_next().await else {
                        break;
                    };
                    match joined {
                        Ok((_, Ok(record))) => {
                            writer.write(&record)?;
                            records.push(record);
                        }
                        Ok((path, Err(err))) => {
                            failures += 1;
                            eprintln!("score: {}: {:#}", path.display(), anyhow::Error::new(err));
                        }
                        Err(join) => bail!("a judge task panicked: {join}"),
                    }
                }
                Ok::<(), anyhow::Error>(())
            })?;
            let stats = judge.stats();
            use std::sync::atomic::Ordering::Relaxed;
            eprintln!(
                "score: judge calls {}, invalid judge replies {}, cache hits {} (cache {})",
                stats.model_calls.load(Relaxed),
                stats.invalid_replies.load(Relaxed),
                stats.cache_hits.load(Relaxed),
                cache_dir.display()
            );
            if failures > 0 {
                eprintln!(
                    "score: {failures} run(s) got no valid judgment; rerun the same command to retry them"
                );
                return Ok(ExitCode::from(1));
            }
        }
    }
    let n = records.len().max(1) as f64;
    let mean = |f: fn(&EvaluationRecord) -> f64| records.iter().map(f).sum::<f64>() / n;
    if args.quiet {
        drop_in_background((records, runs));
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{} records in {}: mean U {:.2}, H {:.2}, P {:.2}, A {:.2}, Core {:.2}, Strict@95 {:.2}%{}",
        records.len(),
        args.out.display(),
        mean(|r| r.unit_accuracy),
        mean(|r| r.answer_correctness_score),
        mean(|r| r.llm_rubric_score),
        mean(|r| r.answer),
        mean(|r| r.core),
        100.0 * records.iter().filter(|r| r.strict95).count() as f64 / n,
        super::inputs::skipped_note(&skipped),
    );
    if !runs_of_skipped.is_empty() {
        println!(
            "{} run(s) of the skipped task file(s) not scored: {}",
            runs_of_skipped.len(),
            runs_of_skipped
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if args.compare_published || args.compare_json.is_some() {
        let agreement = compare_published(&records, &runs);
        println!(
            "agreement with the published scores of {} recorded runs:",
            agreement.runs
        );
        print_agreement("U", &agreement.unit_accuracy);
        print_agreement("H", &agreement.answer_correctness);
        print_agreement("P", &agreement.rubric);
        print_agreement("Core", &agreement.core);
        print_agreement("Core/system", &agreement.system_core);
        if let Some(path) = &args.compare_json {
            std::fs::write(path, serde_json::to_vec_pretty(&agreement)?)
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    drop_in_background((records, runs));
    Ok(ExitCode::SUCCESS)
}

/// Refuses a run of a task the release does not hold, naming its file;
/// `Ok(false)` for a run of a task whose file was skipped (`--skip-invalid`).
fn known_task(
    tasks: &BTreeMap<String, TaskContext>,
    rf: &RunFile,
    release_root: &std::path::Path,
    skipped_ids: &BTreeSet<String>,
) -> anyhow::Result<bool> {
    if skipped_ids.contains(&rf.run.task_id) && !tasks.contains_key(&rf.run.task_id) {
        return Ok(false);
    }
    if !tasks.contains_key(&rf.run.task_id) {
        bail!(
            "run {} answers task {} which is not in release {}",
            rf.path.display(),
            rf.run.task_id,
            release_root.display()
        );
    }
    Ok(true)
}

/// What became of one file of a deterministic scoring batch.
enum Scored {
    /// Not a run record (another JSON file of the runs directory).
    NotRun,
    /// A run of a task whose file was skipped (`--skip-invalid`).
    OfSkippedTask(PathBuf),
    /// A run whose record is already in the output; the run is kept (see
    /// [`slim_run`]) only for the comparison with published scores.
    Done(Option<RunFile>),
    /// A run scored now: its record (see [`slim_record`]), the record's
    /// JSONL line, and the run when kept.
    New(Box<EvaluationRecord>, String, Option<RunFile>),
}

/// Scores the runs under `--runs` with the deterministic judge, streaming:
/// each batch of [`DETERMINISTIC_BATCH`] files is read, parsed and scored
/// on all cores (each run on the thread that parsed it), its new records
/// are written in path order, and its runs are freed before the next
/// batch is read. Peak memory then holds one batch of runs instead of the
/// whole release (issue #30 item 3), and a killed run loses at most the
/// batch in flight. A file that fails to read, or a run of a task the
/// release does not hold, stops scoring with an error naming the file;
/// the records of the batches before it stay written and a rerun resumes
/// from them. Returns the runs, slimmed, when the comparison with
/// published scores needs them.
fn score_deterministic(
    args: &ScoreArgs,
    (tasks, references): (
        &BTreeMap<String, TaskContext>,
        &BTreeMap<String, Vec<String>>,
    ),
    reading: UnitReading,
    done: &BTreeSet<(String, String)>,
    writer: &mut RecordWriter,
    records: &mut Vec<EvaluationRecord>,
    (skipped_ids, runs_of_skipped): (&BTreeSet<String>, &mut Vec<PathBuf>),
) -> anyhow::Result<Vec<RunFile>> {
    let paths = run_paths(&args.runs)
        .with_context(|| format!("reading runs under {}", args.runs.display()))?;
    let keep_runs = args.compare_published || args.compare_json.is_some();
    let scorer = AnswerUnitsScorer { reading };
    // One scoring context per task, built by the first run that needs it:
    // it keeps the question's prepared lookups, and the task's side of the
    // rubric approximation, across every run of the task.
    let contexts: BTreeMap<&str, OnceLock<(ScoringContext, PreparedRubric)>> = tasks
        .keys()
        .map(|id| (id.as_str(), OnceLock::new()))
        .collect();
    let score_file = |path: &PathBuf| -> anyhow::Result<Scored> {
        let Some(rf) = read_run(path.clone())
            .with_context(|| format!("reading runs under {}", args.runs.display()))?
        else {
            return Ok(Scored::NotRun);
        };
        if !known_task(tasks, &rf, &args.release_root, skipped_ids)? {
            return Ok(Scored::OfSkippedTask(rf.path));
        }
        let keep = |rf: RunFile| keep_runs.then(|| slim_run(rf));
        if done.contains(&(rf.run.task_id.clone(), rf.run.system.clone())) {
            return Ok(Scored::Done(keep(rf)));
        }
        let task = &tasks[&rf.run.task_id];
        let (context, rubric) = contexts[task.task_id.as_str()]
            .get_or_init(|| (scoring_context(task), PreparedRubric::new(task)));
        // One scoring of the answer serves the record and its claim ledger.
        let task_score = (rf.run.run_status != RunStatus::Error)
            .then(|| score_task(&task.primary_gt, &rf.run.final_answer, context));
        let claims = task_score
            .as_ref()
            .map(|score| claims_of(task, references, &rf.run, reading, score));
        let mut record = evaluate_deterministic_prepared(task, rubric, &rf.run, || {
            task_score.map_or_else(
                || scorer.score_units(task, &rf.run.final_answer),
                |score| scorer.outcome(score),
            )
        });
        record.claims = claims.unwrap_or_default();
        // Serialised on the thread that scored it; the batch's lines are
        // written in one call.
        let line = record_line(&record)?;
        Ok(Scored::New(Box::new(slim_record(record)), line, keep(rf)))
    };
    let (mut found, mut already) = (0usize, 0usize);
    let mut kept: Vec<RunFile> = Vec::new();
    for batch in paths.chunks(DETERMINISTIC_BATCH) {
        let scored: Vec<anyhow::Result<Scored>> = batch.par_iter().map(score_file).collect();
        let mut lines = String::new();
        // In path order: the first bad file of the batch is the one named.
        for outcome in scored {
            let (run, line) = match outcome? {
                Scored::NotRun => continue,
                Scored::OfSkippedTask(path) => {
                    runs_of_skipped.push(path);
                    continue;
                }
                Scored::Done(run) => {
                    already += 1;
                    (run, None)
                }
                Scored::New(record, line, run) => {
                    records.push(*record);
                    (run, Some(line))
                }
            };
            found += 1;
            kept.extend(run);
            lines.extend(line);
        }
        writer.write_lines(lines.as_bytes())?;
    }
    tracing::debug!(runs = found, "score: runs read, scored and written");
    eprintln!(
        "score: {found} runs found, {already} already in {}, {} scored with judge {}",
        args.out.display(),
        found - already,
        args.judge
    );
    drop_in_background(contexts.into_values().collect::<Vec<_>>());
    Ok(kept)
}

/// A run reduced to what the comparison with published scores reads (its
/// ids and `scores`): the trace and answer are freed on the scoring thread.
fn slim_run(mut rf: RunFile) -> RunFile {
    let run = &mut rf.run;
    run.final_answer = serde_json::Value::Null;
    run.tool_trace = Vec::new();
    run.evidence = Vec::new();
    run.reasoning_summary = Vec::new();
    run.unsupported_or_unresolved = Vec::new();
    rf
}

/// A written record reduced to its ids and scores, which the summary line
/// and the comparison with published scores read; its ledgers and texts
/// are freed on the scoring thread.
fn slim_record(record: EvaluationRecord) -> EvaluationRecord {
    EvaluationRecord {
        answer_units: Vec::new(),
        rubric_ledger: Vec::new(),
        critical_errors: Vec::new(),
        missing_elements: Vec::new(),
        unsupported_claims: Vec::new(),
        rationale: String::new(),
        claims: Vec::new(),
        ..record
    }
}

/// Drops `value` on another thread: freeing the many small allocations of
/// the runs, tasks and records takes a noticeable share of a whole-release
/// `score`, and nothing waits for it (at exit the process ends it).
fn drop_in_background<T: Send + 'static>(value: T) {
    // When no thread can be started the value is dropped here instead.
    let _ = std::thread::Builder::new()
        .name("score-drop".into())
        .spawn(move || drop(value));
}

/// Refuses (or, with `--allow-partial`, warns about) a runs directory
/// holding a batch whose plan lists tasks without a finished record: a
/// shard that never ran would otherwise drop out of the denominator.
fn refuse_incomplete(args: &ScoreArgs) -> anyhow::Result<()> {
    let incomplete = earthverse_agent_controller::merge::incomplete_plans(&args.runs)
        .with_context(|| format!("checking the batch plans under {}", args.runs.display()))?;
    if incomplete.is_empty() {
        return Ok(());
    }
    let mut lines = Vec::new();
    for (dir, missing) in &incomplete {
        let shown: Vec<&str> = missing.iter().take(10).map(String::as_str).collect();
        let more = missing.len().saturating_sub(shown.len());
        lines.push(format!(
            "{}: {} planned task(s) without a record: {}{}",
            dir.display(),
            missing.len(),
            shown.join(", "),
            if more > 0 {
                format!(", ... {more} more")
            } else {
                String::new()
            }
        ));
    }
    if args.allow_partial {
        for line in &lines {
            eprintln!("score: warning: incomplete batch (--allow-partial): {line}");
        }
        return Ok(());
    }
    bail!(
        "incomplete batch: {}
run the missing shards (runs resume), check with `earthverse merge`, or pass --allow-partial",
        lines.join("\n")
    )
}

/// The claim ledger of a run for its record: the unit ledger of the
/// record's reading of U (the deterministic judge's own; for an LLM judge,
/// the answer-units reading beside its verdicts), traced through the run's
/// observations. A failed run has none.
fn claims(
    task: &TaskContext,
    references: &BTreeMap<String, Vec<String>>,
    run: &RunContext,
    reading: UnitReading,
) -> Vec<earthverse_evidence_ledger::Claim> {
    if run.run_status == RunStatus::Error {
        return Vec::new();
    }
    let score = score_task(&task.primary_gt, &run.final_answer, &scoring_context(task));
    claims_of(task, references, run, reading, &score)
}

/// [`claims`] from the answer's score.
fn claims_of(
    task: &TaskContext,
    references: &BTreeMap<String, Vec<String>>,
    run: &RunContext,
    reading: UnitReading,
    score: &earthverse_answer_units::TaskScore,
) -> Vec<earthverse_evidence_ledger::Claim> {
    let mut units = match reading {
        UnitReading::Judge => score.judge_score().ledger.clone(),
        UnitReading::Required | UnitReading::All => score.units.ledger.clone(),
    };
    if reading == UnitReading::All {
        // Every leaf counts in this reading.
        units.iter_mut().for_each(|u| u.counted = true);
    }
    let refs = references
        .get(&task.task_id)
        .map(Vec::as_slice)
        .unwrap_or_default();
    earthverse_rubric_judge::evidence::record_claims(task, refs, run, &units)
}
