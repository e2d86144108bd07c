//! Every perturbation targets the evidence of the task it is applied to,
//! as the task's own reference analysis reads it (issue #45).
//!
//! One event, two tasks that read different evidence:
//! - Q1 finds the event anchor by globbing (its program never names the
//!   file), computes a peak from a labelled daily series, and opens an
//!   aggregate file only to reject it (its answer names that file but never
//!   uses its values);
//! - Q2 reads the anchor and a population file.
//!
//! The audited run must see all of that; the perturbations must follow it,
//! per task; and `check_perturbed` must measure hit and bite on the real
//! programs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_interventions::{
    check_perturbed, perturb_release_with, PerturbationKind, ReadsMethod, ReferenceReads,
};
use earthverse_package_model::Release;
use earthverse_package_model::RELEASE_PACKAGES_DIR;
use serde_json::json;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

const SERIES: &str = "data/physical_hazard/physical_hazard_010_station_daily_series.json";
const AGGREGATE: &str = "data/physical_hazard/physical_hazard_011_reanalysis_aggregate_stats.json";
const ANCHOR: &str = "data/event_reports/event_reports_010_locked_event_anchor.json";
const POPULATION: &str = "data/exposure_impact/exposure_impact_010_population_sum.json";

fn python() -> PathBuf {
    earthverse_tool_registry::sandbox::resolve_interpreter(None).0
}

const FIND_PACKAGE: &str = r#"
import glob, json
from datetime import date
from pathlib import Path


def package() -> Path:
    here = Path(__file__).resolve().parent
    for c in [here, *here.parents]:
        p = c / "event_packages" / "standard_event_packages" / "packages" / "FIX-003"
        if p.is_dir():
            return p
    raise FileNotFoundError("FIX-003")


def anchor(pkg: Path) -> dict:
    # Found by pattern: the program text never names the file.
    (path,) = glob.glob(str(pkg / "data" / "event_reports" / "*locked_event_anchor*.json"))
    with open(path, encoding="utf-8") as h:
        return json.load(h)["temporal_window"]
"#;

fn q1_program() -> String {
    format!(
        r#"{FIND_PACKAGE}

def main():
    pkg = package()
    window = anchor(pkg)
    start, end = date.fromisoformat(window["start_date"]), date.fromisoformat(window["end_date"])
    series = json.loads((pkg / "{SERIES}").read_text(encoding="utf-8"))
    daily = series["daily"]
    rows = [t for d, t in zip(daily["time"], daily["temperature_2m_max"]) if start <= date.fromisoformat(d) <= end]
    aggregate = json.loads((pkg / "{AGGREGATE}").read_text(encoding="utf-8"))
    rejected = "{AGGREGATE}" if aggregate.get("daily") is None else None
    primary = {{"peak_tmax_c": max(rows), "window_days": len(rows), "rejected_source": rejected}}
    (Path(__file__).resolve().parent / "computed_gt.json").write_text(json.dumps({{"primary_gt": primary}}))


if __name__ == "__main__":
    main()
"#
    )
}

fn q2_program() -> String {
    format!(
        r#"{FIND_PACKAGE}

def main():
    pkg = package()
    window = anchor(pkg)
    days = (date.fromisoformat(window["end_date"]) - date.fromisoformat(window["start_date"])).days + 1
    population = json.loads((pkg / "{POPULATION}").read_text(encoding="utf-8"))["population_sum"]["population"]
    primary = {{"population": population, "window_days": days}}
    (Path(__file__).resolve().parent / "computed_gt.json").write_text(json.dumps({{"primary_gt": primary}}))


if __name__ == "__main__":
    main()
"#
    )
}

