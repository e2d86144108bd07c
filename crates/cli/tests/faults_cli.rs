//! Issue 49's findings, each through the real binary on a temp copy of the
//! fixture release: an output inside an input is refused by every writer;
//! an unloadable task file is an error naming it unless `--skip-invalid`
//! (then it is named in the summary and the study report); `validate`
//! reports package files no inventory lists. Every case checks that the
//! input trees are byte-identical afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn earthverse(args: &[&str]) -> Output {
    run_with_deadline(
        Command::new(env!("CARGO_BIN_EXE_earthverse")).args(args),
        Duration::from_secs(240),
    )
}

/// Runs a command, failing the test instead of hanging past `deadline`.
fn run_with_deadline(cmd: &mut Command, deadline: Duration) -> Output {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    // Drain the pipes on threads so a chatty child cannot block on them.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut v).unwrap();
        v
    });
    let err_thread = std::thread::spawn(move || {
        let mut v = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut v).unwrap();
        v
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > deadline {
            child.kill().unwrap();
            panic!("{cmd:?} still running after {deadline:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    Output {
        status,
        stdout: out_thread.join().unwrap(),
        stderr: err_thread.join().unwrap(),
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every entry below `root`: path → kind and SHA-256 of its bytes (a
/// symlink's target, never followed), so two snapshots are equal only for
/// byte-identical trees.
fn tree(root: &Path) -> BTreeMap<String, (char, String)> {
    let mut entries = BTreeMap::new();
    for entry in walkdir::WalkDir::new(root).follow_links(false) {
        let entry = entry.unwrap();
        let rel = entry
            .path()
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let kind = entry.file_type();
        let value = if kind.is_symlink() {
            (
                'l',
                std::fs::read_link(entry.path())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
                    .into_bytes(),
            )
        } else if kind.is_dir() {
            ('d', Vec::new())
        } else {
            ('f', std::fs::read(entry.path()).unwrap())
        };
        entries.insert(rel, (value.0, hex::encode(Sha256::digest(&value.1))));
    }
    entries
}

/// The paths added, removed or changed between two snapshots.
fn changed(
    before: &BTreeMap<String, (char, String)>,
    after: &BTreeMap<String, (char, String)>,
) -> Vec<String> {
    let mut paths: Vec<String> = before
        .iter()
        .filter(|(p, v)| after.get(*p) != Some(v))
        .map(|(p, _)| format!("changed or removed: {p}"))
        .collect();
    paths.extend(
        after
            .keys()
            .filter(|p| !before.contains_key(*p))
            .map(|p| format!("added: {p}")),
    );
    paths
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

// ---------------------------------------------------------------------------
// 1. An output inside an input is refused everywhere.
// ---------------------------------------------------------------------------

/// One case of the output-inside-input table: what it is, the arguments
/// (from the release, a runs directory outside it and a study manifest),
/// the output it names, the flag and the relation the refusal must name.
type OutputCase = (
    &'static str,
    fn(&Path, &Path, &Path) -> Vec<String>,
    fn(&Path, &Path) -> PathBuf,
    &'static str,
    &'static str,
);

fn p(path: &Path) -> String {
    path.to_str().unwrap().to_string()
}

#[test]
fn every_writer_refuses_an_output_inside_its_input() {
    let cases: Vec<OutputCase> = vec![
        (
            "perturb into the release's packages",
            |rel, _, _| {
                vec![
                    "perturb".into(),
                    p(rel),
                    "--kind".into(),
                    "missing".into(),
                    "--out".into(),
                    p(&rel.join("packages/x")),
                ]
            },
            |rel, _| rel.join("packages/x"),
            "--out",
            "is inside the release",
        ),
        (
            "perturb (all kinds) over the release",
            |rel, _, _| {
                vec![
                    "perturb".into(),
                    p(rel),
                    "--kind".into(),
                    "all".into(),
                    "--out".into(),
                    p(rel),
                ]
            },
            |rel, _| rel.to_path_buf(),
            "--out",
            "is the release",
        ),
        (
            "run into the release",
            |rel, _, _| {
                vec![
                    "run".into(),
                    p(rel),
                    "--agent".into(),
                    "baseline".into(),
                    "--quiet".into(),
                    "--out".into(),
                    p(&rel.join("runs")),
                ]
            },
            |rel, _| rel.join("runs"),
            "--out",
            "is inside the release",
        ),
        (
            "score into the release",
            |rel, runs, _| {
                vec![
                    "score".into(),
                    p(rel),
                    "--runs".into(),
                    p(runs),
                    "--out".into(),
                    p(&rel.join("scores.jsonl")),
                ]
            },
            |rel, _| rel.join("scores.jsonl"),
            "--out",
            "is inside the release",
        ),
        (
            "score into its runs",
            |rel, runs, _| {
                vec![
                    "score".into(),
                    p(rel),
                    "--runs".into(),
                    p(runs),
                    "--out".into(),
                    p(&runs.join("scores.jsonl")),
                ]
            },
            |_, runs| runs.join("scores.jsonl"),
            "--out",
            "is inside --runs",
        ),
        (
            "merge into a shard",
            |_, runs, _| {
                vec![
                    "merge".into(),
                    p(runs),
                    "--out".into(),
                    p(&runs.join("merged")),
                ]
            },
            |_, runs| runs.join("merged"),
            "--out",
            "is inside a shard directory",
        ),
        (
            "leaderboard rows into the recorded runs",
            |rel, _, _| {
                let traj = rel.join("exploration/trajectories");
                vec![
                    "leaderboard".into(),
                    "--from-recorded".into(),
                    p(&traj),
                    "--release".into(),
                    p(rel),
                    "--out".into(),
                    p(&traj.join("rows.jsonl")),
                ]
            },
            |rel, _| rel.join("exploration/trajectories/rows.jsonl"),
            "--out",
            "is inside --from-recorded",
        ),
        (
            "report page into the release",
            |rel, _, _| {
                vec![
                    "report".into(),
                    "--from-recorded".into(),
                    p(&rel.join("exploration/trajectories")),
                    "--release".into(),
                    p(rel),
                    "--html".into(),
                    p(&rel.join("report.html")),
                ]
            },
            |rel, _| rel.join("report.html"),
            "--html",
            "is inside --release",
        ),
        (
            "study into the release",
            |rel, _, manifest| {
                vec![
                    "study".into(),
                    "run".into(),
                    p(manifest),
                    "--release".into(),
                    p(rel),
                    "--agent".into(),
                    "baseline".into(),
                    "--quiet".into(),
                    "--out".into(),
                    p(&rel.join("study")),
                ]
            },
            |rel, _| rel.join("study"),
            "--out",
            "is inside the release",
        ),
        (
            "validate's export into the release",
            |rel, _, _| {
                vec![
                    "validate".into(),
                    p(rel),
                    "--regenerate-gt".into(),
                    "--keep-export".into(),
                    p(&rel.join("export")),
                ]
            },
            |rel, _| rel.join("export"),
            "--keep-export",
            "is inside the release",
        ),
    ];
    let mut failures = Vec::new();
    for (what, argv, output, flag, relation) in cases {
        // A fresh copy per case: a command that writes into its input
        // must not spoil the next case.
        let dir = tempfile::tempdir().unwrap();
        let rel = dir.path().join("release");
        earthverse_testkit::copy_fixture_release(&rel);
        let runs = dir.path().join("runs");
        copy_dir(&rel.join("exploration/trajectories"), &runs);
        let manifest = one_condition_manifest(dir.path());
        let before = (tree(&rel), tree(&runs));
        let args = argv(&rel, &runs, &manifest);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = earthverse(&args);
        let err = stderr(&out);
        let output = output(&rel, &runs);
        let mut wrong = Vec::new();
        if out.status.code() != Some(2) {
            wrong.push(format!("exit {:?}", out.status.code()));
        }
        if !(err.contains(&format!("{flag}: output {}", output.display()))
            && err.contains(relation))
        {
            wrong.push(format!(
                "stderr does not name {flag}, {} and `{relation}`:\n{err}",
                output.display()
            ));
        }
        let mut touched = changed(&before.0, &tree(&rel));
        touched.extend(changed(&before.1, &tree(&runs)));
        if !touched.is_empty() {
            wrong.push(format!(
                "an input tree changed ({} entries, first: {})",
                touched.len(),
                touched[..touched.len().min(3)].join("; ")
            ));
        }
        if !wrong.is_empty() {
            failures.push(format!("{what}: {}", wrong.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
}

#[test]
fn a_study_report_page_inside_the_release_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let rel = dir.path().join("release");
    earthverse_testkit::copy_fixture_release(&rel);
    let study = dir.path().join("study");
    let manifest = one_condition_manifest(dir.path());
    let made = earthverse(&[
        "study",
        "run",
        s(&manifest),
        "--release",
        s(&rel),
        "--agent",
        "baseline",
        "--quiet",
        "--out",
        s(&study),
    ]);
    assert!(made.status.success(), "{}", stderr(&made));
    let before = tree(&rel);
    let page = rel.join("tasks/report.html");
    let out = earthverse(&["study", "report", s(&study), "--html", s(&page)]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains(&format!("--html: output {}", page.display()))
            && err.contains("is inside the study's release"),
        "{err}"
    );
    assert_eq!(changed(&before, &tree(&rel)), Vec::<String>::new());
    assert!(
        !study.join("scores").exists(),
        "nothing scored before refusing"
    );
}

// ---------------------------------------------------------------------------
// 2. One rule for unloadable tasks.
// ---------------------------------------------------------------------------

/// A copy of the fixtures whose FIX-003_Q2 has a number for its question.
fn release_with_a_bad_task(dir: &Path) -> (PathBuf, PathBuf) {
    let rel = dir.join("release");
    earthverse_testkit::copy_fixture_release(&rel);
    let bad = rel.join("tasks/FIX-003_Q2.json");
    let mut task: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&bad).unwrap()).unwrap();
    task["question"] = serde_json::json!(42);
    std::fs::write(&bad, serde_json::to_string_pretty(&task).unwrap()).unwrap();
    (rel, bad)
}

fn one_condition_manifest(dir: &Path) -> PathBuf {
    let manifest = dir.join("one.toml");
    std::fs::write(
        &manifest,
        "name = \"one\"\nreference = \"interactive\"\n[tasks]\nall = true\n\
         [[conditions]]\nname = \"interactive\"\n",
    )
    .unwrap();
    manifest
}

#[test]
fn an_unloadable_task_stops_every_command_that_runs_or_scores_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let (rel, bad) = release_with_a_bad_task(dir.path());
    let manifest = one_condition_manifest(dir.path());
    let traj = rel.join("exploration/trajectories");
    let before = tree(&rel);
    let out_dir = dir.path().join("out");
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "run",
            vec![
                "run",
                s(&rel),
                "--agent",
                "baseline",
                "--quiet",
                "--out",
                s(&out_dir),
            ],
        ),
        (
            "study run",
            vec![
                "study",
                "run",
                s(&manifest),
                "--release",
                s(&rel),
                "--agent",
                "baseline",
                "--quiet",
                "--out",
                s(&out_dir),
            ],
        ),
        (
            "score",
            vec!["score", s(&rel), "--runs", s(&traj), "--out", s(&out_dir)],
        ),
        ("units", vec!["units", s(&rel)]),
        ("evidence", vec!["evidence", s(&rel), "--runs", s(&traj)]),
        (
            "perturb",
            vec![
                "perturb",
                s(&rel),
                "--kind",
                "missing",
                "--out",
                s(&out_dir),
            ],
        ),
    ];
    let mut failures = Vec::new();
    for (what, args) in &cases {
        let out = earthverse(args);
        let err = stderr(&out);
        let ok = out.status.code() == Some(2)
            && err.contains(&bad.display().to_string())
            && err.contains("field `question`")
            && err.contains("--skip-invalid");
        if !ok {
            failures.push(format!(
                "{what}: exit {:?}, stderr:\n{err}",
                out.status.code()
            ));
        }
        if out_dir.exists() {
            failures.push(format!("{what} wrote {}", out_dir.display()));
            std::fs::remove_dir_all(&out_dir).unwrap();
        }
        let touched = changed(&before, &tree(&rel));
        assert!(
            touched.is_empty(),
            "{what}: the release changed: {touched:?}"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
}

#[test]
fn skip_invalid_names_the_skipped_file_in_the_summary_and_the_study_report() {
    let dir = tempfile::tempdir().unwrap();
    let (rel, bad) = release_with_a_bad_task(dir.path());
    let before = tree(&rel);
    let runs = dir.path().join("runs");
    let run = earthverse(&[
        "run",
        s(&rel),
        "--agent",
        "baseline",
        "--quiet",
        "--skip-invalid",
        "--out",
        s(&runs),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let summary = stdout(&run);
    assert!(summary.contains("5 task(s) in shard"), "{summary}");
    assert!(
        summary.contains(&format!(
            "1 task file(s) not loaded and skipped (--skip-invalid): {}",
            bad.display()
        )),
        "{summary}"
    );
    assert!(
        stderr(&run).contains("field `question`"),
        "{}",
        stderr(&run)
    );

    // score: the skipped task's recorded runs are not scored, and named.
    let scores = dir.path().join("scores.jsonl");
    let traj = rel.join("exploration/trajectories");
    let scored = earthverse(&[
        "score",
        s(&rel),
        "--runs",
        s(&traj),
        "--skip-invalid",
        "--out",
        s(&scores),
    ]);
    assert!(scored.status.success(), "{}", stderr(&scored));
    let text = stdout(&scored);
    assert!(
        text.starts_with(&format!("10 records in {}", scores.display()))
            && text.contains(&format!(
                "1 task file(s) not loaded and skipped (--skip-invalid): {}",
                bad.display()
            ))
            && text.contains("2 run(s) of the skipped task file(s) not scored")
            && text.contains(
                &traj
                    .join("fixture-careful-agent/FIX-003_Q2.json")
                    .display()
                    .to_string()
            ),
        "{text}"
    );
    let records = std::fs::read_to_string(&scores).unwrap();
    assert_eq!(records.lines().count(), 10);
    assert!(!records.contains("\"FIX-003_Q2\""));

    let study = dir.path().join("study");
    let manifest = one_condition_manifest(dir.path());
    let made = earthverse(&[
        "study",
        "run",
        s(&manifest),
        "--release",
        s(&rel),
        "--agent",
        "baseline",
        "--quiet",
        "--skip-invalid",
        "--out",
        s(&study),
    ]);
    assert!(made.status.success(), "{}", stderr(&made));
    assert!(
        stderr(&made).contains("1 condition(s) x 5 task(s)")
            && stderr(&made).contains(&bad.display().to_string()),
        "{}",
        stderr(&made)
    );
    let report = earthverse(&["study", "report", s(&study)]);
    assert!(report.status.success(), "{}", stderr(&report));
    let text = stdout(&report);
    assert!(
        text.contains("1 task file(s) of the release did not load and were skipped (--skip-invalid); not among the 5 tasks")
            && text.contains(&bad.display().to_string())
            && text.contains("field `question`"),
        "{text}"
    );
    let json = earthverse(&["study", "report", s(&study), "--json"]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["tasks"], 5);
    assert_eq!(doc["skipped_task_files"].as_array().unwrap().len(), 1);
    assert_eq!(changed(&before, &tree(&rel)), Vec::<String>::new());
}

// ---------------------------------------------------------------------------
// 3. validate reports files present but not inventoried.
// ---------------------------------------------------------------------------

#[test]
fn validate_reports_files_no_inventory_lists_and_survives_a_symlink_loop() {
    let dir = tempfile::tempdir().unwrap();
    let rel = dir.path().join("release");
    earthverse_testkit::copy_fixture_release(&rel);
    let packages = rel.join("packages/event_packages/standard_event_packages/packages");
    // Three extra entries in FIX-001's package, one a symlink loop.
    let fix1 = packages.join("FIX-001/data");
    std::fs::write(fix1.join("extra_notes.txt"), "not in any inventory").unwrap();
    std::fs::create_dir_all(fix1.join("more")).unwrap();
    std::fs::write(fix1.join("more/extra.csv"), "a,b\n1,2\n").unwrap();
    std::os::unix::fs::symlink("loop", fix1.join("loop")).unwrap();
    // FIX-002_Q1 gets its own package: it is compared with its own
    // inventory, FIX-002_Q2 still reads the event's (clean) package.
    let own = rel.join("task_packages/FIX-002_Q1/FIX-002");
    copy_dir(&packages.join("FIX-002"), &own);
    std::fs::write(own.join("data/planted.json"), "{}").unwrap();
    let before = tree(&rel);

    let out = earthverse(&["validate", s(&rel)]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("packages holding files no inventory lists (2)"),
        "{text}"
    );
    assert!(
        text.contains(
            "FIX-001 (packages/event_packages/standard_event_packages/packages/FIX-001; \
             inventories of FIX-001_Q1, FIX-001_Q2): 3 file(s) not listed: \
             data/extra_notes.txt, data/loop, data/more/extra.csv"
        ),
        "{text}"
    );
    assert!(
        text.contains(
            "FIX-002 (task_packages/FIX-002_Q1/FIX-002; inventories of FIX-002_Q1): \
             1 file(s) not listed: data/planted.json"
        ),
        "{text}"
    );
    assert!(
        text.contains("FAIL: gates failed: unlisted_files"),
        "{text}"
    );

    let json = earthverse(&["validate", "--json", s(&rel)]);
    assert_eq!(json.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(doc["failed_gates"], serde_json::json!(["unlisted_files"]));
    let unlisted = doc["unlisted_files"].as_array().unwrap();
    assert_eq!(unlisted.len(), 2);
    assert_eq!(unlisted[0]["event_id"], "FIX-001");
    assert_eq!(unlisted[0]["count"], 3);
    assert_eq!(
        unlisted[0]["paths"],
        serde_json::json!(["data/extra_notes.txt", "data/loop", "data/more/extra.csv"])
    );
    assert_eq!(unlisted[1]["task_ids"], serde_json::json!(["FIX-002_Q1"]));
    assert_eq!(
        changed(&before, &tree(&rel)),
        Vec::<String>::new(),
        "validate changed the release"
    );
}

#[test]
fn the_fixture_release_has_no_unlisted_files() {
    let out = earthverse(&["validate", "--json", s(&fixtures())]);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["unlisted_files"], serde_json::json!([]));
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let target = to.join(entry.path().strip_prefix(from).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}
