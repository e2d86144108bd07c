//! `summarize_table_or_json(path)`.
//!
//! CSV: `rows`, `columns`, five `sample_rows`, per-column numeric
//! `{count, min, max, mean, p95}`. JSON/GeoJSON: `shape` (types to depth 3,
//! first 30 keys, lists as `{type: "list", length, sample}`),
//! `numeric_list_summaries` (up to 60 flattened numeric lists) and a
//! `text_preview`: the first 3,000 characters of the document re-serialised
//! with two-space indentation (`reference-harness.md`).

use super::text::decode_python_text;
use super::{resolve_file, str_arg, suffix_of};
use crate::tool::{Tool, ToolContext, ToolFamily, ToolOutput};
use async_trait::async_trait;
use serde_json::{json, Map, Value};

/// Keys of an object shown in a shape.
pub const SHAPE_MAX_KEYS: usize = 30;
/// Depth to which a shape is described.
pub const SHAPE_MAX_DEPTH: usize = 3;
/// Numeric lists summarised.
pub const MAX_NUMERIC_LISTS: usize = 60;
/// Characters of the text preview.
pub const TEXT_PREVIEW_CHARS: usize = 3_000;
/// Sample rows of a table.
pub const SAMPLE_ROWS: usize = 5;

/// Summarises a CSV table or a JSON/GeoJSON document.
#[derive(Debug, Clone, Copy, Default)]
pub struct SummarizeTableOrJson;

#[async_trait]
impl Tool for SummarizeTableOrJson {
    fn name(&self) -> &str {
        "summarize_table_or_json"
    }

    fn description(&self) -> &str {
        "Summarize a CSV table (rows, columns, 5 sample rows, numeric column statistics count/min/max/mean/p95) or a \
         JSON/GeoJSON document (shape to depth 3, summaries of up to 60 numeric lists, 3,000-character preview). \
         Argument: path."
    }

    fn family(&self) -> ToolFamily {
        ToolFamily::Research
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "default": "", "description": "(required) Package-relative or release-relative path of a .csv, .json or .geojson file."}
            }
        })
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutput {
        let path = str_arg(&args, "path").to_string();
        let ctx = ctx.clone();
        super::run_blocking("summarize_table_or_json", move || summarize(&ctx, &path)).await
    }
}

pub(crate) fn summarize(ctx: &ToolContext, path: &str) -> ToolOutput {
    if path.trim().is_empty() {
        return super::tool_exception("summarize_table_or_json", "ValueError", "path is required");
    }
    let resolved = match resolve_file(ctx, "summarize_table_or_json", path) {
        Ok(r) => r,
        Err(out) => return *out,
    };
    let release_path = ctx.release_path(&resolved.package_relative);
    let suffix = suffix_of(&resolved.package_relative);
    if !matches!(suffix.as_str(), ".csv" | ".json" | ".geojson") {
        return ToolOutput::failure(
            Value::String(format!("unsupported table/json suffix: {suffix}")),
            Vec::new(),
            vec![release_path],
        );
    }
    let bytes = match std::fs::read(&resolved.absolute) {
        Ok(b) => b,
        Err(e) => {
            return super::tool_exception("summarize_table_or_json", "OSError", &e.to_string())
        }
    };
    let text = decode_python_text(&bytes);
    let output = if suffix == ".csv" {
        summarize_csv(&release_path, &text)
    } else {
        match summarize_json(&release_path, &text) {
            Ok(v) => v,
            Err(message) => {
                let mut out =
                    super::tool_exception("summarize_table_or_json", "JSONDecodeError", &message);
                out.evidence_files = vec![release_path];
                return out;
            }
        }
    };
    ToolOutput::ok(output, vec![release_path])
}

/// Python's `type(x).__name__` for a JSON value.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "NoneType",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "str",
        Value::Array(_) => "list",
        Value::Object(_) => "dict",
    }
}

/// The shape of a JSON value to [`SHAPE_MAX_DEPTH`].
pub fn json_shape(value: &Value, depth: usize) -> Value {
    if depth > SHAPE_MAX_DEPTH {
        return Value::String(type_name(value).into());
    }
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .take(SHAPE_MAX_KEYS)
                .map(|(k, v)| (k.clone(), json_shape(v, depth + 1)))
                .collect(),
        ),
        Value::Array(items) => json!({
            "type": "list",
            "length": items.len(),
            "sample": items.first().map(|x| json_shape(x, depth + 1)).unwrap_or(Value::Null),
        }),
        other => Value::String(type_name(other).into()),
    }
}

fn is_number(v: &Value) -> bool {
    matches!(v, Value::Number(_))
}

