//! Tracing answer values to observations.

use crate::model::{
    Claim, ClaimStatus, Observation, ObservationKind, Replaced, RunLedger, Source, Strength,
};
use crate::values::{
    claim_value, conversion_fits, half_unit, is_small_integer, shown_value, significant_digits,
    ClaimValue, Conversion, CONVERSIONS,
};
pub use crate::values::{same_file, SMALL_INTEGER_LIMIT};
use earthverse_answer_units::matching::number_matches;
use earthverse_answer_units::{key_meaning_words, normalize_key, number_spans, UnitLedgerEntry};
use std::cell::OnceCell;
use std::ops::Range;

/// Bytes before a number searched for its key's words (cut at the line start).
const KEY_CONTEXT_BYTES: usize = 120;

/// Longest excerpt kept in a [`Source`].
const EXCERPT_BYTES: usize = 60;

/// Most earlier values kept per claim.
const MAX_REPLACED: usize = 5;

/// A number token of an observation.
#[derive(Debug, Clone)]
struct Num {
    range: Range<usize>,
    value: f64,
}

/// One observation ready for searching: its number tokens and its
/// lowercased text, each computed once per run on first use (a search that
/// stops at an earlier step never tokenises the later ones).
#[derive(Debug)]
struct Indexed<'a> {
    obs: &'a Observation,
    nums: OnceCell<Vec<Num>>,
    /// The text with ASCII letters lowercased (byte offsets kept), made on
    /// first use (labels, dates, paths).
    lower: OnceCell<String>,
}

impl Indexed<'_> {
    fn nums(&self) -> &[Num] {
        self.nums.get_or_init(|| nums_of(&self.obs.text))
    }

    fn lower(&self) -> &str {
        self.lower
            .get_or_init(|| self.obs.text.to_ascii_lowercase())
    }
}

/// A run's observations, indexed once and read for every claim (and both
/// readings of the unit ledger).
#[derive(Debug)]
pub struct TraceIndex<'a> {
    items: Vec<Indexed<'a>>,
    prompt: Option<Observation>,
    prompt_nums: Vec<Num>,
    prompt_lower: String,
    reference_files: Vec<String>,
}

/// A hit of a search: observation index (`None` = prompt), byte range.
#[derive(Debug, Clone)]
struct Hit {
    item: Option<usize>,
    range: Range<usize>,
    strength: Strength,
    transform: Option<&'static str>,
}

impl<'a> TraceIndex<'a> {
    /// Indexes a run's observations. `question` is the task prompt
    /// (values found only there are `given`); `reference_files` are the
    /// files of the task's reference analysis (see
    /// [`crate::reference_files`]). Observations are read in step order
    /// (stable for equal steps).
    pub fn new(
        question: &str,
        observations: &'a [Observation],
        reference_files: &[String],
    ) -> Self {
        let mut items: Vec<Indexed<'a>> = observations
            .iter()
            .filter(|o| o.kind != ObservationKind::Prompt)
            .map(|obs| Indexed {
                obs,
                nums: OnceCell::new(),
                lower: OnceCell::new(),
            })
            .collect();
        items.sort_by_key(|i| i.obs.step);
        let prompt = (!question.is_empty()).then(|| Observation {
            step: 0,
            tool: "prompt".to_owned(),
            kind: ObservationKind::Prompt,
            files: Vec::new(),
            text: question.to_owned(),
        });
        TraceIndex {
            items,
            prompt_nums: nums_of(question),
            prompt_lower: question.to_ascii_lowercase(),
            prompt,
            reference_files: reference_files.to_vec(),
        }
    }

    /// The reference analysis' files this index was built with.
    pub fn reference_files(&self) -> &[String] {
        &self.reference_files
    }

    /// The ledger of one reading of a run: one claim per unit ledger
    /// entry, plus the cited files no step read.
    pub fn ledger(&self, units: &[UnitLedgerEntry], cited: &[String]) -> RunLedger {
        RunLedger {
            claims: self.claims(units),
            cited_unread: self.cited_unread(cited),
            files_read: self.files_read(),
        }
    }

    /// One claim per unit ledger entry.
    pub fn claims(&self, units: &[UnitLedgerEntry]) -> Vec<Claim> {
        units.iter().map(|u| self.claim(u)).collect()
    }

