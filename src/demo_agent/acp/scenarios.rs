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
//! | `refined-tool` | opencode-like: `tool_call` titled `bash` with only `rawInput {cwd}`, then `tool_call_update` in_progress with the real title `echo refined`, kind execute, `rawInput {command, cwd}`, then completed (output `refined`); then a `tool_call` titled `write` with empty input, refined by an update with `locations [{path}]` and `rawInput {filePath, content}` of `<cwd>/agentty-demo-write.txt` (written), completed; text "Done." |
//! | `refusal` | some text, then the prompt answered with `stopReason: refusal` |
//! | `max-tokens` | some text, then `stopReason: max_tokens` |
//! | `max-turn-requests` | some text, then `stopReason: max_turn_requests` |
//! | `lag-after-cancel` | like `slow`; after a `session/cancel`, the session answers one prompt late from then on (the Claude ACP adapter's bug): the next prompt ends `end_turn` at once with no text, the prompt after it streams "This answers \"<previous prompt>\"." |

use serde_json::json;

use super::super::{scenario, state};
use super::tool_scenarios::{
    edit, permission, permission_delayed, permission_unannounced, refined_tool, rewritten, sleep,
};
use super::turn::{Halt, RpcFailure, Turn, TurnEnd};

/// The scenarios, in listing order: name, a line saying what it does, the scenario.
pub(crate) const SCENARIOS: &[(&str, &str, Scenario)] = &[
    ("hello", "a few text deltas, end_turn", Scenario::Hello),
    ("thinking", "thought deltas, then text", Scenario::Thinking),
    ("plan", "a plan update, text, the plan completed, text", Scenario::Plan),
    ("permission", "an announced command asks permission (4 options); allowed, it runs", Scenario::Permission),
    ("permission-delayed", "asks after a 2 s pause, allow-always first; a rejection ends the turn", Scenario::PermissionDelayed),
    ("permission-unannounced", "gemini-like: a permission request with no tool_call before it", Scenario::PermissionUnannounced),
    ("edit", "an edit with a diff asks permission; allowed, it writes the file", Scenario::Edit),
    ("rewrite", "an edit with a long diff (two hunks 25 lines apart) asks permission", Scenario::Rewrite),
    ("sleep", "runs `sleep 100` as a real process; session/cancel kills it", Scenario::Sleep),
    ("slow", "a text delta every 200 ms for 20 s", Scenario::Slow),
    ("ignore-cancel", "slow text that ignores session/cancel and then never answers", Scenario::IgnoreCancel),
    ("malformed", "a non-JSON line and a non-JSON-RPC line mid-turn", Scenario::Malformed),
    ("unknown-update", "a session/update of an unknown kind", Scenario::UnknownUpdate),
    ("stray-response", "a JSON-RPC response to id 999 mid-turn", Scenario::StrayResponse),
    ("exit-mid-turn", "some text, then exit 3 without answering", Scenario::ExitMidTurn),
    ("error", "the prompt fails with a JSON-RPC error (API 500)", Scenario::Error),
    ("flaky", "fails like error once per prompt text, then succeeds", Scenario::Flaky),
    ("http-error", "the prompt fails as Gemini reports an HTTP 500 (code 500, the API's JSON)", Scenario::HttpError),
    ("rate-limit", "the prompt fails with code 429, the API's JSON", Scenario::RateLimit),
    ("auth-error", "the prompt fails with code 401, the API's JSON", Scenario::AuthError),
    ("flaky-twice", "fails like http-error twice per prompt text, then succeeds", Scenario::FlakyTwice),
    ("cut-stream", "some text, then end_turn with zero token counts (a dropped stream)", Scenario::CutStream),
    (LAG_AFTER_CANCEL, "after a cancel, each answer comes one prompt late", Scenario::LagAfterCancel),
    ("refined-tool", "tool calls announced bare, then given their title and input by tool_call_update", Scenario::RefinedTool),
    ("refusal", "some text, then stopReason refusal", Scenario::Refusal),
    ("max-tokens", "some text, then stopReason max_tokens", Scenario::MaxTokens),
    ("max-turn-requests", "some text, then stopReason max_turn_requests", Scenario::MaxTurnRequests),
    ("switch-mode", "switches itself to accept-edits mode mid-turn (current_mode_update), as an agent leaving plan mode does", Scenario::SwitchMode),
    ("compress", "its own /compress command: says it compressed the context, as Qwen Code does", Scenario::Compress),
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
    RefinedTool,
    Refusal,
    MaxTokens,
    MaxTurnRequests,
}

/// The scenario names, in listing order.
pub(crate) fn names() -> impl Iterator<Item = &'static str> {
    SCENARIOS.iter().map(|(name, _, _)| *name)
}

impl Scenario {
    pub(crate) fn from_name(name: &str) -> Option<Self> {
        SCENARIOS
            .iter()
            .find(|(known, _, _)| *known == name)
            .map(|(_, _, scenario)| *scenario)
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
        Scenario::RefinedTool => refined_tool(turn)?,
        Scenario::Refusal => {
            turn.say("I can't help with")?;
            return Ok(TurnEnd::StopReason("refusal"));
        }
        Scenario::MaxTokens => {
            turn.say("Here is the first part of a long answer, and then")?;
            return Ok(TurnEnd::StopReason("max_tokens"));
        }
        Scenario::MaxTurnRequests => {
            turn.say("I looked at many files and")?;
            return Ok(TurnEnd::StopReason("max_turn_requests"));
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
    fn every_scenario_is_listed_once_under_one_name() {
        for (index, (name, _, scenario)) in SCENARIOS.iter().enumerate() {
            assert_eq!(Scenario::from_name(name), Some(*scenario), "{name}");
            let earlier = &SCENARIOS[..index];
            assert!(
                earlier
                    .iter()
                    .all(|(other, _, same)| other != name && same != scenario),
                "{name} is listed twice"
            );
        }
        assert_eq!(names().count(), 29);
    }

    #[test]
    fn the_prompt_picks_the_scenario_by_whole_word() {
        let cases = [
            ("please ask permission", Scenario::Permission),
            ("permission-delayed please", Scenario::PermissionDelayed),
            (
                "permission-unannounced please",
                Scenario::PermissionUnannounced,
            ),
            ("what is a sleepy cat", Scenario::Hello),
            ("be slow, then sleep", Scenario::Slow),
        ];
        for (prompt, scenario) in cases {
            assert_eq!(Scenario::for_prompt(prompt), scenario, "{prompt}");
        }
    }
}
