//! The Gemini flavour's session store: Gemini CLI 0.61's chat files, including the behaviour,
//! measured against the real CLI, that makes a reload in the same minute lose the conversation.
//!
//! Where: `<home>/.gemini/tmp/<project>/chats/session-<minute>-<first 8 of the id>.jsonl`, with
//! `<home>` `$GEMINI_CLI_HOME`, else `$HOME`; `<project>` the name of the session's `cwd`; and
//! `<minute>` the UTC minute in which a process opened the session (`2026-12-01T21-06`).
//!
//! What: append-only JSON lines, as Gemini writes them: a header `{"sessionId", "projectHash",
//! "startTime", "lastUpdated", "kind": "main"}`; `{"$set": {"messages": […]}}` patches, which
//! replace the whole message list when the file is read; `{"$set": {"lastUpdated"}}`; and message
//! records `{"id", "timestamp", "type": "user"|"gemini", "content", …}`. A record whose id is
//! already in the list replaces it.
//!
//! Opening a session (`session/new`, and `session/load` too) FIRST appends a header and a `$set`
//! of the messages (the startup context alone) to `session-<this minute>-<id8>.jsonl`, and only
//! THEN looks the session up. The lookup reads every file of the project's `chats/`. It takes the
//! newest one (by modification time) whose header names the session and whose messages, read to
//! the end, hold more than the startup context. The file's name does not matter. So:
//! - a load in the minute the session's file is named for appends to that very file. Its last
//!   `$set` leaves only the context, so the session is not found, and `session/load` fails with
//!   `-32603 Internal error`, `data: {details: "No previous sessions found for this project."}`;
//! - a load in any later minute writes a stub file (a header and the context only), which the
//!   lookup skips, and the session loads whole. The process goes on writing to the file it
//!   loaded.
//!
//! A prompt appends its user record. Its request goes to `requests.jsonl`: the session's user
//! prompts (without the startup context), then the new one. An answer appends a `gemini` record
//! with its text, thoughts, tool calls and token counts. A prompt that the model failed is
//! forgotten, as Gemini does: a `$set` of the messages without it. A cancelled prompt stays
//! (not measured).

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::super::state::{self, DemoRequest};
use super::turn::Played;
use super::wire;

/// What `session/load` says (in the error's `data.details`) when no file holds the session.
pub(crate) const NO_PREVIOUS_SESSIONS: &str = "No previous sessions found for this project.";
/// The variable that names Gemini CLI's home (else `HOME`).
const HOME_VAR: &str = "GEMINI_CLI_HOME";
/// The start of the startup context's text (Gemini's first user message of every session).
const CONTEXT_MARK: &str = "<session_context>";
const PREFIX: &str = "session-";
const SUFFIX: &str = ".jsonl";

/// A session file's header line.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    #[serde(rename = "sessionId")]
    session_id: String,
    #[serde(rename = "projectHash")]
    project_hash: String,
    #[serde(rename = "startTime")]
    start_time: String,
    #[serde(rename = "lastUpdated")]
    last_updated: String,
    kind: String,
}

/// A message record (the fields keep Gemini's order: a record's line starts with `{"id":`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Message {
    id: String,
    timestamp: String,
    #[serde(rename = "type")]
    kind: String,
    /// A user message's parts (`[{"text"}]`), or a gemini message's text.
    content: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    thoughts: Option<Vec<Value>>,
    #[serde(default, rename = "toolCalls", skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tokens: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    model: Option<String>,
}

impl Message {
    fn user(now: u64, text: &str) -> Self {
        Self {
            id: uuid::Uuid::new_v4().hyphenated().to_string(),
            timestamp: state::iso_timestamp(now),
            kind: "user".into(),
            content: json!([{ "text": text }]),
            thoughts: None,
            tool_calls: None,
            tokens: None,
            model: None,
        }
    }

    /// The text of a user message (its text parts, joined).
    fn user_text(&self) -> Option<String> {
        if self.kind != "user" {
            return None;
        }
        let parts = self.content.as_array()?;
        Some(
            parts
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }

    fn is_context(&self) -> bool {
        self.user_text()
            .is_some_and(|text| text.starts_with(CONTEXT_MARK))
    }
}

/// `{"$set": {"messages": […]}}`.
#[derive(Serialize)]
struct SetMessages<'a> {
    #[serde(rename = "$set")]
    set: MessagesPatch<'a>,
}

