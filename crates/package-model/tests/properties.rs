//! Property tests: sniffing, text extraction and path resolution never
//! panic, whatever the input; records keep unknown fields on round trip.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_package_model::evidence::resolve;
use earthverse_package_model::sniff::{sniff_bytes, FileKind};
use earthverse_package_model::text::extract_text;
use earthverse_package_model::{RecordedRun, Task};
use proptest::prelude::*;
use serde_json::{json, Value};

const ALL_KINDS: [FileKind; 19] = [
    FileKind::Json,
    FileKind::Html,
    FileKind::Xml,
    FileKind::Pdf,
    FileKind::Jpeg,
    FileKind::Png,
    FileKind::Gif,
    FileKind::Zip,
    FileKind::ZipShapefile,
    FileKind::Gzip,
    FileKind::NetcdfClassic,
    FileKind::NetcdfHdf5,
    FileKind::Tiff,
    FileKind::GeoTiff,
    FileKind::Parquet,
    FileKind::Csv,
    FileKind::Text,
    FileKind::Empty,
    FileKind::Binary,
];

/// Random bytes, sometimes behind a real magic number so the deeper parsers
/// (TIFF directory walk, zip directory, PDF, XML, HTML) get exercised.
fn bytes_with_magic() -> impl Strategy<Value = Vec<u8>> {
    let magics: Vec<&'static [u8]> = vec![
        b"",
        b"%PDF-1.4\n",
        b"II*\0",
        b"MM\0*",
        b"II+\0\x08\0\0\0",
        b"PK\x03\x04",
        b"PAR1",
        b"<?xml version=\"1.0\"?><",
        b"<!DOCTYPE html><html><script>",
        b"{\"a\":",
        b"\x89HDF\r\n\x1a\n",
        b"CDF\x01",
        b"\xEF\xBB\xBF",
    ];
    (
        proptest::sample::select(magics),
        proptest::collection::vec(any::<u8>(), 0..2048),
    )
        .prop_map(|(magic, tail)| {
            let mut bytes = magic.to_vec();
            bytes.extend(tail);
            bytes
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sniff_and_extract_never_panic(bytes in bytes_with_magic()) {
        let kind = sniff_bytes(&bytes);
        let _ = extract_text(&bytes, kind);
        for other in [FileKind::Html, FileKind::Xml, FileKind::Json, FileKind::Zip, FileKind::Text] {
            let _ = extract_text(&bytes, other);
        }
    }

    #[test]
    fn text_like_input_never_panics(text in "\\PC{0,400}") {
        let bytes = text.as_bytes();
        let kind = sniff_bytes(bytes);
        prop_assert!(ALL_KINDS.contains(&kind));
        let _ = extract_text(bytes, FileKind::Html);
        let _ = extract_text(bytes, FileKind::Xml);
    }

    #[test]
    fn markup_soup_never_panics(parts in proptest::collection::vec(
        proptest::sample::select(vec!["<", ">", "</", "<script>", "</script>", "<style>", "&amp;", "&#x", ";", "<![CDATA[", "]]>", "<?xml", "\"", "=", "a", " ", "<p>", "<!--", "-->"]),
        0..80,
    )) {
        let soup: String = parts.concat();
        let _ = extract_text(soup.as_bytes(), FileKind::Html);
        let _ = extract_text(soup.as_bytes(), FileKind::Xml);
    }

    #[test]
    fn resolve_never_panics_and_stays_inside(path in "[a-zA-Z0-9_./\\\\~:\\-]{0,60}") {
        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("CSX-1");
        std::fs::create_dir_all(package.join("data")).unwrap();
        std::fs::write(package.join("data/a.txt"), "a").unwrap();
        if let Ok(resolved) = resolve(&package, &path) {
            let root = package.canonicalize().unwrap();
            prop_assert!(resolved.absolute.starts_with(&root), "{:?}", resolved);
        }
    }
}

#[test]
fn pdf_of_every_truncation_never_panics() {
    // A minimal valid PDF, cut at every length.
    let pdf = b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Contents 4 0 R>>endobj\n4 0 obj<</Length 44>>stream\nBT /F1 24 Tf 100 700 Td (Hello) Tj ET\nendstream\nendobj\ntrailer<</Root 1 0 R>>\n%%EOF\n";
    for cut in (0..pdf.len()).step_by(7) {
        let _ = extract_text(&pdf[..cut], FileKind::Pdf);
    }
}

#[test]
fn task_and_run_keep_unknown_fields() {
    let task = json!({
        "task_id": "CSX-9_Q1",
        "event_id": "CSX-9",
        "hazard_family": "a_new_family",
        "dimensions": ["physical_mechanism", "a_new_dimension"],
        "question": "q",
        "future_field": {"nested": [1, 2.5, null]},
        "ground_truth": {
            "schema_version": "3.0",
            "primary_gt": {"x": 1},
            "rubric": {"criteria": [{"name": "n", "description": "d", "points": 2.5, "new_key": true}], "total_points": 20, "rubric_note": "n"},
            "gt_future": [1]
        },
        "event": {"package_id": "CSX-9", "correspondence_score": 91, "audit_future": "x"},
        "event_files": [{"relative_path": "data/a.bin", "bytes": 3, "archive_manifest": {"k": 1}, "preview_url": null}]
    });
    let parsed: Task = serde_json::from_value(task.clone()).unwrap();
    assert_eq!(
        parsed.extra["future_field"],
        json!({"nested": [1, 2.5, null]})
    );
    assert!(!parsed.hazard_family.as_ref().unwrap().is_known());
    assert_eq!(parsed.ground_truth.rubric.points_sum(), 2.5);
    assert_eq!(
        parsed.event.as_ref().unwrap().correspondence_score(),
        Some(91.0)
    );
    assert_eq!(serde_json::to_value(&parsed).unwrap(), task);

    let run = json!({
        "task_id": "CSX-9_Q1", "model_id": "m", "scores": {"answer": 50.0, "new_score": 1},
        "diagnostics": {"termination_reason": null, "total_tokens": "123", "tool_calls": 2},
        "tool_calls": [{"step": 1, "tool": "read_text_file", "ok": true, "args": {"path": "data/a"},
                        "output": {"text": "t", "truncated": false}, "returncode": null, "stdout": {"text": "o"}}],
        "evidence": [], "reasoning_summary": [], "unsupported_or_unresolved": [],
        "final_answer": "not json", "judge_rationale": {}, "run_future": 7
    });
    let parsed: RecordedRun = serde_json::from_value(run.clone()).unwrap();
    assert_eq!(parsed.diagnostics.total_tokens(), Some(123));
    assert_eq!(parsed.diagnostics.termination_reason(), None);
    assert_eq!(parsed.tool_calls[0].output_text(), Some("t"));
    assert_eq!(parsed.tool_calls[0].stream_text("stdout"), Some("o"));
    assert_eq!(serde_json::to_value(&parsed).unwrap(), run);
    let _: Value = serde_json::to_value(&parsed).unwrap();
}

#[test]
fn a_bad_task_file_is_reported_and_the_rest_loads() {
    let dir = tempfile::tempdir().unwrap();
    let tasks = dir.path().join("tasks");
    std::fs::create_dir_all(&tasks).unwrap();
    let good = json!({"task_id": "T_Q1", "event_id": "T", "question": "q",
        "ground_truth": {"primary_gt": {}, "rubric": {"criteria": []}}});
    std::fs::write(tasks.join("T_Q1.json"), good.to_string()).unwrap();
    let bad = json!({"task_id": "T_Q2", "event_id": "T", "question": "q",
        "ground_truth": {"primary_gt": {}, "rubric": {"criteria": [{"name": "n", "points": "two"}]}}});
    std::fs::write(tasks.join("T_Q2.json"), bad.to_string()).unwrap();
    std::fs::write(tasks.join("T_Q3.json"), "{not json").unwrap();
    let no_gt = json!({"task_id": "T_Q4", "event_id": "T", "question": "q"});
    std::fs::write(tasks.join("T_Q4.json"), no_gt.to_string()).unwrap();
    let release = earthverse_package_model::Release::load(dir.path()).unwrap();
    assert_eq!(release.tasks().len(), 1);
    let errors = release.load_errors();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(errors[0].path.ends_with("T_Q2.json"));
    assert_eq!(errors[0].field, "ground_truth.rubric.criteria[0].points");
    assert!(errors[1].path.ends_with("T_Q3.json"));
    assert!(errors[2].path.ends_with("T_Q4.json"));
    assert!(
        errors[2].message.contains("ground_truth"),
        "{}",
        errors[2].message
    );
    // A missing tasks/ directory is an error naming it.
    let empty = tempfile::tempdir().unwrap();
    let error = earthverse_package_model::Release::load(empty.path()).unwrap_err();
    assert!(error.to_string().contains("tasks"), "{error}");
}
