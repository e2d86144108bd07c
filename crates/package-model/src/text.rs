//! Text extraction by sniffed kind: HTML to text (scripts and styles
//! dropped), XML to text, PDF to text, JSON/CSV/text as UTF-8 with bad bytes
//! replaced. Never panics, whatever the bytes.

use crate::sniff::{sniff_bytes, FileKind};
use std::path::Path;

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

/// HTML to plain text, dropping `<script>`, `<style>`, `<noscript>`,
/// `<template>` and other raw-text elements, decoding character
/// references, collapsing runs of whitespace and breaking lines at block
/// elements. Built on the `html5ever` tokenizer (the WHATWG tokenizer of
/// Servo) without building a tree, which is what makes it fast.
pub fn html_to_text(bytes: &[u8]) -> String {
    let source = lossy_utf8(bytes);
    let source = drop_raw_text_bodies(&source);
    let rendered = std::panic::catch_unwind(|| html_tokens_to_text(&source));
    match rendered {
        Ok(text) => text,
        Err(_) => {
            tracing::warn!("HTML tokenizer panicked; falling back to tag stripping");
            strip_tags(&source)
        }
    }
}

/// Removes the bodies of `<script>` and `<style>` elements (keeping the
/// tags) with a byte scan, so the tokenizer does not walk them character by
/// character; pages of the release are often mostly inline script.
fn drop_raw_text_bodies(source: &str) -> std::borrow::Cow<'_, str> {
    let bytes = source.as_bytes();
    let lower = bytes.to_ascii_lowercase();
    let open_finder = memchr::memmem::Finder::new(b"<s");
    let mut out: Option<String> = None;
    let mut copied_to = 0;
    let mut search_from = 0;
    while let Some(found) = open_finder.find(&lower[search_from..]) {
        let tag_start = search_from + found;
        search_from = tag_start + 2;
        let rest = &lower[tag_start + 1..];
        let name: &[u8] = if rest.starts_with(b"script") {
            b"script"
        } else if rest.starts_with(b"style") {
            b"style"
        } else {
            continue;
        };
        let after_name = tag_start + 1 + name.len();
        match lower.get(after_name) {
            Some(b) if b.is_ascii_whitespace() || *b == b'>' || *b == b'/' => {}
            _ => continue,
        }
        let Some(tag_end) = memchr::memchr(b'>', &lower[after_name..]).map(|e| after_name + e + 1)
        else {
            break;
        };
        if lower[tag_end - 2] == b'/' {
            search_from = tag_end;
            continue;
        }
        let mut close = Vec::with_capacity(name.len() + 2);
        close.extend_from_slice(b"</");
        close.extend_from_slice(name);
        let Some(close_at) = memchr::memmem::find(&lower[tag_end..], &close).map(|c| tag_end + c)
        else {
            break;
        };
        let buffer = out.get_or_insert_with(|| String::with_capacity(source.len()));
        buffer.push_str(&source[copied_to..tag_end]);
        copied_to = close_at;
        search_from = close_at;
    }
    match out {
        Some(mut buffer) => {
            buffer.push_str(&source[copied_to..]);
            std::borrow::Cow::Owned(buffer)
        }
        None => std::borrow::Cow::Borrowed(source),
    }
}

fn html_tokens_to_text(source: &str) -> String {
    use html5ever::tendril::StrTendril;
    use html5ever::tokenizer::{BufferQueue, Tokenizer, TokenizerOpts, TokenizerResult};
    let sink = HtmlTextSink {
        out: std::cell::RefCell::new(String::with_capacity(source.len() / 3)),
        skipping: std::cell::Cell::new(false),
        pending_space: std::cell::Cell::new(false),
    };
    let tokenizer = Tokenizer::new(sink, TokenizerOpts::default());
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(source));
    while let TokenizerResult::Script(()) = tokenizer.feed(&input) {}
    tokenizer.end();
    let mut text = tokenizer.sink.out.take();
    let trimmed_len = text.trim_end().len();
    text.truncate(trimmed_len);
    text
}

struct HtmlTextSink {
    out: std::cell::RefCell<String>,
    skipping: std::cell::Cell<bool>,
    pending_space: std::cell::Cell<bool>,
}

impl HtmlTextSink {
    fn newline(&self) {
        let mut out = self.out.borrow_mut();
        let kept = out.trim_end_matches([' ', '\t']).len();
        out.truncate(kept);
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        self.pending_space.set(false);
    }