    /// Files some step read, in first-read order, without repeats.
    pub fn files_read(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for item in &self.items {
            if item.obs.kind == ObservationKind::Search {
                continue;
            }
            for f in &item.obs.files {
                if !out.iter().any(|o| same_file(o, f)) {
                    out.push(f.clone());
                }
            }
        }
        out
    }

    /// Cited files (the answer's `evidence[].source_file`) that no read or
    /// computation opened (a listing or search result does not count).
    pub fn cited_unread(&self, cited: &[String]) -> Vec<String> {
        let read = self.files_read();
        let mut out: Vec<String> = Vec::new();
        for c in cited {
            let c = c.trim();
            if c.is_empty() || out.iter().any(|o| o == c) {
                continue;
            }
            if !read.iter().any(|r| same_file(r, c)) {
                out.push(c.to_owned());
            }
        }
        out
    }

    /// The claim of one unit.
    pub fn claim(&self, unit: &UnitLedgerEntry) -> Claim {
        let value = claim_value(unit);
        let shown = shown_value(unit);
        let mut claim = Claim {
            unit: unit.path.clone(),
            value: shown,
            expected: unit.expected.clone(),
            status: ClaimStatus::Missing,
            satisfied: unit.matched,
            counted: unit.counted,
            strength: None,
            source: None,
            error_family: None,
            replaced: Vec::new(),
        };
        let key_words = key_words(unit);
        let hit = match &value {
            ClaimValue::Missing => None,
            ClaimValue::Judgement => {
                claim.status = ClaimStatus::Judgement;
                None
            }
            ClaimValue::Number(x, decimals) => {
                let tol = unit.tolerance.unwrap_or(0.0).max(half_unit(*decimals));
                let hit = self.find_number(*x, *decimals, tol, unit.key.as_deref(), &key_words);
                if let Some(h) = &hit {
                    let before = h.item.map_or(0, |i| self.items[i].obs.step);
                    claim.replaced = self.replaced(*x, tol, &key_words, before);
                }
                hit
            }
            ClaimValue::Date(d) => self.find_text(&d.to_ascii_lowercase()),
            ClaimValue::Path(p) => self.find_path(p),
            ClaimValue::Label(l) => self.find_label(l),
        };
        if let Some(hit) = hit {
            claim.status = self.status_of(&hit);
            claim.strength = Some(hit.strength);
            claim.source = Some(self.source_of(&hit));
        } else if !matches!(value, ClaimValue::Missing | ClaimValue::Judgement) {
            claim.status = ClaimStatus::Unsupported;
        }
        claim.error_family = crate::family::diagnose(unit, &value, &claim, &self.reference_files);
        claim
    }

    fn status_of(&self, hit: &Hit) -> ClaimStatus {
        if hit.transform.is_some() {
            return ClaimStatus::Transformed;
        }
        match hit.item.map(|i| self.items[i].obs.kind) {
            None | Some(ObservationKind::Prompt) => ClaimStatus::Given,
            Some(ObservationKind::Computed) => ClaimStatus::Computed,
            Some(ObservationKind::Read | ObservationKind::Search) => ClaimStatus::Observed,
        }
    }

    fn source_of(&self, hit: &Hit) -> Source {
        let (obs, text) = match hit.item {
            Some(i) => (self.items[i].obs, self.items[i].obs.text.as_str()),
            None => match &self.prompt {
                Some(p) => (p, p.text.as_str()),
                None => unreachable_source(),
            },
        };
        let file = match obs.kind {
            ObservationKind::Read | ObservationKind::Computed => obs.files.first().cloned(),
            ObservationKind::Search | ObservationKind::Prompt => None,
        };
        Source {
            step: obs.step,
            tool: obs.tool.clone(),
            file,
            files: if obs.kind == ObservationKind::Computed {
                obs.files.clone()
            } else {
                Vec::new()
            },
            span: Some([hit.range.start, hit.range.end]),
            excerpt: excerpt(text, &hit.range),
            transform: hit.transform.map(str::to_owned),
        }
    }

