//! The fault matrix of issue 49: commands × bad inputs, table-driven,
//! through the real binary on a fresh copy of the fixture release per
//! cell. Each cell asserts its expected outcome (a refusal naming the
//! file, field or argument), that the input tree is byte-identical
//! afterwards, and that a refusing writer leaves no output behind. The
//! table printed on failure (and with `--nocapture`) is the matrix with
//! every cell's result. Beside it: every writer into a read-only folder
//! and onto a full disk, `score` cut mid-line by a full disk and resumed,
//! and a package file whose name is not UTF-8.
//!
//! Cells of file modes (unreadable inputs, read-only outputs) run the
//! command without `CAP_DAC_OVERRIDE` / `CAP_DAC_READ_SEARCH`
//! ([`unprivileged`]), so that they bind under root (CI), and each first
//! proves with a probe child that the mode really denies it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/records.rs"]
mod records;

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The paths of one cell: a release copy and where outputs go.
struct Env {
    rel: PathBuf,
    out: PathBuf,
    manifest: PathBuf,
    /// A flat price list of the fixture systems (`--prices`).
    prices: PathBuf,
    /// One expert label of a fixture run (`review agreement`).
    labels: PathBuf,
}

impl Env {
    fn traj(&self) -> PathBuf {
        self.rel.join("exploration/trajectories")
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fault {
    /// A task file cut in the middle.
    TruncatedTask,
    /// A task field of the wrong type (`question`: 42).
    WrongTypeTask,
    /// `tasks/loop.json`, a symlink to itself.
    TaskSymlinkLoop,
    /// A recorded run file cut in the middle.
    TruncatedRun,
    /// The release path does not exist.
    MissingRelease,
    /// `tasks/` holds no task.
    EmptyRelease,
    /// The output folder is the release itself.
    OutputIsInput,
    /// A task file of mode 000 (permission denied to the command).
    UnreadableTask,
    /// A recorded run file of mode 000.
    UnreadableRun,
    /// A package evidence file (one a task's inventory lists) of mode 000.
    UnreadableEvidence,
    /// That evidence file replaced by a symlink to a copy outside the
    /// release (the agent's tools refuse to follow it).
    EvidenceSymlinkOut,
    /// The `--prices` file (the models' price list) cut in the middle.
    TruncatedPrices,
    /// A price of the wrong type (`"cheap"`).
    WrongTypePrices,
    /// The `--prices` file of mode 000.
    UnreadablePrices,
    /// The labels file cut in the middle of its line.
    TruncatedLabels,
    /// A label field of the wrong type (`correct`: `"yes"`).
    WrongTypeLabels,
    /// The labels file of mode 000.
    UnreadableLabels,
    /// The labels file does not exist.
    MissingLabels,
}

const FAULTS: [Fault; 18] = [
    Fault::TruncatedTask,
    Fault::WrongTypeTask,
    Fault::TaskSymlinkLoop,
    Fault::EvidenceSymlinkOut,
    Fault::TruncatedRun,
    Fault::MissingRelease,
    Fault::EmptyRelease,
    Fault::OutputIsInput,
    Fault::UnreadableTask,
    Fault::UnreadableRun,
    Fault::UnreadableEvidence,
    Fault::TruncatedPrices,
    Fault::WrongTypePrices,
    Fault::UnreadablePrices,
    Fault::TruncatedLabels,
    Fault::WrongTypeLabels,
    Fault::UnreadableLabels,
    Fault::MissingLabels,
];

impl Fault {
    /// Faults of file modes: the command runs without the capabilities
    /// that let root ignore them ([`unprivileged`]).
    fn needs_modes(self) -> bool {
        matches!(
            self,
            Fault::UnreadableTask
                | Fault::UnreadableRun
                | Fault::UnreadableEvidence
                | Fault::UnreadableLabels
                | Fault::UnreadablePrices
        )
    }
}

const BAD_TASK: &str = "tasks/FIX-003_Q2.json";
const BAD_RUN: &str = "exploration/trajectories/fixture-careful-agent/FIX-001_Q1.json";
/// A file of FIX-001's inventory that the baseline agent opens for FIX-001_Q2.
const BAD_EVIDENCE: &str = "packages/event_packages/standard_event_packages/packages/FIX-001/\
                            data/physical_hazard/physical_hazard_001_station_daily_temperature.csv";

/// The capabilities that let root read and write files whatever their
/// modes (capabilities(7)): `CAP_DAC_OVERRIDE` (1), `CAP_DAC_READ_SEARCH` (2).
const DAC_CAPS: [libc::c_ulong; 2] = [1, 2];

/// Makes `cmd`'s child subject to file modes even when this test runs as
/// root (CI does): the child drops the two capabilities from its bounding
/// set before `exec`, so the new program's permitted set lacks them. As
/// root a failure to drop them is an error (the spawn fails); as another
/// user the modes bind anyway. [`prove_unreadable`] and
/// [`prove_unwritable`] check that the modes really bind.
fn unprivileged(cmd: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook calls only async-signal-safe functions (prctl,
    // geteuid) and allocates nothing.
    unsafe {
        cmd.pre_exec(|| {
            for cap in DAC_CAPS {
                if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && libc::geteuid() == 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        })
    }
}

/// Panics unless a child under [`unprivileged`] fails to read `path`
/// with "Permission denied" (the cell would test nothing otherwise).
fn prove_unreadable(path: &Path) {
    let probe = unprivileged(Command::new("cat").arg(path))
        .output()
        .expect("spawning the unprivileged probe (cannot drop CAP_DAC_OVERRIDE?)");
    assert!(
        !probe.status.success()
            && String::from_utf8_lossy(&probe.stderr).contains("Permission denied"),
        "{} is readable to an unprivileged child: the permission cells cannot bind here",
        path.display()
    );
}

/// Panics unless a child under [`unprivileged`] fails to create a file
/// in `dir`.
fn prove_unwritable(dir: &Path) {
    let probe = unprivileged(Command::new("touch").arg(dir.join("probe")))
        .output()
        .expect("spawning the unprivileged probe (cannot drop CAP_DAC_OVERRIDE?)");
    assert!(
        !probe.status.success()
            && String::from_utf8_lossy(&probe.stderr).contains("Permission denied"),
        "{} is writable to an unprivileged child: the read-only cells cannot bind here",
        dir.display()
    );
}

fn make_unreadable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o000)).unwrap();
    prove_unreadable(path);
}

/// Breaks the release copy; returns the texts the message must name.
fn apply(fault: Fault, env: &Env) -> Vec<String> {
    let rel = &env.rel;
    match fault {
        Fault::TruncatedTask => {
            let path = rel.join(BAD_TASK);
            let bytes = std::fs::read(&path).unwrap();
            std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            vec![path.display().to_string()]
        }
        Fault::WrongTypeTask => {
            let path = rel.join(BAD_TASK);
            let mut task: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            task["question"] = serde_json::json!(42);
            std::fs::write(&path, task.to_string()).unwrap();
            vec![path.display().to_string(), "`question`".into()]
        }
        Fault::TaskSymlinkLoop => {
            let path = rel.join("tasks/loop.json");
            std::os::unix::fs::symlink("loop.json", &path).unwrap();
            vec![path.display().to_string()]
        }
        Fault::TruncatedRun => {
            let path = rel.join(BAD_RUN);
            let bytes = std::fs::read(&path).unwrap();
            std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            vec![path.display().to_string()]
        }
        Fault::MissingRelease => {
            std::fs::remove_dir_all(rel).unwrap();
            vec![rel.display().to_string()]
        }
        Fault::EmptyRelease => {
            for entry in std::fs::read_dir(rel.join("tasks")).unwrap() {
                std::fs::remove_file(entry.unwrap().path()).unwrap();
            }
            std::fs::remove_dir_all(rel.join("exploration")).unwrap();
            vec![rel.display().to_string()]
        }
        Fault::OutputIsInput => vec![rel.display().to_string(), "--out".into()],
        Fault::UnreadableTask => {
            let path = rel.join(BAD_TASK);
            make_unreadable(&path);
            vec![p(&path), "Permission denied".into()]
        }
        Fault::UnreadableRun => {
            let path = rel.join(BAD_RUN);
            make_unreadable(&path);
            vec![p(&path), "Permission denied".into()]
        }
        Fault::UnreadableEvidence => {
            let path = rel.join(BAD_EVIDENCE);
            make_unreadable(&path);
            vec![
                "physical_hazard_001_station_daily_temperature.csv".into(),
                "Permission denied".into(),
            ]
        }
        Fault::EvidenceSymlinkOut => {
            let path = rel.join(BAD_EVIDENCE);
            let outside = env.out.parent().unwrap_or(&env.out).join("outside.csv");
            std::fs::copy(&path, &outside).unwrap();
            std::fs::remove_file(&path).unwrap();
            std::os::unix::fs::symlink(&outside, &path).unwrap();
            vec![
                "physical_hazard_001_station_daily_temperature.csv".into(),
                "outside the package".into(),
            ]
        }
        Fault::TruncatedPrices | Fault::TruncatedLabels => {
            let path = if fault == Fault::TruncatedPrices {
                &env.prices
            } else {
                &env.labels
            };
            let bytes = std::fs::read(path).unwrap();
            std::fs::write(path, &bytes[..bytes.len() / 2]).unwrap();
            vec![p(path)]
        }
        Fault::WrongTypePrices => {
            std::fs::write(&env.prices, r#"{"fixture-careful-agent": "cheap"}"#).unwrap();
            vec![p(&env.prices)]
        }
        Fault::WrongTypeLabels => {
            let text = std::fs::read_to_string(&env.labels).unwrap();
            std::fs::write(
                &env.labels,
                text.replace("\"correct\":true", "\"correct\":\"yes\""),
            )
            .unwrap();
            vec![p(&env.labels), "correct".into()]
        }
        Fault::UnreadablePrices => {
            make_unreadable(&env.prices);
            vec![p(&env.prices), "Permission denied".into()]
        }
        Fault::UnreadableLabels => {
            make_unreadable(&env.labels);
            vec![p(&env.labels), "Permission denied".into()]
        }
        Fault::MissingLabels => {
            std::fs::remove_file(&env.labels).unwrap();
            vec![p(&env.labels)]
        }
    }
}

/// What a cell must do.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    /// Non-zero exit, the message naming what `apply` returned.
    Refuse,
    /// The command does not read that input: not run.
    NotApplicable,
}

struct CommandCase {
    name: &'static str,
    argv: fn(&Env, Fault) -> Vec<String>,
    /// The output it would write, if any (must not exist after a refusal).
    output: fn(&Env) -> Option<PathBuf>,
    expect: fn(Fault) -> Expect,
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

/// The output argument: the release itself for `OutputIsInput`.
fn out_or_rel(env: &Env, fault: Fault, name: &str) -> String {
    if fault == Fault::OutputIsInput {
        p(&env.rel)
    } else {
        p(&env.out.join(name))
    }
}

/// Faults of a release's tasks (every command that loads the tasks refuses).
fn task_fault(f: Fault) -> bool {
    use Fault::*;
    matches!(
        f,
        TruncatedTask | WrongTypeTask | TaskSymlinkLoop | MissingRelease | UnreadableTask
    )
}

/// Faults of recorded run files.
fn run_fault(f: Fault) -> bool {
    matches!(f, Fault::TruncatedRun | Fault::UnreadableRun)
}

fn refuse_if(yes: bool) -> Expect {
    if yes {
        Expect::Refuse
    } else {
        Expect::NotApplicable
    }
}

fn commands() -> Vec<CommandCase> {
    use Fault::*;
    vec![
        CommandCase {
            name: "validate",
            argv: |e, _| vec!["validate".into(), p(&e.rel)],
            output: |_| None,
            // An empty release fails the `no_tasks` gate; validate checks
            // the recorded runs and opens every inventoried file.
            expect: |f| {
                refuse_if(
                    task_fault(f)
                        || run_fault(f)
                        || matches!(f, EmptyRelease | UnreadableEvidence | EvidenceSymlinkOut),
                )
            },
        },
        CommandCase {
            name: "units",
            argv: |e, _| vec!["units".into(), p(&e.rel)],
            output: |_| None,
            expect: |f| refuse_if(task_fault(f)),
        },
        CommandCase {
            name: "units --runs",
            argv: |e, _| vec!["units".into(), p(&e.rel), "--runs".into(), p(&e.traj())],
            output: |_| None,
            expect: |f| refuse_if(task_fault(f) || run_fault(f)),
        },
        CommandCase {
            name: "score",
            argv: |e, f| {
                vec![
                    "score".into(),
                    p(&e.rel),
                    "--runs".into(),
                    p(&e.traj()),
                    "--out".into(),
                    if f == OutputIsInput {
                        p(&e.rel.join(BAD_RUN))
                    } else {
                        p(&e.out.join("scores.jsonl"))
                    },
                ]
            },
            output: |e| Some(e.out.join("scores.jsonl")),
            // Scoring reads the recorded answers, not the package files.
            expect: |f| refuse_if(task_fault(f) || run_fault(f) || f == OutputIsInput),
        },
        CommandCase {
            name: "evidence",
            argv: |e, _| vec!["evidence".into(), p(&e.rel), "--runs".into(), p(&e.traj())],
            output: |_| None,
            expect: |f| refuse_if(task_fault(f) || run_fault(f)),
        },
        CommandCase {
            name: "oracle",
            argv: |e, _| vec!["oracle".into(), p(&e.rel), "--kind".into(), "plan".into()],
            output: |_| None,
            expect: |f| refuse_if(task_fault(f) || f == EmptyRelease),
        },
        CommandCase {
            name: "leaderboard",
            argv: |e, f| {
                let mut v = vec![
                    "leaderboard".into(),
                    "--from-recorded".into(),
                    p(&e.traj()),
                    "--release".into(),
                    p(&e.rel),
                    "--prices".into(),
                    p(&e.prices),
                ];
                if f == OutputIsInput {
                    v.extend(["--out".into(), p(&e.rel.join(BAD_RUN))]);
                }
                v
            },
            output: |_| None,
            // The release only labels the runs' tasks.
            expect: |f| {
                refuse_if(
                    run_fault(f)
                        || matches!(
                            f,
                            MissingRelease
                                | OutputIsInput
                                | TruncatedPrices
                                | WrongTypePrices
                                | UnreadablePrices
                        ),
                )
            },
        },
        CommandCase {
            name: "report",
            argv: |e, f| {
                vec![
                    "report".into(),
                    "--from-recorded".into(),
                    p(&e.traj()),
                    "--release".into(),
                    p(&e.rel),
                    "--prices".into(),
                    p(&e.prices),
                    "--html".into(),
                    if f == OutputIsInput {
                        p(&e.rel.join("tasks/report.html"))
                    } else {
                        p(&e.out.join("report.html"))
                    },
                ]
            },
            output: |e| Some(e.out.join("report.html")),
            expect: |f| {
                refuse_if(
                    run_fault(f)
                        || matches!(
                            f,
                            MissingRelease
                                | OutputIsInput
                                | TruncatedPrices
                                | WrongTypePrices
                                | UnreadablePrices
                        ),
                )
            },
        },
        CommandCase {
            name: "compare",
            argv: |e, f| {
                let mut v = vec![
                    "compare".into(),
                    "fixture-careful-agent".into(),
                    "fixture-hasty-agent".into(),
                    "--from-recorded".into(),
                    p(&e.traj()),
                    "--release".into(),
                    p(&e.rel),
                    "--resamples".into(),
                    "200".into(),
                    "--out".into(),
                ];
                v.push(if f == OutputIsInput {
                    p(&e.rel.join("tasks/diff.jsonl"))
                } else {
                    p(&e.out.join("diff.jsonl"))
                });
                v
            },
            output: |e| Some(e.out.join("diff.jsonl")),
            expect: |f| refuse_if(run_fault(f) || matches!(f, MissingRelease | OutputIsInput)),
        },
        CommandCase {
            name: "tools replay",
            argv: |e, _| vec!["tools".into(), "replay".into(), p(&e.rel)],
            output: |_| None,
            // Replays the recorded tool calls against the packages; an
            // evidence file that does not open is not a changed package.
            expect: |f| {
                refuse_if(
                    run_fault(f)
                        || matches!(f, MissingRelease | UnreadableEvidence | EvidenceSymlinkOut),
                )
            },
        },
        CommandCase {
            name: "review agreement",
            argv: |e, _| {
                vec![
                    "review".into(),
                    "agreement".into(),
                    p(&e.labels),
                    "--runs".into(),
                    p(&e.traj()),
                    "--release".into(),
                    p(&e.rel),
                ]
            },
            output: |_| None,
            expect: |f| {
                refuse_if(
                    run_fault(f)
                        || matches!(
                            f,
                            MissingRelease
                                | TruncatedLabels
                                | WrongTypeLabels
                                | UnreadableLabels
                                | MissingLabels
                        ),
                )
            },
        },
        CommandCase {
            name: "run",
            argv: |e, f| {
                vec![
                    "run".into(),
                    p(&e.rel),
                    "--agent".into(),
                    "baseline".into(),
                    "--quiet".into(),
                    "--out".into(),
                    out_or_rel(e, f, "runs"),
                ]
            },
            output: |e| Some(e.out.join("runs")),
            expect: |f| {
                refuse_if(
                    task_fault(f)
                        || matches!(
                            f,
                            EmptyRelease | OutputIsInput | UnreadableEvidence | EvidenceSymlinkOut
                        ),
                )
            },
        },
        CommandCase {
            name: "perturb",
            argv: |e, f| {
                vec![
                    "perturb".into(),
                    p(&e.rel),
                    "--kind".into(),
                    "missing".into(),
                    "--out".into(),
                    out_or_rel(e, f, "perturbed"),
                ]
            },
            output: |e| Some(e.out.join("perturbed")),
            // perturb hard-links the files it does not change (their
            // modes with them) and reads none of them.
            expect: |f| refuse_if(task_fault(f) || f == OutputIsInput),
        },
        CommandCase {
            name: "study run",
            argv: |e, f| {
                vec![
                    "study".into(),
                    "run".into(),
                    p(&e.manifest),
                    "--release".into(),
                    p(&e.rel),
                    "--agent".into(),
                    "baseline".into(),
                    "--quiet".into(),
                    "--out".into(),
                    out_or_rel(e, f, "study"),
                ]
            },
            output: |e| Some(e.out.join("study")),
            expect: |f| {
                refuse_if(
                    task_fault(f)
                        || matches!(
                            f,
                            EmptyRelease | OutputIsInput | UnreadableEvidence | EvidenceSymlinkOut
                        ),
                )
            },
        },
    ]
}

/// path → (kind, SHA-256), symlinks not followed.
fn tree(root: &Path) -> BTreeMap<String, (char, String)> {
    let mut entries = BTreeMap::new();
    if !root.exists() {
        return entries;
    }
    for entry in walkdir::WalkDir::new(root).follow_links(false) {
        let entry = entry.unwrap();
        let rel = entry
            .path()
            .strip_prefix(root)
            .unwrap()
            .display()
            .to_string();
        let kind = entry.file_type();
        let (k, bytes) = if kind.is_symlink() {
            (
                'l',
                p(&std::fs::read_link(entry.path()).unwrap()).into_bytes(),
            )
        } else if kind.is_dir() {
            ('d', Vec::new())
        } else {
            ('f', std::fs::read(entry.path()).unwrap())
        };
        entries.insert(rel, (k, hex::encode(Sha256::digest(&bytes))));
    }
    entries
}

/// Runs one cell on a fresh copy of the fixture release: `Ok`, or what
/// was wrong with the command's output.
fn run_cell(case: &CommandCase, fault: Fault, expect: Expect) -> Result<(), String> {
    let dir = tempfile::tempdir().unwrap();
    let env = Env {
        rel: dir.path().join("release"),
        out: dir.path().join("out"),
        manifest: dir.path().join("one.toml"),
        prices: dir.path().join("prices.json"),
        labels: dir.path().join("labels.jsonl"),
    };
    std::fs::write(
        &env.prices,
        r#"{"fixture-careful-agent": 1.0, "fixture-hasty-agent": 2.0}"#,
    )
    .unwrap();
    std::fs::write(
        &env.labels,
        "{\"reviewer\":\"ana\",\"time\":\"2026-12-07T22:00:00Z\",\
         \"system\":\"fixture-hasty-agent\",\"task_id\":\"FIX-002_Q1\",\"target\":\"unit\",\
         \"key\":\"affected_population_csv_total\",\"correct\":true}\n",
    )
    .unwrap();
    earthverse_testkit::copy_fixture_release(&env.rel);
    std::fs::write(
        &env.manifest,
        "name = \"one\"\nreference = \"interactive\"\n[tasks]\nall = true\n\
         [[conditions]]\nname = \"interactive\"\n",
    )
    .unwrap();
    let names = apply(fault, &env);
    let before = tree(&env.rel);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_earthverse"));
    cmd.args((case.argv)(&env, fault));
    if fault.needs_modes() {
        unprivileged(&mut cmd);
    }
    let out = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut wrong = Vec::new();
    match expect {
        Expect::Refuse if out.status.success() => wrong.push("exit 0".to_string()),
        _ => {}
    }
    for name in &names {
        // `report` writes its page with `--html`.
        let name = if case.name == "report" && name == "--out" {
            "--html"
        } else {
            name.as_str()
        };
        if !text.contains(name) {
            wrong.push(format!("does not name {name}"));
        }
    }
    if tree(&env.rel) != before {
        wrong.push("the input tree changed".into());
    }
    if expect == Expect::Refuse {
        if let Some(output) = (case.output)(&env) {
            if output.exists() {
                wrong.push(format!("left {}", output.display()));
            }
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} × {:?}: {}\n{}",
            case.name,
            fault,
            wrong.join("; "),
            text.lines().rev().take(4).collect::<Vec<_>>().join("\n")
        ))
    }
}

