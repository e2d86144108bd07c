//! `earthverse study run` and `study report` end to end on the bundled
//! fixture release with the baseline agent: every condition runs over every
//! task with its `condition` recorded; a second run does no work; a study
//! killed mid-run resumes without losing or repeating a run; and the
//! report's paired ΔCore intervals match an independent computation from
//! the score files (the App. C.5 bootstrap written out again here).

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use rand::{RngCore, SeedableRng};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn earthverse() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_earthverse"));
    cmd.current_dir(repo());
    cmd
}

fn study_run(manifest: &Path, out: &Path) -> std::process::Output {
    let output = earthverse()
        .args(["study", "run"])
        .arg(manifest)
        .args([
            "--agent",
            "baseline",
            "--quiet",
            "--concurrency",
            "2",
            "--out",
        ])
        .arg(out)
        .output()
        .expect("earthverse runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// `(condition, task) -> trajectory.json bytes`.
fn trajectories(out: &Path) -> BTreeMap<(String, String), Vec<u8>> {
    let mut found = BTreeMap::new();
    let runs = out.join("runs");
    for condition in std::fs::read_dir(&runs).unwrap() {
        let condition = condition.unwrap().path();
        for task in std::fs::read_dir(&condition).unwrap() {
            let file = task.unwrap().path().join("trajectory.json");
            if file.is_file() {
                let key = (
                    condition
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                    file.parent()
                        .unwrap()
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
                found.insert(key, std::fs::read(&file).unwrap());
            }
        }
    }
    found
}

#[test]
fn the_fixture_study_runs_every_condition_records_it_and_resumes() {
    let out = tempfile::tempdir().unwrap();
    let manifest = repo().join("studies/fixtures-smoke.toml");
    study_run(&manifest, out.path());
    let runs = trajectories(out.path());
    assert_eq!(runs.len(), 3 * 6, "3 conditions x 6 fixture tasks");
    for ((condition, task), bytes) in &runs {
        let t: Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(&t["task_id"], task.as_str());
        let recorded = &t["condition"];
        match condition.as_str() {
            "interactive" => assert_eq!(recorded, &serde_json::json!({})),
            "compressed-direct" => {
                assert_eq!(recorded["answer_mode"], "compressed-direct");
                assert_eq!(t["diagnostics"]["model_rounds"], 1);
                assert!(t["tool_calls"].as_array().unwrap().is_empty());
            }
            "topk20-short" => {
                assert_eq!(recorded["catalogue"], "topk:20");
                assert_eq!(recorded["context"], "short");
                assert_eq!(recorded["max_turns"], 24);
            }
            other => panic!("unexpected condition {other}"),
        }
    }
    // A second run finds every run done and changes nothing.
    let again = study_run(&manifest, out.path());
    let stdout = String::from_utf8_lossy(&again.stdout);
    assert_eq!(
        stdout.matches("ran 0 ok, 0 error; 6 already done").count(),
        3,
        "{stdout}"
    );
    assert_eq!(trajectories(out.path()), runs);
}

#[test]
fn a_killed_study_resumes_without_losing_or_repeating_runs() {
    let dir = tempfile::tempdir().unwrap();
    // A slow condition: with a narrow context the baseline keeps listing
    // files it forgot, until the 96-turn budget ends each run.
    let manifest = dir.path().join("slow.toml");
    std::fs::write(
        &manifest,
        "name = \"slow\"\nrelease = \"fixtures/release\"\nreference = \"narrow\"\n\
         [tasks]\nall = true\n\
         [[conditions]]\nname = \"narrow\"\ncontext = \"aggressive\"\nmax_turns = 96\n\
         [[conditions]]\nname = \"plain\"\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let mut child = earthverse()
        .args(["study", "run"])
        .arg(&manifest)
        .args([
            "--agent",
            "baseline",
            "--quiet",
            "--concurrency",
            "1",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while trajectories_if_any(&out).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = trajectories_if_any(&out);
    assert!(!before.is_empty(), "a run finished before the kill");
    assert!(before.len() < 12, "the kill came before the study finished");
    study_run(&manifest, &out);
    let after = trajectories(&out);
    assert_eq!(after.len(), 12, "every run of 2 conditions x 6 tasks, once");
    for (key, bytes) in &before {
        assert_eq!(after.get(key), Some(bytes), "{key:?} kept as it was");
    }
}

fn trajectories_if_any(out: &Path) -> BTreeMap<(String, String), Vec<u8>> {
    if out.join("runs").is_dir() {
        trajectories(out)
    } else {
        BTreeMap::new()
    }
}

/// The percentile bootstrap of App. C.5, written out independently:
/// ChaCha20 seeded with `seed`, Lemire-bounded indices, type-7 percentiles.
fn paired_interval(a: &[f64], b: &[f64], resamples: usize, seed: u64) -> (f64, f64, f64) {
    let n = a.len();
    let mut rng = rand_chacha::ChaCha20Rng::seed_from_u64(seed);
    let mut deltas = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let (mut sa, mut sb) = (0.0, 0.0);
        for _ in 0..n {
            let bound = n as u32;
            let mut product = u64::from(rng.next_u32()) * u64::from(bound);
            if (product as u32) < bound {
                let threshold = bound.wrapping_neg() % bound;
                while (product as u32) < threshold {
                    product = u64::from(rng.next_u32()) * u64::from(bound);
                }
            }
            let j = (product >> 32) as usize;
            sa += a[j];
            sb += b[j];
        }
        deltas.push((sa - sb) / n as f64);
    }
    deltas.sort_by(f64::total_cmp);
    let pct = |q: f64| {
        let h = (deltas.len() - 1) as f64 * q;
        let lo = h.floor() as usize;
        let hi = (lo + 1).min(deltas.len() - 1);
        deltas[lo] + (h - lo as f64) * (deltas[hi] - deltas[lo])
    };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    (mean(a) - mean(b), pct(0.025), pct(0.975))
}

#[test]
fn the_report_matches_an_independent_computation_of_the_paired_deltas() {
    let out = tempfile::tempdir().unwrap();
    study_run(&repo().join("studies/fixtures-smoke.toml"), out.path());
    let html = out.path().join("study.html");
    let report = earthverse()
        .args(["study", "report", "--json", "--html"])
        .arg(&html)
        .arg(out.path())
        .output()
        .unwrap();
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report["reference"], "interactive");
    assert_eq!(report["tasks"], 6);
    // Core per task from each condition's score file, in task order.
    let core_of = |condition: &str| -> Vec<f64> {
        let text =
            std::fs::read_to_string(out.path().join("scores").join(format!("{condition}.jsonl")))
                .unwrap();
        let mut by_task: BTreeMap<String, f64> = BTreeMap::new();
        for line in text.lines() {
            let r: Value = serde_json::from_str(line).unwrap();
            let core = if r["run_status"] == "error" {
                0.0
            } else {
                r["core"].as_f64().unwrap()
            };
            by_task.insert(r["task_id"].as_str().unwrap().to_string(), core);
        }
        assert_eq!(by_task.len(), 6);
        by_task.into_values().collect()
    };
    let reference = core_of("interactive");
    let rows = report["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for row in rows {
        let name = row["condition"].as_str().unwrap();
        let core = core_of(name);
        let mean = core.iter().sum::<f64>() / 6.0;
        assert!((row["scores"]["core"].as_f64().unwrap() - mean).abs() < 1e-9);
        if name == "interactive" {
            assert!(row["delta_core"].is_null());
            continue;
        }
        // Win / tie / loss against the reference: per-task Core, ties
        // within 1 point.
        let (mut wins, mut ties, mut losses) = (0, 0, 0);
        for (x, y) in core.iter().zip(&reference) {
            if x - y > 1.0 {
                wins += 1;
            } else if y - x > 1.0 {
                losses += 1;
            } else {
                ties += 1;
            }
        }
        let w = &row["vs_reference"];
        assert_eq!(
            (w["wins"].as_u64(), w["ties"].as_u64(), w["losses"].as_u64()),
            (Some(wins), Some(ties), Some(losses)),
            "{name}"
        );
        let (delta, low, high) = paired_interval(&core, &reference, 5_000, 2026);
        let d = &row["delta_core"];
        assert_eq!(d["resamples"], 5000);
        assert_eq!(d["seed"], 2026);
        for (field, expected) in [("delta", delta), ("ci_low", low), ("ci_high", high)] {
            let got = d[field].as_f64().unwrap();
            assert!(
                (got - expected).abs() < 1e-9,
                "{name} {field}: {got} vs {expected}"
            );
        }
    }
    // The direct condition made one call per task and no tool call.
    let direct = rows
        .iter()
        .find(|r| r["condition"] == "compressed-direct")
        .unwrap();
    assert_eq!(direct["resources"]["rounds"], 1.0);
    assert_eq!(direct["resources"]["tool_calls"], 0.0);
    // Its injected files (Table 10) are the mean of the records'
    // `direct_input.files`; evidence refs (Tables 9, 12, 13) the mean
    // length of `evidence`.
    let runs = trajectories(out.path());
    let mean = |condition: &str, f: &dyn Fn(&Value) -> f64| -> f64 {
        let values: Vec<f64> = runs
            .iter()
            .filter(|((c, _), _)| c == condition)
            .map(|(_, bytes)| f(&serde_json::from_slice(bytes).unwrap()))
            .collect();
        values.iter().sum::<f64>() / values.len() as f64
    };
    let injected = mean("compressed-direct", &|t| {
        t["direct_input"]["files"].as_array().unwrap().len() as f64
    });
    assert!(injected > 0.0);
    assert!((direct["resources"]["injected_files"].as_f64().unwrap() - injected).abs() < 1e-9);
    let interactive = rows
        .iter()
        .find(|r| r["condition"] == "interactive")
        .unwrap();
    assert!(interactive["resources"]["injected_files"].is_null());
    let refs = mean("interactive", &|t| {
        t["evidence"].as_array().map_or(0, Vec::len) as f64
    });
    assert!((interactive["resources"]["evidence_refs"].as_f64().unwrap() - refs).abs() < 1e-9);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("compressed-direct") && page.contains("ΔCore"));
    assert!(page.contains("<th>Injected</th>") && page.contains("<th>Refs</th>"));
}

#[test]
fn studies_run_into_one_directory_share_the_runs_of_identical_conditions() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    study_run(&repo().join("studies/fixtures-smoke.toml"), &out);
    let first = trajectories(&out);
    // A second study whose reference has the same condition record as the
    // smoke study's `topk20-short`, under another name.
    let manifest = dir.path().join("second.toml");
    std::fs::write(
        &manifest,
        "name = \"second\"\nrelease = \"fixtures/release\"\nreference = \"router\"\n\
         [tasks]\nall = true\n\
         [[conditions]]\nname = \"router\"\ncatalogue = \"topk:20\"\ncontext = \"short\"\nmax_turns = 24\n\
         [[conditions]]\nname = \"long\"\ncontext = \"long\"\n",
    )
    .unwrap();
    let second = study_run(&manifest, &out);
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(
        stderr.contains("condition router reuses the runs of runs/topk20-short"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&second.stdout);
    assert!(
        stdout.contains("ran 0 ok, 0 error; 6 already done"),
        "{stdout}"
    );
    let after = trajectories(&out);
    assert!(!out.join("runs/router").exists());
    assert_eq!(after.len(), first.len() + 6, "only `long` ran");
    for (key, bytes) in &first {
        assert_eq!(after.get(key), Some(bytes));
    }
    let study: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("studies/second.json")).unwrap())
            .unwrap();
    assert_eq!(study["conditions"][0]["runs"], "topk20-short");
    // The report needs the study's name now, and scores the shared runs once.
    let report = |name: &str| -> Value {
        let output = earthverse()
            .args(["study", "report", "--json", "--study", name])
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let smoke = report("fixtures-smoke");
    let second = report("second");
    let core = |r: &Value, c: &str| {
        r["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["condition"] == c)
            .unwrap()["scores"]["core"]
            .clone()
    };
    assert_eq!(core(&second, "router"), core(&smoke, "topk20-short"));
    assert!(!out.join("scores/router.jsonl").exists());
    let unnamed = earthverse()
        .args(["study", "report"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(!unnamed.status.success());
    assert!(String::from_utf8_lossy(&unnamed.stderr).contains("--study"));
}

/// `study run` of a manifest whose one condition `a` has `line`: it must
/// fail; its stderr.
fn refused_with(line: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("bad.toml");
    std::fs::write(
        &manifest,
        format!(
            "name = \"bad\"\nreference = \"a\"\n[tasks]\nall = true\n\
             [[conditions]]\nname = \"a\"\n{line}\n"
        ),
    )
    .unwrap();
    let output = earthverse()
        .args(["study", "run"])
        .arg(&manifest)
        .args([
            "--agent",
            "baseline",
            "--release",
            "fixtures/release",
            "--out",
        ])
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert!(!output.status.success());
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_bad_manifest_is_refused_with_the_file_and_the_key() {
    let err = refused_with("catalog = \"topk:20\"");
    assert!(
        err.contains("bad.toml") && err.contains("`catalog`"),
        "{err}"
    );
    let err = refused_with("catalogue = \"topk:0\"");
    assert!(
        err.contains("--catalogue") && err.contains("condition `a`"),
        "{err}"
    );
}

#[test]
fn a_shared_folder_still_running_for_another_study_does_not_block_a_finished_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let write = |name: &str, tasks: &str| {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!(
                "name = \"{name}\"\nrelease = \"fixtures/release\"\nreference = \"c\"\n\
                 [tasks]\n{tasks}\n[[conditions]]\nname = \"c\"\ncontext = \"short\"\n"
            ),
        )
        .unwrap();
        path
    };
    let small = write("small", "ids = [\"FIX-001_Q1\", \"FIX-002_Q1\"]");
    study_run(&small, &out);
    // The big study shares folder `c` and runs only half of its tasks: the
    // folder's batch plan now names tasks without a run.
    let big = write("big", "all = true");
    let output = earthverse()
        .args(["study", "run"])
        .arg(&big)
        .args(["--agent", "baseline", "--quiet", "--shard", "1/2", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let runs = trajectories(&out);
    assert!(runs.len() < 6, "half of the big study is missing");
    let report = |name: &str| {
        earthverse()
            .args(["study", "report", "--json", "--study", name])
            .arg(&out)
            .output()
            .unwrap()
    };
    let small_report = report("small");
    assert!(
        small_report.status.success(),
        "{}",
        String::from_utf8_lossy(&small_report.stderr)
    );
    let doc: Value = serde_json::from_slice(&small_report.stdout).unwrap();
    assert_eq!(doc["tasks"], 2);
    assert_eq!(doc["rows"][0]["missing_runs"], 0);
    // The unfinished study is refused, naming its own missing runs.
    let big_report = report("big");
    assert!(!big_report.status.success());
    let err = String::from_utf8_lossy(&big_report.stderr);
    assert!(
        err.contains(&format!("condition c lacks {} of 6 runs", 6 - runs.len())),
        "{err}"
    );
}
