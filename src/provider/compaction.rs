//! `/compact`: what every transport shares when it compacts the agent's conversation (pi RPC's
//! `compact`, Claude's `/compact` slash command, Codex's `thread/compact/start`, an ACP agent's
//! own announced command such as Qwen Code's `/compress`): the notice that says the result, the
//! slash command sent as a prompt, and the answer of a transport that cannot.

use crate::config::Transport;
use crate::stream::{AgentMessage, Failure, FailureReason, NoticeKind};

/// An attempt's stream (the contract's `AgentStream`, named here without importing it: the
/// contract's default `compact` uses this module).
type AgentStream = futures::stream::BoxStream<'static, AgentMessage>;

/// The slash command that compacts agents which take it as a prompt (Claude Code), with the
/// user's instructions for the summary.
pub(crate) fn slash_command(instructions: Option<&str>) -> String {
    match instructions.map(str::trim).filter(|text| !text.is_empty()) {
        Some(text) => format!("/compact {text}"),
        None => "/compact".to_owned(),
    }
}

/// The agent's own compaction command `name` (one it announced), with the user's instructions.
pub(crate) fn agent_command(name: &str, instructions: Option<&str>) -> String {
    match instructions.map(str::trim).filter(|text| !text.is_empty()) {
        Some(text) => format!("/{name} {text}"),
        None => format!("/{name}"),
    }
}

/// The stream of a compaction asked as the agent's own command (`stream` is the prompt's
/// attempt): the agent's words are its result, said in the `compacted` notice once the command
/// completed (`Conversation compacted (/compress): Context compressed (1234 -> ~1056).`); a
/// failure stays the failure.
pub(crate) fn by_agent_command(stream: AgentStream, name: String) -> AgentStream {
    use futures::StreamExt;
    let mut said = String::new();
    Box::pin(stream.flat_map(move |message| {
        let passed = match message {
            AgentMessage::Assistant { delta } => {
                said.push_str(&delta);
                Vec::new()
            }
            completed @ AgentMessage::Completed { .. } => {
                let words = said.trim();
                let message = match words {
                    "" => format!("Conversation compacted (/{name})"),
                    words => format!("Conversation compacted (/{name}): {words}"),
                };
                vec![
                    AgentMessage::notice(NoticeKind::Compacted.wire(), message),
                    completed,
                ]
            }
            other => vec![other],
        };
        futures::stream::iter(passed)
    }))
}

/// The `compacted` notice: the context's size before and after, where the agent says.
pub fn compacted_notice(before: Option<u64>, after: Option<u64>) -> AgentMessage {
    let message = match (before, after) {
        (Some(before), Some(after)) => format!(
            "Conversation compacted: {} → {} tokens",
            thousands(before),
            thousands(after)
        ),
        (Some(before), None) => format!(
            "Conversation compacted: {} tokens summarised",
            thousands(before)
        ),
        _ => "Conversation compacted".to_owned(),
    };
    AgentMessage::notice(NoticeKind::Compacted, message)
}

/// Why `/compact` does nothing here, for the user: nothing was sent to the agent.
pub(crate) fn unavailable_reason(provider: &str, transport: Transport) -> String {
    format!(
        "/compact is not available with {provider} over {}: nothing was sent. Compaction works \
         with pi over rpc, claude over stream, codex over app-server, and ACP agents that \
         announce their own compaction command (/compact or /compress).",
        transport.name()
    )
}

/// The stream of a compaction asked of a transport that has none (the orchestrator asks first,
/// so this is a safety net): one `terminal.failed` that says so.
pub(crate) fn unavailable_stream(provider: &str, transport: Transport) -> AgentStream {
    let failure = AgentMessage::Failed(Failure {
        reason: FailureReason::AgentError,
        message: unavailable_reason(provider, transport),
        ..Failure::default()
    });
    Box::pin(futures::stream::iter([failure]))
}

