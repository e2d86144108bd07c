//! Any bytes, read as the code of a pending `python_exec` call, must be read
//! without panicking or overflowing the stack, and the statements it skips
//! are pieces of the input.
#![no_main]

use earthverse_answer_units::{parse_answer, read_code, AnswerShape};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let code = String::from_utf8_lossy(data);
    let reading = read_code(&code);
    for skipped in &reading.skipped {
        assert!(skipped.statement.len() <= code.len());
    }
    let answer = serde_json::json!({"action": "python_exec", "code": code});
    let parsed = parse_answer(&answer);
    assert_eq!(parsed.report.shape, AnswerShape::PendingCode);
    assert!(parsed.report.remainder.len() <= code.len());
});
