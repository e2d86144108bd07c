//! Parsing of a run's final answer in any shape the recorded runs use.
//!
//! An answer may arrive as a JSON object, an array, a scalar, or a string
//! that holds JSON (whole, inside a fenced block, or followed or preceded by
//! prose) or only prose. [`parse_answer`] never panics and keeps whatever it
//! could not read as JSON in [`ParseReport::remainder`]. Object keys written
//! as dotted paths (`"basin_metrics.below0_h": 12`) are read as the nested
//! objects they name.

use serde::Serialize;
use serde_json::{Map, Value};
use std::borrow::Cow;

#[cfg(feature = "code-reading")]
use crate::code_reading::{pending_python_code, read_code};

/// How the final answer was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum AnswerShape {
    /// A JSON object given directly.
    Object,
    /// A JSON array given directly (scored as `{"_root": [...]}`).
    Array,
    /// A string whose whole content is JSON.
    JsonString,
    /// JSON inside a fenced code block (```` ```json ````).
    FencedBlock,
    /// A JSON value embedded in prose (text before and/or after it).
    JsonWithProse,
    /// Prose only, scored in text mode.
    Prose,
    /// A bare number, boolean or null (matched as the answer's only value).
    Scalar,
    /// Nothing at all (empty string).
    Empty,
    /// A pending `python_exec` call recorded as the final answer: its code
    /// is read without running it (`read_code`, feature `code-reading`) and the variables
    /// it computes are scored as the answer's fields.
    PendingCode,
}

/// What the parser did with the answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ParseReport {
    /// The shape recognised.
    pub shape: AnswerShape,
    /// Text that was not part of the parsed JSON value (prose around it, or
    /// the whole answer in prose mode), trimmed.
    pub remainder: String,
    /// Byte length of the answer text (0 for structured answers).
    pub answer_bytes: usize,
}

/// A final answer made ready for matching.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedAnswer {
    /// The structured part, if any: an object (arrays are wrapped as
    /// `{"_root": [...]}`), or the bare scalar of a [`AnswerShape::Scalar`] answer.
    pub json: Option<Value>,
    /// The answer's text for text-mode matching (empty for structured answers).
    pub text: String,
    /// What was recognised and what was left over.
    pub report: ParseReport,
}

const MAX_STRING_UNWRAP: usize = 3;

/// Parses a final answer given as a JSON value (objects, arrays, strings and
/// scalars are all accepted). Keys written as dotted paths of identifiers
/// are read as the nested objects they name, merged with what is already
/// there; a file name (`report.json`), a number (`share_ge_0.5`) or a path
/// that would overwrite a value stays a key:
///
/// ```
/// use earthverse_answer_units::parse_answer;
/// let parsed = parse_answer(&serde_json::json!(
///     {"basin": {"snow_h": 30}, "basin.min_t_c": -12.5, "share_ge_0.5": 3}
/// ));
/// assert_eq!(
///     parsed.json,
///     Some(serde_json::json!({"basin": {"snow_h": 30, "min_t_c": -12.5}, "share_ge_0.5": 3}))
/// );
/// ```
///
/// Other shapes:
///
/// ```
/// use earthverse_answer_units::{parse_answer, AnswerShape};
/// let answer = serde_json::json!("Result:\n```json\n{\"x\": 1}\n```\nDone.");
/// let parsed = parse_answer(&answer);
/// assert_eq!(parsed.report.shape, AnswerShape::FencedBlock);
/// assert_eq!(parsed.json, Some(serde_json::json!({"x": 1})));
/// assert_eq!(parsed.report.remainder, "Result:\n\nDone.");
/// ```
pub fn parse_answer(answer: &Value) -> ParsedAnswer {
    match answer {
        Value::Object(_) => structured(structured_value(answer.clone()), AnswerShape::Object),
        Value::Array(_) => structured(structured_value(answer.clone()), AnswerShape::Array),
        Value::String(text) => parse_answer_text(text),
        Value::Null | Value::Bool(_) | Value::Number(_) => {
            let text = answer.to_string();
            ParsedAnswer {
                json: Some(answer.clone()),
                report: ParseReport {
                    shape: AnswerShape::Scalar,
                    remainder: text.clone(),
                    answer_bytes: text.len(),
                },
                text,
            }
        }
    }
}

