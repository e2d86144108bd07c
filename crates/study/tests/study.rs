//! `earthverse-study` on the bundled fixture release and the manifests of
//! `studies/`: task draws checked against values computed here from the
//! recorded runs' JSON, shared runs in a study directory, diagnostics, and
//! the report's rows against the statistics computed directly.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use earthverse_package_model::{load_recorded_runs, Release, RunCondition};
use earthverse_stats_bootstrap::{compare, BootstrapConfig, Metric, TaskOutcome};
use earthverse_study::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures() -> (Release, TaskHistory) {
    let root = repo().join("fixtures/release");
    let release = Release::load(&root).unwrap();
    let history = TaskHistory::load(&root.join("exploration/trajectories")).unwrap();
    (release, history)
}

/// Mean Core per task, read from the recorded runs' JSON here: Core =
/// (answer + rubric) / 2, 0 for a run that is not ok or lacks scores.
fn mean_core_from_json(dir: &Path) -> BTreeMap<String, f64> {
    let mut cores: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for system in std::fs::read_dir(dir).unwrap() {
        for file in std::fs::read_dir(system.unwrap().path()).unwrap() {
            let run: Value =
                serde_json::from_str(&std::fs::read_to_string(file.unwrap().path()).unwrap())
                    .unwrap();
            let s = &run["scores"];
            let status = run["diagnostics"]["run_status"].as_str().unwrap_or("");
            let ok = status.is_empty() || status == "ok";
            let core = match (
                s["answer"].as_f64(),
                s["rubric"].as_f64(),
                s["unit_accuracy"].as_f64(),
            ) {
                (Some(a), Some(p), Some(_)) if ok => (a + p) / 2.0,
                _ => 0.0,
            };
            cores
                .entry(run["task_id"].as_str().unwrap().to_string())
                .or_default()
                .push(core);
        }
    }
    cores
        .into_iter()
        .map(|(t, v)| (t, v.iter().sum::<f64>() / v.len() as f64))
        .collect()
}

fn event_of(release: &Release) -> BTreeMap<String, String> {
    release
        .tasks()
        .iter()
        .map(|t| (t.task_id.clone(), t.event_id.clone()))
        .collect()
}

#[test]
fn the_effort_draw_takes_the_lowest_mean_core_then_a_seeded_draw_preferring_new_events() {
    let (release, history) = fixtures();
    let effort = EffortDraw {
        difficult: 2,
        random: 2,
        seed: 2026,
    };
    let draw = draw_effort(&release, &history, &effort).unwrap();
    // The difficult part: the 2 lowest mean Core, ties by id, computed here.
    let means = mean_core_from_json(&repo().join("fixtures/release/exploration/trajectories"));
    let mut ranked: Vec<(f64, String)> = means.iter().map(|(t, c)| (*c, t.clone())).collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let expected: Vec<String> = ranked.iter().take(2).map(|(_, t)| t.clone()).collect();
    let got: Vec<String> = draw.difficult.iter().map(|d| d.task.clone()).collect();
    assert_eq!(got, expected);
    for d in &draw.difficult {
        assert!((d.mean_core - means[&d.task]).abs() < 1e-9);
        assert_eq!(d.runs, 2, "two recorded systems");
    }
    // The drawn part: from the rest, events not yet in the manifest first.
    let events = event_of(&release);
    let mut seen: BTreeSet<&str> = got.iter().map(|t| events[t].as_str()).collect();
    let fresh: BTreeSet<&str> = events
        .iter()
        .filter(|(t, e)| !got.contains(t) && !seen.contains(e.as_str()))
        .map(|(_, e)| e.as_str())
        .collect();
    assert_eq!(draw.drawn.len(), 2);
    for (i, t) in draw.drawn.iter().enumerate() {
        assert!(!got.contains(t));
        if i < fresh.len() {
            assert!(seen.insert(events[t].as_str()), "{t} repeats an event");
        }
    }
    let mut all: Vec<String> = got.iter().chain(&draw.drawn).cloned().collect();
    all.sort();
    assert_eq!(draw.tasks, all);
    // Reproducible from its seed; other seeds draw other tasks.
    assert_eq!(draw_effort(&release, &history, &effort).unwrap(), draw);
    let others: BTreeSet<Vec<String>> = (0..16)
        .map(|seed| {
            draw_effort(
                &release,
                &history,
                &EffortDraw {
                    seed,
                    ..effort.clone()
                },
            )
            .unwrap()
            .drawn
        })
        .collect();
    assert!(others.len() > 1, "the seed changes the draw");
    // Asking for more than the release holds is refused.
    let too_many = EffortDraw {
        difficult: 2,
        random: 5,
        seed: 1,
    };
    assert!(matches!(
        draw_effort(&release, &history, &too_many),
        Err(Error::Selection { .. })
    ));
}

