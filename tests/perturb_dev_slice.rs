//! The five perturbations over the whole development slice (feature
//! `dev-slice`; data from `EARTHVERSE_DATA`): each applies to the events
//! it was measured to apply to (2026-12-04, seed 2026: distractors,
//! missing and truncated 73 of 73, unit-change 61, conflicting 71; the
//! others get a named reason), never changes a question or a ground truth,
//! leaves every untouched file a hard link of the original, lists every
//! changed file in the inventories with its new size and hash, and (checked
//! end to end for one kind, `validate` being the slow part) adds no
//! validation issue the original release does not have (the public slice
//! itself fails its size and hash gates on 91 files).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_interventions::{perturb_release, PerturbationKind};
use earthverse_package_model::validate::{validate, ValidateOptions, ValidationReport};
use earthverse_package_model::Release;
use earthverse_tests::dev_slice;
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;

fn issues(report: &ValidationReport) -> BTreeSet<String> {
    let value = serde_json::to_value(report).unwrap();
    let mut out = BTreeSet::new();
    for key in [
        "files_missing",
        "size_mismatch",
        "sha_mismatch",
        "unreadable_files",
        "inventory_conflicts",
        "schema_errors",
    ] {
        for item in value[key].as_array().into_iter().flatten() {
            out.insert(format!(
                "{key} {}/{}",
                item["event_id"].as_str().unwrap_or(""),
                item["relative_path"].as_str().unwrap_or(&item.to_string())
            ));
        }
    }
    out
}

#[test]
fn every_perturbation_of_the_dev_slice_keeps_questions_answers_and_validity() {
    let original = Release::load(&dev_slice()).unwrap();
    let baseline = issues(&validate(&original, &ValidateOptions::default()).unwrap());
    for (kind, floor) in [
        (PerturbationKind::Distractors, 73),
        (PerturbationKind::Missing, 73),
        (PerturbationKind::Truncated, 73),
        (PerturbationKind::UnitChange, 61),
        (PerturbationKind::Conflicting, 71),
    ] {
        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("perturbed");
        let manifests = perturb_release(&original, kind, 2026, &target, None).unwrap();
        let applied = manifests.iter().filter(|m| m.not_applied.is_none()).count();
        assert!(applied >= floor, "{kind}: applied to {applied} of 73");
        for m in manifests.iter().filter(|m| m.not_applied.is_some()) {
            assert!(!m.not_applied.as_ref().unwrap().is_empty());
        }
        let perturbed = Release::load(&target).unwrap();
        assert_eq!(perturbed.tasks().len(), 150);
        for task in original.tasks() {
            let other = perturbed.task(&task.task_id).unwrap();
            assert_eq!(other.question, task.question);
            assert_eq!(other.ground_truth, task.ground_truth);
        }
        for m in &manifests {
            let root = perturbed.package_dir(&m.event_id);
            let changed: BTreeSet<&str> = m.changes.iter().map(|c| c.file.as_str()).collect();
            for task in perturbed.tasks_for_event(&m.event_id) {
                for c in &m.changes {
                    let record = task.event_files.iter().find(|r| r.relative_path == c.file);
                    match c.action.as_str() {
                        "removed" => assert!(record.is_none(), "{kind}: {} unlisted", c.file),
                        _ => {
                            let bytes = std::fs::read(root.join(&c.file)).unwrap();
                            let record = record.expect("a changed file is listed");
                            assert_eq!(record.bytes, Some(bytes.len() as u64));
                            let sha = hex::encode(Sha256::digest(&bytes));
                            assert_eq!(record.sha256_16.as_deref(), Some(&sha[..16]));
                        }
                    }
                }
            }
            for file in earthverse_package_model::evidence::list_package_files(&root).unwrap() {
                if changed.contains(file.package_relative.as_str()) {
                    continue;
                }
                let ours = std::fs::metadata(root.join(&file.package_relative)).unwrap();
                let theirs = std::fs::metadata(
                    original
                        .package_dir(&m.event_id)
                        .join(&file.package_relative),
                )
                .unwrap();
                assert_eq!(
                    ours.ino(),
                    theirs.ino(),
                    "{kind}: {} is a hard link",
                    file.package_relative
                );
            }
        }
        if kind == PerturbationKind::Conflicting {
            let report = validate(&perturbed, &ValidateOptions::default()).unwrap();
            let new: Vec<String> = issues(&report).difference(&baseline).cloned().collect();
            assert!(new.is_empty(), "{kind} adds validation issues: {new:?}");
        }
    }
}