/// Parses a final answer given as text.
///
/// ```
/// use earthverse_answer_units::{parse_answer_text, AnswerShape};
/// let parsed = parse_answer_text("{\"a\": 2} and some words");
/// assert_eq!(parsed.report.shape, AnswerShape::JsonWithProse);
/// assert_eq!(parsed.report.remainder, "and some words");
/// let prose = parse_answer_text("the peak was 35.5 C");
/// assert_eq!(prose.report.shape, AnswerShape::Prose);
/// assert!(prose.json.is_none());
/// ```
pub fn parse_answer_text(text: &str) -> ParsedAnswer {
    parse_text_inner(text, 0)
}

fn parse_text_inner(text: &str, unwraps: usize) -> ParsedAnswer {
    let trimmed = text.trim();
    let answer_bytes = text.len();
    if trimmed.is_empty() {
        return ParsedAnswer {
            json: None,
            text: String::new(),
            report: ParseReport {
                shape: AnswerShape::Empty,
                remainder: String::new(),
                answer_bytes,
            },
        };
    }
    // 1. The whole string is JSON.
    if let Ok(value) = serde_json::from_str::<Value>(trimmed) {
        match value {
            Value::Object(_) | Value::Array(_) => {
                let mut parsed = structured(structured_value(value), AnswerShape::JsonString);
                parsed.report.answer_bytes = answer_bytes;
                return parsed;
            }
            Value::String(inner) if unwraps < MAX_STRING_UNWRAP => {
                let mut parsed = parse_text_inner(&inner, unwraps + 1);
                parsed.report.answer_bytes = answer_bytes;
                return parsed;
            }
            _ => {}
        }
    }
    // 2. A fenced block: a ```json fence first, then any fence.
    if let Some((value, remainder)) = fenced_json(trimmed) {
        return ParsedAnswer {
            json: Some(structured_value(value)),
            text: trimmed.to_owned(),
            report: ParseReport {
                shape: AnswerShape::FencedBlock,
                remainder,
                answer_bytes,
            },
        };
    }
    // 3. The first complete JSON object (or array) inside prose.
    if let Some((value, remainder)) = embedded_json(trimmed) {
        return ParsedAnswer {
            json: Some(structured_value(value)),
            text: trimmed.to_owned(),
            report: ParseReport {
                shape: AnswerShape::JsonWithProse,
                remainder,
                answer_bytes,
            },
        };
    }
    // 4. Prose only.
    ParsedAnswer {
        json: None,
        text: trimmed.to_owned(),
        report: ParseReport {
            shape: AnswerShape::Prose,
            remainder: trimmed.to_owned(),
            answer_bytes,
        },
    }
}

