//! The answer contract of a task (§3.3: "Return only JSON in this
//! schema"), and the ways an answer can break it.
//!
//! The contract is the JSON template of the question's last fenced `json`
//! block, read leniently: a bare placeholder outside quotes (`<number>`)
//! becomes the string `"<number>"`, so its description is kept. A
//! question without a readable template falls back to the expert
//! solution's Final Answer object (the contract filled in).

use earthverse_answer_units::{
    key_meaning_words, normalize_key, parse_answer, solution_final_answer,
};
use serde_json::{Map, Value};

/// The answer contract of a task: its JSON template, else the expert
/// solution's Final Answer object; `None` when neither is an object.
///
/// An empty list in the template (`"mechanism_chain": []`) takes its
/// element shape from the same field of the solution's Final Answer, when
/// that holds one; an empty object stays free-form.
pub fn answer_contract(question: &str, solution: &str) -> Option<Value> {
    let filled = solution_final_answer(solution);
    match template(question) {
        Some(mut t) => {
            if let Some(f) = &filled {
                fill_empty_lists(&mut t, f);
            }
            Some(t)
        }
        None => filled,
    }
    .filter(Value::is_object)
}

fn fill_empty_lists(template: &mut Value, filled: &Value) {
    match (template, filled) {
        (Value::Object(t), Value::Object(f)) => {
            for (k, v) in t.iter_mut() {
                if let Some(fv) = f.get(k) {
                    fill_empty_lists(v, fv);
                }
            }
        }
        (t @ Value::Array(_), Value::Array(f)) if t.as_array().is_some_and(Vec::is_empty) => {
            if let Some(first) = f.first() {
                *t = Value::Array(vec![first.clone()]);
            }
        }
        _ => {}
    }
}

/// The last fenced JSON block of the question that reads as an object.
fn template(question: &str) -> Option<Value> {
    let mut found = None;
    let mut rest = question;
    while let Some(start) = rest.find("```") {
        let after = &rest[start + 3..];
        let Some(end) = after.find("```") else { break };
        let block = after[..end].trim_start_matches(|c: char| c.is_ascii_alphabetic());
        if let Some(v) = lenient_json(block).filter(Value::is_object) {
            found = Some(v);
        }
        rest = &after[end + 3..];
    }
    found
}

/// Parses a template: bare `<...>` placeholders quoted, `...` elided.
fn lenient_json(block: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str(block) {
        return Some(v);
    }
    let mut out = String::with_capacity(block.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = block.chars().peekable();
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '<' => {
                let mut inner = String::new();
                for d in chars.by_ref() {
                    if d == '>' {
                        break;
                    }
                    inner.push(d);
                }
                out.push_str(&serde_json::to_string(&format!("<{inner}>")).ok()?);
            }
            '.' if chars.peek() == Some(&'.') => {
                while chars.peek() == Some(&'.') {
                    chars.next();
                }
                out.push_str("null");
            }
            _ => out.push(c),
        }
    }
    serde_json::from_str(&out).ok()
}

/// The answer as a JSON value to check against a contract: an object as
/// is, a string through answer-units' parser (fenced or embedded JSON).
pub fn answer_object(answer: &Value) -> Option<Value> {
    match answer {
        Value::Object(_) => Some(answer.clone()),
        _ => parse_answer(answer).json.filter(Value::is_object),
    }
}

/// One way an answer breaks its contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractBreach {
    /// Dotted path of the field (`(root)` for the answer itself).
    pub path: String,
    /// What is wrong.
    pub problem: BreachKind,
}

/// The kinds of contract breaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreachKind {
    /// The answer is no JSON object at all (prose).
    NotJson,
    /// The answer is code or a tool call, not the answer.
    CodeInsteadOfAnswer,
    /// An object, array or scalar where the contract has another shape.
    WrongType,
    /// A field is renamed: contract keys absent while unknown keys appear
    /// at the same level.
    WrongKey,
    /// A template placeholder (`<number>`, `TBD`) left as the value.
    Placeholder,
    /// A contract field is absent (and not renamed) or empty.
    Absent,
}

