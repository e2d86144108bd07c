//! `earthverse score`: one evaluation record per run (JSONL), with a
//! deterministic or an LLM judge (paper §4.1, App. E JUDGE).

use anyhow::{bail, Context};
use earthverse_model_provider::{ChatModel, Endpoint, ProviderSpec};
use earthverse_rubric_judge::{
    compare_published, drop_in_background, score_release, Agreement, EvaluationRecord, JudgeChoice,
    ScoreJob, ScoredRelease, UnitReading,
};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

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
    /// The judge's endpoint.
    #[command(flatten)]
    pub endpoint: Endpoint,
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

/// The judge model of `--judge` (`None` for `deterministic`), built by
/// `model_provider::from_spec`'s parser (shared with `study report`).
pub fn judge_model(judge: &str, endpoint: &Endpoint) -> anyhow::Result<Option<Arc<dyn ChatModel>>> {
    if judge == "deterministic" {
        return Ok(None);
    }
    let model = ProviderSpec::parse_required(judge)
        .and_then(|spec| spec.build(endpoint))
        .with_context(|| format!("--judge `{judge}` (or `deterministic`)"))?;
    Ok(Some(model))
}

fn print_agreement(name: &str, a: &Agreement) {
    use earthverse_answer_units::shown;
    println!(
        "{name:<6} n={:<4} MAE={:>6.2} bias={:>+6.2} Pearson={:>6.3} Spearman={:>6.3} within5={:>5.1}% within10={:>5.1}%",
        a.n, shown(a.mae), shown(a.bias), shown(a.pearson), shown(a.spearman), shown(a.within5), shown(a.within10)
    );
}

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
    let model = judge_model(&args.judge, &args.endpoint)?;
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
    refuse_incomplete(&args)?;
    let judge = match model {
        None => JudgeChoice::Deterministic,
        Some(model) => JudgeChoice::Llm {
            model,
            cache_dir: args.cache.clone().unwrap_or_else(|| {
                args.out
                    .parent()
                    .map(|p| p.join("judge-cache"))
                    .unwrap_or_else(|| PathBuf::from("judge-cache"))
            }),
            max_attempts: args.max_judge_attempts,
        },
    };
    let job = ScoreJob {
        runs_dir: args.runs.clone(),
        out: args.out.clone(),
        restart: args.restart,
        judge,
        reading,
        jobs: args.jobs,
        keep_runs: args.compare_published || args.compare_json.is_some(),
        skipped_task_files: skipped.iter().map(|e| e.path.clone()).collect(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let batch = runtime
        .block_on(score_release(&release, &args.release_root, job))
        .with_context(|| {
            format!(
                "scoring the runs under {} against {} into {}",
                args.runs.display(),
                args.release_root.display(),
                args.out.display()
            )
        })?;
    for (task, problem) in &batch.rubric_problems {
        eprintln!("score: warning: task {task} rubric: {problem}");
    }
    eprintln!(
        "score: {} runs found, {} already in {}, {} scored with judge {}",
        batch.found,
        batch.already,
        args.out.display(),
        batch.scored,
        args.judge
    );
    if let Some((calls, cache_dir)) = &batch.judge_calls {
        eprintln!(
            "score: judge calls {}, invalid judge replies {}, cache hits {} (cache {})",
            calls.model_calls,
            calls.invalid_replies,
            calls.cache_hits,
            cache_dir.display()
        );
    }
    let ScoredRelease {
        records,
        runs,
        runs_of_skipped,
        failures,
        ..
    } = batch;
    if !failures.is_empty() {
        let failed = failures.len();
        for (path, err) in failures {
            eprintln!("score: {}: {:#}", path.display(), anyhow::Error::new(err));
        }
        eprintln!(
            "score: {failed} run(s) got no valid judgment; rerun the same command to retry them"
        );
        return Ok(ExitCode::from(1));
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
