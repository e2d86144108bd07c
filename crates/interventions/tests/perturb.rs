//! Perturbations of the fixture release: the original is never modified,
//! the question and ground truth never change, every task gets the
//! perturbation or a named reason, the changes are what the manifest says,
//! the perturbed release passes validation, and every perturbation targets
//! the evidence the task's own reference analysis reads (audited run of its
//! `compute_gt.py`), per task.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_interventions::{
    check_perturbed, perturb_release_with, PerturbationKind, ReadsMethod, ReferenceReads,
    TaskPerturbation,
};
use earthverse_package_model::validate::{validate, ValidateOptions};
use earthverse_package_model::Release;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

/// The interpreter the project runs reference analyses with.
fn python() -> PathBuf {
    earthverse_tool_registry::sandbox::resolve_interpreter(None).0
}

/// The audited reads of `release` (no cache).
fn reads(release: &Release) -> ReferenceReads {
    ReferenceReads::audit(release, &python(), 2).unwrap()
}

fn perturb(
    release: &Release,
    reads: &ReferenceReads,
    kind: PerturbationKind,
    seed: u64,
    out: &Path,
) -> Vec<TaskPerturbation> {
    perturb_release_with(release, kind, seed, out, None, reads).unwrap()
}

fn tree_hashes(root: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let digest = hex::encode(Sha256::digest(std::fs::read(&path).unwrap()));
                out.insert(path.strip_prefix(root).unwrap().to_path_buf(), digest);
            }
        }
    }
    out
}

#[test]
fn every_kind_leaves_the_original_and_the_questions_untouched_and_validates() {
    let original = Release::load(&fixtures()).unwrap();
    let reads = reads(&original);
    let before = tree_hashes(&fixtures());
    for kind in PerturbationKind::ALL {
        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("perturbed");
        let manifests = perturb(&original, &reads, kind, 7, &target);
        assert_eq!(
            manifests.len(),
            original.tasks().len(),
            "{kind}: one per task"
        );
        let perturbed = Release::load(&target).unwrap();
        for task in original.tasks() {
            let other = perturbed.task(&task.task_id).expect("every task kept");
            assert_eq!(other.question, task.question, "{kind}: question unchanged");
            assert_eq!(
                other.ground_truth, task.ground_truth,
                "{kind}: answer unchanged"
            );
        }
        for m in &manifests {
            assert_eq!(m.seed, 7);
            assert!(
                m.not_applicable.is_some() == m.changes.is_empty(),
                "{kind} {}: changes or a reason",
                m.task_id
            );
            let task = perturbed.task(&m.task_id).unwrap();
            // Each task reads its own package.
            let root = perturbed.task_package_dir(task);
            assert!(root.ends_with(format!("task_packages/{}/{}", m.task_id, m.event_id)));
            for c in &m.changes {
                let present = root.join(&c.file).is_file();
                match c.action.as_str() {
                    "removed" => assert!(!present, "{kind}: {} removed", c.file),
                    _ => assert!(present, "{kind}: {} present", c.file),
                }
                if c.action == "rewritten" {
                    let was =
                        std::fs::read(original.package_dir(&m.event_id).join(&c.file)).unwrap();
                    assert_ne!(std::fs::read(root.join(&c.file)).unwrap(), was);
                }
            }
            // The manifest lives outside the package, where no tool lists it.
            assert!(target
                .join("perturbations")
                .join(format!("{}.json", m.task_id))
                .is_file());
            assert!(!root.join("perturbation.json").exists());
        }
        let report = validate(&perturbed, &ValidateOptions::default()).unwrap();
        assert!(report.passed(), "{kind}: {:?}", report.failed_gates);
        assert_eq!(
            tree_hashes(&fixtures()),
            before,
            "{kind}: the original is untouched"
        );
    }
}

