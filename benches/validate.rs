//! Benchmark of `validate` (release gates + parallel SHA-256 of every listed
//! file) over the dev slice, against `sha256sum` and Python `hashlib` over
//! the same files in the same run; and of HTML-to-text
//! (`earthverse_package_model::extract_text`) over the dev slice's HTML
//! files (sniffed from content) against Python lxml
//! (`lxml.html.fromstring(b).text_content()`).
//!
//! Run: `cargo bench -p earthverse-benches --bench validate`
//! (dev slice from `$EARTHVERSE_DATA`, default `../shared/earthverse-dev/data`;
//! Python from `$EARTHVERSE_PYTHON`, default `python3`; lxml needed for the
//! HTML reference: `export EARTHVERSE_PYTHON="$(scripts/python-env.sh)"`).
//! Every figure is the best of `ROUNDS` runs with a warm page cache.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_package_model::validate::{
    hash_file, hash_files_parallel, validate, ValidateOptions,
};
use earthverse_package_model::{extract_text, sniff_bytes, FileKind, Release};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const ROUNDS: usize = 3;

const PY_HASH: &str = r#"
import hashlib, sys, time
paths = open(sys.argv[1], encoding="utf-8").read().split("\0")
paths = [p for p in paths if p]
best = None
for _ in range(int(sys.argv[2])):
    t = time.perf_counter(); total = 0
    for p in paths:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            while True:
                b = f.read(1 << 20)
                if not b:
                    break
                h.update(b); total += len(b)
        h.hexdigest()
    dt = time.perf_counter() - t
    best = dt if best is None else min(best, dt)
print(best, total)
"#;

const PY_LXML: &str = r#"
import sys, time
import lxml.html
paths = [p for p in open(sys.argv[1], encoding="utf-8").read().split("\0") if p]
datas = [open(p, "rb").read() for p in paths]
best = None; chars = 0; failed = 0
for _ in range(int(sys.argv[2])):
    t = time.perf_counter(); chars = 0; failed = 0
    for d in datas:
        try:
            chars += len(lxml.html.fromstring(d).text_content())
        except Exception:
            failed += 1
    dt = time.perf_counter() - t
    best = dt if best is None else min(best, dt)
print(best, sum(len(d) for d in datas), chars, failed)
"#;

fn dev_slice() -> PathBuf {
    std::env::var_os("EARTHVERSE_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/earthverse-dev/data")
        })
}

fn python() -> String {
    std::env::var("EARTHVERSE_PYTHON").unwrap_or_else(|_| "python3".into())
}

fn best<T>(mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut out = None;
    let mut best = Duration::MAX;
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let value = f();
        best = best.min(t.elapsed());
        out = Some(value);
    }
    (best, out.unwrap())
}

