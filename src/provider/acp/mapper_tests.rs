//! The ACP mapper on the real `gemini --acp` lines (`tests/fixtures/acp/gemini_*.jsonl`: what
//! Gemini CLI 0.61.0 wrote on stdout in `tests/fixtures/captures/gemini/acp_*.acp.jsonl`) and on
//! lines shaped as the Claude and Codex adapters send them (the ACP protocol notes).

use serde_json::json;

use super::*;
use crate::stream::PermissionOptionKind;

fn map_all(mapper: &mut AcpMapper, lines: &str) -> (Vec<AgentMessage>, Vec<LineVerdict>) {
    let mut out = Vec::new();
    let verdicts = lines
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| mapper.map_line(line, &mut out))
        .collect();
    (out, verdicts)
}

fn finish(mapper: &mut AcpMapper, out: &mut Vec<AgentMessage>) -> AgentOutcome {
    mapper.finish(ExitFacts::default(), out)
}

use crate::stream::assistant_text as text_of;

fn update(update: Value) -> String {
    json!({"jsonrpc": "2.0", "method": "session/update",
           "params": {"sessionId": "s1", "update": update}})
    .to_string()
}

#[test]
fn gemini_text_streams_as_deltas_and_its_answer_completes_the_turn() {
    let mut mapper = AcpMapper::new(None);
    let (mut out, verdicts) = map_all(
        &mut mapper,
        include_str!("../../../tests/fixtures/acp/gemini_text.jsonl"),
    );
    assert!(!verdicts.contains(&LineVerdict::Invalid));
    assert!(mapper.outcome_reported());
    assert_eq!(text_of(&out), "Hello from the fake Gemini.");
    let outcome = finish(&mut mapper, &mut out);
    let AgentOutcome::Completed { stop_reason, usage } = outcome else {
        panic!("not completed: {outcome:?}");
    };
    assert_eq!(stop_reason, "end_turn");
    let usage = usage.expect("usage from _meta.quota");
    assert_eq!(
        (usage.input_tokens, usage.output_tokens),
        (Some(10), Some(5))
    );
    assert_eq!(usage.model.as_deref(), Some("gemini-3.8-flash"));
}

#[test]
fn gemini_thoughts_stream_live_and_are_released_whole_at_the_turns_end() {
    let mut mapper = AcpMapper::new(None);
    let (mut out, _) = map_all(
        &mut mapper,
        include_str!("../../../tests/fixtures/acp/gemini_reasoning.jsonl"),
    );
    finish(&mut mapper, &mut out);
    let live: String = out
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Thinking { delta } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    let whole: Vec<&str> = out
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Thought { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(whole, [live.as_str()]);
    assert!(live.starts_with("**Thinking about greeting**"));
    assert_eq!(text_of(&out), "After thinking: hello!");
}

#[test]
fn gemini_tool_call_is_announced_and_completed() {
    let mut mapper = AcpMapper::new(None);
    let (mut out, _) = map_all(
        &mut mapper,
        include_str!("../../../tests/fixtures/acp/gemini_tool.jsonl"),
    );
    finish(&mut mapper, &mut out);
    let tool_messages: Vec<&AgentMessage> = out
        .iter()
        .filter(|message| {
            matches!(
                message,
                AgentMessage::ToolCall { .. }
                    | AgentMessage::ToolCompleted { .. }
                    | AgentMessage::ToolFailed { .. }
            )
        })
        .collect();
    assert_eq!(tool_messages.len(), 2, "{tool_messages:?}");
    assert!(matches!(tool_messages[0], AgentMessage::ToolCall { name, .. } if name == "echo hi"));
    assert!(matches!(
        tool_messages[1],
        AgentMessage::ToolCompleted { .. }
    ));
    assert_eq!(text_of(&out), "I'll run it.The command printed hi.");
}

#[test]
fn a_cancelled_prompt_is_the_agent_confirming_our_stop() {
    let mut mapper = AcpMapper::new(Some("2".into()));
    let (mut out, _) = map_all(
        &mut mapper,
        include_str!("../../../tests/fixtures/acp/gemini_slow_cancel.jsonl"),
    );
    assert_eq!(finish(&mut mapper, &mut out), AgentOutcome::Aborted);
    assert_eq!(
        text_of(&out),
        "tok0 tok1 tok2 tok3 tok4 tok5 tok6 tok7 tok8 tok9 "
    );
}

#[test]
fn a_permission_for_a_call_never_announced_announces_it_and_an_allowed_call_completes() {
    // Gemini: no `tool_call` before the request; one completed update after "allow".
    let mut mapper = AcpMapper::new(Some("7".into()));
    let request = json!({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {
        "sessionId": "s1",
        "toolCall": {"toolCallId": "t1", "title": "touch x", "kind": "execute", "status": "pending",
                     "rawInput": {"command": "touch x"}, "locations": [{"path": "/w/x"}]},
        "options": [
            {"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"},
            {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
            {"optionId": "cancel", "name": "Reject", "kind": "reject_once"}]}});
    let mut out = Vec::new();
    assert_eq!(
        mapper.map_line(&request.to_string(), &mut out),
        LineVerdict::Event
    );
    assert!(
        matches!(&out[0], AgentMessage::ToolCall { id, name, .. } if id == "t1" && name == "touch x")
    );
    let AgentMessage::PermissionRequest(asked) = &out[1] else {
        panic!("no permission request: {out:?}");
    };
    assert_eq!(asked.id, "0");
    assert_eq!(asked.tool_call_id.as_deref(), Some("t1"));
    assert_eq!(asked.command.as_deref(), Some("touch x"));
    assert_eq!(asked.paths, ["/w/x"]);
    assert_eq!(asked.options.len(), 3);
    assert_eq!(
        asked
            .option_of(PermissionOptionKind::AllowOnce)
            .map(|option| option.id.as_str()),
        Some("proceed_once")
    );
    out.clear();
    let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}});
    mapper.map_client_line(&answer.to_string(), &mut out);
    assert!(out.is_empty(), "an allowed call stays open: {out:?}");
    mapper.map_line(&update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "content": []})), &mut out);
    assert!(matches!(&out[..], [AgentMessage::ToolCompleted { id, .. }] if id == "t1"));
}