fn copy_release(from: &Path, to: &Path) {
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

/// The fixture release with the four files in FIX-003 and the two
/// programs; the recorded ground truth is computed here from the data.
fn release(root: &Path) -> Release {
    let fixtures = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release");
    copy_release(&fixtures, root);
    let package = root.join(RELEASE_PACKAGES_DIR).join("FIX-003");
    // 120 days from 2023-05-01, a long text file.
    let days: Vec<String> = (0..120)
        .map(|i| {
            let d = time_day(i);
            format!("2023-{:02}-{:02}", d.0, d.1)
        })
        .collect();
    let temps: Vec<f64> = (0..120)
        .map(|i| 20.0 + f64::from((i * 37) % 23) / 2.0)
        .collect();
    let series = json!({
        "daily_units": {"time": "iso8601", "temperature_2m_max": "°C"},
        "daily": {"time": days, "temperature_2m_max": temps},
    });
    let files = [
        (SERIES, serde_json::to_string_pretty(&series).unwrap()),
        (
            AGGREGATE,
            serde_json::to_string_pretty(
                &json!({"kind": "aggregate", "stats": {"temperature_2m_max_c_max": 31.3}}),
            )
            .unwrap(),
        ),
        (
            ANCHOR,
            json!({"temporal_window": {"start_date": "2023-06-10", "end_date": "2023-06-16"}})
                .to_string(),
        ),
        (
            POPULATION,
            json!({"population_sum": {"population": 12345}}).to_string(),
        ),
    ];
    for (rel, text) in &files {
        let path = package.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    // Window 2023-06-10..16 = days 40..=46 from 2023-05-01.
    let window: Vec<f64> = temps[40..=46].to_vec();
    let peak = window.iter().cloned().fold(f64::MIN, f64::max);
    let primaries = [
        (
            "FIX-003_Q1",
            json!({"peak_tmax_c": peak, "window_days": 7, "rejected_source": AGGREGATE}),
            q1_program(),
        ),
        (
            "FIX-003_Q2",
            json!({"population": 12345, "window_days": 7}),
            q2_program(),
        ),
    ];
    for (task, primary, program) in primaries {
        let path = root.join("tasks").join(format!("{task}.json"));
        let mut value: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        for (rel, text) in &files {
            let sha = hex::encode(Sha256::digest(text.as_bytes()))[..16].to_string();
            value["event_files"].as_array_mut().unwrap().push(json!({
                "relative_path": rel,
                "category": rel.split('/').nth(1),
                "bytes": text.len(),
                "sha256_16": sha,
            }));
        }
        value["compute_gt_py"] = json!(program);
        value["ground_truth"]["primary_gt"] = primary;
        std::fs::write(&path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
    }
    Release::load(root).unwrap()
}

/// (month, day) of day `i` after 2023-05-01 (May 31 days, June 30, ...).
fn time_day(i: u32) -> (u32, u32) {
    let months = [(5, 31), (6, 30), (7, 31), (8, 31), (9, 30)];
    let mut left = i;
    for (month, len) in months {
        if left < len {
            return (month, left + 1);
        }
        left -= len;
    }
    unreachable!()
}

#[test]
fn the_audit_sees_what_each_program_opens_needs_and_only_consults() {
    let dir = tempfile::tempdir().unwrap();
    let release = release(&dir.path().join("release"));
    let reads = ReferenceReads::audit(&release, &python(), 2).unwrap();
    let q1 = &reads.tasks["FIX-003_Q1"];
    assert_eq!(q1.method, ReadsMethod::Audit, "{:?}", q1.outcome);
    // In the order the program opens them; the globbed anchor included.
    assert_eq!(q1.paths(), [ANCHOR, SERIES, AGGREGATE]);
    let needed: Vec<Option<bool>> = q1.files.iter().map(|f| f.needed).collect();
    assert_eq!(needed, [Some(true), Some(true), Some(false)], "{q1:?}");
    assert!(q1
        .file(SERIES)
        .unwrap()
        .keys
        .contains(&"daily.temperature_2m_max".to_string()));
    let q2 = &reads.tasks["FIX-003_Q2"];
    assert_eq!(q2.paths(), [ANCHOR, POPULATION]);
    assert!(q2.files.iter().all(|f| f.needed == Some(true)));
    // The static reading misses the globbed anchor: the audit is the yardstick.
    let text_only = ReferenceReads::static_only(&release);
    assert!(!text_only.tasks["FIX-003_Q1"].paths().contains(&ANCHOR));
}

#[test]
fn each_task_gets_its_own_evidence_targeted_and_the_check_measures_it() {
    let dir = tempfile::tempdir().unwrap();
    let release = release(&dir.path().join("release"));
    let reads = ReferenceReads::audit(&release, &python(), 2).unwrap();
    let mut removed_q1 = std::collections::BTreeSet::new();
    for seed in 0..6u64 {
        let out = dir.path().join(format!("missing-{seed}"));
        let manifests = perturb_release_with(
            &release,
            PerturbationKind::Missing,
            seed,
            &out,
            None,
            &reads,
        )
        .unwrap();
        let m1 = manifests
            .iter()
            .find(|m| m.task_id == "FIX-003_Q1")
            .unwrap();
        let m2 = manifests
            .iter()
            .find(|m| m.task_id == "FIX-003_Q2")
            .unwrap();
        let t1 = m1.target.as_ref().unwrap().file.clone();
        let t2 = m2.target.as_ref().unwrap().file.clone();
        // Never the file Q1 only consults; Q2's from Q2's own reads.
        assert!([ANCHOR, SERIES].contains(&t1.as_str()), "{t1}");
        assert!([ANCHOR, POPULATION].contains(&t2.as_str()), "{t2}");
        removed_q1.insert(t1.clone());
        // Per-task overlays: Q2's package keeps what only Q1 lost.
        let perturbed = Release::load(&out).unwrap();
        let p1 = perturbed.task_package_dir(perturbed.task("FIX-003_Q1").unwrap());
        let p2 = perturbed.task_package_dir(perturbed.task("FIX-003_Q2").unwrap());
        assert!(!p1.join(&t1).exists() && !p2.join(&t2).exists());
        if t1 != t2 {
            assert!(p2.join(&t1).is_file() && p1.join(&t2).is_file());
        }
        let check = check_perturbed(&release, &reads, &out, &python(), 2).unwrap();
        for id in ["FIX-003_Q1", "FIX-003_Q2"] {
            let t = check.tasks.iter().find(|t| t.task_id == id).unwrap();
            assert_eq!(
                (t.hit, t.bite),
                (Some(true), Some(true)),
                "seed {seed}: {t:?}"
            );
        }
    }
    assert_eq!(
        removed_q1.len(),
        2,
        "both needed files get chosen over the seeds"
    );

    // Conflicting: Q1's secondary source is the one it rejects; the primary
    // is untouched, and the reference answer does not move.
    let out = dir.path().join("conflicting");
    let manifests = perturb_release_with(
        &release,
        PerturbationKind::Conflicting,
        2026,
        &out,
        None,
        &reads,
    )
    .unwrap();
    let m1 = manifests
        .iter()
        .find(|m| m.task_id == "FIX-003_Q1")
        .unwrap();
    let target = m1.target.as_ref().unwrap();
    assert_eq!(target.file, AGGREGATE);
    assert!(target.why.contains("secondary"), "{}", target.why);
    let m2 = manifests
        .iter()
        .find(|m| m.task_id == "FIX-003_Q2")
        .unwrap();
    assert!(m2.not_applicable.as_deref().unwrap().contains("secondary"));
    let check = check_perturbed(&release, &reads, &out, &python(), 2).unwrap();
    let t = check
        .tasks
        .iter()
        .find(|t| t.task_id == "FIX-003_Q1")
        .unwrap();
    assert_eq!((t.hit, t.bite), (Some(true), Some(false)), "{t:?}");
    let t = check
        .tasks
        .iter()
        .find(|t| t.task_id == "FIX-003_Q2")
        .unwrap();
    assert!(!t.applicable && t.hit.is_none());

    // Truncated: the long series Q1 reads, cut inside the part it reads.
    let out = dir.path().join("truncated");
    let manifests =
        perturb_release_with(&release, PerturbationKind::Truncated, 1, &out, None, &reads).unwrap();
    let m1 = manifests
        .iter()
        .find(|m| m.task_id == "FIX-003_Q1")
        .unwrap();
    assert_eq!(m1.target.as_ref().unwrap().file, SERIES);
    let check = check_perturbed(&release, &reads, &out, &python(), 2).unwrap();
    let t = check
        .tasks
        .iter()
        .find(|t| t.task_id == "FIX-003_Q1")
        .unwrap();
    assert_eq!((t.hit, t.bite), (Some(true), Some(true)), "{t:?}");

    // Unit change: Q1's labelled series; adapted program reproduces, the
    // unadapted one does not.
    let out = dir.path().join("unit-change");
    let manifests = perturb_release_with(
        &release,
        PerturbationKind::UnitChange,
        1,
        &out,
        None,
        &reads,
    )
    .unwrap();
    let m1 = manifests
        .iter()
        .find(|m| m.task_id == "FIX-003_Q1")
        .unwrap();
    assert_eq!(
        m1.target.as_ref().unwrap().variable.as_deref(),
        Some("daily.temperature_2m_max")
    );
    let check = check_perturbed(&release, &reads, &out, &python(), 2).unwrap();
    let t = check
        .tasks
        .iter()
        .find(|t| t.task_id == "FIX-003_Q1")
        .unwrap();
    assert_eq!(
        (t.hit, t.bite, t.adapted_reproduces),
        (Some(true), Some(true), Some(true)),
        "{t:?}"
    );
}
