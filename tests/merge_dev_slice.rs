//! `earthverse merge` on the development slice: the baseline agent over
//! every task of the slice, once unsharded and once as 4 shards (`--shard
//! K/4`, run at once into 4 output directories), through the batch runner
//! and the real tool registry. The merged shards hold every planned task
//! exactly once, with the same run status and final answer as the
//! unsharded run, and the merge manifest's hashes are those of the files
//! merged.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_agent_controller::batch::{run_batch, BatchSettings, NoProgress, Shard};
use earthverse_agent_controller::merge::{check, merge_into, sha256_file};
use earthverse_agent_controller::{
    Agent, AgentError, AgentFactory, BaselineModel, ControllerSettings, Solver, TaskInput, ToolBox,
    Trajectory,
};
use earthverse_package_model::Release;
use earthverse_tool_registry::{Registry, ResearchToolsConfig};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

struct Baseline(Arc<dyn ToolBox>);

impl AgentFactory for Baseline {
    fn agent(&self, _task: &TaskInput) -> Result<Agent, AgentError> {
        Ok(Agent {
            model: Arc::new(BaselineModel::new()),
            tools: self.0.clone(),
            settings: ControllerSettings::default(),
        })
    }
    fn model_id(&self) -> String {
        "baseline".into()
    }
}

fn answers(system_dir: &Path) -> BTreeMap<String, (String, serde_json::Value)> {
    std::fs::read_dir(system_dir)
        .unwrap()
        .filter_map(|e| Trajectory::load(&e.unwrap().path().join("trajectory.json")).ok())
        .map(|t| {
            (
                t.task_id.clone(),
                (
                    t.diagnostics
                        .run_status
                        .map_or_else(String::new, |s| s.to_string()),
                    t.final_answer,
                ),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_merged_shards_equal_the_unsharded_baseline_run() {
    let release = Release::load(&earthverse_tests::dev_slice()).unwrap();
    let root = tempfile::tempdir().unwrap();
    let inputs: Vec<TaskInput> = release
        .tasks()
        .iter()
        .map(|task| TaskInput {
            task_id: task.task_id.clone(),
            event_id: task.event_id.clone(),
            question: task.question.clone(),
            package_root: release.package_dir(&task.event_id),
            question_path: None,
            scratch_dir: root.path().join("scratch"),
        })
        .collect();
    let solver: Arc<dyn Solver> = Arc::new(Baseline(Arc::new(Registry::with_research_tools(
        ResearchToolsConfig::default(),
    ))));
    let batch = |dir: &str, shard: Option<Shard>| {
        let mut settings = BatchSettings::new(root.path().join(dir), "baseline");
        settings.concurrency = 2;
        settings.shard = shard;
        run_batch(
            inputs.clone(),
            solver.clone(),
            settings,
            Arc::new(NoProgress),
        )
    };
    let whole = batch("unsharded", None).await.unwrap();
    assert_eq!(whole.planned, inputs.len());
    let shards: Vec<_> = (0..4)
        .map(|k| tokio::spawn(batch(&format!("s{k}"), Some(Shard { index: k, count: 4 }))))
        .collect();
    let mut planned = 0;
    for shard in shards {
        planned += shard.await.unwrap().unwrap().planned;
    }
    assert_eq!(planned, inputs.len(), "the shards partition the tasks");

    let dirs: Vec<_> = (0..4).map(|k| root.path().join(format!("s{k}"))).collect();
    let checks = check(&dirs).unwrap();
    assert_eq!(checks.len(), 1);
    let s = &checks[0];
    assert!(s.is_complete(), "missing {:?}", s.missing);
    assert_eq!(s.planned.len(), inputs.len());
    assert!(s.duplicates.is_empty(), "{:?}", s.duplicates);
    let merged = root.path().join("merged");
    let manifests = merge_into(&checks, &merged).unwrap();
    let manifest = &manifests[0];
    assert!(manifest.complete);
    assert_eq!(manifest.records.len(), inputs.len());
    for entry in &manifest.records {
        for (file, hash) in &entry.files {
            let path = merged.join("baseline").join(&entry.task_id).join(file);
            assert_eq!(&sha256_file(&path).unwrap(), hash, "{}", path.display());
        }
    }

    let sharded = answers(&merged.join("baseline"));
    let unsharded = answers(&root.path().join("unsharded/baseline"));
    assert_eq!(sharded.len(), inputs.len());
    assert_eq!(
        sharded, unsharded,
        "the merged shards differ from the unsharded run"
    );
    let ok = sharded
        .values()
        .filter(|(status, _)| status == "ok")
        .count();
    eprintln!(
        "dev slice, baseline: {} tasks planned; 4 shards of {planned} merged = unsharded ({} tasks, {ok} ok, same final answers)",
        inputs.len(),
        sharded.len()
    );
}