#[test]
fn a_refused_call_ends_failed_even_when_the_agent_says_nothing_more() {
    let mut mapper = AcpMapper::new(Some("7".into()));
    let request = json!({"jsonrpc": "2.0", "id": 3, "method": "session/request_permission", "params": {
        "sessionId": "s1",
        "toolCall": {"toolCallId": "t1", "title": "touch x", "kind": "execute", "rawInput": {"command": "touch x"}},
        "options": [{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                    {"optionId": "reject", "name": "Reject", "kind": "reject_once"}]}});
    let mut out = Vec::new();
    mapper.map_line(&request.to_string(), &mut out);
    out.clear();
    let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {"outcome": {"outcome": "selected", "optionId": "reject"}}});
    mapper.map_client_line(&answer.to_string(), &mut out);
    assert!(
        matches!(&out[..], [AgentMessage::ToolFailed { id, error }] if id == "t1" && error.starts_with("refused"))
    );
    // The Claude adapter then fails the call itself: the repeated end is dropped.
    out.clear();
    mapper.map_line(
        &update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed"}),
        ),
        &mut out,
    );
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn a_call_announced_with_nothing_to_show_waits_for_its_input() {
    // The Claude adapter: `tool_call` "Terminal" with an empty rawInput, then the command.
    let mut mapper = AcpMapper::new(Some("7".into()));
    let mut out = Vec::new();
    mapper.map_line(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Terminal", "kind": "execute", "status": "pending", "rawInput": {}})), &mut out);
    assert!(out.is_empty(), "{out:?}");
    mapper.map_line(&update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "echo hi", "rawInput": {"command": "echo hi"}})), &mut out);
    assert!(
        matches!(&out[..], [AgentMessage::ToolCall { name, input, .. }] if name == "echo hi" && input["command"] == "echo hi")
    );
    out.clear();
    mapper.map_line(
        &update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "hi"}}]}),
        ),
        &mut out,
    );
    assert_eq!(
        out,
        [AgentMessage::ToolCompleted {
            id: "c1".into(),
            output: "hi".into()
        }]
    );
}

