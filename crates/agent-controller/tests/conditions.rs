//! The experimental conditions (paper App. A.1–A.3; Tables 3, 4b, 6) change
//! exactly what the model is offered: checked on the fixture release with
//! the real registry (six research tools and the 170 domain operations)
//! and a scripted model that keeps every request it receives.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_agent_controller::{
    AnswerMode, CatalogueSpec, Condition, ContextPreset, Controller, ControllerSettings, Protocol,
    RunRecord, TaskInput, ToolBox, ToolNames, TurnBudget,
};
use earthverse_agent_controller::{PresentedToolBox, OPEN_DOMAIN_TOOL};
use earthverse_model_provider::{ChatRequest, ScriptedModel};
use earthverse_package_model::{RecordedRun, Release, RunStatus};
use earthverse_tool_registry::catalogue::{present, Bm25Router, ToolRouter};
use earthverse_tool_registry::{Registry, ResearchToolsConfig, RESEARCH_TOOL_NAMES};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

fn fixture_release() -> Release {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release");
    Release::load(&root).expect("the fixture release loads")
}

fn task(release: &Release, id: &str, scratch: &std::path::Path) -> TaskInput {
    let t = release
        .tasks()
        .iter()
        .find(|t| t.task_id == id)
        .expect("fixture task");
    TaskInput {
        task_id: t.task_id.clone(),
        event_id: t.event_id.clone(),
        question: t.question.clone(),
        package_root: release.package_dir(&t.event_id),
        question_path: None,
        scratch_dir: scratch.to_path_buf(),
    }
}

fn registry() -> Arc<Registry> {
    let mut registry = Registry::with_research_tools(ResearchToolsConfig::default());
    for op in earthverse_domain_ops::all_operations() {
        registry.register(op).unwrap();
    }
    Arc::new(registry)
}

fn final_answer() -> String {
    json!({"action": "final_answer", "final_answer": {"answer": 1}, "confidence": 0.5,
           "evidence": [], "reasoning_summary": ["scripted"], "unsupported_or_unresolved": []})
    .to_string()
}

fn tool_call(tool: &str, args: Value) -> String {
    json!({"action": "tool_call", "tool": tool, "args": args, "reason": "scripted"}).to_string()
}

fn settings_for(condition: &Condition) -> ControllerSettings {
    let mut settings = ControllerSettings::default();
    condition.apply(&mut settings);
    settings
}

fn tools_for(condition: &Condition) -> Arc<dyn ToolBox> {
    match condition.catalogue_plan() {
        Some(plan) => Arc::new(PresentedToolBox::new(registry(), plan)),
        None => registry(),
    }
}

async fn run(
    condition: &Condition,
    replies: Vec<String>,
    task_id: &str,
    protocol: Protocol,
) -> (RunRecord, Vec<ChatRequest>) {
    let release = fixture_release();
    let scratch = tempfile::tempdir().unwrap();
    let model = Arc::new(ScriptedModel::from_texts("scripted", replies).record_requests());
    let mut settings = settings_for(condition);
    settings.protocol = protocol;
    let controller = Controller::new(model.clone(), tools_for(condition), settings);
    let record = controller
        .run_task(&task(&release, task_id, scratch.path()))
        .await;
    (record, model.requests())
}

