//! `search_package_files(query, glob="**/*", max_matches=40)`.
//!
//! The reference's rule (`reference-harness.md`): the query is split on
//! white space; a file matches when every term occurs in its first 300,000
//! characters, case-insensitively; the snippet is the first line holding any
//! term (stripped, cut at 420 characters with the truncation marker, as the
//! recorded runs show). Files are visited in path order; only text suffixes
//! are searched (plus content-sniffed text in [`ReadMode::Extended`]).
//!
//! Underneath: files are read only up to what 300,000 characters can take,
//! ASCII/UTF-8 files are matched on lower-cased bytes with `memchr::memmem`,
//! and files are scanned in parallel with rayon.

use super::text::{decode_python_text, python_lines, python_strip, text_decision, ReadMode};
use super::{python_path_cmp, str_arg, suffix_of, usize_arg};
use crate::registry::reference_truncate;
use crate::tool::{Tool, ToolContext, ToolFamily, ToolOutput};
use async_trait::async_trait;
use earthverse_package_model::evidence::hidden_artifact_name;
use memchr::memmem;
use rayon::prelude::*;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Characters of each file that are searched.
pub const SEARCH_WINDOW_CHARS: usize = 300_000;
/// Snippet limit: longer lines keep 420 characters and the marker
/// (the reference's `_truncate(line, 500)`).
pub const SNIPPET_LIMIT: usize = 500;

/// Searches the text files of the package for all terms of a query.
#[derive(Debug, Clone, Copy, Default)]
pub struct SearchPackageFiles {
    /// Whether content-sniffed text in other suffixes is searched too.
    pub mode: ReadMode,
}

/// One search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRequest {
    /// White-space separated terms; all must occur.
    pub query: String,
    /// Python `pathlib` glob relative to the package root.
    pub glob: String,
    /// Maximum matches returned.
    pub max_matches: usize,
}

impl SearchRequest {
    /// A request with the reference's defaults (`glob="**/*"`, 40 matches).
    pub fn new(query: impl Into<String>) -> Self {
        Self {
            query: query.into(),
            glob: "**/*".into(),
            max_matches: 40,
        }
    }
}

#[async_trait]
impl Tool for SearchPackageFiles {
    fn name(&self) -> &str {
        "search_package_files"
    }

    fn description(&self) -> &str {
        "Search text files of the event package for a query: a file matches when every white-space separated \
         term occurs in it (case-insensitive, first 300,000 characters); returns the path and the first matching \
         line. Arguments: query, glob (default \"**/*\"), max_matches (default 40)."
    }

    fn family(&self) -> ToolFamily {
        ToolFamily::Research
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "default": "", "description": "Terms that must all occur (case-insensitive)."},
                "glob": {"type": "string", "default": "**/*", "description": "Glob of files to search, relative to the package root."},
                "max_matches": {"type": "integer", "default": 40, "minimum": 0, "description": "Maximum matching files returned."}
            }
        })
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutput {
        let request = SearchRequest {
            query: str_arg(&args, "query").to_string(),
            glob: args
                .get("glob")
                .and_then(Value::as_str)
                .unwrap_or("**/*")
                .to_string(),
            max_matches: usize_arg(&args, "max_matches", 40),
        };
        let ctx = ctx.clone();
        let mode = self.mode;
        tokio::task::spawn_blocking(move || search_package(&ctx, &request, mode))
            .await
            .unwrap_or_else(|e| {
                super::tool_exception("search_package_files", "JoinError", &e.to_string())
            })
    }
}

