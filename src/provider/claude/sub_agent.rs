//! Claude Code's sub-agents (its `Agent` tool, `Task` before 2.1) as they are shown: the
//! sub-agent's own tool calls nest under the call that started it (their lines carry
//! `parent_tool_use_id`), its progress (`system` `task_started`, `task_progress`,
//! `task_notification`) is that call's live output, and its result is the sub-agent's answer
//! without the protocol text Claude adds for the model (`agentId: … (use SendMessage …)`,
//! `<usage>…</usage>`). Shapes: tests/fixtures/agent_work/claude_subagent.jsonl.

use super::wire::{WireContent, WireLine};

/// The tools that start a sub-agent.
const SUB_AGENT_TOOLS: [&str; 2] = ["Agent", "Task"];
/// The block Claude Code appends to a sub-agent's result for the model.
const AGENT_ID_NOTE: &str = "agentId: ";

pub(super) fn starts_sub_agent(tool: &str) -> bool {
    SUB_AGENT_TOOLS.contains(&tool)
}

/// The sub-agent's state in words, from a `task_*` system line: "Running Print one · 1 tool
/// use · 1.2k tokens", "completed · Run two commands".
pub(super) fn progress_text(line: &WireLine<'_>) -> Option<String> {
    let mut parts = Vec::new();
    match line.subtype.as_deref()? {
        "task_started" => parts.push(format!(
            "started: {}",
            line.description.as_deref().unwrap_or("a sub-agent")
        )),
        "task_progress" => {
            if let Some(description) = line.description.as_deref().filter(|text| !text.is_empty()) {
                parts.push(description.to_owned());
            }
        }
        "task_notification" => {
            let status = line.status.as_ref().and_then(|status| status.as_str());
            parts.push(status.unwrap_or("finished").to_owned());
            if let Some(summary) = line.summary.as_deref().filter(|text| !text.is_empty()) {
                parts.push(summary.to_owned());
            }
        }
        _ => return None,
    }
    if let Some(usage) = &line.usage {
        if let Some(uses) = usage.tool_uses {
            parts.push(if uses == 1 {
                "1 tool use".to_owned()
            } else {
                format!("{uses} tool uses")
            });
        }
        if let Some(tokens) = usage.total_tokens {
            parts.push(format!("{} tokens", thousands(tokens)));
        }
    }
    Some(parts.join(" · "))
}

fn thousands(count: u64) -> String {
    if count >= 1000 {
        format!("{:.1}k", count as f64 / 1000.0)
    } else {
        count.to_string()
    }
}

/// A sub-agent's result as the user reads it: its text blocks, without Claude's notes to the
/// model.
pub(super) fn result_text(content: Option<&WireContent<'_>>) -> String {
    let Some(content) = content else {
        return String::new();
    };
    let texts: Vec<String> = match content {
        WireContent::Text(text) => vec![text.to_string()],
        WireContent::Blocks(blocks) => blocks
            .iter()
            .filter(|block| block.kind == "text")
            .map(|block| block.text.to_string())
            .collect(),
    };
    texts
        .iter()
        .map(|text| without_usage(text))
        .filter(|text| !text.trim_start().starts_with(AGENT_ID_NOTE))
        .map(|text| text.trim_end().to_owned())
        .filter(|text| !text.is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` without its `<usage>…</usage>` parts.
fn without_usage(text: &str) -> String {
    let mut kept = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("<usage>") {
        kept.push_str(&rest[..start]);
        match rest[start..].find("</usage>") {
            Some(end) => rest = &rest[start + end + "</usage>".len()..],
            None => {
                rest = "";
            }
        }
    }
    kept.push_str(rest);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notes_to_the_model_are_not_the_result() {
        let content: WireContent = serde_json::from_str(
            r#"[{"type":"text","text":"Done: one and two."},{"type":"text","text":"agentId: a83 (use SendMessage with to: 'a83' to continue this agent)\n<usage>subagent_tokens: 1254\ntool_uses: 2</usage>"}]"#,
        )
        .unwrap();
        assert_eq!(result_text(Some(&content)), "Done: one and two.");
        let inline: WireContent =
            serde_json::from_str(r#""All good.\n<usage>total: 3</usage>""#).unwrap();
        assert_eq!(result_text(Some(&inline)), "All good.");
        let cut: WireContent = serde_json::from_str(r#""Partial <usage>never closed""#).unwrap();
        assert_eq!(result_text(Some(&cut)), "Partial");
    }

    #[test]
    fn progress_lines_say_what_the_sub_agent_does() {
        fn line(json: &str) -> WireLine<'_> {
            serde_json::from_str(json).unwrap()
        }
        assert_eq!(
            progress_text(&line(
                r#"{"type":"system","subtype":"task_started","description":"Run two commands"}"#
            )),
            Some("started: Run two commands".to_owned())
        );
        assert_eq!(
            progress_text(&line(
                r#"{"type":"system","subtype":"task_progress","description":"Running Print one","usage":{"total_tokens":1235,"tool_uses":1,"duration_ms":482}}"#
            )),
            Some("Running Print one · 1 tool use · 1.2k tokens".to_owned())
        );
        assert_eq!(
            progress_text(&line(
                r#"{"type":"system","subtype":"task_notification","status":"completed","summary":"Run two commands","usage":{"total_tokens":999,"tool_uses":2}}"#
            )),
            Some("completed · Run two commands · 2 tool uses · 999 tokens".to_owned())
        );
        assert_eq!(
            progress_text(&line(r#"{"type":"system","subtype":"init"}"#)),
            None
        );
    }
}
