//! `validate` on the development slice of the public release (issue 2,
//! "Must show"): counts, every absent file listed and nothing else, size and
//! hash checks against an independent in-memory computation, answer units
//! against an independent count, and `--regenerate-gt` with ≥ 95% identical.
//!
//! The regeneration test needs `$EARTHVERSE_PYTHON` (an interpreter with
//! numpy, Pillow and pypdf: `export EARTHVERSE_PYTHON="$(scripts/python-env.sh)"`)
//! and fails with that message when it is unset.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_package_model::regenerate::{RegenerateOptions, PYTHON_ENV_VAR};
use earthverse_package_model::validate::{validate, ValidateOptions};
use earthverse_package_model::Release;
use earthverse_tests::dev_slice;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

const PACKAGES: &str = "packages/event_packages/standard_event_packages/packages";

/// Every scalar leaf; empty containers count 0, `null` counts 1.
fn leaves(v: &Value) -> usize {
    match v {
        Value::Object(m) => m.values().map(leaves).sum(),
        Value::Array(a) => a.iter().map(leaves).sum(),
        _ => 1,
    }
}

/// The raw task records, read without the library.
fn raw_tasks() -> Vec<Value> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dev_slice().join("tasks"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap())
        .collect()
}

fn crlf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 20);
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'\n' && (i == 0 || bytes[i - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

fn lf(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for (i, &b) in bytes.iter().enumerate() {
        if !(b == b'\r' && bytes.get(i + 1) == Some(&b'\n')) {
            out.push(b);
        }
    }
    out
}

fn matches(bytes: &[u8], size: u64, sha16: &str) -> bool {
    bytes.len() as u64 == size
        && hex::encode(Sha256::digest(bytes))[..16] == sha16.to_ascii_lowercase()
}

#[test]
fn dev_slice_gates_match_an_independent_walk() {
    let root = dev_slice();
    let report = validate(&Release::load(&root).unwrap(), &ValidateOptions::default()).unwrap();
    assert_eq!(report.tasks, 150);
    assert_eq!(report.events, 73);
    assert_eq!(report.recorded_runs, 817);
    assert!(report.task_load_errors.is_empty() && report.run_load_errors.is_empty());

    // Independent walk of every event_files record.
    let mut listed: BTreeMap<(String, String), (u64, String)> = BTreeMap::new();
    let mut units_by_task = BTreeMap::new();
    for task in raw_tasks() {
        let event = task["event_id"].as_str().unwrap().to_string();
        for record in task["event_files"].as_array().unwrap() {
            listed
                .entry((
                    event.clone(),
                    record["relative_path"].as_str().unwrap().to_string(),
                ))
                .or_insert((
                    record["bytes"].as_u64().unwrap(),
                    record["sha256_16"].as_str().unwrap().to_string(),
                ));
        }
        units_by_task.insert(
            task["task_id"].as_str().unwrap().to_string(),
            leaves(&task["ground_truth"]["primary_gt"]),
        );
    }
    let mut absent = BTreeSet::new();
    let mut raw_match = 0;
    let mut normalised = BTreeSet::new();
    let mut mismatched = BTreeSet::new();
    for ((event, rel), (size, sha)) in &listed {
        let path = root.join(PACKAGES).join(event).join(rel);
        if !path.exists() {
            absent.insert((event.clone(), rel.clone()));
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        if matches(&bytes, *size, sha) {
            raw_match += 1;
        } else if matches(&crlf(&bytes), *size, sha) || matches(&lf(&bytes), *size, sha) {
            normalised.insert((event.clone(), rel.clone()));
        } else {
            mismatched.insert((event.clone(), rel.clone()));
        }
    }

    assert_eq!(report.files_listed, listed.len());
    assert_eq!(report.files_present, listed.len() - absent.len());
    let reported_missing: BTreeSet<_> = report
        .files_missing
        .iter()
        .map(|f| (f.event_id.clone(), f.relative_path.clone()))
        .collect();
    assert_eq!(
        reported_missing, absent,
        "every absent file, and nothing else"
    );
    assert_eq!(report.files_missing.len(), absent.len(), "no duplicates");
    assert!(!absent.is_empty());

    let reported_normalised: BTreeSet<_> = report
        .line_endings_normalised
        .iter()
        .map(|f| (f.event_id.clone(), f.relative_path.clone()))
        .collect();
    assert_eq!(reported_normalised, normalised);
    let reported_mismatch: BTreeSet<_> = report
        .size_mismatch
        .iter()
        .map(|m| (m.event_id.clone(), m.relative_path.clone()))
        .chain(
            report
                .sha_mismatch
                .iter()
                .map(|m| (m.event_id.clone(), m.relative_path.clone())),
        )
        .collect();
    assert_eq!(reported_mismatch, mismatched);
    for m in &report.size_mismatch {
        let bytes =
            std::fs::read(root.join(PACKAGES).join(&m.event_id).join(&m.relative_path)).unwrap();
        let line_feeds = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        let fits =
            m.expected_bytes > m.actual_bytes && m.expected_bytes - m.actual_bytes <= line_feeds;
        assert_eq!(m.explainable_by_line_endings, fits, "{m:?}");
    }
    assert_eq!(
        raw_match + normalised.len() + mismatched.len(),
        report.files_present
    );
    eprintln!(
        "dev slice: {} listed, {} absent, {} match raw, {} match after line-ending normalisation, {} mismatch",
        listed.len(),
        absent.len(),
        raw_match,
        normalised.len(),
        mismatched.len()
    );

    assert_eq!(report.answer_units_by_task, units_by_task);
    assert_eq!(
        report.answer_units_total,
        units_by_task.values().sum::<usize>()
    );
    assert!(
        report.rubric_errors.is_empty(),
        "{:?}",
        report.rubric_errors
    );
    assert!(
        report.schema_errors.is_empty(),
        "{:?}",
        report.schema_errors
    );
    assert!(report.primary_gt_missing.is_empty());
    // No public question names a package path, file or hidden artifact.
    assert!(
        report.leak_warnings.is_empty(),
        "{:?}",
        report.leak_warnings
    );
}

#[test]
fn dev_slice_ground_truth_regenerates_for_95_percent_with_reasons_for_the_rest() {
    let python = std::env::var_os(PYTHON_ENV_VAR).unwrap_or_else(|| {
        panic!(
            "{PYTHON_ENV_VAR} is not set: this test runs the release's compute_gt.py programs and \
             needs Python with numpy, Pillow and pypdf. Run \
             `export {PYTHON_ENV_VAR}=\"$(scripts/python-env.sh)\"` first."
        )
    });
    let options = ValidateOptions {
        regenerate_gt: true,
        regenerate: RegenerateOptions {
            python: PathBuf::from(python),
            timeout: Duration::from_secs(120),
            ..RegenerateOptions::default()
        },
    };
    let report = validate(&Release::load(&dev_slice()).unwrap(), &options).unwrap();
    let gt = report.gt_regeneration.as_ref().unwrap();
    assert_eq!(gt.tasks, 150);
    assert_eq!(gt.identical + gt.differs.len() + gt.failed.len(), 150);
    for failed in &gt.failed {
        assert!(!failed.message.trim().is_empty(), "{failed:?}");
        eprintln!("failed: {} — {}", failed.task_id, failed.message);
    }
    for diff in &gt.differs {
        assert_ne!(diff.recorded, diff.regenerated, "{diff:?}");
        eprintln!(
            "differs: {} at {}: recorded {}, regenerated {}",
            diff.task_id, diff.first_difference, diff.recorded, diff.regenerated
        );
    }
    assert!(
        gt.identical * 100 >= 95 * gt.tasks,
        "only {} of {} identical",
        gt.identical,
        gt.tasks
    );
}