#[test]
fn unknown_updates_stray_responses_and_bad_lines_never_end_the_turn() {
    let mut mapper = AcpMapper::new(Some("7".into()));
    let mut out = Vec::new();
    assert_eq!(
        mapper.map_line(
            &update(json!({"sessionUpdate": "something_new", "x": 1})),
            &mut out
        ),
        LineVerdict::Ignored
    );
    assert_eq!(
        mapper.map_line(r#"{"jsonrpc":"2.0","id":999,"result":{}}"#, &mut out),
        LineVerdict::Ignored
    );
    assert_eq!(
        mapper.map_line(
            r#"{"jsonrpc":"2.0","id":999,"result":{"stopReason":"end_turn"}}"#,
            &mut out
        ),
        LineVerdict::Ignored
    );
    assert_eq!(
        mapper.map_line("not json at all", &mut out),
        LineVerdict::Invalid
    );
    assert_eq!(
        mapper.map_line(r#"{"hello":"world"}"#, &mut out),
        LineVerdict::Invalid
    );
    assert!(!mapper.outcome_reported());
    assert!(out.is_empty());
    mapper.map_line(
        r#"{"jsonrpc":"2.0","id":7,"result":{"stopReason":"end_turn"}}"#,
        &mut out,
    );
    assert!(mapper.outcome_reported());
}

#[test]
fn an_error_answer_to_the_prompt_is_the_agents_failure_with_its_http_status() {
    let mut mapper = AcpMapper::new(Some("7".into()));
    let mut out = Vec::new();
    let line = json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32603,
        "message": "Internal error: API Error: 500 {\"error\":{\"message\":\"fake overload\"}}"}});
    mapper.map_line(&line.to_string(), &mut out);
    let AgentOutcome::Failed {
        reason,
        message,
        http_status,
    } = finish(&mut mapper, &mut out)
    else {
        panic!("not failed");
    };
    assert_eq!(reason, FailureReason::AgentError);
    assert!(message.contains("fake overload"), "{message}");
    assert_eq!(http_status, Some(500));
}

#[test]
fn a_plan_replaces_the_plan() {
    let mut mapper = AcpMapper::new(None);
    let mut out = Vec::new();
    mapper.map_line(
        &update(json!({"sessionUpdate": "plan", "entries": [
        {"content": "read the code", "priority": "high", "status": "completed"},
        {"content": "fix it", "priority": "medium", "status": "in_progress"}]})),
        &mut out,
    );
    let [AgentMessage::Plan { entries }] = &out[..] else {
        panic!("{out:?}");
    };
    assert_eq!(entries.len(), 2);
    assert_eq!(
        (
            entries[1].content.as_str(),
            entries[1].status.as_str(),
            entries[1].priority.as_str()
        ),
        ("fix it", "in_progress", "medium")
    );
}

#[test]
fn a_turn_cut_off_fails_its_open_calls_and_shows_its_thoughts() {
    let mut mapper = AcpMapper::new(Some("7".into()));
    let mut out = Vec::new();
    mapper.map_line(&update(json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}})), &mut out);
    mapper.map_line(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "sleep 100", "kind": "execute", "status": "in_progress", "rawInput": {"command": "sleep 100"}})), &mut out);
    out.clear();
    let outcome = mapper.finish(
        ExitFacts {
            stopped_by_us: true,
            ..ExitFacts::default()
        },
        &mut out,
    );
    assert_eq!(outcome, AgentOutcome::Unfinished);
    assert!(matches!(&out[0], AgentMessage::ToolFailed { id, .. } if id == "c1"));
    assert_eq!(out[1], AgentMessage::Thought { text: "hmm".into() });
}

#[test]
fn a_turn_the_agent_cancels_after_a_refusal_is_finished_not_broken() {
    // The Codex adapter ends the whole turn `cancelled` when a permission is rejected.
    let mut mapper = AcpMapper::new(Some("7".into()));
    let request = json!({"jsonrpc": "2.0", "id": 0, "method": "session/request_permission", "params": {
        "sessionId": "s1",
        "toolCall": {"toolCallId": "t1", "title": "touch x", "kind": "execute"},
        "options": [{"optionId": "approved", "name": "Yes, proceed", "kind": "allow_once"},
                    {"optionId": "abort", "name": "No", "kind": "reject_once"}]}});
    let mut out = Vec::new();
    mapper.map_line(&request.to_string(), &mut out);
    mapper.map_client_line(
        &json!({"jsonrpc": "2.0", "id": 0, "result": {"outcome": {"outcome": "selected", "optionId": "abort"}}}).to_string(),
        &mut out,
    );
    mapper.map_line(
        r#"{"jsonrpc":"2.0","id":7,"result":{"stopReason":"cancelled"}}"#,
        &mut out,
    );
    assert!(matches!(
        finish(&mut mapper, &mut out),
        AgentOutcome::Completed { stop_reason, .. } if stop_reason == "cancelled"
    ));
}