/// Tool names listed in the task message's catalogue (`- name: ...`).
fn catalogue_names(request: &ChatRequest) -> Vec<String> {
    let task = &request.messages[1].content;
    let tools = task.split("\nTools:\n").nth(1).expect("a Tools section");
    tools
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .filter_map(|l| l.split(':').next())
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn top_20_offers_the_research_tools_and_the_routers_twenty_for_the_task() {
    let condition = Condition {
        catalogue: Some(CatalogueSpec::TopK(20)),
        ..Condition::default()
    };
    let (record, requests) = run(
        &condition,
        vec![final_answer()],
        "FIX-002_Q1",
        Protocol::JsonInMessage,
    )
    .await;
    assert_eq!(
        record.trajectory.diagnostics.run_status,
        Some(RunStatus::Ok)
    );
    let offered = catalogue_names(&requests[0]);
    assert_eq!(offered.len(), 26, "{offered:?}");
    assert_eq!(&offered[..6], &RESEARCH_TOOL_NAMES.map(String::from));
    // An independent routing of the same question over the domain operations.
    let release = fixture_release();
    let question = &release
        .tasks()
        .iter()
        .find(|t| t.task_id == "FIX-002_Q1")
        .unwrap()
        .question;
    let others: Vec<_> = registry()
        .definitions()
        .into_iter()
        .filter(|d| !RESEARCH_TOOL_NAMES.contains(&d.name.as_str()))
        .collect();
    assert_eq!(others.len(), 170);
    let routed = Bm25Router::default().top_k(question, &others, 20);
    assert_eq!(&offered[6..], routed.as_slice());
    // The route depends on the task: another hazard routes differently.
    let other_question = &release
        .tasks()
        .iter()
        .find(|t| t.event_id != "FIX-002")
        .unwrap()
        .question;
    assert_ne!(
        Bm25Router::default().top_k(other_question, &others, 20),
        routed
    );
}

#[tokio::test]
async fn native_protocol_offers_the_same_tools_as_native_definitions() {
    let condition = Condition {
        catalogue: Some(CatalogueSpec::Fixed(10)),
        ..Condition::default()
    };
    let (_, requests) = run(
        &condition,
        vec![final_answer()],
        "FIX-001_Q1",
        Protocol::NativeTools,
    )
    .await;
    let native: Vec<&str> = requests[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(native.len(), 11, "ten tools and final_answer: {native:?}");
    assert_eq!(native.last(), Some(&"final_answer"));
    assert_eq!(catalogue_names(&requests[0]), native[..10].to_vec());
}

#[tokio::test]
async fn opaque_names_hide_the_names_and_still_call_the_right_tool() {
    let condition = Condition {
        tool_names: Some(ToolNames::Opaque),
        ..Condition::default()
    };
    let plan = condition.catalogue_plan().unwrap();
    let session = PresentedToolBox::new(registry(), plan).session("");
    let shown_list = earthverse_agent_controller::CatalogueSession::definitions(&session)
        .into_iter()
        .find(|d| d.description.starts_with("List files in the event package"))
        .expect("list_package_files is offered")
        .name;
    assert!(shown_list.starts_with("tool_"), "{shown_list}");
    let (record, requests) = run(
        &condition,
        vec![
            tool_call("list_package_files", json!({"subdir": "."})),
            tool_call(&shown_list, json!({"subdir": "."})),
            final_answer(),
        ],
        "FIX-001_Q1",
        Protocol::JsonInMessage,
    )
    .await;
    let offered = catalogue_names(&requests[0]);
    assert_eq!(offered.len(), 176);
    let real: BTreeSet<String> = registry()
        .definitions()
        .into_iter()
        .map(|d| d.name)
        .collect();
    for name in &offered {
        assert!(!real.contains(name), "`{name}` is a registry name");
        assert!(name.starts_with("tool_"), "`{name}` is not opaque");
    }
    // The real name is not offered under opaque names.
    let refused = &record.trajectory.tool_calls[0];
    assert!(!refused.ok && refused.output.text.contains("not offered"));
    // The shown name ran the real tool and the record keeps its real name.
    let call = &record.trajectory.tool_calls[1];
    assert_eq!(call.tool, "list_package_files");
    assert!(call.ok);
    assert!(call.output.text.contains("file_count_returned"));
    // The model saw the shown name only.
    let observation = &requests[2].messages.last().unwrap().content;
    assert!(observation.contains(&shown_list));
    assert!(!observation.contains("list_package_files"), "{observation}");
}

#[tokio::test]
async fn compressed_direct_makes_one_request_with_no_tools_over_a_bounded_summary() {
    for (mode, budget) in [
        (AnswerMode::CompressedDirect, 48_000),
        (AnswerMode::AllTextDirect, 320_000),
    ] {
        let condition = Condition {
            answer_mode: Some(mode),
            ..Condition::default()
        };
        let (record, requests) = run(
            &condition,
            vec![final_answer(), final_answer()],
            "FIX-002_Q1",
            Protocol::NativeTools,
        )
        .await;
        assert_eq!(requests.len(), 1, "{mode}: one model call");
        assert!(requests[0].tools.is_empty(), "{mode}: no tools offered");
        assert!(record.trajectory.tool_calls.is_empty());
        assert_eq!(record.trajectory.diagnostics.model_rounds, Some(1));
        let input = record
            .trajectory
            .direct_input
            .as_ref()
            .expect("direct_input");
        assert!(!input.files.is_empty(), "{mode}: files injected");
        assert!(input.chars <= budget);
        // The serialisation is in the request, every injected file named.
        let task_message = &requests[0].messages[1].content;
        for file in &input.files {
            assert!(task_message.contains(file.as_str()), "{mode}: {file}");
        }
        assert_eq!(
            record
                .trajectory
                .condition
                .as_ref()
                .and_then(|c| c.answer_mode.as_deref()),
            Some(mode.as_str())
        );
        // Deterministic: the same package serialises to the same text.
        let (_, again) = run(
            &condition,
            vec![final_answer()],
            "FIX-002_Q1",
            Protocol::NativeTools,
        )
        .await;
        assert_eq!(again[0].messages[1].content, *task_message);
    }
}

#[tokio::test]
async fn hierarchical_discovery_opens_a_domain_before_its_tools_can_run() {
    let condition = Condition {
        catalogue: Some(CatalogueSpec::Hierarchical),
        ..Condition::default()
    };
    let (record, requests) = run(
        &condition,
        vec![
            tool_call(
                "report_keyword_hits",
                json!({"path": "x.md", "keywords": ["flood"]}),
            ),
            tool_call(OPEN_DOMAIN_TOOL, json!({"domain": "reports_text"})),
            tool_call("report_sections", json!({"text": "# A\nbody\n# B\nmore"})),
            final_answer(),
        ],
        "FIX-002_Q1",
        Protocol::JsonInMessage,
    )
    .await;
    let offered = catalogue_names(&requests[0]);
    assert_eq!(
        offered.len(),
        7,
        "research tools + open_tool_domain: {offered:?}"
    );
    assert_eq!(offered[6], OPEN_DOMAIN_TOOL);
    let calls = &record.trajectory.tool_calls;
    assert_eq!(calls.len(), 3);
    assert!(!calls[0].ok, "a tool of an unopened domain is refused");
    assert!(calls[0].output.text.contains("not offered"));
    assert_eq!(calls[1].tool, OPEN_DOMAIN_TOOL);
    assert!(
        calls[1].ok
            && calls[1]
                .output
                .text
                .contains("\"domain\": \"reports_text\"")
    );
    assert_eq!(calls[2].tool, "report_sections");
    assert!(calls[2].ok, "{}", calls[2].output.text);
}

#[tokio::test]
async fn dynamic_catalogues_are_routed_again_after_each_observation() {
    let condition = Condition {
        catalogue: Some(CatalogueSpec::Dynamic),
        ..Condition::default()
    };
    let (record, requests) = run(
        &condition,
        vec![
            tool_call("list_package_files", json!({"subdir": "."})),
            final_answer(),
        ],
        "FIX-001_Q1",
        Protocol::JsonInMessage,
    )
    .await;
    assert_eq!(record.trajectory.tool_calls.len(), 1);
    // Independently: the route for the task alone and for the task plus the
    // observation the model saw.
    let registry = registry();
    let plan = condition.catalogue_plan().unwrap();
    let question = &fixture_release()
        .tasks()
        .iter()
        .find(|t| t.task_id == "FIX-001_Q1")
        .unwrap()
        .question
        .clone();
    let first = present(&registry, &plan, question, &Bm25Router::default());
    assert_eq!(catalogue_names(&requests[0]), first.names());
    let observation = requests[1]
        .messages
        .iter()
        .find(|m| m.content.starts_with("Observation for step 1"))
        .expect("the observation")
        .content
        .clone();
    let second = present(
        &registry,
        &plan,
        &format!("{question} {observation}"),
        &Bm25Router::default(),
    );
    assert_ne!(
        first.names(),
        second.names(),
        "the observation moves the route"
    );
    let update = requests[1]
        .messages
        .last()
        .expect("a message")
        .content
        .clone();
    assert!(
        update.starts_with("Tool candidates for the next step"),
        "{update}"
    );
    for name in second.names() {
        assert!(
            update.contains(&format!("- {name}:")),
            "{name} in the update"
        );
    }
}

#[tokio::test]
async fn context_presets_bound_the_messages_sent_again() {
    let mut longest = Vec::new();
    for preset in [ContextPreset::Aggressive, ContextPreset::Full] {
        let condition = Condition {
            context: Some(preset),
            max_turns: Some(TurnBudget::Turns(12)),
            ..Condition::default()
        };
        let mut replies: Vec<String> = (0..10)
            .map(|_| tool_call("list_package_files", json!({"subdir": "."})))
            .collect();
        replies.push(final_answer());
        let (_, requests) = run(&condition, replies, "FIX-001_Q1", Protocol::JsonInMessage).await;
        let most = requests.iter().map(|r| r.messages.len()).max().unwrap();
        longest.push(most);
        if preset == ContextPreset::Aggressive {
            // system + task + one research-state summary + 4 recent
            assert!(most <= 2 + 1 + preset.policy().recent_messages, "{most}");
        }
    }
    // Full keeps all 20 turn messages verbatim.
    assert_eq!(longest[1], 2 + 20);
    assert!(longest[0] < longest[1]);
}

#[tokio::test]
async fn the_condition_object_round_trips_through_trajectory_json() {
    let condition = Condition {
        answer_mode: Some(AnswerMode::InteractiveReview),
        catalogue: Some(CatalogueSpec::TopK(20)),
        tool_names: Some(ToolNames::Descriptive),
        context: Some(ContextPreset::Short),
        max_turns: Some(TurnBudget::WallClockOnly),
        ..Condition::default()
    };
    let (record, _) = run(
        &condition,
        vec![final_answer(), final_answer()],
        "FIX-001_Q1",
        Protocol::JsonInMessage,
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    record.write_to(dir.path()).unwrap();
    let text = std::fs::read_to_string(dir.path().join("trajectory.json")).unwrap();
    let raw: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        raw["condition"],
        json!({"answer_mode": "interactive+review", "catalogue": "topk:20",
               "tool_names": "descriptive", "context": "short", "max_turns": "none",
               "review": true})
    );
    let read: RecordedRun = serde_json::from_str(&text).unwrap();
    let back = Condition::from_record(read.condition.as_ref().unwrap()).unwrap();
    assert_eq!(back, condition);
}

fn fixture_task_ids() -> Vec<String> {
    fixture_release()
        .tasks()
        .iter()
        .map(|t| t.task_id.clone())
        .collect()
}

#[tokio::test]
async fn the_compact_meteorology_suite_is_the_same_for_every_task() {
    use earthverse_tool_registry::catalogue::COMPACT_METEOROLOGY_SUITE;
    use earthverse_tool_registry::ToolFamily;
    let condition = Condition {
        catalogue: Some(CatalogueSpec::CompactMeteorology),
        ..Condition::default()
    };
    let registry = registry();
    let mut expected: Vec<String> = RESEARCH_TOOL_NAMES.map(String::from).to_vec();
    for name in COMPACT_METEOROLOGY_SUITE {
        let tool = registry.get(name).expect("every suite tool is registered");
        assert_eq!(tool.family(), ToolFamily::MeteorologyClimate, "{name}");
        expected.push(name.to_string());
    }
    let mut offers = BTreeSet::new();
    for id in fixture_task_ids() {
        // Tool use is optional: a run that calls none ends normally.
        let (record, requests) = run(
            &condition,
            vec![final_answer()],
            &id,
            Protocol::JsonInMessage,
        )
        .await;
        assert_eq!(
            record.trajectory.diagnostics.run_status,
            Some(RunStatus::Ok)
        );
        let offered = catalogue_names(&requests[0]);
        assert_eq!(offered, expected, "{id}");
        offers.insert(offered);
        assert_eq!(
            record
                .trajectory
                .condition
                .as_ref()
                .and_then(|c| c.catalogue.as_deref()),
            Some("compact-meteorology")
        );
    }
    assert_eq!(offers.len(), 1, "one suite for every task");
}

#[tokio::test]
async fn cue_routed_meteorology_offers_at_most_three_routed_on_task_and_package_cues() {
    use earthverse_tool_registry::catalogue::{bm25_scores, routing_text, tokenize};
    use earthverse_tool_registry::ToolFamily;
    let condition = Condition {
        catalogue: Some(CatalogueSpec::CueRoutedMeteorology),
        ..Condition::default()
    };
    let release = fixture_release();
    let registry = registry();
    // The meteorology-and-climate operations, in registration order.
    let meteorology: Vec<_> = registry
        .definitions()
        .into_iter()
        .filter(|d| d.family == ToolFamily::MeteorologyClimate)
        .collect();
    assert!(meteorology.len() > 3);
    let docs: Vec<Vec<String>> = meteorology
        .iter()
        .map(|d| tokenize(&routing_text(d)))
        .collect();
    let mut subsets = BTreeSet::new();
    for id in fixture_task_ids() {
        let (record, requests) = run(
            &condition,
            vec![final_answer()],
            &id,
            Protocol::JsonInMessage,
        )
        .await;
        assert_eq!(
            record.trajectory.diagnostics.run_status,
            Some(RunStatus::Ok)
        );
        let offered = catalogue_names(&requests[0]);
        assert_eq!(&offered[..6], &RESEARCH_TOOL_NAMES.map(String::from));
        let routed = offered[6..].to_vec();
        assert!(routed.len() <= 3, "{id}: {routed:?}");
        // Independently: BM25 of the question and the package's file paths
        // over the meteorological operations, the best three scoring above
        // zero (ties by registration order).
        let t = release.task(&id).unwrap();
        let files: Vec<String> = earthverse_package_model::evidence::list_package_files(
            &release.package_dir(&t.event_id),
        )
        .unwrap()
        .into_iter()
        .map(|f| f.package_relative)
        .collect();
        // Each file as its category folder and its name without `data/`
        // and extensions.
        let cues: Vec<String> = files
            .iter()
            .map(|f| {
                let f = f.trim_start_matches("data/");
                let (folder, name) = f.rsplit_once('/').unwrap_or(("", f));
                format!("{folder} {}", name.split('.').next().unwrap())
            })
            .collect();
        let query = format!("{}\n{}\n", t.question, cues.join("\n"));
        let scores = bm25_scores(&tokenize(&query), &docs, 1.2, 0.75);
        let mut order: Vec<usize> = (0..meteorology.len()).collect();
        order.sort_by(|&a, &b| scores[b].partial_cmp(&scores[a]).unwrap().then(a.cmp(&b)));
        let expected: Vec<String> = order
            .into_iter()
            .filter(|&i| scores[i] > 0.0)
            .take(3)
            .map(|i| meteorology[i].name.clone())
            .collect();
        assert_eq!(routed, expected, "{id}");
        for name in &routed {
            assert_eq!(
                registry.get(name).unwrap().family(),
                ToolFamily::MeteorologyClimate
            );
        }
        subsets.insert(routed);
    }
    assert!(
        subsets.len() > 1,
        "tasks with different cues get different operations: {subsets:?}"
    );
}

/// Issue #45 item 5: the compressed serialisation judges a file by its
/// bytes, as the tools do: FIX-001's event anchor is a `.bin` holding JSON,
/// and it is summarised like any JSON document, not listed as "not text".
#[tokio::test]
async fn compressed_direct_sniffs_a_bin_file_holding_json_as_a_table() {
    const ANCHOR: &str = "data/event_reports/event_reports_001_Locked_event_anchor.bin";
    let release = fixture_release();
    let scratch = tempfile::tempdir().unwrap();
    let input = task(&release, "FIX-001_Q1", scratch.path());
    let bytes = std::fs::read(input.package_root.join(ANCHOR)).unwrap();
    assert_eq!(
        earthverse_package_model::sniff_bytes(&bytes),
        earthverse_package_model::FileKind::Json
    );
    let tools: Arc<dyn ToolBox> = registry();
    let serialised = earthverse_agent_controller::direct::serialise(
        tools.as_ref(),
        &input,
        &earthverse_agent_controller::direct::DirectSettings::compressed(),
    )
    .await;
    assert!(
        serialised.input.files.iter().any(|f| f == ANCHOR),
        "injected: {:?}; omitted: {:?}",
        serialised.input.files,
        serialised.input.omitted
    );
    // Its content is in the text, not an inventory line.
    assert!(
        serialised.text.contains("temporal_window"),
        "{}",
        serialised.text
    );
    assert!(!serialised.text.contains("(not serialised: .bin file)"));
}
