//! One RPC prompt played: `agent_start … agent_end` with the steering and follow-ups that
//! arrive meanwhile, each response streamed, its bash tools run while commands are served, and
//! `abort` honoured wherever it lands.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::mpsc::RecvTimeoutError;
use std::time::Duration;

use serde_json::Value;

use super::super::bash::{self, BashOutcome};
use super::super::live::{self, Serving};
use super::super::message_stream::{BlockKind, MessageStream};
use super::super::pace::Pace;
use super::super::scenario::{self, tokens, Placeholders, Response, Scenario, Step};
use super::super::signals;
use super::super::state::now_ms;
use super::super::wire::{
    AssistantMessage, ContentBlock, Event, Message, MessageRef, StopReason, ToolResultBody,
    ToolResultMessage,
};
use super::{response, Engine, Input, Interrupt};

impl Engine {
    fn scenario_for(&self, prompt: &str) -> Option<Scenario> {
        match &self.forced {
            Some(scenario) => Some(scenario.clone()),
            None => scenario::load(scenario::for_prompt(prompt)).and_then(Result::ok),
        }
    }

    /// Plays one prompt, with the steering and follow-ups that arrive meanwhile.
    pub(super) fn turn(&mut self, prompt: String) -> io::Result<Option<Interrupt>> {
        let Some(scenario) = self.scenario_for(&prompt) else {
            return Ok(None);
        };
        if scenario.ignore_termination {
            signals::ignore_interrupt_and_terminate();
        }
        self.ignoring_abort = scenario.ignore_termination;
        self.streaming = true;
        let result = self.play(&prompt, &scenario);
        self.streaming = false;
        self.ignoring_abort = false;
        let (messages, interrupt) = result?;
        if let Some(Interrupt::Exit) = interrupt {
            return Ok(interrupt);
        }
        self.out.event(&Event::AgentEnd {
            messages: &messages,
        })?;
        if let Some(Interrupt::Abort(id)) = &interrupt {
            self.line(&response(id.as_ref(), "abort", true))?;
        }
        Ok(interrupt)
    }

    fn user_message(&mut self, text: &str, messages: &mut Vec<Message>) -> io::Result<()> {
        self.session.record_prompt(text);
        let user = self.out.user_message(text)?;
        messages.push(Message::User(user));
        Ok(())
    }

    fn play(
        &mut self,
        prompt: &str,
        scenario: &Scenario,
    ) -> io::Result<(Vec<Message>, Option<Interrupt>)> {
        let mut messages = Vec::new();
        self.out.event(&Event::AgentStart)?;
        self.out.event(&Event::TurnStart)?;
        self.user_message(prompt, &mut messages)?;
        let mut placeholders = Placeholders::default();
        placeholders.set("prompt", prompt);
        placeholders.set("prompt_quoted", scenario::block_quote(prompt));
        placeholders.set("session_id", self.session.header.id.as_str());
        placeholders.set(
            "session_short",
            self.session.header.id.get(..8).unwrap_or(""),
        );
        placeholders.set("prompt_number", self.session.history.len().to_string());
        placeholders.set("attempt", "1");
        placeholders.set("pid", std::process::id().to_string());
        let mut script: VecDeque<Response> = scenario.responses.iter().cloned().collect();
        if let Some(seen) = self.seen_images.take() {
            // The images are acknowledged first, in the answer's first message.
            if script.is_empty() {
                script.push_back(Response::default());
            }
            if let Some(first) = script.front_mut() {
                first.steps.insert(
                    0,
                    Step::Text {
                        text: format!("{seen}\n\n"),
                        repeat: 1,
                    },
                );
            }
        }
        loop {
            // One LLM call and its tools.
            let response = script.pop_front().unwrap_or_default();
            let (assistant, results, interrupt) =
                self.respond(&response, scenario, &mut placeholders)?;
            if let Some(Interrupt::Exit) = interrupt {
                return Ok((messages, interrupt));
            }
            let stop_reason = assistant.stop_reason;
            messages.push(Message::Assistant(assistant));
            messages.extend(results.into_iter().map(Message::ToolResult));
            if interrupt.is_some() {
                return Ok((messages, interrupt));
            }
            if stop_reason == StopReason::Error {
                return Ok((messages, None));
            }
            let more_tools = stop_reason == StopReason::ToolUse && !script.is_empty();
            // Steering is delivered after the step, follow-ups when the agent would stop.
            let delivered = if let Some(steer) = self.steering.pop_front() {
                Some(("You steered me while I worked", steer))
            } else if more_tools {
                None
            } else {
                self.follow_up
                    .pop_front()
                    .map(|follow| ("Your follow-up", follow))
            };
            match delivered {
                Some((heading, text)) => {
                    self.queue_update()?;
                    self.out.event(&Event::TurnStart)?;
                    self.user_message(&text, &mut messages)?;
                    // The steered answer replaces what the script would have said.
                    script.clear();
                    script.push_back(Response {
                        steps: vec![Step::Text {
                            text: format!("{heading}: \"{text}\". Done."),
                            repeat: 1,
                        }],
                        ..Response::default()
                    });
                }
                None if more_tools => self.out.event(&Event::TurnStart)?,
                None => return Ok((messages, None)),
            }
        }
    }

