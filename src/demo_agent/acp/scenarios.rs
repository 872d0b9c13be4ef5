//! The ACP mode's scenarios: small, deterministic scripts, one per protocol case the client
//! must handle. The scenario is `--scenario NAME`, else the first name below that appears as a
//! whole word in the prompt (a hyphen joins words: `permission-unannounced` is not
//! `permission`), else `hello`. Text streams one word per `agent_message_chunk`, 40 ms apart
//! (script time, scaled by `AGENTTY_DEMO_TIME_SCALE`).
//!
//! A failed prompt is stored as the flavour's store does it: the default flavour keeps it in the
//! session, the Gemini flavour forgets it (and writes the failure to stderr, as Gemini does:
//! `Error when talking to Gemini API … _ApiError: <message>`).
//!
//! | scenario | what the agent does |
//! |---|---|
//! | `hello` | text deltas, `end_turn` |
//! | `thinking` | `agent_thought_chunk` deltas, then text |
//! | `plan` | a `plan` (3 entries: content/priority/status), text, a pause of 1.5 s, the plan all completed, a `usage_update` (53,000 of 200,000 tokens), text |
//! | `permission` | text; `tool_call` execute/pending `touch agentty-demo.txt` (`rawInput.command`); `session/request_permission` with `allow_once` "Allow", `allow_always` "Always allow", `reject_once` "Reject", `reject_always` "Never". Allowed: runs it in the session cwd, `tool_call_update` in_progress (`_meta.agenttyDemo.pid`), then completed with the output as content, text "Done.". Rejected: `tool_call_update` failed, text saying it did not run. Cancelled: `stopReason: cancelled` |
//! | `permission-delayed` | text, then a pause of 2 s (script time: the user goes on typing), then the `permission` scenario's command asked with Claude's options (`allow_always` first). Allowed: runs it, text "Done.". Rejected: `tool_call_update` failed and the turn ends at once, with no text (as the Claude and Codex adapters end it) |
//! | `permission-unannounced` | gemini-like: no `tool_call`, the call exists only in the request's `toolCall`; options `proceed_always`, `proceed_once`, `cancel`. Allowed: runs it, one `tool_call_update` completed (content `[]`). Rejected: no update, text |
//! | `edit` | `tool_call` kind edit with `locations [{path}]` and content `[{type:"diff", path, oldText, newText}]` for `<cwd>/agentty-demo.md` (`oldText` null when it does not exist); Claude's options (`allow_always`, `allow`, `reject`). Allowed: appends a line to the file, `tool_call_update` completed |
//! | `rewrite` | like `edit`, for `<cwd>/agentty-demo-lines.txt`, with a diff too long for a small screen: 40 numbered lines when the file does not exist, else its 5th and 30th lines changed and a line added at its end |
//! | `sleep` | `tool_call` execute in_progress `sleep 100`, run as a real process group (pid in the `in_progress` update's `_meta.agenttyDemo.pid`); `session/cancel` kills the group, `tool_call_update` failed, `cancelled` |
//! | `slow` | `tok0 ` … `tok99 `, one every 200 ms (20 s); honours cancel |
//! | `ignore-cancel` | like `slow` but `session/cancel` is ignored; after a cancel it never answers the prompt (the client must fall back to signals, which work as usual) |
//! | `malformed` | mid-turn a line that is not JSON, then `{"hello":...}` (JSON, not JSON-RPC), then `end_turn` |
//! | `unknown-update` | a `session/update` with `sessionUpdate: "something_new"` between text chunks |
//! | `stray-response` | mid-turn `{"jsonrpc":"2.0","id":999,"result":{}}`, an id the client never used |
//! | `exit-mid-turn` | some text, then exit status 3 (stderr says why), the prompt unanswered |
//! | `error` | the prompt is answered with error `-32603` `Internal error: API Error: 500 {"error":{"message":"fake overload"}}` |
//! | `flaky` | fails like `error` the first time a prompt text is sent, succeeds the next time (the demo's flaky marks, `state::flaky_try`) |
//! | `http-error` | the prompt is answered as Gemini answers an HTTP 500 from the API: error `code: 500`, `message` the API's JSON body `{"error":{"code":500,"message":"fake internal error","status":"INTERNAL"}}` |
//! | `rate-limit` | the same with HTTP 429 (`Resource exhausted (fake).`, `RESOURCE_EXHAUSTED`) |
//! | `auth-error` | the same with HTTP 401 (`API key not valid (fake).`, `UNAUTHENTICATED`) |
//! | `flaky-twice` | fails like `http-error` the first two times a prompt text is sent, then answers "Answered on try 3: …" |
//! | `cut-stream` | a few words of text, then the model's stream breaks off: `end_turn` with zero token counts, as Gemini reports it |
//! | `compress` | the agent's own `/compress` (announced in `available_commands_update`): "Compressing context..." then "Context compressed (1234 -> ~1056).", as Qwen Code says it |
//! | `lag-after-cancel` | like `slow`; after a `session/cancel`, the session answers one prompt late from then on (the Claude ACP adapter's bug): the next prompt ends `end_turn` at once with no text, the prompt after it streams "This answers \"<previous prompt>\"." |

