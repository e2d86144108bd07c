//! A whole controlled study from a program, without the CLI: a manifest,
//! its conditions run through `earthverse_study::run_study` (the harness
//! and the controller's batch runner), each folder of runs scored with
//! `earthverse_rubric_judge::score_batch`, and the report built as data
//! and rendered as text — the steps `earthverse study run` and `study
//! report` take.

use earthverse_agent_controller::batch::{BatchObserver, NoProgress};
use earthverse_harness::{AgentSpec, RunOutcome, RunRequest};
use earthverse_model_provider::Endpoint;
use earthverse_package_model::Release;
use earthverse_rubric_judge::{
    load_tasks, read_records, score_batch, task_outcome, RecordWriter, ReleaseDeterministicJudge,
    ScoreInput, ScoreOptions, UnitReading,
};
use earthverse_study::{
    build_report, parse_manifest, run_study, study_diagnostics, study_not_applicable,
    ReportSettings, StudyObserver, StudyReport, StudyRunSettings,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// The study: every task of the release under the paper's default
/// condition and under a tight context and turn budget (Table 6c–d).
pub const MANIFEST: &str = r#"
name = "embedded"
description = "default protocol against a tight context and turn budget"
reference = "default"
[tasks]
all = true
[[conditions]]
name = "default"
description = "App. C.2 protocol"
[[conditions]]
name = "tight"
description = "aggressive context, 6 turns"
context = "aggressive"
max_turns = 6
"#;

/// Collects the study's notes instead of printing them.
#[derive(Debug, Default)]
pub struct Notes(pub Mutex<Vec<String>>);

impl StudyObserver for Notes {
    fn note(&self, line: &str) {
        if let Ok(mut notes) = self.0.lock() {
            notes.push(line.to_owned());
        }
    }
    fn batch_observer(&self, _condition: &str) -> Arc<dyn BatchObserver> {
        Arc::new(NoProgress)
    }
    fn condition_finished(&self, condition: &str, outcome: &RunOutcome) {
        self.note(&format!(
            "condition {condition}: {} ok, {} error",
            outcome.summary.ok, outcome.summary.error
        ));
    }
}

/// Runs [`MANIFEST`] with the baseline agent on the release at `root` into
/// the study directory `out`, scores it and builds its report.
///
/// # Errors
/// Any step's error, naming its file or condition.
pub async fn run_embedded_study(
    root: &Path,
    out: &Path,
    notes: &Notes,
) -> anyhow::Result<StudyReport> {
    let release = Release::load(root)?;
    let manifest = parse_manifest(MANIFEST, false, Path::new("embedded.toml"))?;
    let agent = AgentSpec::parse("baseline", &Endpoint::default())?;
    let mut template = RunRequest::new(agent, out.join("runs"));
    template.concurrency = 2;
    let settings = StudyRunSettings {
        release_root: root.to_path_buf(),
        out: out.to_path_buf(),
        agent_name: "baseline".into(),
        template,
        skipped_task_files: Vec::new(),
    };
    let study = run_study(&manifest, &release, settings, notes).await?.study;

    // Each folder of runs scored once by the deterministic judge.
    let tasks = Arc::new(load_tasks(root)?);
    let mut scored = BTreeMap::new();
    let folders: BTreeSet<&str> = study.conditions.iter().map(|c| c.runs.as_str()).collect();
    for folder in folders {
        let path = out.join("scores").join(format!("{folder}.jsonl"));
        let mut writer = RecordWriter::resume(&path, &[])?;
        let judge = ReleaseDeterministicJudge::new(UnitReading::Judge, tasks.keys().cloned());
        let input = ScoreInput {
            runs_dir: out.join("runs").join(folder),
            release_root: root.to_path_buf(),
            tasks: Arc::clone(&tasks),
            skipped_tasks: BTreeSet::new(),
            done: BTreeSet::new(),
        };
        let options = ScoreOptions {
            jobs: 2,
            keep_runs: false,
        };
        score_batch(input, Arc::new(judge), &mut writer, options).await?;
        let outcomes = read_records(&path)?
            .iter()
            .map(task_outcome)
            .collect::<Result<Vec<_>, _>>()?;
        scored.insert(folder.to_owned(), outcomes);
    }
    let settings = ReportSettings {
        not_applicable: study_not_applicable(out, &study)?,
        ..ReportSettings::default()
    };
    let diagnostics = study_diagnostics(out, &study)?;
    Ok(build_report(&study, &scored, &diagnostics, &settings)?)
}

/// One line per condition: its name, runs and mean Core (two decimals).
pub fn format_conditions(report: &StudyReport) -> String {
    report
        .rows
        .iter()
        .map(|r| {
            format!(
                "condition {} runs={} core={:.2}\n",
                r.condition, r.scores.runs, r.scores.core
            )
        })
        .collect()
}
