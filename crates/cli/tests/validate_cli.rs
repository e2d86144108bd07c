//! `earthverse validate` as a process: exit status 0 when every gate holds,
//! 1 when one fails, 2 on usage or IO errors; `--json` prints one document.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn earthverse() -> Command {
    Command::new(env!("CARGO_BIN_EXE_earthverse"))
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

/// A scratch folder removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!(
            "earthverse-validate-cli-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn fixtures_pass_with_exit_0_and_json_counts() {
    let out = earthverse()
        .args(["validate", "--json"])
        .arg(fixtures())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["tasks"], 6);
    assert_eq!(report["events"], 3);
    assert_eq!(report["recorded_runs"], 12);
    assert_eq!(report["files_missing"].as_array().unwrap().len(), 1);
    assert!(report.get("gt_regeneration").is_none());

    let human = earthverse()
        .arg("validate")
        .arg(fixtures())
        .output()
        .unwrap();
    assert_eq!(human.status.code(), Some(0));
    let text = String::from_utf8_lossy(&human.stdout);
    assert!(text.contains("PASS"), "{text}");
    assert!(
        text.contains("remote_sensing_002_Sentinel-1_backscatter_full_scene.tif"),
        "{text}"
    );
}

#[test]
fn a_corrupted_file_exits_1() {
    let scratch = Scratch::new("corrupt");
    earthverse_testkit::copy_fixture_release(&scratch.0);
    let csv = scratch.0.join(
        "packages/event_packages/standard_event_packages/packages/FIX-003/data/exposure_impact/exposure_impact_001_structure_damage_inspections.csv",
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    std::fs::write(&csv, text.replace("destroyed", "Destroyed")).unwrap();
    let out = earthverse()
        .args(["validate", "--json"])
        .arg(&scratch.0)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["sha_mismatch"].as_array().unwrap().len(), 1);
    assert_eq!(report["size_mismatch"].as_array().unwrap().len(), 0);
    assert_eq!(report["failed_gates"], serde_json::json!(["sha_mismatch"]));
    let human = earthverse()
        .arg("validate")
        .arg(&scratch.0)
        .output()
        .unwrap();
    assert_eq!(human.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&human.stdout).contains("FAIL: gates failed: sha_mismatch"));
}

#[test]
fn usage_and_io_errors_exit_2() {
    let scratch = Scratch::new("empty");
    let not_a_release = earthverse()
        .arg("validate")
        .arg(&scratch.0)
        .output()
        .unwrap();
    assert_eq!(not_a_release.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&not_a_release.stderr).contains("tasks"));
    let no_root = earthverse().arg("validate").output().unwrap();
    assert_eq!(no_root.status.code(), Some(2));
    let bad_flag = earthverse()
        .args(["validate", "--no-such-flag"])
        .arg(fixtures())
        .output()
        .unwrap();
    assert_eq!(bad_flag.status.code(), Some(2));
}

#[test]
fn regenerate_gt_on_the_fixtures_is_identical() {
    let out = earthverse()
        .args(["validate", "--json", "--regenerate-gt", "--jobs", "2"])
        .arg(fixtures())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["gt_regeneration"]["identical"], 6);
    assert_eq!(report["gt_regeneration"]["differs"], serde_json::json!([]));
    assert_eq!(report["gt_regeneration"]["failed"], serde_json::json!([]));
}
