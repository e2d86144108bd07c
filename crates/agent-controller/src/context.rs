//! Context compaction, exactly as `reference-harness.md` "Budgets and
//! context" describes (App. C.2): the request keeps the system and task
//! messages, the 16 most recent messages, and one summary of all older
//! observations of at most 24,000 characters. Each older observation is at
//! most 1,400 characters, keeps its head and tail in a 68:32 split, and is
//! labelled with its step, tool, status and evidence paths (App. C.4: tools
//! record path and operation before observations are shortened). Recent
//! assistant messages are capped at 8,000 characters, recent observations
//! at 12,000.

use crate::settings::ContextPolicy;
use crate::text::{cap_head, cap_head_tail, char_len};
use earthverse_model_provider::{Message, Role};
use serde::{Deserialize, Serialize};

/// What a history entry is, for compaction and records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EntryKind {
    /// The system message.
    System,
    /// The task message.
    Task,
    /// A model reply.
    Assistant,
    /// A tool observation.
    Observation {
        /// 1-based tool step.
        step: u32,
        /// Tool name.
        tool: String,
        /// `ok`, `execution_error` or `not_applicable`.
        status: String,
        /// Evidence paths of the call.
        evidence_files: Vec<String>,
    },
    /// A harness prompt: repair, review, required-tool correction, finalisation.
    Harness,
}

/// One message of the full (uncompacted) conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The message.
    pub message: Message,
    /// Its kind.
    pub kind: EntryKind,
}

/// Builds the request messages from the full history. The first two
/// entries must be the system and task messages.
pub fn build_context(history: &[Entry], policy: &ContextPolicy) -> Vec<Message> {
    let fixed = history.len().min(2);
    let rest = &history[fixed..];
    let mut start = rest.len().saturating_sub(policy.recent_messages);
    // A native tool result must follow the assistant message that called it;
    // results whose call fell out of the window join the summary instead.
    while start < rest.len() && rest[start].message.role == Role::Tool {
        start += 1;
    }
    let (older, recent) = rest.split_at(start);
    let mut out = Vec::with_capacity(fixed + 1 + recent.len());
    out.extend(history[..fixed].iter().map(|e| e.message.clone()));
    if let Some(summary) = summarise_older(older, policy) {
        out.push(Message::user(summary));
    }
    for entry in recent {
        let cap = match entry.kind {
            EntryKind::Assistant => policy.recent_assistant_max_chars,
            EntryKind::Observation { .. } => policy.recent_observation_max_chars,
            _ => usize::MAX,
        };
        if char_len(&entry.message.content) > cap {
            let mut message = entry.message.clone();
            message.content = cap_head(&entry.message.content, cap).0;
            out.push(message);
        } else {
            out.push(entry.message.clone());
        }
    }
    out
}

/// The one summary of older observations, or `None` when there are none.
pub fn summarise_older(older: &[Entry], policy: &ContextPolicy) -> Option<String> {
    let mut items: Vec<String> = older
        .iter()
        .filter_map(|entry| match &entry.kind {
            EntryKind::Observation {
                step,
                tool,
                status,
                evidence_files,
            } => Some(summarise_observation(
                *step,
                tool,
                status,
                evidence_files,
                &entry.message.content,
                policy,
            )),
            _ => None,
        })
        .collect();
    if items.is_empty() {
        return None;
    }
    let total = items.len();
    let header = |omitted: usize| {
        let mut h = format!(
            "Research state: summary of {total} earlier tool observation(s), oldest first \
             (each shortened to its head and tail)."
        );
        if omitted > 0 {
            h.push_str(&format!(
                " The {omitted} oldest are omitted to respect the limit."
            ));
        }
        h
    };
    // Drop the oldest items until the summary fits.
    let mut omitted = 0;
    let mut length: usize = items.iter().map(|s| char_len(s) + 2).sum();
    while omitted < items.len() && char_len(&header(omitted)) + length > policy.summary_max_chars {
        length -= char_len(&items[omitted]) + 2;
        omitted += 1;
    }
    let kept = items.split_off(omitted);
    let mut out = header(omitted);
    for item in kept {
        out.push_str("\n\n");
        out.push_str(&item);
    }
    // The header alone can exceed a tiny limit; the cap is a hard one.
    Some(cap_head(&out, policy.summary_max_chars).0)
}

