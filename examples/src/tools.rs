//! A custom tool: threshold exceedance over one numeric column of a CSV in
//! the event package, with an argument schema and an applicability check
//! (paper App. A.4: a justified refusal when the record cannot support the
//! call). The logic of the `custom_tool` example.

use async_trait::async_trait;
use earthverse_package_model::resolve;
use earthverse_tool_registry::{Applicability, Tool, ToolContext, ToolFamily, ToolOutput};
use serde_json::{json, Value};

/// Name the model calls.
pub const THRESHOLD_EXCEEDANCE: &str = "threshold_exceedance";

/// Counts the rows of a CSV column at or above a threshold, the peak and
/// the load `Σ max(x − threshold, 0)`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ThresholdExceedance;

/// What [`ThresholdExceedance`] computes from one column.
#[derive(Debug, Clone, PartialEq)]
pub struct Exceedance {
    /// Numeric rows read.
    pub records: usize,
    /// Rows with `x ≥ threshold`.
    pub days_at_or_above: usize,
    /// Largest value.
    pub peak: f64,
    /// `Σ max(x − threshold, 0)`, rounded to 0.1.
    pub load: f64,
}

/// Reads one numeric column of CSV text (header on the first line; cells
/// that are not numbers are skipped).
///
/// # Errors
/// The column is not in the header.
pub fn column_values(csv_text: &str, column: &str) -> Result<Vec<f64>, String> {
    let mut lines = csv_text.lines();
    let header = lines.next().unwrap_or_default();
    let index = header
        .split(',')
        .position(|h| h.trim() == column)
        .ok_or_else(|| format!("column `{column}` not in header `{header}`"))?;
    Ok(lines
        .filter_map(|line| line.split(',').nth(index))
        .filter_map(|cell| cell.trim().parse::<f64>().ok())
        .collect())
}

/// The exceedance figures of `values` over `threshold`.
pub fn exceedance(values: &[f64], threshold: f64) -> Exceedance {
    let load: f64 = values.iter().map(|v| (v - threshold).max(0.0)).sum();
    Exceedance {
        records: values.len(),
        days_at_or_above: values.iter().filter(|v| **v >= threshold).count(),
        peak: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        load: (load * 10.0).round() / 10.0,
    }
}

fn read_csv(ctx: &ToolContext, args: &Value) -> Result<(String, String), String> {
    let path = args["path"].as_str().unwrap_or_default();
    let resolved = resolve(&ctx.package_root, path).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(&resolved.absolute)
        .map_err(|e| format!("{}: {e}", resolved.package_relative))?;
    Ok((resolved.package_relative, text))
}

#[async_trait]
impl Tool for ThresholdExceedance {
    fn name(&self) -> &str {
        THRESHOLD_EXCEEDANCE
    }

    fn description(&self) -> &str {
        "Threshold exceedance of one numeric column of a package CSV: rows at or above the \
         threshold, peak value and load sum(max(x - threshold, 0)). Refuses when the column is \
         missing or the record is shorter than min_records."
    }

    fn family(&self) -> ToolFamily {
        ToolFamily::TimeSeries
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "package-relative CSV path"},
                "column": {"type": "string"},
                "threshold": {"type": "number"},
                "min_records": {"type": "integer", "minimum": 1, "default": 3}
            },
            "required": ["path", "column", "threshold"],
            "additionalProperties": false
        })
    }

    fn check_applicable(&self, ctx: &ToolContext, args: &Value) -> Applicability {
        // Unreadable files are execution errors, reported by `call`.
        let Ok((_, text)) = read_csv(ctx, args) else {
            return Applicability::Applicable;
        };
        let column = args["column"].as_str().unwrap_or_default();
        let values = match column_values(&text, column) {
            Ok(values) => values,
            Err(message) => {
                return Applicability::NotApplicable {
                    reason: json!({"missing_column": column}),
                    message,
                }
            }
        };
        let need = args["min_records"].as_u64().unwrap_or(3);
        if (values.len() as u64) < need {
            return Applicability::NotApplicable {
                reason: json!({"record_too_short": {"have": values.len(), "need": need}}),
                message: format!(
                    "`{column}` has {} numeric records; the call needs {need}",
                    values.len()
                ),
            };
        }
        Applicability::Applicable
    }

    async fn call(&self, ctx: &ToolContext, args: Value) -> ToolOutput {
        let (path, text) = match read_csv(ctx, &args) {
            Ok(found) => found,
            Err(message) => return ToolOutput::error(message),
        };
        let column = args["column"].as_str().unwrap_or_default();
        let threshold = args["threshold"].as_f64().unwrap_or_default();
        match column_values(&text, column) {
            Ok(values) => {
                let e = exceedance(&values, threshold);
                ToolOutput::ok(
                    json!({
                        "column": column,
                        "threshold": threshold,
                        "records": e.records,
                        "days_at_or_above": e.days_at_or_above,
                        "peak": e.peak,
                        "load": e.load,
                    }),
                    vec![path],
                )
            }
            Err(message) => ToolOutput::error(message),
        }
    }
}