#[test]
fn distractors_and_missing_apply_to_every_fixture_task() {
    let original = Release::load(&fixtures()).unwrap();
    let reads = reads(&original);
    for kind in [PerturbationKind::Distractors, PerturbationKind::Missing] {
        let out = tempfile::tempdir().unwrap();
        for m in perturb(&original, &reads, kind, 2026, &out.path().join("p")) {
            assert!(
                m.not_applicable.is_none(),
                "{kind} {}: {:?}",
                m.task_id,
                m.not_applicable
            );
        }
    }
    // The same seed gives the same release.
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for dir in [&a, &b] {
        perturb(
            &original,
            &reads,
            PerturbationKind::Distractors,
            5,
            &dir.path().join("p"),
        );
    }
    assert_eq!(
        tree_hashes(&a.path().join("p")),
        tree_hashes(&b.path().join("p"))
    );
}

#[test]
fn an_existing_output_is_refused() {
    let original = Release::load(&fixtures()).unwrap();
    let out = tempfile::tempdir().unwrap();
    std::fs::write(out.path().join("keep.txt"), "mine").unwrap();
    let err = perturb_release_with(
        &original,
        PerturbationKind::Missing,
        1,
        out.path(),
        None,
        &ReferenceReads::static_only(&original),
    )
    .unwrap_err();
    assert!(err.to_string().contains("must be new or empty"), "{err}");
}

#[test]
fn an_output_inside_the_release_is_refused_and_the_release_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("release");
    copy_release(&fixtures(), &root);
    let before = tree_hashes(&root);
    let release = Release::load(&root).unwrap();
    let reads = ReferenceReads::static_only(&release);
    for (out, says) in [
        (root.join("packages/x"), "is inside the release"),
        (root.join("tasks/new/deeper"), "is inside the release"),
        (root.clone(), "is the release"),
        (dir.path().to_path_buf(), "holds the release"),
    ] {
        let err = perturb_release_with(
            &release,
            PerturbationKind::Distractors,
            1,
            &out,
            None,
            &reads,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains(&format!("output {}", out.display())) && err.contains(says),
            "{}: {err}",
            out.display()
        );
        assert_eq!(tree_hashes(&root), before, "{}", out.display());
    }
    assert!(!root.join("packages/x").exists());
}

#[test]
fn a_symlinked_package_folder_is_perturbed_like_a_real_one() {
    // Data on shared storage: the release's package folder is a symlink.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("release");
    copy_release(&fixtures(), &root);
    let packages = root.join(earthverse_package_model::RELEASE_PACKAGES_DIR);
    let shared = dir.path().join("shared-storage-FIX-001");
    std::fs::rename(packages.join("FIX-001"), &shared).unwrap();
    std::os::unix::fs::symlink(&shared, packages.join("FIX-001")).unwrap();
    let release = Release::load(&root).unwrap();
    let reads = reads(&release);
    let out = dir.path().join("perturbed");
    let manifests = perturb(&release, &reads, PerturbationKind::Missing, 3, &out);
    let m = manifests
        .iter()
        .find(|m| m.task_id == "FIX-001_Q1")
        .unwrap();
    assert!(m.applicable(), "{:?}", m.not_applicable);
    let perturbed = Release::load(&out).unwrap();
    let package = perturbed.task_package_dir(perturbed.task("FIX-001_Q1").unwrap());
    assert!(!package.join(&m.target.as_ref().unwrap().file).exists());
    assert!(std::fs::symlink_metadata(&package).unwrap().is_dir());
    assert!(
        shared.join(&m.target.as_ref().unwrap().file).is_file(),
        "original kept"
    );
}

// ---- unit change: the ground truth still holds (issue #27) ----

const SERIES_FILE: &str = "data/physical_hazard/physical_hazard_003_Open-Meteo_daily_series.json";
const TMAX: [&str; 7] = ["31.4", "33", "36.25", "38.1", "37.9", "29.0", "30.6"];
const PRECIP: [&str; 7] = ["0.0", "1.2", "0", "12.7", "3.35", "0.4", "22"];

