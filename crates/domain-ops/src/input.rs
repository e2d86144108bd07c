//! Inputs of operations: numeric series inline or from package files (JSON
//! by dotted path, CSV and Parquet by column, NetCDF by variable with the
//! `netcdf` feature), always through package-model's safe resolver, with
//! provenance (file, variable, window) recorded for every value used
//! (paper App. B.3: a claim must be traceable).

use crate::{DomainError, Result};
use earthverse_package_model::{resolve, sniff_bytes, FileKind};
use earthverse_tool_registry::ToolContext;
use serde::Serialize;
use serde_json::Value;

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Provenance {
    /// Package-relative file.
    pub file: String,
    /// Variable / field / column read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variable: Option<String>,
    /// Time window kept, `start..end` labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
}

/// A numeric series with optional time labels. Missing values are NaN.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// Values (NaN = missing).
    pub values: Vec<f64>,
    /// Time labels, same length as `values` when present.
    pub times: Option<Vec<String>>,
}

impl Series {
    /// An inline series with no time axis.
    pub fn inline(values: Vec<f64>) -> Self {
        Self {
            values,
            times: None,
        }
    }

    /// Number of finite values.
    pub fn valid_count(&self) -> usize {
        self.values.iter().filter(|v| v.is_finite()).count()
    }

    /// The finite values, in order.
    pub fn valid(&self) -> Vec<f64> {
        self.values
            .iter()
            .copied()
            .filter(|v| v.is_finite())
            .collect()
    }

    /// The time label of index `i`, if any.
    pub fn time(&self, i: usize) -> Option<&str> {
        self.times
            .as_ref()
            .and_then(|t| t.get(i))
            .map(String::as_str)
    }
}

/// Maximum bytes read from one package file by an operation that loads it
/// whole (tables, JSON); larger files must be read by windowed readers.
pub const MAX_WHOLE_FILE_BYTES: u64 = 512 * 1024 * 1024;

/// Reads a package file through the resolver; returns its package-relative
/// path and bytes.
pub fn read_package_file(ctx: &ToolContext, requested: &str) -> Result<(String, Vec<u8>)> {
    let resolved = resolve(&ctx.package_root, requested).map_err(|e| DomainError::Input {
        file: requested.to_string(),
        message: e.to_string(),
    })?;
    let io_err = |e: std::io::Error| DomainError::Input {
        file: resolved.package_relative.clone(),
        message: e.to_string(),
    };
    let len = std::fs::metadata(&resolved.absolute).map_err(io_err)?.len();
    if len > MAX_WHOLE_FILE_BYTES {
        return Err(DomainError::Input {
            file: resolved.package_relative.clone(),
            message: format!("file of {len} bytes is too large to load whole"),
        });
    }
    let bytes = std::fs::read(&resolved.absolute).map_err(io_err)?;
    Ok((resolved.package_relative, bytes))
}

/// Loads a series from `{path, field, time_field?, start?, end?}`.
pub fn load_series(ctx: &ToolContext, spec: &Value) -> Result<(Series, Provenance)> {
    let path = spec
        .get("path")
        .and_then(Value::as_str)
        .ok_or_else(|| DomainError::Input {
            file: String::new(),
            message: "series reference needs a `path`".into(),
        })?;
    let field = spec
        .get("field")
        .and_then(Value::as_str)
        .ok_or_else(|| DomainError::Input {
            file: path.to_string(),
            message: "series reference needs a `field`".into(),
        })?;
    let time_field = spec.get("time_field").and_then(Value::as_str);
    let (relative, bytes) = read_package_file(ctx, path)?;
    let kind = sniff_bytes(&bytes);
    let input_err = |message: String| DomainError::Input {
        file: relative.clone(),
        message,
    };
    let (values, times) = match kind {
        FileKind::Json => {
            let doc: Value = serde_json::from_slice(&bytes)
                .map_err(|e| input_err(format!("invalid JSON: {e}")))?;
            let values = json_numbers(&doc, field).map_err(input_err)?;
            let times = match time_field {
                Some(t) => Some(json_labels(&doc, t).map_err(input_err)?),
                None => None,
            };
            (values, times)
        }
        FileKind::Parquet => crate::tables::parquet_columns(&bytes, field, time_field)
            .map_err(|m| input_err(m.to_string()))?,
        FileKind::NetcdfClassic | FileKind::NetcdfHdf5 => {
            let resolved =
                resolve(&ctx.package_root, path).map_err(|e| input_err(e.to_string()))?;
            crate::formats::netcdf_series(&resolved.absolute, field, time_field)
                .map_err(|m| input_err(m.to_string()))?
        }
        _ => crate::tables::csv_columns(&bytes, field, time_field)
            .map_err(|m| input_err(m.to_string()))?,
    };
    if let Some(t) = &times {
        if t.len() != values.len() {
            return Err(input_err(format!(
                "`{field}` has {} values but time axis `{}` has {}",
                values.len(),
                time_field.unwrap_or_default(),
                t.len()
            )));
        }
    }
    let mut series = Series { values, times };
    let start = spec.get("start").and_then(Value::as_str);
    let end = spec.get("end").and_then(Value::as_str);
    let mut window = None;
    if start.is_some() || end.is_some() {
        let Some(times) = series.times.take() else {
            return Err(input_err(
                "`start`/`end` need a `time_field` to select a window".into(),
            ));
        };
        let keep: Vec<bool> = times.iter().map(|t| in_window(t, start, end)).collect();
        let values = series
            .values
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(v, _)| *v)
            .collect();
        let times = times
            .into_iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(t, _)| t)
            .collect();
        series = Series {
            values,
            times: Some(times),
        };
        window = Some(format!("{}..{}", start.unwrap_or(""), end.unwrap_or("")));
    }
    Ok((
        series,
        Provenance {
            file: relative.clone(),
            variable: Some(field.to_string()),
            window,
        },
    ))
}

