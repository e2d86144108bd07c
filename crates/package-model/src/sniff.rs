//! Content sniffing: what a file really is, from its bytes, never its
//! suffix (the release has JSON in `.bin`, HTML in `.0`/`.php`/`.aspx`,
//! text in `.data`, a TIFF named `.zip`).
//!
//! [`sniff_file`] reads the first [`HEAD_BYTES`] of a file, plus the tail for
//! Parquet's `PAR1` footer, the zip central directory for shapefile
//! detection, and the first TIFF directory for the GeoKey tag (34735).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// How many leading bytes [`sniff_file`] reads.
pub const HEAD_BYTES: usize = 64 * 1024;

/// The GeoTIFF `GeoKeyDirectoryTag`.
const GEOKEY_DIRECTORY_TAG: u16 = 34735;

/// The kind of a file, judged from its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum FileKind {
    /// A JSON document.
    Json,
    /// An HTML (or XHTML) document.
    Html,
    /// An XML document other than HTML.
    Xml,
    /// A PDF document.
    Pdf,
    /// A JPEG image.
    Jpeg,
    /// A PNG image.
    Png,
    /// A GIF image.
    Gif,
    /// A zip archive.
    Zip,
    /// A zip archive holding a shapefile (`.shp`).
    ZipShapefile,
    /// A gzip stream.
    Gzip,
    /// NetCDF classic or 64-bit offset (`CDF\x01`, `CDF\x02`, `CDF\x05`).
    NetcdfClassic,
    /// NetCDF-4 / HDF5.
    NetcdfHdf5,
    /// A TIFF image without geo-referencing.
    Tiff,
    /// A GeoTIFF (TIFF with the GeoKey directory tag 34735).
    GeoTiff,
    /// An Apache Parquet file.
    Parquet,
    /// Delimited text (comma, semicolon or tab).
    Csv,
    /// Plain text.
    Text,
    /// A file of zero bytes.
    Empty,
    /// Binary content of no recognised kind.
    Binary,
}

