//! Kill -9 for every writer (issue 49): each command that writes records or
//! files is killed (SIGKILL) at seeded points of its output and then run
//! again with the same arguments; the final outputs must be byte-identical
//! to those of an uninterrupted run (records of `study run`: equal by
//! content but for their wall-clock fields), and the inputs untouched.
//! A kill point is a seeded share of the bytes a whole run writes (hidden
//! staging files included), polled every millisecond, so the kill lands
//! while the writer is writing whatever the machine's speed; each line
//! printed says whether the process was still running.
//!
//! Writers: `score` (resumes its JSONL), `merge --out` (stages each record
//! and renames it), `perturb --kind all` (each kind's release staged beside
//! its folder and renamed when complete; a rerun keeps the completed
//! kinds), `leaderboard --out` Parquet and `report --html` (one file,
//! written to a temporary file and renamed), `study run` (the batch
//! runner's records; also `tests/controller_sigkill.rs` for `run`).
//! `evidence` only prints (`--json` to stdout): nothing of its own to kill.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "common/records.rs"]
mod records;
use records::records;

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

const SEEDS: [u64; 3] = [1, 2, 3];

/// The binary, with the reference-reads cache of this test.
fn earthverse(cache: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_earthverse"));
    c.env("EARTHVERSE_CACHE", cache)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// sha256 of every file under `root` (or of `root` itself), by relative
/// path; hidden staging leftovers count too.
fn tree(root: &Path) -> BTreeMap<String, String> {
    let hash = |p: &Path| hex::encode(Sha256::digest(std::fs::read(p).unwrap()));
    let mut out = BTreeMap::new();
    if root.is_file() {
        out.insert(String::new(), hash(root));
        return out;
    }
    if !root.exists() {
        return out;
    }
    for e in walkdir::WalkDir::new(root).sort_by_file_name() {
        let e = e.unwrap();
        if e.file_type().is_file() {
            let rel = e.path().strip_prefix(root).unwrap().display().to_string();
            out.insert(rel, hash(e.path()));
        }
    }
    out
}

/// Bytes of the files under `dir`, hidden staging files included; entries
/// that vanish while it walks (a writer renaming) are passed over.
fn bytes_in(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// Spawns `cmd` and SIGKILLs it once `folder` holds `target` bytes (a
/// seeded share of a whole run's output), polling every millisecond, so
/// the kill lands in the middle of the writing however fast the machine;
/// returns whether it was still running and the bytes there at the kill.
fn kill_at_progress(cmd: &mut Command, folder: &Path, target: u64) -> (bool, u64) {
    let mut child = cmd.spawn().unwrap();
    let running = loop {
        if child.try_wait().unwrap().is_some() {
            break false;
        }
        if bytes_in(folder) >= target {
            break true;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    };
    child.kill().ok(); // SIGKILL
    child.wait().unwrap();
    (running, bytes_in(folder))
}

/// A fraction in [0.05, 0.95) from a seed and a salt (SplitMix64).
fn fraction(seed: u64, salt: u64) -> f64 {
    let mut z = (seed ^ salt.rotate_left(17)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    0.05 + 0.9 * (z as f64 / u64::MAX as f64)
}

/// Arguments of a writer for an output path.
type ArgsFor = Box<dyn Fn(&Path) -> Vec<String>>;

struct Writer {
    name: &'static str,
    /// Suffix of the output path (`.parquet` for a file writer, `` for a folder).
    suffix: &'static str,
    /// Arguments writing to the given output path.
    args: ArgsFor,
}

fn run_to_end(cache: &Path, args: &[String]) {
    let out = earthverse(cache).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `writer` uninterrupted, then for each seed kills it at a seeded
/// point of that duration and reruns it; returns one line per seed.
fn check_writer(writer: &Writer, scratch: &Path, cache: &Path, inputs: &[&Path]) -> Vec<String> {
    let before: Vec<_> = inputs.iter().map(|p| tree(p)).collect();
    // Each output lives alone in its own folder, and the whole folder is
    // compared: a temporary file a kill left beside it counts.
    let path = |tag: &str| {
        scratch
            .join(format!("{}-{tag}", writer.name))
            .join(format!("out{}", writer.suffix))
    };
    let folder = |out: &Path| out.parent().unwrap().to_path_buf();
    let reference_out = path("reference");
    std::fs::create_dir_all(folder(&reference_out)).unwrap();
    run_to_end(cache, &(writer.args)(&reference_out));
    let reference = tree(&folder(&reference_out));
    assert!(!reference.is_empty(), "{} wrote nothing", writer.name);
    let whole = bytes_in(&folder(&reference_out));
    let salt = writer.name.bytes().map(u64::from).sum::<u64>();
    let mut lines = Vec::new();
    for seed in SEEDS {
        let out = path(&format!("seed{seed}"));
        std::fs::create_dir_all(folder(&out)).unwrap();
        let target = (whole as f64 * fraction(seed, salt)) as u64;
        let (running, there) = kill_at_progress(
            earthverse(cache).args((writer.args)(&out)),
            &folder(&out),
            target,
        );
        let left = tree(&folder(&out)).len();
        run_to_end(cache, &(writer.args)(&out));
        assert_eq!(
            tree(&folder(&out)),
            reference,
            "{} seed {seed}: killed at {there} of {whole} bytes (running: {running}); the rerun differs",
            writer.name
        );
        lines.push(format!(
            "{} seed {seed}: SIGKILL at {there} of {whole} bytes written ({}, {left} file(s) there), rerun byte-identical",
            writer.name,
            if running { "mid-run" } else { "after exit" },
        ));
    }
    for (input, hashes) in inputs.iter().zip(before) {
        assert_eq!(
            tree(input),
            hashes,
            "{}: input {} changed",
            writer.name,
            input.display()
        );
    }
    lines
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn every_writer_killed_at_seeded_points_resumes_byte_identically() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path();
    let cache = scratch.join("cache");
    let release = scratch.join("release");
    earthverse_testkit::copy_fixture_release(&release);
    let runs = release.join("exploration/trajectories");
    // Inputs of the later writers, made once.
    let scores = scratch.join("scores.jsonl");
    run_to_end(
        &cache,
        &[
            "score".into(),
            s(&release),
            "--runs".into(),
            s(&runs),
            "--out".into(),
            s(&scores),
        ],
    );
    let shards = scratch.join("shards");
    for k in 0..2 {
        run_to_end(
            &cache,
            &[
                "run".into(),
                s(&release),
                "--agent".into(),
                "baseline".into(),
                "--quiet".into(),
                "--shard".into(),
                format!("{k}/2"),
                "--out".into(),
                s(&shards),
            ],
        );
    }
    let mut writers = vec![
        Writer {
            name: "score",
            suffix: ".jsonl",
            args: Box::new({
                let (release, runs) = (release.clone(), runs.clone());
                move |out| {
                    vec![
                        "score".into(),
                        s(&release),
                        "--runs".into(),
                        s(&runs),
                        "--out".into(),
                        s(out),
                    ]
                }
            }),
        },
        Writer {
            name: "merge",
            suffix: "",
            args: Box::new({
                let shards = shards.clone();
                move |out| vec!["merge".into(), s(&shards), "--out".into(), s(out)]
            }),
        },
        Writer {
            name: "leaderboard",
            suffix: ".parquet",
            args: Box::new({
                let scores = scores.clone();
                move |out| vec!["leaderboard".into(), s(&scores), "--out".into(), s(out)]
            }),
        },
        Writer {
            name: "report",
            suffix: ".html",
            args: Box::new({
                let scores = scores.clone();
                move |out| vec!["report".into(), s(&scores), "--html".into(), s(out)]
            }),
        },
    ];
    // perturb audits the fixtures' reference analyses with Python once
    // (cached for the reruns); it needs the scientific environment.
    match std::env::var("EARTHVERSE_PYTHON") {
        Ok(python) => writers.push(Writer {
            name: "perturb",
            suffix: "",
            args: Box::new({
                let release = release.clone();
                move |out| {
                    vec![
                        "perturb".into(),
                        s(&release),
                        "--kind".into(),
                        "all".into(),
                        "--python".into(),
                        python.clone(),
                        "--out".into(),
                        s(out),
                    ]
                }
            }),
        }),
        Err(_) if std::env::var("CI").is_ok() => {
            panic!("EARTHVERSE_PYTHON is not set under CI: the perturb kill test cannot run")
        }
        Err(_) => eprintln!("EARTHVERSE_PYTHON not set: perturb is not kill-tested in this run"),
    }
    let mut lines = Vec::new();
    for w in &writers {
        lines.extend(check_writer(
            w,
            scratch,
            &cache,
            &[&release, &scores, &shards],
        ));
    }
    eprintln!("{}", lines.join("\n"));
}

/// `study run` killed at seeded points and rerun: its records (runs,
/// batch plan, study record) equal an uninterrupted run's by content,
/// ignoring only `records::WALL_CLOCK_KEYS`.
#[test]
fn study_run_killed_at_seeded_points_resumes_to_the_same_records() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path();
    let cache = scratch.join("cache");
    let release = scratch.join("release");
    earthverse_testkit::copy_fixture_release(&release);
    let manifest = scratch.join("one.toml");
    std::fs::write(
        &manifest,
        "name = \"one\"\nreference = \"interactive\"\n[tasks]\nall = true\n\
         [[conditions]]\nname = \"interactive\"\n",
    )
    .unwrap();
    let before = tree(&release);
    let args = |out: &Path| -> Vec<String> {
        vec![
            "study".into(),
            "run".into(),
            s(&manifest),
            "--release".into(),
            s(&release),
            "--agent".into(),
            "baseline".into(),
            "--quiet".into(),
            "--out".into(),
            s(out),
        ]
    };
    // Folder names of one length: the prompts quote them, and their
    // lengths are counted in the records (`request_chars`).
    let reference_out = scratch.join("study-r");
    run_to_end(&cache, &args(&reference_out));
    let reference = records(&reference_out);
    assert!(reference.keys().any(|k| k.ends_with("trajectory.json")));
    let whole = bytes_in(&reference_out);
    let mut lines = Vec::new();
    let mut mid_run = 0;
    for seed in SEEDS {
        let out = scratch.join(format!("study-{seed}"));
        let target = (whole as f64 * fraction(seed, 0x5747)) as u64;
        let (running, there) = kill_at_progress(earthverse(&cache).args(args(&out)), &out, target);
        mid_run += usize::from(running);
        let finished = walkdir::WalkDir::new(&out)
            .into_iter()
            .filter(|e| e.as_ref().is_ok_and(|e| e.file_name() == "trajectory.json"))
            .count();
        run_to_end(&cache, &args(&out));
        let got = records(&out);
        let differing: Vec<&String> = reference
            .keys()
            .chain(got.keys())
            .filter(|k| reference.get(*k) != got.get(*k))
            .collect();
        assert!(
            differing.is_empty(),
            "study run seed {seed}: killed at {there} of {whole} bytes (running: {running}); differs in {differing:?}"
        );
        lines.push(format!(
            "study run seed {seed}: SIGKILL at {there} of {whole} bytes written ({}, {finished} run(s) recorded), rerun equal by content",
            if running { "mid-run" } else { "after exit" },
        ));
    }
    assert_eq!(tree(&release), before, "study run changed the release");
    assert!(mid_run > 0, "no kill landed mid-run:\n{}", lines.join("\n"));
    eprintln!("{}", lines.join("\n"));
}