/// Runs a search over the package of `ctx` (blocking).
pub fn search_package(ctx: &ToolContext, request: &SearchRequest, mode: ReadMode) -> ToolOutput {
    if request.query.trim().is_empty() {
        return ToolOutput::failure(
            Value::String("query is required".into()),
            Vec::new(),
            Vec::new(),
        );
    }
    let matcher = match compile_glob(&request.glob) {
        Ok(m) => m,
        Err(message) => {
            return super::tool_exception("search_package_files", "ValueError", &message)
        }
    };
    let terms: Vec<String> = request
        .query
        .to_lowercase()
        .split_whitespace()
        .map(str::to_string)
        .collect();
    // pathlib: a pattern ending in `**` matches directories only, so no file.
    if request.glob.trim_end_matches('/').rsplit('/').next() == Some("**") {
        return ToolOutput::ok(
            json!({"query": request.query, "match_count": 0, "matches": []}),
            Vec::new(),
        );
    }
    let files = match package_files(&ctx.package_root) {
        Ok(f) => f,
        Err(e) => return super::tool_exception("search_package_files", "OSError", &e.to_string()),
    };
    let candidates: Vec<&(String, PathBuf)> = files
        .iter()
        .filter(|(rel, abs)| {
            // PDFs are extracted by read_text_file, not searched raw.
            matcher.is_match(rel)
                && matches!(text_decision(mode, &suffix_of(rel), abs),
                    Some(kind) if kind != Some(earthverse_package_model::sniff::FileKind::Pdf))
        })
        .collect();
    let mut matches: Vec<(String, String)> = Vec::new();
    // Scan in order-preserving parallel chunks so a small `max_matches`
    // stops early on big trees.
    for chunk in candidates.chunks(64) {
        let found: Vec<Option<(String, String)>> = chunk
            .par_iter()
            .map(|(rel, abs)| match_file(abs, &terms).map(|snippet| (rel.clone(), snippet)))
            .collect();
        for hit in found.into_iter().flatten() {
            if matches.len() >= request.max_matches {
                break;
            }
            matches.push(hit);
        }
        if matches.len() >= request.max_matches {
            break;
        }
    }
    let evidence: Vec<String> = matches
        .iter()
        .map(|(rel, _)| ctx.release_path(rel))
        .collect();
    let listed: Vec<Value> = matches
        .iter()
        .map(|(rel, snippet)| json!({"path": ctx.release_path(rel), "snippet": snippet}))
        .collect();
    ToolOutput::ok(
        json!({"query": request.query, "match_count": listed.len(), "matches": listed}),
        evidence,
    )
}

/// A glob with Python `pathlib` semantics: `*` stays inside one path
/// component, `**` spans any number of directories (including none).
fn compile_glob(pattern: &str) -> Result<globset::GlobMatcher, String> {
    if pattern.is_empty() {
        return Err("Unacceptable pattern: ''".into());
    }
    if pattern.starts_with('/') {
        return Err("Non-relative patterns are unsupported".into());
    }
    if pattern
        .split('/')
        .any(|part| part.contains("**") && part != "**")
    {
        return Err("Invalid pattern: '**' can only be an entire path component".into());
    }
    // pathlib has no `{a,b}` alternation: braces are literal.
    let trimmed = pattern
        .trim_start_matches("./")
        .replace('{', "[{]")
        .replace('}', "[}]");
    globset::GlobBuilder::new(&trimmed)
        .literal_separator(true)
        .backslash_escape(false)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| format!("invalid glob {pattern:?}: {e}"))
}