#[derive(Serialize)]
struct MessagesPatch<'a> {
    messages: &'a [Message],
}

/// A session as one process holds it.
pub(crate) struct GeminiSession {
    id: String,
    /// The file it writes to: the one it was created in or loaded from.
    file: PathBuf,
    /// The message list, the startup context first.
    messages: Vec<Message>,
}

impl GeminiSession {
    /// `session/new` in `cwd`.
    pub(crate) fn create(cwd: &Path) -> Self {
        let id = uuid::Uuid::new_v4().hyphenated().to_string();
        let now = state::now_ms();
        let file = chats_dir(cwd).join(file_name(now, &id));
        let messages = vec![context(now, cwd)];
        open_in(&file, &id, now, cwd, &messages);
        Self { id, file, messages }
    }

    /// `session/load` of session `id` in `cwd`: the header first, then the lookup (see the
    /// module doc). `None`: no file holds the session (any more).
    pub(crate) fn load(id: &str, cwd: &Path) -> Option<Self> {
        if !state::is_safe_file_stem(id) {
            return None;
        }
        let now = state::now_ms();
        let chats = chats_dir(cwd);
        open_in(
            &chats.join(file_name(now, id)),
            id,
            now,
            cwd,
            &[context(now, cwd)],
        );
        let (file, messages) = find(&chats, id)?;
        Some(Self {
            id: id.to_owned(),
            file,
            messages,
        })
    }

    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Stores the prompt and logs its request; returns the request's user messages.
    pub(crate) fn record_prompt(&mut self, prompt: &str) -> Vec<String> {
        let mut request: Vec<String> = self
            .messages
            .iter()
            .filter(|message| !message.is_context())
            .filter_map(Message::user_text)
            .collect();
        request.push(prompt.to_owned());
        state::log_request(&DemoRequest {
            session_id: self.id.clone(),
            messages: request.clone(),
            model: None,
            effort: None,
        });
        let now = state::now_ms();
        let message = Message::user(now, prompt);
        self.append(&[line_of(&message), last_updated(now)]);
        self.messages.push(message);
        request
    }

    /// Stores the answer a prompt got, with its token counts.
    pub(crate) fn record_answer(&mut self, played: &Played, input_tokens: u64, output_tokens: u64) {
        let now = state::now_ms();
        let thoughts = (!played.thoughts.is_empty()).then(|| {
            vec![json!({
                "subject": "",
                "description": played.thoughts,
                "timestamp": state::iso_timestamp(now),
            })]
        });
        let tool_calls = (!played.tool_calls.is_empty()).then(|| {
            played
                .tool_calls
                .iter()
                .map(|call| {
                    let status = match call["status"].as_str() {
                        Some("completed") => "success",
                        _ => "error",
                    };
                    json!({
                        "id": call["toolCallId"],
                        "displayName": call["title"],
                        "kind": call["kind"],
                        "status": status,
                    })
                })
                .collect()
        });
        let message = Message {
            id: uuid::Uuid::new_v4().hyphenated().to_string(),
            timestamp: state::iso_timestamp(now),
            kind: "gemini".into(),
            content: Value::String(played.answer.clone()),
            thoughts,
            tool_calls,
            tokens: Some(json!({
                "input": input_tokens,
                "output": output_tokens,
                "cached": 0,
                "thoughts": 0,
                "tool": 0,
                "total": input_tokens + output_tokens,
            })),
            model: Some(wire::MODEL.to_owned()),
        };
        self.append(&[line_of(&message), last_updated(now)]);
        self.messages.push(message);
    }

    /// The model failed the last prompt: Gemini drops it from the session and from its memory.
    pub(crate) fn forget_prompt(&mut self) {
        if self
            .messages
            .last()
            .is_some_and(|message| message.kind == "user" && !message.is_context())
        {
            self.messages.pop();
        }
        let line = serde_json::to_string(&SetMessages {
            set: MessagesPatch {
                messages: &self.messages,
            },
        })
        .unwrap_or_default();
        self.append(&[line]);
    }