#[test]
fn a_tool_output_given_only_as_raw_output_is_its_printed_text() {
    // The Codex adapter: no content, the exec result in rawOutput.
    let mut mapper = AcpMapper::new(Some("7".into()));
    let mut out = Vec::new();
    mapper.map_line(&update(json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "ls", "kind": "execute", "status": "in_progress",
        "rawInput": {"call_id": "call_1", "command": ["/bin/bash", "-lc", "ls"]}})), &mut out);
    out.clear();
    mapper.map_line(&update(json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
        "rawOutput": {"call_id": "call_1", "exit_code": 0, "formatted_output": "a.txt\n", "process_id": "9"}})), &mut out);
    assert_eq!(
        out,
        [AgentMessage::ToolCompleted {
            id: "c1".into(),
            output: "a.txt\n".into()
        }]
    );
    assert_eq!(output_of(json!({"exit_code": 2})), "(exit code 2)");
    assert_eq!(output_of(json!("plain")), "plain");
}

/// The answer of `gemini --acp` 0.61 to a prompt whose model request got HTTP 500 (recorded
/// with a bare ACP client against the fake server): the status as the JSON-RPC code, the
/// API's body as the message.
#[test]
fn geminis_http_error_answer_names_its_status_and_the_apis_words() {
    let mut mapper = AcpMapper::new(Some("4".into()));
    let mut out = Vec::new();
    let line = r#"{"jsonrpc":"2.0","id":4,"error":{"code":500,"message":"{\"error\":{\"code\":500,\"message\":\"fake internal error\",\"status\":\"INTERNAL\"}}"}}"#;
    mapper.map_line(line, &mut out);
    let AgentOutcome::Failed {
        message,
        http_status,
        ..
    } = finish(&mut mapper, &mut out)
    else {
        panic!("not failed");
    };
    assert_eq!(message, "fake internal error");
    assert_eq!(http_status, Some(500));
    // The protocol's own (negative) codes are no HTTP status.
    let mut mapper = AcpMapper::new(Some("5".into()));
    let line = r#"{"jsonrpc":"2.0","id":5,"error":{"code":-32603,"message":"Internal error","data":{"details":"boom"}}}"#;
    mapper.map_line(line, &mut out);
    let AgentOutcome::Failed { http_status, .. } = finish(&mut mapper, &mut out) else {
        panic!("not failed");
    };
    assert_eq!(http_status, None);
}

/// Gemini CLI ends a turn whose model stream broke off as `end_turn` with its token count
/// zero (`InvalidStreamError`, src `prompt()`): after text, that is an incomplete answer.
#[test]
fn an_end_turn_that_counted_no_tokens_after_text_is_a_dropped_stream() {
    let zero = json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn",
        "_meta": {"quota": {"token_count": {"input_tokens": 0, "output_tokens": 0},
        "model_usage": []}}}})
    .to_string();
    let mut mapper = AcpMapper::new(Some("3".into()));
    let mut out = Vec::new();
    mapper.map_line(
        &update(json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "Half an ans"}})),
        &mut out,
    );
    mapper.map_line(&zero, &mut out);
    let AgentOutcome::Failed {
        reason, message, ..
    } = finish(&mut mapper, &mut out)
    else {
        panic!("a cut stream is not a finished answer");
    };
    assert_eq!(reason, FailureReason::NoCompletion);
    assert!(
        crate::provider::errors::is_dropped_connection(&message),
        "{message}"
    );
    // With no text (a slash command Gemini handles itself), zero is just zero.
    let mut mapper = AcpMapper::new(Some("3".into()));
    mapper.map_line(&zero, &mut out);
    assert!(matches!(
        finish(&mut mapper, &mut out),
        AgentOutcome::Completed { .. }
    ));
}

/// Gemini CLI's `[MODE_UPDATE] autoEdit` chunk (sent when an "allow always" answer switches it
/// to auto-edit) and its cancelled shell command (`completed`, with `Command cancelled by
/// user.` as the output).
#[test]
fn geminis_mode_marker_is_no_answer_and_its_cancelled_command_did_not_finish() {
    let mut mapper = AcpMapper::new(None);
    let mut out = Vec::new();
    mapper.map_line(
        &update(json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "[MODE_UPDATE] autoEdit"}})),
        &mut out,
    );
    assert_eq!(text_of(&out), "");
    assert!(matches!(&out[..], [AgentMessage::Notice { kind, message }]
        if *kind == crate::stream::NoticeKind::ModeChanged && message.contains("autoEdit")));
    out.clear();
    mapper.map_line(
        &update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "status": "in_progress",
            "title": "sleep 100", "kind": "execute", "rawInput": {"command": "sleep 100"}}),
        ),
        &mut out,
    );
    mapper.map_line(
        &update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1",
            "status": "completed", "content": [{"type": "content",
            "content": {"type": "text", "text": "Command cancelled by user."}}]}),
        ),
        &mut out,
    );
    assert!(
        out.iter().any(
            |message| matches!(message, AgentMessage::ToolFailed { id, error }
            if id == "c1" && error.starts_with("stopped before"))
        ),
        "{out:#?}"
    );
}