    /// Streams one assistant message and runs its tool calls.
    fn respond(
        &mut self,
        response: &Response,
        scenario: &Scenario,
        placeholders: &mut Placeholders,
    ) -> io::Result<(AssistantMessage, Vec<ToolResultMessage>, Option<Interrupt>)> {
        self.responses += 1;
        let mut stream = MessageStream::open(self.responses, false);
        if let Some(interrupt) = self.wait(scenario.first_token_delay_ms)? {
            return self.aborted_before_output(stream, interrupt);
        }
        self.out.event(&Event::MessageStart {
            message: MessageRef::Assistant(stream.message()),
        })?;
        for step in &response.steps {
            let (kind, text) = match step {
                Step::Text { text, repeat } => {
                    (BlockKind::Text, placeholders.fill(text).repeat(*repeat))
                }
                Step::Thinking { text } => (BlockKind::Thinking, placeholders.fill(text)),
                Step::Bash { command } => {
                    self.tool_calls += 1;
                    let id = format!("call_demo_{}", self.tool_calls);
                    let command = placeholders.fill(command);
                    stream.tool_call(&mut self.out, Pace::instant(), scenario, id, &command)?;
                    continue;
                }
                Step::RawLine { line } => {
                    self.out.line(&placeholders.fill(line))?;
                    continue;
                }
                Step::Pause { ms } => {
                    if let Some(interrupt) = self.wait(*ms)? {
                        return self.aborted(stream, interrupt);
                    }
                    continue;
                }
                Step::Crash { stderr, exit_code } => {
                    let mut err = io::stderr().lock();
                    let _ = writeln!(err, "{}", placeholders.fill(stderr));
                    let _ = err.flush();
                    std::process::exit(*exit_code);
                }
            };
            for token in tokens(&text, scenario.words_per_token) {
                if let Some(interrupt) = self.wait(scenario.token_delay_ms)? {
                    return self.aborted(stream, interrupt);
                }
                stream.append(&mut self.out, kind, token)?;
            }
        }
        let assistant = match &response.error {
            Some(error) => stream.fail(&mut self.out, error)?,
            None => stream.finish(&mut self.out, 1_100)?,
        };
        let mut results = Vec::new();
        for block in &assistant.content {
            let ContentBlock::ToolCall { id, arguments, .. } = block else {
                continue;
            };
            let command = arguments["command"].as_str().unwrap_or_default().to_owned();
            let (result, interrupt) = self.run_tool(id, arguments, &command)?;
            if let Some(ContentBlock::Text { text }) = result.content.first() {
                placeholders.set("last_tool_output", text.trim_end().to_owned());
            }
            self.out.whole_message(MessageRef::ToolResult(&result))?;
            results.push(result);
            if let Some(interrupt) = interrupt {
                if let Interrupt::Exit = interrupt {
                    return Ok((assistant, results, Some(interrupt)));
                }
                // pi: the turn ends, then a new turn whose request is never made.
                self.out.event(&Event::TurnEnd {
                    message: &assistant,
                    tool_results: &results,
                })?;
                self.out.event(&Event::TurnStart)?;
                if let Some(steer) = self.steering.pop_front() {
                    self.queue_update()?;
                    self.session.record_unanswered(&steer);
                    self.out.user_message(&steer)?;
                }
                let mut empty = AssistantMessage::started(now_ms());
                empty.stop_reason = StopReason::Aborted;
                empty.error_message = Some("Request was aborted.".into());
                self.out.whole_message(MessageRef::Assistant(&empty))?;
                self.out.event(&Event::TurnEnd {
                    message: &empty,
                    tool_results: &[],
                })?;
                return Ok((empty, results, Some(interrupt)));
            }
        }
        self.out.event(&Event::TurnEnd {
            message: &assistant,
            tool_results: &results,
        })?;
        Ok((assistant, results, None))
    }

