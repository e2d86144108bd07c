//! `search_package_files(query, glob="**/*", max_matches=40)`.
//!
//! The reference's rule (`reference-harness.md`): the query is split on
//! white space; a file matches when every term occurs in its first 300,000
//! characters, case-insensitively; the snippet is the first line holding any
//! term (stripped, cut at 420 characters with the truncation marker, as the
//! recorded runs show). Files are visited in path order; only text suffixes
//! are searched (plus content-sniffed text in [`ReadMode::Extended`]).
//!
//! Underneath: files are read only up to what 300,000 characters can take
//! and scanned in parallel with rayon. The first search of a file reads it
//! into a per-thread buffer that is reused from file to file, folds ASCII
//! case in small chunks while matching with `memchr::memmem` (exact for
//! ASCII terms unless the text holds one of the two non-ASCII characters
//! whose lower case is ASCII), and keeps only the file's size and
//! modification time. A second search of the same version keeps the
//! decoded window (up to [`WINDOW_CACHE_BYTES`]); it and later searches use
//! its lower-cased copy and a trigram filter. A changed file is read anew.
//! The snippet line is found from the first match's offset.

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
        super::run_blocking("search_package_files", move || {
            search_package(&ctx, &request, mode)
        })
        .await
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
    let matcher = match cached_glob(&request.glob) {
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
    let finders = TermFinders::new(&terms);
    let mut matches: Vec<(String, String)> = Vec::new();
    // Scan in order-preserving parallel chunks so a small `max_matches`
    // stops early on big trees.
    for chunk in candidates.chunks(64) {
        let found: Vec<Option<(String, String)>> = chunk
            .par_iter()
            .map(|(rel, abs)| match_file(abs, &finders).map(|snippet| (rel.clone(), snippet)))
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

/// Compiled globs kept between calls (an agent repeats a few patterns).
const GLOB_CACHE_LIMIT: usize = 256;

/// [`compile_glob`], kept for later calls with the same pattern.
fn cached_glob(pattern: &str) -> Result<globset::GlobMatcher, String> {
    static GLOBS: OnceLock<Mutex<HashMap<String, globset::GlobMatcher>>> = OnceLock::new();
    let globs = GLOBS.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(m) = globs.lock().ok().and_then(|g| g.get(pattern).cloned()) {
        return Ok(m);
    }
    let matcher = compile_glob(pattern)?;
    if let Ok(mut g) = globs.lock() {
        if g.len() >= GLOB_CACHE_LIMIT {
            g.clear();
        }
        g.insert(pattern.to_string(), matcher.clone());
    }
    Ok(matcher)
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
///
/// Directories are read in parallel (rayon), each with one `read_dir` and
/// the entry types it reports (no `stat` per file); the order comes from
/// the sort at the end, so it does not depend on the walk.
pub(crate) fn package_files(root: &Path) -> std::io::Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    walk_dir(root, "", &mut out)?;
    out.sort_by(|a, b| python_path_cmp(&a.0, &b.0));
    Ok(out)
}

/// Appends the files under `dir` (whose package-relative path is `rel`,
/// empty for the root) to `out`, reading its subdirectories in parallel.
fn walk_dir(dir: &Path, rel: &str, out: &mut Vec<(String, PathBuf)>) -> std::io::Result<()> {
    let mut subdirs: Vec<(String, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy().replace('\\', "/");
        if name.split('/').any(|c| hidden_artifact_name(c).is_some()) {
            continue;
        }
        let child_rel = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        // Symlinks are neither followed nor listed.
        let kind = entry.file_type()?;
        if kind.is_dir() {
            subdirs.push((child_rel, entry.path()));
        } else if kind.is_file() {
            out.push((child_rel, entry.path()));
        }
    }
    let found: Vec<std::io::Result<Vec<(String, PathBuf)>>> = subdirs
        .par_iter()
        .map(|(sub_rel, sub)| {
            let mut files = Vec::new();
            walk_dir(sub, sub_rel, &mut files).map(|()| files)
        })
        .collect();
    for files in found {
        out.extend(files?);
    }
    Ok(())
}

/// The searched window of one file, kept from its second search on, with
/// its lower-cased copy.
#[derive(Debug)]
struct Window {
    len: u64,
    modified: Option<std::time::SystemTime>,
    text: String,
    /// Whether `text` is ASCII, so its lower-cased copy has the same byte
    /// offsets.
    is_ascii: bool,
    /// Whether ASCII case folding of `text` finds exactly what a search in
    /// its Unicode lower-casing finds, for ASCII terms: true unless the text
    /// holds a non-ASCII character whose lower case has ASCII in it
    /// ([`LOWERS_TO_ASCII`]).
    ascii_fold_exact: bool,
    /// `text.to_lowercase()`, built on the first search of the kept window
    /// (the file's second search).
    lowered: OnceLock<String>,
    /// Hashed trigrams of `lowered`, built with it: a term with a trigram
    /// absent here cannot occur, so later searches reject most
    /// non-matching files without a scan.
    trigrams: OnceLock<Box<[u64; TRIGRAM_WORDS]>>,
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

/// The non-ASCII characters whose Unicode lower case contains ASCII
/// (U+0130 → "i\u{307}", U+212A KELVIN SIGN → "k"); a unit test checks the
/// list against every `char`.
const LOWERS_TO_ASCII: [char; 2] = ['\u{130}', '\u{212a}'];

impl Window {
    fn lowered(&self) -> &str {
        self.lowered.get_or_init(|| fast_lowercase(&self.text))
    }

    /// Bytes the cache charges for this window (its lower-cased copy
    /// counted up front).
    fn cache_size(&self) -> usize {
        2 * self.text.len() + TRIGRAM_WORDS * 8
    }
}

/// The compiled terms of one search: finders of the lower-cased terms.
struct TermFinders<'a> {
    terms: &'a [String],
    finders: Vec<memmem::Finder<'a>>,
    /// Every term is ASCII, so ASCII case folding can stand in for Unicode
    /// lower-casing on texts where that is exact.
    all_ascii: bool,
}

impl<'a> TermFinders<'a> {
    fn new(terms: &'a [String]) -> Self {
        Self {
            terms,
            finders: terms
                .iter()
                .map(|t| memmem::Finder::new(t.as_bytes()))
                .collect(),
            all_ascii: terms.iter().all(|t| t.is_ascii()),
        }
    }

    /// The earliest position of any term in `haystack` when every term
    /// occurs (searched as is).
    fn first_hit(&self, haystack: &[u8]) -> Option<usize> {
        let mut first = usize::MAX;
        for finder in &self.finders {
            first = first.min(finder.find(haystack)?);
        }
        Some(first)
    }

    /// Like [`Self::first_hit`] on the ASCII lower case of `haystack`,
    /// folded in small chunks (overlapping by a term's length) so the text
    /// is read once and no folded copy is kept.
    fn first_hit_ascii_folded(&self, haystack: &[u8]) -> Option<usize> {
        const CHUNK: usize = 32 * 1024;
        let longest = self.terms.iter().map(String::len).max().unwrap_or(0);
        let chunk = CHUNK.max(2 * longest);
        let mut found: Vec<Option<usize>> = vec![None; self.finders.len()];
        let mut folded = Vec::with_capacity(chunk);
        let mut start = 0;
        loop {
            let end = (start + chunk).min(haystack.len());
            folded.clear();
            folded.extend(haystack[start..end].iter().map(u8::to_ascii_lowercase));
            for (slot, finder) in found.iter_mut().zip(&self.finders) {
                if slot.is_none() {
                    *slot = finder.find(&folded).map(|p| start + p);
                }
            }
            if found.iter().all(Option::is_some) {
                return found.into_iter().flatten().min();
            }
            if end == haystack.len() {
                return None;
            }
            // The next chunk starts early enough that a term crossing the
            // boundary lies whole inside it.
            start = end + 1 - longest.max(1);
        }
    }
}

/// Bytes of decoded text kept by the window cache.
pub const WINDOW_CACHE_BYTES: usize = 256 << 20;

/// Files whose first search is remembered (by size and modification time
/// only) so that their second search keeps the window.
const SEEN_ONCE_LIMIT: usize = 1 << 20;

/// What identifies a version of a file: its size and modification time.
type Stamp = (u64, Option<std::time::SystemTime>);

struct WindowCache {
    entries: HashMap<PathBuf, Arc<Window>>,
    bytes: usize,
    /// Files searched once and not kept: the stamp they had then.
    seen_once: HashMap<PathBuf, Stamp>,
}

fn cache() -> &'static Mutex<WindowCache> {
    static CACHE: OnceLock<Mutex<WindowCache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(WindowCache {
            entries: HashMap::new(),
            bytes: 0,
            seen_once: HashMap::new(),
        })
    })
}

