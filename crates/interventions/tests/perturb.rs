//! Perturbations of the fixture release: the original is never modified,
//! the question and ground truth never change, every event gets the
//! perturbation or a named reason, the changes are what the manifest says,
//! and the perturbed release passes validation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_interventions::{perturb_release, PerturbationKind};
use earthverse_package_model::validate::{validate, ValidateOptions};
use earthverse_package_model::Release;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
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
    let before = tree_hashes(&fixtures());
    for kind in PerturbationKind::ALL {
        let out = tempfile::tempdir().unwrap();
        let target = out.path().join("perturbed");
        let manifests = perturb_release(&original, kind, 7, &target, None).unwrap();
        assert_eq!(manifests.len(), original.event_ids().len(), "{kind}");
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
                m.not_applied.is_some() == m.changes.is_empty(),
                "{kind} {}: changes or a reason",
                m.event_id
            );
            let root = perturbed.package_dir(&m.event_id);
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
                .join(format!("{}.json", m.event_id))
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
fn distractors_and_missing_apply_to_every_fixture_event() {
    let original = Release::load(&fixtures()).unwrap();
    for kind in [PerturbationKind::Distractors, PerturbationKind::Missing] {
        let out = tempfile::tempdir().unwrap();
        let manifests =
            perturb_release(&original, kind, 2026, &out.path().join("p"), None).unwrap();
        for m in manifests {
            assert!(
                m.not_applied.is_none(),
                "{kind} {}: {:?}",
                m.event_id,
                m.not_applied
            );
        }
    }
    // The same seed gives the same release.
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    perturb_release(
        &original,
        PerturbationKind::Distractors,
        5,
        &a.path().join("p"),
        None,
    )
    .unwrap();
    perturb_release(
        &original,
        PerturbationKind::Distractors,
        5,
        &b.path().join("p"),
        None,
    )
    .unwrap();
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
    let err =
        perturb_release(&original, PerturbationKind::Missing, 1, out.path(), None).unwrap_err();
    assert!(err.to_string().contains("must be new or empty"), "{err}");
}
