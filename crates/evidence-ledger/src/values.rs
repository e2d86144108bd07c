//! What a claim's value is and how a value may be converted: the value
//! readings shared by tracing (`trace`) and the error families (`family`),
//! a leaf module so neither imports the other's helpers.

use earthverse_answer_units::matching::number_matches;
use earthverse_answer_units::{
    dates_in, literal_decimals, normalize_key, number_spans, UnitKind, UnitLedgerEntry,
};
use serde_json::Value;

/// Whole numbers below this are "small integers": found only with their
/// key's words nearby, else the trace is [`crate::Strength::Weak`].
pub const SMALL_INTEGER_LIMIT: f64 = 100.0;

/// A conversion: its name, the function, and the key words it needs.
pub(crate) type Conversion = (&'static str, fn(f64) -> f64, &'static [&'static str]);

/// Unit and scale conversions: name, the function from an observed value
/// to the converted one, and the key words that make a physical
/// conversion plausible (empty: a pure scale, always tried). Tried both
/// for tracing (`transformed`) and for [`crate::ErrorFamily::UnitOrScale`].
pub(crate) const CONVERSIONS: &[Conversion] = &[
    ("×100", |y| y * 100.0, &[]),
    ("÷100", |y| y / 100.0, &[]),
    ("×1000", |y| y * 1000.0, &[]),
    ("÷1000", |y| y / 1000.0, &[]),
    ("°F→°C", |y| (y - 32.0) * 5.0 / 9.0, TEMPERATURE),
    ("°C→°F", |y| y * 9.0 / 5.0 + 32.0, TEMPERATURE),
    ("K→°C", |y| y - 273.15, TEMPERATURE),
    ("°C→K", |y| y + 273.15, TEMPERATURE),
    ("m/s→km/h", |y| y * 3.6, SPEED),
    ("km/h→m/s", |y| y / 3.6, SPEED),
    ("kt→km/h", |y| y * 1.852, SPEED),
    ("km/h→kt", |y| y / 1.852, SPEED),
    ("kt→m/s", |y| y * 0.514_444, SPEED),
    ("m/s→kt", |y| y / 0.514_444, SPEED),
    ("mi→km", |y| y * 1.609_344, LENGTH),
    ("km→mi", |y| y / 1.609_344, LENGTH),
    ("in→mm", |y| y * 25.4, LENGTH),
    ("mm→in", |y| y / 25.4, LENGTH),
    ("ft→m", |y| y * 0.3048, LENGTH),
    ("m→ft", |y| y / 0.3048, LENGTH),
];

const TEMPERATURE: &[&str] = &[
    "c",
    "f",
    "k",
    "degc",
    "degf",
    "celsius",
    "fahrenheit",
    "kelvin",
    "temp",
    "temperature",
    "tmax",
    "tmin",
    "t2m",
    "sst",
];
const SPEED: &[&str] = &[
    "wind", "gust", "speed", "kmh", "kph", "mph", "ms", "kt", "kts", "knot", "knots", "vmax",
];
const LENGTH: &[&str] = &[
    "mm",
    "cm",
    "m",
    "km",
    "mi",
    "mile",
    "miles",
    "in",
    "inch",
    "inches",
    "ft",
    "feet",
    "depth",
    "height",
    "distance",
    "rain",
    "rainfall",
    "precip",
    "precipitation",
    "elevation",
    "length",
];

/// Whether a conversion's unit words fit a key (pure scales always do).
pub(crate) fn conversion_fits(words: &[&str], key: Option<&str>) -> bool {
    if words.is_empty() {
        return true;
    }
    let Some(key) = key else {
        return false;
    };
    normalize_key(key).split('_').any(|t| words.contains(&t))
}

/// Significant digits of a number written with `decimals` decimals.
pub(crate) fn significant_digits(x: f64, decimals: u32) -> usize {
    let scaled = (x.abs() * 10f64.powi(decimals.min(12) as i32)).round();
    if scaled < 1.0 {
        0
    } else {
        format!("{scaled:.0}").trim_end_matches('0').len().max(1)
    }
}

/// The value a claim gives, as read for tracing.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ClaimValue {
    /// A number with its written decimals.
    Number(f64, u32),
    /// A date (`YYYY-MM-DD`).
    Date(String),
    /// A file path.
    Path(String),
    /// A short label or text.
    Label(String),
    /// A boolean, null or long text: not traced.
    Judgement,
    /// No value.
    Missing,
}

/// Half a unit of the last written decimal.
pub(crate) fn half_unit(decimals: u32) -> f64 {
    0.5 * 10f64.powi(-(decimals.min(12) as i32))
}

/// A whole number below [`SMALL_INTEGER_LIMIT`] in magnitude.
pub(crate) fn is_small_integer(x: f64) -> bool {
    x.fract() == 0.0 && x.abs() < SMALL_INTEGER_LIMIT
}

/// Whether two file names denote the same package file: equal, or one is
/// the other with a leading directory prefix (`event_packages/.../CSX-001/`
/// + `data/x.json`).
pub fn same_file(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim_start_matches("./"), b.trim_start_matches("./"));
    if a.is_empty() || b.is_empty() {
        return false;
    }
    if a == b {
        return true;
    }
    let (long, short) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    long.ends_with(short) && long.as_bytes()[long.len() - short.len() - 1] == b'/'
}

