//! Flat tables for other tools: the leaderboard, the per-task table and
//! paired comparisons as JSONL or Parquet, chosen by the file extension.
//! Every table is written atomically
//! ([`earthverse_package_model::output::write_atomic`]).

use crate::sources::text_of;
use crate::{Error, Result};
use earthverse_package_model::output::write_atomic;
use earthverse_stats_bootstrap::{Metric, TaskOutcome};
use serde::Serialize;
use serde_json::{Map, Value};
use std::io::Write as _;
use std::path::Path;
use std::sync::Arc;

/// One flat row of the per-task table (`leaderboard --tasks-out`).
#[derive(Debug, Serialize)]
pub struct TaskRow<'a> {
    system: &'a str,
    task: &'a str,
    answer: f64,
    process: f64,
    core: f64,
    unit_accuracy: f64,
    strict95: bool,
    failed: bool,
    capabilities: String,
    difficulty: Option<&'a str>,
    hazard_family: Option<&'a str>,
    rounds: Option<f64>,
    tool_calls: Option<f64>,
    reads: Option<f64>,
    files: Option<f64>,
    python_calls: Option<f64>,
    latency_s: Option<f64>,
    tokens: Option<f64>,
}

/// A count figure as the float of the task table.
fn as_f64(value: Option<u64>) -> Option<f64> {
    value.map(|v| v as f64)
}

/// The per-task table of `outcomes`: the §4.1 scores, the labels and the
/// trajectory figures of each (system, task).
pub fn task_rows(outcomes: &[TaskOutcome]) -> Vec<TaskRow<'_>> {
    outcomes
        .iter()
        .map(|o| TaskRow {
            system: &o.system,
            task: &o.task,
            answer: o.metric(Metric::Answer),
            process: o.metric(Metric::Process),
            core: o.core(),
            unit_accuracy: o.metric(Metric::UnitAccuracy),
            strict95: o.is_strict95(),
            failed: o.failed,
            capabilities: o.capabilities.join(";"),
            difficulty: o.difficulty.as_deref(),
            hazard_family: o.hazard_family.as_deref(),
            rounds: as_f64(o.trajectory.model_rounds),
            tool_calls: as_f64(o.trajectory.tool_calls),
            reads: as_f64(o.trajectory.file_reads),
            files: as_f64(o.trajectory.unique_evidence_files),
            python_calls: as_f64(o.trajectory.python_calls),
            latency_s: o.trajectory.latency_s,
            tokens: as_f64(o.trajectory.total_tokens),
        })
        .collect()
}

/// Writes flat rows as JSONL (`.jsonl`, `.json`) or Parquet (`.parquet`),
/// chosen by the file extension; any other extension is an error naming
/// the output.
pub fn write_table<T: Serialize>(path: &Path, rows: &[T]) -> Result<()> {
    let table_error = |message: String| Error::Table {
        path: path.to_path_buf(),
        message,
    };
    let values: Vec<Map<String, Value>> = rows
        .iter()
        .map(|r| match serde_json::to_value(r) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(_) => Err(table_error("a table row is not an object".into())),
            Err(e) => Err(table_error(e.to_string())),
        })
        .collect::<Result<_>>()?;
    match path.extension().and_then(|e| e.to_str()) {
        Some("jsonl") | Some("json") => {
            let mut text = String::new();
            for v in &values {
                text.push_str(&serde_json::to_string(v).map_err(|e| table_error(e.to_string()))?);
                text.push('\n');
            }
            Ok(write_atomic(path, |file| file.write_all(text.as_bytes()))?)
        }
        Some("parquet") => write_parquet(path, &values),
        _ => Err(table_error("use a .jsonl or .parquet extension".into())),
    }
}

/// Column types inferred from flat JSON rows: all-bool → Boolean, all
/// integers → Int64, all numbers → Float64, otherwise Utf8 (nested values as
/// JSON text). Nulls are allowed in every column.
fn write_parquet(path: &Path, rows: &[Map<String, Value>]) -> Result<()> {
    use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    let keys: Vec<String> = rows
        .first()
        .map(|r| r.keys().cloned().collect())
        .unwrap_or_default();
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for key in &keys {
        let cells: Vec<&Value> = rows
            .iter()
            .map(|r| r.get(key).unwrap_or(&Value::Null))
            .collect();
        let present = || cells.iter().filter(|v| !v.is_null());
        let (dtype, array): (DataType, ArrayRef) = if present().all(|v| v.is_boolean()) {
            (
                DataType::Boolean,
                Arc::new(cells.iter().map(|v| v.as_bool()).collect::<BooleanArray>()),
            )
        } else if present().all(|v| v.is_i64()) {
            (
                DataType::Int64,
                Arc::new(cells.iter().map(|v| v.as_i64()).collect::<Int64Array>()),
            )
        } else if present().all(|v| v.is_number()) {
            (
                DataType::Float64,
                Arc::new(cells.iter().map(|v| v.as_f64()).collect::<Float64Array>()),
            )
        } else {
            (
                DataType::Utf8,
                Arc::new(
                    cells
                        .iter()
                        .map(|v| (!v.is_null()).then(|| text_of(v)))
                        .collect::<StringArray>(),
                ),
            )
        };
        fields.push(Field::new(key, dtype, true));
        columns.push(array);
    }
    let batch =
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).map_err(|e| Error::Table {
            path: path.to_path_buf(),
            message: format!("building the Parquet table: {e}"),
        })?;
    Ok(write_atomic(path, |file| {
        let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None)
            .map_err(std::io::Error::other)?;
        writer.write(&batch).map_err(std::io::Error::other)?;
        writer.close().map_err(std::io::Error::other)?;
        Ok(())
    })?)
}
