//! Run records compared by content (shared by the fault tests): every
//! file of a folder, its own path written as `OUT`, the wall-clock fields
//! left out.
#![allow(clippy::unwrap_used, dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

/// The wall-clock fields of run records, the only ones a rerun may change:
/// `latency_s` (trajectory diagnostics, each model call in
/// `raw_conversation.json`) and its row in `run_notes.md`.
pub const WALL_CLOCK_KEYS: [&str; 1] = ["latency_s"];

fn drop_wall_clock(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for key in WALL_CLOCK_KEYS {
                map.remove(key);
            }
            map.values_mut().for_each(drop_wall_clock);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_wall_clock),
        _ => {}
    }
}

/// Every file under `root` (hidden ones too) by relative path, its text
/// with `root` written as `OUT` and the wall-clock fields left out.
pub fn records(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for e in walkdir::WalkDir::new(root).sort_by_file_name() {
        let e = e.unwrap();
        if !e.file_type().is_file() {
            continue;
        }
        let rel = e.path().strip_prefix(root).unwrap().display().to_string();
        let text = std::fs::read_to_string(e.path())
            .unwrap()
            .replace(&root.display().to_string(), "OUT");
        let text = match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(mut v) if rel.ends_with(".json") => {
                drop_wall_clock(&mut v);
                v.to_string()
            }
            _ => text
                .lines()
                .filter(|l| {
                    !WALL_CLOCK_KEYS
                        .iter()
                        .any(|k| l.starts_with(&format!("| {k} |")))
                })
                .collect::<Vec<_>>()
                .join("\n"),
        };
        out.insert(rel, text);
    }
    out
}
