//! Reading numbers, dates and paths out of JSON values and strings.

use regex::Regex;
use serde_json::{Number, Value};
use std::sync::OnceLock;

const NUM: &str = r"[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?\.\d+";

fn number_token_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(NUM).unwrap_or_else(|_| unreachable!("constant regex")))
}

fn number_unit_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        let pattern = format!(r"^\s*~?\s*({NUM})\s*(%|[A-Za-z°/ ²³^0-9.\-]{{0,16}})?\s*$");
        Regex::new(&pattern).unwrap_or_else(|_| unreachable!("constant regex"))
    })
}

fn date_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2}))?")
            .unwrap_or_else(|_| unreachable!("constant regex"))
    })
}

/// Parses a number token as matched by [`NUM`] (thousands separators and a
/// Unicode minus allowed).
fn parse_token(token: &str) -> Option<f64> {
    // Most tokens hold neither `,` nor `−` (the only non-ASCII character a
    // token can hold): parsed in place, without a cleaned copy.
    let parsed = if token.bytes().any(|b| b == b',' || !b.is_ascii()) {
        let cleaned: String = token
            .chars()
            .filter(|&c| c != ',')
            .map(|c| if c == '−' { '-' } else { c })
            .collect();
        cleaned.parse::<f64>()
    } else {
        token.parse::<f64>()
    };
    parsed.ok().filter(|x| x.is_finite())
}

/// Decimal places written in a number's literal (`24.0` has 1, `3` has 0,
/// `1.5e-3` has 4).
pub fn literal_decimals(literal: &str) -> u32 {
    let lower = literal.to_ascii_lowercase();
    let (mantissa, exponent) = match lower.split_once('e') {
        Some((m, e)) => (m, e.parse::<i64>().unwrap_or(0)),
        None => (lower.as_str(), 0),
    };
    let frac = mantissa.split_once('.').map_or(0, |(_, f)| f.len() as i64);
    (frac - exponent).clamp(0, 12) as u32
}

/// A JSON number as `f64` together with its written decimals.
pub(crate) fn number_parts(n: &Number) -> Option<(f64, u32)> {
    let x = n.as_f64().filter(|x| x.is_finite())?;
    Some((x, literal_decimals(&n.to_string())))
}

/// A string in "number with optional unit" form (`"35.5 °C"`, `"~12%"`,
/// `"1,234"`): the number, its decimals and whether it carried `%`.
pub(crate) fn number_with_unit(s: &str) -> Option<(f64, u32, bool)> {
    if s.len() > 64 || !dates_in(s).is_empty() {
        return None;
    }
    let caps = number_unit_re().captures(s)?;
    let token = caps.get(1)?.as_str();
    let x = parse_token(token)?;
    let decimals = literal_decimals(&token.replace(',', ""));
    let percent = caps.get(2).is_some_and(|m| m.as_str().trim() == "%");
    Some((x, decimals, percent))
}

/// Every number token inside a string.
pub(crate) fn number_tokens(s: &str) -> Vec<f64> {
    number_spans(s).into_iter().map(|(_, n)| n).collect()
}

/// The numbers of a string with their byte ranges, in order (the
/// matcher's number tokens: thousands separators and a Unicode minus
/// allowed).
///
/// ```
/// let spans = earthverse_answer_units::number_spans("t = 14.10 °C, n=5");
/// assert_eq!(spans, vec![(4..9, 14.1), (17..18, 5.0)]);
/// ```
pub fn number_spans(s: &str) -> Vec<(std::ops::Range<usize>, f64)> {
    if s.is_ascii() {
        return ascii_number_ranges(s.as_bytes())
            .into_iter()
            .filter_map(|r| Some((r.clone(), parse_token(&s[r])?)))
            .collect();
    }
    number_spans_regex(s)
}

/// [`number_spans`] through the [`NUM`] regex (its reading for any text;
/// the ASCII scanner must agree with it).
fn number_spans_regex(s: &str) -> Vec<(std::ops::Range<usize>, f64)> {
    number_token_re()
        .find_iter(s)
        .filter_map(|m| Some((m.range(), parse_token(m.as_str())?)))
        .collect()
}

/// The byte ranges the [`NUM`] regex finds in ASCII text, found by hand:
/// at each position the first alternative that matches, as the regex's
/// leftmost-first search does (on ASCII, `\d` is `0-9` and `−` is absent).
fn ascii_number_ranges(b: &[u8]) -> Vec<std::ops::Range<usize>> {
    let digit = |i: usize| b.get(i).is_some_and(u8::is_ascii_digit);
    let run = |mut i: usize| {
        while digit(i) {
            i += 1;
        }
        i
    };
    // `(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?` from `i`
    // (a digit there).
    let first = |i: usize| {
        let end = run(i);
        let group3 = |j: usize| b.get(j) == Some(&b',') && (1..=3).all(|k| digit(j + k));
        let mut j = if end - i <= 3 && group3(end) {
            let mut j = end;
            while group3(j) {
                j += 4;
            }
            j
        } else {
            end
        };
        if b.get(j) == Some(&b'.') && digit(j + 1) {
            j = run(j + 1);
        }
        if matches!(b.get(j), Some(b'e' | b'E')) {
            let k = if matches!(b.get(j + 1), Some(b'-' | b'+')) {
                j + 2
            } else {
                j + 1
            };
            if digit(k) {
                j = run(k);
            }
        }
        j
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let sign = matches!(b[i], b'-' | b'+');
        let end = if sign && digit(i + 1) {
            Some(first(i + 1))
        } else if digit(i) {
            Some(first(i))
        } else if sign && b.get(i + 1) == Some(&b'.') && digit(i + 2) {
            Some(run(i + 2))
        } else if b[i] == b'.' && digit(i + 1) {
            Some(run(i + 1))
        } else {
            None
        };
        match end {
            Some(end) => {
                out.push(i..end);
                i = end;
            }
            None => {
                // Only a digit, a sign or a point can start a number: the
                // bytes between are skipped in a tight loop.
                i += 1;
                while i < b.len() && !matches!(b[i], b'0'..=b'9' | b'+' | b'-' | b'.') {
                    i += 1;
                }
            }
        }
    }
    out
}