/// The answer's value of a unit, as shown in the ledger.
pub(crate) fn shown_value(unit: &UnitLedgerEntry) -> Option<Value> {
    match (&unit.found, unit.matched) {
        (Some(v), _) => Some(v.clone()),
        (None, true) => Some(unit.expected.clone()),
        (None, false) => None,
    }
}

/// Reads the value a unit's answer gives for tracing: the aligned value,
/// else (a prose answer matched) the expected value; a number inside a
/// short string counts as that number.
pub(crate) fn claim_value(unit: &UnitLedgerEntry) -> ClaimValue {
    if unit.kind == UnitKind::LongText {
        return if shown_value(unit).is_some() {
            ClaimValue::Judgement
        } else {
            ClaimValue::Missing
        };
    }
    let Some(value) = shown_value(unit) else {
        return ClaimValue::Missing;
    };
    let read = value_of(&value);
    // A satisfied number whose aligned value is not itself the match (a
    // number inside a sentence, a list's first leaf): the answer holds the
    // expected value, which is what is traced.
    if let (true, Value::Number(n)) = (unit.matched, &unit.expected) {
        if let Some(v) = n.as_f64().filter(|v| v.is_finite()) {
            let tol = unit.tolerance.unwrap_or(0.0);
            // (a percent for a fraction, or the other way round, matches too)
            let is_match = matches!(read, ClaimValue::Number(x, _)
                if number_matches(v, x, tol)
                    || number_matches(v, x / 100.0, tol)
                    || number_matches(v, x * 100.0, tol));
            if !is_match {
                return ClaimValue::Number(v, literal_decimals(&n.to_string()));
            }
        }
    }
    read
}

pub(crate) fn value_of(value: &Value) -> ClaimValue {
    match value {
        Value::Number(n) => match n.as_f64().filter(|x| x.is_finite()) {
            Some(x) => ClaimValue::Number(x, literal_decimals(&n.to_string())),
            None => ClaimValue::Judgement,
        },
        Value::String(s) => {
            let t = s.trim();
            if t.is_empty() {
                return ClaimValue::Missing;
            }
            if let Some(d) = dates_in(t).into_iter().next() {
                return ClaimValue::Date(d.chars().take(10).collect());
            }
            if is_path_like(t) {
                return ClaimValue::Path(t.to_owned());
            }
            let spans = number_spans(t);
            if t.len() <= 40 && spans.len() == 1 {
                let (range, x) = &spans[0];
                let token: String = t[range.clone()].chars().filter(|&c| c != ',').collect();
                return ClaimValue::Number(*x, literal_decimals(&token));
            }
            if t.split_whitespace().count() > 8 {
                return ClaimValue::Judgement;
            }
            ClaimValue::Label(t.to_owned())
        }
        Value::Bool(_) | Value::Null | Value::Array(_) | Value::Object(_) => ClaimValue::Judgement,
    }
}

fn is_path_like(s: &str) -> bool {
    s.contains('/')
        && !s.chars().any(char::is_whitespace)
        && s.rsplit('/')
            .next()
            .is_some_and(|name| name.contains('.') && name.len() > 2)
}
