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
        // Byte scan: every boundary starts with an ASCII byte or with the
        // UTF-8 lead byte 0xC2 (U+0085) or 0xE2 (U+2028, U+2029), which are
        // never continuation bytes, so each cut is a char boundary.
        let bytes = rest.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let width = match bytes[i] {
                b'\n' | 0x0b | 0x0c | 0x1c | 0x1d | 0x1e => 1,
                b'\r' => {
                    if bytes.get(i + 1) == Some(&b'\n') {
                        2
                    } else {
                        1
                    }
                }
                0xC2 if bytes.get(i + 1) == Some(&0x85) => 2,
                0xE2 if bytes.get(i + 1) == Some(&0x80)
                    && matches!(bytes.get(i + 2), Some(0xA8 | 0xA9)) =>
                {
                    3
                }
                _ => {
                    i += 1;
                    continue;
                }
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
    use proptest::prelude::Strategy;

    #[test]
    fn splitlines_like_python() {
        let v: Vec<&str> = python_lines("a\nb\r\nc\rd\u{2028}e\n").collect();
        assert_eq!(v, vec!["a", "b", "c", "d", "e"]);
        let v: Vec<&str> = python_lines("a\n\nb").collect();
        assert_eq!(v, vec!["a", "", "b"]);
    }

    /// The char-by-char definition the byte scan must agree with.
    fn python_lines_by_char(text: &str) -> Vec<&str> {
        let mut out = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let cut = rest.char_indices().find_map(|(i, c)| match c {
                '\r' if rest[i + 1..].starts_with('\n') => Some((i, 2)),
                '\r' | '\n' | '\x0b' | '\x0c' | '\x1c' | '\x1d' | '\x1e' | '\u{85}'
                | '\u{2028}' | '\u{2029}' => Some((i, c.len_utf8())),
                _ => None,
            });
            match cut {
                Some((i, w)) => {
                    out.push(&rest[..i]);
                    rest = &rest[i + w..];
                }
                None => {
                    out.push(rest);
                    rest = "";
                }
            }
        }
        out
    }

    proptest::proptest! {
        #[test]
        fn byte_scan_splits_like_chars(parts in proptest::collection::vec(
            proptest::prop_oneof![
                proptest::string::string_regex("[a-zé©€ą\u{80}-\u{ff}]{0,6}").unwrap(),
                proptest::sample::select(vec!["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d",
                    "\x1e", "\x1f", "\u{85}", "\u{2028}", "\u{2029}", "\u{2027}", "\u{20ac}"]).prop_map(String::from),
            ], 0..12)) {
            let text = parts.concat();
            let fast: Vec<&str> = python_lines(&text).collect();
            proptest::prop_assert_eq!(fast, python_lines_by_char(&text));
        }
    }

    #[test]
    fn newlines_are_universal() {
        assert_eq!(decode_python_text(b"a\r\nb\rc"), "a\nb\nc");
    }
}
