//! `earthverse-package-model` against the development slice of the release
//! (feature `dev-slice`; data from `EARTHVERSE_DATA`, default
//! `../shared/earthverse-dev/data`). Fails when the data is absent.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_package_model::evidence::{self, list_package_files, AccessError};
use earthverse_package_model::sniff::{sniff_bytes, sniff_file, FileKind};
use earthverse_package_model::text::extract_text;
use earthverse_package_model::ToleranceRule;
use earthverse_package_model::{
    export_authoring, load_authoring, ExportFilter, RecordedRun, Release, Task,
};
use earthverse_tests::dev_slice;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn release() -> Release {
    Release::load(&dev_slice()).expect("dev slice loads")
}

#[test]
fn dev_slice_loads_150_tasks_73_events_817_runs_without_errors() {
    let release = release();
    assert_eq!(release.load_errors(), &[], "task load errors");
    assert_eq!(release.tasks().len(), 150);
    assert_eq!(release.event_ids().len(), 73);
    let task_events: BTreeSet<&str> = release
        .tasks()
        .iter()
        .map(|t| t.event_id.as_str())
        .collect();
    assert_eq!(task_events.len(), 73);
    for event in release.event_ids() {
        assert!(release.package_dir(event).join("data").is_dir(), "{event}");
    }
    let (runs, errors) = release.recorded_runs_with_errors().unwrap();
    assert_eq!(errors, vec![], "run load errors");
    assert_eq!(runs.len(), 817);
    let systems: BTreeSet<&str> = runs.iter().map(|r| r.system_id.as_str()).collect();
    assert_eq!(systems.len(), 25);
    for entry in &runs {
        assert!(
            release.task(&entry.task_id).is_some(),
            "{}",
            entry.path.display()
        );
        assert_eq!(
            entry.system_id,
            entry.run.model_id,
            "{}",
            entry.path.display()
        );
    }
    // The free function reads `--runs DIR` the same way, and one system's folder alone.
    let same = earthverse_package_model::load_recorded_runs(&release.trajectories_dir()).unwrap();
    assert_eq!(same.len(), 817);
    let one = earthverse_package_model::load_recorded_runs(
        &release.trajectories_dir().join("claude-haiku-4-5"),
    )
    .unwrap();
    assert!(!one.is_empty() && one.iter().all(|r| r.system_id == "claude-haiku-4-5"));
    // Labels: every task has a known hazard family, difficulty level and dimensions.
    let families: BTreeSet<String> = release
        .tasks()
        .iter()
        .map(|t| t.hazard_family().expect("family").to_string())
        .collect();
    assert_eq!(families.len(), 19);
    for task in release.tasks() {
        assert!(task.hazard_family().unwrap().is_known(), "{}", task.task_id);
        assert!(task.difficulty_level().is_some(), "{}", task.task_id);
        assert!(
            task.dimensions().iter().all(|d| d.is_known()),
            "{}",
            task.task_id
        );
        assert_ne!(
            task.evaluation_mode(),
            earthverse_package_model::EvaluationMode::Unknown,
            "{}",
            task.task_id
        );
    }
}

/// Parsing into the typed records and writing back gives the same JSON:
/// nothing is lost, unknown fields included.
#[test]
fn tasks_and_runs_round_trip_losslessly() {
    let root = dev_slice();
    let mut checked = 0;
    for entry in std::fs::read_dir(root.join("tasks")).unwrap() {
        let path = entry.unwrap().path();
        let original: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let task: Task = serde_json::from_value(original.clone()).unwrap();
        assert_eq!(
            serde_json::to_value(&task).unwrap(),
            original,
            "{}",
            path.display()
        );
        checked += 1;
    }
    assert_eq!(checked, 150);
    let mut runs = 0;
    for system in std::fs::read_dir(root.join("exploration/trajectories")).unwrap() {
        for entry in std::fs::read_dir(system.unwrap().path()).unwrap() {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            let original: Value = serde_json::from_slice(&bytes).unwrap();
            let run: RecordedRun = serde_json::from_value(original.clone()).unwrap();
            assert_eq!(
                serde_json::to_value(&run).unwrap(),
                original,
                "{}",
                path.display()
            );
            // Read from the bytes (borrowed keys), the same run.
            let from_bytes: RecordedRun = serde_json::from_slice(&bytes).unwrap();
            assert_eq!(from_bytes, run, "{}", path.display());
            runs += 1;
        }
    }
    assert_eq!(runs, 817);
}