/// A program reading the series through `reader` (`json.load` or
/// `json.loads`), returning the series as decoded plus a peak and a sum.
fn series_program(task: &str, reader: &str) -> String {
    let load = match reader {
        "load" => {
            "with (package / SERIES).open(encoding=\"utf-8\") as h:\n        doc = json.load(h)"
        }
        _ => "doc = json.loads((package / SERIES).read_text(encoding=\"utf-8\"))",
    };
    format!(
        r#"#!/usr/bin/env python3
"""Ground truth of {task} from the daily series."""

from __future__ import annotations

import json
from pathlib import Path

SERIES = "{SERIES_FILE}"


def find_package(start: Path) -> Path:
    for candidate in [start, *start.parents]:
        p = candidate / "event_packages" / "standard_event_packages" / "packages" / "FIX-001"
        if p.is_dir():
            return p
    raise FileNotFoundError("FIX-001")


def main() -> None:
    task_dir = Path(__file__).resolve().parent
    package = find_package(task_dir)
    {load}
    daily = doc["daily"]
    units = doc["daily_units"]
    primary = {{
        "tmax": daily["temperature_2m_max"],
        "precip": daily["precipitation_sum"],
        "peak_tmax": max(daily["temperature_2m_max"]),
        "precip_total": round(sum(daily["precipitation_sum"]), 2),
        "units": [units["temperature_2m_max"], units["precipitation_sum"]],
    }}
    (task_dir / "computed_gt.json").write_text(json.dumps({{"primary_gt": primary}}), encoding="utf-8")


if __name__ == "__main__":
    main()
"#
    )
}