use std::fs;

use serde_json::json;

use super::super::{scenario, state};
use super::turn::{Decision, Halt, RpcFailure, Turn, TurnEnd};
use super::wire;

/// The scenarios, in listing order, with a line each.
pub(crate) const SCENARIOS: &[(&str, &str)] = &[
    ("hello", "a few text deltas, end_turn"),
    ("thinking", "thought deltas, then text"),
    ("plan", "a plan update, text, the plan completed, text"),
    (
        "permission",
        "an announced command asks permission (4 options); allowed, it runs",
    ),
    (
        "permission-delayed",
        "asks after a 2 s pause, allow-always first; a rejection ends the turn",
    ),
    (
        "permission-unannounced",
        "gemini-like: a permission request with no tool_call before it",
    ),
    (
        "edit",
        "an edit with a diff asks permission; allowed, it writes the file",
    ),
    (
        "rewrite",
        "an edit with a long diff (two hunks 25 lines apart) asks permission",
    ),
    (
        "sleep",
        "runs `sleep 100` as a real process; session/cancel kills it",
    ),
    ("slow", "a text delta every 200 ms for 20 s"),
    (
        "ignore-cancel",
        "slow text that ignores session/cancel and then never answers",
    ),
    (
        "malformed",
        "a non-JSON line and a non-JSON-RPC line mid-turn",
    ),
    ("unknown-update", "a session/update of an unknown kind"),
    ("stray-response", "a JSON-RPC response to id 999 mid-turn"),
    ("exit-mid-turn", "some text, then exit 3 without answering"),
    ("error", "the prompt fails with a JSON-RPC error (API 500)"),
    (
        "flaky",
        "fails like error once per prompt text, then succeeds",
    ),
    (
        "http-error",
        "the prompt fails as Gemini reports an HTTP 500 (code 500, the API's JSON)",
    ),
    (
        "rate-limit",
        "the prompt fails with code 429, the API's JSON",
    ),
    (
        "auth-error",
        "the prompt fails with code 401, the API's JSON",
    ),
    (
        "flaky-twice",
        "fails like http-error twice per prompt text, then succeeds",
    ),
    (
        "cut-stream",
        "some text, then end_turn with zero token counts (a dropped stream)",
    ),
    (
        LAG_AFTER_CANCEL,
        "after a cancel, each answer comes one prompt late",
    ),
    (
        "switch-mode",
        "switches itself to accept-edits mode mid-turn (current_mode_update), as an agent leaving plan mode does",
    ),
    (
        "compress",
        "its own /compress command: says it compressed the context, as Qwen Code does",
    ),
];

/// The scenario that plays the Claude adapter's answer-one-turn-late bug.
pub(crate) const LAG_AFTER_CANCEL: &str = "lag-after-cancel";