/// Every tolerance entry of every task parses into a known rule.
#[test]
fn every_tolerance_shape_of_the_slice_parses() {
    let release = release();
    let mut by_rule: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut with_target = 0;
    for task in release.tasks() {
        let gt = &task.ground_truth;
        let listed: usize = [&gt.numeric_tolerances, &gt.tolerances]
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .flat_map(|m| m.keys())
            .collect::<BTreeSet<_>>()
            .len();
        let tolerances = gt.tolerances();
        assert!(tolerances.len() >= listed, "{}", task.task_id);
        for (name, tolerance) in &tolerances {
            let rule = match &tolerance.rule {
                ToleranceRule::Absolute { .. } => "absolute",
                ToleranceRule::Relative { .. } => "relative",
                ToleranceRule::Range { .. } => "range",
                ToleranceRule::Exact => "exact",
                ToleranceRule::OneOf { .. } => "one_of",
                ToleranceRule::Text { .. } => "text",
                other => panic!("{} {name}: unparsed {other:?}", task.task_id),
            };
            *by_rule.entry(rule).or_default() += 1;
            with_target += usize::from(tolerance.target.is_some());
        }
    }
    for rule in ["absolute", "relative", "range", "exact", "one_of", "text"] {
        assert!(
            by_rule.get(rule).copied().unwrap_or(0) > 0,
            "{rule}: {by_rule:?}"
        );
    }
    assert!(with_target > 100, "{with_target}");
    // The first task's `{tolerance, value}` entries, read exactly.
    let t = release
        .task("CSX-001_Q1")
        .unwrap()
        .ground_truth
        .tolerances();
    assert_eq!(t["hot_hour_mean_rh_percent"].target, Some(24.0));
    assert_eq!(
        t["hot_hour_mean_rh_percent"].rule,
        ToleranceRule::Absolute { tolerance: 2.0 }
    );
}

fn all_package_files(release: &Release) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for event in release.event_ids() {
        for entry in walkdir::WalkDir::new(release.package_dir(event)) {
            let entry = entry.unwrap();
            if entry.file_type().is_file() {
                files.push(entry.into_path());
            }
        }
    }
    files
}

/// Every file of every package is sniffed (from disk and from its bytes)
/// and its text extracted, without a panic.
#[test]
fn every_package_file_is_sniffed_and_extracted() {
    let release = release();
    let files = all_package_files(&release);
    assert!(files.len() > 2000, "{}", files.len());
    let mut kinds: BTreeMap<FileKind, usize> = BTreeMap::new();
    for path in &files {
        let from_disk = sniff_file(path).unwrap();
        let bytes = std::fs::read(path).unwrap();
        let from_bytes = sniff_bytes(&bytes);
        assert_eq!(from_disk, from_bytes, "{}", path.display());
        *kinds.entry(from_disk).or_default() += 1;
        // HTML has its own test; PDF extraction is slow in debug builds, so
        // only the cheap failure path (truncated PDFs) runs here, and real
        // text is checked on one PDF in `pinned_kinds_of_real_files`.
        let tail = &bytes[bytes.len().saturating_sub(1024)..];
        let truncated_pdf = from_disk == FileKind::Pdf && !tail.windows(5).any(|w| w == b"%%EOF");
        if from_disk != FileKind::Html && (from_disk != FileKind::Pdf || truncated_pdf) {
            let _ = extract_text(&bytes, from_disk);
        }
    }
    eprintln!("kinds on the slice: {kinds:?}");
    for kind in [
        FileKind::Json,
        FileKind::Html,
        FileKind::Xml,
        FileKind::Pdf,
        FileKind::Jpeg,
        FileKind::ZipShapefile,
        FileKind::GeoTiff,
        FileKind::Text,
        FileKind::Empty,
    ] {
        assert!(kinds.contains_key(&kind), "{kind} not seen: {kinds:?}");
    }
    assert!(!kinds.contains_key(&FileKind::Binary), "{kinds:?}");
}

/// HTML extraction over the slice's HTML files (split from the test above
/// to keep each binary short): scripts never leak into the text.
#[test]
fn html_files_extract_without_scripts() {
    let release = release();
    let mut html = 0;
    for path in all_package_files(&release) {
        let bytes = std::fs::read(&path).unwrap();
        if sniff_bytes(&bytes) != FileKind::Html {
            continue;
        }
        html += 1;
        let text = extract_text(&bytes, FileKind::Html);
        assert!(!text.contains("<script"), "{}", path.display());
    }
    assert!(html > 300, "{html}");
    let text = extract_text(
        &std::fs::read(package_file(
            "CSX-267",
            "data/physical_hazard/physical_hazard_005_CHIRPS_GPCC_precipitation_anomaly.html",
        ))
        .unwrap(),
        FileKind::Html,
    );
    assert!(!text.contains("datasetID"), "script body leaked");
}