/// Inclusive window on ISO-like labels: `label >= start` and the label's
/// prefix of `end`'s length `<= end` (so `end = "2021-07-01"` keeps every
/// hour of that day).
pub fn in_window(label: &str, start: Option<&str>, end: Option<&str>) -> bool {
    let after = start.is_none_or(|s| label >= s || label.starts_with(s));
    let before = end.is_none_or(|e| {
        let n = e.len().min(label.len());
        &label[..label.floor_char_boundary_compat(n)] <= e
    });
    after && before
}

trait FloorCharBoundary {
    fn floor_char_boundary_compat(&self, index: usize) -> usize;
}

impl FloorCharBoundary for str {
    fn floor_char_boundary_compat(&self, mut index: usize) -> usize {
        while index > 0 && !self.is_char_boundary(index) {
            index -= 1;
        }
        index
    }
}

/// Walks a dotted path (`daily.temperature_2m_max`, `features.properties.mag`,
/// `items[0].value`); a non-index segment applied to an array maps over its
/// elements.
pub fn json_select<'v>(doc: &'v Value, path: &str) -> std::result::Result<Vec<&'v Value>, String> {
    let mut current: Vec<&Value> = vec![doc];
    let mut mapped = false;
    for raw in path.split('.').filter(|s| !s.is_empty()) {
        let (key, indices) = split_indices(raw);
        let mut next = Vec::new();
        for v in &current {
            if !key.is_empty() {
                match v {
                    Value::Object(map) => {
                        if let Some(child) = map.get(key) {
                            next.push(child);
                        }
                    }
                    Value::Array(items) => {
                        mapped = true;
                        next.extend(items.iter().filter_map(|i| i.get(key)));
                    }
                    _ => {}
                }
            } else {
                next.push(v);
            }
        }
        for idx in indices {
            next = next
                .into_iter()
                .filter_map(|v| v.as_array().and_then(|a| a.get(idx)))
                .collect();
        }
        if next.is_empty() {
            return Err(format!("no value at `{path}` (segment `{raw}`)"));
        }
        current = next;
    }
    if mapped || current.len() > 1 {
        return Ok(current);
    }
    match current.first() {
        Some(Value::Array(items)) => Ok(items.iter().collect()),
        Some(v) => Ok(vec![*v]),
        None => Err(format!("no value at `{path}`")),
    }
}

fn split_indices(segment: &str) -> (&str, Vec<usize>) {
    match segment.find('[') {
        None => (segment, Vec::new()),
        Some(pos) => {
            let key = &segment[..pos];
            let indices = segment[pos..]
                .split(['[', ']'])
                .filter_map(|s| s.trim().parse().ok())
                .collect();
            (key, indices)
        }
    }
}

/// Numbers at a dotted path (non-numbers become NaN).
pub fn json_numbers(doc: &Value, path: &str) -> std::result::Result<Vec<f64>, String> {
    Ok(json_select(doc, path)?
        .into_iter()
        .map(|v| as_f64(v).unwrap_or(f64::NAN))
        .collect())
}

/// Labels (strings, or numbers rendered) at a dotted path.
pub fn json_labels(doc: &Value, path: &str) -> std::result::Result<Vec<String>, String> {
    Ok(json_select(doc, path)?
        .into_iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect())
}

/// A JSON value as a number: numbers, and strings holding a number.
pub fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok().filter(|x| x.is_finite()),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dotted_paths_select_arrays_and_mapped_fields() {
        let doc = json!({"daily": {"t": [1.0, null, "3"]}, "rows": [{"v": 1}, {"v": 2}]});
        let t = json_numbers(&doc, "daily.t").unwrap();
        assert_eq!(t[0], 1.0);
        assert!(t[1].is_nan());
        assert_eq!(t[2], 3.0);
        assert_eq!(json_numbers(&doc, "rows.v").unwrap(), vec![1.0, 2.0]);
        assert_eq!(json_numbers(&doc, "rows[1].v").unwrap(), vec![2.0]);
        assert!(json_numbers(&doc, "daily.missing").is_err());
    }

    #[test]
    fn windows_are_inclusive_by_prefix() {
        assert!(in_window(
            "2021-07-01T23:00",
            Some("2021-06-25"),
            Some("2021-07-01")
        ));
        assert!(!in_window(
            "2021-07-02T00:00",
            Some("2021-06-25"),
            Some("2021-07-01")
        ));
        assert!(!in_window("2021-06-24", Some("2021-06-25"), None));
        assert!(in_window("2021-06-25T00:00", Some("2021-06-25"), None));
    }
}
