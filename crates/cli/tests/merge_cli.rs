//! `earthverse merge` and the completeness check of `earthverse score` on
//! the fixture release: 4 shards of the baseline agent merge into the
//! unsharded set with a manifest of content hashes; one shard alone is
//! refused by `score` unless `--allow-partial`; a second, different record
//! of one task is a conflict that `merge` refuses.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn release() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/release")
}

fn earthverse<I, S>(args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_earthverse"))
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn shards_merge_score_refuses_a_partial_set_and_conflicts_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let shard_dirs: Vec<PathBuf> = (0..4).map(|k| dir.path().join(format!("s{k}"))).collect();
    let mut planned = 0;
    for (k, out) in shard_dirs.iter().enumerate() {
        let shard = format!("{k}/4");
        let o = earthverse([
            "run".into(),
            release(),
            "--agent".into(),
            "baseline".into(),
            "--quiet".into(),
            "--shard".into(),
            shard.into(),
            "--out".into(),
            out.clone(),
        ]);
        assert!(o.status.success(), "{}", text(&o));
        let line = String::from_utf8_lossy(&o.stdout).into_owned();
        planned += line
            .split(" task(s) in shard")
            .next()
            .and_then(|s| s.rsplit(' ').next())
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap();
    }
    let tasks = std::fs::read_dir(release().join("tasks")).unwrap().count();
    assert_eq!(planned, tasks);

    // One shard alone: merge lists the others' tasks, score refuses.
    let o = earthverse([PathBuf::from("merge"), shard_dirs[0].clone()]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let missing = text(&o).matches("  missing: ").count();
    let in_shard0 = std::fs::read_dir(shard_dirs[0].join("baseline"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("trajectory.json").is_file())
        .count();
    assert_eq!(missing, tasks - in_shard0, "{}", text(&o));
    let scores = dir.path().join("partial.jsonl");
    let score = |runs: &Path, extra: &[&str]| {
        let mut args: Vec<PathBuf> = vec![
            "score".into(),
            release(),
            "--runs".into(),
            runs.to_path_buf(),
            "--restart".into(),
            "--out".into(),
            scores.clone(),
        ];
        args.extend(extra.iter().map(PathBuf::from));
        earthverse(args)
    };
    let o = score(&shard_dirs[0], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("incomplete batch"), "{}", text(&o));
    let o = score(&shard_dirs[0], &["--allow-partial"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("warning: incomplete batch"),
        "{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read_to_string(&scores).unwrap().lines().count(),
        in_shard0
    );

    // All four: merged, complete, with a hash per file.
    let merged = dir.path().join("merged");
    let merge_into = |out: &Path| {
        let mut args: Vec<PathBuf> = vec!["merge".into()];
        args.extend(shard_dirs.iter().cloned());
        args.extend(["--out".into(), out.to_path_buf()]);
        earthverse(args)
    };
    let o = merge_into(&merged);
    assert!(o.status.success(), "{}", text(&o));
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(merged.join("baseline/merge-manifest.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["complete"], true);
    assert_eq!(manifest["records"].as_array().unwrap().len(), tasks);
    for record in manifest["records"].as_array().unwrap() {
        assert!(record["files"]["trajectory.json"].as_str().unwrap().len() == 64);
    }
    let o = score(&merged, &[]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(&scores).unwrap().lines().count(),
        tasks
    );

    // A second run of one task, in another shard's directory: a conflict.
    let victim = std::fs::read_dir(shard_dirs[0].join("baseline"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.join("trajectory.json").is_file())
        .unwrap();
    let copy = shard_dirs[1]
        .join("baseline")
        .join(victim.file_name().unwrap());
    std::fs::create_dir_all(&copy).unwrap();
    let mut t: Value =
        serde_json::from_slice(&std::fs::read(victim.join("trajectory.json")).unwrap()).unwrap();
    t["diagnostics"]["latency_s"] = Value::from(123.0);
    std::fs::write(copy.join("trajectory.json"), t.to_string()).unwrap();
    let again = dir.path().join("merged-again");
    let o = merge_into(&again);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("duplicate (CONFLICT)"), "{}", text(&o));
    assert!(!again.exists(), "a refused merge wrote something");
}
