//! The paper's answer-unit count (§4.1): every scalar leaf of `primary_gt`.

use serde_json::Value;

/// Counts the answer units of a ground-truth value: every scalar leaf counts
/// one (each element of a list of scalars counts; `null` counts one); empty
/// objects and lists count zero. On the full release this gives 10,879 units
/// (26.86 per task), the paper's total.
///
/// ```
/// use serde_json::json;
/// let gt = json!({"a": 1, "b": [1, 2, null], "c": {}, "d": {"e": "x"}});
/// assert_eq!(earthverse_answer_units::count_units(&gt), 5);
/// ```
pub fn count_units(value: &Value) -> usize {
    match value {
        Value::Object(map) => map.values().map(count_units).sum(),
        Value::Array(items) => items.iter().map(count_units).sum(),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => 1,
    }
}