/// The error text of the `error` and `flaky` scenarios, as the real agents word a model failure.
pub(crate) const API_ERROR: &str =
    "Internal error: API Error: 500 {\"error\":{\"message\":\"fake overload\"}}";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scenario {
    Hello,
    Thinking,
    Plan,
    Permission,
    PermissionDelayed,
    PermissionUnannounced,
    Edit,
    Rewrite,
    Sleep,
    Slow,
    IgnoreCancel,
    Malformed,
    UnknownUpdate,
    StrayResponse,
    ExitMidTurn,
    Error,
    Flaky,
    HttpError,
    RateLimit,
    AuthError,
    FlakyTwice,
    CutStream,
    LagAfterCancel,
    SwitchMode,
    Compress,
}

/// The scenario names, in listing order.
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    SCENARIOS.iter().map(|(name, _)| *name)
}

impl Scenario {
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "hello" => Self::Hello,
            "thinking" => Self::Thinking,
            "plan" => Self::Plan,
            "permission" => Self::Permission,
            "permission-delayed" => Self::PermissionDelayed,
            "permission-unannounced" => Self::PermissionUnannounced,
            "edit" => Self::Edit,
            "rewrite" => Self::Rewrite,
            "sleep" => Self::Sleep,
            "slow" => Self::Slow,
            "ignore-cancel" => Self::IgnoreCancel,
            "malformed" => Self::Malformed,
            "unknown-update" => Self::UnknownUpdate,
            "stray-response" => Self::StrayResponse,
            "exit-mid-turn" => Self::ExitMidTurn,
            "error" => Self::Error,
            "flaky" => Self::Flaky,
            "http-error" => Self::HttpError,
            "rate-limit" => Self::RateLimit,
            "auth-error" => Self::AuthError,
            "flaky-twice" => Self::FlakyTwice,
            "cut-stream" => Self::CutStream,
            LAG_AFTER_CANCEL => Self::LagAfterCancel,
            "switch-mode" => Self::SwitchMode,
            "compress" => Self::Compress,
            _ => return None,
        })
    }

    /// The first scenario named as a word in `prompt`, else `hello`.
    pub(crate) fn for_prompt(prompt: &str) -> Self {
        scenario::first_named(prompt, names())
            .and_then(Self::from_name)
            .unwrap_or(Self::Hello)
    }
}

/// The answer a lagging session owes for `prompt`.
pub(crate) fn lag_answer(prompt: &str) -> String {
    format!("This answers \"{prompt}\".")
}

/// A prompt in a session the `lag-after-cancel` bug struck: streams the answer owed to the
/// previous prompt (nothing right after the cancel) and owes this prompt's answer.
pub(crate) fn play_lagging(
    turn: &mut Turn,
    owed: Option<String>,
    prompt: &str,
) -> Result<TurnEnd, Halt> {
    if let Some(text) = owed {
        turn.say(&text)?;
    }
    Ok(TurnEnd::Owing(lag_answer(prompt)))
}