#[test]
fn commands_times_faults() {
    let cases = commands();
    // Every applicable cell, run on two threads (each cell is its own
    // process on its own copy of the release).
    let jobs: Vec<(usize, usize)> = (0..cases.len())
        .flat_map(|c| (0..FAULTS.len()).map(move |f| (c, f)))
        .filter(|&(c, f)| (cases[c].expect)(FAULTS[f]) == Expect::Refuse)
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(c, f)) = jobs.get(i) else { break };
                let result = run_cell(&cases[c], FAULTS[f], Expect::Refuse);
                results.lock().unwrap().insert((c, f), result);
            });
        }
    });
    let results = results.into_inner().unwrap();
    let mut table: Vec<(String, Vec<String>)> = Vec::new();
    let mut failures = Vec::new();
    for (c, case) in cases.iter().enumerate() {
        let row = (0..FAULTS.len())
            .map(|f| match results.get(&(c, f)) {
                None => "n/a".to_string(),
                Some(Ok(())) => "refused".to_string(),
                Some(Err(e)) => {
                    failures.push(e.clone());
                    "FAIL".to_string()
                }
            })
            .collect();
        table.push((case.name.to_string(), row));
    }
    let mut shown = format!("{:<17}", "command");
    for fault in FAULTS {
        shown.push_str(&format!(" {:<18}", format!("{fault:?}")));
    }
    shown.push('\n');
    for (name, row) in &table {
        shown.push_str(&format!("{name:<17}"));
        for cell in row {
            shown.push_str(&format!(" {cell:<18}"));
        }
        shown.push('\n');
    }
    println!("{shown}");
    assert!(failures.is_empty(), "{shown}\n{}", failures.join("\n---\n"));
}