    /// Every searchable text in order: the prompt (`None`), then the
    /// observations.
    fn texts(&self) -> impl Iterator<Item = (Option<usize>, &[Num], &str)> {
        let prompt = self
            .prompt
            .as_ref()
            .map(|p| (None, self.prompt_nums.as_slice(), p.text.as_str()));
        prompt.into_iter().chain(
            self.items
                .iter()
                .enumerate()
                .map(|(i, it)| (Some(i), it.nums(), it.obs.text.as_str())),
        )
    }

    /// The first observation holding `x`: tiers, each in step order —
    /// (1) at the answer's written precision with the key's words before
    /// it; (2) at that precision; (3) within the unit's tolerance with the
    /// key's words; (4) within the tolerance; then (5) a unit or scale
    /// conversion of an observed number, at the answer's precision. A
    /// small integer (whole, below [`SMALL_INTEGER_LIMIT`]) found only by
    /// tiers 2 or 4 is [`Strength::Weak`]; it is never looked for by
    /// conversion.
    fn find_number(
        &self,
        x: f64,
        decimals: u32,
        tol: f64,
        key: Option<&str>,
        key_words: &[String],
    ) -> Option<Hit> {
        let small = is_small_integer(x);
        // A whole number is found as itself, not as anything it rounds.
        let exact_tol = if decimals == 0 && x.fract() == 0.0 {
            1e-9 * x.abs().max(1.0)
        } else {
            half_unit(decimals) + 1e-9 * x.abs().max(1.0)
        };
        let mut tiers: [Option<Hit>; 4] = [None, None, None, None];
        for (item, nums, text) in self.texts() {
            for n in nums {
                let exact = (n.value - x).abs() <= exact_tol;
                if !exact && !number_matches(x, n.value, tol) {
                    continue;
                }
                let keyed = has_key_context(text, n.range.start, key_words);
                let tier = match (exact, keyed) {
                    (true, true) => 0,
                    (true, false) => 1,
                    (false, true) => 2,
                    (false, false) => 3,
                };
                if tiers[tier].is_none() {
                    tiers[tier] = Some(Hit {
                        item,
                        range: n.range.clone(),
                        // Without the key: a small integer, or a number
                        // only within the tolerance, is weak evidence.
                        strength: if !keyed && (small || !exact) {
                            Strength::Weak
                        } else {
                            Strength::Strong
                        },
                        transform: None,
                    });
                }
            }
            if tiers[0].is_some() {
                break;
            }
        }
        if let Some(hit) = tiers.into_iter().flatten().next() {
            return Some(hit);
        }
        // Conversions need a specific value: 3 significant digits or more.
        if small || x == 0.0 || significant_digits(x, decimals) < 3 {
            return None;
        }
        let fitting: Vec<&Conversion> = CONVERSIONS
            .iter()
            .filter(|(_, _, words)| conversion_fits(words, key))
            .collect();
        for (item, nums, text) in self.texts() {
            for n in nums {
                if n.value == 0.0 || is_small_integer(n.value) {
                    continue;
                }
                for (name, convert, _) in &fitting {
                    if (convert(n.value) - x).abs() <= exact_tol
                        && has_key_context(text, n.range.start, key_words)
                    {
                        return Some(Hit {
                            item,
                            range: n.range.clone(),
                            strength: Strength::Strong,
                            transform: Some(name),
                        });
                    }
                }
            }
        }
        None
    }

    /// Earlier values of the same key: numbers that follow a mention of
    /// every one of the key's words on their line (the first number after
    /// the mention), before step `before` (all steps when 0), that differ
    /// from `x` beyond the tolerance.
    fn replaced(&self, x: f64, tol: f64, key_words: &[String], before: u64) -> Vec<Replaced> {
        let mut out: Vec<Replaced> = Vec::new();
        if key_words.is_empty() {
            return out;
        }
        // The longest word anchors the search: each of its mentions is
        // followed to the first number after it, whose span back to the
        // previous number (or the line start) must hold every key word.
        let anchor = key_words
            .iter()
            .max_by_key(|w| w.len())
            .map_or("", String::as_str);
        let finder = memchr::memmem::Finder::new(anchor);
        for item in &self.items {
            if before > 0 && item.obs.step >= before {
                break;
            }
            let text = item.obs.text.as_str();
            let lower = item.lower();
            let mut from = 0usize;
            while let Some(p) = lower
                .get(from..)
                .and_then(|rest| finder.find(rest.as_bytes()))
            {
                let at = from + p;
                from = at + anchor.len().max(1);
                let nums = item.nums();
                let idx = nums.partition_point(|n| n.range.start < from);
                let Some(n) = nums.get(idx) else {
                    break;
                };
                let prev_end = idx.checked_sub(1).map_or(0, |k| nums[k].range.end);
                let between_start = line_start(text, n.range.start, prev_end);
                if at < between_start {
                    continue;
                }
                let Some(between) = lower.get(between_start..n.range.start) else {
                    continue;
                };
                if !key_words.iter().all(|w| between.contains(w.as_str())) {
                    continue;
                }
                if number_matches(x, n.value, tol)
                    || out.iter().any(|r| r.value == n.value)
                    || out.len() >= MAX_REPLACED
                {
                    continue;
                }
                out.push(Replaced {
                    step: item.obs.step,
                    value: n.value,
                });
            }
        }
        out
    }

