//! `earthverse report`: outcomes (`earthverse-outcomes`) → the
//! self-contained HTML page of `earthverse-report`, with the runs' final
//! answers and, on request, the failure-family figures (Figs. 8–10).

use anyhow::Context;
use earthverse_outcomes::OutcomeSources;
use earthverse_report::ReportInput;
use earthverse_stats_bootstrap::BootstrapConfig;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `earthverse report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    #[command(flatten)]
    sources: OutcomeSources,
    /// Where to write the HTML page.
    #[arg(long, value_name = "OUT")]
    html: PathBuf,
    /// Page title.
    #[arg(long, default_value = "EarthVerse results")]
    title: String,
    /// The forest plot's bootstrap.
    #[command(flatten)]
    bootstrap: BootstrapConfig,
    /// Directory of the scored runs: their final answers are shown on the
    /// runs' own pages (the pages exist for records carrying claims).
    #[arg(long, value_name = "DIR")]
    runs: Option<PathBuf>,
    /// Draw Figs. 8–10 from run-level failure families of the runs
    /// (`--runs`, else `--from-recorded`) against the release (`--release`,
    /// else the runs directory's grandparent).
    #[arg(long)]
    families: bool,
}

/// Runs `earthverse report`.
pub fn run_report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let mut inputs = args.sources.input_paths();
    if let Some(dir) = &args.runs {
        inputs.push(("--runs", dir));
    }
    super::inputs::refuse_outputs(&[("--html", Some(args.html.as_path()))], &inputs)?;
    let loaded = args.sources.load()?;
    let mut input = ReportInput::new(args.title);
    input.source = loaded.source.join(", ");
    input.outcomes = loaded.outcomes;
    input.details = loaded.details;
    if let Some(dir) = &args.runs {
        earthverse_outcomes::attach_answers(&mut input.details, dir)?;
    }
    if args.families {
        let Some(dir) = args.runs.as_ref().or(args.sources.from_recorded.as_ref()) else {
            anyhow::bail!("--families needs --runs DIR or --from-recorded DIR");
        };
        let root = match &args.sources.release {
            Some(r) => r.clone(),
            None => dir
                .parent()
                .and_then(Path::parent)
                .map(Path::to_path_buf)
                .context("--families: give --release ROOT")?,
        };
        input.families = Some(super::families::report_figures(&root, dir)?);
    }
    input.bootstrap = args.bootstrap;
    input.prices_usd_per_m = loaded.flat_prices;
    let html = earthverse_report::render_html(&input)?;
    earthverse_package_model::output::write_atomic(&args.html, |file| {
        file.write_all(html.as_bytes())
    })?;
    eprintln!("wrote {}", args.html.display());
    Ok(ExitCode::SUCCESS)
}
