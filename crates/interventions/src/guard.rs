//! The leak guard: does a text reveal a ground-truth value?

use earthverse_package_model::Task;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A ground-truth value found in a text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Leak {
    /// Where the value sits in the ground truth (`primary_gt.peak_c`).
    pub field: String,
    /// The value.
    pub value: Value,
    /// How it appears in the text.
    pub found: String,
}

/// One scalar of the ground truth: its path and value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Target {
    pub(crate) field: String,
    pub(crate) leaf: String,
    pub(crate) value: Value,
}

/// The scalar leaves of `primary_gt` and `key_values`: numbers, and
/// strings of at least four characters (labels, long text, paths).
pub fn ground_truth_values(task: &Task) -> Vec<(String, Value)> {
    targets(task)
        .into_iter()
        .map(|t| (t.field, t.value))
        .collect()
}

pub(crate) fn targets(task: &Task) -> Vec<Target> {
    let mut out = Vec::new();
    collect("primary_gt", "", &task.ground_truth.primary_gt, &mut out);
    if let Some(kv) = &task.ground_truth.key_values {
        collect("key_values", "", kv, &mut out);
    }
    out
}

fn collect(path: &str, leaf: &str, value: &Value, out: &mut Vec<Target>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                collect(&format!("{path}.{k}"), k, v, out);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                collect(&format!("{path}[{i}]"), leaf, v, out);
            }
        }
        Value::Number(_) => out.push(Target {
            field: path.to_string(),
            leaf: leaf.to_string(),
            value: value.clone(),
        }),
        Value::String(s) if s.trim().chars().count() >= 4 => out.push(Target {
            field: path.to_string(),
            leaf: leaf.to_string(),
            value: value.clone(),
        }),
        _ => {}
    }
}

/// The tolerance a number is matched within: the task's stated tolerance
/// for the field (by its leaf name, from `stated`), at least 0.5% of the value (ours: a
/// rounding that keeps the value recognisable still counts as the value).
fn tolerance(stated: &[(String, f64)], leaf: &str, value: f64) -> f64 {
    let stated = stated
        .iter()
        .filter(|(name, _)| name == leaf || name.rsplit('.').next() == Some(leaf))
        .map(|(_, t)| *t)
        .fold(0.0, f64::max);
    stated.max(value.abs() * 0.005).max(1e-9)
}

/// Numbers written in `text` as standalone tokens (not inside an
/// identifier or a path): `35`, `-3.5`, `1,234.5`, `1.2e3`, `45%`.
pub(crate) fn numbers_in(text: &str) -> Vec<(f64, String)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let joins = |c: char| c.is_alphanumeric() || c == '_' || c == '/';
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit()
            || (chars[i] == '-' && chars.get(i + 1).is_some_and(char::is_ascii_digit));
        if !starts || (i > 0 && (joins(chars[i - 1]) || chars[i - 1] == '.')) {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < chars.len()
            && (chars[j].is_ascii_digit()
                || ((chars[j] == '.' || chars[j] == ',')
                    && chars.get(j + 1).is_some_and(char::is_ascii_digit))
                || ((chars[j] == 'e' || chars[j] == 'E')
                    && chars
                        .get(j + 1)
                        .is_some_and(|c| c.is_ascii_digit() || *c == '-')))
        {
            j += 1;
        }
        let token: String = chars[i..j].iter().collect();
        // `001_station` and `2021/` are parts of names and paths; `35mm`
        // is a number with its unit.
        let part_of_name = chars.get(j).is_some_and(|c| *c == '_' || *c == '/');
        if !part_of_name {
            if let Ok(v) = token.replace(',', "").parse::<f64>() {
                out.push((v, token.clone()));
            }
            // A decimal comma (`35,5`) is also read as a decimal point.
            if token.matches(',').count() == 1 && !token.contains('.') {
                if let Ok(v) = token.replace(',', ".").parse::<f64>() {
                    out.push((v, token.clone()));
                }
            }
        }
        i = j;
    }
    out
}

fn word_bounded(haystack: &str, needle: &str) -> Option<usize> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(at) = haystack[from..].find(needle) {
        let start = from + at;
        let end = start + needle.len();
        let before = haystack[..start].chars().next_back();
        let after = haystack[end..].chars().next();
        if !before.is_some_and(is_word) && !after.is_some_and(is_word) {
            return Some(start);
        }
        from = start + needle.len().max(1);
        if from >= haystack.len() {
            break;
        }
    }
    None
}

