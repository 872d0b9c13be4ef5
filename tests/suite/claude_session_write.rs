//! Claude Code writes a turn to its session file (`<config>/projects/<dir>/<id>.jsonl`) a
//! little after the turn ends (after the `result` line; under the ACP adapter, after the
//! `session/prompt` response). A checkpoint taken sooner would lose that turn's end on a
//! rewind, so the stream and ACP providers wait for the write (`UnwrittenTurn`), and give up
//! after a limit when none comes. Here a fake Claude Code (a shell script speaking just enough
//! stream-json, or ACP as the adapter) writes its session file after the turn's end as the test
//! asks, behind the real Claude backend, provider and orchestrator; what a rewind and its undo
//! put back shows what each checkpoint read.

use agentty::config::{PermissionPolicy, ProviderSettings};
use agentty::orchestrator::{spawn_orchestrator, OrchestratorOptions};
use agentty::provider::{build_backend, provider_on, Transport};

use crate::support::real_cli::{
    assert_turn, rewind_conversation, run_turn, undo_conversation_rewind,
};
use crate::support::script_agent::write_script;

/// How long after the turn's end the fake writes what it writes late: well after the next
/// turn's checkpoint would be taken without a wait, well before the wait's limit.
const LATE_WRITE_DELAY: &str = "0.5";

/// How the fakes write a turn to the session file `$1` (prompt `$2`), as `FAKE_SESSION_WRITE`
/// says: `split` the prompt before the turn's end and the answer after it (as Claude Code
/// does), `late` both after it (a new session's file then appears only after the turn),
/// `early` the prompt before it and nothing after.
const SESSION_WRITES: &str = r#"
before_the_end() {
  [ "$FAKE_SESSION_WRITE" = late ] || printf '{"user":"%s"}\n' "$2" >> "$1"
}
after_the_end() {
  case "$FAKE_SESSION_WRITE" in
  split) (sleep "$FAKE_DELAY"; printf '{"answer":"%s"}\n' "$2" >> "$1") </dev/null >/dev/null 2>&1 & ;;
  late) (sleep "$FAKE_DELAY"; printf '{"user":"%s"}\n{"answer":"%s"}\n' "$2" "$2" >> "$1") </dev/null >/dev/null 2>&1 & ;;
  esac
}
sessions="$CLAUDE_CONFIG_DIR/projects/work"
mkdir -p "$sessions"
"#;

/// Claude Code in stream-json mode: `initialize` answered, each user message a turn.
const STREAM_JSON: &str = r#"
id=
while [ $# -gt 0 ]; do
  case "$1" in --session-id|--resume) id=$2; shift ;; esac
  shift
done
while IFS= read -r line; do
  case "$line" in
  *'"subtype":"initialize"'*)
    request=${line#*'"request_id":"'}
    printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "${request%%\"*}"
    ;;
  *'"type":"user"'*)
    prompt=${line#*'"content":"'}
    prompt=${prompt%%\"*}
    before_the_end "$sessions/$id.jsonl" "$prompt"
    printf '{"type":"system","subtype":"init","session_id":"%s"}\n' "$id"
    printf '{"type":"assistant","session_id":"%s","message":{"id":"m-%s","role":"assistant","content":[{"type":"text","text":"said %s"}],"stop_reason":"end_turn"}}\n' "$id" "$prompt" "$prompt"
    printf '{"type":"result","subtype":"success","is_error":false,"result":"said %s","stop_reason":"end_turn","session_id":"%s"}\n' "$prompt" "$id"
    after_the_end "$sessions/$id.jsonl" "$prompt"
    ;;
  esac
done
"#;

/// The Claude Code ACP adapter: `initialize` (sessions loadable), `session/new`, each
/// `session/prompt` a turn; any other request is refused.
const ACP: &str = r#"
count=0
while IFS= read -r line; do
  id=${line#*'"id":'}
  id=${id%%[,\}]*}
  case "$line" in
  *'"method":"initialize"'*)
    printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":1,"agentCapabilities":{"loadSession":true}}}\n' "$id"
    ;;
  *'"method":"session/new"'*)
    count=$((count + 1))
    printf '{"jsonrpc":"2.0","id":%s,"result":{"sessionId":"fake-%s-%s"}}\n' "$id" "$$" "$count"
    ;;
  *'"method":"session/prompt"'*)
    session=${line#*'"sessionId":"'}
    session=${session%%\"*}
    prompt=${line#*'"text":"'}
    prompt=${prompt%%\"*}
    before_the_end "$sessions/$session.jsonl" "$prompt"
    printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"said %s"}}}}\n' "$session" "$prompt"
    printf '{"jsonrpc":"2.0","id":%s,"result":{"stopReason":"end_turn"}}\n' "$id"
    after_the_end "$sessions/$session.jsonl" "$prompt"
    ;;
  *'"method":'*)
    [ "$id" = "$line" ] || printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"not offered"}}\n' "$id"
    ;;
  esac
