//! A [`RecordedRun`] fed through a mapper exactly as the runner feeds it, and the shared
//! stream's rules ([`stream_violations`]) that every mapper keeps on every capture.

use agentty::provider::{AgentOutcome, ExitFacts, LineVerdict, Mapper};
use agentty::stream::{AgentMessage, NoticeKind};

use super::captures::{Channel, RecordedRun};

/// One `#[test]` per capture, named after it, that runs `$check("<name>")` (or, with
/// `<name> => <arg>`, `$check("<name>", <arg>)`); and `CAPTURES`, every name in order, for
/// the test that no capture is left out.
macro_rules! capture_tests {
    ($check:ident: $($name:ident $(=> $arg:expr)?),* $(,)?) => {
        const CAPTURES: &[&str] = &[$(stringify!($name)),*];
        $(
            #[test]
            fn $name() {
                $check(stringify!($name) $(, $arg)?);
            }
        )*
    };
}
pub(crate) use capture_tests;

/// What a mapper made of a recorded run.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// Every message, in order (a mapper never produces the terminal message).
    pub messages: Vec<AgentMessage>,
    /// Each stdout line the mapper was given, with its verdict, in order.
    pub verdicts: Vec<(String, LineVerdict)>,
    /// How the recorded run ended (what `finish` was given).
    pub exit: ExitFacts,
    /// What `outcome_reported` said once the output had ended, before `finish`.
    pub outcome_reported: bool,
    pub outcome: AgentOutcome,
}

/// Feeds a recorded run through `mapper` as the runner does: stdout lines (empty ones
/// skipped, as the line reader does) to `map_line`, stderr lines to `map_stderr_line`, then
/// `finish` with the recorded exit.
pub fn replay(mapper: &mut dyn Mapper, run: &RecordedRun) -> Replay {
    let mut messages = Vec::new();
    let mut verdicts = Vec::new();
    for (channel, line) in &run.lines {
        match channel {
            Channel::Stdout if line.is_empty() => {}
            Channel::Stdout => {
                let verdict = mapper.map_line(line, &mut messages);
                verdicts.push((line.clone(), verdict));
            }
            Channel::Stderr => mapper.map_stderr_line(line, &mut messages),
        }
    }
    let outcome_reported = mapper.outcome_reported();
    let outcome = mapper.finish(run.exit, &mut messages);
    Replay {
        messages,
        verdicts,
        exit: run.exit,
        outcome_reported,
        outcome,
    }
}

/// Reads capture `name` of `cli`, replays it through the mapper `mapper_for` makes for it,
/// and fails the test if the replay breaks a rule of the shared stream.
pub fn replay_capture<M: Mapper>(
    cli: &str,
    name: &str,
    mapper_for: impl FnOnce(&RecordedRun) -> M,
) -> Replay {
    let run = RecordedRun::read(cli, name);
    let replayed = replay(&mut mapper_for(&run), &run);
    replayed.assert_stream_rules(name);
    replayed
}

impl Replay {
    /// Every assistant delta, concatenated.
    pub fn assistant_text(&self) -> String {
        agentty::stream::assistant_text(&self.messages)
    }

    /// How many notices of `kind` the replay produced.
    pub fn notice_count(&self, kind: &str) -> usize {
        self.messages
            .iter()
            .filter(|message| matches!(message, AgentMessage::Notice { kind: k, .. } if k == kind))
            .count()
    }

    /// The stdout lines the mapper was given, in order.
    pub fn stdout_lines(&self) -> impl Iterator<Item = &str> {
        self.verdicts.iter().map(|(line, _)| line.as_str())
    }

    /// How many stdout lines got `verdict`.
    pub fn verdict_count(&self, verdict: LineVerdict) -> usize {
        self.verdicts
            .iter()
            .filter(|(_, given)| *given == verdict)
            .count()
    }

