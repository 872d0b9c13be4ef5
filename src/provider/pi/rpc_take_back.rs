//! Taking back the steering a stop left in pi's session file.
//!
//! pi 0.73.1 (pi-agent-core's `runLoop`) polls its steering queue after every tool step, also
//! after `abort`: a steer still queued when the user stops a tool is taken off the queue
//! (`queue_update`), written into the session as a user message, and followed by an empty
//! assistant message with `stopReason: "aborted"`. The model never answered it (the request that
//! would carry it is aborted before it is made), but the next prompt's request carries it. RPC
//! has no command that clears the queue (pi's `clearQueue` is the interactive mode's), so this
//! takes such messages out of the file: the user messages with the given texts that end the
//! session, before its closing aborted assistant messages. Their children are re-attached to
//! their parent, so the file reads as a stop without the steer; pi then re-reads it
//! (`switch_session`).

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::Path;

use serde_json::Value;

/// Takes the unanswered user messages `texts` out of pi session file `file`; returns how many
/// it took out (0 when the session does not end with them, and then the file is not touched).
pub(crate) fn take_back_unanswered(file: &Path, texts: &[String]) -> io::Result<usize> {
    let contents = fs::read_to_string(file)?;
    let lines: Vec<&str> = contents.lines().collect();
    let entries: Vec<Option<Value>> = lines
        .iter()
        .map(|line| serde_json::from_str(line).ok())
        .collect();
    let parents = unanswered_tail(&entries, texts);
    if parents.is_empty() {
        return Ok(0);
    }
    let mut kept = String::with_capacity(contents.len());
    for (line, entry) in lines.iter().zip(&entries) {
        let Some(entry) = entry else {
            kept.push_str(line);
            kept.push('\n');
            continue;
        };
        // pi may have written an entry twice (see `stopped_prompt`): every copy goes.
        if entry["id"]
            .as_str()
            .is_some_and(|id| parents.contains_key(id))
        {
            continue;
        }
        match entry["parentId"].as_str() {
            Some(parent) if parents.contains_key(parent) => {
                let mut moved = entry.clone();
                moved["parentId"] = surviving_parent(parent, &parents);
                kept.push_str(&moved.to_string());
            }
            _ => kept.push_str(line),
        }
        kept.push('\n');
    }
    // In place, as a checkpoint's restore: the file stays pi's (its permissions, its links).
    fs::write(file, kept)?;
    Ok(parents.len())
}

/// The session's closing run of user messages whose texts are among `texts` (each text counted
/// once), before any aborted assistant messages that end it: their ids, with their parents.
fn unanswered_tail(entries: &[Option<Value>], texts: &[String]) -> HashMap<String, Value> {
    let mut wanted: Vec<&str> = texts.iter().map(String::as_str).collect();
    let mut taken = HashMap::new();
    let mut closing = true;
    for entry in entries.iter().rev() {
        let Some(entry) = entry else { break };
        let message = &entry["message"];
        if entry["type"] != "message" {
            break;
        }
        if closing && message["role"] == "assistant" && message["stopReason"] == "aborted" {
            continue;
        }
        closing = false;
        if message["role"] != "user" {
            break;
        }
        let text = user_text(message);
        let Some(index) = wanted.iter().position(|wanted| *wanted == text) else {
            break;
        };
        let Some(id) = entry["id"].as_str() else {
            break;
        };
        wanted.remove(index);
        taken.insert(id.to_owned(), entry["parentId"].clone());
    }
    taken
}

/// The nearest ancestor of `parent` that is not taken out (`null`: the root).
fn surviving_parent(parent: &str, taken: &HashMap<String, Value>) -> Value {
    let mut current = Value::String(parent.to_owned());
    // Each step goes one entry up; a cycle in a broken file ends at the bound.
    for _ in 0..=taken.len() {
        match current.as_str().and_then(|id| taken.get(id)) {
            Some(up) => current = up.clone(),
            None => return current,
        }
    }
    Value::Null
}