/// Plays `scenario` for `prompt`.
pub(crate) fn play(scenario: Scenario, turn: &mut Turn, prompt: &str) -> Result<TurnEnd, Halt> {
    match scenario {
        Scenario::Hello => turn.say("Hello from the demo ACP agent. How can I help?")?,
        Scenario::Thinking => {
            turn.think("**Thinking about the answer**\n")?;
            turn.think("I should greet the user.")?;
            turn.say("After thinking: hello!")?;
        }
        Scenario::Plan => plan(turn)?,
        Scenario::Compress => {
            turn.say("Compressing context...")?;
            turn.say("Context compressed (1234 -> ~1056).")?;
        }
        Scenario::SwitchMode => {
            turn.say("The plan is done; from here on I edit without asking.")?;
            turn.update(
                json!({"sessionUpdate": "current_mode_update", "currentModeId": "accept-edits"}),
            )?;
        }
        Scenario::Permission => permission(turn)?,
        Scenario::PermissionDelayed => permission_delayed(turn)?,
        Scenario::PermissionUnannounced => permission_unannounced(turn)?,
        Scenario::Edit => edit(turn, "agentty-demo.md", |old| {
            format!("{}Edited by the demo ACP agent.\n", old.unwrap_or_default())
        })?,
        Scenario::Rewrite => edit(turn, "agentty-demo-lines.txt", rewritten)?,
        Scenario::Sleep => sleep(turn)?,
        Scenario::Slow | Scenario::LagAfterCancel => slow(turn)?,
        Scenario::IgnoreCancel => {
            slow(turn)?;
            if turn.cancel_seen {
                return turn.hang();
            }
        }
        Scenario::Malformed => {
            turn.say("Some text,")?;
            turn.raw("this line is not JSON {")?;
            turn.raw(r#"{"hello":"this is JSON but not JSON-RPC"}"#)?;
            turn.say(" then more text.")?;
        }
        Scenario::UnknownUpdate => {
            turn.say("Before the new update,")?;
            turn.update(json!({
                "sessionUpdate": "something_new",
                "detail": {"note": "an update kind from a newer protocol"},
            }))?;
            turn.say(" and after it.")?;
        }
        Scenario::StrayResponse => {
            turn.say("Before the stray response,")?;
            turn.raw(r#"{"jsonrpc":"2.0","id":999,"result":{}}"#)?;
            turn.say(" and after it.")?;
        }
        Scenario::ExitMidTurn => {
            turn.say("I am about to")?;
            eprintln!(
                "demo agent (acp): exiting with status 3 mid-turn on purpose (scenario exit-mid-turn)"
            );
            std::process::exit(3);
        }
        Scenario::Error => return Err(Halt::Fail(internal_error())),
        Scenario::Flaky => {
            if state::flaky_try(1, prompt, 1).fails {
                return Err(Halt::Fail(internal_error()));
            }
            turn.say("Second time lucky: the overload that stopped the first try has passed.")?;
        }
        Scenario::HttpError => return Err(Halt::Fail(http_failure(500))),
        Scenario::RateLimit => return Err(Halt::Fail(http_failure(429))),
        Scenario::AuthError => return Err(Halt::Fail(http_failure(401))),
        Scenario::FlakyTwice => {
            let flaky = state::flaky_try(1, prompt, 2);
            if flaky.fails {
                return Err(Halt::Fail(http_failure(500)));
            }
            turn.say(&format!(
                "Answered on try {}: the errors that stopped the earlier tries have passed.",
                flaky.number
            ))?;
        }
        Scenario::CutStream => {
            turn.say("The answer starts, and then the")?;
            return Ok(TurnEnd::Cut);
        }
    }
    Ok(TurnEnd::Done)
}

/// The `error` and `flaky` failure: `-32603` with the real agents' wording of an API error.
fn internal_error() -> RpcFailure {
    RpcFailure {
        code: -32603,
        message: API_ERROR.to_owned(),
    }
}

/// Gemini CLI's answer to a prompt whose model request failed with HTTP `status`: the status
/// as the code, the API's JSON body as the message (the bodies of protocols/gemini's fake
/// server).
pub(crate) fn http_failure(status: i64) -> RpcFailure {
    let (message, name) = match status {
        401 => ("API key not valid (fake).", "UNAUTHENTICATED"),
        429 => ("Resource exhausted (fake).", "RESOURCE_EXHAUSTED"),
        _ => ("fake internal error", "INTERNAL"),
    };
    let body = json!({"error": {"code": status, "message": message, "status": name}});
    RpcFailure {
        code: status,
        message: body.to_string(),
    }
}

fn plan(turn: &mut Turn) -> Result<(), Halt> {
    let entries = |statuses: [&str; 3]| {
        json!([
            {"content": "Read the request", "priority": "high", "status": statuses[0]},
            {"content": "Write the answer", "priority": "medium", "status": statuses[1]},
            {"content": "Check the answer", "priority": "low", "status": statuses[2]},
        ])
    };
    turn.update(json!({
        "sessionUpdate": "plan",
        "entries": entries(["in_progress", "pending", "pending"]),
    }))?;
    turn.say("Working through the plan.")?;
    // Long enough to see the plan pinned above the input while the turn runs.
    turn.wait(1_500)?;
    turn.update(json!({
        "sessionUpdate": "plan",
        "entries": entries(["completed", "completed", "completed"]),
    }))?;
    // How full the context is, as an agent that reports it says so (ACP `usage_update`).
    turn.update(json!({"sessionUpdate": "usage_update", "used": 53_000, "size": 200_000}))?;
    turn.say(" All three steps are done.")?;
    Ok(())
}

const TOUCH: &str = "touch agentty-demo.txt";

/// How long `permission-delayed` waits before it asks (script time).
const ASK_DELAY_MS: u64 = 2_000;

fn permission(turn: &mut Turn) -> Result<(), Halt> {
    turn.say("I'll create agentty-demo.txt.")?;
    let (id, tool_call) = announce_touch(turn)?;
    match turn.ask_permission(tool_call, wire::four_options())? {
        Decision::Allowed => run_touch(turn, &id),
        Decision::Rejected => {
            turn.refuse_tool_call(&id, "command")?;
            turn.say("I did not run the command: permission was refused.")
        }
    }
}

fn permission_delayed(turn: &mut Turn) -> Result<(), Halt> {
    turn.say("Let me look around before I create agentty-demo.txt.")?;
    turn.wait(ASK_DELAY_MS)?;
    let (id, tool_call) = announce_touch(turn)?;
    match turn.ask_permission(tool_call, wire::claude_options())? {
        Decision::Allowed => run_touch(turn, &id),
        // The turn ends here, with nothing more said.
        Decision::Rejected => Ok(turn.refuse_tool_call(&id, "command")?),
    }
}

/// Announces the `touch` call (`tool_call` pending); its id and the call for the request.
fn announce_touch(turn: &mut Turn) -> Result<(String, serde_json::Value), Halt> {
    let id = turn.tool_call_id();
    let tool_call = json!({
        "toolCallId": id,
        "title": TOUCH,
        "kind": "execute",
        "status": "pending",
        "rawInput": {"command": TOUCH},
        "content": [],
        "locations": [],
    });
    let mut announced = tool_call.clone();
    announced["sessionUpdate"] = json!("tool_call");
    turn.update(announced)?;
    Ok((id, tool_call))
}

/// Runs the allowed `touch` call and reports it.
fn run_touch(turn: &mut Turn, id: &str) -> Result<(), Halt> {
    let outcome = turn.run_command(id, TOUCH, true)?;
    turn.update(json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": outcome.tool_status(),
        "content": [wire::text_content(&outcome.result_text())],
        "rawOutput": {"output": outcome.output, "exitCode": outcome.exit_code},
    }))?;
    turn.say("Done.")
}