/// `{count, min, max, mean, p95}` of numbers, p95 as the element at
/// `int(0.95 * (n - 1))` of the sorted values.
pub fn numeric_summary(values: &[f64]) -> Value {
    if values.is_empty() {
        return json!({"count": 0});
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    let n = sorted.len();
    let mean = fsum(values) / n as f64;
    let p95 = sorted[((0.95 * (n as f64 - 1.0)) as usize).min(n - 1)];
    json!({
        "count": n,
        "min": sorted[0],
        "max": sorted[n - 1],
        "mean": mean,
        "p95": p95,
    })
}

/// Correctly rounded sum (Shewchuk's algorithm, as Python's `math.fsum`);
/// with the division below it gives `statistics.mean` on the recorded data.
pub fn fsum(values: &[f64]) -> f64 {
    let mut partials: Vec<f64> = Vec::new();
    for &v in values {
        let mut x = v;
        let mut i = 0;
        for j in 0..partials.len() {
            let mut y = partials[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            let hi = x + y;
            let lo = y - (hi - x);
            if lo != 0.0 {
                partials[i] = lo;
                i += 1;
            }
            x = hi;
        }
        partials.truncate(i);
        partials.push(x);
    }
    // Round the partials to one double, correcting for half-way cases.
    let mut n = partials.len();
    if n == 0 {
        return 0.0;
    }
    n -= 1;
    let mut hi = partials[n];
    let mut lo = 0.0;
    while n > 0 {
        let x = hi;
        n -= 1;
        let y = partials[n];
        hi = x + y;
        let yr = hi - x;
        lo = y - yr;
        if lo != 0.0 {
            break;
        }
    }
    if n > 0 && ((lo < 0.0 && partials[n - 1] < 0.0) || (lo > 0.0 && partials[n - 1] > 0.0)) {
        let y = lo * 2.0;
        let x = hi + y;
        let yr = x - hi;
        if y == yr {
            hi = x;
        }
    }
    hi
}

fn collect_numeric_lists(value: &Value, prefix: &str, out: &mut Map<String, Value>) {
    if out.len() >= MAX_NUMERIC_LISTS {
        return;
    }
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                collect_numeric_lists(v, &key, out);
            }
        }
        Value::Array(items) if !items.is_empty() && items.iter().all(is_number) => {
            let values: Vec<f64> = items.iter().filter_map(Value::as_f64).collect();
            let key = if prefix.is_empty() {
                "$".to_string()
            } else {
                prefix.to_string()
            };
            out.insert(key, numeric_summary(&values));
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                if out.len() >= MAX_NUMERIC_LISTS {
                    break;
                }
                collect_numeric_lists(item, &format!("{prefix}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn summarize_json(release_path: &str, text: &str) -> Result<Value, String> {
    let value: Value =
        serde_json::from_str(text.trim_start_matches('\u{feff}')).map_err(|e| e.to_string())?;
    let mut lists = Map::new();
    collect_numeric_lists(&value, "", &mut lists);
    // The reference previews the re-serialised document, not the raw file.
    let preview: String = crate::render::to_python_json_pretty(&value)
        .chars()
        .take(TEXT_PREVIEW_CHARS)
        .collect();
    Ok(json!({
        "path": release_path,
        "type": "json",
        "shape": json_shape(&value, 0),
        "numeric_list_summaries": lists,
        "text_preview": preview,
    }))
}

fn summarize_csv(release_path: &str, text: &str) -> Value {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_reader(text.as_bytes());
    let columns: Vec<String> = reader
        .headers()
        .map(|h| h.iter().map(str::to_string).collect())
        .unwrap_or_default();
    let mut rows = 0usize;
    let mut samples = Vec::new();
    let mut numeric: Vec<Vec<f64>> = vec![Vec::new(); columns.len()];
    let mut non_numeric = vec![false; columns.len()];
    for record in reader.records().flatten() {
        rows += 1;
        if samples.len() < SAMPLE_ROWS {
            let row: Map<String, Value> = columns
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    (
                        c.clone(),
                        record
                            .get(i)
                            .map(|s| Value::String(s.into()))
                            .unwrap_or(Value::Null),
                    )
                })
                .collect();
            samples.push(Value::Object(row));
        }
        for (i, field) in record.iter().enumerate().take(columns.len()) {
            let field = field.trim();
            if field.is_empty() {
                continue;
            }
            match field.parse::<f64>() {
                Ok(v) if v.is_finite() => numeric[i].push(v),
                _ => non_numeric[i] = true,
            }
        }
    }
    let summaries: Map<String, Value> = columns
        .iter()
        .enumerate()
        .filter(|(i, _)| !numeric[*i].is_empty() && !non_numeric[*i])
        .map(|(i, c)| (c.clone(), numeric_summary(&numeric[i])))
        .collect();
    json!({
        "path": release_path,
        "type": "csv",
        "rows": rows,
        "columns": columns,
        "sample_rows": samples,
        "numeric_summaries": summaries,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn fsum_is_correctly_rounded() {
        assert_eq!(fsum(&[0.1; 10]), 1.0);
        assert_eq!(fsum(&[1e100, 1.0, -1e100]), 1.0);
    }

    #[test]
    fn shape_matches_recorded_geojson() {
        let v: Value = serde_json::from_str(
            r#"{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[-58.225,-21.725],[-57.775,-21.725],[-57.775,-21.275],[-58.225,-21.275],[-58.225,-21.725]]]}}"#,
        )
        .unwrap();
        let shape = json_shape(&v, 0);
        assert_eq!(
            shape["geometry"]["coordinates"],
            json!({"type": "list", "length": 1, "sample": {"type": "list", "length": 5, "sample": "list"}})
        );
        let mut lists = Map::new();
        collect_numeric_lists(&v, "", &mut lists);
        assert_eq!(
            lists["geometry.coordinates[0][0]"],
            json!({"count": 2, "min": -58.225, "max": -21.725, "mean": -39.975, "p95": -58.225})
        );
    }
}