    /// The `session/update`s that replay the conversation after a `session/load`: user
    /// messages, and for each answer its thoughts, its text and its tool calls (completed or
    /// failed). The startup context is not replayed.
    pub(crate) fn history(&self) -> Vec<Value> {
        let mut updates = Vec::new();
        for message in &self.messages {
            if message.is_context() {
                continue;
            }
            if let Some(text) = message.user_text() {
                updates.push(wire::chunk("user_message_chunk", &text));
                continue;
            }
            for thought in message.thoughts.iter().flatten() {
                let text = thought["description"].as_str().unwrap_or_default();
                updates.push(wire::chunk("agent_thought_chunk", text));
            }
            if let Some(text) = message.content.as_str().filter(|text| !text.is_empty()) {
                updates.push(wire::chunk("agent_message_chunk", text));
            }
            for call in message.tool_calls.iter().flatten() {
                let status = if call["status"] == "success" {
                    "completed"
                } else {
                    "failed"
                };
                updates.push(json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": call["id"],
                    "status": status,
                    "title": call["displayName"],
                    "content": [],
                    "locations": [],
                    "kind": call["kind"],
                }));
            }
        }
        updates
    }

    fn append(&self, lines: &[String]) {
        append(&self.file, lines);
    }
}

/// `<home>/.gemini/tmp/<project>/chats` for a session in `cwd`.
fn chats_dir(cwd: &Path) -> PathBuf {
    let home = [HOME_VAR, "HOME"]
        .iter()
        .find_map(|var| std::env::var_os(var).filter(|value| !value.is_empty()))
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    home.join(".gemini")
        .join("tmp")
        .join(project_name(cwd))
        .join("chats")
}

/// The project's directory name: the name of `cwd`, made a safe file name.
fn project_name(cwd: &Path) -> String {
    let name: String = cwd
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    if name.chars().all(|c| c == '.') {
        "project".to_owned()
    } else {
        name
    }
}

/// `session-2026-12-01T21-06-4b08a8de.jsonl` for session `id` opened at `ms`.
pub(crate) fn file_name(ms: u64, id: &str) -> String {
    let short = id.get(..8).unwrap_or(id);
    format!("{PREFIX}{}-{short}{SUFFIX}", minute(ms))
}

/// The UTC minute of `ms` as Gemini names files by it (`toISOString().slice(0, 16)`, `:` -> `-`).
fn minute(ms: u64) -> String {
    state::iso_timestamp(ms)
        .get(..16)
        .unwrap_or_default()
        .replace(':', "-")
}

/// The startup context: the first user message of every session Gemini opens.
fn context(now: u64, cwd: &Path) -> Message {
    let text = format!(
        "{CONTEXT_MARK}\nThis is the agentty demo agent (Gemini flavour). We are setting up the \
         context for our chat.\nThe working directory is: {}\n</session_context>",
        cwd.display()
    );
    Message {
        // Gemini gives the context the same id in every process.
        id: "d04923d38bb0f6017037e74183378ef4".into(),
        ..Message::user(now, &text)
    }
}

/// Appends a process's opening lines to `file`: its header and the `$set` of `messages`.
fn open_in(file: &Path, id: &str, now: u64, cwd: &Path, messages: &[Message]) {
    let started = state::iso_timestamp(now);
    let header = Header {
        session_id: id.to_owned(),
        project_hash: format!(
            "{:016x}",
            state::fnv1a(cwd.display().to_string().as_bytes())
        ),
        start_time: started.clone(),
        last_updated: started,
        kind: "main".into(),
    };
    let set = SetMessages {
        set: MessagesPatch { messages },
    };
    append(
        file,
        &[
            serde_json::to_string(&header).unwrap_or_default(),
            serde_json::to_string(&set).unwrap_or_default(),
        ],
    );
}

fn line_of(message: &Message) -> String {
    serde_json::to_string(message).unwrap_or_default()
}

fn last_updated(now: u64) -> String {
    json!({"$set": {"lastUpdated": state::iso_timestamp(now)}}).to_string()
}

/// Appends `lines` to `file` (creating it and its directory). State is a convenience: a write
/// that fails is skipped.
fn append(file: &Path, lines: &[String]) {
    if let Some(dir) = file.parent() {
        let _ = fs::create_dir_all(dir);
    }
    let Ok(mut out) = fs::OpenOptions::new().create(true).append(true).open(file) else {
        return;
    };
    let text: String = lines.iter().map(|line| format!("{line}\n")).collect();
    let _ = out.write_all(text.as_bytes());
}