fn structured(value: Value, shape: AnswerShape) -> ParsedAnswer {
    #[cfg(feature = "code-reading")]
    if let Some(code) = value.as_object().and_then(pending_python_code) {
        let reading = read_code(code);
        return ParsedAnswer {
            json: Some(Value::Object(reading.bindings)),
            text: String::new(),
            report: ParseReport {
                shape: AnswerShape::PendingCode,
                // The statements not evaluated stay visible, as prose does.
                remainder: reading
                    .skipped
                    .iter()
                    .map(|skipped| skipped.statement.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
                answer_bytes: code.len(),
            },
        };
    }
    ParsedAnswer {
        json: Some(value),
        text: String::new(),
        report: ParseReport {
            shape,
            remainder: String::new(),
            answer_bytes: 0,
        },
    }
}

/// A structured answer ready for the scorer: an array is wrapped as
/// `{"_root": [...]}`, and dotted-path keys are expanded.
fn structured_value(value: Value) -> Value {
    match expand_dotted_keys(value, 0) {
        Value::Array(items) => {
            let mut map = Map::new();
            map.insert("_root".to_owned(), Value::Array(items));
            Value::Object(map)
        }
        other => other,
    }
}

/// Depth below which dotted keys are expanded (deeper values are kept as
/// they are, so hostile nesting costs nothing extra).
const MAX_EXPAND_DEPTH: usize = 64;

/// File extensions that make a dotted key a file name (`report.json`), not
/// a path of keys.
const FILE_EXTENSIONS: &[&str] = &[
    "json", "geojson", "csv", "tsv", "txt", "md", "html", "htm", "xml", "pdf", "png", "jpg",
    "jpeg", "tif", "tiff", "nc", "zip", "shp", "parquet", "py",
];

/// Reads object keys written as dotted paths as the nested objects they
/// name: `{"basin_metrics.below0_h": 12}` is scored as
/// `{"basin_metrics": {"below0_h": 12}}`, merged into an object already
/// under `basin_metrics`. A key is a path only when every segment is an
/// identifier (a letter or `_`, then letters, digits and `_`) and the last
/// is not a file extension, so `dry_share_ge_0.5`, `report.json` and
/// `data/a.json` stay keys. A path that would overwrite a value, or pass
/// through one that is not an object, stays a key too.
fn expand_dotted_keys(value: Value, depth: usize) -> Value {
    if depth >= MAX_EXPAND_DEPTH {
        return value;
    }
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            let mut paths = Vec::new();
            for (key, item) in map {
                let item = expand_dotted_keys(item, depth + 1);
                if is_key_path(&key) {
                    paths.push((key, item));
                } else {
                    out.insert(key, item);
                }
            }
            for (key, item) in paths {
                let segments: Vec<&str> = key.split('.').collect();
                if let Err(item) = insert_path(&mut out, &segments, item) {
                    out.insert(key, item);
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .into_iter()
                .map(|item| expand_dotted_keys(item, depth + 1))
                .collect(),
        ),
        other => other,
    }
}

/// A ground truth read the way answers are: dotted-path keys expanded, so
/// that an answer equal to its ground truth still matches it key for key.
/// Borrowed (no copy) when no key is a path, as in every task of the
/// release's dev slice.
pub(crate) fn ground_truth_with_key_paths_expanded(gt: &Value) -> Cow<'_, Value> {
    fn has_key_path(value: &Value, depth: usize) -> bool {
        depth < MAX_EXPAND_DEPTH
            && match value {
                Value::Object(map) => map
                    .iter()
                    .any(|(k, v)| is_key_path(k) || has_key_path(v, depth + 1)),
                Value::Array(items) => items.iter().any(|v| has_key_path(v, depth + 1)),
                _ => false,
            }
    }
    if has_key_path(gt, 0) {
        Cow::Owned(expand_dotted_keys(gt.clone(), 0))
    } else {
        Cow::Borrowed(gt)
    }
}