impl FileKind {
    /// A short lowercase name (`json`, `geotiff`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            FileKind::Json => "json",
            FileKind::Html => "html",
            FileKind::Xml => "xml",
            FileKind::Pdf => "pdf",
            FileKind::Jpeg => "jpeg",
            FileKind::Png => "png",
            FileKind::Gif => "gif",
            FileKind::Zip => "zip",
            FileKind::ZipShapefile => "zip_shapefile",
            FileKind::Gzip => "gzip",
            FileKind::NetcdfClassic => "netcdf_classic",
            FileKind::NetcdfHdf5 => "netcdf_hdf5",
            FileKind::Tiff => "tiff",
            FileKind::GeoTiff => "geotiff",
            FileKind::Parquet => "parquet",
            FileKind::Csv => "csv",
            FileKind::Text => "text",
            FileKind::Empty => "empty",
            FileKind::Binary => "binary",
        }
    }

    /// Whether text can be extracted from this kind ([`crate::text`]).
    pub fn is_textual(self) -> bool {
        matches!(
            self,
            FileKind::Json
                | FileKind::Html
                | FileKind::Xml
                | FileKind::Pdf
                | FileKind::Csv
                | FileKind::Text
                | FileKind::Empty
        )
    }

    /// Whether this is an image kind.
    pub fn is_image(self) -> bool {
        matches!(
            self,
            FileKind::Jpeg | FileKind::Png | FileKind::Gif | FileKind::Tiff | FileKind::GeoTiff
        )
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Sniffs a whole file's bytes (or a prefix of them: a JSON document cut
/// short still counts as JSON; a zip's shapefile and a Parquet footer are
/// only seen when the bytes are complete).
pub fn sniff_bytes(bytes: &[u8]) -> FileKind {
    let head = &bytes[..bytes.len().min(HEAD_BYTES)];
    match sniff_magic(head) {
        Magic::Kind(kind) => kind,
        Magic::Zip => {
            if zip_names_hold_shapefile(std::io::Cursor::new(bytes)) {
                FileKind::ZipShapefile
            } else {
                FileKind::Zip
            }
        }
        Magic::Tiff => {
            if tiff_has_geokeys(&mut |offset, len| {
                let start = usize::try_from(offset).ok()?;
                bytes
                    .get(start..start.checked_add(len)?)
                    .map(<[u8]>::to_vec)
            }) {
                FileKind::GeoTiff
            } else {
                FileKind::Tiff
            }
        }
        Magic::Parquet => FileKind::Parquet,
        Magic::None => sniff_text(head, bytes.len() <= HEAD_BYTES),
    }
}

/// Sniffs a file on disk, reading only its head (and, as needed, its tail,
/// its zip central directory or its first TIFF directory).
pub fn sniff_file(path: &Path) -> std::io::Result<FileKind> {
    let mut file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    let mut head = Vec::with_capacity(HEAD_BYTES.min(len as usize));
    (&mut file).take(HEAD_BYTES as u64).read_to_end(&mut head)?;
    let complete = (head.len() as u64) >= len;
    Ok(match sniff_magic(&head) {
        Magic::Kind(kind) => kind,
        Magic::Zip => {
            if zip_names_hold_shapefile(&mut file) {
                FileKind::ZipShapefile
            } else {
                FileKind::Zip
            }
        }
        Magic::Tiff => {
            let mut read_at = |offset: u64, want: usize| -> Option<Vec<u8>> {
                if let Some(slice) = usize::try_from(offset)
                    .ok()
                    .and_then(|s| head.get(s..s.checked_add(want)?))
                {
                    return Some(slice.to_vec());
                }
                file.seek(SeekFrom::Start(offset)).ok()?;
                let mut buf = vec![0u8; want];
                file.read_exact(&mut buf).ok()?;
                Some(buf)
            };
            if tiff_has_geokeys(&mut read_at) {
                FileKind::GeoTiff
            } else {
                FileKind::Tiff
            }
        }
        Magic::Parquet => {
            let mut tail = [0u8; 4];
            if len >= 12
                && file.seek(SeekFrom::End(-4)).is_ok()
                && file.read_exact(&mut tail).is_ok()
                && &tail == b"PAR1"
            {
                FileKind::Parquet
            } else {
                FileKind::Binary
            }
        }
        Magic::None => sniff_text(&head, complete),
    })
}

enum Magic {
    Kind(FileKind),
    Zip,
    Tiff,
    Parquet,
    None,
}

fn sniff_magic(head: &[u8]) -> Magic {
    if head.is_empty() {
        return Magic::Kind(FileKind::Empty);
    }
    let starts = |magic: &[u8]| head.starts_with(magic);
    if starts(b"%PDF-") {
        return Magic::Kind(FileKind::Pdf);
    }
    if starts(&[0xFF, 0xD8, 0xFF]) {
        return Magic::Kind(FileKind::Jpeg);
    }
    if starts(b"\x89PNG\r\n\x1a\n") {
        return Magic::Kind(FileKind::Png);
    }
    if starts(b"GIF87a") || starts(b"GIF89a") {
        return Magic::Kind(FileKind::Gif);
    }
    if starts(b"PK\x03\x04") || starts(b"PK\x05\x06") || starts(b"PK\x07\x08") {
        return Magic::Zip;
    }
    if starts(&[0x1F, 0x8B]) {
        return Magic::Kind(FileKind::Gzip);
    }
    if starts(b"CDF\x01") || starts(b"CDF\x02") || starts(b"CDF\x05") {
        return Magic::Kind(FileKind::NetcdfClassic);
    }
    // The HDF5 superblock sits at 0, 512, 1024, 2048, ...
    const HDF5: &[u8] = b"\x89HDF\r\n\x1a\n";
    let mut offset = 0usize;
    while offset + HDF5.len() <= head.len() {
        if &head[offset..offset + HDF5.len()] == HDF5 {
            return Magic::Kind(FileKind::NetcdfHdf5);
        }
        offset = if offset == 0 { 512 } else { offset * 2 };
    }
    if starts(b"II*\0") || starts(b"MM\0*") || starts(b"II+\0") || starts(b"MM\0+") {
        return Magic::Tiff;
    }
    if starts(b"PAR1") {
        return Magic::Parquet;
    }
    // A PDF may carry a few junk bytes before its header.
    if memchr::memmem::find(&head[..head.len().min(1024)], b"%PDF-").is_some() {
        return Magic::Kind(FileKind::Pdf);
    }
    Magic::None
}

fn zip_names_hold_shapefile<R: Read + Seek>(reader: R) -> bool {
    match zip::ZipArchive::new(reader) {
        Ok(archive) => archive
            .file_names()
            .any(|name| name.to_ascii_lowercase().ends_with(".shp")),
        Err(_) => false,
    }
}

/// Walks the first TIFF directory (classic or BigTIFF) looking for tag
/// 34735. `read_at(offset, len)` returns exactly `len` bytes or `None`.
fn tiff_has_geokeys(read_at: &mut dyn FnMut(u64, usize) -> Option<Vec<u8>>) -> bool {
    let Some(header) = read_at(0, 16).or_else(|| read_at(0, 8)) else {
        return false;
    };
    let little = header[0] == b'I';
    let u16_at = |b: &[u8], i: usize| -> u16 {
        let pair = [b[i], b[i + 1]];
        if little {
            u16::from_le_bytes(pair)
        } else {
            u16::from_be_bytes(pair)
        }
    };
    let u32_at = |b: &[u8], i: usize| -> u32 {
        let quad = [b[i], b[i + 1], b[i + 2], b[i + 3]];
        if little {
            u32::from_le_bytes(quad)
        } else {
            u32::from_be_bytes(quad)
        }
    };
    let u64_at = |b: &[u8], i: usize| -> u64 {
        let mut oct = [0u8; 8];
        oct.copy_from_slice(&b[i..i + 8]);
        if little {
            u64::from_le_bytes(oct)
        } else {
            u64::from_be_bytes(oct)
        }
    };
    let big = u16_at(&header, 2) == 43;
    let (ifd_offset, count_len, entry_len) = if big {
        if header.len() < 16 {
            return false;
        }
        (u64_at(&header, 8), 8usize, 20usize)
    } else {
        (u64::from(u32_at(&header, 4)), 2usize, 12usize)
    };
    let Some(count_bytes) = read_at(ifd_offset, count_len) else {
        return false;
    };
    let count = if big {
        u64_at(&count_bytes, 0)
    } else {
        u64::from(u16_at(&count_bytes, 0))
    };
    let count = count.min(4096) as usize;
    let Some(entries) = read_at(ifd_offset + count_len as u64, count * entry_len) else {
        return false;
    };
    (0..count).any(|i| u16_at(&entries, i * entry_len) == GEOKEY_DIRECTORY_TAG)
}

/// Decides among JSON, HTML, XML, CSV, text and binary for content with no
/// magic number. `complete` says whether `head` is the whole file.
fn sniff_text(head: &[u8], complete: bool) -> FileKind {
    let body = strip_bom(head);
    if !looks_textual(body) {
        return FileKind::Binary;
    }
    let trimmed = trim_ascii_start(body);
    if trimmed.is_empty() {
        return FileKind::Text;
    }
    if matches!(trimmed[0], b'{' | b'[') && is_json_prefix(trimmed, complete) {
        return FileKind::Json;
    }
    let probe = &trimmed[..trimmed.len().min(4096)];
    let lower: Vec<u8> = probe.iter().map(u8::to_ascii_lowercase).collect();
    let has = |needle: &[u8]| memchr::memmem::find(&lower, needle).is_some();
    if trimmed[0] == b'<' || has(b"<!doctype html") || has(b"<html") {
        if has(b"<!doctype html") || has(b"<html") || has(b"<head") || has(b"<body") {
            return FileKind::Html;
        }
        if trimmed[0] == b'<' {
            if lower.starts_with(b"<?xml") || looks_like_xml_tag(&lower) {
                return FileKind::Xml;
            }
            // Fragments of HTML without <html>: common tags.
            if has(b"<div") || has(b"<p>") || has(b"<script") || has(b"<meta") || has(b"<title") {
                return FileKind::Html;
            }
        }
    }
    if looks_like_csv(trimmed) {
        return FileKind::Csv;
    }
    FileKind::Text
}

fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes)
}