fn package_file(event: &str, relative: &str) -> PathBuf {
    dev_slice()
        .join("packages/event_packages/standard_event_packages/packages")
        .join(event)
        .join(relative)
}

/// The detected kind of real files whose suffix lies about their content.
#[test]
fn pinned_kinds_of_real_files() {
    let table: &[(&str, &str, FileKind)] = &[
        ("CSX-001", "data/event_reports/event_reports_002_HDX_CKAN_package_search.bin", FileKind::Json),
        ("CSX-001", "data/event_reports/event_reports_001_Locked_package_evidence_report.bin", FileKind::Html),
        ("CSX-001", "data/remote_sensing/remote_sensing_001_NASA_Worldview_GIBS_snapshot.bin", FileKind::Jpeg),
        ("CSX-238", "data/event_catalogs/event_catalogs_002_GDACS_earthquake_alert_API.bin", FileKind::Empty),
        ("CSX-049", "data/physical_hazard/physical_hazard_001_CHIRPS_daily_precipitation_and_climatology.0", FileKind::Html),
        ("CSX-074", "data/exposure_impact/exposure_impact_002_GHSL_built-up_and_settlement_layers.php", FileKind::Html),
        ("CSX-052", "data/event_reports/event_reports_005_02_GDACS_TC_Michaung_report.aspx.aspx", FileKind::Html),
        ("CSX-015", "data/event_reports/event_reports_005_Copernicus_GDO_-_Drought_in_central-eastern_China.aspx", FileKind::Pdf),
        ("CSX-267", "data/physical_hazard/physical_hazard_008_NOAA_PSL_SOI_data.data", FileKind::Text),
        ("CSX-267", "data/physical_hazard/physical_hazard_007_NOAA_PSL_ONI_data.data", FileKind::Text),
        ("CSX-267", "data/physical_hazard/physical_hazard_005_CHIRPS_GPCC_precipitation_anomaly.html", FileKind::Html),
        ("CSX-006", "data/event_reports/event_reports_005_WMO_State_of_the_Climate_in_Africa_2024.pdf", FileKind::Pdf),
        ("CSX-066", "data/event_reports/event_reports_005_03_USAID_Sudan_Complex_Emergency_Fact_Sheet_19.pdf.pdf", FileKind::Text),
        ("CSX-074", "data/geospatial_context/geospatial_context_001_Natural_Earth_Admin-0_physical_basemap.zip", FileKind::ZipShapefile),
        ("CSX-248", "data/remote_sensing/remote_sensing_005_alphaearth_change_1km.zip.zip", FileKind::GeoTiff),
        ("CSX-232", "data/other/other_001_NOAA_NCEI_WDS_Global_Historical_Tsunami_Database.txt", FileKind::Html),
        ("CSX-226", "data/event_reports/event_reports_003_CSX-226_01_text_reports_ReliefWeb_Reports_API_event_country_date_search.error.txt.txt", FileKind::Json),
        ("CSX-253", "data/exposure_impact/exposure_impact_004_004_exposure_or_impact_OpenStreetMap_Overpass_roads_buildings_critical_facilities.error.tx.txt", FileKind::Html),
        ("CSX-328", "data/event_catalogs/event_catalogs_004_03_gdacs_rss.xml.xml", FileKind::Xml),
        ("CSX-328", "data/event_catalogs/event_catalogs_002_NOAA_OISST_PSL_ERDDAP_sea-surface_temperature_THREDDS_catalog_XML.xml", FileKind::Xml),
    ];
    let mut failures = Vec::new();
    for (event, relative, expected) in table {
        let path = package_file(event, relative);
        let got = sniff_file(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        if got != *expected {
            failures.push(format!(
                "{event}/{relative}: expected {expected}, got {got}"
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
    // A real PDF's text comes out.
    let pdf = std::fs::read(package_file(
        "CSX-226",
        "data/event_catalogs/event_catalogs_002_UNOSAT_Enga_landslide_assessment.pdf",
    ))
    .unwrap();
    let text = extract_text(&pdf, FileKind::Pdf);
    assert!(
        text.contains("Enga Province"),
        "{}",
        text.chars().take(300).collect::<String>()
    );
    // A PDF cut at 3 MiB (no cross-reference table): its text is salvaged
    // from the content streams.
    let cut = std::fs::read(package_file(
        "CSX-015",
        "data/event_reports/event_reports_005_Copernicus_GDO_-_Drought_in_central-eastern_China.aspx",
    ))
    .unwrap();
    let text = extract_text(&cut, FileKind::Pdf);
    assert!(
        text.contains("Drought in"),
        "{}",
        text.chars().take(300).collect::<String>()
    );
}

/// Export to the authoring layout and load it back: equal tasks, and the
/// exported packages resolve evidence like the release's.
#[test]
fn authoring_export_round_trips() {
    let release = release();
    let dest = tempfile::tempdir().unwrap();
    let summary = export_authoring(&release, dest.path(), &ExportFilter::all()).unwrap();
    assert_eq!(summary.tasks.len(), 150);
    assert_eq!(summary.events.len(), 73);
    assert!(summary.missing_packages.is_empty());
    let task_dir = dest.path().join("tasks/CSX-001/CSX-001_Q1");
    for name in [
        "question_en.md",
        "solution_en.md",
        "computed_gt.json",
        "compute_gt.py",
        "review.json",
    ] {
        assert!(task_dir.join(name).is_file(), "{name}");
    }
    let package = dest
        .path()
        .join("event_packages/standard_event_packages/packages/CSX-001");
    assert!(package.join("metadata/event.json").is_file());
    let csv = std::fs::read_to_string(package.join("metadata/files.csv")).unwrap();
    assert_eq!(
        csv.lines().count(),
        1 + release.task("CSX-001_Q1").unwrap().event_files.len()
    );
    let loaded = load_authoring(dest.path()).unwrap();
    assert_eq!(loaded.load_errors(), &[]);
    assert_eq!(loaded.tasks().len(), 150);
    for (a, b) in release.tasks().iter().zip(loaded.tasks()) {
        let (a_json, b_json) = (
            serde_json::to_value(a).unwrap(),
            serde_json::to_value(b).unwrap(),
        );
        if a_json != b_json {
            let differing: Vec<&String> = a_json
                .as_object()
                .unwrap()
                .keys()
                .filter(|k| a_json.get(k.as_str()) != b_json.get(k.as_str()))
                .collect();
            panic!(
                "{}: fields differ after the authoring round trip: {differing:?}",
                a.task_id
            );
        }
        assert_eq!(a, b, "{}", a.task_id);
    }
    // `Release::load` recognises the layout too.
    assert_eq!(Release::load(dest.path()).unwrap().tasks().len(), 150);
    let resolved = evidence::resolve(
        &loaded.package_dir("CSX-001"),
        "data/event_reports/event_reports_002_HDX_CKAN_package_search.bin",
    )
    .unwrap();
    assert_eq!(sniff_file(&resolved.absolute).unwrap(), FileKind::Json);
    // A task's hidden artifacts are outside every package: no route reaches them.
    for attempt in [
        "../../../../tasks/CSX-001/CSX-001_Q1/computed_gt.json",
        "metadata/../../../../../tasks/CSX-001/CSX-001_Q1/solution_en.md",
    ] {
        assert!(evidence::resolve(&package, attempt).is_err(), "{attempt}");
    }
}

/// Hostile paths against a real package: each refused with the right error.
#[test]
fn hostile_paths_on_a_real_package() {
    let package = package_file("CSX-001", "");
    let package = package.as_path();
    let ok = evidence::resolve(
        package,
        "data/packages/event_packages/standard_event_packages/packages/CSX-001/data/event_reports/event_reports_002_HDX_CKAN_package_search.bin",
    )
    .unwrap();
    assert_eq!(
        ok.package_relative,
        "data/event_reports/event_reports_002_HDX_CKAN_package_search.bin"
    );
    let refused = |p: &str| evidence::resolve(package, p).unwrap_err();
    assert!(matches!(
        refused("/etc/passwd"),
        AccessError::AbsolutePath { .. }
    ));
    assert!(matches!(
        refused("../CSX-006/data"),
        AccessError::ParentTraversal { .. }
    ));
    assert!(matches!(
        refused("event_packages/standard_event_packages/packages/CSX-006/data"),
        AccessError::OtherPackage { .. }
    ));
    assert!(matches!(
        refused("data/computed_gt.json"),
        AccessError::HiddenArtifact { .. }
    ));
    assert!(matches!(
        refused("data/nope.json"),
        AccessError::NotFound { .. }
    ));
    // The listing offers exactly the package's files, each resolvable.
    let files = list_package_files(package).unwrap();
    assert!(files.len() >= 25, "{}", files.len());
    for f in &files {
        assert!(
            evidence::resolve(package, &f.package_relative).is_ok(),
            "{}",
            f.package_relative
        );
    }
    let _: &Path = package;
}