#[test]
fn the_paired_draw_is_a_subset_of_the_effort_manifest_over_distinct_events() {
    let (release, history) = fixtures();
    let effort = EffortDraw {
        difficult: 2,
        random: 3,
        seed: 2026,
    };
    let paired = PairedDraw {
        from: None,
        effort: Some(effort.clone()),
        count: 3,
        seed: 2026,
    };
    let source = draw_effort(&release, &history, &effort).unwrap().tasks;
    let draw = draw_paired(&release, &history, &paired).unwrap();
    assert_eq!(draw.tasks.len(), 3);
    assert!(draw.tasks.iter().all(|t| source.contains(t)));
    let events = event_of(&release);
    let source_events: BTreeSet<&str> = source.iter().map(|t| events[t].as_str()).collect();
    let drawn_events: BTreeSet<&str> = draw.tasks.iter().map(|t| events[t].as_str()).collect();
    assert_eq!(drawn_events.len(), source_events.len().min(3));
    assert_eq!(draw_paired(&release, &history, &paired).unwrap(), draw);
    // Unresolved `from` is refused rather than guessed.
    let unresolved = PairedDraw {
        from: Some("x.toml".into()),
        effort: None,
        ..paired
    };
    assert!(draw_paired(&release, &history, &unresolved).is_err());
    // select_tasks needs the history for these two ways.
    let selection = TaskSelection {
        effort: Some(effort),
        ..TaskSelection::default()
    };
    assert!(select_tasks(&release, None, &selection).is_err());
    assert_eq!(
        select_tasks(&release, Some(&history), &selection)
            .unwrap()
            .tasks,
        source
    );
}

#[test]
fn paired_from_reads_the_effort_manifest_and_bad_manifests_name_file_condition_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let effort = dir.path().join("effort.toml");
    std::fs::write(
        &effort,
        "name = \"e\"\nreference = \"a\"\n[tasks]\neffort = { difficult = 1, random = 2, seed = 7 }\n\
         [[conditions]]\nname = \"a\"\n",
    )
    .unwrap();
    let paired = dir.path().join("paired.toml");
    std::fs::write(
        &paired,
        "name = \"p\"\nreference = \"a\"\n[tasks]\npaired = { from = \"effort.toml\", count = 2, seed = 9 }\n\
         [[conditions]]\nname = \"a\"\n",
    )
    .unwrap();
    let m = load_manifest(&paired).unwrap();
    let p = m.tasks.paired.unwrap();
    assert_eq!(
        p.effort,
        Some(EffortDraw {
            difficult: 1,
            random: 2,
            seed: 7
        })
    );
    let write = |name: &str, body: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        load_manifest(&path).unwrap_err().to_string()
    };
    let err = write(
        "noeffort.toml",
        "name = \"p\"\nreference = \"a\"\n[tasks]\npaired = { from = \"paired.toml\", count = 2, seed = 9 }\n\
         [[conditions]]\nname = \"a\"\n",
    );
    assert!(
        err.contains("noeffort.toml") && err.contains("no `effort`"),
        "{err}"
    );
    // A manifest drawn from itself is refused, not followed forever.
    let err = write(
        "self.toml",
        "name = \"s\"\nreference = \"a\"\n[tasks]\npaired = { from = \"self.toml\", count = 2, seed = 9 }\n\
         [[conditions]]\nname = \"a\"\n",
    );
    assert!(
        err.contains("self.toml") && err.contains("no `effort`"),
        "{err}"
    );
    let err = write(
        "oracle.toml",
        "name = \"o\"\nreference = \"a\"\n[tasks]\nall = true\n[[conditions]]\nname = \"a\"\noracle = \"psychic\"\n",
    );
    assert!(
        err.contains("oracle.toml") && err.contains("condition `a`") && err.contains("oracle:"),
        "{err}"
    );
    let err = write(
        "key.toml",
        "name = \"k\"\nreference = \"a\"\n[tasks]\nall = true\n[[conditions]]\nname = \"a\"\nreasoning = \"high\"\n",
    );
    assert!(
        err.contains("key.toml") && err.contains("`reasoning`"),
        "{err}"
    );
    let err = write(
        "two.toml",
        "name = \"t\"\nreference = \"a\"\n[tasks]\nall = true\neffort = { difficult = 1, random = 1, seed = 1 }\n\
         [[conditions]]\nname = \"a\"\n",
    );
    assert!(err.contains("exactly one"), "{err}");
}

