//! Text extraction by sniffed kind: HTML to text (scripts and styles
//! dropped), XML to text, PDF to text, JSON/CSV/text as UTF-8 with bad bytes
//! replaced. Never panics, whatever the bytes.

use crate::sniff::{sniff_bytes, FileKind};
use std::path::Path;

/// Width used when rendering HTML to text (wide, so lines are not wrapped).
const HTML_RENDER_WIDTH: usize = 10_000;

/// Extracts the readable text of `bytes` of the given kind. Images and
/// other binaries give an empty string; a zip gives the list of its members.
pub fn extract_text(bytes: &[u8], kind: FileKind) -> String {
    match kind {
        FileKind::Html => html_to_text(bytes),
        FileKind::Xml => xml_to_text(bytes),
        FileKind::Pdf => pdf_to_text(bytes),
        FileKind::Json | FileKind::Csv | FileKind::Text => lossy_utf8(bytes),
        FileKind::Zip | FileKind::ZipShapefile => zip_listing(bytes),
        _ => String::new(),
    }
}

/// Reads a file, sniffs it and extracts its text.
pub fn read_text_file(path: &Path) -> crate::Result<(FileKind, String)> {
    let bytes = std::fs::read(path).map_err(|e| crate::PackageError::io(path, e))?;
    let kind = sniff_bytes(&bytes);
    let text = extract_text(&bytes, kind);
    Ok((kind, text))
}

/// UTF-8 with invalid sequences replaced by U+FFFD and a leading BOM removed.
pub fn lossy_utf8(bytes: &[u8]) -> String {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    String::from_utf8_lossy(bytes).into_owned()
}

/// HTML to plain text, dropping `<script>`, `<style>` and other non-content
/// elements (via the `html2text` crate).
pub fn html_to_text(bytes: &[u8]) -> String {
    let rendered = std::panic::catch_unwind(|| {
        html2text::config::plain()
            .string_from_read(bytes, HTML_RENDER_WIDTH)
            .ok()
    });
    match rendered {
        Ok(Some(text)) => text,
        _ => {
            tracing::warn!("HTML rendering failed; falling back to tag stripping");
            strip_tags(&lossy_utf8(bytes))
        }
    }
}

/// The text content of an XML document: character data and CDATA, one
/// element's text per line. Malformed XML degrades to tag stripping.
pub fn xml_to_text(bytes: &[u8]) -> String {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_reader(bytes);
    reader.config_mut().check_end_names = false;
    let mut buf = Vec::new();
    let mut out = String::new();
    loop {
        match reader.read_event_into(&mut buf) {
            Ok(Event::Text(t)) => {
                let raw = String::from_utf8_lossy(t.as_ref()).into_owned();
                let text = quick_xml::escape::unescape(&raw)
                    .map(|c| c.into_owned())
                    .unwrap_or(raw);
                push_line(&mut out, &text);
            }
            Ok(Event::CData(t)) => push_line(&mut out, &String::from_utf8_lossy(t.as_ref())),
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(_) => {
                // Keep what was read, and strip the rest crudely.
                let consumed = usize::try_from(reader.buffer_position())
                    .unwrap_or(bytes.len())
                    .min(bytes.len());
                push_line(&mut out, &strip_tags(&lossy_utf8(&bytes[consumed..])));
                break;
            }
        }
        buf.clear();
    }
    out
}

fn push_line(out: &mut String, text: &str) {
    let trimmed = text.trim();
    if !trimmed.is_empty() {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(trimmed);
    }
}

/// PDF to text via `pdf-extract`; a PDF the crate cannot read (or on which
/// it panics) gives an empty string.
pub fn pdf_to_text(bytes: &[u8]) -> String {
    let owned = bytes.to_vec();
    match std::panic::catch_unwind(move || pdf_extract::extract_text_from_mem(&owned)) {
        Ok(Ok(text)) => text,
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "PDF text extraction failed");
            String::new()
        }
        Err(_) => {
            tracing::warn!("PDF text extraction panicked");
            String::new()
        }
    }
}

fn zip_listing(bytes: &[u8]) -> String {
    match zip::ZipArchive::new(std::io::Cursor::new(bytes)) {
        Ok(archive) => {
            let mut names: Vec<&str> = archive.file_names().collect();
            names.sort_unstable();
            let mut out = String::from("zip archive members:\n");
            for name in names {
                out.push_str(name);
                out.push('\n');
            }
            out
        }
        Err(_) => String::new(),
    }
}

/// Removes `<...>` tags and the content of `<script>`/`<style>` elements.
fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len() / 2);
    let lower = text.to_ascii_lowercase();
    let mut i = 0;
    while i < text.len() {
        let rest = &lower[i..];
        if rest.starts_with("<script") || rest.starts_with("<style") {
            let close = if rest.starts_with("<script") {
                "</script"
            } else {
                "</style"
            };
            match rest.find(close) {
                Some(end) => {
                    i += end;
                    continue;
                }
                None => break,
            }
        }
        if rest.starts_with('<') {
            match rest.find('>') {
                Some(end) => {
                    i += end + 1;
                    out.push(' ');
                    continue;
                }
                None => break,
            }
        }
        let next = rest.find('<').map_or(text.len(), |p| i + p);
        out.push_str(&text[i..next]);
        i = next;
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn html_drops_scripts_and_styles() {
        let html = b"<html><head><style>p{color:red}</style><script>var secret=1;</script></head>\
                     <body><h1>Flood</h1><p>Peak 3.2&nbsp;m &amp; rising</p></body></html>";
        let text = extract_text(html, FileKind::Html);
        assert!(text.contains("Flood"), "{text}");
        assert!(text.contains("Peak 3.2"), "{text}");
        assert!(text.contains("& rising"), "{text}");
        assert!(!text.contains("secret"), "{text}");
        assert!(!text.contains("color"), "{text}");
    }

    #[test]
    fn xml_text_and_fallback() {
        let xml = b"<?xml version=\"1.0\"?><rss><item><title>Quake &amp; tsunami</title><![CDATA[M7.8]]></item></rss>";
        let text = extract_text(xml, FileKind::Xml);
        assert_eq!(text, "Quake & tsunami\nM7.8");
        let broken = b"<a><b>one</b><c>two</a> <<<>";
        let text = extract_text(broken, FileKind::Xml);
        assert!(text.contains("one"), "{text}");
    }

    #[test]
    fn lossy_text_and_bad_pdf() {
        assert_eq!(
            extract_text(b"\xEF\xBB\xBFa\xFFb", FileKind::Text),
            "a\u{FFFD}b"
        );
        assert_eq!(extract_text(b"%PDF-1.4 garbage", FileKind::Pdf), "");
        assert_eq!(extract_text(b"\xFF\xD8\xFF", FileKind::Jpeg), "");
        assert_eq!(strip_tags("a<script>x</script>b<i>c</i>"), "a b c ");
    }
}