fn is_key_path(key: &str) -> bool {
    let identifier = |segment: &str| {
        let mut chars = segment.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    let Some((_, last)) = key.rsplit_once('.') else {
        return false;
    };
    key.split('.').all(identifier)
        && !FILE_EXTENSIONS
            .iter()
            .any(|extension| extension.eq_ignore_ascii_case(last))
}

/// Puts `value` at `segments` under `map`, creating the objects on the
/// way; gives the value back when a segment on the way is not an object or
/// the last one is taken. Nothing has been created when it gives the value
/// back: once one segment is missing, every later one is a new object.
fn insert_path(map: &mut Map<String, Value>, segments: &[&str], value: Value) -> Result<(), Value> {
    let Some((last, parents)) = segments.split_last() else {
        return Err(value);
    };
    let mut at = map;
    for segment in parents {
        let entry = at
            .entry((*segment).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        match entry {
            Value::Object(inner) => at = inner,
            _ => return Err(value),
        }
    }
    if at.contains_key(*last) {
        return Err(value);
    }
    at.insert((*last).to_owned(), value);
    Ok(())
}

/// Finds a fenced code block whose content is a JSON object or array.
fn fenced_json(text: &str) -> Option<(Value, String)> {
    let mut fences = Vec::new();
    let mut search = 0;
    while let Some(pos) = text[search..].find("```") {
        let open = search + pos;
        let after_ticks = open + 3;
        let line_end = text[after_ticks..]
            .find('\n')
            .map_or(text.len(), |p| after_ticks + p);
        let tag = text[after_ticks..line_end].trim().to_lowercase();
        let body_start = (line_end + 1).min(text.len());
        let Some(close_rel) = text[body_start..].find("```") else {
            break;
        };
        let close = body_start + close_rel;
        fences.push((open, body_start, close, tag == "json"));
        search = close + 3;
        if search >= text.len() {
            break;
        }
    }
    // Prefer fences tagged json, in order; then any fence.
    fences.sort_by_key(|&(open, _, _, is_json)| (!is_json, open));
    for (open, body_start, close, _) in fences {
        let body = text[body_start..close].trim();
        if let Ok(value @ (Value::Object(_) | Value::Array(_))) = serde_json::from_str(body) {
            let remainder = join_remainder(&text[..open], &text[close + 3..]);
            return Some((value, remainder));
        }
    }
    None
}

/// Reads the first complete JSON object (or array, if no object parses)
/// starting at a `{` (or `[`) inside prose; the rest stays as remainder.
fn embedded_json(text: &str) -> Option<(Value, String)> {
    for opener in ['{', '['] {
        let mut search = 0;
        let mut tries = 0;
        while let Some(pos) = text[search..].find(opener) {
            let start = search + pos;
            let mut stream =
                serde_json::Deserializer::from_str(&text[start..]).into_iter::<Value>();
            if let Some(Ok(value @ (Value::Object(_) | Value::Array(_)))) = stream.next() {
                let end = start + stream.byte_offset();
                let remainder = join_remainder(&text[..start], &text[end..]);
                return Some((value, remainder));
            }
            search = start + opener.len_utf8();
            tries += 1;
            // Bound the work on adversarial input with many openers.
            if tries >= 64 || search >= text.len() {
                break;
            }
        }
    }
    None
}

fn join_remainder(before: &str, after: &str) -> String {
    let before = before.trim();
    let after = after.trim();
    match (before.is_empty(), after.is_empty()) {
        (true, true) => String::new(),
        (false, true) => before.to_owned(),
        (true, false) => after.to_owned(),
        (false, false) => format!("{before}\n\n{after}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(input: &str, shape: AnswerShape, json: Option<Value>, remainder: &str) {
        let parsed = parse_answer_text(input);
        assert_eq!(parsed.report.shape, shape, "shape of {input:?}");
        assert_eq!(parsed.json, json, "json of {input:?}");
        assert_eq!(parsed.report.remainder, remainder, "remainder of {input:?}");
    }

    #[test]
    fn shapes() {
        check("", AnswerShape::Empty, None, "");
        check(
            " {\"a\":1} ",
            AnswerShape::JsonString,
            Some(json!({"a": 1})),
            "",
        );
        check(
            "[1,2]",
            AnswerShape::JsonString,
            Some(json!({"_root": [1, 2]})),
            "",
        );
        check(
            "x\n```json\n{\"a\":1}\n```\ny",
            AnswerShape::FencedBlock,
            Some(json!({"a": 1})),
            "x\n\ny",
        );
        check(
            "```\n[\"p\"]\n```",
            AnswerShape::FencedBlock,
            Some(json!({"_root": ["p"]})),
            "",
        );
        check(
            "Answer: {\"a\": {\"b\": 2}} because",
            AnswerShape::JsonWithProse,
            Some(json!({"a": {"b": 2}})),
            "Answer:\n\nbecause",
        );
        check(
            "{broken {\"k\": true}",
            AnswerShape::JsonWithProse,
            Some(json!({"k": true})),
            "{broken",
        );
        check("just words 12", AnswerShape::Prose, None, "just words 12");
        check(
            "\"{\\\"a\\\": 3}\"",
            AnswerShape::JsonString,
            Some(json!({"a": 3})),
            "",
        );
        check(
            "```json\n{unterminated",
            AnswerShape::Prose,
            None,
            "```json\n{unterminated",
        );
    }

    #[test]
    fn values() {
        assert_eq!(
            parse_answer(&json!({"a": 1})).report.shape,
            AnswerShape::Object
        );
        assert_eq!(parse_answer(&json!([1])).json, Some(json!({"_root": [1]})));
        assert_eq!(parse_answer(&json!(3.5)).report.shape, AnswerShape::Scalar);
        assert_eq!(parse_answer(&json!(3.5)).text, "3.5");
    }
}