#[test]
fn a_fenced_tool_output_with_system_reminders_reads_as_plain_output() {
    assert_eq!(
        plain_tool_output(
            "```console\nhello\nworld\n```\n<system-reminder>\nfor the model\n</system-reminder>"
        ),
        "hello\nworld"
    );
    assert_eq!(plain_tool_output("```\n```"), "");
    // Output that merely holds a fence, or none, stays as it is.
    assert_eq!(plain_tool_output("a\n```\nb\n```"), "a\n```\nb\n```");
    assert_eq!(plain_tool_output("  spaced\n"), "  spaced\n");
}

/// codex-acp's `usage_update` (context fill and the session's running cost) is not the turn's
/// own figure, and is not reported as one.
#[test]
fn a_context_usage_update_is_not_the_turns_usage() {
    let mut mapper = AcpMapper::new(Some("2".into()));
    let mut out = Vec::new();
    mapper.map_line(
        &update(json!({"sessionUpdate": "usage_update", "used": 1024, "size": 272000})),
        &mut out,
    );
    mapper.map_line(
        &json!({"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}).to_string(),
        &mut out,
    );
    assert_eq!(
        finish(&mut mapper, &mut out),
        AgentOutcome::Completed {
            stop_reason: "end_turn".into(),
            usage: None
        }
    );
}

#[test]
fn a_dropped_connection_is_said_plainly_once() {
    let mut mapping =
        crate::provider::runner::AttemptMapping::new(Box::new(AcpMapper::new(Some("2".into()))));
    let mut out = Vec::new();
    let line = json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32603,
        "message": "Internal error: API Error: terminated"}});
    mapping.map_line(
        &crate::process::Line {
            text: line.to_string(),
            truncated: false,
            original_len: 0,
        },
        &mut out,
    );
    let terminal = mapping.finish(
        &crate::process::ExitReport::default(),
        crate::provider::runner::EndedBy::Exit,
        String::new(),
        &mut out,
    );
    let AgentMessage::Failed(failure) = terminal else {
        panic!("not failed: {terminal:?}");
    };
    assert_eq!(
        failure.message,
        "the connection to the model dropped mid-reply (Internal error: API Error: terminated)"
    );
}

/// opencode announces a shell call as `bash` with only where it runs, then gives its title
/// and command in an update; a write names its file only in the update's input and locations.
#[test]
fn an_update_with_the_real_title_and_input_restates_the_call() {
    let mut mapper = AcpMapper::new(None);
    let lines = [
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "bash",
                      "kind": "execute", "status": "pending", "rawInput": {"cwd": "/w"}}),
        ),
        update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1",
                      "status": "in_progress", "title": "ls -la", "kind": "execute",
                      "rawInput": {"command": "ls -la", "cwd": "/w"}}),
        ),
        update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1",
                      "status": "in_progress", "rawInput": {"command": "ls -la", "cwd": "/w"}}),
        ),
        update(
            json!({"sessionUpdate": "tool_call", "toolCallId": "c2", "title": "write",
                      "kind": "edit", "status": "pending", "rawInput": {"content": "x"}}),
        ),
        update(
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c2",
                      "locations": [{"path": "/w/notes.txt"}]}),
        ),
    ]
    .join("\n");
    let (out, _) = map_all(&mut mapper, &lines);
    let calls: Vec<(&str, &str, &Value)> = out
        .iter()
        .filter_map(|message| match message {
            AgentMessage::ToolCall {
                id, name, input, ..
            } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("c1", "bash", &json!({"cwd": "/w"})),
            ("c1", "ls -la", &json!({"command": "ls -la", "cwd": "/w"})),
            ("c2", "write", &json!({"content": "x"})),
            (
                "c2",
                "write",
                &json!({"content": "x", "path": "/w/notes.txt"})
            ),
        ],
        "restated once per change, never for an update that changes nothing"
    );
}

#[test]
fn refusal_and_the_limits_are_failures_that_say_why() {
    for (reason, words) in [
        ("refusal", "refused"),
        ("max_tokens", "output token limit"),
        ("max_turn_requests", "model requests for one turn"),
    ] {
        let mut mapper = AcpMapper::new(None);
        let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {"stopReason": reason}});
        let (mut out, _) = map_all(&mut mapper, &answer.to_string());
        let AgentOutcome::Failed { message, .. } = finish(&mut mapper, &mut out) else {
            panic!("{reason}: not a failure");
        };
        assert!(message.contains(words), "{reason}: {message}");
    }
}
