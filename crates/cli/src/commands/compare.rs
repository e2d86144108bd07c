//! `earthverse compare`: the paired bootstrap difference of two conditions
//! (§4.1, App. C.5) with win / tie / loss shares, or of every pair of
//! systems from one shared resample matrix (`--all-pairs`).

use anyhow::{bail, Context};
use earthverse_outcomes::{load_recorded, load_records_file, paired_conditions, LoadedOutcomes};
use earthverse_stats_bootstrap::{
    all_pairs, compare, win_tie_loss, BootstrapConfig, Metric, MissingPolicy, PairedScores,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `earthverse compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// First condition: a records file / recorded-runs directory, or a
    /// system id found in `--in` / `--from-recorded`.
    a: Option<String>,
    /// Second condition, as A.
    b: Option<String>,
    /// Records files holding the systems named by A and B.
    #[arg(long = "in", value_name = "FILE")]
    inputs: Vec<PathBuf>,
    /// Recorded runs holding the systems named by A and B.
    #[arg(long, value_name = "DIR")]
    from_recorded: Option<PathBuf>,
    /// Release root for recorded runs' task labels.
    #[arg(long, value_name = "ROOT")]
    release: Option<PathBuf>,
    /// Compare every pair of systems from one shared resample matrix over
    /// the tasks all of them ran (instead of A and B).
    #[arg(long)]
    all_pairs: bool,
    /// With `--all-pairs`: score a task a system did not run as a failure
    /// (0) instead of keeping only the tasks every system ran.
    #[arg(long)]
    zero_fill: bool,
    /// Score compared.
    #[arg(long, value_enum, default_value = "core")]
    metric: Metric,
    /// The paired bootstrap.
    #[command(flatten)]
    bootstrap: BootstrapConfig,
    /// Tie margin of the win / tie / loss shares of A against B, in points
    /// of the metric (ours; Fig. 7 gives no rule for scores).
    #[arg(long, default_value_t = earthverse_stats_bootstrap::PAIRWISE_TIE_MARGIN)]
    tie_margin: f64,
    /// Print JSON.
    #[arg(long)]
    json: bool,
    /// Also write the differences to FILE (`.jsonl` or `.parquet`).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// Runs `earthverse compare`.
pub fn run_compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let mut inputs: Vec<(&str, &Path)> =
        args.inputs.iter().map(|f| ("--in", f.as_path())).collect();
    for (name, cond) in [("A", &args.a), ("B", &args.b)] {
        if let Some(c) = cond {
            inputs.push((name, Path::new(c.as_str())));
        }
    }
    if let Some(dir) = &args.from_recorded {
        inputs.push(("--from-recorded", dir));
    }
    if let Some(root) = &args.release {
        inputs.push(("--release", root));
    }
    super::inputs::refuse_outputs(&[("--out", args.out.as_deref())], &inputs)?;
    let config = args.bootstrap;
    let metric = args.metric;
    let metric_name = serde_json::to_value(metric)?
        .as_str()
        .unwrap_or("score")
        .to_owned();
    let mut pool = LoadedOutcomes::default();
    for file in &args.inputs {
        pool.extend(load_records_file(file)?);
    }
    if let Some(dir) = &args.from_recorded {
        pool.extend(load_recorded(dir, args.release.as_deref())?);
    }
    let mut shares = None;
    let deltas = if args.all_pairs {
        if pool.outcomes.is_empty() {
            bail!("--all-pairs needs --in FILE... or --from-recorded DIR");
        }
        let policy = if args.zero_fill {
            MissingPolicy::ZeroFill
        } else {
            MissingPolicy::CommonTasks
        };
        let scores = PairedScores::from_outcomes(&pool.outcomes, None, metric, policy)?;
        tracing::info!(tasks = scores.tasks().len(), "tasks shared by every system");
        all_pairs(&scores, &config)?
    } else {
        let (Some(a), Some(b)) = (&args.a, &args.b) else {
            bail!("give two conditions A and B, or --all-pairs");
        };
        let (outcomes, la, lb) = paired_conditions(&pool, a, b, args.release.as_deref())?;
        let delta = compare(&outcomes, &la, &lb, metric, &config)
            .with_context(|| format!("comparing {la} with {lb}"))?;
        shares = Some(
            win_tie_loss(&outcomes, &la, &lb, metric, args.tie_margin)
                .with_context(|| format!("win / tie / loss of {la} against {lb}"))?,
        );
        vec![delta]
    };
    if let Some(path) = &args.out {
        earthverse_outcomes::write_table(path, &deltas)?;
    }
    let out = if args.json {
        let doc = match &shares {
            None => json!({ "metric": metric_name, "pairs": deltas }),
            Some(w) => json!({ "metric": metric_name, "pairs": deltas, "win_tie_loss": w }),
        };
        format!("{}\n", serde_json::to_string_pretty(&doc)?)
    } else {
        let mut out: String = deltas
            .iter()
            .map(|d| earthverse_report::text::delta(d, &metric_name))
            .collect();
        if let Some(w) = &shares {
            out.push_str(&earthverse_report::text::win_tie_loss(w));
        }
        out
    };
    super::inputs::emit(&out)?;
    Ok(ExitCode::SUCCESS)
}
