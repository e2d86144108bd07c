//! Overheads of the experimental conditions (issue #26), beside a
//! reference in the same run:
//!
//! 1. **router per step**: one routing step of the Top-20 / dynamic
//!    catalogue over the full registry (six research tools + 170 domain
//!    operations; the query is a dev-slice question plus a 12,000-character
//!    observation, as a dynamic catalogue routes after each step) —
//!    reference: the same BM25 in plain Python (`router_reference.py`),
//!    which must pick the same 20 tools. Target: < 1 ms per step.
//! 2. **direct serialisation** of the largest dev-slice package, compressed
//!    and all-text — reference: `cat` of every file of that package to
//!    `/dev/null` (the bytes both must at least read). Target: < 1 s.
//!
//! Run: `cargo bench -p earthverse-benches --bench conditions` (dev slice
//! from `$EARTHVERSE_DATA`; Python from `$EARTHVERSE_PYTHON`, default
//! `python3`, standard library only).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_agent_controller::direct::{serialise, DirectSettings};
use earthverse_agent_controller::CatalogueSession;
use earthverse_agent_controller::PresentedToolBox;
use earthverse_agent_controller::{CatalogueSpec, TaskInput, ToolNames};
use earthverse_benches::{best_of, dev_slice, project_root};
use earthverse_package_model::Release;
use earthverse_tool_registry::catalogue::{
    ordered_descriptors, present_from, routing_text, Bm25Router,
};
use earthverse_tool_registry::{Registry, ResearchToolsConfig, RESEARCH_TOOL_NAMES};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const ROUNDS: usize = 5;
const STEPS: usize = 200;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn package_bytes(root: &Path) -> u64 {
    walk(root)
        .iter()
        .map(|p| p.metadata().map_or(0, |m| m.len()))
        .sum()
}

/// Every file under `root`, sorted.
fn walk(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(walkdir::DirEntry::into_path)
        .collect();
    files.sort();
    files
}

fn main() {
    let data = dev_slice();
    let release = Release::load(&data).expect("the dev slice loads");
    let mut registry = Registry::with_research_tools(ResearchToolsConfig::default());
    for op in earthverse_domain_ops::all_operations() {
        registry.register(op).unwrap();
    }
    let registry = std::sync::Arc::new(registry);
    let tools = registry.definitions();
    println!("registry: {} tools", tools.len());

    // 1. The router, one step.
    let task = &release.tasks()[0];
    let observation: String =
        std::fs::read_to_string(&walk(&release.package_dir(&task.event_id))[0])
            .unwrap_or_default()
            .chars()
            .take(12_000)
            .collect();
    let query = format!("{} {}", task.question, observation);
    let plan = CatalogueSpec::Dynamic.plan(ToolNames::Reference);
    let router = Bm25Router::default();
    // The router's choice: what a dynamic catalogue computes at each step
    // (the registry's descriptors and the BM25 index are built once).
    let ordered = ordered_descriptors(&registry);
    let (best, chosen) = best_of(ROUNDS, || {
        let mut last = None;
        for _ in 0..STEPS {
            last = Some(present_from(&ordered, &plan, &query, &router));
        }
        last.unwrap()
    });
    let per_step = best / STEPS as u32;
    // The whole per-step hook of a dynamic session: route, compare, and
    // render the new offer when it changed (alternating two observations,
    // so every step renders).
    let toolbox = PresentedToolBox::new(registry.clone(), plan.clone());
    let mut session = toolbox.session(&task.question);
    let observations = [observation.as_str(), "flood gauge discharge river stage"];
    let (hook, _) = best_of(ROUNDS, || {
        for i in 0..STEPS {
            std::hint::black_box(session.after_observation(observations[i % 2]));
        }
    });
    let per_hook = hook / STEPS as u32;
    let ours_routed: Vec<String> = chosen
        .tools
        .iter()
        .map(|t| t.registry_name.clone())
        .filter(|n| !RESEARCH_TOOL_NAMES.contains(&n.as_str()))
        .collect();
    let docs: Vec<serde_json::Value> = tools
        .iter()
        .filter(|d| !RESEARCH_TOOL_NAMES.contains(&d.name.as_str()))
        .map(|d| serde_json::json!({"name": d.name, "text": routing_text(d)}))
        .collect();
    let scratch = tempfile::tempdir().unwrap();
    let docs_file = scratch.path().join("docs.json");
    let query_file = scratch.path().join("query.txt");
    std::fs::write(&docs_file, serde_json::to_vec(&docs).unwrap()).unwrap();
    std::fs::write(&query_file, &query).unwrap();
    let python = std::env::var("EARTHVERSE_PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(&python)
        .arg(project_root().join("benches/router_reference.py"))
        .arg(&docs_file)
        .arg(&query_file)
        .arg("20")
        .arg("50")
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reference: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let reference_top: Vec<String> = reference["top"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        ours_routed, reference_top,
        "both routers pick the same 20 tools"
    );
    let py_ms = reference["step_ms"].as_f64().unwrap();
    println!(
        "router step (176 tools, query {} chars): ours {:.3} ms, python BM25 {:.3} ms, ratio {:.3}",
        query.chars().count(),
        ms(per_step),
        py_ms,
        ms(per_step) / py_ms
    );
    println!(
        "dynamic session hook per step (route + compare + render): {:.3} ms",
        ms(per_hook)
    );

    // 2. Direct serialisation of the largest package.
    let (event, root) = release
        .tasks()
        .iter()
        .map(|t| (t.event_id.clone(), release.package_dir(&t.event_id)))
        .max_by_key(|(_, root)| package_bytes(root))
        .unwrap();
    let files = walk(&root);
    println!(
        "largest package {event}: {} files, {:.1} MB",
        files.len(),
        package_bytes(&root) as f64 / 1e6
    );
    let task = release
        .tasks()
        .iter()
        .find(|t| t.event_id == event)
        .unwrap();
    let input = TaskInput {
        task_id: task.task_id.clone(),
        event_id: event.clone(),
        question: task.question.clone(),
        package_root: root.clone(),
        question_path: None,
        scratch_dir: scratch.path().to_path_buf(),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (cat, _) = best_of(ROUNDS, || {
        let status = Command::new("cat")
            .args(&files)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    });
    for settings in [DirectSettings::compressed(), DirectSettings::all_text()] {
        let (time, s) = best_of(ROUNDS, || {
            runtime.block_on(serialise(registry.as_ref(), &input, &settings))
        });
        println!(
            "serialise {:?}: ours {:.1} ms ({} files injected, {} chars), cat of every file {:.1} ms, ratio {:.2}",
            settings.mode,
            ms(time),
            s.input.files.len(),
            s.input.chars,
            ms(cat),
            ms(time) / ms(cat)
        );
    }
}
