//! Normalisation of keys and text shared by the matching rules.
//!
//! The constants follow the prototype study
//! (`design/answer-units-study.md`, section (e)).

/// Words dropped from token lists before label and prose comparison.
pub(crate) const STOP_WORDS: &[&str] = &[
    "the", "a", "an", "of", "and", "or", "to", "in", "on", "for", "by", "with", "from", "at", "is",
    "are", "be", "as", "that", "this", "it", "its", "into", "than", "not", "no",
];

/// Normalised answer texts that mean "no value given".
pub(crate) const NOT_AVAILABLE: &[&str] = &[
    "",
    "na",
    "n a",
    "none",
    "null",
    "unknown",
    "missing",
    "tbd",
    "unavailable",
    "not available",
    "not applicable",
    "not computed",
    "not reported",
    "insufficient data",
];

/// Normalises an object key: lowercase, every run of characters other than
/// `[a-z0-9]` becomes one `_`, leading and trailing `_` are trimmed.
///
/// ```
/// use earthverse_answer_units::normalize_key;
/// assert_eq!(normalize_key("Peak Tmax (°C)"), "peak_tmax_c");
/// assert_eq!(normalize_key("__A--b__"), "a_b");
/// ```
pub fn normalize_key(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    let mut pending_sep = false;
    let mut keep = |ch: char, out: &mut String| {
        if ch.is_ascii_lowercase() || ch.is_ascii_digit() {
            if pending_sep && !out.is_empty() {
                out.push('_');
            }
            pending_sep = false;
            out.push(ch);
        } else {
            pending_sep = true;
        }
    };
    for ch in key.chars() {
        if ch.is_ascii() {
            // ASCII lowercases to one ASCII character: no iterator.
            keep(ch.to_ascii_lowercase(), &mut out);
        } else {
            // (some non-ASCII letters lowercase to ASCII, e.g. the Kelvin sign)
            ch.to_lowercase().for_each(|c| keep(c, &mut out));
        }
    }
    out
}

/// The words of a normalised key that carry its meaning, for
/// [`crate::Rules::key_word_subset`]: unit words (`cm`, `pct`, `km2`...)
/// dropped, common abbreviations spelled out (`max` → `maximum`), and a
/// plural `s` dropped from words of more than three letters.
///
/// ```
/// use earthverse_answer_units::key_meaning_words;
/// assert_eq!(key_meaning_words("max_hail_cm"), ["maximum", "hail"]);
/// assert_eq!(key_meaning_words("italy_share_pct"), ["italy", "share"]);
/// assert_eq!(key_meaning_words("injuries_per_reports"), ["injurie", "per", "report"]);
/// ```
pub fn key_meaning_words(key: &str) -> Vec<String> {
    const UNIT_WORDS: &[&str] = &[
        "cm", "mm", "km", "m", "km2", "m2", "m3", "s", "c", "f", "k", "pct", "percent", "hpa",
        "mb", "kt", "kts", "mph", "kmh", "ft", "usd", "in",
    ];
    const SPELLED_OUT: &[(&str, &str)] = &[
        ("max", "maximum"),
        ("min", "minimum"),
        ("avg", "mean"),
        ("average", "mean"),
        ("temp", "temperature"),
        ("precip", "precipitation"),
        ("num", "number"),
        ("n", "number"),
        ("approx", "approximate"),
        ("est", "estimated"),
        ("obs", "observed"),
        ("prob", "probability"),
        ("freq", "frequency"),
        ("dist", "distance"),
        ("dur", "duration"),
        ("elev", "elevation"),
    ];
    normalize_key(key)
        .split('_')
        .filter(|w| !w.is_empty() && !UNIT_WORDS.contains(w))
        .map(|w| {
            let w = SPELLED_OUT
                .iter()
                .find(|(short, _)| *short == w)
                .map_or(w, |(_, long)| long);
            match w.strip_suffix('s') {
                Some(stem) if w.len() > 3 && !stem.ends_with('s') => stem.to_owned(),
                _ => w.to_owned(),
            }
        })
        .collect()
}

