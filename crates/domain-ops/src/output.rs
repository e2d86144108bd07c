//! Output assembly (paper §3.4): checking an answer against its template,
//! normalising and rounding values, rankings, evidence tables, statements,
//! briefings, files written to the run's scratch directory only, chart and
//! map specifications, cross-checks and provenance bundles (App. B.3).

use crate::op::{opt, req, Kind, OpCall, Operation};
use crate::stats::num;
use crate::{DomainError, Result};
use earthverse_tool_registry::ToolFamily;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;

const F: ToolFamily = ToolFamily::OutputAssembly;

/// The support types of the answer contract (reference harness).
pub const SUPPORT_TYPES: [&str; 7] = [
    "direct_metric",
    "report_claim",
    "metadata",
    "image_context",
    "table_metric",
    "derived_metric",
    "unsupported_boundary",
];

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn compare_shape(
    template: &Value,
    answer: &Value,
    path: &str,
    missing: &mut Vec<String>,
    mismatched: &mut Vec<Value>,
    extra: &mut Vec<String>,
) {
    match (template, answer) {
        (Value::Object(t), Value::Object(a)) => {
            for (k, tv) in t {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match a.get(k) {
                    None => missing.push(p),
                    Some(av) => compare_shape(tv, av, &p, missing, mismatched, extra),
                }
            }
            for k in a.keys().filter(|k| !t.contains_key(*k)) {
                extra.push(if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                });
            }
        }
        (Value::Null, _) | (_, Value::Null) => {}
        (t, a) if type_name(t) != type_name(a) && !(t.is_string() && type_name(a) != "object") => {
            mismatched.push(json!({"path": path, "expected": type_name(t), "found": type_name(a)}));
        }
        _ => {}
    }
}

/// Rounds to `decimals` places (half away from zero).
pub fn round_decimals(x: f64, decimals: i32) -> f64 {
    let f = 10f64.powi(decimals);
    (x * f).round() / f
}

/// Rounds to `sig` significant figures.
pub fn round_sig(x: f64, sig: i32) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let d = sig - 1 - x.abs().log10().floor() as i32;
    round_decimals(x, d)
}

fn write_scratch(c: &OpCall<'_>, name: &str, bytes: &[u8]) -> Result<String> {
    let file = c.text(name)?;
    let ok = !file.is_empty()
        && !file.contains(['/', '\\', '\0'])
        && !file.starts_with('.')
        && file.len() <= 128;
    if !ok {
        return Err(c.invalid(name, "must be a plain file name (no directories); files are written to the run's scratch directory only"));
    }
    let dir = &c.ctx().scratch_dir;
    std::fs::create_dir_all(dir).map_err(|e| DomainError::Input {
        file: file.clone(),
        message: format!("scratch: {e}"),
    })?;
    let path = dir.join(&file);
    std::fs::write(&path, bytes).map_err(|e| DomainError::Input {
        file: file.clone(),
        message: format!("write: {e}"),
    })?;
    Ok(format!("scratch/{file}"))
}

fn tokens(s: &str) -> BTreeSet<String> {
    s.to_lowercase()
        .split(|ch: char| !ch.is_alphanumeric())
        .filter(|t| t.len() > 2)
        .map(str::to_string)
        .collect()
}

