//! Tables: CSV through the `csv` crate and Parquet through `parquet`/arrow.

use arrow_array::{
    Array, Date32Array, Float32Array, Float64Array, Int32Array, Int64Array, RecordBatch,
    StringArray, TimestampMillisecondArray, TimestampSecondArray,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

type Columns = (Vec<f64>, Option<Vec<String>>);

/// A CSV table: headers and string cells.
#[derive(Debug, Clone, Default)]
pub struct Table {
    /// Column names.
    pub headers: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Index of a column by exact or case-insensitive name.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.headers.iter().position(|h| h == name).or_else(|| {
            self.headers
                .iter()
                .position(|h| h.trim().eq_ignore_ascii_case(name.trim()))
        })
    }

    /// Numeric values of a column (NaN where a cell is not a number).
    pub fn numbers(&self, column: usize) -> Vec<f64> {
        self.rows
            .iter()
            .map(|r| {
                r.get(column)
                    .and_then(|c| c.trim().parse::<f64>().ok())
                    .unwrap_or(f64::NAN)
            })
            .collect()
    }

    /// Cells of a column.
    pub fn cells(&self, column: usize) -> Vec<String> {
        self.rows
            .iter()
            .map(|r| r.get(column).cloned().unwrap_or_default())
            .collect()
    }
}

/// Parses CSV bytes (comma, or semicolon/tab when the header says so).
pub fn parse_csv(bytes: &[u8]) -> Result<Table, String> {
    let head = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
    let delimiter = [b',', b';', b'\t']
        .into_iter()
        .max_by_key(|d| head.iter().filter(|b| *b == d).count())
        .unwrap_or(b',');
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(delimiter)
        .flexible(true)
        .from_reader(bytes);
    let headers = reader
        .headers()
        .map_err(|e| format!("CSV header: {e}"))?
        .iter()
        .map(|h| h.trim_start_matches('\u{feff}').to_string())
        .collect();
    let mut rows = Vec::new();
    for (i, record) in reader.records().enumerate() {
        let record = record.map_err(|e| format!("CSV row {}: {e}", i + 2))?;
        rows.push(record.iter().map(str::to_string).collect());
    }
    Ok(Table { headers, rows })
}

/// A numeric column and an optional label column of a CSV file.
pub fn csv_columns(bytes: &[u8], field: &str, time_field: Option<&str>) -> Result<Columns, String> {
    let table = parse_csv(bytes)?;
    let col = table.column(field).ok_or_else(|| {
        format!(
            "no column `{field}` (columns: {})",
            table.headers.join(", ")
        )
    })?;
    let times = match time_field {
        Some(t) => {
            let tc = table.column(t).ok_or_else(|| {
                format!("no column `{t}` (columns: {})", table.headers.join(", "))
            })?;
            Some(table.cells(tc))
        }
        None => None,
    };
    Ok((table.numbers(col), times))
}

fn batch_column_f64(batch: &RecordBatch, index: usize) -> Result<Vec<f64>, String> {
    let col = batch.column(index);
    let any = col.as_any();
    let get = |i: usize| !col.is_null(i);
    if let Some(a) = any.downcast_ref::<Float64Array>() {
        return Ok((0..a.len())
            .map(|i| if get(i) { a.value(i) } else { f64::NAN })
            .collect());
    }
    if let Some(a) = any.downcast_ref::<Float32Array>() {
        return Ok((0..a.len())
            .map(|i| if get(i) { a.value(i) as f64 } else { f64::NAN })
            .collect());
    }
    if let Some(a) = any.downcast_ref::<Int64Array>() {
        return Ok((0..a.len())
            .map(|i| if get(i) { a.value(i) as f64 } else { f64::NAN })
            .collect());
    }
    if let Some(a) = any.downcast_ref::<Int32Array>() {
        return Ok((0..a.len())
            .map(|i| if get(i) { a.value(i) as f64 } else { f64::NAN })
            .collect());
    }
    if let Some(a) = any.downcast_ref::<StringArray>() {
        return Ok((0..a.len())
            .map(|i| {
                if get(i) {
                    a.value(i).trim().parse().unwrap_or(f64::NAN)
                } else {
                    f64::NAN
                }
            })
            .collect());
    }
    Err(format!("column type {} is not numeric", col.data_type()))
}

fn batch_column_labels(batch: &RecordBatch, index: usize) -> Result<Vec<String>, String> {
    let col = batch.column(index);
    let any = col.as_any();
    if let Some(a) = any.downcast_ref::<StringArray>() {
        return Ok((0..a.len()).map(|i| a.value(i).to_string()).collect());
    }
    if let Some(a) = any.downcast_ref::<Date32Array>() {
        return Ok((0..a.len())
            .map(|i| {
                a.value_as_date(i)
                    .map(|d| d.format("%Y-%m-%d").to_string())
                    .unwrap_or_default()
            })
            .collect());
    }
    if let Some(a) = any.downcast_ref::<TimestampSecondArray>() {
        return Ok((0..a.len())
            .map(|i| {
                a.value_as_datetime(i)
                    .map(|d| d.format("%Y-%m-%dT%H:%M").to_string())
                    .unwrap_or_default()
            })
            .collect());
    }
    if let Some(a) = any.downcast_ref::<TimestampMillisecondArray>() {
        return Ok((0..a.len())
            .map(|i| {
                a.value_as_datetime(i)
                    .map(|d| d.format("%Y-%m-%dT%H:%M").to_string())
                    .unwrap_or_default()
            })
            .collect());
    }
    batch_column_f64(batch, index).map(|v| v.iter().map(|x| x.to_string()).collect())
}

/// A numeric column and an optional label column of a Parquet file.
pub fn parquet_columns(
    bytes: &[u8],
    field: &str,
    time_field: Option<&str>,
) -> Result<Columns, String> {
    let data = bytes::Bytes::copy_from_slice(bytes);
    let builder =
        ParquetRecordBatchReaderBuilder::try_new(data).map_err(|e| format!("Parquet: {e}"))?;
    let schema = builder.schema().clone();
    let find = |name: &str| {
        schema
            .index_of(name)
            .map_err(|_| format!("no column `{name}` in Parquet file"))
    };
    let vi = find(field)?;
    let ti = time_field.map(find).transpose()?;
    let reader = builder.build().map_err(|e| format!("Parquet: {e}"))?;
    let mut values = Vec::new();
    let mut times = ti.map(|_| Vec::new());
    for batch in reader {
        let batch = batch.map_err(|e| format!("Parquet: {e}"))?;
        values.extend(batch_column_f64(&batch, vi)?);
        if let (Some(t), Some(out)) = (ti, times.as_mut()) {
            out.extend(batch_column_labels(&batch, t)?);
        }
    }
    Ok((values, times))
}
