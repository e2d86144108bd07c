//! Measures HTML-to-text throughput over every HTML file (by content) under
//! a directory: `cargo run --release -p earthverse-package-model --example
//! html_throughput -- <dir>`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use earthverse_package_model::sniff::{sniff_bytes, FileKind};
use earthverse_package_model::text::html_to_text;
use std::time::Instant;

fn main() {
    let dir = std::env::args()
        .nth(1)
        .expect("usage: html_throughput <dir>");
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(&dir) {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let bytes = std::fs::read(entry.path()).unwrap();
            if sniff_bytes(&bytes) == FileKind::Html {
                files.push(bytes);
            }
        }
    }
    let total: usize = files.iter().map(Vec::len).sum();
    let mut best = f64::MAX;
    let mut chars = 0;
    for _ in 0..5 {
        let start = Instant::now();
        chars = files.iter().map(|f| html_to_text(f).len()).sum::<usize>();
        best = best.min(start.elapsed().as_secs_f64());
    }
    println!(
        "{} HTML files, {:.1} MB -> {} text bytes; best of 5: {:.3} s = {:.1} MB/s",
        files.len(),
        total as f64 / 1e6,
        chars,
        best,
        total as f64 / 1e6 / best
    );
}
