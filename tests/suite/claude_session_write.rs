//! Claude Code writes a turn to its session file (`<config>/projects/<dir>/<id>.jsonl`) a
//! little after the turn's `result` line. A checkpoint taken sooner would lose that turn's end
//! on a rewind, so the stream provider waits for the write (`UnwrittenTurn`), and gives up
//! after a limit when none comes. Here a fake Claude Code (a shell script speaking just enough
//! stream-json) writes its session file after its `result` as the test asks, behind the real
//! Claude backend, stream provider and orchestrator; what a rewind and its undo put back shows
//! what each checkpoint read.

use agentty::config::{PermissionPolicy, ProviderSettings};
use agentty::orchestrator::{spawn_orchestrator, OrchestratorOptions};
use agentty::provider::{build_backend, provider_on, Transport};

use crate::support::real_cli::{
    assert_turn, rewind_conversation, run_turn, undo_conversation_rewind,
};
use crate::support::script_agent::write_script;

/// How long after its `result` the fake writes what it writes late: well after the next
/// turn's checkpoint would be taken without a wait, well before the wait's limit.
const LATE_WRITE_DELAY: &str = "0.5";

/// When the fake writes a turn to its session file: `split` the prompt before the `result` and
/// the answer after it (as Claude Code does), `late` both after it (a new session's file then
/// appears only after the turn), `early` the prompt before it and nothing after.
const FAKE_CLAUDE: &str = r#"
id=
while [ $# -gt 0 ]; do
  case "$1" in --session-id|--resume) id=$2; shift ;; esac
  shift
done
session="$CLAUDE_CONFIG_DIR/projects/work/$id.jsonl"
mkdir -p "${session%/*}"
while IFS= read -r line; do
  case "$line" in
  *'"subtype":"initialize"'*)
    request=${line#*'"request_id":"'}
    printf '{"type":"control_response","response":{"subtype":"success","request_id":"%s","response":{}}}\n' "${request%%\"*}"
    ;;
  *'"type":"user"'*)
    prompt=${line#*'"content":"'}
    prompt=${prompt%%\"*}
    [ "$FAKE_SESSION_WRITE" = late ] || printf '{"user":"%s"}\n' "$prompt" >> "$session"
    printf '{"type":"system","subtype":"init","session_id":"%s"}\n' "$id"
    printf '{"type":"assistant","session_id":"%s","message":{"id":"m-%s","role":"assistant","content":[{"type":"text","text":"said %s"}],"stop_reason":"end_turn"}}\n' "$id" "$prompt" "$prompt"
    printf '{"type":"result","subtype":"success","is_error":false,"result":"said %s","stop_reason":"end_turn","session_id":"%s"}\n' "$prompt" "$id"
    case "$FAKE_SESSION_WRITE" in
    split) (sleep "$FAKE_DELAY"; printf '{"answer":"%s"}\n' "$prompt" >> "$session") </dev/null >/dev/null 2>&1 & ;;
    late) (sleep "$FAKE_DELAY"; printf '{"user":"%s"}\n{"answer":"%s"}\n' "$prompt" "$prompt" >> "$session") </dev/null >/dev/null 2>&1 & ;;
    esac
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

/// Two turns ("one", "two") on the fake, each prompt sent as soon as the turn before ended;
/// then a rewind of the conversation to before "two" and its undo.
async fn two_turns_then_rewind(session_write: &str) -> Rewound {
    let bin = tempfile::tempdir().unwrap();
    let config = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let settings = ProviderSettings {
        command: Some(write_script(bin.path(), "claude", FAKE_CLAUDE)),
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
    let provider = provider_on(backend, Transport::Stream, PermissionPolicy::Ask).unwrap();
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

/// The checkpoint before "two" waited for the answer to "one", written after its `result`;
/// the rewind waited likewise for the answer to "two" before keeping the session it undoes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewind_keeps_what_claude_wrote_to_its_session_after_the_result() {
    two_turns_then_rewind("split")
        .await
        .assert_both_answers_kept();
}

/// A new session's file that appears only after the first turn's `result` is waited for too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_file_that_appears_only_after_the_first_result_is_waited_for() {
    two_turns_then_rewind("late")
        .await
        .assert_both_answers_kept();
}

/// When nothing is written after the `result`, the wait gives up (after its limit) and the
/// checkpoint keeps the session file as it stands: the turns still run and the rewind still
/// works, with what had been written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_write_after_the_result_the_checkpoint_keeps_the_file_as_it_stands() {
    let rewound = two_turns_then_rewind("early").await;
    assert_eq!(rewound.to_before_second, "{\"user\":\"one\"}\n");
    assert_eq!(rewound.undone, "{\"user\":\"one\"}\n{\"user\":\"two\"}\n");
}
