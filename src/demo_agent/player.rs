//! The interpreter: plays one prompt of a scenario as pi's event sequence.
//!
//! The sequence per prompt, as in the captures: `agent_start`, `turn_start`, the user message
//! (`message_start`/`message_end`), then per response (LLM call) an assistant message, the
//! `tool_execution_*` events of its tool calls, one `message_start`/`message_end` per
//! toolResult, `turn_end{message, toolResults}`; the next response opens a new `turn_start`;
//! finally `agent_end{messages}`.
//!
//! Within an assistant message, like pi's openai-completions provider:
//! - `message` and `assistantMessageEvent.partial` are the same live snapshot, and a `*_start`
//!   snapshot already holds the block's first chunk;
//! - usage stays zero and `stopReason` stays `stop` until the stream ends; the final values show
//!   on the `*_end` events, which all come together after the last delta, in content order;
//! - text always goes to the message's one text block (text after a tool call is appended to it);
//! - a toolCall snapshot carries `partialArgs`/`streamIndex` until the call is complete;
//! - an error ends the message with `message_end` straight away: no `*_end` events, the text so
//!   far kept, usage zero. An error before any output shows `message_start` already failed.

use std::io::{self, Write};

use serde_json::Value;

use super::bash;
use super::message_stream::{BlockKind, MessageStream};
use super::output::Output;
use super::pace::Pace;
use super::scenario::{tokens, Placeholders, Response, Scenario, Step};
use super::state::now_ms;
use super::wire::{
    AssistantMessage, ContentBlock, Event, Message, MessageRef, StopReason, ToolResultBody,
    ToolResultMessage,
};

/// The tokens a prompt costs before its own text (a system prompt and tool definitions).
const BASE_INPUT_TOKENS: u64 = 1_100;

/// How playing a prompt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunEnd {
    /// `agent_end` was printed (also after a provider error: pi exits 0 then).
    Completed,
    /// The scenario crashed: exit at once with this status.
    Exit(i32),
}

/// Everything one prompt's playback needs.
pub(crate) struct Player<'a> {
    pub(crate) out: &'a mut Output,
    pub(crate) pace: Pace,
    pub(crate) scenario: &'a Scenario,
    pub(crate) placeholders: Placeholders,
    /// When set, the only response is this error (the `flaky` scenario's failing attempt).
    pub(crate) fail_with: Option<String>,
    tool_calls: u32,
    responses: u32,
}

impl<'a> Player<'a> {
    pub(crate) fn new(
        out: &'a mut Output,
        pace: Pace,
        scenario: &'a Scenario,
        placeholders: Placeholders,
        fail_with: Option<String>,
    ) -> Self {
        Self {
            out,
            pace,
            scenario,
            placeholders,
            fail_with,
            tool_calls: 0,
            responses: 0,
        }
    }

    pub(crate) fn play(&mut self, prompt: &str) -> io::Result<RunEnd> {
        self.out.event(&Event::AgentStart)?;
        self.out.event(&Event::TurnStart)?;
        let user = self.out.user_message(prompt)?;
        let mut context_chars = prompt.len();
        let mut messages = vec![Message::User(user)];
        let failing;
        let responses: &[Response] = match &self.fail_with {
            Some(error) => {
                failing = [Response {
                    error: Some(error.clone()),
                    ..Response::default()
                }];
                &failing
            }
            None => &self.scenario.responses,
        };
        let mut previous_text = String::new();
        for (index, response) in responses.iter().enumerate() {
            if index > 0 {
                self.out.event(&Event::TurnStart)?;
            }
            let input_tokens = BASE_INPUT_TOKENS + (context_chars / 4) as u64;
            let assistant = match self.play_response(response, &previous_text, input_tokens)? {
                Played::Message(message) => *message,
                Played::Crashed(code) => return Ok(RunEnd::Exit(code)),
            };
            let failed = assistant.stop_reason == StopReason::Error;
            let tool_results = if failed {
                Vec::new()
            } else {
                self.run_tools(&assistant)?
            };
            for result in &tool_results {
                self.out.whole_message(MessageRef::ToolResult(result))?;
            }
            self.out.event(&Event::TurnEnd {
                message: &assistant,
                tool_results: &tool_results,
            })?;
            previous_text = assistant.text();
            context_chars += previous_text.len();
            let more = !failed && !tool_results.is_empty();
            messages.push(Message::Assistant(assistant));
            for result in tool_results {
                context_chars += result.content.iter().map(block_len).sum::<usize>();
                messages.push(Message::ToolResult(result));
            }
            // pi asks the model again only to hand it tool results.
            if !more {
                break;
            }
        }
        self.out.event(&Event::AgentEnd {
            messages: &messages,
        })?;
        Ok(RunEnd::Completed)
    }

