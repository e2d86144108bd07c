//! `validate` and `--regenerate-gt` on the bundled fixture release
//! (`fixtures/release`), and on corrupted copies of it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_package_model::regenerate::{resolve_python, GtFailure, RegenerateOptions};
use earthverse_package_model::validate::{validate, ListedFile, ValidateOptions};
use earthverse_package_model::Release;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

const PACKAGES: &str = "packages/event_packages/standard_event_packages/packages";

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
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

/// A private copy of the fixture release.
fn fixture_copy() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixtures(), dir.path());
    dir
}

/// Every scalar leaf, counted independently of the library.
fn leaves(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(leaves).sum(),
        Value::Array(a) => a.iter().map(leaves).sum(),
        _ => 1,
    }
}

fn listed(event_id: &str, relative_path: &str) -> ListedFile {
    ListedFile {
        event_id: event_id.into(),
        relative_path: relative_path.into(),
    }
}

fn edit_task(root: &Path, task_id: &str, edit: impl FnOnce(&mut Value)) {
    let path = root.join("tasks").join(format!("{task_id}.json"));
    let mut task: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    edit(&mut task);
    std::fs::write(&path, serde_json::to_vec_pretty(&task).unwrap()).unwrap();
}

#[test]
fn fixture_release_passes_every_gate_with_exact_counts() {
    let release = Release::load(&fixtures()).unwrap();
    let report = validate(&release, &ValidateOptions::default()).unwrap();
    assert_eq!(report.tasks, 6);
    assert_eq!(report.events, 3);
    assert_eq!(report.recorded_runs, 12);
    assert_eq!(report.files_listed, 17);
    assert_eq!(report.files_present, 16);
    assert_eq!(
        report.files_missing,
        vec![listed(
            "FIX-002",
            "data/remote_sensing/remote_sensing_002_Sentinel-1_backscatter_full_scene.tif"
        )]
    );
    // Recorded with CRLF endings, committed with LF (as the real release).
    assert_eq!(
        report.line_endings_normalised,
        vec![listed(
            "FIX-003",
            "data/event_reports/event_reports_001_Incident_summary.json"
        )]
    );
    assert!(report.size_mismatch.is_empty() && report.sha_mismatch.is_empty());
    assert!(report.rubric_errors.is_empty() && report.schema_errors.is_empty());
    assert!(
        report.leak_warnings.is_empty(),
        "{:?}",
        report.leak_warnings
    );
    assert!(report.gt_regeneration.is_none());

    // Answer units: an independent count over the raw task files.
    let mut total = 0;
    for entry in std::fs::read_dir(fixtures().join("tasks")).unwrap() {
        let task: Value =
            serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
        let id = task["task_id"].as_str().unwrap().to_string();
        let n = leaves(&task["ground_truth"]["primary_gt"]);
        assert_eq!(report.answer_units_by_task[&id], n, "{id}");
        total += n;
    }
    assert_eq!(report.answer_units_total, total);
    assert!(report.passed(), "{:?}", report.failed_gates);

    // The JSON document has the fields the issue names.
    let json = serde_json::to_value(&report).unwrap();
    for field in [
        "tasks",
        "events",
        "recorded_runs",
        "files_listed",
        "files_present",
        "files_missing",
        "size_mismatch",
        "sha_mismatch",
        "rubric_errors",
        "leak_warnings",
        "answer_units_total",
        "answer_units_by_task",
    ] {
        assert!(json.get(field).is_some(), "missing {field}");
    }
}

