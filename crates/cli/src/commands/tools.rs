//! `earthverse tools`: list, call and replay research tools and domain
//! operations (paper §3.4).

use anyhow::Context as _;
use earthverse_tool_registry::python_replay::{replay_python, PythonReplayOptions};
use earthverse_tool_registry::replay;
use earthverse_tool_registry::{
    PythonConfig, ReadMode, Registry, ResearchToolsConfig, SandboxPolicy, Tool, ToolContext,
};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Prints a line to stdout, ending quietly when the reader went away
/// (`earthverse tools list | head`).
macro_rules! emit {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `earthverse tools` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ToolsCommand {
    /// List the registered tools (research tools and domain operations).
    List {
        /// Print JSON (name, family, description, schema) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool on a package and print its envelope.
    Call {
        /// Tool name, e.g. `read_text_file`.
        tool: String,
        /// The event package directory (`.../packages/CSX-NNN`).
        #[arg(long)]
        package: PathBuf,
        /// Arguments as a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Scratch directory for `python_exec` (default: a fresh temporary directory).
        #[arg(long)]
        scratch: Option<PathBuf>,
        /// Python interpreter for `python_exec` (default: `EARTHVERSE_PYTHON`, else
        /// the scientific environment of `scripts/python-env.sh`, else `python3`).
        #[arg(long)]
        python: Option<PathBuf>,
        /// Run Python WITHOUT the OS sandbox (explicit, logged opt-out).
        #[arg(long)]
        unsandboxed_python: bool,
        /// Read only what the reference read (no content-sniffed text).
        #[arg(long)]
        reference_mode: bool,
        /// Also print the call record (normalised args, status, timing, sandbox report).
        #[arg(long)]
        record: bool,
    },
    /// Re-execute every recorded tool call of the recorded runs against the
    /// packages and compare with the recorded output.
    Replay {
        /// Release root (holding `packages/` and `exploration/`).
        release: PathBuf,
        /// Directory of recorded runs (default `<release>/exploration/trajectories`).
        #[arg(long)]
        runs: Option<PathBuf>,
        /// Print the whole report as JSON.
        #[arg(long)]
        json: bool,
        /// Also re-execute the recorded `python_exec` calls in the OS sandbox
        /// with this interpreter (a virtual environment's `bin/python`, or the
        /// environment directory itself; `scripts/python-env.sh` prints it).
        #[arg(long)]
        python: Option<PathBuf>,
        /// Runs whose `python_exec` calls are replayed at once (default: the
        /// number of cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Wall-clock limit of each replayed `python_exec` call, in seconds
        /// (default: the harness's 60 s, Appendix C.2).
        #[arg(long, default_value_t = 60.0)]
        python_wall_seconds: f64,
    },
}

/// Every tool the CLI knows: the six research tools and the domain operations.
fn all_tools(config: ResearchToolsConfig) -> Registry {
    let mut registry = Registry::with_research_tools(config);
    // Domain operations of earthverse-domain-ops.
    for op in domain_operations() {
        if let Err(err) = registry.register(op) {
            tracing::warn!(%err, "skipping a domain operation");
        }
    }
    registry
}

/// The single call site of the domain-ops catalogue.
fn domain_operations() -> Vec<Arc<dyn Tool>> {
    earthverse_domain_ops::all_operations()
}

/// Runs the command.
pub fn run(cmd: ToolsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        ToolsCommand::List { json } => {
            let registry = all_tools(ResearchToolsConfig::default());
            let defs = registry.definitions();
            if json {
                emit!("{}", serde_json::to_string_pretty(&defs)?);
            } else {
                for d in &defs {
                    let family = serde_json::to_value(d.family)?
                        .as_str()
                        .unwrap_or("")
                        .to_string();
                    let first = d.description.split(". ").next().unwrap_or("");
                    emit!("{:<34} {:<20} {}", d.name, family, first);
                }
                emit!("{} tools", defs.len());
            }
            Ok(ExitCode::SUCCESS)
        }
        ToolsCommand::Call {
            tool,
            package,
            args,
            scratch,
            python,
            unsandboxed_python,
            reference_mode,
            record,
        } => {
            let args: serde_json::Value = serde_json::from_str(&args)
                .with_context(|| format!("--args is not JSON: {args}"))?;
            // The interpreter is probed only when Python will run.
            let mut python_config = if tool == earthverse_tool_registry::research::PYTHON_EXEC {
                super::python_discovered(python)?
            } else {
                PythonConfig {
                    interpreter: python.unwrap_or_else(|| PythonConfig::default().interpreter),
                    ..PythonConfig::default()
                }
            };
            if unsandboxed_python {
                python_config.policy = SandboxPolicy::Unsandboxed {
                    reason: "--unsandboxed-python given on the command line".into(),
                };
            }
            let config = ResearchToolsConfig {
                python: python_config,
                read_mode: if reference_mode {
                    ReadMode::Reference
                } else {
                    ReadMode::Extended
                },
            };
            let registry = all_tools(config);
            let temp = tempfile_dir()?;
            let scratch = scratch.unwrap_or_else(|| temp.clone());
            std::fs::create_dir_all(&scratch)
                .with_context(|| format!("creating {}", scratch.display()))?;
            anyhow::ensure!(
                package.is_dir(),
                "package directory {} does not exist",
                package.display()
            );
            let ctx = ToolContext::new(&package, &scratch);
            let rt = tokio::runtime::Runtime::new()?;
            let rec = rt.block_on(registry.call(&ctx, &tool, args));
            if record {
                emit!("{}", serde_json::to_string_pretty(&rec)?);
            } else {
                emit!(
                    "{}",
                    serde_json::to_string_pretty(&rec.envelope.envelope_json())?
                );
            }
            let _ = std::fs::remove_dir_all(&temp);
            Ok(if rec.envelope.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        ToolsCommand::Replay {
            release,
            runs,
            json,
            python,
            jobs,
            python_wall_seconds,
        } => {
            let mut report = replay::replay(&release, runs.as_deref())
                .with_context(|| format!("replaying recorded runs of {}", release.display()))?;
            let python_report = match python {
                None => None,
                Some(path) => {
                    let interpreter = interpreter_of(&path)?;
                    let mut python = super::python_discovered(Some(interpreter))?;
                    python.limits.wall = std::time::Duration::try_from_secs_f64(
                        python_wall_seconds,
                    )
                    .ok()
                    .filter(|d| !d.is_zero())
                    .with_context(|| {
                        format!("--python-wall-seconds {python_wall_seconds}: not a positive number of seconds")
                    })?;
                    let jobs = jobs.unwrap_or_else(|| {
                        std::thread::available_parallelism().map_or(2, |n| n.get())
                    });
                    let options = PythonReplayOptions { python, jobs };
                    let python_report = replay_python(&release, runs.as_deref(), &options)
                        .with_context(|| {
                            format!("replaying the python_exec calls of {}", release.display())
                        })?;
                    // They are compared now: not skipped any more.
                    report
                        .skipped
                        .retain(|s| s.tool != earthverse_tool_registry::research::PYTHON_EXEC);
                    Some(python_report)
                }
            };
            if json {
                let mut value = serde_json::to_value(&report)?;
                if let (Some(p), Some(obj)) = (&python_report, value.as_object_mut()) {
                    obj.insert("python_exec".into(), serde_json::to_value(p)?);
                }
                emit!("{}", serde_json::to_string_pretty(&value)?);
            } else {
                super::inputs::emit(&report.to_string())?;
                if let Some(p) = &python_report {
                    super::inputs::emit(&p.to_string())?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The interpreter of `--python`: a file is the interpreter, a directory
/// is a virtual environment whose `bin/python` it is.
fn interpreter_of(path: &std::path::Path) -> anyhow::Result<PathBuf> {
    if path.is_dir() {
        let inside = path.join("bin").join("python");
        anyhow::ensure!(
            inside.is_file(),
            "--python {}: a directory but not a virtual environment (no bin/python)",
            path.display()
        );
        Ok(inside)
    } else {
        anyhow::ensure!(
            path.is_file(),
            "--python {}: no such interpreter",
            path.display()
        );
        Ok(path.to_path_buf())
    }
}

fn tempfile_dir() -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("earthverse-tools-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
