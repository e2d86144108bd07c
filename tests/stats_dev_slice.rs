//! `earthverse leaderboard --from-recorded` on the dev slice reproduces, for
//! every system, the mean Answer, Process, Core, unit accuracy and
//! Strict@95 of the scores stored in its recorded runs, to 0.01. The
//! expected values are computed here independently from the raw JSON
//! (mean of `scores.answer`, `scores.rubric`, `scores.overall`,
//! `scores.unit_accuracy`, share of runs with `unit_accuracy ≥ 95`).
//!
//! The test runs the real `earthverse` binary, found beside this test's
//! executable (`target/<profile>/earthverse`); `cargo test --workspace`
//! builds it because the CLI package has integration tests. When running
//! this package alone, build it first with `cargo build -p earthverse-cli`.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

fn earthverse_bin() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>/deps");
    let bin = dir.join(format!("earthverse{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.is_file(),
        "the earthverse binary is not built at {}: run `cargo build -p earthverse-cli` \
         (cargo test --workspace builds it)",
        bin.display()
    );
    bin
}

#[derive(Default, Debug)]
struct Expected {
    runs: usize,
    answer: f64,
    process: f64,
    core: f64,
    unit_acc: f64,
    strict: usize,
}

fn independent_means(trajectories: &std::path::Path) -> BTreeMap<String, Expected> {
    let mut out: BTreeMap<String, Expected> = BTreeMap::new();
    for system_dir in std::fs::read_dir(trajectories).unwrap() {
        let system_dir = system_dir.unwrap().path();
        for file in std::fs::read_dir(&system_dir).unwrap() {
            let path = file.unwrap().path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let run: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            let s = &run["scores"];
            let num = |k: &str| {
                s[k].as_f64()
                    .unwrap_or_else(|| panic!("{}: scores.{k}", path.display()))
            };
            let e = out
                .entry(run["model_id"].as_str().unwrap().to_owned())
                .or_default();
            e.runs += 1;
            e.answer += num("answer");
            e.process += num("rubric");
            e.core += num("overall");
            e.unit_acc += num("unit_accuracy");
            e.strict += usize::from(num("unit_accuracy") >= 95.0);
        }
    }
    for e in out.values_mut() {
        let n = e.runs as f64;
        e.answer /= n;
        e.process /= n;
        e.core /= n;
        e.unit_acc /= n;
    }
    out
}

#[test]
fn leaderboard_from_recorded_reproduces_stored_scores() {
    let data = earthverse_tests::dev_slice();
    let trajectories = data.join("exploration").join("trajectories");
    let expected = independent_means(&trajectories);
    assert_eq!(expected.len(), 25, "25 systems in the dev slice");
    assert_eq!(expected.values().map(|e| e.runs).sum::<usize>(), 817);

    let output = Command::new(earthverse_bin())
        .arg("leaderboard")
        .arg("--from-recorded")
        .arg(&trajectories)
        .arg("--json")
        .output()
        .expect("earthverse runs");
    assert!(
        output.status.success(),
        "earthverse leaderboard failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let doc: Value = serde_json::from_slice(&output.stdout).expect("JSON output");
    let rows = doc["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), expected.len());
    let mut last_core = f64::INFINITY;
    for row in rows {
        let system = row["system"].as_str().unwrap();
        let e = expected
            .get(system)
            .unwrap_or_else(|| panic!("unexpected system {system}"));
        let got = |k: &str| row[k].as_f64().unwrap_or_else(|| panic!("{system}: {k}"));
        assert_eq!(row["runs"].as_u64(), Some(e.runs as u64), "{system}: runs");
        for (field, want) in [
            ("answer", e.answer),
            ("process", e.process),
            ("core", e.core),
            ("unit_acc", e.unit_acc),
            ("strict95", 100.0 * e.strict as f64 / e.runs as f64),
        ] {
            assert!(
                (got(field) - want).abs() <= 0.01,
                "{system}: {field} = {} but the stored scores give {want}",
                got(field)
            );
        }
        assert!(got("core") <= last_core, "rows are ordered by Core");
        last_core = got("core");
    }
}

#[test]
fn difficulty_slices_partition_every_recorded_run() {
    // Task labels come from the release (recorded runs do not carry them).
    let data = earthverse_tests::dev_slice();
    let trajectories = data.join("exploration").join("trajectories");
    let expected = independent_means(&trajectories);
    let output = Command::new(earthverse_bin())
        .args([
            "leaderboard",
            "--by",
            "difficulty",
            "--json",
            "--from-recorded",
        ])
        .arg(&trajectories)
        .output()
        .expect("earthverse runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    let slices = &doc["slices"];
    let columns: Vec<&str> = slices["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(
        columns.iter().all(|c| ["L2", "L3", "L4", "L5"].contains(c)),
        "{columns:?}"
    );
    for row in slices["rows"].as_array().unwrap() {
        let system = row["system"].as_str().unwrap();
        // Difficulty levels partition the tasks: counts add up to the runs,
        // and the count-weighted mean of the cells is the system's Core.
        let cells: Vec<(f64, f64)> = row["cells"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| !c.is_null())
            .map(|c| (c["core"].as_f64().unwrap(), c["n"].as_f64().unwrap()))
            .collect();
        let n: f64 = cells.iter().map(|c| c.1).sum();
        assert_eq!(n as usize, expected[system].runs, "{system}");
        let core = cells.iter().map(|c| c.0 * c.1).sum::<f64>() / n;
        assert!(
            (core - expected[system].core).abs() <= 0.01,
            "{system}: {core}"
        );
    }
}