done
"#;

/// The session file after a rewind to before the second of two turns, and after that rewind
/// was undone.
struct Rewound {
    to_before_second: String,
    undone: String,
}

impl Rewound {
    /// Each checkpoint held the answers written after the `result`: the rewind put back turn
    /// one whole, its undo both turns.
    fn assert_both_answers_kept(&self) {
        let one = "{\"user\":\"one\"}\n{\"answer\":\"one\"}\n";
        let two = "{\"user\":\"two\"}\n{\"answer\":\"two\"}\n";
        assert_eq!(self.to_before_second, one);
        assert_eq!(self.undone, format!("{one}{two}"));
    }
}

/// Two turns ("one", "two") on the fake Claude Code over `transport` (stream or ACP), each
/// prompt sent as soon as the turn before ended; then a rewind of the conversation to before
/// "two" and its undo.
async fn two_turns_then_rewind(transport: Transport, session_write: &str) -> Rewound {
    let bin = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let protocol = match transport {
        Transport::Stream => STREAM_JSON,
        Transport::Acp => ACP,
        other => panic!("Claude Code writes its session late over stream and ACP, not {other:?}"),
    };
    let fake = write_script(bin.path(), "claude", &format!("{SESSION_WRITES}{protocol}"));
    let settings = ProviderSettings {
        command: Some(fake.clone()),
        acp_command: Some(fake),
        env: [
            ("CLAUDE_CONFIG_DIR", config.path().display().to_string()),
            ("FAKE_SESSION_WRITE", session_write.to_owned()),
            ("FAKE_DELAY", LATE_WRITE_DELAY.to_owned()),
        ]
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect(),
        ..ProviderSettings::default()
    };
    let backend = build_backend("claude", &settings).unwrap();
    let provider = provider_on(backend, transport, PermissionPolicy::Ask).unwrap();
    let mut options = OrchestratorOptions::new(provider);
    options.cwd = Some(work.path().to_path_buf());
    let mut chat = spawn_orchestrator(options);
    let sessions = assert_turn(&run_turn(&mut chat, "one").await, 1);
    assert_turn(&run_turn(&mut chat, "two").await, 1);
    let id = sessions[0].clone().expect("the turn names its session");
    let file = config.path().join(format!("projects/work/{id}.jsonl"));
    let read = || std::fs::read_to_string(&file).unwrap_or_default();

    rewind_conversation(&mut chat, 2).await;
    let to_before_second = read();
    undo_conversation_rewind(&mut chat, 2).await;
    Rewound {
        to_before_second,
        undone: read(),
    }
}

impl Rewound {
    /// Nothing was written after the turns' ends: each checkpoint kept the file as it stood.
    fn assert_prompts_only_kept(&self) {
        assert_eq!(self.to_before_second, "{\"user\":\"one\"}\n");
        assert_eq!(self.undone, "{\"user\":\"one\"}\n{\"user\":\"two\"}\n");
    }
}

/// The checkpoint before "two" waited for the answer to "one", written after the turn's end;
/// the rewind waited likewise for the answer to "two" before keeping the session it undoes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_keeps_what_claude_wrote_to_its_session_after_the_result() {
    two_turns_then_rewind(Transport::Stream, "split")
        .await
        .assert_both_answers_kept();
}

/// A new session's file that appears only after the first turn's `result` is waited for too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_file_that_appears_only_after_the_first_result_is_waited_for() {
    two_turns_then_rewind(Transport::Stream, "late")
        .await
        .assert_both_answers_kept();
}

/// When nothing is written after the `result`, the wait gives up (after its limit) and the
/// checkpoint keeps the session file as it stands: the turns still run and the rewind still
/// works, with what had been written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_write_after_the_result_the_checkpoint_keeps_the_file_as_it_stands() {
    two_turns_then_rewind(Transport::Stream, "early")
        .await
        .assert_prompts_only_kept();
}

/// The same three over ACP, where the turn ends with the `session/prompt` response.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_a_rewind_keeps_what_claude_wrote_after_the_turn() {
    two_turns_then_rewind(Transport::Acp, "split")
        .await
        .assert_both_answers_kept();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_a_session_file_that_appears_only_after_the_first_turn_is_waited_for() {
    two_turns_then_rewind(Transport::Acp, "late")
        .await
        .assert_both_answers_kept();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_acp_with_no_write_after_the_turn_the_checkpoint_keeps_the_file_as_it_stands() {
    two_turns_then_rewind(Transport::Acp, "early")
        .await
        .assert_prompts_only_kept();
}