/// Regular files of the package (package-relative, absolute), in Python
/// path order, skipping symlinks and hidden artifacts.
pub(crate) fn package_files(root: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(root).follow_links(false) {
        let entry = entry.map_err(std::io::Error::other)?;
        if !entry.file_type().is_file() {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        if rel.split('/').any(|c| hidden_artifact_name(c).is_some()) {
            continue;
        }
        out.push((rel, entry.into_path()));
    }
    out.sort_by(|a, b| python_path_cmp(&a.0, &b.0));
    Ok(out)
}

/// The searched window of one file, decoded and lower-cased once.
#[derive(Debug)]
struct Window {
    len: u64,
    modified: Option<std::time::SystemTime>,
    text: String,
    lowered: String,
    /// Hashed trigrams of `lowered`, built on the second search of the
    /// file: a term with a trigram absent here cannot occur, so repeated
    /// searches reject most non-matching files without a scan.
    trigrams: OnceLock<Box<[u64; TRIGRAM_WORDS]>>,
    searches: std::sync::atomic::AtomicU32,
}

const TRIGRAM_BITS: usize = 1 << 16;
const TRIGRAM_WORDS: usize = TRIGRAM_BITS / 64;

fn trigram_slot(a: u8, b: u8, c: u8) -> usize {
    let x = (u32::from(a) << 16) | (u32::from(b) << 8) | u32::from(c);
    (x.wrapping_mul(2_654_435_761) >> 16) as usize
}

fn trigram_set(bytes: &[u8]) -> Box<[u64; TRIGRAM_WORDS]> {
    let mut set = Box::new([0u64; TRIGRAM_WORDS]);
    for w in bytes.windows(3) {
        let slot = trigram_slot(w[0], w[1], w[2]);
        set[slot / 64] |= 1 << (slot % 64);
    }
    set
}

fn may_contain(set: &[u64; TRIGRAM_WORDS], term: &[u8]) -> bool {
    term.windows(3).all(|w| {
        let slot = trigram_slot(w[0], w[1], w[2]);
        set[slot / 64] & (1 << (slot % 64)) != 0
    })
}

/// Bytes of decoded text kept by the window cache.
pub const WINDOW_CACHE_BYTES: usize = 256 << 20;

struct WindowCache {
    entries: HashMap<PathBuf, Arc<Window>>,
    bytes: usize,
}

fn cache() -> &'static Mutex<WindowCache> {
    static CACHE: OnceLock<Mutex<WindowCache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(WindowCache {
            entries: HashMap::new(),
            bytes: 0,
        })
    })
}

/// Empties the in-memory cache of decoded search windows (benchmarks use
/// it to measure cold calls).
pub fn clear_window_cache() {
    if let Ok(mut c) = cache().lock() {
        c.entries.clear();
        c.bytes = 0;
    }
}

/// The window of a file: from the cache when the file's size and
/// modification time are unchanged, else read and decoded.
fn window(path: &Path) -> std::io::Result<Arc<Window>> {
    let meta = std::fs::metadata(path)?;
    let (len, modified) = (meta.len(), meta.modified().ok());
    if let Ok(c) = cache().lock() {
        if let Some(w) = c.entries.get(path) {
            if w.len == len && w.modified == modified {
                return Ok(w.clone());
            }
        }
    }
    let bytes = read_window(path)?;
    let text: String = match std::str::from_utf8(&bytes) {
        Ok(s) if !s.contains('\r') => cut_chars(s, SEARCH_WINDOW_CHARS).to_string(),
        _ => cut_chars(&decode_python_text(&bytes), SEARCH_WINDOW_CHARS).to_string(),
    };
    let lowered = fast_lowercase(&text);
    let w = Arc::new(Window {
        len,
        modified,
        text,
        lowered,
        trigrams: OnceLock::new(),
        searches: std::sync::atomic::AtomicU32::new(0),
    });
    if let Ok(mut c) = cache().lock() {
        let size = w.text.len() + w.lowered.len() + TRIGRAM_WORDS * 8;
        if c.bytes + size > WINDOW_CACHE_BYTES {
            c.entries.clear();
            c.bytes = 0;
        }
        if size <= WINDOW_CACHE_BYTES {
            c.bytes += size;
            if let Some(old) = c.entries.insert(path.to_path_buf(), w.clone()) {
                c.bytes -= old.text.len() + old.lowered.len() + TRIGRAM_WORDS * 8;
            }
        }
    }
    Ok(w)
}