/// The session file of `id` in `chats` with its messages: the newest file whose header names
/// the session and whose messages hold more than the startup context.
fn find(chats: &Path, id: &str) -> Option<(PathBuf, Vec<Message>)> {
    let mut best: Option<(SystemTime, PathBuf, Vec<Message>)> = None;
    for entry in fs::read_dir(chats).ok()?.flatten() {
        let path = entry.path();
        let named = path
            .file_name()
            .and_then(|name| name.to_str())
            .is_some_and(|name| name.starts_with(PREFIX) && name.ends_with(SUFFIX));
        if !named {
            continue;
        }
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        let (session, messages) = replay(&text);
        if session.as_deref() != Some(id) || messages.iter().all(Message::is_context) {
            continue;
        }
        let modified = fs::metadata(&path)
            .and_then(|meta| meta.modified())
            .unwrap_or(UNIX_EPOCH);
        if best
            .as_ref()
            .is_some_and(|(newest, _, _)| *newest >= modified)
        {
            continue;
        }
        best = Some((modified, path, messages));
    }
    best.map(|(_, path, messages)| (path, messages))
}

/// A file read as Gemini reads it: the session its first header names, and the message list
/// after every record and `$set` patch.
fn replay(text: &str) -> (Option<String>, Vec<Message>) {
    let mut session = None;
    let mut messages: Vec<Message> = Vec::new();
    for line in text.lines() {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(set) = value.get("$set") {
            if let Some(list) = set.get("messages").and_then(Value::as_array) {
                messages = list
                    .iter()
                    .filter_map(|message| serde_json::from_value(message.clone()).ok())
                    .collect();
            }
        } else if value.get("type").is_some() {
            let Ok(message) = serde_json::from_value::<Message>(value) else {
                continue;
            };
            match messages.iter_mut().find(|known| known.id == message.id) {
                Some(known) => *known = message,
                None => messages.push(message),
            }
        } else if let Some(id) = value["sessionId"].as_str() {
            session.get_or_insert_with(|| id.to_owned());
        }
    }
    (session, messages)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_named_by_the_utc_minute_and_the_short_id() {
        // 2026-11-29T20:22:55.996Z
        assert_eq!(
            file_name(1_795_983_775_996, "4b08a8de-de84-4a97-9d56-468b3493a45d"),
            "session-2026-11-29T20-22-4b08a8de.jsonl"
        );
    }

    #[test]
    fn a_set_of_the_messages_replaces_the_list_and_a_known_id_replaces_its_record() {
        let user = |id: &str, text: &str| {
            format!(
                r#"{{"id":"{id}","timestamp":"t","type":"user","content":[{{"text":"{text}"}}]}}"#
            )
        };
        let text = [
            r#"{"sessionId":"s1","projectHash":"h","startTime":"t","lastUpdated":"t","kind":"main"}"#.to_owned(),
            user("a", "first"),
            user("b", "second"),
            user("a", "first, edited"),
            r#"{"$set":{"lastUpdated":"t2"}}"#.to_owned(),
            "not json".to_owned(),
            r#"{"sessionId":"s2","projectHash":"h","startTime":"t","lastUpdated":"t","kind":"main"}"#.to_owned(),
        ]
        .join("\n");
        let (session, messages) = replay(&text);
        assert_eq!(session.as_deref(), Some("s1"));
        let texts: Vec<String> = messages.iter().filter_map(Message::user_text).collect();
        assert_eq!(texts, ["first, edited", "second"]);

        let wiped = format!(
            "{text}\n{{\"$set\":{{\"messages\":[{}]}}}}",
            user("c", "<session_context>\\nctx")
        );
        let (_, messages) = replay(&wiped);
        assert_eq!(messages.len(), 1);
        assert!(messages[0].is_context());
    }

    #[test]
    fn the_project_is_the_working_directory_name() {
        assert_eq!(project_name(Path::new("/tmp/my work")), "my-work");
        assert_eq!(project_name(Path::new("/")), "project");
        assert_eq!(project_name(Path::new("/srv/..")), "project");
    }
}