fn permission_unannounced(turn: &mut Turn) -> Result<(), Halt> {
    turn.say("I'll create agentty-demo.txt.")?;
    let id = turn.tool_call_id();
    let note = format!(
        "[current working directory {}] (create the demo file)",
        turn.cwd.display()
    );
    let tool_call = json!({
        "toolCallId": id,
        "status": "pending",
        "title": TOUCH,
        "content": [wire::text_content(&note)],
        "locations": [],
        "kind": "execute",
    });
    match turn.ask_permission(tool_call, wire::gemini_options())? {
        Decision::Allowed => {
            let outcome = turn.run_command(&id, TOUCH, false)?;
            turn.update(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": id,
                "status": outcome.tool_status(),
                "title": TOUCH,
                "content": [],
                "locations": [],
                "kind": "execute",
            }))?;
            turn.say("Done.")
        }
        Decision::Rejected => turn.say("I did not run the command: it was canceled by the user."),
    }
}

/// `rewrite`'s change: 40 numbered lines for a new file, else the 5th and 30th lines marked
/// edited and a line added at the end (a diff whose hunks are far apart).
fn rewritten(old: Option<&str>) -> String {
    let Some(old) = old else {
        return (1..=40).map(|number| format!("line {number}\n")).collect();
    };
    let mut text: String = old
        .lines()
        .enumerate()
        .map(|(index, line)| match index + 1 {
            5 | 30 => format!("{line} (edited)\n"),
            _ => format!("{line}\n"),
        })
        .collect();
    text.push_str("Rewritten by the demo ACP agent.\n");
    text
}