/// A small tmpfs mounted for one test and filled to the last byte;
/// unmounted on drop.
struct FullDisk {
    dir: tempfile::TempDir,
}

impl FullDisk {
    /// `None` (the test is skipped, saying why) when not root or when
    /// mounting is not allowed here.
    fn new() -> Option<FullDisk> {
        FullDisk::with_free(64 * 1024, 0)
    }

    /// A tmpfs of `size` bytes with a filler leaving `free` bytes (rounded
    /// to its 4 KiB pages) for the command.
    fn with_free(size: usize, free: usize) -> Option<FullDisk> {
        let uid = Command::new("id").arg("-u").output().ok()?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            eprintln!("skipped: mounting a tmpfs needs root (CI runs as root)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .ok()?;
        if !mounted.success() {
            eprintln!("skipped: cannot mount a tmpfs here");
            return None;
        }
        let disk = FullDisk { dir };
        // Fill it: every later write fails with ENOSPC (or once `free`
        // more bytes are written).
        let mut filler = std::fs::File::create(disk.path().join("filler")).unwrap();
        let block = vec![0u8; 4096];
        let mut written = 0;
        while written + free < size && std::io::Write::write_all(&mut filler, &block).is_ok() {
            written += block.len();
        }
        if free == 0 {
            let _ = std::io::Write::write_all(&mut filler, &[0u8]);
        }
        Some(disk)
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Everything on the disk but the filler.
    fn left(&self) -> Vec<String> {
        walkdir::WalkDir::new(self.path())
            .min_depth(1)
            .into_iter()
            .map(|e| {
                e.unwrap()
                    .path()
                    .strip_prefix(self.path())
                    .unwrap()
                    .display()
                    .to_string()
            })
            .filter(|p| p != "filler")
            .collect()
    }

    fn clear(&self) {
        for entry in std::fs::read_dir(self.path()).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|n| n != "filler") {
                if path.is_dir() {
                    std::fs::remove_dir_all(&path).unwrap();
                } else {
                    std::fs::remove_file(&path).unwrap();
                }
            }
        }
    }
}