fn mbps(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

fn write_list(paths: &[PathBuf]) -> PathBuf {
    let list = std::env::temp_dir().join(format!("earthverse-bench-{}.list", std::process::id()));
    let mut f = std::fs::File::create(&list).unwrap();
    for p in paths {
        f.write_all(p.to_string_lossy().as_bytes()).unwrap();
        f.write_all(b"\0").unwrap();
    }
    list
}

fn run_python(script: &str, list: &Path) -> Option<Vec<f64>> {
    let out = Command::new(python())
        .arg("-c")
        .arg(script)
        .arg(list)
        .arg(ROUNDS.to_string())
        .output()
        .ok()?;
    if !out.status.success() {
        eprintln!(
            "python reference failed: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
        return None;
    }
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|x| x.parse().ok())
        .collect()
}

fn row(name: &str, bytes: u64, d: Duration, reference: Option<f64>) {
    let rate = mbps(bytes, d);
    let ratio = reference.map_or(String::from("-"), |r| format!("{:.2}x", rate / r));
    println!(
        "| {name:<44} | {:>8.1} | {:>9.3} | {:>9.1} | {ratio:>8} |",
        bytes as f64 / 1e6,
        d.as_secs_f64(),
        rate
    );
}

fn main() {
    let root = dev_slice();
    assert!(
        root.join("tasks").is_dir(),
        "the validate bench needs the dev slice: set EARTHVERSE_DATA (looked in {})",
        root.display()
    );
    let release = Release::load(&root).unwrap();

    // The files validate hashes: every listed file that exists.
    let mut files: Vec<PathBuf> = release
        .tasks()
        .iter()
        .flat_map(|t| {
            t.event_files
                .iter()
                .map(|f| release.package_dir(&t.event_id).join(&f.relative_path))
        })
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files.dedup();
    let total: u64 = files.iter().map(|p| p.metadata().unwrap().len()).sum();
    for p in &files {
        let _ = std::fs::read(p); // warm the page cache
    }
    let list = write_list(&files);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "\nvalidate bench: {} files, {:.1} MB, {threads} cores, best of {ROUNDS}\n",
        files.len(),
        total as f64 / 1e6
    );

    // References, same files, same run.
    let (sha256sum, _) = best(|| {
        let status = Command::new("xargs")
            .arg("-0")
            .arg("sha256sum")
            .stdin(std::fs::File::open(&list).unwrap())
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    });
    let py_hash = run_python(PY_HASH, &list);
    let hashlib_rate = py_hash
        .as_ref()
        .map(|v| mbps(v[1] as u64, Duration::from_secs_f64(v[0])));

    let (single, _) = best(|| files.iter().map(|p| hash_file(p).unwrap().0).sum::<u64>());
    let (parallel, _) = best(|| {
        hash_files_parallel(&files)
            .into_iter()
            .map(|r| r.unwrap().0)
            .sum::<u64>()
    });
    let (full, report) = best(|| validate(&release, &ValidateOptions::default()).unwrap());
    assert_eq!(report.bytes_hashed, total);

    println!(
        "| {:<44} | {:>8} | {:>9} | {:>9} | {:>8} |",
        "hashing", "MB", "seconds", "MB/s", "vs hashlib"
    );
    println!(
        "|{}|{}|{}|{}|{}|",
        "-".repeat(46),
        "-".repeat(10),
        "-".repeat(11),
        "-".repeat(11),
        "-".repeat(10)
    );
    row(
        "earthverse validate (all gates, runs loaded)",
        total,
        full,
        hashlib_rate,
    );
    row(
        "earthverse hash_files_parallel (rayon)",
        total,
        parallel,
        hashlib_rate,
    );
    row(
        "earthverse hash_file, one thread",
        total,
        single,
        hashlib_rate,
    );
    row(
        "sha256sum (coreutils, one process)",
        total,
        sha256sum,
        hashlib_rate,
    );
    match &py_hash {
        Some(v) => row(
            "python hashlib (1 MiB reads)",
            v[1] as u64,
            Duration::from_secs_f64(v[0]),
            hashlib_rate,
        ),
        None => println!("| python hashlib: unavailable |"),
    }

    // HTML to text over the files sniffed as HTML.
    let html: Vec<(PathBuf, Vec<u8>)> = walk(&root.join("packages"))
        .into_iter()
        .filter_map(|p| {
            let bytes = std::fs::read(&p).ok()?;
            (sniff_bytes(&bytes) == FileKind::Html).then_some((p, bytes))
        })
        .collect();
    let html_bytes: u64 = html.iter().map(|(_, b)| b.len() as u64).sum();
    let (ours, chars) = best(|| {
        html.iter()
            .map(|(_, b)| extract_text(b, FileKind::Html).len())
            .sum::<usize>()
    });
    let html_list = write_list(&html.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>());
    let lxml = run_python(PY_LXML, &html_list);
    let lxml_rate = lxml
        .as_ref()
        .map(|v| mbps(v[1] as u64, Duration::from_secs_f64(v[0])));
    println!(
        "\n| {:<44} | {:>8} | {:>9} | {:>9} | {:>8} |",
        format!("HTML to text ({} files)", html.len()),
        "MB",
        "seconds",
        "MB/s",
        "vs lxml"
    );
    println!(
        "|{}|{}|{}|{}|{}|",
        "-".repeat(46),
        "-".repeat(10),
        "-".repeat(11),
        "-".repeat(11),
        "-".repeat(10)
    );
    row(
        "earthverse extract_text (html5ever tokenizer)",
        html_bytes,
        ours,
        lxml_rate,
    );
    match &lxml {
        Some(v) => {
            row(
                "lxml.html text_content()",
                v[1] as u64,
                Duration::from_secs_f64(v[0]),
                lxml_rate,
            );
            println!(
                "\n(earthverse text: {chars} bytes; lxml text: {} chars, {} parse failures)",
                v[2], v[3]
            );
        }
        None => println!("| lxml: unavailable (install with scripts/python-env.sh) |"),
    }
    let _ = std::fs::remove_file(list);
    let _ = std::fs::remove_file(html_list);
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        if let Ok(entries) = std::fs::read_dir(&d) {
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}
