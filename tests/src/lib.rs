//! Helpers shared by the cross-crate integration tests: where the bundled
//! fixtures and the development slice of the release live.
#![deny(missing_docs)]

use std::path::PathBuf;

/// The project's root directory.
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default()
}

/// The bundled mini release under `fixtures/release`.
pub fn fixture_release() -> PathBuf {
    project_root().join("fixtures").join("release")
}

/// The development slice: `$EARTHVERSE_DATA`, or `../shared/earthverse-dev/data`
/// beside the project. Panics with a clear message when it is absent, because
/// a test that needs it must fail rather than pass vacuously.
pub fn dev_slice() -> PathBuf {
    let path = std::env::var_os("EARTHVERSE_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| project_root().join("../shared/earthverse-dev/data"));
    assert!(
        path.join("tasks").is_dir(),
        "dev-slice tests need the EarthVerse development slice: set EARTHVERSE_DATA \
         (looked in {}); or run without --features dev-slice",
        path.display()
    );
    path
}