/// The output-assembly operations.
pub fn operations() -> Vec<Operation> {
    vec![
        Operation::new("answer_schema_validate", F, "Check a final-answer JSON against the question's answer template: missing keys, type mismatches and extra keys (key paths).", vec![req("answer", Kind::Any, "the answer object"), req("template", Kind::Any, "the template object from the question")], |c| {
            let (mut m, mut t, mut e) = (Vec::new(), Vec::new(), Vec::new());
            compare_shape(c.value("template")?, c.value("answer")?, "", &mut m, &mut t, &mut e);
            Ok(json!({"valid": m.is_empty() && t.is_empty(), "missing": m, "type_mismatches": t, "extra": e}))
        }),
        Operation::new("answer_unit_normalize", F, "Convert answer values to the units the task asks for and round them: [{key, value, from, to, decimals}].", vec![req("items", Kind::Any, "[{key, value, from, to, decimals?}]")], |c| {
            let Some(Value::Array(items)) = c.args().get("items") else { return Err(c.invalid("items", "expected an array")); };
            let out: Vec<Value> = items.iter().map(|i| {
                let v = i.get("value").and_then(crate::op::as_f64);
                let (f, t) = (i.get("from").and_then(Value::as_str).unwrap_or(""), i.get("to").and_then(Value::as_str).unwrap_or(""));
                let conv = v.and_then(|v| if f == t { Some(v) } else { crate::reports::convert(v, f, t) });
                let d = i.get("decimals").and_then(Value::as_i64);
                let r = conv.map(|x| d.map(|d| round_decimals(x, d as i32)).unwrap_or(x));
                json!({"key": i.get("key"), "value": r, "units": t, "ok": r.is_some()})
            }).collect();
            Ok(json!({"items": out}))
        }),
        Operation::new("round_significant", F, "Round a value to significant figures or to decimal places (half away from zero).", vec![req("value", Kind::Number, "value"), opt("sig", Kind::Integer, "significant figures", Value::Null), opt("decimals", Kind::Integer, "decimal places", Value::Null)], |c| {
            let v = c.num("value")?;
            match (c.num_opt("sig")?, c.num_opt("decimals")?) {
                (Some(s), _) if s >= 1.0 => Ok(json!({"value": round_sig(v, s as i32)})),
                (_, Some(d)) => Ok(json!({"value": round_decimals(v, d as i32)})),
                _ => Err(c.invalid("sig", "give sig ≥ 1 or decimals")),
            }
        }),
        Operation::new("ranking_output", F, "Order items by score (descending unless ascending) with standard competition ranks for ties (1, 2, 2, 4).", vec![req("items", Kind::Any, "[{name, score}]"), opt("ascending", Kind::Bool, "lower is better", json!(false))], |c| {
            let Some(Value::Array(items)) = c.args().get("items") else { return Err(c.invalid("items", "expected [{name, score}]")); };
            let mut v: Vec<(Value, f64)> = items.iter().filter_map(|i| Some((i.get("name")?.clone(), crate::op::as_f64(i.get("score")?)?))).collect();
            let asc = c.flag("ascending")?;
            v.sort_by(|a, b| if asc { a.1.total_cmp(&b.1) } else { b.1.total_cmp(&a.1) });
            let mut rows = Vec::new();
            for (i, (n, s)) in v.iter().enumerate() {
                let rank = v.iter().position(|x| x.1 == *s).unwrap_or(i) + 1;
                rows.push(json!({"rank": rank, "name": n, "score": s}));
            }
            Ok(json!({"ranking": rows}))
        }),
        Operation::new("multiple_choice_resolve", F, "Score each option by the share of its content words found in the evidence text and pick the best (ties reported).", vec![req("options", Kind::Any, "{letter: option text}"), req("evidence", Kind::Text, "evidence text")], |c| {
            let Some(opts) = c.value("options")?.as_object() else { return Err(c.invalid("options", "expected {letter: text}")); };
            let ev = tokens(&c.text("evidence")?);
            let scores: Vec<(String, f64)> = opts.iter().map(|(k, v)| { let t = tokens(v.as_str().unwrap_or_default()); (k.clone(), if t.is_empty() { 0.0 } else { t.iter().filter(|w| ev.contains(*w)).count() as f64 / t.len() as f64 }) }).collect();
            let best = scores.iter().map(|s| s.1).fold(f64::NEG_INFINITY, f64::max);
            let winners: Vec<&String> = scores.iter().filter(|s| s.1 == best).map(|s| &s.0).collect();
            Ok(json!({"scores": scores.iter().map(|(k, s)| json!({"option": k, "score": s})).collect::<Vec<_>>(), "best": if winners.len() == 1 { json!(winners[0]) } else { Value::Null }, "tied": winners}))
        }),
        Operation::new("evidence_table", F, "Validate evidence rows {claim, source_file, support_type}: support type from the answer contract and source file resolvable inside the package.", vec![req("rows", Kind::Any, "[{claim, source_file, support_type}]")], |c| {
            let Some(Value::Array(rows)) = c.args().get("rows") else { return Err(c.invalid("rows", "expected an array")); };
            let out: Vec<Value> = rows.iter().map(|r| {
                let st = r.get("support_type").and_then(Value::as_str).unwrap_or("");
                let sf = r.get("source_file").and_then(Value::as_str).unwrap_or("");
                let resolved = earthverse_package_model::resolve(&c.ctx().package_root, sf);
                json!({"claim": r.get("claim"), "source_file": resolved.as_ref().map(|p| p.package_relative.clone()).unwrap_or_else(|_| sf.to_string()), "support_type": st, "support_type_valid": SUPPORT_TYPES.contains(&st), "source_exists": resolved.is_ok_and(|p| p.absolute.is_file())})
            }).collect();
            let bad = out.iter().filter(|r| r["support_type_valid"] == false || r["source_exists"] == false).count();
            Ok(json!({"rows": out, "invalid_rows": bad}))
        }),
        Operation::new("uncertainty_statement", F, "A sentence for an estimate with its interval, the half-width and relative uncertainty.", vec![req("estimate", Kind::Number, "estimate"), req("low", Kind::Number, "lower bound"), req("high", Kind::Number, "upper bound"), opt("confidence_pct", Kind::Number, "interval level", json!(95.0)), opt("units", Kind::Text, "units", json!("")), opt("decimals", Kind::Integer, "rounding", json!(1))], |c| {
            let (e, l, h) = (c.num("estimate")?, c.num("low")?, c.num("high")?);
            if !(l <= e && e <= h) { return Err(c.invalid("low", "needs low ≤ estimate ≤ high")); }
            let d = c.int("decimals")? as i32;
            let u = c.text("units")?;
            let p = |x: f64| format!("{:.*}", d.max(0) as usize, round_decimals(x, d));
            Ok(json!({"statement": format!("{} {u} ({}% interval {}–{} {u})", p(e), c.num("confidence_pct")?, p(l), p(h)).replace("  ", " ").trim().to_string(), "half_width": (h - l) / 2.0, "relative_uncertainty": num((h - l) / 2.0 / e.abs())}))
        }),
        Operation::new("threshold_statement", F, "Whether a value exceeds a criterion (gt/ge/lt/le) with the margin and a sentence.", vec![req("value", Kind::Number, "value"), req("threshold", Kind::Number, "criterion"), opt("op", Kind::Text, "gt | ge | lt | le", json!("ge")), opt("label", Kind::Text, "quantity name", json!("value"))], |c| {
            let (v, t, op) = (c.num("value")?, c.num("threshold")?, c.text("op")?);
            let met = match op.as_str() { "gt" => v > t, "ge" => v >= t, "lt" => v < t, "le" => v <= t, o => return Err(c.invalid("op", format!("`{o}` is not gt/ge/lt/le"))) };
            let label = c.text("label")?;
            Ok(json!({"met": met, "margin": v - t, "statement": format!("The {label} of {v} {} the criterion ({op} {t}).", if met { "meets" } else { "does not meet" })}))
        }),
        Operation::new("briefing_compose", F, "A fixed-section Markdown briefing (Event, Key figures, Evidence, Uncertainties) from computed facts.", vec![req("title", Kind::Text, "title"), req("facts", Kind::Any, "{name: value}"), opt("evidence", Kind::Texts, "source files", json!([])), opt("uncertainties", Kind::Texts, "caveats", json!([]))], |c| {
            let facts = c.value("facts")?.as_object().cloned().unwrap_or_default();
            let mut md = format!("# {}\n\n## Key figures\n", c.text("title")?);
            for (k, v) in &facts { md.push_str(&format!("- {k}: {}\n", v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string()))); }
            md.push_str("\n## Evidence\n");
            for e in c.texts("evidence")? { md.push_str(&format!("- {e}\n")); }
            md.push_str("\n## Uncertainties\n");
            for u in c.texts("uncertainties")? { md.push_str(&format!("- {u}\n")); }
            Ok(json!({"markdown": md, "facts": facts.len()}))
        }),
        Operation::new("geojson_output", F, "Write result features as a GeoJSON FeatureCollection into the run's scratch directory (never the package).", vec![req("file_name", Kind::Text, "plain file name"), req("features", Kind::Any, "array of GeoJSON features")], |c| {
            let Some(Value::Array(fs)) = c.args().get("features") else { return Err(c.invalid("features", "expected an array of features")); };
            if fs.iter().any(|f| f.get("type").and_then(Value::as_str) != Some("Feature")) { return Err(c.invalid("features", "every item must be a GeoJSON Feature")); }
            let doc = json!({"type": "FeatureCollection", "features": fs});
            let path = write_scratch(c, "file_name", doc.to_string().as_bytes())?;
            Ok(json!({"written": path, "features": fs.len()}))
        }),
        Operation::new("csv_output", F, "Write result rows (objects) as CSV into the run's scratch directory; columns are the union of keys in first-seen order.", vec![req("file_name", Kind::Text, "plain file name"), req("rows", Kind::Any, "array of objects")], |c| {
            let Some(Value::Array(rows)) = c.args().get("rows") else { return Err(c.invalid("rows", "expected an array of objects")); };
            let mut cols: Vec<String> = Vec::new();
            for r in rows { if let Some(o) = r.as_object() { for k in o.keys() { if !cols.contains(k) { cols.push(k.clone()); } } } }
            let mut w = csv::Writer::from_writer(Vec::new());
            let _ = w.write_record(&cols);
            for r in rows { let rec: Vec<String> = cols.iter().map(|k| match r.get(k) { Some(Value::String(s)) => s.clone(), Some(Value::Null) | None => String::new(), Some(v) => v.to_string() }).collect(); let _ = w.write_record(&rec); }
            let bytes = w.into_inner().map_err(|e| DomainError::compute("csv_output", e.to_string()))?;
            let path = write_scratch(c, "file_name", &bytes)?;
            Ok(json!({"written": path, "rows": rows.len(), "columns": cols}))
        }),
        Operation::new("chart_spec", F, "A Vega-Lite v5 line or bar chart specification for a series (x labels and y values).", vec![req("x", Kind::Any, "x labels or numbers"), req("y", Kind::Numbers, "values"), opt("mark", Kind::Text, "line | bar | point", json!("line")), opt("title", Kind::Text, "title", json!("")), opt("y_title", Kind::Text, "y axis title", json!("value"))], |c| {
            let xs = c.value("x")?.as_array().cloned().unwrap_or_default();
            let ys = c.numbers("y")?;
            if xs.len() != ys.len() { return Err(c.invalid("y", "must match x")); }
            let mark = c.text("mark")?;
            if !["line", "bar", "point"].contains(&mark.as_str()) { return Err(c.invalid("mark", "line, bar or point")); }
            let values: Vec<Value> = xs.iter().zip(&ys).map(|(x, y)| json!({"x": x, "y": num(*y)})).collect();
            Ok(json!({"spec": {"$schema": "https://vega.github.io/schema/vega-lite/v5.json", "title": c.text("title")?, "data": {"values": values}, "mark": mark, "encoding": {"x": {"field": "x", "type": if xs.iter().all(Value::is_number) { "quantitative" } else { "ordinal" }}, "y": {"field": "y", "type": "quantitative", "title": c.text("y_title")?}}}}))
        }),
        Operation::new("map_spec", F, "A simple map specification: layers (GeoJSON) with styles and the bounding box that contains them.", vec![req("layers", Kind::Any, "[{name, geojson, color?}]")], |c| {
            let Some(Value::Array(ls)) = c.args().get("layers") else { return Err(c.invalid("layers", "expected an array")); };
            let mut bb = [f64::INFINITY, f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY];
            let mut out = Vec::new();
            for l in ls {
                let fs = crate::vector::features_from_geojson(l.get("geojson").unwrap_or(&Value::Null));
                for v in fs.iter().filter_map(|f| f.geometry.as_ref()).flat_map(crate::vector::Geometry::vertices) { bb = [bb[0].min(v[0]), bb[1].min(v[1]), bb[2].max(v[0]), bb[3].max(v[1])]; }
                out.push(json!({"name": l.get("name"), "color": l.get("color").cloned().unwrap_or(json!("#d62728")), "features": fs.len(), "geojson": l.get("geojson")}));
            }
            if !bb[0].is_finite() { return Err(c.refuse(json!({"empty_layers": true}), "no geometry in any layer")); }
            Ok(json!({"map": {"bbox": bb, "layers": out}}))
        }),
        Operation::new("cross_check", F, "Compare one quantity computed two ways: absolute and relative difference and agreement within tolerances.", vec![req("a", Kind::Number, "first computation"), req("b", Kind::Number, "second computation"), opt("abs_tolerance", Kind::Number, "absolute tolerance", json!(0.0)), opt("rel_tolerance", Kind::Number, "relative tolerance", json!(0.01))], |c| {
            let (a, b) = (c.num("a")?, c.num("b")?);
            let d = (a - b).abs();
            let rel = d / a.abs().max(b.abs()).max(f64::MIN_POSITIVE);
            Ok(json!({"abs_difference": d, "rel_difference": rel, "agree": d <= c.num("abs_tolerance")? || rel <= c.num("rel_tolerance")?}))
        }),
        Operation::new("provenance_bundle", F, "Provenance for answer units: SHA-256 of each named package file, and a hash of the operation parameters, so a claim can be traced (App. B.3).", vec![req("files", Kind::Texts, "package-relative files"), opt("parameters", Kind::Any, "operation parameters to fingerprint", json!({}))], |c| {
            let mut rows = Vec::new();
            for f in c.texts("files")? {
                let (rel, bytes) = crate::input::read_package_file(c.ctx(), &f)?;
                c.record(crate::input::Provenance { file: rel.clone(), variable: None, window: None });
                rows.push(json!({"file": rel, "bytes": bytes.len(), "sha256": hex::encode(Sha256::digest(&bytes))}));
            }
            let params = c.value("parameters")?;
            let canonical = serde_json::to_string(&sort_keys(params)).unwrap_or_default();
            Ok(json!({"files": rows, "parameters_sha256": hex::encode(Sha256::digest(canonical.as_bytes()))}))
        }),
    ]
}

fn sort_keys(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for k in keys {
                out.insert(k.clone(), sort_keys(&m[k]));
            }
            Value::Object(out)
        }
        Value::Array(a) => Value::Array(a.iter().map(sort_keys).collect()),
        other => other.clone(),
    }
}