#[test]
fn corrupted_copy_fails_the_right_gates() {
    let copy = fixture_copy();
    let root = copy.path();
    let fix1 = root.join(PACKAGES).join("FIX-001/data");
    // One byte more: size and hash differ.
    let csv = fix1.join("physical_hazard/physical_hazard_001_station_daily_temperature.csv");
    let mut bytes = std::fs::read(&csv).unwrap();
    bytes.push(b'\n');
    std::fs::write(&csv, bytes).unwrap();
    // Same size, one byte flipped: only the hash differs.
    let tif = fix1.join("remote_sensing/remote_sensing_001_land_surface_temperature.tif");
    let mut bytes = std::fs::read(&tif).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xFF;
    std::fs::write(&tif, bytes).unwrap();
    // A file removed: listed as missing.
    std::fs::remove_file(fix1.join("other/other_001_station_metadata_notes.data")).unwrap();
    // A broken rubric and a leaking question.
    edit_task(root, "FIX-002_Q1", |t| {
        t["ground_truth"]["rubric"]["criteria"][0]["points"] = 3.into();
    });
    edit_task(root, "FIX-003_Q2", |t| {
        let q = t["question"].as_str().unwrap().to_string();
        t["question"] = format!(
            "{q}\nHint: the counts are in exposure_impact_001_structure_damage_inspections.csv; do not open computed_gt.json.\n"
        )
        .into();
    });

    let report = validate(&Release::load(root).unwrap(), &ValidateOptions::default()).unwrap();
    let sizes: Vec<_> = report
        .size_mismatch
        .iter()
        .map(|m| {
            (
                m.relative_path.as_str(),
                m.expected_bytes + 1 == m.actual_bytes,
            )
        })
        .collect();
    assert_eq!(
        sizes,
        vec![(
            "data/physical_hazard/physical_hazard_001_station_daily_temperature.csv",
            true
        )]
    );
    let mut shas: Vec<_> = report
        .sha_mismatch
        .iter()
        .map(|m| m.relative_path.as_str())
        .collect();
    shas.sort();
    assert_eq!(
        shas,
        vec![
            "data/physical_hazard/physical_hazard_001_station_daily_temperature.csv",
            "data/remote_sensing/remote_sensing_001_land_surface_temperature.tif",
        ]
    );
    assert_eq!(report.files_missing.len(), 2);
    assert!(report.files_missing.contains(&listed(
        "FIX-001",
        "data/other/other_001_station_metadata_notes.data"
    )));
    assert_eq!(report.files_present, 15);
    assert_eq!(report.rubric_errors.len(), 1);
    assert_eq!(report.rubric_errors[0].task_id, "FIX-002_Q1");
    assert!(report.rubric_errors[0].message.contains("sum to 21"));
    let leaks: Vec<_> = report
        .leak_warnings
        .iter()
        .map(|w| (w.task_id.as_str(), w.text.as_str()))
        .collect();
    assert_eq!(
        leaks,
        vec![
            ("FIX-003_Q2", "computed_gt.json"),
            (
                "FIX-003_Q2",
                "exposure_impact_001_structure_damage_inspections.csv"
            ),
        ]
    );
    assert!(!report.passed());
    assert_eq!(
        report.failed_gates,
        vec!["size_mismatch", "sha_mismatch", "rubric_errors"]
    );
}

#[test]
fn unloadable_task_file_is_a_named_gate_failure_and_the_rest_loads() {
    let copy = fixture_copy();
    std::fs::write(
        copy.path().join("tasks/FIX-001_Q2.json"),
        b"{\"task_id\": 7}",
    )
    .unwrap();
    let report = validate(
        &Release::load(copy.path()).unwrap(),
        &ValidateOptions::default(),
    )
    .unwrap();
    assert_eq!(report.tasks, 5);
    assert_eq!(report.task_load_errors.len(), 1);
    assert!(report.task_load_errors[0].path.ends_with("FIX-001_Q2.json"));
    assert_eq!(report.failed_gates, vec!["task_load_errors"]);
}

fn regenerate_options(timeout: Duration) -> ValidateOptions {
    ValidateOptions {
        regenerate_gt: true,
        regenerate: RegenerateOptions {
            python: resolve_python(None),
            timeout,
            jobs: 2,
            ..RegenerateOptions::default()
        },
    }
}

#[test]
fn fixture_ground_truth_regenerates_identically() {
    let report = validate(
        &Release::load(&fixtures()).unwrap(),
        &regenerate_options(Duration::from_secs(60)),
    )
    .unwrap();
    let gt = report.gt_regeneration.as_ref().unwrap();
    assert!(gt.failed.is_empty(), "{:?}", gt.failed);
    assert!(gt.differs.is_empty(), "{:?}", gt.differs);
    assert_eq!((gt.tasks, gt.identical), (6, 6));
    assert!(report.passed());
}