/// The stream of a compaction asked as a slash command (`stream` is the prompt's attempt):
/// it compacted only if the agent said so (a `compacted` notice, which its mapper makes of the
/// agent's own event). The agent's text is what it says when it did not ("Not enough messages
/// to compact."): held back, and the completion without a compaction becomes a failure that
/// says it, so the user reads one clear notice.
pub(crate) fn by_slash_command(stream: AgentStream, agent: &'static str) -> AgentStream {
    use futures::StreamExt;
    let mut compacted = false;
    let mut said = String::new();
    Box::pin(stream.filter_map(move |message| {
        let passed = match message {
            AgentMessage::Assistant { delta } => {
                said.push_str(&delta);
                None
            }
            AgentMessage::Notice { ref kind, .. } if *kind == NoticeKind::Compacted => {
                compacted = true;
                Some(message)
            }
            AgentMessage::Completed { .. } if !compacted => {
                let why = match said.trim() {
                    "" => "it said nothing about it".to_owned(),
                    text => text.to_owned(),
                };
                Some(AgentMessage::Failed(Failure {
                    reason: FailureReason::AgentError,
                    message: format!("{agent} did not compact the conversation: {why}"),
                    text: std::mem::take(&mut said),
                    ..Failure::default()
                }))
            }
            other => Some(other),
        };
        futures::future::ready(passed)
    }))
}

/// 12345 as "12,345".
fn thousands(count: u64) -> String {
    let digits = count.to_string();
    let mut out = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn completed() -> AgentMessage {
        AgentMessage::Completed {
            stop_reason: "end_turn".to_owned(),
            usage: None,
        }
    }

    async fn through_slash_command(messages: Vec<AgentMessage>) -> Vec<AgentMessage> {
        by_slash_command(Box::pin(futures::stream::iter(messages)), "Claude")
            .collect()
            .await
    }

    #[tokio::test]
    async fn a_slash_command_compacted_only_when_the_agent_says_so() {
        let compacted = compacted_notice(Some(1259), Some(614));
        let out = through_slash_command(vec![compacted.clone(), completed()]).await;
        assert_eq!(out, [compacted, completed()]);

        let out = through_slash_command(vec![
            AgentMessage::Assistant {
                delta: "Not enough messages ".to_owned(),
            },
            AgentMessage::Assistant {
                delta: "to compact.".to_owned(),
            },
            completed(),
        ])
        .await;
        match &out[..] {
            [AgentMessage::Failed(failure)] => assert_eq!(
                failure.message,
                "Claude did not compact the conversation: Not enough messages to compact."
            ),
            other => panic!("one failure, not {other:?}"),
        }
    }

    #[tokio::test]
    async fn an_agents_own_command_compacted_in_its_own_words() {
        let out: Vec<AgentMessage> = by_agent_command(
            Box::pin(futures::stream::iter(vec![
                AgentMessage::Assistant {
                    delta: "Compressing context...".to_owned(),
                },
                AgentMessage::Assistant {
                    delta: "Context compressed (1234 -> ~1056).".to_owned(),
                },
                completed(),
            ])),
            "compress".to_owned(),
        )
        .collect()
        .await;
        assert_eq!(
            out,
            [
                AgentMessage::notice(
                    NoticeKind::Compacted.wire(),
                    "Conversation compacted (/compress): Compressing context...Context compressed (1234 -> ~1056)."
                ),
                completed()
            ]
        );
        assert_eq!(
            agent_command("compress", Some(" keep the API ")),
            "/compress keep the API"
        );
        assert_eq!(agent_command("compress", None), "/compress");
    }

    #[test]
    fn the_notice_says_the_figures_the_agent_gave() {
        let text = |message: AgentMessage| match message {
            AgentMessage::Notice { kind, message } => {
                assert_eq!(kind, "compacted");
                message
            }
            other => panic!("not a notice: {other:?}"),
        };
        assert_eq!(
            text(compacted_notice(Some(123_456), Some(7_890))),
            "Conversation compacted: 123,456 → 7,890 tokens"
        );
        assert_eq!(
            text(compacted_notice(Some(999), None)),
            "Conversation compacted: 999 tokens summarised"
        );
        assert_eq!(text(compacted_notice(None, None)), "Conversation compacted");
    }

    #[test]
    fn the_slash_command_carries_the_instructions() {
        assert_eq!(slash_command(None), "/compact");
        assert_eq!(slash_command(Some("  ")), "/compact");
        assert_eq!(
            slash_command(Some(" keep the API notes ")),
            "/compact keep the API notes"
        );
    }
}