/// Empties the in-memory cache of decoded search windows and the record of
/// files searched once (benchmarks use it to measure cold calls).
pub fn clear_window_cache() {
    if let Ok(mut c) = cache().lock() {
        c.entries.clear();
        c.bytes = 0;
        c.seen_once.clear();
    }
}

/// Where a file's window comes from in this search.
enum Cached {
    /// Kept from an earlier search of the same version of the file.
    Window(Arc<Window>),
    /// The same version was searched once before: read it and keep it.
    SeenOnce,
    /// Not searched before (or changed since): read it into the thread's
    /// buffer and keep only its stamp.
    New,
}

/// What the cache holds for `path` at `stamp`.
fn lookup(path: &Path, stamp: Stamp) -> Cached {
    let Ok(c) = cache().lock() else {
        return Cached::New;
    };
    if let Some(w) = c.entries.get(path) {
        if (w.len, w.modified) == stamp {
            return Cached::Window(w.clone());
        }
    }
    match c.seen_once.get(path) {
        Some(seen) if *seen == stamp => Cached::SeenOnce,
        _ => Cached::New,
    }
}

/// Remembers that this version of `path` was searched once.
fn mark_seen_once(path: &Path, stamp: Stamp) {
    if let Ok(mut c) = cache().lock() {
        if c.seen_once.len() >= SEEN_ONCE_LIMIT {
            c.seen_once.clear();
        }
        c.seen_once.insert(path.to_path_buf(), stamp);
    }
}