fn trim_ascii_start(bytes: &[u8]) -> &[u8] {
    let start = bytes
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(bytes.len());
    &bytes[start..]
}

/// UTF-8 (allowing a cut last character) or mostly printable single-byte
/// text, with no NUL bytes.
fn looks_textual(bytes: &[u8]) -> bool {
    let sample = &bytes[..bytes.len().min(8192)];
    if sample.contains(&0) {
        return false;
    }
    match std::str::from_utf8(sample) {
        Ok(_) => true,
        Err(e) if e.error_len().is_none() => true,
        Err(_) => {
            let control = sample
                .iter()
                .filter(|&&b| b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t' | 0x0C))
                .count();
            control * 100 <= sample.len()
        }
    }
}

fn is_json_prefix(bytes: &[u8], complete: bool) -> bool {
    match serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
        Ok(_) => true,
        Err(e) if e.is_eof() => !complete || bytes.len() >= HEAD_BYTES,
        Err(e) => {
            // A document cut at the head boundary fails as EOF; trailing data
            // after a valid value (e.g. JSON lines) still counts as JSON.
            matches!(e.classify(), serde_json::error::Category::Syntax)
                && e.to_string().contains("trailing characters")
        }
    }
}

fn looks_like_xml_tag(lower: &[u8]) -> bool {
    // `<name` followed by a letter: `<rss`, `<kml`, `<gpx`, `<feed`, `<svg`...
    lower.len() > 2 && (lower[1].is_ascii_alphabetic() || lower[1] == b'!')
}