    fn play_response(
        &mut self,
        response: &Response,
        previous_text: &str,
        input_tokens: u64,
    ) -> io::Result<Played> {
        let scenario = self.scenario;
        self.pace.sleep_ms(scenario.first_token_delay_ms);
        self.responses += 1;
        let mut stream = MessageStream::open(self.responses, scenario.legacy_snapshots);
        if response.steps.is_empty() && !response.replay_previous_text {
            if let Some(error) = &response.error {
                let message = stream.fail_outright(self.out, error)?;
                return Ok(Played::Message(Box::new(message)));
            }
        }
        self.out.event(&Event::MessageStart {
            message: MessageRef::Assistant(stream.message()),
        })?;
        if response.replay_previous_text && !previous_text.is_empty() {
            for token in tokens(previous_text, scenario.words_per_token) {
                self.pace.sleep_ms(scenario.token_delay_ms);
                stream.append(self.out, BlockKind::Text, token)?;
            }
        }
        for step in &response.steps {
            match step {
                Step::Text { text, repeat } => {
                    let text = self.placeholders.fill(text).repeat(*repeat);
                    for token in tokens(&text, scenario.words_per_token) {
                        self.pace.sleep_ms(scenario.token_delay_ms);
                        stream.append(self.out, BlockKind::Text, token)?;
                    }
                }
                Step::Thinking { text } => {
                    let text = self.placeholders.fill(text);
                    for token in tokens(&text, scenario.words_per_token) {
                        self.pace.sleep_ms(scenario.token_delay_ms);
                        stream.append(self.out, BlockKind::Thinking, token)?;
                    }
                }
                Step::Bash { command } => {
                    self.tool_calls += 1;
                    let id = format!("call_demo_{}", self.tool_calls);
                    let command = self.placeholders.fill(command);
                    stream.tool_call(self.out, self.pace, scenario, id, &command)?;
                }
                Step::RawLine { line } => self.out.line(&self.placeholders.fill(line))?,
                Step::Pause { ms } => self.pace.sleep_ms(*ms),
                Step::Crash { stderr, exit_code } => {
                    let mut stderr_stream = io::stderr().lock();
                    let _ = writeln!(stderr_stream, "{}", self.placeholders.fill(stderr));
                    let _ = stderr_stream.flush();
                    return Ok(Played::Crashed(*exit_code));
                }
            }
        }
        let message = match &response.error {
            Some(error) => stream.fail(self.out, error)?,
            None => stream.finish(self.out, input_tokens)?,
        };
        Ok(Played::Message(Box::new(message)))
    }

    /// Runs the message's tool calls one after another, as `tool_execution_*` events.
    fn run_tools(&mut self, assistant: &AssistantMessage) -> io::Result<Vec<ToolResultMessage>> {
        let mut results = Vec::new();
        for block in &assistant.content {
            let ContentBlock::ToolCall {
                id,
                name,
                arguments,
                ..
            } = block
            else {
                continue;
            };
            let (tool_call_id, tool_name, args) = (id.as_str(), *name, arguments);
            self.out.event(&Event::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
            })?;
            self.out.event(&Event::ToolExecutionUpdate {
                tool_call_id,
                tool_name,
                args,
                partial_result: ToolResultBody {
                    content: &[],
                    details: None,
                },
            })?;
            let command = arguments
                .get("command")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let out = &mut *self.out;
            let outcome = bash::run(command, |so_far| {
                out.event(&Event::ToolExecutionUpdate {
                    tool_call_id,
                    tool_name,
                    args,
                    partial_result: ToolResultBody {
                        content: &[ContentBlock::text(so_far)],
                        details: Some(Value::Object(Default::default())),
                    },
                })
            });
            let (text, is_error, output, exit_code) = match outcome {
                Ok(outcome) => (
                    outcome.result_text(),
                    outcome.exit_code != 0,
                    outcome.output.trim_end().to_owned(),
                    outcome.exit_code,
                ),
                Err(error) => (format!("{error}"), true, format!("{error}"), 127),
            };
            self.out.event(&Event::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result: ToolResultBody {
                    content: &[ContentBlock::text(text.as_str())],
                    details: None,
                },
                is_error,
            })?;
            self.placeholders.set("last_tool_output", output);
            self.placeholders
                .set("last_tool_exit_code", exit_code.to_string());
            results.push(ToolResultMessage::new(
                tool_call_id.to_owned(),
                tool_name,
                text,
                is_error,
                now_ms(),
            ));
        }
        Ok(results)
    }
}

enum Played {
    Message(Box<AssistantMessage>),
    Crashed(i32),
}

fn block_len(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text { text } => text.len(),
        ContentBlock::Thinking { thinking, .. } => thinking.len(),
        ContentBlock::ToolCall { .. } => 0,
    }
}