/// Keeps a window in the cache, emptying it first when it would outgrow
/// [`WINDOW_CACHE_BYTES`].
fn keep_window(path: &Path, w: &Arc<Window>) {
    if let Ok(mut c) = cache().lock() {
        c.seen_once.remove(path);
        let size = w.cache_size();
        if c.bytes + size > WINDOW_CACHE_BYTES {
            c.entries.clear();
            c.bytes = 0;
        }
        if size <= WINDOW_CACHE_BYTES {
            c.bytes += size;
            if let Some(old) = c.entries.insert(path.to_path_buf(), w.clone()) {
                c.bytes -= old.cache_size();
            }
        }
    }
}

/// Whether ASCII case folding of `text` is exact (see
/// [`Window::ascii_fold_exact`]).
fn ascii_fold_exact(text: &str, is_ascii: bool) -> bool {
    is_ascii
        || !LOWERS_TO_ASCII.iter().any(|c| {
            let mut buf = [0u8; 4];
            memmem::find(text.as_bytes(), c.encode_utf8(&mut buf).as_bytes()).is_some()
        })
}

/// A window decoded into its own allocation, to be kept.
fn new_window(text: String, stamp: Stamp) -> Window {
    let is_ascii = text.is_ascii();
    Window {
        len: stamp.0,
        modified: stamp.1,
        ascii_fold_exact: ascii_fold_exact(&text, is_ascii),
        text,
        is_ascii,
        lowered: OnceLock::new(),
        trigrams: OnceLock::new(),
    }
}

