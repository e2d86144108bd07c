//! Text from PDFs that a full parser cannot open (the release has PDFs cut
//! at 1 MB or 3 MiB, without a cross-reference table): scan for content
//! streams, inflate them (a stream cut short still yields its head), and
//! read the strings shown by the text operators `Tj`, `TJ`, `'` and `"`.
//! Literal strings are read as Latin-1; hex strings only when they decode
//! to printable ASCII (glyph ids of CID fonts cannot be mapped without the
//! font's CMap).

use std::io::Read;

/// Largest inflated size read from one stream.
const MAX_STREAM_BYTES: u64 = 16 * 1024 * 1024;

/// Best-effort text of a damaged PDF.
pub(crate) fn salvage_text(bytes: &[u8]) -> String {
    let mut out = String::new();
    let mut position = 0;
    while let Some(found) = memchr::memmem::find(&bytes[position..], b"stream") {
        let keyword = position + found;
        let mut start = keyword + b"stream".len();
        position = start;
        // `endstream` also contains `stream`; only `stream` + EOL opens one.
        if keyword >= 3 && &bytes[keyword - 3..keyword] == b"end" {
            continue;
        }
        match bytes.get(start..start + 2) {
            Some(b"\r\n") => start += 2,
            Some([b'\n', _]) | Some([b'\r', _]) => start += 1,
            _ => continue,
        }
        let end =
            memchr::memmem::find(&bytes[start..], b"endstream").map_or(bytes.len(), |e| start + e);
        let raw = &bytes[start..end];
        position = end;
        let mut inflated = Vec::new();
        let _ = flate2::read::ZlibDecoder::new(raw)
            .take(MAX_STREAM_BYTES)
            .read_to_end(&mut inflated);
        let content: &[u8] = if inflated.is_empty() { raw } else { &inflated };
        if memchr::memmem::find(content, b"BT").is_some() {
            read_content_stream(content, &mut out);
        }
    }
    out
}

enum Operand {
    Text(Vec<u8>),
    Number(f64),
    Array(Vec<Operand>),
}

fn read_content_stream(content: &[u8], out: &mut String) {
    let mut operands: Vec<Operand> = Vec::new();
    let mut array_stack: Vec<Vec<Operand>> = Vec::new();
    let mut i = 0;
    while i < content.len() {
        let byte = content[i];
        match byte {
            b'(' => {
                let (text, next) = literal_string(content, i + 1);
                push(&mut operands, &mut array_stack, Operand::Text(text));
                i = next;
            }
            b'<' if content.get(i + 1) == Some(&b'<') => i += 2,
            b'>' if content.get(i + 1) == Some(&b'>') => i += 2,
            b'<' => {
                let end = content[i..]
                    .iter()
                    .position(|&b| b == b'>')
                    .map_or(content.len(), |e| i + e);
                let text = hex_string(&content[i + 1..end]);
                push(&mut operands, &mut array_stack, Operand::Text(text));
                i = end + 1;
            }
            b'[' => {
                array_stack.push(Vec::new());
                i += 1;
            }
            b']' => {
                if let Some(items) = array_stack.pop() {
                    push(&mut operands, &mut array_stack, Operand::Array(items));
                }
                i += 1;
            }
            b'%' => {
                while i < content.len() && content[i] != b'\n' && content[i] != b'\r' {
                    i += 1;
                }
            }
            b'0'..=b'9' | b'-' | b'+' | b'.' => {
                let start = i;
                i += 1;
                while i < content.len() && matches!(content[i], b'0'..=b'9' | b'.') {
                    i += 1;
                }
                let number = std::str::from_utf8(&content[start..i])
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0.0);
                push(&mut operands, &mut array_stack, Operand::Number(number));
            }
            b'/' => {
                i += 1;
                while i < content.len() && is_regular(content[i]) {
                    i += 1;
                }
            }
            b if b.is_ascii_alphabetic() || b == b'\'' || b == b'"' || b == b'*' => {
                let start = i;
                i += 1;
                while i < content.len() && (is_regular(content[i]) && content[i] != b'/') {
                    i += 1;
                }
                apply_operator(&content[start..i], &mut operands, out);
                array_stack.clear();
            }
            _ => i += 1,
        }
    }
}

fn is_regular(b: u8) -> bool {
    !b.is_ascii_whitespace() && !b"()<>[]{}/%".contains(&b)
}

fn push(operands: &mut Vec<Operand>, arrays: &mut [Vec<Operand>], operand: Operand) {
    match arrays.last_mut() {
        Some(array) => array.push(operand),
        None => operands.push(operand),
    }
}

