//! The fault matrix of issue 49 (first slice): commands × bad inputs,
//! table-driven, through the real binary on a fresh copy of the fixture
//! release per cell. Each cell asserts its expected outcome (a refusal
//! naming the file, field or argument; or the documented listing), that
//! the input tree is byte-identical afterwards, and that a refusing writer
//! leaves no output behind. The table printed on failure (and with
//! `--nocapture`) is the matrix with every cell's result.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The paths of one cell: a release copy and where outputs go.
struct Env {
    rel: PathBuf,
    out: PathBuf,
    manifest: PathBuf,
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
}

const FAULTS: [Fault; 7] = [
    Fault::TruncatedTask,
    Fault::WrongTypeTask,
    Fault::TaskSymlinkLoop,
    Fault::TruncatedRun,
    Fault::MissingRelease,
    Fault::EmptyRelease,
    Fault::OutputIsInput,
];

const BAD_TASK: &str = "tasks/FIX-003_Q2.json";
const BAD_RUN: &str = "exploration/trajectories/fixture-careful-agent/FIX-001_Q1.json";

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

fn commands() -> Vec<CommandCase> {
    use Expect::*;
    use Fault::*;
    vec![
        CommandCase {
            name: "validate",
            argv: |e, _| vec!["validate".into(), p(&e.rel)],
            output: |_| None,
            expect: |f| match f {
                OutputIsInput => NotApplicable,
                // An empty release fails the `no_tasks` gate.
                _ => Refuse,
            },
        },
        CommandCase {
            name: "units",
            argv: |e, _| vec!["units".into(), p(&e.rel)],
            output: |_| None,
            expect: |f| match f {
                TruncatedRun | OutputIsInput | EmptyRelease => NotApplicable,
                _ => Refuse,
            },
        },
        CommandCase {
            name: "units --runs",
            argv: |e, _| vec!["units".into(), p(&e.rel), "--runs".into(), p(&e.traj())],
            output: |_| None,
            expect: |f| match f {
                OutputIsInput | EmptyRelease => NotApplicable,
                _ => Refuse,
            },
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
            expect: |f| match f {
                EmptyRelease => NotApplicable,
                _ => Refuse,
            },
        },
        CommandCase {
            name: "evidence",
            argv: |e, _| vec!["evidence".into(), p(&e.rel), "--runs".into(), p(&e.traj())],
            output: |_| None,
            expect: |f| match f {
                OutputIsInput | EmptyRelease => NotApplicable,
                _ => Refuse,
            },
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
                ];
                if f == OutputIsInput {
                    v.extend(["--out".into(), p(&e.rel.join(BAD_RUN))]);
                }
                v
            },
            output: |_| None,
            expect: |f| match f {
                TruncatedRun | MissingRelease | OutputIsInput => Refuse,
                _ => NotApplicable,
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
            expect: |f| match f {
                TruncatedRun => NotApplicable,
                _ => Refuse,
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
            expect: |f| match f {
                TruncatedRun | EmptyRelease => NotApplicable,
                _ => Refuse,
            },
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
            expect: |f| match f {
                TruncatedRun => NotApplicable,
                _ => Refuse,
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

#[test]
fn commands_times_faults() {
    let mut table: Vec<(String, Vec<String>)> = Vec::new();
    let mut failures = Vec::new();
    for case in commands() {
        let mut row = Vec::new();
        for fault in FAULTS {
            let expect = (case.expect)(fault);
            if expect == Expect::NotApplicable {
                row.push("n/a".to_string());
                continue;
            }
            let dir = tempfile::tempdir().unwrap();
            let env = Env {
                rel: dir.path().join("release"),
                out: dir.path().join("out"),
                manifest: dir.path().join("one.toml"),
            };
            earthverse_testkit::copy_fixture_release(&env.rel);
            std::fs::write(
                &env.manifest,
                "name = \"one\"\nreference = \"interactive\"\n[tasks]\nall = true\n\
                 [[conditions]]\nname = \"interactive\"\n",
            )
            .unwrap();
            let names = apply(fault, &env);
            let before = tree(&env.rel);
            let out = Command::new(env!("CARGO_BIN_EXE_earthverse"))
                .args((case.argv)(&env, fault))
                .output()
                .unwrap();
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
                if !text.contains(name.as_str()) {
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
                row.push("refused".to_string());
            } else {
                row.push("FAIL".to_string());
                failures.push(format!(
                    "{} × {:?}: {}\n{}",
                    case.name,
                    fault,
                    wrong.join("; "),
                    text.lines().rev().take(4).collect::<Vec<_>>().join("\n")
                ));
            }
        }
        table.push((case.name.to_string(), row));
    }
    let mut shown = format!("{:<14}", "command");
    for fault in FAULTS {
        shown.push_str(&format!(" {:<16}", format!("{fault:?}")));
    }
    shown.push('\n');
    for (name, row) in &table {
        shown.push_str(&format!("{name:<14}"));
        for cell in row {
            shown.push_str(&format!(" {cell:<16}"));
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
        let uid = Command::new("id").arg("-u").output().ok()?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            eprintln!("skipped: mounting a tmpfs needs root (CI runs as root)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(dir.path())
            .status()
            .ok()?;
        if !mounted.success() {
            eprintln!("skipped: cannot mount a tmpfs here");
            return None;
        }
        let disk = FullDisk { dir };
        // Fill it: every later write fails with ENOSPC.
        let mut filler = std::fs::File::create(disk.path().join("filler")).unwrap();
        let block = vec![0u8; 4096];
        while std::io::Write::write_all(&mut filler, &block).is_ok() {}
        let _ = std::io::Write::write_all(&mut filler, &[0u8]);
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