    fn aborted_before_output(
        &mut self,
        stream: MessageStream,
        interrupt: Interrupt,
    ) -> io::Result<(AssistantMessage, Vec<ToolResultMessage>, Option<Interrupt>)> {
        if !matches!(interrupt, Interrupt::Exit) {
            self.out.event(&Event::MessageStart {
                message: MessageRef::Assistant(stream.message()),
            })?;
        }
        self.aborted(stream, interrupt)
    }

    fn aborted(
        &mut self,
        stream: MessageStream,
        interrupt: Interrupt,
    ) -> io::Result<(AssistantMessage, Vec<ToolResultMessage>, Option<Interrupt>)> {
        if let Interrupt::Exit = interrupt {
            return Ok((stream.message().clone(), Vec::new(), Some(interrupt)));
        }
        let message = stream.abort(&mut self.out)?;
        self.out.event(&Event::TurnEnd {
            message: &message,
            tool_results: &[],
        })?;
        Ok((message, Vec::new(), Some(interrupt)))
    }

    /// Runs a bash tool like pi (own session, output as it comes), serving commands meanwhile;
    /// `abort` kills its process group and fails it with "Command aborted".
    fn run_tool(
        &mut self,
        id: &str,
        args: &Value,
        command: &str,
    ) -> io::Result<(ToolResultMessage, Option<Interrupt>)> {
        self.out.event(&Event::ToolExecutionStart {
            tool_call_id: id,
            tool_name: "bash",
            args,
        })?;
        self.out.event(&Event::ToolExecutionUpdate {
            tool_call_id: id,
            tool_name: "bash",
            args,
            partial_result: ToolResultBody {
                content: &[],
                details: None,
            },
        })?;
        let (mut child, _group) =
            live::spawn_tool(command, None, self.inputs_tx.clone(), |piece| match piece {
                Some(bytes) => Input::ToolOutput(bytes),
                None => Input::ToolOutputClosed,
            })?;
        let mut output = Vec::new();
        let mut interrupt = None;
        let mut output_open = true;
        let status = loop {
            if !output_open {
                if let Some(status) = child.try_wait()? {
                    break Some(status);
                }
            }
            match self.inputs.recv_timeout(Duration::from_millis(20)) {
                Ok(Input::ToolOutput(bytes)) => {
                    output.extend_from_slice(&bytes);
                    let so_far = String::from_utf8_lossy(&output).into_owned();
                    self.out.event(&Event::ToolExecutionUpdate {
                        tool_call_id: id,
                        tool_name: "bash",
                        args,
                        partial_result: ToolResultBody {
                            content: &[ContentBlock::text(so_far)],
                            details: Some(Value::Object(Default::default())),
                        },
                    })?;
                }
                Ok(Input::ToolOutputClosed) => output_open = false,
                Ok(input) => {
                    if let Some(stop) = self.during_turn(input)? {
                        bash::stop_cut_short(&mut child);
                        interrupt = Some(stop);
                        break None;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    interrupt = Some(Interrupt::Exit);
                    break None;
                }
            }
        };
        let text = match status {
            Some(status) => {
                let outcome = BashOutcome::finished(status, &output);
                (outcome.result_text(), outcome.exit_code != 0)
            }
            None => ("Command aborted".to_owned(), true),
        };
        self.out.event(&Event::ToolExecutionEnd {
            tool_call_id: id,
            tool_name: "bash",
            result: ToolResultBody {
                content: &[ContentBlock::text(text.0.as_str())],
                details: None,
            },
            is_error: text.1,
        })?;
        let result = ToolResultMessage::new(id.to_owned(), "bash", text.0, text.1, now_ms());
        Ok((result, interrupt))
    }
}