impl Drop for FullDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

#[test]
fn writers_on_a_full_disk_fail_naming_the_output_and_leave_nothing_partial() {
    let Some(disk) = FullDisk::new() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let rel = dir.path().join("release");
    earthverse_testkit::copy_fixture_release(&rel);
    let traj = rel.join("exploration/trajectories");
    // Records and runs to feed the writers, made on an ordinary disk.
    let scores = dir.path().join("scores.jsonl");
    let made = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .args(["score", &p(&rel), "--runs", &p(&traj), "--out", &p(&scores)])
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let before = tree(&rel);
    let full = disk.path();
    let cases: Vec<(&str, Vec<String>, PathBuf)> = vec![
        (
            "score",
            vec![
                "score".into(),
                p(&rel),
                "--runs".into(),
                p(&traj),
                "--out".into(),
                p(&full.join("s.jsonl")),
            ],
            full.join("s.jsonl"),
        ),
        (
            "report",
            vec![
                "report".into(),
                p(&scores),
                "--html".into(),
                p(&full.join("r.html")),
            ],
            full.join("r.html"),
        ),
        (
            "leaderboard parquet",
            vec![
                "leaderboard".into(),
                p(&scores),
                "--out".into(),
                p(&full.join("rows.parquet")),
            ],
            full.join("rows.parquet"),
        ),
        (
            "leaderboard jsonl",
            vec![
                "leaderboard".into(),
                p(&scores),
                "--tasks-out".into(),
                p(&full.join("tasks.jsonl")),
            ],
            full.join("tasks.jsonl"),
        ),
        (
            "perturb",
            vec![
                "perturb".into(),
                p(&rel),
                "--kind".into(),
                "missing".into(),
                "--out".into(),
                p(&full.join("perturbed")),
            ],
            full.join("perturbed"),
        ),
        (
            "run",
            vec![
                "run".into(),
                p(&rel),
                "--agent".into(),
                "baseline".into(),
                "--quiet".into(),
                "--out".into(),
                p(&full.join("runs")),
            ],
            full.join("runs"),
        ),
    ];
    let mut failures = Vec::new();
    for (what, args, output) in cases {
        disk.clear();
        let out = Command::new(env!("CARGO_BIN_EXE_earthverse"))
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let mut wrong = Vec::new();
        if out.status.success() {
            wrong.push("exit 0".to_string());
        }
        if !(err.contains(&p(&output)) && err.contains("No space left on device")) {
            wrong.push(format!(
                "stderr does not name {} and the full disk:\n{err}",
                output.display()
            ));
        }
        let left = disk.left();
        if !left.is_empty() {
            wrong.push(format!("left behind: {left:?}"));
        }
        if tree(&rel) != before {
            wrong.push("the release changed".into());
        }
        if !wrong.is_empty() {
            failures.push(format!("{what}: {}", wrong.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Runs the binary to success (inputs of the later cells).
fn made(args: &[String]) {
    let out = Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn writers_into_a_read_only_folder_fail_naming_the_output_and_write_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let rel = d.join("release");
    earthverse_testkit::copy_fixture_release(&rel);
    let traj = rel.join("exploration/trajectories");
    let manifest = d.join("one.toml");
    std::fs::write(
        &manifest,
        "name = \"one\"\nreference = \"interactive\"\n[tasks]\nall = true\n\
         [[conditions]]\nname = \"interactive\"\n",
    )
    .unwrap();
    // Inputs of the writers, made with ordinary rights.
    let scores = d.join("scores.jsonl");
    made(&[
        "score".into(),
        p(&rel),
        "--runs".into(),
        p(&traj),
        "--out".into(),
        p(&scores),
    ]);
    let shards = d.join("shards");
    for k in 0..2 {
        made(&[
            "run".into(),
            p(&rel),
            "--agent".into(),
            "baseline".into(),
            "--quiet".into(),
            "--shard".into(),
            format!("{k}/2"),
            "--out".into(),
            p(&shards),
        ]);
    }
    let study = d.join("study");
    made(&[
        "study".into(),
        "run".into(),
        p(&manifest),
        "--release".into(),
        p(&rel),
        "--agent".into(),
        "baseline".into(),
        "--quiet".into(),
        "--out".into(),
        p(&study),
    ]);
    // `study report` keeps its scores in the study's folder (by design):
    // made now, so the refused `--html` below finds them there.
    made(&["study".into(), "report".into(), p(&study)]);
    // A second study whose own folder is read-only: `study report`
    // writes its scores there.
    let ro_study = d.join("ro-study");
    made(&[
        "study".into(),
        "run".into(),
        p(&manifest),
        "--release".into(),
        p(&rel),
        "--agent".into(),
        "baseline".into(),
        "--quiet".into(),
        "--out".into(),
        p(&ro_study),
    ]);
    let ro = d.join("read-only");
    std::fs::create_dir(&ro).unwrap();
    set_mode(&ro, 0o555);
    prove_unwritable(&ro);
    set_mode(&ro_study, 0o555);
    prove_unwritable(&ro_study);
    let inputs = [&rel, &scores, &shards, &study, &ro_study, &manifest];
    let before: Vec<_> = inputs.iter().map(|i| tree(i)).collect();
    let o = |name: &str| ro.join(name);
    let cases: Vec<(&str, Vec<String>, PathBuf)> = vec![
        (
            "score",
            vec![
                "score".into(),
                p(&rel),
                "--runs".into(),
                p(&traj),
                "--out".into(),
                p(&o("s.jsonl")),
            ],
            o("s.jsonl"),
        ),
        (
            "merge",
            vec!["merge".into(), p(&shards), "--out".into(), p(&o("merged"))],
            o("merged"),
        ),
        (
            "perturb",
            vec![
                "perturb".into(),
                p(&rel),
                "--kind".into(),
                "missing".into(),
                "--out".into(),
                p(&o("perturbed")),
            ],
            o("perturbed"),
        ),
        (
            "run",
            vec![
                "run".into(),
                p(&rel),
                "--agent".into(),
                "baseline".into(),
                "--quiet".into(),
                "--out".into(),
                p(&o("runs")),
            ],
            o("runs"),
        ),
        (
            "study run",
            vec![
                "study".into(),
                "run".into(),
                p(&manifest),
                "--release".into(),
                p(&rel),
                "--agent".into(),
                "baseline".into(),
                "--quiet".into(),
                "--out".into(),
                p(&o("study")),
            ],
            o("study"),
        ),
        (
            "study report --html",
            vec![
                "study".into(),
                "report".into(),
                p(&study),
                "--html".into(),
                p(&o("study.html")),
            ],
            o("study.html"),
        ),
        (
            "study report (its folder)",
            vec!["study".into(), "report".into(), p(&ro_study)],
            ro_study.join("scores"),
        ),
        (
            "report",
            vec![
                "report".into(),
                p(&scores),
                "--html".into(),
                p(&o("report.html")),
            ],
            o("report.html"),
        ),
        (
            "leaderboard --out",
            vec![
                "leaderboard".into(),
                p(&scores),
                "--out".into(),
                p(&o("rows.parquet")),
            ],
            o("rows.parquet"),
        ),
        (
            "leaderboard --tasks-out",
            vec![
                "leaderboard".into(),
                p(&scores),
                "--tasks-out".into(),
                p(&o("tasks.jsonl")),
            ],
            o("tasks.jsonl"),
        ),
        (
            "compare --out",
            vec![
                "compare".into(),
                "fixture-careful-agent".into(),
                "fixture-hasty-agent".into(),
                "--in".into(),
                p(&scores),
                "--out".into(),
                p(&o("diff.jsonl")),
            ],
            o("diff.jsonl"),
        ),
    ];
    let mut lines = Vec::new();
    let mut failures = Vec::new();
    for (what, args, output) in cases {
        let out = unprivileged(&mut Command::new(env!("CARGO_BIN_EXE_earthverse")))
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let mut wrong = Vec::new();
        if out.status.success() {
            wrong.push("exit 0".to_string());
        }
        if !(err.contains(&p(&output)) && err.contains("Permission denied")) {
            wrong.push(format!(
                "stderr does not name {} and the denial:\n{err}",
                output.display()
            ));
        }
        if err.contains("Permission denied (os error 13): Permission denied") {
            wrong.push(format!("the cause is printed twice:\n{err}"));
        }
        let left: Vec<_> = std::fs::read_dir(&ro)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        if !left.is_empty() {
            wrong.push(format!("left behind: {left:?}"));
        }
        lines.push(format!(
            "{what:<26} {}",
            if wrong.is_empty() { "refused" } else { "FAIL" }
        ));
        if !wrong.is_empty() {
            failures.push(format!("{what}: {}", wrong.join("; ")));
        }
    }
    for (input, hashes) in inputs.iter().zip(&before) {
        if &tree(input) != hashes {
            failures.push(format!("input {} changed", input.display()));
        }
    }
    println!("{}", lines.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
}

/// The documented rule for a package file whose name is not UTF-8 (the
/// paper's inventories are UTF-8 JSON, so no inventory can list it):
/// `validate` names it, lossily (U+FFFD for each bad byte), among the
/// files no inventory lists and fails the `unlisted_files` gate; every
/// other command reads only inventoried files and neither crashes on the
/// name nor changes its result.
#[test]
fn a_non_utf8_file_name_in_a_package_is_named_by_validate_and_breaks_nothing() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let rel = dir.path().join("release");
    earthverse_testkit::copy_fixture_release(&rel);
    let traj = rel.join("exploration/trajectories");
    let data =
        rel.join("packages/event_packages/standard_event_packages/packages/FIX-001/data/other");
    let odd = data.join(std::ffi::OsStr::from_bytes(b"notes_\xff.csv"));
    std::fs::write(&odd, "a,b\n1,2\n").unwrap();
    let before = tree(&rel);
    let earthverse = |args: &[String]| {
        Command::new(env!("CARGO_BIN_EXE_earthverse"))
            .args(args)
            .output()
            .unwrap()
    };
    let validate = earthverse(&["validate".into(), p(&rel)]);
    let text = String::from_utf8_lossy(&validate.stdout).into_owned();
    assert_eq!(validate.status.code(), Some(1), "{text}");
    assert!(
        text.contains("1 file(s) not listed: data/other/notes_\u{FFFD}.csv")
            && text.contains("FAIL: gates failed: unlisted_files"),
        "{text}"
    );
    // The same results as on the clean fixture release.
    let clean = earthverse_testkit::fixture_release();
    let out = dir.path().join("out");
    for (what, args) in [
        (
            "units",
            vec!["units".to_string(), p(&rel), "--runs".into(), p(&traj)],
        ),
        (
            "evidence",
            vec![
                "evidence".into(),
                p(&rel),
                "--runs".into(),
                p(&traj),
                "--json".into(),
            ],
        ),
    ] {
        let odd_run = earthverse(&args);
        assert!(
            odd_run.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&odd_run.stderr)
        );
        let clean_args: Vec<String> = args
            .iter()
            .map(|a| a.replace(&p(&rel), &p(&clean)))
            .collect();
        let clean_run = earthverse(&clean_args);
        assert_eq!(
            String::from_utf8_lossy(&odd_run.stdout).replace(&p(&rel), &p(&clean)),
            String::from_utf8_lossy(&clean_run.stdout),
            "{what}: the odd name changed the result"
        );
    }
    let scores = out.join("scores.jsonl");
    let score = earthverse(&[
        "score".into(),
        p(&rel),
        "--runs".into(),
        p(&traj),
        "--out".into(),
        p(&scores),
    ]);
    assert!(
        score.status.success(),
        "{}",
        String::from_utf8_lossy(&score.stderr)
    );
    let runs = walkdir::WalkDir::new(&traj)
        .into_iter()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "json")
        })
        .count();
    assert_eq!(
        std::fs::read_to_string(&scores).unwrap().lines().count(),
        runs
    );
    let run = earthverse(&[
        "run".into(),
        p(&rel),
        "--agent".into(),
        "baseline".into(),
        "--quiet".into(),
        "--out".into(),
        p(&out.join("runs")),
    ]);
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(stdout.contains("ran 6 ok, 0 error"), "{stdout}");
    assert_eq!(tree(&rel), before, "a command changed the release");
}

/// A disk that fills up in the middle of `score`'s output: the file is
/// cut mid-line; a rerun on the still-full disk fails naming it and
/// changes nothing; once space is freed a rerun resumes it, and the final
/// file is byte-identical to an uninterrupted run (nothing lost, nothing
/// scored twice).
#[test]
fn score_cut_mid_line_by_a_full_disk_resumes_byte_identically() {
    let dir = tempfile::tempdir().unwrap();
    let rel = dir.path().join("release");
    earthverse_testkit::copy_fixture_release(&rel);
    let traj = rel.join("exploration/trajectories");
    let reference = dir.path().join("scores.jsonl");
    let score = |out: &Path| {
        Command::new(env!("CARGO_BIN_EXE_earthverse"))
            .args(["score", &p(&rel), "--runs", &p(&traj), "--out", &p(out)])
            .output()
            .unwrap()
    };
    let made = score(&reference);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let whole = std::fs::read(&reference).unwrap();
    // Room for about half of the records.
    let disk = FullDisk::with_free(256 * 1024, whole.len() / 2)
        .expect("mounting a tmpfs (CI runs as root)");
    let out = disk.path().join("scores.jsonl");
    let first = score(&out);
    let err = String::from_utf8_lossy(&first.stderr).into_owned();
    assert!(!first.status.success(), "the first run fit on the disk");
    assert!(
        err.contains(&p(&out)) && err.contains("No space left on device"),
        "{err}"
    );
    let cut = std::fs::read(&out).unwrap();
    assert!(
        !cut.is_empty() && cut.len() < whole.len() && !cut.ends_with(b"\n"),
        "not cut mid-line: {} of {} bytes",
        cut.len(),
        whole.len()
    );
    assert_eq!(
        cut[..],
        whole[..cut.len()],
        "the partial file is not a prefix of the whole"
    );
    // Still full: the resume must fail without touching what is there.
    let again = score(&out);
    let err = String::from_utf8_lossy(&again.stderr).into_owned();
    assert!(!again.status.success());
    assert!(
        err.contains(&p(&out)) && err.contains("No space left on device"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&out).unwrap(),
        cut,
        "a failed resume changed the file"
    );
    assert_eq!(
        disk.left(),
        vec!["scores.jsonl".to_string()],
        "a failed resume left a file"
    );
    // Space freed: the rerun completes the file.
    std::fs::remove_file(disk.path().join("filler")).unwrap();
    let last = score(&out);
    assert!(
        last.status.success(),
        "{}",
        String::from_utf8_lossy(&last.stderr)
    );
    assert!(
        std::fs::read(&out).unwrap() == whole,
        "the resumed file differs from an uninterrupted run"
    );
    assert_eq!(disk.left(), vec!["scores.jsonl".to_string()]);
}

/// `review` (the label server) with its labels file in a read-only
/// folder refuses to start, naming the file, instead of serving a page
/// whose every click fails.
#[test]
fn the_review_server_refuses_a_labels_file_it_cannot_write() {
    let dir = tempfile::tempdir().unwrap();
    let rel = dir.path().join("release");
    earthverse_testkit::copy_fixture_release(&rel);
    let ro = dir.path().join("read-only");
    std::fs::create_dir(&ro).unwrap();
    set_mode(&ro, 0o555);
    prove_unwritable(&ro);
    let labels = ro.join("labels.jsonl");
    let before = tree(&rel);
    let mut child = unprivileged(&mut Command::new(env!("CARGO_BIN_EXE_earthverse")))
        .args(["review", &p(&rel), "--runs"])
        .arg(rel.join("exploration/trajectories"))
        .args(["--labels", &p(&labels), "--reviewer", "ana", "--port", "0"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("the review server started with an unwritable labels file");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!status.success());
    assert!(
        err.contains(&p(&labels)) && err.contains("Permission denied"),
        "{err}"
    );
    assert_eq!(std::fs::read_dir(&ro).unwrap().count(), 0);
    assert_eq!(tree(&rel), before);
}

/// `run` on a disk that fills up halfway through its records: it fails
/// naming the disk's error; once space is freed a rerun resumes, and the
/// records equal an uninterrupted run's by content (but for
/// `records::WALL_CLOCK_KEYS`): no run lost, none twice.
#[test]
fn run_stopped_by_a_full_disk_resumes_to_the_same_records() {
    let dir = tempfile::tempdir().unwrap();
    let rel = dir.path().join("release");
    earthverse_testkit::copy_fixture_release(&rel);
    let run = |out: &Path| {
        Command::new(env!("CARGO_BIN_EXE_earthverse"))
            .args([
                "run",
                &p(&rel),
                "--agent",
                "baseline",
                "--quiet",
                "--out",
                &p(out),
            ])
            .output()
            .unwrap()
    };
    // Both folders are `<tempdir>/runs`, of one length: the prompts quote
    // the output folder and the records count their characters.
    let reference = dir.path().join("runs");
    let made = run(&reference);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let whole: u64 = walkdir::WalkDir::new(&reference)
        .into_iter()
        .map(|e| e.unwrap().metadata().unwrap())
        .filter(|m| m.is_file())
        .map(|m| m.len())
        .sum();
    let disk = FullDisk::with_free(1024 * 1024, whole as usize / 2)
        .expect("mounting a tmpfs (CI runs as root)");
    let out = disk.path().join("runs");
    assert_eq!(p(&out).len(), p(&reference).len());
    let first = run(&out);
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&first.stderr)
    );
    // The disk fills while a task's lock or record is written: the batch
    // stops (exit 2), or the run's record is not written and `run` exits 5
    // naming those tasks; never success. Either way it names the file
    // under the output and the full disk.
    assert!(
        text.contains(&p(&out)) && text.contains("No space left on device"),
        "{text}"
    );
    assert!(
        matches!(first.status.code(), Some(2) | Some(5)),
        "a run whose records did not all reach the disk exited {:?}: {text}",
        first.status.code()
    );
    if first.status.code() == Some(5) {
        assert!(text.contains("record could not be written"), "{text}");
    }
    let recorded = walkdir::WalkDir::new(&out)
        .into_iter()
        .filter(|e| e.as_ref().is_ok_and(|e| e.file_name() == "trajectory.json"))
        .count();
    assert!(recorded < 6, "the first run fit on the disk: {text}");
    std::fs::remove_file(disk.path().join("filler")).unwrap();
    let last = run(&out);
    let stdout = String::from_utf8_lossy(&last.stdout);
    assert!(
        last.status.success(),
        "{}",
        String::from_utf8_lossy(&last.stderr)
    );
    let (want, got) = (records::records(&reference), records::records(&out));
    let differing: Vec<&String> = want
        .keys()
        .chain(got.keys())
        .filter(|k| want.get(*k) != got.get(*k))
        .collect();
    assert!(
        differing.is_empty(),
        "{recorded} run(s) recorded before the disk filled; after the rerun ({stdout}) differs in {differing:?}"
    );
    println!("run: {recorded} of 6 run(s) recorded before the disk filled; rerun: {stdout}");
}