#[test]
fn regeneration_names_differences_and_failure_reasons() {
    let copy = fixture_copy();
    let root = copy.path();
    // FIX-003_Q2: one inspection re-classified, so the counts change.
    let csv = root
        .join(PACKAGES)
        .join("FIX-003/data/exposure_impact/exposure_impact_001_structure_damage_inspections.csv");
    let text = std::fs::read_to_string(&csv).unwrap();
    std::fs::write(
        &csv,
        text.replace(
            "I-0020,Cedar Gap,commercial,major",
            "I-0020,Cedar Gap,commercial,destroyed",
        ),
    )
    .unwrap();
    // FIX-001_Q2: the station notes it reads are gone.
    std::fs::remove_file(
        root.join(PACKAGES)
            .join("FIX-001/data/other/other_001_station_metadata_notes.data"),
    )
    .unwrap();
    // FIX-002_Q1 imports a module nobody has; FIX-002_Q2 never ends;
    // FIX-003_Q1 has no program; FIX-001_Q1 writes nothing.
    edit_task(root, "FIX-002_Q1", |t| {
        t["compute_gt_py"] = "import earthverse_no_such_module.sub\n".into();
    });
    edit_task(root, "FIX-002_Q2", |t| {
        t["compute_gt_py"] = "import time\nwhile True:\n    time.sleep(0.05)\n".into();
    });
    edit_task(root, "FIX-003_Q1", |t| {
        t.as_object_mut().unwrap().remove("compute_gt_py");
    });
    edit_task(root, "FIX-001_Q1", |t| {
        t["compute_gt_py"] = "print('hello')\n".into();
    });

    let report = validate(
        &Release::load(root).unwrap(),
        &regenerate_options(Duration::from_secs(3)),
    )
    .unwrap();
    let gt = report.gt_regeneration.as_ref().unwrap();
    assert_eq!(gt.identical, 0);
    assert_eq!(gt.differs.len(), 1);
    let diff = &gt.differs[0];
    assert_eq!(diff.task_id, "FIX-003_Q2");
    assert_eq!(diff.first_difference, "/damage_class_counts/destroyed");
    assert_eq!(
        (diff.recorded.clone(), diff.regenerated.clone()),
        (7.into(), 8.into())
    );
    let reasons: Vec<_> = gt
        .failed
        .iter()
        .map(|f| (f.task_id.as_str(), f.reason.clone()))
        .collect();
    let python = resolve_python(None);
    assert_eq!(
        reasons,
        vec![
            ("FIX-001_Q1", GtFailure::NoOutput),
            (
                "FIX-001_Q2",
                GtFailure::MissingFile {
                    path: "event_packages/standard_event_packages/packages/FIX-001/data/other/other_001_station_metadata_notes.data".into()
                }
            ),
            (
                "FIX-002_Q1",
                GtFailure::MissingPythonModule {
                    module: "earthverse_no_such_module".into()
                }
            ),
            ("FIX-002_Q2", GtFailure::Timeout { seconds: 3 }),
            ("FIX-003_Q1", GtFailure::NoProgram),
        ],
        "python {}",
        python.display()
    );
    assert!(report
        .failed_gates
        .iter()
        .any(|g| g == "gt_regeneration_differs"));
    assert!(report
        .failed_gates
        .iter()
        .any(|g| g == "gt_regeneration_failed"));
}

#[test]
fn files_no_inventory_lists_fail_the_unlisted_files_gate() {
    let dir = fixture_copy();
    let root = dir.path();
    let data = root.join(PACKAGES).join("FIX-003/data");
    std::fs::write(data.join("stray.txt"), "unlisted").unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink("cycle", data.join("cycle")).unwrap();
    // FIX-001_Q2 gets its own package and an inventory without its first
    // file: that file is unlisted in its own package (compared with its
    // inventory alone), not in the event's package FIX-001_Q1 reads.
    let own = root.join("task_packages/FIX-001_Q2/FIX-001");
    copy_dir(&root.join(PACKAGES).join("FIX-001"), &own);
    let mut dropped = String::new();
    edit_task(root, "FIX-001_Q2", |task| {
        let files = task["event_files"].as_array_mut().unwrap();
        dropped = files.remove(0)["relative_path"]
            .as_str()
            .unwrap()
            .to_string();
    });
    let release = Release::load(root).unwrap();
    let report = validate(&release, &ValidateOptions::default()).unwrap();
    assert!(
        report.failed_gates.contains(&"unlisted_files".to_string()),
        "{:?}",
        report.failed_gates
    );
    let fix3 = report
        .unlisted_files
        .iter()
        .find(|u| u.event_id == "FIX-003")
        .unwrap();
    let mut expected = vec!["data/stray.txt".to_string()];
    #[cfg(unix)]
    expected.insert(0, "data/cycle".to_string());
    assert_eq!(fix3.paths, expected);
    assert_eq!(fix3.count, expected.len());
    assert_eq!(fix3.task_ids, vec!["FIX-003_Q1", "FIX-003_Q2"]);
    let fix1: Vec<_> = report
        .unlisted_files
        .iter()
        .filter(|u| u.event_id == "FIX-001")
        .collect();
    assert_eq!(fix1.len(), 1, "{fix1:?}");
    assert_eq!(fix1[0].package, "task_packages/FIX-001_Q2/FIX-001");
    assert_eq!(fix1[0].task_ids, vec!["FIX-001_Q2"]);
    assert_eq!(fix1[0].paths, vec![dropped]);
    // The untouched fixtures have none.
    let clean = validate(
        &Release::load(&fixtures()).unwrap(),
        &ValidateOptions::default(),
    )
    .unwrap();
    assert!(
        clean.unlisted_files.is_empty(),
        "{:?}",
        clean.unlisted_files
    );
}