/// The leaks of `text` for `task`: every ground-truth number (within its
/// tolerance, in any of the formats `numbers_in` reads) and
/// every label or long-text answer (case-insensitive, whole words) that
/// the text states and the public question does not.
pub fn guard(text: &str, task: &Task) -> Vec<Leak> {
    let question = task.question.to_lowercase();
    let question_numbers = numbers_in(&task.question);
    let text_numbers = numbers_in(text);
    let stated = task.ground_truth.absolute_tolerances();
    let lower = text.to_lowercase();
    let mut leaks = Vec::new();
    for target in targets(task) {
        match &target.value {
            Value::Number(n) => {
                let Some(v) = n.as_f64() else { continue };
                let tol = tolerance(&stated, &target.leaf, v);
                let near = |x: f64| (x - v).abs() <= tol;
                if question_numbers.iter().any(|(x, _)| near(*x)) {
                    continue;
                }
                if let Some((_, token)) = text_numbers.iter().find(|(x, _)| near(*x)) {
                    leaks.push(Leak {
                        field: target.field.clone(),
                        value: target.value.clone(),
                        found: token.clone(),
                    });
                }
            }
            Value::String(s) => {
                let needle = s.trim().to_lowercase();
                if word_bounded(&question, &needle).is_some() {
                    continue;
                }
                if let Some(at) = word_bounded(&lower, &needle) {
                    leaks.push(Leak {
                        field: target.field.clone(),
                        value: target.value.clone(),
                        found: text[at..at + needle.len()].to_string(),
                    });
                }
            }
            _ => {}
        }
    }
    leaks
}

/// A localising term found in a text: something that tells an agent
/// *where* the evidence is rather than *what to do* with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Localisation {
    /// What kind of term: `file`, `folder`, `source` or `quantity`.
    pub kind: String,
    /// The term as the task's data gives it.
    pub term: String,
}

/// The localising terms of `task` (App. A.3.1: the planning oracle gives
/// analytical moves and must not localise): every inventory path, file
/// name and file stem; every folder (category) name, with `_` or as words;
/// every source and layer name, and the product-like tokens of file names
/// (a word of three or more characters holding a capital letter, a digit
/// or a hyphen: `Open-Meteo`, `ERA5-Land`, `GDACS`); and every compound
/// quantity key the evidence-map oracle names (`peak_tmax_c`, and
/// `peak tmax c`). Plain single words (`window`, `sources`) are ordinary
/// language and not listed.
pub fn localising_terms(task: &Task, quantity_keys: &[String]) -> Vec<Localisation> {
    let mut out: Vec<Localisation> = Vec::new();
    let mut push = |kind: &str, term: &str| {
        let term = term.trim();
        if term.chars().count() >= 3 && !out.iter().any(|l| l.term.eq_ignore_ascii_case(term)) {
            out.push(Localisation {
                kind: kind.into(),
                term: term.to_string(),
            });
        }
    };
    for record in &task.event_files {
        let path = record.relative_path.as_str();
        push("file", path);
        let name = path.rsplit('/').next().unwrap_or(path);
        push("file", name);
        let stem = name.split('.').next().unwrap_or(name);
        if stem.len() >= 6 {
            push("file", stem);
        }
        for folder in path.split('/').rev().skip(1).filter(|f| *f != "data") {
            push("folder", folder);
            push("folder", &folder.replace('_', " "));
        }
        for token in stem.split(['_', ' ']) {
            let product_like = token.chars().any(|c| c.is_ascii_uppercase())
                || token.chars().any(|c| c.is_ascii_digit())
                || token.contains('-');
            let only_digits = token.chars().all(|c| c.is_ascii_digit() || c == '-');
            if product_like && !only_digits && token.len() >= 3 {
                push("source", token);
            }
        }
        for name in [record.source_name.as_deref(), record.layer_name.as_deref()]
            .into_iter()
            .flatten()
        {
            push("source", name);
        }
        if let Some(category) = record.category.as_deref() {
            push("folder", category);
            push("folder", &category.replace('_', " "));
        }
    }
    for key in quantity_keys {
        if key.contains('_') || key.chars().any(|c| c.is_ascii_digit()) {
            push("quantity", key);
            push("quantity", &key.replace('_', " "));
        }
    }
    out
}

/// The localising terms of `task` that `text` states (case-insensitive,
/// whole words). A source or quantity name the public question itself
/// states is not counted; a file or folder name always is.
pub fn localisation_leaks(text: &str, task: &Task, quantity_keys: &[String]) -> Vec<Localisation> {
    let lower = text.to_lowercase();
    let question = task.question.to_lowercase();
    localising_terms(task, quantity_keys)
        .into_iter()
        .filter(|l| {
            let needle = l.term.to_lowercase();
            word_bounded(&lower, &needle).is_some()
                && (matches!(l.kind.as_str(), "file" | "folder")
                    || word_bounded(&question, &needle).is_none())
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn standalone_numbers_are_read_in_their_formats_and_identifiers_are_not() {
        let found: Vec<f64> = numbers_in(
            "peak 35.5 C, 1,234 people, 35,5 again, -2.24, 45%, data/f_001.json, gt39c, 1.2e3",
        )
        .into_iter()
        .map(|(v, _)| v)
        .collect();
        for v in [35.5, 1234.0, 35.5, -2.24, 45.0, 1200.0] {
            assert!(found.contains(&v), "{v} in {found:?}");
        }
        assert!(!found.contains(&1.0), "f_001 is part of a path: {found:?}");
        assert!(!found.contains(&39.0), "gt39c is an identifier: {found:?}");
    }

    #[test]
    fn words_match_whole() {
        assert!(word_bounded("the highest level", "high").is_none());
        assert!(word_bounded("level: high.", "high").is_some());
        assert!(word_bounded("dry_hot_dominated", "dry_hot").is_none());
    }
}