fn copy_release(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(from).unwrap();
        let target = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The fixture release with a labelled Open-Meteo-style series in FIX-001
/// and both FIX-001 programs reading it (one through `json.loads`, one
/// through `json.load`); the recorded ground truth is what the series says.
fn release_with_series(root: &Path) -> Release {
    copy_release(&fixtures(), root);
    let original = Release::load(root).unwrap();
    let package = original.package_dir("FIX-001");
    let numbers = |xs: &[&str]| xs.join(", ");
    let text = format!(
        "{{\n  \"latitude\": 45.5,\n  \"daily_units\": {{\"time\": \"iso8601\", \"temperature_2m_max\": \"°C\", \"precipitation_sum\": \"mm\"}},\n  \"daily\": {{\n    \"time\": [\"2019-07-22\", \"2019-07-23\", \"2019-07-24\", \"2019-07-25\", \"2019-07-26\", \"2019-07-27\", \"2019-07-28\"],\n    \"temperature_2m_max\": [{}],\n    \"precipitation_sum\": [{}]\n  }}\n}}\n",
        numbers(&TMAX),
        numbers(&PRECIP)
    );
    std::fs::write(package.join(SERIES_FILE), &text).unwrap();
    // The recorded ground truth, from the numbers as written.
    let parsed: serde_json::Value = serde_json::from_str(&text).unwrap();
    let tmax = parsed["daily"]["temperature_2m_max"].clone();
    let precip = parsed["daily"]["precipitation_sum"].clone();
    let peak = TMAX
        .iter()
        .map(|s| s.parse::<f64>().unwrap())
        .fold(f64::MIN, f64::max);
    let total: f64 = PRECIP.iter().map(|s| s.parse::<f64>().unwrap()).sum();
    let primary = serde_json::json!({
        "tmax": tmax, "precip": precip, "peak_tmax": peak,
        "precip_total": (total * 100.0).round() / 100.0,
        "units": ["°C", "mm"],
    });
    let sha = hex::encode(Sha256::digest(text.as_bytes()))[..16].to_string();
    for (task, reader) in [("FIX-001_Q1", "loads"), ("FIX-001_Q2", "load")] {
        let path = root.join("tasks").join(format!("{task}.json"));
        let mut value: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        value["event_files"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({
                "relative_path": SERIES_FILE, "category": "physical_hazard",
                "bytes": text.len(), "sha256_16": sha,
            }));
        value["compute_gt_py"] = serde_json::json!(series_program(task, reader));
        value["ground_truth"]["primary_gt"] = primary.clone();
        std::fs::write(&path, serde_json::to_vec_pretty(&value).unwrap()).unwrap();
    }
    Release::load(root).unwrap()
}

fn regenerate(release: &Release) -> earthverse_package_model::regenerate::GtRegenerationReport {
    use earthverse_package_model::regenerate::{regenerate_ground_truth, RegenerateOptions};
    let options = RegenerateOptions {
        task_ids: Some(["FIX-001_Q1".to_string(), "FIX-001_Q2".to_string()].into()),
        jobs: 1,
        ..RegenerateOptions::default()
    };
    regenerate_ground_truth(release, &options).unwrap()
}

#[test]
fn a_unit_change_adapts_compute_gt_and_the_ground_truth_regenerates_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let source = release_with_series(&dir.path().join("source"));
    // The programs and the recorded ground truth agree before any change.
    let before = regenerate(&source);
    assert_eq!(
        before.identical, 2,
        "{:?} {:?}",
        before.differs, before.failed
    );
    let reads = reads(&source);
    for id in ["FIX-001_Q1", "FIX-001_Q2"] {
        let task_reads = &reads.tasks[id];
        assert_eq!(task_reads.method, ReadsMethod::Audit, "{id}");
        let series = task_reads
            .file(SERIES_FILE)
            .expect("the program opens the series");
        for key in ["daily.temperature_2m_max", "daily.precipitation_sum"] {
            assert!(
                series.keys.iter().any(|k| k == key),
                "{id}: {:?}",
                series.keys
            );
        }
    }

    // Both series get chosen over a few seeds; each must come back exactly.
    let mut seen = std::collections::BTreeSet::new();
    for seed in 0..12u64 {
        let out = dir.path().join(format!("perturbed-{seed}"));
        let manifests = perturb(&source, &reads, PerturbationKind::UnitChange, seed, &out);
        let perturbed = Release::load(&out).unwrap();
        for id in ["FIX-001_Q1", "FIX-001_Q2"] {
            let m = manifests.iter().find(|m| m.task_id == id).unwrap();
            let change = m.unit_change.as_ref().expect("FIX-001 has labelled series");
            assert_eq!(change.file, SERIES_FILE);
            assert!(change.adapted_program);
            let target = m.target.as_ref().unwrap();
            assert_eq!(
                target.variable.as_deref(),
                Some(format!("daily.{}", change.variable).as_str())
            );
            seen.insert(change.variable.clone());
            // The task's file holds the converted series, labelled with the new unit.
            let task = perturbed.task(id).unwrap();
            let doc: serde_json::Value = serde_json::from_slice(
                &std::fs::read(perturbed.task_package_dir(task).join(SERIES_FILE)).unwrap(),
            )
            .unwrap();
            assert_eq!(doc["daily_units"][&change.variable], change.to.as_str());
            let written = if change.variable == "temperature_2m_max" {
                &TMAX
            } else {
                &PRECIP
            };
            for (y, x) in doc["daily"][&change.variable]
                .as_array()
                .unwrap()
                .iter()
                .zip(written)
            {
                let expected = x.parse::<f64>().unwrap() * change.factor + change.offset;
                assert!((y.as_f64().unwrap() - expected).abs() < 1e-3, "{y} vs {x}");
            }
            assert_ne!(change.from, change.to);
            // The public side never changes; the program does.
            let a = source.task(id).unwrap();
            assert_eq!(a.question, task.question);
            assert_eq!(a.ground_truth, task.ground_truth);
            assert_ne!(a.compute_gt_py, task.compute_gt_py);
        }
        // The adapted programs regenerate the recorded ground truth exactly.
        let after = regenerate(&perturbed);
        assert_eq!(
            after.identical, 2,
            "seed {seed}: {:?} {:?}",
            after.differs, after.failed
        );
        // Control: the original programs on the perturbed packages do not.
        let check = check_perturbed(&source, &reads, &out, &python(), 1).unwrap();
        for id in ["FIX-001_Q1", "FIX-001_Q2"] {
            let t = check.tasks.iter().find(|t| t.task_id == id).unwrap();
            assert_eq!(
                (t.hit, t.bite),
                (Some(true), Some(true)),
                "seed {seed}: {t:?}"
            );
            assert_eq!(t.adapted_reproduces, Some(true));
        }
        if seen.len() == 2 {
            break;
        }
    }
    assert_eq!(
        seen.into_iter().collect::<Vec<_>>(),
        ["precipitation_sum", "temperature_2m_max"]
    );
}