/// Checks an answer against its contract. `Absent` breaches are the
/// missing required outputs; the others are schema errors.
pub fn check_contract(contract: &Value, answer: &Value) -> Vec<ContractBreach> {
    let mut out = Vec::new();
    let Some(obj) = answer_object(answer) else {
        let problem = if looks_like_code(answer) {
            BreachKind::CodeInsteadOfAnswer
        } else {
            BreachKind::NotJson
        };
        out.push(ContractBreach {
            path: "(root)".into(),
            problem,
        });
        return out;
    };
    // A code call is the answer only when the contract asks for `code`.
    if is_tool_call(answer) || (contract.get("code").is_none() && is_tool_call(&obj)) {
        out.push(ContractBreach {
            path: "(root)".into(),
            problem: BreachKind::CodeInsteadOfAnswer,
        });
        return out;
    }
    walk(contract, &obj, "", &mut out);
    out
}

fn looks_like_code(answer: &Value) -> bool {
    let Some(s) = answer.as_str() else {
        return false;
    };
    let t = s.trim_start();
    t.starts_with("```python")
        || t.starts_with("import ")
        || t.starts_with("from ")
        || t.starts_with("def ")
        || (t.contains("\"arguments\"") && t.contains("\"name\""))
}

/// A tool call (`{"name", "arguments": {"code"}}`) or a pending code
/// call (`{"code": "import ..."}`) recorded as the answer.
fn is_tool_call(obj: &Value) -> bool {
    const CALL_KEYS: &[&str] = &["name", "arguments", "code", "language", "tool", "timeout"];
    obj.as_object().is_some_and(|m| {
        let code = m
            .get("code")
            .or_else(|| m.get("arguments").and_then(|a| a.get("code")))
            .and_then(Value::as_str);
        code.is_some() && m.keys().all(|k| CALL_KEYS.contains(&k.as_str()))
    })
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_owned()
    } else {
        format!("{prefix}.{key}")
    }
}

/// A template string describing a number (`<number>`, `<integer>`).
fn wants_number(template: &Value) -> bool {
    match template {
        Value::Number(_) => true,
        Value::String(s) => {
            let l = s.to_ascii_lowercase();
            l.starts_with('<')
                && l.ends_with('>')
                && ["number", "integer", "float", "count", "int>"]
                    .iter()
                    .any(|w| l.contains(w))
                && !l.contains('|')
                && !l.contains("string")
        }
        _ => false,
    }
}

/// A value left as a placeholder.
fn is_placeholder(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        let t = s.trim();
        (t.starts_with('<') && t.ends_with('>') && t.len() > 2)
            || matches!(
                t.to_ascii_lowercase().as_str(),
                "tbd" | "todo" | "..." | "…" | "placeholder" | "<value>"
            )
    })
}

