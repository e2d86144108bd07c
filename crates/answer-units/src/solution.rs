//! The expert solution's Final Answer: the answer template filled in by
//! the task's author.
//!
//! Every task ships an expert solution (`solution_en.md`) that opens with a
//! `# Final Answer` section, then `# Key Computations`, `# Reasoning Path`
//! and the rubric (Appendix C.5, the task-construction prompt). The
//! published judge received it next to the structured ground truth
//! (Appendix E, `<<SOLUTION_AND_20_POINT_RUBRIC>>`). When that section
//! holds a JSON object it is the answer contract in the shape the question
//! asked for, with the reference values: the judge-like reading of
//! [`crate::score_task`] scores against it.

use crate::parse::parse_answer_text;
use serde_json::Value;

/// The JSON object of the solution's `Final Answer` section, if it has one
/// with at least one scalar leaf.
///
/// The section runs from the first markdown heading titled `Answer` or
/// one word and `Answer` (`Final Answer`, `Correct Answer`; any level, any
/// case) to the next heading of the same or a higher level outside a
/// fenced block. A section of prose only, a JSON that does not
/// parse, or a solution without the heading gives `None` (the scorer then
/// falls back to `primary_gt`).
///
/// ```
/// use earthverse_answer_units::solution_final_answer;
/// let md = "# Final Answer\n\n```json\n{\"label\": \"pass\", \"peak_c\": 35.5}\n```\n\n# Key Computations\n\n```json\n{\"other\": 1}\n```\n";
/// assert_eq!(solution_final_answer(md), Some(serde_json::json!({"label": "pass", "peak_c": 35.5})));
/// assert_eq!(solution_final_answer("# Final Answer\n\nThe label is `pass`.\n"), None);
/// assert_eq!(solution_final_answer("```json\n{\"label\": \"pass\"}\n```"), None);
/// ```
pub fn solution_final_answer(solution: &str) -> Option<Value> {
    let json = parse_answer_text(final_answer_section(solution)?).json?;
    (json.is_object() && has_scalar_leaf(&json)).then_some(json)
}

/// The text of the `Final Answer` section, without its heading.
fn final_answer_section(solution: &str) -> Option<&str> {
    let mut in_fence = false;
    let mut start: Option<(usize, usize)> = None; // (byte offset, heading level)
    let mut offset = 0;
    for line in solution.split_inclusive('\n') {
        let here = offset;
        offset += line.len();
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let Some((level, title)) = heading(line) else {
            continue;
        };
        match start {
            None if is_answer_title(title) => start = Some((offset, level)),
            Some((from, open)) if level <= open => return Some(&solution[from..here]),
            _ => {}
        }
    }
    start.map(|(from, _)| &solution[from..])
}

/// `Answer`, or one word and `Answer`: the release titles the section
/// `Final Answer` or `Correct Answer`.
fn is_answer_title(title: &str) -> bool {
    let words: Vec<&str> = title.split_whitespace().collect();
    match words.as_slice() {
        [last] | [_, last] => last.eq_ignore_ascii_case("answer"),
        _ => false,
    }
}

/// An ATX heading: its level and its text without the marks.
fn heading(line: &str) -> Option<(usize, &str)> {
    let line = line.trim_end();
    let level = line.bytes().take_while(|&b| b == b'#').count();
    if level == 0 || level > 6 {
        return None;
    }
    let rest = &line[level..];
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    Some((level, rest.trim().trim_end_matches('#').trim()))
}

fn has_scalar_leaf(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.values().any(has_scalar_leaf),
        Value::Array(items) => items.iter().any(has_scalar_leaf),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_section_ends_at_the_next_heading_of_its_level() {
        let md = "Intro\n\n## Final Answer\n\n```json\n{\"a\": 1}\n```\n\n### Note\n\ntext\n\n## Key Computations\n\n{\"b\": 2}\n";
        assert_eq!(
            final_answer_section(md).map(str::trim),
            Some("```json\n{\"a\": 1}\n```\n\n### Note\n\ntext")
        );
        assert_eq!(solution_final_answer(md), Some(json!({"a": 1})));
    }

    #[test]
    fn a_heading_mark_inside_a_fence_does_not_end_the_section() {
        let md =
            "# Final Answer\n```json\n{\"text\": \"a\",\n# not a heading\n\"b\": 2}\n```\n# Next\n";
        let section = final_answer_section(md).unwrap_or_default();
        assert!(section.contains("# not a heading"), "{section:?}");
        assert!(!section.contains("# Next"), "{section:?}");
    }

    #[test]
    fn prose_broken_json_and_empty_objects_give_none() {
        assert_eq!(
            solution_final_answer("# Final Answer\n\nThe answer is 3.\n"),
            None
        );
        assert_eq!(
            solution_final_answer("# Final Answer\n```json\n{\"a\": \n```\n"),
            None
        );
        assert_eq!(
            solution_final_answer("# Final Answer\n```json\n{\"a\": {}, \"b\": []}\n```\n"),
            None
        );
        assert_eq!(
            solution_final_answer("# Final Answers\n```json\n{\"a\": 1}\n```"),
            None
        );
        assert_eq!(
            solution_final_answer("# The Final Answer\n```json\n{\"a\": 1}\n```"),
            None
        );
        assert_eq!(
            solution_final_answer("#Final Answer\n```json\n{\"a\": 1}\n```"),
            None
        );
        assert_eq!(solution_final_answer(""), None);
    }

    #[test]
    fn correct_answer_and_nested_levels_open_the_section() {
        let md = "# Solution\n\n## Correct Answer\n\n```json\n{\"a\": 1}\n```\n\n## Key Computations\n\n```json\n{\"b\": 2}\n```\n";
        assert_eq!(solution_final_answer(md), Some(json!({"a": 1})));
        let md = "# correct answer\n{\"a\": \"x\"}\n";
        assert_eq!(solution_final_answer(md), Some(json!({"a": "x"})));
    }

    #[test]
    fn a_bare_object_after_prose_is_read() {
        let md = "# Final Answer\n\nReturn this:\n{\"label\": \"x\", \"n\": [1, 2]}\n\n# Reasoning Path\n";
        assert_eq!(
            solution_final_answer(md),
            Some(json!({"label": "x", "n": [1, 2]}))
        );
    }
}
