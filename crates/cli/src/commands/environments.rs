//! `earthverse environments`: the scientific environments of Table 7
//! (`earthverse_environments`): which are installed here, and their
//! coverage of a release (App. D.6; Table 14's Success column).

use anyhow::Context as _;
use earthverse_environments::coverage::{coverage, Coverage};
use earthverse_environments::{detect, EnvironmentSettings, ENVIRONMENTS};
use earthverse_package_model::Release;
use earthverse_tool_registry::PythonConfig;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// `earthverse environments` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum EnvironmentsCommand {
    /// The 13 environments, their operations and whether each is installed.
    List {
        /// Python interpreter (default as `earthverse run` picks it).
        #[arg(long)]
        python: Option<PathBuf>,
    },
    /// Per environment: packages and tasks of a release whose packages hold
    /// the inputs its operations need, and the success of a scripted agent
    /// calling each operation once per compatible package (in the sandbox).
    Coverage {
        /// The release (holding `tasks/`).
        root: PathBuf,
        /// Only these environments (repeatable; default: every installed one).
        #[arg(long = "environment", value_name = "NAME")]
        environments: Vec<String>,
        /// Python interpreter (default as `earthverse run` picks it).
        #[arg(long)]
        python: Option<PathBuf>,
        /// Print JSON lines instead of a table.
        #[arg(long)]
        json: bool,
    },
}

/// Runs a subcommand.
pub fn run(cmd: EnvironmentsCommand) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(run_async(cmd))
}

fn settings(python: Option<PathBuf>) -> Arc<EnvironmentSettings> {
    let (config, _) = PythonConfig::discover(python);
    Arc::new(EnvironmentSettings {
        python: config,
        path: None,
    })
}

async fn run_async(cmd: EnvironmentsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        EnvironmentsCommand::List { python } => {
            let settings = settings(python);
            for env in ENVIRONMENTS {
                let status = match detect(env, &settings.detection()).await {
                    Ok(d) => format!("installed ({})", d.found.join(", ")),
                    Err(e) => format!("MISSING: {e}"),
                };
                let ops: Vec<&str> = env.operations.iter().map(|o| o.name).collect();
                println!(
                    "{:<16} {:<16} {}\n    {}",
                    env.slug,
                    env.name,
                    status,
                    ops.join(", ")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        EnvironmentsCommand::Coverage {
            root,
            environments,
            python,
            json,
        } => {
            let settings = settings(python);
            let release =
                Release::load(&root).with_context(|| format!("loading {}", root.display()))?;
            let mut per_package: BTreeMap<PathBuf, usize> = BTreeMap::new();
            for task in release.tasks() {
                *per_package
                    .entry(release.task_package_dir(task))
                    .or_default() += 1;
            }
            let packages: Vec<(String, PathBuf, usize)> = per_package
                .into_iter()
                .map(|(p, n)| {
                    let id = p
                        .file_name()
                        .map(|s| s.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    (id, p, n)
                })
                .collect();
            let scratch = tempfile::tempdir()?;
            if !json {
                println!("| environment | compatible packages | compatible tasks | calls | success % | failure classes |");
                println!("|---|---|---|---|---|---|");
            }
            for env in ENVIRONMENTS {
                let wanted = environments.is_empty()
                    || environments.iter().any(|n| {
                        n.eq_ignore_ascii_case(env.slug) || n.eq_ignore_ascii_case(env.name)
                    });
                if !wanted {
                    continue;
                }
                if let Err(e) = detect(env, &settings.detection()).await {
                    if !environments.is_empty() {
                        return Err(e).context("--environment");
                    }
                    eprintln!("skipped: {e}");
                    continue;
                }
                let c = coverage(env, &packages, settings.clone(), scratch.path()).await;
                print_row(&c, json)?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print_row(c: &Coverage, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(c)?);
        return Ok(());
    }
    let success = if c.calls == 0 {
        earthverse_stats_bootstrap::UNDEFINED.to_string()
    } else {
        format!("{:.1}", 100.0 * c.ok as f64 / c.calls as f64)
    };
    let classes: Vec<String> = c
        .failure_classes
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    println!(
        "| {} | {}/{} | {}/{} | {} | {} | {} |",
        c.environment,
        c.compatible_packages,
        c.packages,
        c.compatible_tasks,
        c.tasks,
        c.calls,
        success,
        classes.join(", ")
    );
    Ok(())
}