/// Text where a number is asked: no digit at all, or three words or
/// more around a number that does not read as one (`about 1.2 million
/// people`); `35.5`, `35.5 C`, `12 %` are numbers.
fn is_prose(s: &str) -> bool {
    let t = s.trim();
    if !t.chars().any(|c| c.is_ascii_digit()) {
        return true;
    }
    let bare = t.trim_end_matches(['%', ' ']).replace(',', "");
    bare.parse::<f64>().is_err() && t.split_whitespace().count() >= 3
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// Keys of a template object that are real keys (not `<metric_name>`).
fn fixed_keys(map: &Map<String, Value>) -> Option<Vec<&String>> {
    if map.keys().any(|k| k.contains('<')) {
        return None;
    }
    Some(map.keys().collect())
}

fn walk(template: &Value, answer: &Value, path: &str, out: &mut Vec<ContractBreach>) {
    let at = |p: &str| {
        if p.is_empty() {
            "(root)".to_owned()
        } else {
            p.to_owned()
        }
    };
    match template {
        Value::Object(tmap) => {
            let Some(amap) = answer.as_object() else {
                if !answer.is_null() {
                    out.push(ContractBreach {
                        path: at(path),
                        problem: BreachKind::WrongType,
                    });
                }
                return;
            };
            let Some(keys) = fixed_keys(tmap) else {
                return;
            };
            let norm = |k: &str| normalize_key(k);
            let answer_keys: Vec<String> = amap.keys().map(|k| norm(k)).collect();
            let template_keys: Vec<String> = keys.iter().map(|k| norm(k)).collect();
            // Unknown keys of the answer at this level, by their meaning
            // words: a missing key that shares one with an unknown key was
            // renamed, any other missing key is absent.
            let extras: Vec<Vec<String>> = amap
                .keys()
                .zip(&answer_keys)
                .filter(|(_, n)| !template_keys.contains(n))
                .map(|(k, _)| key_meaning_words(k))
                .collect();
            for (key, tnorm) in keys.iter().zip(&template_keys) {
                let words = key_meaning_words(key);
                let extra = extras
                    .iter()
                    .any(|e| e.iter().any(|w| w.len() > 3 && words.contains(w)));
                let child = join(path, key);
                let found = amap.iter().find(|(k, _)| &norm(k) == tnorm).map(|(_, v)| v);
                match found {
                    None => out.push(ContractBreach {
                        path: child,
                        problem: if extra {
                            BreachKind::WrongKey
                        } else {
                            BreachKind::Absent
                        },
                    }),
                    Some(v) => walk(&tmap[key.as_str()], v, &child, out),
                }
            }
        }
        Value::Array(titems) => match answer {
            Value::Array(aitems) if aitems.is_empty() && !titems.is_empty() => {
                out.push(ContractBreach {
                    path: at(path),
                    problem: BreachKind::Absent,
                });
            }
            Value::Array(aitems) => {
                if let Some(first @ Value::Object(_)) = titems.first() {
                    for (i, item) in aitems.iter().enumerate() {
                        walk(first, item, &format!("{path}[{i}]"), out);
                    }
                } else if aitems.iter().any(is_placeholder) {
                    out.push(ContractBreach {
                        path: at(path),
                        problem: BreachKind::Placeholder,
                    });
                }
            }
            Value::Null => out.push(ContractBreach {
                path: at(path),
                problem: BreachKind::Absent,
            }),
            _ => out.push(ContractBreach {
                path: at(path),
                problem: BreachKind::WrongType,
            }),
        },
        scalar => {
            if is_placeholder(answer) {
                out.push(ContractBreach {
                    path: at(path),
                    problem: BreachKind::Placeholder,
                });
            } else if is_empty(answer) {
                out.push(ContractBreach {
                    path: at(path),
                    problem: BreachKind::Absent,
                });
            } else if answer.is_object()
                || answer.is_array()
                || (wants_number(scalar)
                    && (answer.is_boolean() || answer.as_str().is_some_and(is_prose)))
            {
                out.push(ContractBreach {
                    path: at(path),
                    problem: BreachKind::WrongType,
                });
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn template_with_bare_placeholders_reads() {
        let q = "Return:\n```json\n{\"a\": <number>, \"b\": {\"c\": \"<YYYY-MM-DD>\"}, \"d\": [...]}\n```\n";
        let t = answer_contract(q, "").unwrap();
        assert_eq!(t["a"], json!("<number>"));
        assert_eq!(t["b"]["c"], json!("<YYYY-MM-DD>"));
    }

    #[test]
    fn breaches_are_named() {
        let t = json!({"source_paths": {"event_report": "<path>"}, "n": "<number>", "w": "<string>", "lst": ["<x>"]});
        let a = json!({"source_paths": ["a.json"], "n": "many", "w": {"start": 1}, "lst": "x"});
        let kinds: Vec<_> = check_contract(&t, &a)
            .into_iter()
            .map(|b| b.problem)
            .collect();
        assert_eq!(kinds, vec![BreachKind::WrongType; 4]);
        let renamed = check_contract(&t, &json!({"paths": {}, "n": 1, "w": "x", "lst": ["y"]}));
        assert_eq!(renamed[0].problem, BreachKind::WrongKey);
        let absent = check_contract(&t, &json!({"notes": "x", "n": 1, "w": "x", "lst": ["y"]}));
        assert_eq!(absent[0].problem, BreachKind::Absent);
        let placeholder = check_contract(
            &t,
            &json!({"n": "<number>", "w": "x", "lst": ["y"], "source_paths": {"event_report": "p"}}),
        );
        assert_eq!(placeholder[0].problem, BreachKind::Placeholder);
        let prose = check_contract(
            &t,
            &json!({"n": "about 1.2 million people", "w": "x", "lst": ["y"], "source_paths": {"event_report": "p"}}),
        );
        assert_eq!(prose[0].problem, BreachKind::WrongType);
        let code = check_contract(&t, &json!("import json\nprint(1)"));
        assert_eq!(code[0].problem, BreachKind::CodeInsteadOfAnswer);
        let fine =
            json!({"source_paths": {"event_report": "p"}, "n": "35.5 C", "w": "x", "lst": ["y"]});
        assert!(check_contract(&t, &fine).is_empty());
    }
}