fn looks_like_csv(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(8192)]);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(20)
        .collect();
    // The last line may be cut short.
    let lines = if lines.len() > 2 {
        &lines[..lines.len() - 1]
    } else {
        &lines[..]
    };
    if lines.len() < 2 {
        return false;
    }
    [',', ';', '\t'].iter().any(|&delimiter| {
        let first = lines[0].matches(delimiter).count();
        first >= 1 && lines.iter().all(|l| l.matches(delimiter).count() == first)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn check(bytes: &[u8], expected: FileKind) {
        assert_eq!(
            sniff_bytes(bytes),
            expected,
            "{:?}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(40)])
        );
    }

    #[test]
    fn sniffs_by_content() {
        check(b"", FileKind::Empty);
        check(b"  {\"a\": [1, 2]}", FileKind::Json);
        check(b"\xEF\xBB\xBF[1,2,3]", FileKind::Json);
        check(b"{not json at all", FileKind::Text);
        check(
            b"<!DOCTYPE html><html><body>x</body></html>",
            FileKind::Html,
        );
        check(
            b"<?xml version=\"1.0\"?><rss><channel/></rss>",
            FileKind::Xml,
        );
        check(
            b"<?xml version=\"1.0\"?><html xmlns=\"http://www.w3.org/1999/xhtml\"></html>",
            FileKind::Html,
        );
        check(b"%PDF-1.5\n...", FileKind::Pdf);
        check(b"\xFF\xD8\xFF\xE0\0\x10JFIF", FileKind::Jpeg);
        check(b"\x89PNG\r\n\x1a\n\0\0", FileKind::Png);
        check(b"CDF\x01\0\0\0\0", FileKind::NetcdfClassic);
        check(b"\x89HDF\r\n\x1a\n\0\0", FileKind::NetcdfHdf5);
        check(b"PAR1\0\0\0\0PAR1", FileKind::Parquet);
        check(b"a,b,c\n1,2,3\n4,5,6\n", FileKind::Csv);
        check(b"hello world\nsecond line\n", FileKind::Text);
        check(&[0u8, 1, 2, 3, 200, 201], FileKind::Binary);
    }

    #[test]
    fn tiff_and_geotiff() {
        // Little-endian TIFF, IFD at 8 with one entry.
        let mut tiff = b"II*\0\x08\0\0\0".to_vec();
        tiff.extend_from_slice(&1u16.to_le_bytes());
        tiff.extend_from_slice(&256u16.to_le_bytes());
        tiff.extend_from_slice(&[3, 0, 1, 0, 0, 0, 1, 0, 0, 0]);
        check(&tiff, FileKind::Tiff);
        let mut geo = b"II*\0\x08\0\0\0".to_vec();
        geo.extend_from_slice(&2u16.to_le_bytes());
        geo.extend_from_slice(&256u16.to_le_bytes());
        geo.extend_from_slice(&[3, 0, 1, 0, 0, 0, 1, 0, 0, 0]);
        geo.extend_from_slice(&34735u16.to_le_bytes());
        geo.extend_from_slice(&[3, 0, 4, 0, 0, 0, 0, 0, 0, 0]);
        check(&geo, FileKind::GeoTiff);
    }

    #[test]
    fn zip_with_and_without_shapefile() {
        use std::io::Write;
        let build = |names: &[&str]| {
            let mut cursor = std::io::Cursor::new(Vec::new());
            {
                let mut writer = zip::ZipWriter::new(&mut cursor);
                for name in names {
                    writer
                        .start_file(*name, zip::write::SimpleFileOptions::default())
                        .unwrap();
                    writer.write_all(b"x").unwrap();
                }
                writer.finish().unwrap();
            }
            cursor.into_inner()
        };
        check(&build(&["a.txt"]), FileKind::Zip);
        check(
            &build(&["ne/ne_admin.SHP", "ne/ne_admin.dbf"]),
            FileKind::ZipShapefile,
        );
    }
}