/// Lower-cases like `str::to_lowercase` but copies ASCII runs byte-wise
/// (HTML pages are mostly ASCII with a few non-ASCII characters).
fn fast_lowercase(text: &str) -> String {
    if text.is_ascii() {
        return text.to_ascii_lowercase();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let ascii = rest.bytes().position(|b| b >= 0x80).unwrap_or(rest.len());
        let (run, tail) = rest.split_at(ascii);
        out.push_str(&run.to_ascii_lowercase());
        rest = tail;
        // Then the non-ASCII run, lower-cased with Unicode rules.
        let end = rest
            .char_indices()
            .find(|(_, c)| c.is_ascii())
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        let (run, tail) = rest.split_at(end);
        out.push_str(&run.to_lowercase());
        rest = tail;
    }
    out
}

/// Returns the snippet if every term occurs in the file's window.
fn match_file(path: &Path, terms: &[String]) -> Option<String> {
    let w = window(path).ok()?;
    let seen = w
        .searches
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if seen >= 1 {
        let set = w.trigrams.get_or_init(|| trigram_set(w.lowered.as_bytes()));
        if !terms.iter().all(|t| may_contain(set, t.as_bytes())) {
            return None;
        }
    }
    if !terms
        .iter()
        .all(|t| memmem::find(w.lowered.as_bytes(), t.as_bytes()).is_some())
    {
        return None;
    }
    for line in python_lines(&w.text) {
        let hit = if line.is_ascii() {
            terms
                .iter()
                .any(|t| contains_ascii_ci(line.as_bytes(), t.as_bytes()))
        } else {
            let low = line.to_lowercase();
            terms.iter().any(|t| low.contains(t.as_str()))
        };
        if hit {
            return Some(reference_truncate(python_strip(line), SNIPPET_LIMIT));
        }
    }
    Some(String::new())
}

fn contains_ascii_ci(haystack: &[u8], needle: &[u8]) -> bool {
    if needle.is_empty() {
        return true;
    }
    if !needle.is_ascii() {
        return false;
    }
    haystack
        .windows(needle.len())
        .any(|w| w.eq_ignore_ascii_case(needle))
}

fn cut_chars(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

/// Reads as many bytes as 300,000 characters can need: 300,000 bytes when
/// they are ASCII without `\r`, else up to 8 bytes per character.
fn read_window(path: &Path) -> std::io::Result<Vec<u8>> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len() as usize;
    let first = len.min(SEARCH_WINDOW_CHARS);
    let mut bytes = vec![0u8; first];
    file.read_exact(&mut bytes)?;
    if len > first && (!bytes.is_ascii() || memchr::memchr(b'\r', &bytes).is_some()) {
        (&mut file)
            .take((SEARCH_WINDOW_CHARS * 8 - first) as u64)
            .read_to_end(&mut bytes)?;
    }
    Ok(bytes)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn glob_is_pathlib_like() {
        let m = compile_glob("**/*").unwrap();
        assert!(m.is_match("a.json") && m.is_match("data/x/a.json"));
        let m = compile_glob("*.json").unwrap();
        assert!(m.is_match("a.json") && !m.is_match("data/a.json"));
        let m = compile_glob("data/event_reports/*").unwrap();
        assert!(
            m.is_match("data/event_reports/a.html") && !m.is_match("data/event_reports/x/a.html")
        );
        let m = compile_glob("**/*.{json,html}").unwrap();
        assert!(!m.is_match("a.json") && m.is_match("a.{json,html}"));
        assert!(compile_glob("**/*.html **/*.json").is_err());
    }

    #[test]
    fn fast_lowercase_matches_std() {
        for s in ["Hello WORLD", "Ünïcödé ÅND ascii", "İstanbul", "ΟΔΟΣ x", ""] {
            assert_eq!(fast_lowercase(s), s.to_lowercase(), "{s}");
        }
    }

    #[test]
    fn ascii_case_insensitive() {
        assert!(contains_ascii_ci(b"Hello World", b"world"));
        assert!(!contains_ascii_ci(b"Hello", b"worlds"));
    }
}
