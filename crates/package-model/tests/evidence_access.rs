//! Evidence access against a hostile temporary package: every path below
//! must be refused with its own error, and no hidden artifact is readable
//! by any route (name, case, release prefix, symlink inside the package).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_package_model::evidence::{list_package_files, resolve, AccessError};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

const PREFIX: &str = "event_packages/standard_event_packages/packages";

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    package: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let packages = root.join("packages").join(PREFIX);
    let package = packages.join("CSX-100");
    let write = |path: PathBuf, body: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, body).unwrap();
    };
    write(package.join("data/ok.json"), "{\"ok\": true}");
    write(package.join("data/sub/ok2.txt"), "fine");
    // Hidden artifacts placed (wrongly) inside the package itself.
    write(package.join("computed_gt.json"), "{\"secret\": 1}");
    write(package.join("data/Review.JSON"), "{\"secret\": 2}");
    write(package.join("data/solution_en.md"), "secret solution");
    write(package.join("compute_gt.py"), "print('secret')");
    // Another package and a task folder outside every package.
    write(packages.join("CSX-200/data/other.json"), "{}");
    write(
        root.join("tasks/CSX-100/CSX-100_Q1/computed_gt.json"),
        "{\"secret\": 3}",
    );
    write(root.join("secret/secret.txt"), "outside");
    // Symlinks: inside → inside (fine), inside → hidden, inside → outside.
    symlink(
        package.join("data/ok.json"),
        package.join("data/link_inside"),
    )
    .unwrap();
    symlink(
        package.join("computed_gt.json"),
        package.join("data/link_to_hidden"),
    )
    .unwrap();
    symlink(
        "../computed_gt.json",
        package.join("data/relative_link_to_hidden"),
    )
    .unwrap();
    symlink(
        package.join("computed_gt.json"),
        package.join("data/innocent_name.json"),
    )
    .unwrap();
    symlink("/etc/passwd", package.join("data/link_out")).unwrap();
    symlink(root.join("secret"), package.join("data/dir_link_out")).unwrap();
    symlink("/nonexistent/elsewhere", package.join("data/dangling_out")).unwrap();
    symlink(
        "../../CSX-200/data/other.json",
        package.join("data/relative_out"),
    )
    .unwrap();
    symlink(
        root.join("tasks/CSX-100/CSX-100_Q1"),
        package.join("data/task_dir_link"),
    )
    .unwrap();
    symlink(&package, package.join("data/loop_to_root")).unwrap();
    // Hard links: to a task folder's hidden artifact (refused, whatever its
    // name), and to a file outside every tasks tree (fine: the authoring
    // layout hard-links package data from its source).
    std::fs::hard_link(
        root.join("tasks/CSX-100/CSX-100_Q1/computed_gt.json"),
        package.join("data/hard_linked_answer.json"),
    )
    .unwrap();
    std::fs::hard_link(
        root.join("secret/secret.txt"),
        package.join("data/hard_linked_source.txt"),
    )
    .unwrap();
    Fixture {
        _dir: dir,
        root,
        package,
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Expect {
    Nul,
    Control,
    TooLong,
    Absolute,
    Url,
    Home,
    Parent,
    OtherPackage,
    Hidden,
    Outside,
    LinkedToHidden,
    NotFound,
}

fn variant(error: &AccessError) -> Expect {
    match error {
        AccessError::NulByte { .. } => Expect::Nul,
        AccessError::ControlCharacter { .. } => Expect::Control,
        AccessError::TooLong { .. } => Expect::TooLong,
        AccessError::AbsolutePath { .. } => Expect::Absolute,
        AccessError::UrlScheme { .. } => Expect::Url,
        AccessError::HomeDirectory { .. } => Expect::Home,
        AccessError::ParentTraversal { .. } => Expect::Parent,
        AccessError::OtherPackage { .. } => Expect::OtherPackage,
        AccessError::HiddenArtifact { .. } => Expect::Hidden,
        AccessError::OutsidePackage { .. } => Expect::Outside,
        AccessError::LinkedToHidden { .. } => Expect::LinkedToHidden,
        AccessError::NotFound { .. } => Expect::NotFound,
        other => panic!("unexpected variant {other:?}"),
    }
}

#[test]
fn hostile_paths_are_refused_with_the_right_error() {
    let f = fixture();
    let long = "a/".repeat(3000);
    let absolute_secret = f.root.join("secret/secret.txt");
    let absolute_secret = absolute_secret.to_str().unwrap();
    let table: Vec<(&str, Expect)> = vec![
        ("/etc/passwd", Expect::Absolute),
        (absolute_secret, Expect::Absolute),
        ("C:\\Windows\\system.ini", Expect::Absolute),
        ("c:/data/ok.json", Expect::Absolute),
        ("\\\\server\\share\\x", Expect::Absolute),
        ("file:///etc/passwd", Expect::Url),
        ("https://example.org/data/ok.json", Expect::Url),
        ("~/.ssh/id_rsa", Expect::Home),
        ("~root/x", Expect::Home),
        ("..", Expect::Parent),
        ("../CSX-200/data/other.json", Expect::Parent),
        ("data/../../CSX-200/data/other.json", Expect::Parent),
        ("data/..\\..\\secret\\secret.txt", Expect::Parent),
        ("./././../secret", Expect::Parent),
        ("data/sub/../ok.json", Expect::Parent),
        ("data/ok.json\0.txt", Expect::Nul),
        ("\0", Expect::Nul),
        ("data/\u{7}bell", Expect::Control),
        ("data/ok.json\n/etc/passwd", Expect::Control),
        (long.as_str(), Expect::TooLong),
        (
            "event_packages/standard_event_packages/packages/CSX-200/data/other.json",
            Expect::OtherPackage,
        ),
        (
            "packages/event_packages/standard_event_packages/packages/CSX-200/data/other.json",
            Expect::OtherPackage,
        ),
        (
            "data/packages/event_packages/standard_event_packages/packages/CSX-200/data/other.json",
            Expect::OtherPackage,
        ),
        ("computed_gt.json", Expect::Hidden),
        ("COMPUTED_GT.JSON", Expect::Hidden),
        ("data/SOLUTION_EN.MD", Expect::Hidden),
        ("data/Review.JSON", Expect::Hidden),
        ("compute_gt.py", Expect::Hidden),
        ("./compute_gt.py/", Expect::Hidden),
        ("computed_gt.json.", Expect::Hidden),
        ("computed_gt.json ", Expect::Hidden),
        ("event_packages/standard_event_packages/packages/CSX-100/computed_gt.json", Expect::Hidden),
        (
            "data/packages/event_packages/standard_event_packages/packages/CSX-100/data/solution_en.md",
            Expect::Hidden,
        ),
        ("data\\review.json", Expect::Hidden),
        ("data/task_dir_link/computed_gt.json", Expect::Hidden),
        ("data/loop_to_root/computed_gt.json", Expect::Hidden),
        ("data/hard_linked_answer.json", Expect::LinkedToHidden),
        ("CSX-100/data/hard_linked_answer.json", Expect::LinkedToHidden),
        ("data/link_to_hidden", Expect::Hidden),
        ("data/relative_link_to_hidden", Expect::Hidden),
        ("data/innocent_name.json", Expect::Hidden),
        ("data/link_out", Expect::Outside),
        ("data/dir_link_out", Expect::Outside),
        ("data/dir_link_out/secret.txt", Expect::Outside),
        ("data/dangling_out", Expect::Outside),
        ("data/relative_out", Expect::Outside),
        ("data/task_dir_link", Expect::Outside),
        ("data/missing.json", Expect::NotFound),
        ("CSX-200/data/other.json", Expect::NotFound),
    ];
    assert!(table.len() >= 25);
    let mut wrong = Vec::new();
    for (path, expected) in &table {
        match resolve(&f.package, path) {
            Ok(ok) => wrong.push(format!("{path:?}: accepted as {:?}", ok.package_relative)),
            Err(error) => {
                if variant(&error) != *expected {
                    wrong.push(format!("{path:?}: expected {expected:?}, got {error:?}"));
                }
                // Messages name the request but never the package's location.
                let message = error.to_string();
                assert!(!message.contains(f.package.to_str().unwrap()), "{message}");
            }
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn legitimate_paths_resolve_to_the_same_file() {
    let f = fixture();
    for path in [
        "data/ok.json",
        "./data/ok.json",
        "data//ok.json",
        "data\\ok.json",
        " data/ok.json ",
        "CSX-100/data/ok.json",
        "event_packages/standard_event_packages/packages/CSX-100/data/ok.json",
        "packages/event_packages/standard_event_packages/packages/CSX-100/data/ok.json",
        "data/packages/event_packages/standard_event_packages/packages/CSX-100/data/ok.json",
        "data/link_inside",
        "data/loop_to_root/data/ok.json",
    ] {
        let resolved = resolve(&f.package, path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        assert_eq!(resolved.package_relative, "data/ok.json", "{path:?}");
        assert_eq!(
            std::fs::read_to_string(&resolved.absolute).unwrap(),
            "{\"ok\": true}"
        );
    }
    // A hard link to a file outside the tasks trees is package data.
    let source = resolve(&f.package, "data/hard_linked_source.txt").unwrap();
    assert_eq!(std::fs::read_to_string(source.absolute).unwrap(), "outside");
    assert_eq!(resolve(&f.package, "").unwrap().package_relative, "");
    assert_eq!(
        resolve(&f.package, "data/sub").unwrap().package_relative,
        "data/sub"
    );
}

/// No route reaches a hidden artifact: try every entry of the package tree
/// (files, directories, symlinks) under every prefix and case the resolver
/// accepts, and check that what resolves is never a hidden file's content.
#[test]
fn no_hidden_artifact_is_readable_by_any_route() {
    let f = fixture();
    let hidden_contents: Vec<Vec<u8>> = [
        f.package.join("computed_gt.json"),
        f.package.join("data/Review.JSON"),
        f.package.join("data/solution_en.md"),
        f.package.join("compute_gt.py"),
        f.root.join("tasks/CSX-100/CSX-100_Q1/computed_gt.json"),
    ]
    .iter()
    .map(|p| std::fs::read(p).unwrap())
    .collect();
    let mut entries = Vec::new();
    collect(&f.package, &f.package, &mut entries);
    entries.push("data/task_dir_link/computed_gt.json".into());
    entries.push("data/loop_to_root/data/link_to_hidden".into());
    let mut tried = 0;
    for entry in &entries {
        for prefix in [
            "",
            "./",
            "CSX-100/",
            "event_packages/standard_event_packages/packages/CSX-100/",
        ] {
            for candidate in [
                format!("{prefix}{entry}"),
                format!("{prefix}{}", entry.to_uppercase()),
                format!("{prefix}{}", entry.replace('/', "\\")),
            ] {
                tried += 1;
                if let Ok(resolved) = resolve(&f.package, &candidate) {
                    if resolved.absolute.is_file() {
                        let bytes = std::fs::read(&resolved.absolute).unwrap();
                        assert!(
                            !hidden_contents.contains(&bytes),
                            "{candidate:?} reached a hidden artifact"
                        );
                    }
                }
            }
        }
    }
    assert!(tried > 100, "{tried}");
    // The listing offers only the two real files and the inside symlink.
    let listed: Vec<String> = list_package_files(&f.package)
        .unwrap()
        .into_iter()
        .map(|f| f.package_relative)
        .collect();
    assert_eq!(
        listed,
        [
            "data/hard_linked_source.txt",
            "data/link_inside",
            "data/ok.json",
            "data/sub/ok2.txt"
        ]
    );
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let relative = path
            .strip_prefix(root)
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        out.push(relative);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            collect(root, &path, out);
        }
    }
}