    /// The replay as text for a snapshot: one shared-stream JSON line per message, then the
    /// invalid lines, the exit and the outcome.
    pub fn transcript(&self) -> String {
        let mut text = String::new();
        for message in &self.messages {
            text.push_str(&message.to_json_line());
            text.push('\n');
        }
        for (line, verdict) in &self.verdicts {
            if *verdict == LineVerdict::Invalid {
                text.push_str(&format!("invalid: {line}\n"));
            }
        }
        text.push_str(&format!(
            "exit: {:?}\noutcome: {:?}\n",
            self.exit, self.outcome
        ));
        text
    }

    /// Fails the test, naming the capture, if the replay breaks a rule of the shared stream.
    pub fn assert_stream_rules(&self, name: &str) {
        let violations = stream_violations(&self.messages);
        assert!(violations.is_empty(), "{name}: {violations:#?}");
    }

    /// [`Replay::assert_stream_rules`] without the rule against text shown twice in a row, for
    /// a capture that may hold several turns of one process, whose replies can repeat.
    pub fn assert_stream_structure(&self, name: &str) {
        let violations = structure_violations(&self.messages);
        assert!(violations.is_empty(), "{name}: {violations:#?}");
    }
}

/// Repeated text shorter than this is not counted as shown twice ("no, no" is fine).
const MIN_REPEAT_BYTES: usize = 8;