fn apply_operator(operator: &[u8], operands: &mut Vec<Operand>, out: &mut String) {
    match operator {
        b"Tj" | b"'" | b"\"" => {
            if operator != b"Tj" {
                newline(out);
            }
            if let Some(Operand::Text(text)) = operands.last() {
                push_bytes(out, text);
            }
        }
        b"TJ" => {
            if let Some(Operand::Array(items)) = operands.last() {
                for item in items {
                    match item {
                        Operand::Text(text) => push_bytes(out, text),
                        // A large negative kerning is a word gap.
                        Operand::Number(n) if *n < -200.0 => space(out),
                        _ => {}
                    }
                }
            }
        }
        b"T*" | b"ET" | b"Tm" => newline(out),
        b"Td" | b"TD" => {
            let dy = match operands.as_slice() {
                [.., Operand::Number(_), Operand::Number(dy)] => *dy,
                _ => 0.0,
            };
            if dy != 0.0 {
                newline(out);
            } else {
                space(out);
            }
        }
        _ => {}
    }
    operands.clear();
}

fn newline(out: &mut String) {
    let kept = out.trim_end_matches(' ').len();
    out.truncate(kept);
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

fn space(out: &mut String) {
    if !out.is_empty() && !out.ends_with([' ', '\n']) {
        out.push(' ');
    }
}

fn push_bytes(out: &mut String, text: &[u8]) {
    for &b in text {
        let c = char::from(b);
        if c == '\t' || c == ' ' {
            space(out);
        } else if !c.is_control() {
            out.push(c);
        }
    }
}

/// A literal string starting after its `(`; returns its bytes and the
/// index after the closing `)`.
fn literal_string(content: &[u8], mut i: usize) -> (Vec<u8>, usize) {
    let mut depth = 1;
    let mut text = Vec::new();
    while i < content.len() {
        let b = content[i];
        i += 1;
        match b {
            b'\\' => {
                let Some(&escaped) = content.get(i) else {
                    break;
                };
                i += 1;
                match escaped {
                    b'n' => text.push(b'\n'),
                    b'r' => text.push(b'\r'),
                    b't' => text.push(b'\t'),
                    b'b' | b'f' => {}
                    b'0'..=b'7' => {
                        let mut value = u32::from(escaped - b'0');
                        for _ in 0..2 {
                            match content.get(i) {
                                Some(&d @ b'0'..=b'7') => {
                                    value = value * 8 + u32::from(d - b'0');
                                    i += 1;
                                }
                                _ => break,
                            }
                        }
                        text.push((value & 0xFF) as u8);
                    }
                    b'\r' | b'\n' => {}
                    other => text.push(other),
                }
            }
            b'(' => {
                depth += 1;
                text.push(b);
            }
            b')' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
                text.push(b);
            }
            _ => text.push(b),
        }
    }
    (text, i)
}

/// A hex string's bytes when they are printable ASCII (one byte or two
/// bytes per character); nothing otherwise.
fn hex_string(hex: &[u8]) -> Vec<u8> {
    let digits: Vec<u8> = hex
        .iter()
        .filter_map(|&b| (b as char).to_digit(16).map(|d| d as u8))
        .collect();
    let bytes: Vec<u8> = digits
        .chunks(2)
        .map(|pair| pair[0] << 4 | pair.get(1).copied().unwrap_or(0))
        .collect();
    let printable = |b: &u8| b.is_ascii_graphic() || *b == b' ';
    if !bytes.is_empty() && bytes.iter().all(printable) {
        return bytes;
    }
    if bytes.len() % 2 == 0
        && bytes
            .chunks(2)
            .all(|pair| pair[0] == 0 && printable(&pair[1]))
    {
        return bytes.chunks(2).map(|pair| pair[1]).collect();
    }
    Vec::new()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn reads_text_operators_of_a_cut_compressed_stream() {
        let content = b"BT /F1 12 Tf 72 700 Td (Flood peak) Tj 0 -14 Td [(3.2)-250(m)] TJ T* <00480069>Tj (a\\(b\\)) ' ET";
        let mut encoder =
            flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        encoder.write_all(content).unwrap();
        let compressed = encoder.finish().unwrap();
        let mut pdf = b"%PDF-1.5\n4 0 obj<</Length 99/Filter/FlateDecode>>stream\r\n".to_vec();
        pdf.extend_from_slice(&compressed);
        pdf.extend_from_slice(b"\r\nendstream\nendobj\n");
        assert_eq!(salvage_text(&pdf), "Flood peak\n3.2 m\nHi\na(b)\n");
        // Cut inside the stream: the head still comes out.
        let cut = &pdf[..pdf.len() - 30];
        assert!(
            salvage_text(cut).starts_with("Flood peak"),
            "{:?}",
            salvage_text(cut)
        );
    }
}
