//! Replaying one published system's recorded runs through the batch runner,
//! the real tool registry and the replay provider (the code path of
//! `earthverse run <release> --agent replay:<dir>`): every replayed run must
//! end with the recorded final answer, and every recorded call of the
//! reference file tools must give the recorded output text (`python_exec` is
//! excluded: the release keeps only a preview of its code).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::field_reassign_with_default
)]

use earthverse_agent_controller::batch::{run_batch, BatchSettings, NoProgress, TaskStatus};
use earthverse_agent_controller::ReplayModel;
use earthverse_agent_controller::{Agent, AgentError, AgentFactory, Solver};
use earthverse_agent_controller::{ControllerSettings, TaskInput, ToolBox, Trajectory};
use earthverse_package_model::{RecordedRun, Release};
use earthverse_tool_registry::{Registry, ResearchToolsConfig};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

const SYSTEM: &str = "gpt-4o";
const FILE_TOOLS: [&str; 5] = [
    "list_package_files",
    "read_text_file",
    "search_package_files",
    "summarize_table_or_json",
    "inspect_image",
];

struct Replay {
    dir: PathBuf,
    tools: Arc<dyn ToolBox>,
}

impl AgentFactory for Replay {
    fn agent(&self, task: &TaskInput) -> Result<Agent, AgentError> {
        let model = ReplayModel::from_path(&self.dir.join(format!("{}.json", task.task_id)))
            .map_err(|e| AgentError::Other(e.into()))?;
        let mut settings = ControllerSettings::default();
        settings.budgets.max_turns = settings.budgets.max_turns.max(model.turns() as u32 + 1);
        settings.model_id = Some(model.recorded().model_id.clone());
        settings.model_name = model.recorded().model_name.clone();
        Ok(Agent {
            model: Arc::new(model),
            tools: self.tools.clone(),
            settings,
        })
    }
    fn model_id(&self) -> String {
        format!("replay:{SYSTEM}")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaying_a_system_reproduces_answers_and_tool_outputs() {
    let data = earthverse_tests::dev_slice();
    let release = Release::load(&data).unwrap();
    let dir = data.join("exploration/trajectories").join(SYSTEM);
    let out = tempfile::tempdir().unwrap();
    let mut inputs = Vec::new();
    for task in release.tasks() {
        if dir.join(format!("{}.json", task.task_id)).is_file() {
            inputs.push(TaskInput {
                task_id: task.task_id.clone(),
                event_id: task.event_id.clone(),
                question: task.question.clone(),
                package_root: release.package_dir(&task.event_id),
                question_path: None,
                scratch_dir: out.path().join("scratch"),
            });
        }
    }
    let recorded_count = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(
        inputs.len(),
        recorded_count,
        "every recorded run has its task"
    );
    let factory: Arc<dyn Solver> = Arc::new(Replay {
        dir: dir.clone(),
        tools: Arc::new(Registry::with_research_tools(
            ResearchToolsConfig::reference(),
        )),
    });
    let mut batch = BatchSettings::new(out.path(), format!("replay-{SYSTEM}"));
    batch.concurrency = 4;
    let summary = run_batch(inputs, factory, batch.clone(), Arc::new(NoProgress))
        .await
        .unwrap();
    assert_eq!(summary.ok, recorded_count, "{:?}", summary.outcomes);

    let mut compared = 0;
    let mut absent = 0;
    let mut jpeg_close = 0;
    let mut mismatches = Vec::new();
    for outcome in &summary.outcomes {
        assert_eq!(outcome.status, TaskStatus::Ok);
        let ours =
            Trajectory::load(&batch.task_dir(&outcome.task_id).join("trajectory.json")).unwrap();
        let recorded: RecordedRun = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{}.json", outcome.task_id))).unwrap(),
        )
        .unwrap();
        // Our record reads as a public recorded run, and vice versa.
        let ours_json = serde_json::to_value(&ours).unwrap();
        let as_public: RecordedRun = serde_json::from_value(ours_json.clone()).unwrap();
        assert_eq!(as_public.task_id, ours.task_id);
        let published: Value = serde_json::to_value(&recorded).unwrap();
        let _: Trajectory = serde_json::from_value(published).unwrap();
        for key in [
            "task_id",
            "model_id",
            "model_name",
            "scores",
            "diagnostics",
            "tool_calls",
            "evidence",
            "reasoning_summary",
            "unsupported_or_unresolved",
            "final_answer",
        ] {
            assert!(ours_json.get(key).is_some(), "{key} missing");
        }

        assert_eq!(
            ours.final_answer, recorded.final_answer,
            "{}",
            outcome.task_id
        );
        assert_eq!(ours.model_id, SYSTEM);
        assert_eq!(
            ours.tool_calls.len(),
            recorded.tool_calls.len(),
            "{}",
            outcome.task_id
        );
        // Packages whose root listing counts fewer files than the original
        // run saw: listings and searches there cannot reproduce.
        let incomplete = ours
            .tool_calls
            .iter()
            .zip(&recorded.tool_calls)
            .any(|(mine, theirs)| {
                mine.tool == "list_package_files"
                    && count_total(&mine.output.text)
                        != count_total(
                            theirs
                                .output
                                .get("text")
                                .and_then(Value::as_str)
                                .unwrap_or(""),
                        )
            });
        for (mine, theirs) in ours.tool_calls.iter().zip(&recorded.tool_calls) {
            assert_eq!(mine.tool, theirs.tool);
            if incomplete
                && matches!(
                    mine.tool.as_str(),
                    "list_package_files" | "search_package_files"
                )
            {
                if mine.output.text
                    != theirs
                        .output
                        .get("text")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                {
                    absent += 1;
                }
                continue;
            }
            if !FILE_TOOLS.contains(&theirs.tool.as_str()) {
                continue;
            }
            let recorded_text = theirs
                .output
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("");
            // The public packages lack some files the original runs saw
            // (large rasters replaced by previews, inventories and READMEs
            // removed): a call whose recorded output names such a file, or
            // which read one, cannot reproduce and is counted apart.
            let mut names_missing = missing_paths(recorded_text, &data);
            if let Some(p) = theirs.args.get("path").and_then(Value::as_str) {
                if !release
                    .package_dir(&ours_event(&ours.task_id))
                    .join(p)
                    .exists()
                    && !data.join("packages").join(p).exists()
                {
                    names_missing.push(p.to_string());
                }
            }
            if !names_missing.is_empty() {
                if mine.output.text != recorded_text {
                    absent += 1;
                }
                continue;
            }
            compared += 1;
            // JPEG decoding differs slightly between libjpeg (PIL, the
            // reference) and the Rust decoder: channel statistics of
            // `inspect_image` may differ by a few hundredths; everything
            // else must be identical.
            if mine.tool == "inspect_image"
                && mine.output.text != recorded_text
                && Some(mine.ok) == theirs.ok
                && same_image_stats(&mine.output.text, recorded_text)
            {
                jpeg_close += 1;
                continue;
            }
            if mine.output.text != recorded_text || Some(mine.ok) != theirs.ok {
                mismatches.push(format!(
                    "{} step {} {}: ok {} vs {:?}\n ours: {}\n rec:  {}",
                    outcome.task_id,
                    mine.step,
                    mine.tool,
                    mine.ok,
                    theirs.ok,
                    mine.output.text,
                    recorded_text
                ));
            }
        }
    }
    eprintln!(
        "{SYSTEM}: {} runs replayed; {compared} file-tool outputs compared; {absent} differing \
         calls excluded because the public package lacks files the original run saw; \
         {jpeg_close} inspect_image outputs equal up to JPEG-decoder rounding (<= 0.5)",
        summary.ok
    );
    assert!(compared > 200, "only {compared} file-tool calls compared");
    assert!(
        mismatches.is_empty(),
        "{} of {compared} file-tool outputs differ:\n{}",
        mismatches.len(),
        mismatches
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

fn same_image_stats(ours: &str, recorded: &str) -> bool {
    let (Ok(a), Ok(b)) = (
        serde_json::from_str::<Value>(ours),
        serde_json::from_str::<Value>(recorded),
    ) else {
        return false;
    };
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return false;
    };
    if a.len() != b.len() {
        return false;
    }
    a.iter().all(|(k, va)| match (k.as_str(), b.get(k)) {
        ("rgb_mean" | "rgb_stddev", Some(vb)) => {
            let (Some(xa), Some(xb)) = (va.as_array(), vb.as_array()) else {
                return false;
            };
            xa.len() == xb.len()
                && xa
                    .iter()
                    .zip(xb)
                    .all(|(p, q)| match (p.as_f64(), q.as_f64()) {
                        (Some(p), Some(q)) => (p - q).abs() <= 0.5,
                        _ => false,
                    })
        }
        (_, Some(vb)) => va == vb,
        (_, None) => false,
    })
}

fn count_total(text: &str) -> Option<u64> {
    let at = text.find("\"file_count_total\": ")? + "\"file_count_total\": ".len();
    let digits: String = text[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn ours_event(task_id: &str) -> String {
    task_id.split('_').next().unwrap_or(task_id).to_string()
}

/// Release-relative package paths named in `text` that do not exist.
fn missing_paths(text: &str, data: &std::path::Path) -> Vec<String> {
    const PREFIX: &str = "event_packages/standard_event_packages/packages/";
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find(PREFIX) {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| c == '"' || c == '\\' || c.is_whitespace())
            .unwrap_or(tail.len());
        let path = &tail[..end];
        let local = data.join("packages").join(path);
        if !local.exists() {
            out.push(path.to_string());
        }
        rest = &tail[end..];
    }
    out
}