fn summarise_observation(
    step: u32,
    tool: &str,
    status: &str,
    evidence_files: &[String],
    content: &str,
    policy: &ContextPolicy,
) -> String {
    let evidence = if evidence_files.is_empty() {
        "none".to_string()
    } else {
        evidence_files.join(", ")
    };
    let mut label =
        format!("[step {step} | tool {tool} | status {status} | evidence: {evidence}]\n");
    let max = policy.old_observation_max_chars;
    if char_len(&label) > max / 2 {
        // Keep the label from crowding out the observation itself.
        label = cap_head(&label, max / 2).0 + "\n";
    }
    let body_budget = max.saturating_sub(char_len(&label));
    let body = cap_head_tail(content, body_budget, policy.head_share);
    format!("{label}{body}")
}

#[cfg(test)]
#[allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn observation(step: u32, size: usize) -> Entry {
        Entry {
            message: Message::user(format!("{step:04}") + &"o".repeat(size) + "TAIL"),
            kind: EntryKind::Observation {
                step,
                tool: "read_text_file".into(),
                status: "ok".into(),
                evidence_files: vec![format!("data/f{step}.json")],
            },
        }
    }

    fn history(steps: u32, size: usize) -> Vec<Entry> {
        let mut h = vec![
            Entry {
                message: Message::system("sys"),
                kind: EntryKind::System,
            },
            Entry {
                message: Message::user("task"),
                kind: EntryKind::Task,
            },
        ];
        for step in 1..=steps {
            h.push(Entry {
                message: Message::assistant("a".repeat(size)),
                kind: EntryKind::Assistant,
            });
            h.push(observation(step, size));
        }
        h
    }

    #[test]
    fn short_history_is_kept_whole() {
        let h = history(8, 100);
        let ctx = build_context(&h, &ContextPolicy::default());
        assert_eq!(ctx.len(), h.len());
    }

    #[test]
    fn long_history_keeps_sixteen_recent_and_one_summary() {
        let policy = ContextPolicy::default();
        let h = history(30, 20_000);
        let ctx = build_context(&h, &policy);
        assert_eq!(ctx.len(), 2 + 1 + 16);
        assert_eq!(ctx[0].content, "sys");
        assert_eq!(ctx[1].content, "task");
        let summary = &ctx[2].content;
        assert!(char_len(summary) <= policy.summary_max_chars);
        // 22 older observations of ~1,400 characters exceed 24,000: the
        // oldest go, the most recent older one stays with its label.
        assert!(summary
            .contains("[step 22 | tool read_text_file | status ok | evidence: data/f22.json]"));
        assert!(!summary.contains("[step 1 |"));
        assert!(summary.contains("oldest are omitted"));
        // Each entry keeps head and tail.
        let entry = summary.split("\n\n").last().unwrap();
        assert!(char_len(entry) <= 1_400);
        assert!(entry.contains("0022") && entry.ends_with("TAIL"));
        // Recent messages are capped.
        for m in &ctx[3..] {
            let cap = if m.role == Role::Assistant {
                8_000
            } else {
                12_000
            };
            assert!(char_len(&m.content) <= cap);
        }
        assert_eq!(ctx.last().unwrap().content.get(..4), Some("0030"));
    }

    #[test]
    fn orphan_native_tool_results_move_to_the_summary() {
        let mut h = history(10, 10);
        // Make the first recent message a native tool result.
        let idx = h.len() - 16;
        h[idx].message.role = Role::Tool;
        let ctx = build_context(&h, &ContextPolicy::default());
        assert_eq!(ctx.len(), 2 + 1 + 15);
        assert_ne!(ctx[3].role, Role::Tool);
    }
}