    /// The first text holding `needle` (lowercase) as a substring.
    fn find_text(&self, needle: &str) -> Option<Hit> {
        if needle.is_empty() {
            return None;
        }
        let finder = memchr::memmem::Finder::new(needle);
        if let Some(at) = self
            .prompt
            .as_ref()
            .and(finder.find(self.prompt_lower.as_bytes()))
        {
            return Some(plain_hit(None, at, needle.len()));
        }
        self.items.iter().enumerate().find_map(|(i, it)| {
            finder
                .find(it.lower().as_bytes())
                .map(|at| plain_hit(Some(i), at, needle.len()))
        })
    }

    /// A label: its lowercase text, or with `_` read as spaces (and the
    /// other way round); labels shorter than 3 characters are not looked for.
    fn find_label(&self, label: &str) -> Option<Hit> {
        let lower = label.trim().to_ascii_lowercase();
        if lower.chars().count() < 3 {
            return None;
        }
        let spaced = lower.replace('_', " ");
        let joined = lower.replace(' ', "_");
        [lower.as_str(), spaced.as_str(), joined.as_str()]
            .iter()
            .filter_map(|n| self.find_text(n))
            .min_by_key(|h| (h.item.map_or(0, |i| i + 1), h.range.start))
    }

    /// A path: the first step that read the file, else the first text
    /// naming its file name.
    fn find_path(&self, path: &str) -> Option<Hit> {
        let name = path.rsplit('/').next().unwrap_or(path);
        for (i, it) in self.items.iter().enumerate() {
            if it.obs.kind != ObservationKind::Search
                && it.obs.files.iter().any(|f| same_file(f, path))
            {
                let lower_name = name.to_ascii_lowercase();
                let at = it.lower().find(&lower_name).unwrap_or(0);
                let len = if at == 0 && !it.lower().starts_with(&lower_name) {
                    0
                } else {
                    name.len()
                };
                return Some(plain_hit(Some(i), at, len));
            }
        }
        self.find_text(&name.to_ascii_lowercase())
    }
}

#[allow(clippy::panic)]
fn unreachable_source() -> ! {
    unreachable!("a prompt hit exists only when the prompt does")
}

fn plain_hit(item: Option<usize>, at: usize, len: usize) -> Hit {
    Hit {
        item,
        range: at..at + len,
        strength: Strength::Strong,
        transform: None,
    }
}

fn nums_of(text: &str) -> Vec<Num> {
    number_spans(text)
        .into_iter()
        .map(|(range, value)| Num { range, value })
        .collect()
}

/// The words of a unit's key looked for before a number: the key's
/// meaning words and its own words, 3 letters or more.
fn key_words(unit: &UnitLedgerEntry) -> Vec<String> {
    let Some(key) = unit.key.as_deref() else {
        return Vec::new();
    };
    let mut words: Vec<String> = key_meaning_words(key)
        .into_iter()
        .chain(normalize_key(key).split('_').map(str::to_owned))
        .filter(|w| w.len() >= 3 && !w.bytes().all(|b| b.is_ascii_digit()))
        .collect();
    words.sort();
    words.dedup();
    // A word containing another (`hours` ⊃ `hour`) adds nothing to
    // `contains` checks and would make "all words" stricter for no reason.
    let all = words.clone();
    words.retain(|w| !all.iter().any(|o| o != w && w.contains(o.as_str())));
    words
}

