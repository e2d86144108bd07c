//! The batch runner as a child process for the SIGKILL test
//! (`controller_sigkill.rs`): runs every package under `<release>/packages`
//! as one task with a slow scripted model (each reply after `delay_ms`) and
//! the real research tools, appending `<task_id> <pid>` to `<out>/starts.log`
//! each time a task starts.
//!
//! Usage: `earthverse-controller-batch-child <release> <out> <delay_ms> <concurrency>`

use async_trait::async_trait;
use earthverse_agent_controller::batch::{run_batch, BatchSettings, NoProgress};
use earthverse_agent_controller::{Agent, AgentError, AgentFactory, Solver};
use earthverse_agent_controller::{ControllerSettings, TaskInput};
use earthverse_model_provider::{ChatModel, ChatRequest, ChatResponse, ScriptedModel};
use earthverse_tool_registry::{Registry, ResearchToolsConfig};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

struct Slow {
    inner: ScriptedModel,
    delay: Duration,
}

#[async_trait]
impl ChatModel for Slow {
    fn model_id(&self) -> &str {
        "slow-scripted"
    }
    async fn chat(&self, request: ChatRequest) -> earthverse_model_provider::Result<ChatResponse> {
        tokio::time::sleep(self.delay).await;
        self.inner.chat(request).await
    }
}

struct Factory {
    out: PathBuf,
    delay: Duration,
    tools: Arc<Registry>,
}

impl AgentFactory for Factory {
    fn agent(&self, task: &TaskInput) -> Result<Agent, AgentError> {
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.out.join("starts.log"))
            .map_err(|e| AgentError::Other(e.into()))?;
        // One write per line: with O_APPEND a single small write is atomic,
        // while `writeln!` may write the pieces separately and interleave
        // with another worker's line.
        let line = format!("{} {}\n", task.task_id, std::process::id());
        log.write_all(line.as_bytes())
            .map_err(|e| AgentError::Other(e.into()))?;
        let script = ScriptedModel::from_texts(
            "slow-scripted",
            [
                r#"{"action":"tool_call","tool":"list_package_files","args":{},"reason":"inventory"}"#.to_string(),
                format!(r#"{{"action":"final_answer","final_answer":{{"task":"{}"}},"confidence":1}}"#, task.task_id),
            ],
        );
        Ok(Agent {
            model: Arc::new(Slow {
                inner: script,
                delay: self.delay,
            }),
            tools: self.tools.clone(),
            settings: ControllerSettings::default(),
        })
    }
    fn model_id(&self) -> String {
        "slow-scripted".into()
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        eprintln!(
            "usage: {} <release> <out> <delay_ms> <concurrency>",
            args[0]
        );
        return ExitCode::from(2);
    }
    let release = PathBuf::from(&args[1]);
    let out = PathBuf::from(&args[2]);
    let delay = Duration::from_millis(args[3].parse().unwrap_or(100));
    let concurrency: usize = args[4].parse().unwrap_or(2);
    let mut tasks = Vec::new();
    let Ok(entries) = std::fs::read_dir(release.join("packages")) else {
        eprintln!("no packages under {}", release.display());
        return ExitCode::from(2);
    };
    for entry in entries.flatten() {
        let id = entry.file_name().to_string_lossy().into_owned();
        tasks.push(TaskInput {
            task_id: format!("{id}_Q1"),
            event_id: id,
            question: "List the package.".into(),
            package_root: entry.path(),
            question_path: None,
            scratch_dir: out.join("scratch"),
        });
    }
    let factory: Arc<dyn Solver> = Arc::new(Factory {
        out: out.clone(),
        delay,
        tools: Arc::new(Registry::with_research_tools(ResearchToolsConfig::default())),
    });
    let mut settings = BatchSettings::new(&out, "slow");
    settings.concurrency = concurrency;
    let Ok(runtime) = tokio::runtime::Runtime::new() else {
        return ExitCode::from(2);
    };
    match runtime.block_on(run_batch(tasks, factory, settings, Arc::new(NoProgress))) {
        Ok(summary) => {
            println!(
                "ok={} error={} done={} locked={}",
                summary.ok, summary.error, summary.already_done, summary.locked
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}