/// A user message's text, as pi matches it against its queue (`_getUserMessageText`).
fn user_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|block| block["type"] == "text")
            .filter_map(|block| block["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(id: &str, parent: Option<&str>, message: Value) -> Value {
        json!({"type": "message", "id": id, "parentId": parent, "timestamp": "t", "message": message})
    }

    fn user(text: &str) -> Value {
        json!({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1})
    }

    fn aborted() -> Value {
        json!({"role": "assistant", "content": [], "stopReason": "aborted"})
    }

    /// A session stopped during a tool: the prompt, the tool call, its aborted result, then
    /// what the stop left: `tail` (user messages) and the empty aborted answer.
    fn stopped_session(tail: &[&str]) -> Vec<Value> {
        let mut entries = vec![
            json!({"type": "session", "version": 3, "id": "s1", "cwd": "/w"}),
            message("a1", None, user("Sleep")),
            message(
                "a2",
                Some("a1"),
                json!({"role": "assistant", "content": [{"type": "toolCall"}], "stopReason": "toolUse"}),
            ),
            message(
                "a3",
                Some("a2"),
                json!({"role": "toolResult", "content": [{"type": "text", "text": "Command aborted"}]}),
            ),
        ];
        let mut parent = "a3".to_owned();
        for (index, text) in tail.iter().enumerate() {
            let id = format!("u{index}");
            entries.push(message(&id, Some(&parent), user(text)));
            parent = id;
        }
        entries.push(message("z9", Some(&parent), aborted()));
        entries
    }

    fn write(entries: &[Value]) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        let text: String = entries.iter().map(|entry| format!("{entry}\n")).collect();
        fs::write(file.path(), text).unwrap();
        file
    }

    fn read(file: &tempfile::NamedTempFile) -> Vec<Value> {
        fs::read_to_string(file.path())
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    fn texts(items: &[&str]) -> Vec<String> {
        items.iter().map(|item| (*item).to_owned()).collect()
    }

    #[test]
    fn a_steer_before_the_closing_aborted_answer_is_taken_out_and_its_child_reattached() {
        let file = write(&stopped_session(&["my steer"]));
        let taken = take_back_unanswered(file.path(), &texts(&["my steer"])).unwrap();
        assert_eq!(taken, 1);
        let entries = read(&file);
        assert_eq!(
            entries,
            {
                let mut expected = stopped_session(&[]);
                expected.last_mut().unwrap()["parentId"] = json!("a3");
                expected
            },
            "the file reads as a stop without the steer"
        );
    }

    #[test]
    fn several_steers_go_and_each_text_is_counted_once() {
        let file = write(&stopped_session(&["again", "again", "other"]));
        let taken = take_back_unanswered(file.path(), &texts(&["again", "other"])).unwrap();
        assert_eq!(
            taken, 2,
            "the first \"again\" stays: only one was asked for"
        );
        let entries = read(&file);
        let users: Vec<&Value> = entries
            .iter()
            .filter(|entry| entry["message"]["role"] == "user")
            .collect();
        assert_eq!(users.len(), 2);
        assert_eq!(users[1]["id"], "u0");
        assert_eq!(entries.last().unwrap()["parentId"], "u0");
    }

    #[test]
    fn an_answered_steer_or_an_earlier_prompt_with_the_same_text_stays() {
        // The model answered the steer: the session does not end with it.
        let mut answered = stopped_session(&["my steer"]);
        let answer = json!({"role": "assistant", "content": [{"type": "text", "text": "ok"}], "stopReason": "stop"});
        answered.push(message("z10", Some("z9"), answer));
        let file = write(&answered);
        let before = fs::read_to_string(file.path()).unwrap();
        assert_eq!(
            take_back_unanswered(file.path(), &texts(&["my steer"])).unwrap(),
            0
        );
        assert_eq!(fs::read_to_string(file.path()).unwrap(), before);
        // The prompt "Sleep" is not a steer of the stopped turn's tail.
        let file = write(&stopped_session(&[]));
        assert_eq!(
            take_back_unanswered(file.path(), &texts(&["Sleep"])).unwrap(),
            0
        );
    }

    #[test]
    fn a_copy_of_a_taken_entry_goes_too_and_unparsable_lines_stay() {
        let mut entries = stopped_session(&["my steer"]);
        let copy = entries[4].clone();
        entries.insert(1, copy);
        let file = write(&entries);
        let mut text = fs::read_to_string(file.path()).unwrap();
        text.insert_str(0, "not json\n");
        fs::write(file.path(), text).unwrap();
        assert_eq!(
            take_back_unanswered(file.path(), &texts(&["my steer"])).unwrap(),
            1
        );
        let after = fs::read_to_string(file.path()).unwrap();
        assert!(after.starts_with("not json\n"));
        assert!(!after.contains("my steer"), "{after}");
    }

    #[test]
    fn a_missing_file_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        assert!(take_back_unanswered(&dir.path().join("gone.jsonl"), &texts(&["x"])).is_err());
    }
}