/// Byte offset of the start of the line holding `at` (a newline or the
/// two characters `\n` of JSON-escaped text end the previous line), or
/// `floor` when the line starts before it (the scan stops there, so
/// reading a long single-line text number by number stays linear).
fn line_start(text: &str, at: usize, floor: usize) -> usize {
    let head = &text.as_bytes()[..at.min(text.len())];
    let floor = floor.min(head.len());
    let mut i = head.len();
    while i > floor {
        if head[i - 1] == b'\n' {
            return i;
        }
        if i >= 2 && head[i - 2] == b'\\' && head[i - 1] == b'n' {
            return i;
        }
        i -= 1;
    }
    floor
}

/// Whether at least half of the key's words (and at least one) are on the
/// number's line, at most [`KEY_CONTEXT_BYTES`] before it.
fn has_key_context(text: &str, at: usize, key_words: &[String]) -> bool {
    if key_words.is_empty() {
        return false;
    }
    let from = line_start(
        text,
        at,
        ceil_boundary(text, at.saturating_sub(KEY_CONTEXT_BYTES)),
    );
    let Some(window) = text.get(from..at) else {
        return false;
    };
    // Key words are lowercase and hold no `_`, `-` or space: an ASCII
    // case-insensitive search of the window is enough.
    let present = key_words.iter().filter(|w| contains_ci(window, w)).count();
    present > 0 && 2 * present >= key_words.len()
}

/// Whether `haystack` holds `word` (lowercase ASCII), ignoring ASCII case;
/// no allocation.
fn contains_ci(haystack: &str, word: &str) -> bool {
    let (h, w) = (haystack.as_bytes(), word.as_bytes());
    let Some((&first, rest)) = w.split_first() else {
        return false;
    };
    if w.len() > h.len() {
        return false;
    }
    // Candidate starts are found with memchr (the first byte in either
    // ASCII case), and only there is the rest compared.
    let last_start = h.len() - w.len();
    let (lower, upper) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    let mut from = 0;
    while let Some(offset) = memchr::memchr2(lower, upper, &h[from..=last_start]) {
        let start = from + offset;
        if h[start + 1..start + w.len()].eq_ignore_ascii_case(rest) {
            return true;
        }
        from = start + 1;
        if from > last_start {
            break;
        }
    }
    false
}

fn ceil_boundary(text: &str, mut i: usize) -> usize {
    while i < text.len() && !text.is_char_boundary(i) {
        i += 1;
    }
    i.min(text.len())
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while i > 0 && !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The text around a range, on one line.
fn excerpt(text: &str, range: &Range<usize>) -> String {
    let from = floor_boundary(text, range.start.saturating_sub(EXCERPT_BYTES));
    let to = ceil_boundary(text, range.end.saturating_add(EXCERPT_BYTES));
    let from = line_start(text, range.start, from);
    let mut s = text.get(from..to).unwrap_or_default().to_owned();
    if let Some(cut) = s[range.end.saturating_sub(from).min(s.len())..]
        .find(['\n'])
        .map(|i| i + range.end.saturating_sub(from).min(s.len()))
    {
        s.truncate(cut);
    }
    s.replace("\\n", " ").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::contains_ci;
    use proptest::prelude::*;

    /// The rule as written: some window of the haystack equals the word,
    /// ignoring ASCII case.
    fn by_windows(haystack: &str, word: &str) -> bool {
        let (h, w) = (haystack.as_bytes(), word.as_bytes());
        !w.is_empty()
            && w.len() <= h.len()
            && h.windows(w.len()).any(|part| part.eq_ignore_ascii_case(w))
    }

    proptest! {
        /// Haystacks and words from a small alphabet (both cases, digits,
        /// punctuation, a non-ASCII letter) so that matches, near misses
        /// and repeated first letters are common: the memchr search agrees
        /// with the window comparison.
        #[test]
        fn memchr_search_equals_windows(
            haystack in "[aAbBtT9_ é.-]{0,40}",
            word in "[abtT9é.]{0,5}",
        ) {
            prop_assert_eq!(contains_ci(&haystack, &word), by_windows(&haystack, &word));
        }
    }
}