/// Normalises free text for comparison: lowercase; `≥`/`>=` become ` ge `
/// and `≤`/`<=` become ` le `; characters other than `[a-z0-9.%+-]` become
/// spaces; `.`, `-` and `+` not next to a digit become spaces; runs of
/// spaces collapse to one and the ends are trimmed.
///
/// ```
/// use earthverse_answer_units::normalize_text;
/// assert_eq!(normalize_text("Peak ≥ 35.5 °C -- very-high"), "peak ge 35.5 c very high");
/// ```
pub fn normalize_text(text: &str) -> String {
    let needs_ops = text.contains(['>', '<', '≥', '≤']);
    let lowered = if needs_ops {
        text.to_lowercase()
            .replace(">=", " ge ")
            .replace('≥', " ge ")
            .replace("<=", " le ")
            .replace('≤', " le ")
    } else {
        text.to_lowercase()
    };
    let keep = |c: char| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '%' | '+' | '-')
    };
    let mut out = String::with_capacity(lowered.len());
    let mut last_space = true;
    let mut prev_digit = false;
    let mut iter = lowered.chars().peekable();
    while let Some(raw) = iter.next() {
        let mapped = if keep(raw) { raw } else { ' ' };
        let c = if matches!(mapped, '.' | '-' | '+') {
            let next_digit = iter.peek().is_some_and(|n| n.is_ascii_digit());
            if prev_digit || next_digit {
                mapped
            } else {
                ' '
            }
        } else {
            mapped
        };
        prev_digit = raw.is_ascii_digit();
        if c == ' ' {
            if !last_space {
                out.push(' ');
            }
            last_space = true;
        } else {
            out.push(c);
            last_space = false;
        }
    }
    while out.ends_with(' ') {
        out.pop();
    }
    out
}

/// Tokens of normalised text without stop words, in order, with duplicates.
pub(crate) fn tokens(text: &str) -> Vec<String> {
    tokens_of_normalized(&normalize_text(text))
}

/// [`tokens`] of text already passed through [`normalize_text`].
pub(crate) fn tokens_of_normalized(normalized: &str) -> Vec<String> {
    normalized
        .split(' ')
        .filter(|t| !t.is_empty() && !STOP_WORDS.contains(t))
        .map(str::to_owned)
        .collect()
}

/// True when `needle` occurs in `haystack` as a whole word, case-insensitively:
/// no `[A-Za-z0-9_]` character directly before or after it.
pub(crate) fn contains_word(haystack_lower: &str, needle: &str) -> bool {
    let needle = needle.to_lowercase();
    if needle.is_empty() {
        return false;
    }
    let bytes = haystack_lower.as_bytes();
    let is_word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut start = 0;
    while let Some(pos) = haystack_lower[start..].find(&needle) {
        let at = start + pos;
        let end = at + needle.len();
        let before_ok = at == 0 || !is_word(bytes[at - 1]);
        let after_ok = end >= bytes.len() || !is_word(bytes[end]);
        if before_ok && after_ok {
            return true;
        }
        // Advance by one character (not byte) to stay on a char boundary.
        let step = haystack_lower[at..]
            .chars()
            .next()
            .map_or(1, char::len_utf8);
        start = at + step;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition before the ASCII fast path: every character through
    /// Unicode lowercasing.
    fn normalize_key_unicode(key: &str) -> String {
        let mut out = String::new();
        let mut pending_sep = false;
        for ch in key.chars().flat_map(char::to_lowercase) {
            if ch.is_ascii_lowercase() || ch.is_ascii_digit() {
                if pending_sep && !out.is_empty() {
                    out.push('_');
                }
                pending_sep = false;
                out.push(ch);
            } else {
                pending_sep = true;
            }
        }
        out
    }

    #[test]
    fn the_ascii_fast_path_keeps_unicode_lowercasing() {
        for key in [
            "hotHours_ge_30C",
            "Temp_\u{212A}",
            "\u{130}stanbul_rain",
            "Ölçüm-Max (°C)",
            "  __a__B9__ ",
            "",
        ] {
            assert_eq!(normalize_key(key), normalize_key_unicode(key), "{key:?}");
        }
        // The Kelvin sign lowercases to an ASCII `k`.
        assert_eq!(normalize_key("T_\u{212A}"), "t_k");
    }

    #[test]
    fn keys_normalise() {
        assert_eq!(normalize_key("hotHours_ge_30C"), "hothours_ge_30c");
        assert_eq!(normalize_key("  "), "");
        assert_eq!(normalize_key("a.b/c"), "a_b_c");
    }

    #[test]
    fn text_normalises() {
        assert_eq!(normalize_text("  A  - B "), "a b");
        assert_eq!(normalize_text("-3.5 mm"), "-3.5 mm");
        assert_eq!(normalize_text("x <= 4"), "x le 4");
        assert_eq!(normalize_text("50%"), "50%");
    }

    #[test]
    fn tokens_drop_stop_words() {
        assert_eq!(tokens("The rise of the sea"), vec!["rise", "sea"]);
    }

    #[test]
    fn word_search_respects_boundaries() {
        assert!(contains_word("use `wet_count_5` here", "wet_count_5"));
        assert!(!contains_word("use wet_count_50 here", "wet_count_5"));
        assert!(!contains_word("awet_count_5", "wet_count_5"));
        assert!(contains_word("é answer", "answer"));
    }
}
