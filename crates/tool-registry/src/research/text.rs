//! Reading files as text the way the reference did (`Path.read_text` with
//! universal newlines, undecodable bytes replaced), without loading more of
//! a file than needed.

use earthverse_package_model::sniff::{sniff_file, FileKind};
use std::io::Read;
use std::path::Path;

/// Suffixes the reference reads as text (`reference-harness.md`).
pub const TEXT_SUFFIXES: [&str; 10] = [
    ".json", ".csv", ".md", ".txt", ".html", ".htm", ".xml", ".geojson", ".yml", ".yaml",
];

/// Whether a lower-cased suffix is one the reference reads as text.
pub(crate) fn is_text_suffix(suffix: &str) -> bool {
    TEXT_SUFFIXES.contains(&suffix)
}

/// How file tools treat files whose suffix the reference refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ReadMode {
    /// Exactly the reference: only text suffixes are read or searched.
    Reference,
    /// Also read files whose *content* is text (JSON in `.bin`, HTML in
    /// `.0`/`.php`/`.aspx`, text in `.data`), judged by package-model's
    /// sniffer, with a warning naming the sniffed kind.
    #[default]
    Extended,
}

/// Decides whether a file is read as text; returns the sniffed kind when the
/// decision came from content rather than suffix.
pub(crate) fn text_decision(
    mode: ReadMode,
    suffix: &str,
    absolute: &Path,
) -> Option<Option<FileKind>> {
    if is_text_suffix(suffix) {
        return Some(None);
    }
    if mode == ReadMode::Reference {
        return None;
    }
    match sniff_file(absolute) {
        Ok(
            kind @ (FileKind::Json
            | FileKind::Html
            | FileKind::Xml
            | FileKind::Csv
            | FileKind::Text
            | FileKind::Pdf),
        ) => Some(Some(kind)),
        _ => None,
    }
}

/// Python's text-mode decoding: UTF-8 with replacement, `\r\n` and `\r`
/// turned into `\n`.
pub(crate) fn decode_python_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    if !text.contains('\r') {
        return text.into_owned();
    }
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// Reads the first `max_chars` characters of a file (or all of it), reading
/// at most `8 * max_chars` bytes. Returns the text and whether the file has
/// more characters than returned.
pub(crate) fn read_text_prefix(path: &Path, max_chars: usize) -> std::io::Result<(String, bool)> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let budget = (max_chars as u64).saturating_mul(8).saturating_add(8);
    let mut bytes = Vec::with_capacity(len.min(budget) as usize);
    file.take(budget).read_to_end(&mut bytes)?;
    let partial = (bytes.len() as u64) < len;
    let text = decode_python_text(&bytes);
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => Ok((text[..cut].to_string(), true)),
        None => Ok((text, partial)),
    }
}

/// Python's `str.splitlines()` line boundaries.
pub(crate) fn python_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        for (i, c) in rest.char_indices() {
            let width = match c {
                '\r' => {
                    if rest[i + 1..].starts_with('\n') {
                        2
                    } else {
                        1
                    }
                }
                '\n' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}' | '\u{2028}'
                | '\u{2029}' => c.len_utf8(),
                _ => continue,
            };
            let line = &rest[..i];
            rest = &rest[i + width..];
            return Some(line);
        }
        let line = rest;
        rest = "";
        Some(line)
    })
}

/// Python's `str.strip()` (Unicode white space).
pub(crate) fn python_strip(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn splitlines_like_python() {
        let v: Vec<&str> = python_lines("a\nb\r\nc\rd\u{2028}e\n").collect();
        assert_eq!(v, vec!["a", "b", "c", "d", "e"]);
        let v: Vec<&str> = python_lines("a\n\nb").collect();
        assert_eq!(v, vec!["a", "", "b"]);
    }

    #[test]
    fn newlines_are_universal() {
        assert_eq!(decode_python_text(b"a\r\nb\rc"), "a\nb\nc");
    }
}