fn manifest(name: &str, conditions: &[(&str, &str)]) -> StudyManifest {
    let mut text = format!(
        "name = \"{name}\"\nreference = \"{}\"\n[tasks]\nall = true\n",
        conditions[0].0
    );
    for (n, keys) in conditions {
        text.push_str(&format!("[[conditions]]\nname = \"{n}\"\n{keys}\n"));
    }
    parse_manifest(&text, false, Path::new("m.toml")).unwrap()
}

fn draw(tasks: &[&str]) -> TaskDraw {
    TaskDraw {
        tasks: tasks.iter().map(|t| t.to_string()).collect(),
        ..TaskDraw::default()
    }
}

#[test]
fn identical_conditions_share_their_runs_across_studies_and_reruns() {
    let out = tempfile::tempdir().unwrap();
    let dir = out.path();
    let release = Path::new("fixtures/release");
    let top20 = "catalogue = \"topk:20\"\nreasoning_effort = \"medium\"";
    let a = manifest("a", &[("top20", top20), ("short", "context = \"short\"")]);
    let study_a = resolve_study(dir, &a, release, "baseline", draw(&["T1"])).unwrap();
    assert!(study_a.conditions.iter().all(|c| !c.is_shared()));
    write_study(dir, &study_a).unwrap();
    // A second study naming the same record otherwise reads its runs.
    let b = manifest(
        "b",
        &[
            (
                "baseline",
                "reasoning_effort = \"medium\"\ncatalogue = \"topk:20\"",
            ),
            ("same-twice", top20),
            ("long", "context = \"long\""),
        ],
    );
    let study_b = resolve_study(dir, &b, release, "baseline", draw(&["T1", "T2"])).unwrap();
    let runs: Vec<&str> = study_b.conditions.iter().map(|c| c.runs.as_str()).collect();
    assert_eq!(runs, ["top20", "top20", "long"]);
    write_study(dir, &study_b).unwrap();
    assert_eq!(
        read_studies(dir).unwrap(),
        vec![study_a.clone(), study_b.clone()]
    );
    assert_eq!(read_study(dir, Some("b")).unwrap(), study_b);
    assert!(read_study(dir, None)
        .unwrap_err()
        .to_string()
        .contains("--study"));
    // A re-run of the same study resolves to the same file.
    assert_eq!(
        resolve_study(dir, &a, release, "baseline", draw(&["T1"])).unwrap(),
        study_a
    );
    // The same name with other tasks or other settings is refused.
    assert!(resolve_study(dir, &a, release, "baseline", draw(&["T9"])).is_err());
    let changed = manifest("a", &[("top20", top20), ("short", "context = \"full\"")]);
    assert!(resolve_study(dir, &changed, release, "baseline", draw(&["T1"])).is_err());
    // A new study whose condition reuses a folder name for other settings.
    let clash = manifest("c", &[("short", "context = \"aggressive\"")]);
    let err = resolve_study(dir, &clash, release, "baseline", draw(&["T1"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("runs/short") && err.contains("rename"),
        "{err}"
    );
    // Runs are shared only within one release and agent.
    let other = manifest("d", &[("x", "context = \"long\"")]);
    assert!(resolve_study(dir, &other, release, "openai:m", draw(&["T1"])).is_err());
}

#[test]
fn diagnostics_are_the_per_task_means_of_the_recorded_figures() {
    let root = repo().join("fixtures/release/exploration/trajectories");
    let entries = load_recorded_runs(&root).unwrap();
    let runs: Vec<_> = entries.iter().map(|e| e.run.clone()).collect();
    let d = Diagnostics::of_runs(&runs);
    // The same means, computed from the JSON here.
    let (mut rounds, mut calls, mut reads, mut refs, mut ok, mut prompt) =
        (0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    let mut n = 0.0;
    for system in std::fs::read_dir(&root).unwrap() {
        for file in std::fs::read_dir(system.unwrap().path()).unwrap() {
            let run: Value =
                serde_json::from_str(&std::fs::read_to_string(file.unwrap().path()).unwrap())
                    .unwrap();
            n += 1.0;
            rounds += run["diagnostics"]["model_rounds"].as_f64().unwrap_or(0.0);
            prompt += run["diagnostics"]["prompt_tokens"].as_f64().unwrap_or(0.0);
            let tc = run["tool_calls"].as_array().unwrap();
            calls += tc.len() as f64;
            ok += tc.iter().filter(|c| c["ok"] == Value::Bool(true)).count() as f64;
            reads += tc
                .iter()
                .filter(|c| READ_TOOLS.contains(&c["tool"].as_str().unwrap()))
                .count() as f64;
            refs += run["evidence"].as_array().map_or(0, Vec::len) as f64;
        }
    }
    assert_eq!(d.runs, 12);
    for (got, sum) in [
        (d.rounds, rounds),
        (d.tool_calls, calls),
        (d.reads, reads),
        (d.evidence_refs, refs),
        (d.calls_ok, ok),
        (d.prompt_tokens, prompt),
    ] {
        assert!((got - sum / n).abs() < 1e-9, "{got} vs {}", sum / n);
    }
    assert!(
        calls > 0.0 && reads > 0.0 && refs > 0.0,
        "the fixture runs exercise the figures"
    );
    assert!((d.calls_failed - (calls - ok) / n).abs() < 1e-9);
    assert_eq!(d.injected_files, None, "no direct run");
    // A direct run's injected files come from its `direct_input`.
    let mut direct = runs[0].clone();
    direct.extra.insert(
        "direct_input".into(),
        serde_json::json!({"mode": "compressed", "files": ["a.json", "b.csv", "c.pdf"], "omitted": []}),
    );
    assert_eq!(injected_files(&direct), Some(3));
    let d = Diagnostics::of_runs([&direct, &runs[1]]);
    assert_eq!(
        d.injected_files,
        Some(3.0),
        "mean over the direct runs only"
    );
}

fn outcome(system: &str, task: &str, core: f64) -> TaskOutcome {
    TaskOutcome::from_scores(system, task, core, core, core).unwrap()
}

#[test]
fn the_report_pairs_each_condition_with_the_reference_on_the_manifest_tasks() {
    let out = tempfile::tempdir().unwrap();
    let m = manifest(
        "r",
        &[
            ("ref", "catalogue = \"topk:20\""),
            ("alias", "catalogue = \"topk:20\""),
            ("other", "context = \"short\""),
        ],
    );
    let study = resolve_study(
        out.path(),
        &m,
        Path::new("x"),
        "baseline",
        draw(&["T1", "T2", "T3", "T4"]),
    )
    .unwrap();
    assert_eq!(study.conditions[1].runs, "ref");
    let mut scored = BTreeMap::new();
    // The shared folder holds a task of another study (T9): not counted.
    scored.insert(
        "ref".to_string(),
        vec![
            outcome("ref", "T1", 50.0),
            outcome("ref", "T2", 60.0),
            outcome("ref", "T3", 70.0),
            outcome("ref", "T4", 80.0),
            outcome("ref", "T9", 0.0),
        ],
    );
    scored.insert(
        "other".to_string(),
        vec![
            outcome("other", "T1", 70.0),
            outcome("other", "T2", 60.5),
            outcome("other", "T3", 40.0),
        ],
    );
    let settings = ReportSettings {
        bootstrap: BootstrapConfig {
            resamples: 500,
            ..BootstrapConfig::default()
        },
        ..ReportSettings::default()
    };
    let err = build_report(&study, &scored, &BTreeMap::new(), &settings).unwrap_err();
    assert!(
        matches!(err, Error::MissingRuns { ref condition, missing: 1, tasks: 4 } if condition == "other")
    );
    let settings = ReportSettings {
        allow_partial: true,
        all_pairs: true,
        ..settings
    };
    let report = build_report(&study, &scored, &BTreeMap::new(), &settings).unwrap();
    assert_eq!(report.tasks, 4);
    let names: Vec<&str> = report.rows.iter().map(|r| r.condition.as_str()).collect();
    assert_eq!(names, ["ref", "alias", "other"]);
    assert!((report.rows[0].scores.core - 65.0).abs() < 1e-9);
    assert_eq!(report.rows[1].scores.core, report.rows[0].scores.core);
    let other = &report.rows[2];
    assert_eq!(other.missing_runs, 1);
    assert!((other.scores.core - (70.0 + 60.5 + 40.0) / 4.0).abs() < 1e-9);
    // ΔCore is the statistics crate's paired comparison of the same scores.
    let mut pooled = vec![
        outcome("ref", "T1", 50.0),
        outcome("ref", "T2", 60.0),
        outcome("ref", "T3", 70.0),
        outcome("ref", "T4", 80.0),
        outcome("other", "T1", 70.0),
        outcome("other", "T2", 60.5),
        outcome("other", "T3", 40.0),
    ];
    pooled.push(TaskOutcome::failure("other", "T4"));
    let expected = compare(&pooled, "other", "ref", Metric::Core, &settings.bootstrap).unwrap();
    assert_eq!(other.delta_core.as_ref().unwrap(), &expected);
    // Per task: +20 win, +0.5 tie, −30 loss, −80 loss (the failure).
    let w = other.vs_reference.as_ref().unwrap();
    assert_eq!((w.wins, w.ties, w.losses), (1, 1, 2));
    assert!(report.rows[0].vs_reference.is_none() && report.rows[0].delta_core.is_none());
    assert_eq!(report.pairwise.len(), 3);

    // Issue #45: a task the condition does not apply to (a perturbation
    // with no valid target) is out of its means and pairs, not a failure.
    let settings = ReportSettings {
        allow_partial: false,
        not_applicable: BTreeMap::from([(
            "other".to_string(),
            BTreeMap::from([("T4".to_string(), "no secondary source".to_string())]),
        )]),
        ..settings
    };
    let report = build_report(&study, &scored, &BTreeMap::new(), &settings).unwrap();
    let other = &report.rows[2];
    assert_eq!((other.missing_runs, other.not_applicable), (0, 1));
    assert!((other.scores.core - (70.0 + 60.5 + 40.0) / 3.0).abs() < 1e-9);
    let pooled: Vec<TaskOutcome> = pooled
        .into_iter()
        .filter(|o| !(o.system == "other" && o.task == "T4"))
        .collect();
    let expected = compare(&pooled, "other", "ref", Metric::Core, &settings.bootstrap).unwrap();
    assert_eq!(other.delta_core.as_ref().unwrap(), &expected);
    let w = other.vs_reference.as_ref().unwrap();
    assert_eq!((w.wins, w.ties, w.losses), (1, 1, 1), "three pairs");
}

#[test]
fn the_paper_manifests_hold_every_row_of_tables_3_4_and_6() {
    let studies = repo().join("studies");
    let t3 = load_manifest(&studies.join("table3-answer-mode-effort.toml")).unwrap();
    let t4 = load_manifest(&studies.join("table4-oracles-presentation.toml")).unwrap();
    let t6 = load_manifest(&studies.join("table6-system-ablations.toml")).unwrap();
    // Table 3: four answer modes x five efforts, on the effort manifest.
    assert_eq!(t3.conditions.len(), 20);
    let cells: BTreeSet<(Option<String>, Option<String>)> = t3
        .conditions
        .iter()
        .map(|c| {
            (
                c.condition.answer_mode.clone(),
                c.condition.reasoning_effort.clone(),
            )
        })
        .collect();
    assert_eq!(cells.len(), 20);
    let effort = t3.tasks.effort.clone().unwrap();
    // Tables 4 and 6: the paired manifest drawn from Table 3's.
    for m in [&t4, &t6] {
        let p = m.tasks.paired.as_ref().unwrap();
        assert_eq!(p.effort.as_ref(), Some(&effort));
        assert!(p.count < effort.difficult + effort.random);
        assert!(m.conditions.iter().all(|c| c.description.is_some()));
        // Every row at medium reasoning with a catalogue (the Top-20
        // router unless the catalogue is what the row varies).
        for c in &m.conditions {
            assert_eq!(
                c.condition.reasoning_effort.as_deref(),
                Some("medium"),
                "{}",
                c.name
            );
            assert!(c.condition.catalogue.is_some(), "{}", c.name);
        }
    }
    assert_eq!(t4.conditions.len(), 16);
    let kinds = |key: fn(&RunCondition) -> Option<&Value>| -> usize {
        t4.conditions
            .iter()
            .filter(|c| key(&c.condition).is_some())
            .count()
    };
    assert_eq!(kinds(|c| c.oracle.as_ref()), 4);
    assert_eq!(kinds(|c| c.perturbation.as_ref()), 5);
    assert_eq!(t6.conditions.len(), 22);
    // Table 6b's atmospheric suites: their catalogues offer the real
    // MetPy's and Fortran's operations, without requiring them.
    for (name, env) in [
        ("atmospheric-python", "metpy"),
        ("atmospheric-fortran", "fortran"),
    ] {
        let c = t6.conditions.iter().find(|c| c.name == name).unwrap();
        let condition = earthverse_agent_controller::Condition::from_record(&c.condition).unwrap();
        assert_eq!(condition.catalogue.unwrap().offered_environments(), [env]);
        assert!(c.condition.required_environment.is_none(), "{name}");
    }
    // The reference of Tables 4 and 6 is one condition record: shared runs.
    let reference = |m: &StudyManifest| {
        m.conditions
            .iter()
            .find(|c| c.name == m.reference)
            .unwrap()
            .condition
            .clone()
    };
    assert_eq!(reference(&t4), reference(&t6));
    assert_eq!(reference(&t4).catalogue.as_deref(), Some("topk:20"));
    for c in &t6.conditions {
        if c.condition.context.is_some() || c.condition.max_turns.is_some() {
            assert_eq!(
                c.condition.catalogue.as_deref(),
                Some("topk:20"),
                "{}",
                c.name
            );
        }
    }
    // Every manifest of studies/ reads.
    for entry in std::fs::read_dir(&studies).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            load_manifest(&path).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn the_table_7_manifest_requires_each_of_the_thirteen_environments() {
    let studies = repo().join("studies");
    let t7 = load_manifest(&studies.join("table7-scientific-environments.toml")).unwrap();
    let t4 = load_manifest(&studies.join("table4-oracles-presentation.toml")).unwrap();
    assert_eq!(t7.conditions.len(), 14, "the reference and 13 environments");
    let required: Vec<&str> = t7
        .conditions
        .iter()
        .filter_map(|c| c.condition.required_environment.as_deref())
        .collect();
    assert_eq!(
        required,
        [
            "metpy",
            "xclim",
            "thermofeel",
            "pyet",
            "climate-indices",
            "xskillscore",
            "pyextremes",
            "julia",
            "r-climate",
            "cdo",
            "nco",
            "ncl",
            "fortran"
        ]
    );
    // The reference is Table 4's (shared runs), on the same paired manifest.
    let reference = t7
        .conditions
        .iter()
        .find(|c| c.name == t7.reference)
        .unwrap();
    let t4_reference = t4
        .conditions
        .iter()
        .find(|c| c.name == t4.reference)
        .unwrap();
    assert_eq!(reference.condition, t4_reference.condition);
    assert_eq!(t7.tasks.paired, t4.tasks.paired);
}

#[test]
fn table_14_execution_columns_come_from_the_runs_required_tools() {
    let run = |task: &str,
               compliant: bool,
               ok: u64,
               attempts: u64|
     -> earthverse_package_model::RecordedRun {
        serde_json::from_value(serde_json::json!({
            "task_id": task, "model_id": "m",
            "diagnostics": {"model_rounds": 10, "latency_s": 2.0},
            "required_tools": {"compliant": compliant, "successful_calls": ok, "attempts": attempts,
                               "min_successful": 2, "target": 3, "max_counted": 4, "counted": ok,
                               "failure_classes": {}, "repair_rounds": 0}
        }))
        .unwrap()
    };
    let runs = [run("a", true, 3, 4), run("b", false, 1, 6)];
    let d = earthverse_study::Diagnostics::of_runs(&runs);
    assert_eq!(d.comply_pct, Some(50.0));
    assert_eq!(
        d.specialist_success_pct,
        Some(40.0),
        "4 of 10 calls, pooled"
    );
    let plain: earthverse_package_model::RecordedRun =
        serde_json::from_value(serde_json::json!({"task_id": "c", "model_id": "m"})).unwrap();
    assert_eq!(
        earthverse_study::Diagnostics::of_runs([&plain]).comply_pct,
        None
    );
}

/// Copies a folder tree (files and folders only).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The balance rule of `draw_balanced`: a level with more than one task
/// more than another means that other level gave all it had.
fn assert_balanced(levels: &BTreeMap<String, LevelCount>, what: &str) {
    for (a, ca) in levels {
        assert!(ca.drawn <= ca.compatible, "{what}: {a} {ca:?}");
        for (b, cb) in levels {
            if ca.drawn > cb.drawn + 1 {
                assert_eq!(
                    cb.drawn, cb.compatible,
                    "{what}: {a} has {} drawn, {b} only {} of {}",
                    ca.drawn, cb.drawn, cb.compatible
                );
            }
        }
    }
}

/// The fixture release with the station records of the environments'
/// fixture package added to two of its three event packages: FIX-001 gets
/// the hourly station record (temperature, humidity, dewpoint, pressure,
/// wind), FIX-003 the daily one (tmax, precipitation); FIX-002 keeps no
/// JSON series.
fn release_with_series(dir: &Path) -> Release {
    copy_tree(&repo().join("fixtures/release"), dir);
    let pkgs = dir.join("packages/event_packages/standard_event_packages/packages");
    let station = repo().join("crates/environments/tests/fixtures/PKG-ENV/data");
    std::fs::copy(
        station.join("station.json"),
        pkgs.join("FIX-001/data/station.json"),
    )
    .unwrap();
    std::fs::copy(
        station.join("station_daily.json"),
        pkgs.join("FIX-003/data/station_daily.json"),
    )
    .unwrap();
    Release::load(dir).unwrap()
}

#[test]
fn compatible_manifests_are_balanced_deterministic_and_compatible() {
    let dir = tempfile::tempdir().unwrap();
    let release = release_with_series(dir.path());
    let fortran = earthverse_environments::environment("fortran").unwrap();
    let compat = earthverse_environments::coverage::task_compatibility(fortran, &release);
    // Computed from the files: FIX-002 holds no JSON series at all, the
    // two others hold precipitation or wind.
    for task in release.tasks() {
        let root = release.task_package_dir(task);
        let blocks = earthverse_environments::coverage::scan_package(&root);
        assert_eq!(
            compat[&task.task_id],
            !blocks.is_empty(),
            "{}",
            task.task_id
        );
    }
    assert_eq!(compat.values().filter(|ok| **ok).count(), 4);
    let all: Vec<String> = release.tasks().iter().map(|t| t.task_id.clone()).collect();
    for count in [1, 2, 3, 4, 9] {
        let draw = CompatibleDraw {
            seed: 2026,
            count: Some(count),
        };
        let m = compatible_manifest(&release, &all, fortran, &compat, &draw);
        assert!(!m.retained);
        assert_eq!(m.tasks.len(), count.min(4), "count {count}");
        assert_eq!(m.shortfall(), count.saturating_sub(4));
        assert!(m.tasks.iter().all(|t| compat[t]), "{:?}", m.tasks);
        assert_balanced(&m.levels, &format!("count {count}"));
        let again = compatible_manifest(&release, &all, fortran, &compat, &draw);
        assert_eq!(m, again, "the same seed draws the same manifest");
        // The level counts are those of the drawn tasks' own labels.
        for (level, c) in &m.levels {
            let drawn = m
                .tasks
                .iter()
                .filter(|t| {
                    release
                        .task(t)
                        .unwrap()
                        .difficulty_level()
                        .unwrap()
                        .as_str()
                        == level
                })
                .count();
            assert_eq!(drawn, c.drawn, "{level}");
        }
    }
    // L2 has 3 compatible tasks, L3 one: three tasks take 2 + 1.
    let three = compatible_manifest(
        &release,
        &all,
        fortran,
        &compat,
        &CompatibleDraw {
            seed: 2026,
            count: Some(3),
        },
    );
    assert_eq!((three.levels["L2"].drawn, three.levels["L3"].drawn), (2, 1));
    // Another seed draws among the three L2 tasks another way at least once.
    let differs = (0..20u64).any(|seed| {
        let (d, _) = draw_balanced(
            &release,
            &compat
                .iter()
                .filter(|(_, ok)| **ok)
                .map(|(t, _)| t.clone())
                .collect(),
            3,
            seed,
        );
        let mut d = d;
        d.sort();
        d != three.tasks
    });
    assert!(differs, "the seed matters");
    // A core environment (CDO, App. D.6) retains the study's tasks, the
    // incompatible ones too.
    let cdo = earthverse_environments::environment("cdo").unwrap();
    let cdo_compat = earthverse_environments::coverage::task_compatibility(cdo, &release);
    let kept = compatible_manifest(
        &release,
        &all,
        cdo,
        &cdo_compat,
        &CompatibleDraw {
            seed: 2026,
            count: None,
        },
    );
    assert!(kept.retained && kept.drawn.is_empty());
    assert_eq!(kept.tasks, all);
    assert_eq!(kept.study_compatible, 4);
    // No compatible task: an empty manifest, not run.
    let none: BTreeMap<String, bool> = compat.keys().map(|t| (t.clone(), false)).collect();
    let empty = compatible_manifest(
        &release,
        &all,
        fortran,
        &none,
        &CompatibleDraw {
            seed: 2026,
            count: None,
        },
    );
    assert!(empty.tasks.is_empty() && !empty.retained);
    assert_eq!(empty.shortfall(), 6);
}

#[test]
fn a_compatible_manifest_needs_a_required_environment() {
    let err = parse_manifest(
        "name = \"x\"\nreference = \"a\"\n[tasks]\nall = true\n\
         [[conditions]]\nname = \"a\"\n\
         [[conditions]]\nname = \"b\"\ncompatible_manifest = { seed = 2026 }\n",
        false,
        Path::new("x.toml"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("condition `b`") && err.contains("compatible_manifest"),
        "{err}"
    );
}