thread_local! {
    /// The read buffer of first searches, reused from file to file so that
    /// a cold search over many files does not fault in fresh pages for
    /// each of them.
    static READ_BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
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
///
/// A file's first search reads its window into the thread's reused buffer
/// and keeps only its stamp; with ASCII terms it folds ASCII case on the
/// text (exact when [`Window::ascii_fold_exact`]). The second search of the
/// same version reads the window again and keeps it; from then on searches
/// use its lower-cased copy and trigram filter.
fn match_file(path: &Path, finders: &TermFinders<'_>) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    let stamp: Stamp = (meta.len(), meta.modified().ok());
    match lookup(path, stamp) {
        Cached::Window(w) => match_window(&w, finders),
        Cached::SeenOnce => {
            let w = Arc::new(new_window(window_text(path, stamp.0).ok()?, stamp));
            keep_window(path, &w);
            match_window(&w, finders)
        }
        Cached::New => {
            let found = READ_BUFFER.with(|buffer| {
                let mut bytes = buffer.borrow_mut();
                let known_plain = read_window(path, stamp.0, &mut bytes).ok()?;
                let (text, is_ascii) = decode_window(&bytes, known_plain);
                Some(match_first_search(&text, is_ascii, finders))
            });
            mark_seen_once(path, stamp);
            found?
        }
    }
}

/// A first search: on the window text, with no copy kept.
fn match_first_search(text: &str, is_ascii: bool, finders: &TermFinders<'_>) -> Option<String> {
    let terms = finders.terms;
    let ascii_fold = finders.all_ascii && ascii_fold_exact(text, is_ascii);
    if ascii_fold {
        let first_hit = finders.first_hit_ascii_folded(text.as_bytes())?;
        return Some(snippet(text, None, terms, first_hit, ascii_fold));
    }
    let lowered = fast_lowercase(text);
    let first_hit = finders.first_hit(lowered.as_bytes())?;
    let searched = (!is_ascii).then_some(lowered.as_str());
    Some(snippet(text, searched, terms, first_hit, ascii_fold))
}

/// A search of a kept window: trigram filter, then its lower-cased copy.
fn match_window(w: &Window, finders: &TermFinders<'_>) -> Option<String> {
    let terms = finders.terms;
    let ascii_fold = finders.all_ascii && w.ascii_fold_exact;
    let lowered = w.lowered();
    let set = w.trigrams.get_or_init(|| trigram_set(lowered.as_bytes()));
    if !terms.iter().all(|t| may_contain(set, t.as_bytes())) {
        return None;
    }
    let first_hit = finders.first_hit(lowered.as_bytes())?;
    let searched = (!w.is_ascii).then_some(lowered);
    Some(snippet(&w.text, searched, terms, first_hit, ascii_fold))
}

/// The first line of the window holding any term.
///
/// `first_hit` is the earliest term occurrence, as a byte offset into the
/// text itself (`searched` is `None`) or into its lower-cased copy (which
/// has the same line boundaries but, for non-ASCII text, other offsets).
/// That occurrence lies on the wanted line, so the line is found from it
/// instead of by testing every earlier line. The line is checked and,
/// should lower-casing a whole line differ from lower-casing the window
/// (context-dependent rules such as a final sigma), the plain line-by-line
/// test decides.
fn snippet(
    text: &str,
    searched: Option<&str>,
    terms: &[String],
    first_hit: usize,
    ascii_fold: bool,
) -> String {
    let line = match searched {
        None => python_lines(&text[line_start(text.as_bytes(), first_hit)..]).next(),
        Some(searched) => {
            let base = searched.as_ptr() as usize;
            python_lines(searched)
                .position(|line| line.as_ptr() as usize - base + line.len() >= first_hit)
                .and_then(|i| python_lines(text).nth(i))
        }
    };
    let holds = |line: &str| line_holds_any(line, terms, ascii_fold);
    match line {
        Some(line) if holds(line) => reference_truncate(python_strip(line), SNIPPET_LIMIT),
        _ => python_lines(text)
            .find(|line| holds(line))
            .map(|line| reference_truncate(python_strip(line), SNIPPET_LIMIT))
            .unwrap_or_default(),
    }
}

/// Start of the `str.splitlines()` line holding byte `at` of valid UTF-8
/// `text`: just after the last line boundary before it. U+0085 (C2 85) and
/// U+2028/U+2029 (E2 80 A8/A9) end in continuation bytes, recognised by
/// their lead bytes.
fn line_start(text: &[u8], at: usize) -> usize {
    let mut i = at.min(text.len());
    while i > 0 {
        let b = text[i - 1];
        let boundary = match b {
            b'\n' | b'\r' | 0x0b | 0x0c | 0x1c | 0x1d | 0x1e => true,
            0x85 => i >= 2 && text[i - 2] == 0xC2,
            0xA8 | 0xA9 => i >= 3 && text[i - 3] == 0xE2 && text[i - 2] == 0x80,
            _ => false,
        };
        if boundary {
            return i;
        }
        i -= 1;
    }
    0
}

/// Whether a line holds any (lower-cased) term: by ASCII case folding when
/// that is exact for the window and terms, else by Unicode lower-casing.
fn line_holds_any(line: &str, terms: &[String], ascii_fold: bool) -> bool {
    if ascii_fold || line.is_ascii() {
        terms
            .iter()
            .any(|t| contains_ascii_ci(line.as_bytes(), t.as_bytes()))
    } else {
        let low = line.to_lowercase();
        terms.iter().any(|t| low.contains(t.as_str()))
    }
}

fn contains_ascii_ci(haystack: &[u8], needle: &[u8]) -> bool {
    if needle.is_empty() {
        return true;
    }
    if !needle.is_ascii() || needle.len() > haystack.len() {
        return false;
    }
    // Candidates start where the first byte matches in either case.
    let (lower, upper) = (
        needle[0].to_ascii_lowercase(),
        needle[0].to_ascii_uppercase(),
    );
    let last = haystack.len() - needle.len();
    memchr::memchr2_iter(lower, upper, &haystack[..=last])
        .any(|i| haystack[i..i + needle.len()].eq_ignore_ascii_case(needle))
}

/// Keeps the first `max` characters of `text` ([`char_prefix_len`]).
fn truncate_chars(mut text: String, max: usize) -> String {
    let keep = char_prefix_len(&text, max);
    text.truncate(keep);
    text
}

/// Byte length of the first `max` characters of `text`, counting
/// characters a block at a time ([`char_starts`]).
fn char_prefix_len(text: &str, max: usize) -> usize {
    if text.len() <= max {
        return text.len();
    }
    const BLOCK: usize = 4096;
    let bytes = text.as_bytes();
    let mut chars = 0;
    let mut at = 0;
    while at + BLOCK <= bytes.len() {
        let block = char_starts(&bytes[at..at + BLOCK]);
        if chars + block > max {
            break;
        }
        chars += block;
        at += BLOCK;
    }
    // `at` is a char boundary only if the block ended on one, so finish
    // from the start of the char holding it.
    if !text.is_char_boundary(at) {
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        chars -= 1;
    }
    match text[at..].char_indices().nth(max - chars) {
        Some((i, _)) => at + i,
        None => text.len(),
    }
}

/// Reads as many bytes as the first 300,000 characters need: 300,000 bytes
/// when they are ASCII without `\r`, else more, a block at a time, until
/// the bytes surely decode to the window (at most 8 bytes per character).
///
/// The bytes replace what `bytes` held; its allocation is reused. Returns
/// whether the bytes were found to be ASCII without `\r` (false when not
/// checked).
fn read_window(path: &Path, len: u64, bytes: &mut Vec<u8>) -> std::io::Result<bool> {
    let mut file = std::fs::File::open(path)?;
    let first = (len as usize).min(SEARCH_WINDOW_CHARS);
    bytes.clear();
    bytes.reserve(first);
    (&mut file).take(first as u64).read_to_end(bytes)?;
    if len as usize <= first {
        return Ok(false);
    }
    if is_plain_ascii(bytes) {
        return Ok(true);
    }
    // A few characters beyond the window, so that a character or `\r\n`
    // cut at the end of the read cannot reach into it.
    let enough = SEARCH_WINDOW_CHARS + 4;
    let cap = SEARCH_WINDOW_CHARS * 8;
    let mut sure = chars_at_least(bytes);
    while sure < enough && bytes.len() < cap {
        let want = (enough - sure).max(64 << 10).min(cap - bytes.len());
        let before = bytes.len();
        (&mut file).take(want as u64).read_to_end(bytes)?;
        if bytes.len() == before {
            break;
        }
        sure += chars_at_least(&bytes[before..]);
    }
    Ok(false)
}

/// ASCII without `\r`: the bytes are their own decoded text, one
/// character a byte.
fn is_plain_ascii(bytes: &[u8]) -> bool {
    bytes.is_ascii() && memchr::memchr(b'\r', bytes).is_none()
}

/// A lower bound on the characters [`decode_python_text`] makes of these
/// bytes: every character, and every replacement of an invalid sequence,
/// holds exactly one byte that is not a UTF-8 continuation byte, and
/// universal newlines turn each `\r\n` into one character.
fn chars_at_least(bytes: &[u8]) -> usize {
    char_starts(bytes).saturating_sub(memchr::memchr_iter(b'\r', bytes).count())
}

/// Bytes that are not UTF-8 continuation bytes (`10xxxxxx`): the number of
/// characters of valid UTF-8.
fn char_starts(bytes: &[u8]) -> usize {
    bytes.iter().filter(|b| (**b as i8) >= -0x40).count()
}

/// The searched window of a file: its first 300,000 characters, decoded
/// as the reference does, in its own allocation.
fn window_text(path: &Path, len: u64) -> std::io::Result<String> {
    let mut bytes = Vec::new();
    read_window(path, len, &mut bytes)?;
    // The common case (UTF-8 without `\r`) keeps the read buffer as the text.
    Ok(match String::from_utf8(bytes) {
        Ok(s) if memchr::memchr(b'\r', s.as_bytes()).is_none() => {
            truncate_chars(s, SEARCH_WINDOW_CHARS)
        }
        Ok(s) => truncate_chars(decode_python_text(s.as_bytes()), SEARCH_WINDOW_CHARS),
        Err(e) => truncate_chars(decode_python_text(e.as_bytes()), SEARCH_WINDOW_CHARS),
    })
}

/// The window of bytes read by [`read_window`], decoded as
/// [`window_text`] does, and whether it is ASCII: borrowed from the bytes
/// in the common case (UTF-8 without `\r`). `known_plain` is what
/// [`read_window`] returned.
fn decode_window(bytes: &[u8], known_plain: bool) -> (std::borrow::Cow<'_, str>, bool) {
    use std::borrow::Cow;
    if known_plain || is_plain_ascii(bytes) {
        let ascii = &bytes[..bytes.len().min(SEARCH_WINDOW_CHARS)];
        if let Ok(text) = std::str::from_utf8(ascii) {
            return (Cow::Borrowed(text), true);
        }
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(s) if memchr::memchr(b'\r', bytes).is_none() => {
            Cow::Borrowed(&s[..char_prefix_len(s, SEARCH_WINDOW_CHARS)])
        }
        _ => Cow::Owned(truncate_chars(
            decode_python_text(bytes),
            SEARCH_WINDOW_CHARS,
        )),
    };
    let is_ascii = text.is_ascii();
    (text, is_ascii)
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

    proptest::proptest! {
        #[test]
        fn truncate_chars_keeps_max_chars(text in "[a-zé€\u{10348}\n]{0,12000}", max in 0usize..9000) {
            let expected: String = text.chars().take(max).collect();
            proptest::prop_assert_eq!(truncate_chars(text.clone(), max), expected);
        }

        #[test]
        fn line_start_matches_splitlines(text in "[ab\n\r\u{85}\u{2028}\u{2029}\u{a8}\u{2027}é]{0,40}", at in 0usize..200) {
            // Byte `at` (clamped to a char boundary) lies on the line that
            // splitlines gives for it.
            let mut at = at.min(text.len());
            while !text.is_char_boundary(at) { at -= 1; }
            let start = line_start(text.as_bytes(), at);
            let base = text.as_ptr() as usize;
            let expected = python_lines(&text)
                .map(|l| l.as_ptr() as usize - base)
                .filter(|s| *s <= at)
                .last()
                .unwrap_or(0);
            // A boundary sequence itself belongs to no line: only compare
            // when `at` is inside or at the end of a line.
            let on_line = python_lines(&text).any(|l| {
                let s = l.as_ptr() as usize - base;
                s <= at && at <= s + l.len()
            });
            if on_line {
                proptest::prop_assert_eq!(start, expected);
            }
        }
    }

    /// The window read a block at a time equals the first 300,000
    /// characters of the whole file decoded, for files where characters
    /// take 1 to 4 bytes, `\r\n` pairs and invalid bytes sit anywhere,
    /// including across the ends of blocks.
    #[test]
    fn window_equals_prefix_of_whole_decode() {
        let dir = std::env::temp_dir().join(format!("ev-window-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pieces: [&[u8]; 8] = [
            b"plain ascii text ",
            "é".as_bytes(),
            "€".as_bytes(),
            "\u{10348}".as_bytes(),
            b"\r\n",
            b"\r",
            b"\xff\xe2\x82",
            b"\x80",
        ];
        let mut state = 2026u64;
        for case in 0..12 {
            let mut bytes = Vec::new();
            // Mostly one piece per file, so each file has its own density.
            let main = case % pieces.len();
            while bytes.len() < 1_400_000 + case * 37_000 {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let pick = if (state >> 33) % 4 == 0 {
                    ((state >> 40) as usize) % pieces.len()
                } else {
                    main
                };
                bytes.extend_from_slice(pieces[pick]);
            }
            let path = dir.join(format!("f{case}.txt"));
            std::fs::write(&path, &bytes).unwrap();
            let whole = decode_python_text(&bytes);
            let expected: String = whole.chars().take(SEARCH_WINDOW_CHARS).collect();
            let got = window_text(&path, bytes.len() as u64).unwrap();
            assert_eq!(got.chars().count(), expected.chars().count(), "case {case}");
            assert!(
                got == expected,
                "case {case}: window differs from the whole decode"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn lowers_to_ascii_lists_every_such_char() {
        let found: Vec<char> = (0x80..=0x10FFFF)
            .filter_map(char::from_u32)
            .filter(|c| c.to_lowercase().any(|l| l.is_ascii()))
            .collect();
        assert_eq!(found, LOWERS_TO_ASCII);
    }

    /// Tests that read or empty the process-wide window cache run one at a
    /// time.
    fn cache_test_lock() -> std::sync::MutexGuard<'static, ()> {
        static LOCK: Mutex<()> = Mutex::new(());
        LOCK.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn state(path: &Path) -> &'static str {
        let meta = std::fs::metadata(path).unwrap();
        match lookup(path, (meta.len(), meta.modified().ok())) {
            Cached::Window(_) => "window",
            Cached::SeenOnce => "seen once",
            Cached::New => "new",
        }
    }

    /// The first search (thread buffer, ASCII folding on the text), the
    /// second (window read again and kept) and the third (kept window,
    /// lower-cased copy, trigrams) give the same answers, and the
    /// definition's.
    #[test]
    fn first_and_repeated_searches_agree() {
        let _lock = cache_test_lock();
        let dir = std::env::temp_dir().join(format!("ev-search-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases = [
            (
                "a.txt",
                "Intro\nHeavy PRECIPITATION fell\nmore precipitation",
            ),
            ("b.txt", "ΣΟΦΙΑ\nStraße Precipitation é\n"),
            ("c.txt", "no match here\n"),
            ("d.txt", "\u{212a}elvin line\nkelvin later\n"),
            ("e.txt", "first \u{130}stanbul\nthen istanbul\n"),
            ("f.txt", "crlf line\r\nPrecipitation after crlf\r\n"),
        ];
        for (name, body) in cases {
            std::fs::write(dir.join(name), body).unwrap();
        }
        for query in [
            "precipitation",
            "precipitation heavy",
            "kelvin",
            "i\u{307}stanbul",
            "straße",
            "σοφια",
            "crlf",
        ] {
            let terms: Vec<String> = query.split_whitespace().map(str::to_string).collect();
            let finders = TermFinders::new(&terms);
            for (name, body) in cases {
                clear_window_cache();
                let path = dir.join(name);
                let first = match_file(&path, &finders);
                let second = match_file(&path, &finders);
                let third = match_file(&path, &finders);
                assert_eq!(first, second, "{name} {query}");
                assert_eq!(first, third, "{name} {query}");
                // The definition: every term in the lower-cased window, and
                // the first line whose lower case holds a term.
                let body = body.replace("\r\n", "\n");
                let low = body.to_lowercase();
                let expected = terms.iter().all(|t| low.contains(t.as_str())).then(|| {
                    python_lines(&body)
                        .find(|l| terms.iter().any(|t| l.to_lowercase().contains(t.as_str())))
                        .map(|l| python_strip(l).to_string())
                        .unwrap_or_default()
                });
                assert_eq!(first, expected, "{name} {query}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A first search keeps only the stamp, the second keeps the window,
    /// and a file changed since is read again with its new text.
    #[test]
    fn a_window_is_kept_from_the_second_search_and_a_changed_file_is_read_again() {
        let _lock = cache_test_lock();
        let dir = std::env::temp_dir().join(format!("ev-search-keep-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("report.txt");
        std::fs::write(&path, "Intro\nHeavy rain fell\n").unwrap();
        let terms = vec!["rain".to_string()];
        let finders = TermFinders::new(&terms);
        clear_window_cache();
        assert_eq!(state(&path), "new");
        assert_eq!(
            match_file(&path, &finders).as_deref(),
            Some("Heavy rain fell")
        );
        assert_eq!(state(&path), "seen once");
        assert_eq!(
            match_file(&path, &finders).as_deref(),
            Some("Heavy rain fell")
        );
        assert_eq!(state(&path), "window");
        // A new size makes a new version: the kept window is not used.
        std::fs::write(&path, "Intro\nno more of it here, only sun\nrain later\n").unwrap();
        assert_eq!(state(&path), "new");
        assert_eq!(match_file(&path, &finders).as_deref(), Some("rain later"));
        assert_eq!(state(&path), "seen once");
        clear_window_cache();
        assert_eq!(state(&path), "new");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The borrowed decoding of first searches equals the owned one of
    /// kept windows.
    #[test]
    fn decode_window_equals_window_text() {
        let dir = std::env::temp_dir().join(format!("ev-decode-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let bodies: [Vec<u8>; 4] = [
            "é".repeat(SEARCH_WINDOW_CHARS + 10).into_bytes(),
            b"a\r\nb".repeat(100_000),
            b"ok \xff bad".repeat(40_000),
            b"short".to_vec(),
        ];
        for (i, body) in bodies.iter().enumerate() {
            let path = dir.join(format!("{i}.txt"));
            std::fs::write(&path, body).unwrap();
            let mut bytes = b"left over from another file".to_vec();
            let known_plain = read_window(&path, body.len() as u64, &mut bytes).unwrap();
            let owned = window_text(&path, body.len() as u64).unwrap();
            let (text, is_ascii) = decode_window(&bytes, known_plain);
            assert_eq!(text, owned.as_str(), "body {i}");
            assert_eq!(is_ascii, owned.is_ascii(), "body {i}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn ascii_case_insensitive() {
        assert!(contains_ascii_ci(b"Hello World", b"world"));
        assert!(!contains_ascii_ci(b"Hello", b"worlds"));
    }
}