/// Every `plan` of `messages`, each as its `(content, status)` pairs.
pub fn plans(messages: &[AgentMessage]) -> Vec<Vec<(String, String)>> {
    messages
        .iter()
        .filter_map(|message| match message {
            AgentMessage::Plan { entries } => Some(
                entries
                    .iter()
                    .map(|entry| (entry.content.clone(), entry.status.clone()))
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

/// Ways `messages` (one attempt, terminal message excluded) breaks the shared stream's
/// rules; empty when it keeps them all: the [`structure_violations`], and the assistant text
/// since the last `agent_retry` notice never shows a passage twice in a row (what re-sent,
/// unreconciled text looks like).
pub fn stream_violations(messages: &[AgentMessage]) -> Vec<String> {
    let mut violations = structure_violations(messages);
    let mut text = String::new();
    for message in messages {
        match message {
            AgentMessage::Assistant { delta } => text.push_str(delta),
            AgentMessage::Notice { kind, .. } if *kind == NoticeKind::AgentRetry => text.clear(),
            _ => {}
        }
    }
    if let Some(repeated) = repeated_passage(&text) {
        violations.push(format!("text shown twice in a row: {repeated:?}"));
    }
    violations
}

/// Ways `messages` (one attempt, terminal message excluded) breaks the shared stream's
/// structure:
/// - a session header comes at most once, and first;
/// - every `tool.call` id is new, and is ended by exactly one `tool.completed`/`tool.failed`;
///   no update or ending names an id that is not open; a sub-agent's call (`parent_id`) nests
///   under a call that is open;
/// - no thought falls between a tool call and its end;
/// - no terminal message (the runner adds it).
pub fn structure_violations(messages: &[AgentMessage]) -> Vec<String> {
    let mut violations = Vec::new();
    let mut open: Vec<&str> = Vec::new();
    let mut ended: Vec<&str> = Vec::new();
    for (index, message) in messages.iter().enumerate() {
        match message {
            AgentMessage::SessionStarted { .. } | AgentMessage::SessionResumed { .. }
                if index != 0 =>
            {
                violations.push(format!("session header at position {index}"));
            }
            AgentMessage::ToolCall { id, parent_id, .. } => {
                if let Some(parent) = parent_id.as_deref().filter(|parent| !open.contains(parent)) {
                    violations.push(format!("tool call {id} nests under {parent}, not open"));
                }
                // A call announced again while it is open restates it (its real title and
                // input, from a later update): only an ended call may not come back.
                if ended.contains(&id.as_str()) {
                    violations.push(format!("tool call {id} announced after its end"));
                } else if !open.contains(&id.as_str()) {
                    open.push(id);
                }
            }
            AgentMessage::ToolUpdate { id, .. } if !open.contains(&id.as_str()) => {
                violations.push(format!("update of tool call {id}, which is not open"));
            }
            AgentMessage::ToolCompleted { id, .. } | AgentMessage::ToolFailed { id, .. } => {
                if !open.contains(&id.as_str()) {
                    violations.push(format!("end of tool call {id}, which is not open"));
                }
                open.retain(|open_id| open_id != id);
                ended.push(id);
            }
            AgentMessage::Thought { .. } if !open.is_empty() => {
                violations.push(format!(
                    "thought at position {index}, inside tool call {}",
                    open.join(", ")
                ));
            }
            message if message.is_terminal() => {
                violations.push(format!("terminal message from the mapper: {message:?}"));
            }
            _ => {}
        }
    }
    violations.extend(open.iter().map(|id| format!("tool call {id} never ended")));
    violations
}

/// The first passage of at least [`MIN_REPEAT_BYTES`] that `text` contains twice in a row.
/// Quadratic in the text's length: meant for test transcripts, not for live streams.
fn repeated_passage(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    (0..bytes.len()).find_map(|start| {
        (MIN_REPEAT_BYTES..=(bytes.len() - start) / 2)
            .find(|len| bytes[start..start + len] == bytes[start + len..start + 2 * len])
            .map(|len| String::from_utf8_lossy(&bytes[start..start + len]).into_owned())
    })
}

/// Ways one whole attempt (`attempt`: every message, the terminal one included) breaks the
/// shared stream's contract, beyond [`structure_violations`] of what precedes the terminal:
/// - exactly one terminal message, and it is the last;
/// - a `terminal.failed`'s `text` is exactly the attempt's assistant deltas, concatenated (the
///   text the user saw is the text the failure reports);
/// - every message's wire line ([`wire_line_violations`]) is one inert line that reads back as
///   the message.
pub fn attempt_violations(attempt: &[AgentMessage]) -> Vec<String> {
    let terminals: Vec<usize> = attempt
        .iter()
        .enumerate()
        .filter(|(_, message)| message.is_terminal())
        .map(|(index, _)| index)
        .collect();
    let mut violations = Vec::new();
    match terminals.as_slice() {
        [] => violations.push("no terminal message".to_string()),
        [last] if *last + 1 == attempt.len() => {}
        [at] => violations.push(format!(
            "terminal message at position {at} of {}, not last",
            attempt.len()
        )),
        several => violations.push(format!("{} terminal messages: {several:?}", several.len())),
    }
    let before_terminal = terminals.first().map_or(attempt, |&at| &attempt[..at]);
    violations.extend(structure_violations(before_terminal));
    if let Some(AgentMessage::Failed(failure)) = attempt.last() {
        let deltas = agentty::stream::assistant_text(before_terminal);
        if failure.text != deltas {
            violations.push(format!(
                "terminal.failed text {:?} is not the assistant deltas {deltas:?}",
                failure.text
            ));
        }
    }
    for message in attempt {
        violations.extend(wire_line_violations(&message.to_json_line(), message));
    }
    violations
}

/// Ways `line`, the wire form of `message` (headless output, session logs), is not one inert
/// line that reads back as `message`: a raw C0 control character (a newline would split the
/// line, an ESC or BEL would act on the terminal `agentty run` prints to), or a line that
/// parses as something else. (DEL and C1 controls pass JSON raw; terminals do not act on
/// DEL, and the fuzz's edits do not make C1.)
pub fn wire_line_violations(line: &str, message: &AgentMessage) -> Vec<String> {
    let mut violations = Vec::new();
    if let Some(raw) = line.chars().find(|c| *c < ' ') {
        violations.push(format!(
            "raw control character {raw:?} in the wire line {line:?}"
        ));
    }
    match AgentMessage::from_json_line(line) {
        Ok(read) if read == *message => {}
        Ok(read) => violations.push(format!("the wire line {line:?} reads back as {read:?}")),
        Err(error) => violations.push(format!(
            "the wire line {line:?} does not read back: {error}"
        )),
    }
    violations
}