    fn push_text(&self, text: &str) {
        let mut out = self.out.borrow_mut();
        let mut pending = self.pending_space.get();
        for word in text.split(|c: char| c.is_whitespace()) {
            if word.is_empty() {
                pending = true;
                continue;
            }
            if pending && !out.is_empty() && !out.ends_with('\n') {
                out.push(' ');
            }
            out.push_str(word);
            pending = true;
        }
        // `split` yields a last piece after the final separator; a text that
        // does not end in whitespace leaves no pending space.
        if !text.ends_with(|c: char| c.is_whitespace()) {
            pending = false;
        }
        self.pending_space.set(pending);
    }
}

/// Elements whose content is not text for a reader.
fn is_skipped_element(name: &str) -> bool {
    matches!(
        name,
        "script" | "style" | "noscript" | "template" | "iframe" | "noembed" | "noframes" | "xmp"
    )
}

/// Elements that start and end a line.
fn is_block_element(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "br"
            | "li"
            | "ul"
            | "ol"
            | "dl"
            | "dt"
            | "dd"
            | "tr"
            | "table"
            | "thead"
            | "tbody"
            | "tfoot"
            | "caption"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "footer"
            | "section"
            | "article"
            | "aside"
            | "nav"
            | "main"
            | "blockquote"
            | "pre"
            | "hr"
            | "form"
            | "fieldset"
            | "figure"
            | "figcaption"
            | "address"
            | "title"
            | "option"
            | "body"
            | "html"
            | "head"
    )
}

impl html5ever::tokenizer::TokenSink for HtmlTextSink {
    type Handle = ();

    fn process_token(
        &self,
        token: html5ever::tokenizer::Token,
        _line_number: u64,
    ) -> html5ever::tokenizer::TokenSinkResult<()> {
        use html5ever::tokenizer::states::RawKind;
        use html5ever::tokenizer::{TagKind, Token, TokenSinkResult};
        match token {
            Token::TagToken(tag) => {
                let name: &str = &tag.name;
                match tag.kind {
                    TagKind::StartTag => {
                        if is_skipped_element(name) {
                            if !tag.self_closing {
                                self.skipping.set(true);
                            }
                            return TokenSinkResult::RawData(if name == "script" {
                                RawKind::ScriptData
                            } else {
                                RawKind::Rawtext
                            });
                        }
                        if is_block_element(name) {
                            self.newline();
                        } else if matches!(name, "td" | "th") {
                            self.push_text(" ");
                        }
                        if matches!(name, "title" | "textarea") {
                            return TokenSinkResult::RawData(RawKind::Rcdata);
                        }
                        if name == "plaintext" {
                            return TokenSinkResult::Plaintext;
                        }
                    }
                    TagKind::EndTag => {
                        if is_skipped_element(name) {
                            self.skipping.set(false);
                        } else if is_block_element(name) {
                            self.newline();
                        } else if matches!(name, "td" | "th") {
                            self.push_text(" ");
                        }
                    }
                }
            }
            Token::CharacterTokens(text) if !self.skipping.get() => self.push_text(&text),
            _ => {}
        }
        TokenSinkResult::Continue
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

/// PDF to text via `pdf-extract` (run under `catch_unwind`). When the crate
/// cannot read the file (the release has PDFs cut short, without their
/// cross-reference table) or finds no text, the content streams are
/// salvaged directly: inflated and scanned for text operators.
pub fn pdf_to_text(bytes: &[u8]) -> String {
    let owned = bytes.to_vec();
    let parsed = match std::panic::catch_unwind(move || pdf_extract::extract_text_from_mem(&owned))
    {
        Ok(Ok(text)) => text,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "PDF parser failed; salvaging content streams");
            String::new()
        }
        Err(_) => {
            tracing::warn!("PDF parser panicked; salvaging content streams");
            String::new()
        }
    };
    if !parsed.trim().is_empty() {
        return parsed;
    }
    std::panic::catch_unwind(|| crate::pdf_salvage::salvage_text(bytes)).unwrap_or_default()
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
    fn html_blocks_entities_and_raw_text() {
        let html = b"<title>T&eacute;st</title><div>one\n   two</div><p>three<br>four</p>\
                     <table><tr><td>a</td><td>b</td></tr></table><noscript>no</noscript>\
                     <script>if (a < b) { document.write('</div>x'); }</script>after";
        let text = html_to_text(html);
        assert_eq!(text, "T\u{e9}st\none two\nthree\nfour\na b\nafter");
        assert_eq!(
            html_to_text(b"plain &lt;text&gt; only"),
            "plain <text> only"
        );
        assert_eq!(html_to_text(b""), "");
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
        assert_eq!(
            extract_text(b"%PDF-1.4 stream\nBT (salvaged) Tj ET", FileKind::Pdf),
            "salvaged\n"
        );
        assert_eq!(extract_text(b"\xFF\xD8\xFF", FileKind::Jpeg), "");
        assert_eq!(strip_tags("a<script>x</script>b<i>c</i>"), "a b c ");
    }
}
