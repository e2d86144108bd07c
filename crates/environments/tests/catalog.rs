//! The catalogue, detection and the scripted agent's argument filling,
//! without running any environment (fast; no runtime needed).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_environments::coverage::{scan_package, scripted_args};
use earthverse_environments::{
    detect, environment, operation, pinned_version, DetectionContext, EnvironmentError,
    ENVIRONMENTS,
};
use std::collections::HashSet;
use std::path::PathBuf;

#[test]
fn the_thirteen_environments_of_table_7_with_unique_operations() {
    let names: Vec<&str> = ENVIRONMENTS.iter().map(|e| e.name).collect();
    assert_eq!(
        names,
        [
            "MetPy",
            "xclim",
            "thermofeel",
            "PyET",
            "climate-indices",
            "xskillscore",
            "pyextremes",
            "Julia",
            "R climate",
            "CDO",
            "NCO",
            "NCL",
            "Fortran"
        ]
    );
    let mut seen = HashSet::new();
    for env in ENVIRONMENTS {
        assert!(!env.operations.is_empty(), "{}", env.name);
        for op in env.operations {
            assert!(seen.insert(op.name), "duplicate {}", op.name);
            let schema = op.schema();
            for i in op.inputs.iter().filter(|i| i.required) {
                assert!(schema["required"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r == i.name));
            }
            assert_eq!(operation(op.name).unwrap().0.name, env.name);
        }
    }
    assert_eq!(environment("R climate").unwrap().slug, "r-climate");
    assert_eq!(environment("CDO").unwrap().slug, "cdo");
}

#[test]
fn python_libraries_are_pinned_in_the_requirements() {
    for env in ENVIRONMENTS {
        if let earthverse_environments::EnvKind::PythonLibrary { distribution } = env.kind {
            assert!(
                pinned_version(distribution).is_some(),
                "{distribution} is not pinned"
            );
        }
    }
    assert_eq!(pinned_version("metpy"), Some("1.7.1"));
    assert_eq!(pinned_version("climate_indices"), Some("3.1.0"));
}

#[tokio::test]
async fn missing_environments_are_refused_with_what_and_how() {
    let empty = tempfile::tempdir().unwrap();
    let ctx = DetectionContext {
        python: PathBuf::from("python3"),
        path: Some(empty.path().as_os_str().to_owned()),
    };
    let err = detect(environment("nco").unwrap(), &ctx).await.unwrap_err();
    let EnvironmentError::Missing { missing, hint, .. } = &err else {
        panic!("{err}")
    };
    assert!(
        missing.contains("`ncks` is not on PATH") && missing.contains("`ncgen` is not on PATH"),
        "{missing}"
    );
    assert!(hint.contains("scripts/bootstrap.sh"), "{hint}");
    let err = detect(environment("julia").unwrap(), &ctx)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("`julia` is not on PATH"), "{err}");
    // An interpreter that does not exist cannot provide xclim.
    let ctx = DetectionContext {
        python: empty.path().join("no-python"),
        path: None,
    };
    let err = detect(environment("xclim").unwrap(), &ctx)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("xclim is not available") && text.contains("scripts/python-env.sh"),
        "{text}"
    );
}

#[test]
fn the_scripted_agent_fills_inputs_from_the_package_series() {
    let pkg = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/PKG-ENV");
    let blocks = scan_package(&pkg);
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    let (_, kin) = operation("metpy_kinematics").unwrap();
    let args = scripted_args(kin, &blocks).unwrap();
    assert_eq!(args["speed"]["field"], "hourly.wind_speed_10m");
    assert_eq!(args["direction"]["field"], "hourly.wind_direction_10m");
    let (_, hg) = operation("pyet_hargreaves").unwrap();
    // No daily minimum temperature in the fixture: not compatible.
    assert!(scripted_args(hg, &blocks).is_none());
    let (_, spi) = operation("climate_indices_spi").unwrap();
    let args = scripted_args(spi, &blocks).unwrap();
    assert_eq!(args["precipitation"]["path"], "data/station_daily.json");
    let (_, rmse) = operation("xskillscore_rmse").unwrap();
    assert!(
        scripted_args(rmse, &blocks).is_none(),
        "one file: nothing to verify against"
    );
}