/// Dates (`YYYY-MM-DD`, with `THH:MM` unless it is midnight) found in a string.
pub fn dates_in(s: &str) -> Vec<String> {
    date_re()
        .captures_iter(s)
        .filter_map(|c| {
            let (y, m, d) = (c.get(1)?.as_str(), c.get(2)?.as_str(), c.get(3)?.as_str());
            let month: u32 = m.parse().ok()?;
            let day: u32 = d.parse().ok()?;
            if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
                return None;
            }
            match (c.get(4), c.get(5)) {
                (Some(h), Some(mi)) if !(h.as_str() == "00" && mi.as_str() == "00") => {
                    Some(format!("{y}-{m}-{d}T{}:{}", h.as_str(), mi.as_str()))
                }
                _ => Some(format!("{y}-{m}-{d}")),
            }
        })
        .collect()
}

const DATA_EXTENSIONS: &[&str] = &[
    ".json", ".csv", ".nc", ".tif", ".tiff", ".xml", ".txt", ".html", ".htm", ".pdf", ".jpg",
    ".jpeg", ".png", ".zip", ".shp", ".geojson", ".bin", ".parquet", ".md", ".py", ".data", ".0",
    ".gif", ".kml", ".kmz", ".xlsx", ".xls", ".grib", ".grb", ".h5", ".hdf", ".jp2", ".webp",
];

/// True for file paths: a `/`, no whitespace, a data-file extension.
pub(crate) fn is_path(s: &str) -> bool {
    if !s.contains('/') || s.chars().any(char::is_whitespace) {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    DATA_EXTENSIONS.iter().any(|ext| lower.ends_with(ext))
}

/// The text of a scalar candidate (`None` for objects and arrays).
pub(crate) fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some(String::new()),
        Value::Object(_) | Value::Array(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals() {
        assert_eq!(literal_decimals("24.0"), 1);
        assert_eq!(literal_decimals("3"), 0);
        assert_eq!(literal_decimals("1.5e-3"), 4);
        assert_eq!(literal_decimals("1e5"), 0);
    }

    #[test]
    fn numbers_with_units() {
        assert_eq!(number_with_unit("35.5 °C"), Some((35.5, 1, false)));
        assert_eq!(number_with_unit("~12%"), Some((12.0, 0, true)));
        assert_eq!(number_with_unit("1,234"), Some((1234.0, 0, false)));
        assert_eq!(number_with_unit("2021-06-25"), None);
        assert_eq!(number_with_unit("peak 3"), None);
        assert_eq!(number_tokens("a 1,200 b -3.5 c"), vec![1200.0, -3.5]);
    }

    #[test]
    fn dates_and_paths() {
        assert_eq!(
            dates_in("2021-06-29T13:00 and 2021-06-30T00:00"),
            vec!["2021-06-29T13:00", "2021-06-30"]
        );
        assert!(dates_in("2021-13-40").is_empty());
        assert!(is_path("data/a_b.json"));
        assert!(!is_path("a b/c.json"));
        assert!(!is_path("label/with/slash"));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod scanner_tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// The ASCII scanner finds the regex's spans and values on 20,000
    /// random strings built from the characters the regex cares about.
    #[test]
    fn ascii_scanner_agrees_with_the_regex() {
        let alphabet = b"0123456789012345,,..--++eE x:%a";
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut found = 0;
        for _ in 0..20_000 {
            let len = rng.gen_range(0..24);
            let s: String = (0..len)
                .map(|_| alphabet[rng.gen_range(0..alphabet.len())] as char)
                .collect();
            let ours = number_spans(&s);
            assert_eq!(ours, number_spans_regex(&s), "{s:?}");
            found += ours.len();
        }
        assert!(found > 10_000, "the strings held numbers: {found}");
    }

    /// Tokens parsed in place read as the cleaned copy does (`,` dropped,
    /// `−` read as `-`), on 20,000 random tokens, most of them numbers.
    #[test]
    fn in_place_parse_equals_the_cleaned_copy() {
        let cleaned = |t: &str| {
            let c: String = t
                .chars()
                .filter(|&c| c != ',')
                .map(|c| if c == '−' { '-' } else { c })
                .collect();
            c.parse::<f64>().ok().filter(|x| x.is_finite())
        };
        let alphabet: Vec<char> = "0123456789012345,.-+eE−x".chars().collect();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut numbers = 0;
        for _ in 0..20_000 {
            let len = rng.gen_range(0..12);
            let t: String = (0..len)
                .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                .collect();
            let ours = parse_token(&t);
            assert_eq!(ours, cleaned(&t), "{t:?}");
            numbers += usize::from(ours.is_some());
        }
        assert!(numbers > 1_000, "the tokens held numbers: {numbers}");
        assert_eq!(parse_token("1e999"), None, "infinite values are refused");
    }
}
