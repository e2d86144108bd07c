//! JSON rendering exactly as the reference harness printed it: Python's
//! `json.dumps(value, indent=2, ensure_ascii=False)` (two-space indent,
//! `", "`/`": "` separators, non-ASCII kept, floats in Python `repr` form such
//! as `1e-05` or `1e+16`).

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter};
use serde_json::Value;
use std::io;

/// A pretty formatter that writes floats the way Python's `repr` does.
struct PythonFormatter<'a> {
    inner: PrettyFormatter<'a>,
}

macro_rules! delegate {
    ($($name:ident($($arg:ident : $ty:ty),*)),* $(,)?) => {
        $(
            fn $name<W: ?Sized + io::Write>(&mut self, writer: &mut W $(, $arg: $ty)*) -> io::Result<()> {
                self.inner.$name(writer $(, $arg)*)
            }
        )*
    };
}

impl Formatter for PythonFormatter<'_> {
    delegate!(
        begin_array(),
        end_array(),
        begin_array_value(first: bool),
        end_array_value(),
        begin_object(),
        end_object(),
        begin_object_key(first: bool),
        begin_object_value(),
        end_object_value(),
    );

    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(python_float_repr(value).as_bytes())
    }

    fn write_f32<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f32) -> io::Result<()> {
        writer.write_all(python_float_repr(f64::from(value)).as_bytes())
    }
}

/// Python's `repr(float)`: shortest round-trip digits, fixed notation for
/// decimal exponents in `-4..16`, otherwise `d.ddde+XX` / `de-XX`.
pub fn python_float_repr(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // `{:e}` gives the shortest round-trip digits in scientific form.
    let sci = format!("{value:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if negative { "-" } else { "" };
    if (-4..16).contains(&exponent) {
        let n = digits.len() as i32;
        let point = exponent + 1; // position of the decimal point in `digits`
        let body = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if point >= n {
            format!("{}{}.0", digits, "0".repeat((point - n) as usize))
        } else {
            let (a, b) = digits.split_at(point as usize);
            format!("{a}.{b}")
        };
        format!("{sign}{body}")
    } else {
        let (first, rest) = digits.split_at(1);
        let mant = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        let esign = if exponent < 0 { '-' } else { '+' };
        format!("{sign}{mant}e{esign}{:02}", exponent.abs())
    }
}

/// `json.dumps(value, indent=2, ensure_ascii=False)`.
pub fn to_python_json_pretty<T: Serialize + ?Sized>(value: &T) -> String {
    let mut out = Vec::with_capacity(256);
    let formatter = PythonFormatter {
        inner: PrettyFormatter::with_indent(b"  "),
    };
    let mut ser = serde_json::Serializer::with_formatter(&mut out, formatter);
    if value.serialize(&mut ser).is_err() {
        return String::new();
    }
    String::from_utf8(out).unwrap_or_default()
}

/// How the reference rendered a tool's `output` as text: strings as they
/// are, everything else as pretty JSON.
pub fn render_output_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        other => to_python_json_pretty(other),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn floats_match_python_repr() {
        for (value, expected) in [
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (35.0, "35.0"),
            (-2.5, "-2.5"),
            (0.1, "0.1"),
            (1.5e-7, "1.5e-07"),
            (123.456, "123.456"),
            (2.3198443426015913, "2.3198443426015913"),
        ] {
            assert_eq!(python_float_repr(value), expected, "{value}");
        }
    }

    #[test]
    fn pretty_matches_python_layout() {
        let v = serde_json::json!({"a": [], "b": {}, "c": [1, 2.0], "d": "é\n"});
        assert_eq!(
            to_python_json_pretty(&v),
            "{\n  \"a\": [],\n  \"b\": {},\n  \"c\": [\n    1,\n    2.0\n  ],\n  \"d\": \"é\\n\"\n}"
        );
    }
}
