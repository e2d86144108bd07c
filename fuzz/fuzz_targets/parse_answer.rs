//! Any bytes, read as a final answer's text, must parse without panicking,
//! and what is not JSON stays visible in the remainder.
#![no_main]

use earthverse_answer_units::{parse_answer, parse_answer_text, AnswerShape};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parsed = parse_answer_text(&text);
    // Prose keeps the whole text visible (unless it was a JSON-encoded string,
    // which is unwrapped first).
    let json_string =
        serde_json::from_str::<serde_json::Value>(text.trim()).is_ok_and(|v| v.is_string());
    if parsed.report.shape == AnswerShape::Prose && !json_string {
        assert_eq!(parsed.report.remainder, text.trim());
    }
    if !json_string {
        assert!(parsed.report.remainder.len() <= text.len());
    }
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
        let _ = parse_answer(&value);
    }
});