/// Asks to change `name` in the session's cwd to `change(<its text, if it exists>)`, with the
/// diff in the tool call and the permission request, as Claude's adapter asks for an edit.
fn edit(turn: &mut Turn, name: &str, change: fn(Option<&str>) -> String) -> Result<(), Halt> {
    turn.say(&format!("I'll edit {name}."))?;
    let id = turn.tool_call_id();
    let path = turn.cwd.join(name);
    let path_text = path.display().to_string();
    let old_text = fs::read_to_string(&path).ok();
    let new_text = change(old_text.as_deref());
    let diff = json!({"type": "diff", "path": path_text, "oldText": old_text, "newText": new_text});
    let tool_call = json!({
        "toolCallId": id,
        "title": format!("Edit {name}"),
        "kind": "edit",
        "status": "pending",
        "rawInput": {"file_path": path_text, "new_string": new_text},
        "content": [diff],
        "locations": [{"path": path_text}],
    });
    let mut announced = tool_call.clone();
    announced["sessionUpdate"] = json!("tool_call");
    turn.update(announced)?;
    match turn.ask_permission(tool_call, wire::claude_options())? {
        Decision::Allowed => {
            let (status, said) = match fs::write(&path, &new_text) {
                Ok(()) => ("completed", format!("Edited {name}.")),
                Err(error) => ("failed", format!("Could not write {name}: {error}")),
            };
            turn.update(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": id,
                "status": status,
                "content": [diff],
                "locations": [{"path": path_text}],
            }))?;
            turn.say(&said)
        }
        Decision::Rejected => {
            turn.refuse_tool_call(&id, "edit")?;
            turn.say("I did not edit the file: permission was refused.")
        }
    }
}

fn sleep(turn: &mut Turn) -> Result<(), Halt> {
    const SLEEP: &str = "sleep 100";
    turn.say("Sleeping for a while.")?;
    let id = turn.tool_call_id();
    turn.update(json!({
        "sessionUpdate": "tool_call",
        "toolCallId": id,
        "title": SLEEP,
        "kind": "execute",
        "status": "in_progress",
        "rawInput": {"command": SLEEP},
        "content": [],
        "locations": [],
    }))?;
    let outcome = turn.run_command(&id, SLEEP, true)?;
    turn.update(json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": id,
        "status": outcome.tool_status(),
        "content": [wire::text_content(&outcome.result_text())],
    }))?;
    turn.say("Done sleeping.")
}

fn slow(turn: &mut Turn) -> Result<(), Halt> {
    for index in 0..100 {
        turn.say_after(200, &format!("tok{index} "))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_is_a_scenario() {
        for name in names() {
            assert!(Scenario::from_name(name).is_some(), "{name}");
        }
        assert_eq!(names().count(), 25);
    }

    #[test]
    fn the_prompt_picks_the_scenario_by_whole_word() {
        assert_eq!(
            Scenario::for_prompt("please ask permission"),
            Scenario::Permission
        );
        assert_eq!(
            Scenario::for_prompt("permission-delayed please"),
            Scenario::PermissionDelayed
        );
        assert_eq!(
            Scenario::for_prompt("permission-unannounced please"),
            Scenario::PermissionUnannounced
        );
        assert_eq!(
            Scenario::for_prompt("what is a sleepy cat"),
            Scenario::Hello
        );
        assert_eq!(Scenario::for_prompt("be slow, then sleep"), Scenario::Slow);
    }
}
