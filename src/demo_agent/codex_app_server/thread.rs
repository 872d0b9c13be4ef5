//! Threads as the demo keeps them, one JSON file each in the state dir (so a new process
//! resumes them): stored, listed (`thread/list`, `thread/turns/list`), reverted and forked, and
//! the model requests a thread's turns make, logged to [`requests_file`](super::requests_file).

use std::path::PathBuf;

use serde_json::{json, Value};

use super::super::state::{self, now_ms, uuid_v7};
use super::{notify, requests_file, respond, respond_error, Server, MODEL};

/// A thread as the demo keeps it: its directory and its turns' user messages.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Thread {
    pub(super) id: String,
    pub(super) cwd: String,
    pub(super) turns: Vec<Turn>,
}

#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub(super) struct Turn {
    pub(super) id: String,
    /// The user messages the turn added (its prompt, then any steering).
    pub(super) users: Vec<String>,
}

impl Thread {
    pub(super) fn file(id: &str) -> Option<PathBuf> {
        state::is_safe_file_stem(id).then(|| {
            state::state_dir()
                .join("codex-threads")
                .join(format!("{id}.json"))
        })
    }

    pub(super) fn load(id: &str) -> Option<Thread> {
        let text = std::fs::read_to_string(Self::file(id)?).ok()?;
        serde_json::from_str(&text).ok()
    }

    pub(super) fn save(&self) {
        let Some(file) = Self::file(&self.id) else {
            return;
        };
        if let Some(dir) = file.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(file, serde_json::to_string(self).unwrap_or_default());
    }

    /// Every user message of the thread, in order (what the model sees).
    pub(super) fn users(&self) -> Vec<String> {
        self.turns
            .iter()
            .flat_map(|turn| turn.users.clone())
            .collect()
    }

    pub(super) fn json(&self) -> Value {
        json!({
            "id": self.id, "sessionId": self.id, "cwd": self.cwd, "status": {"type": "idle"},
            "modelProvider": "demo", "model": MODEL, "historyMode": "paginated", "turns": [],
            "path": Self::file(&self.id).map(|file| file.display().to_string()),
        })
    }
}

impl Server {
    pub(super) fn revert(&mut self, id: &Value, params: &Value) {
        let before = params["beforeTurnId"].as_str().unwrap_or_default();
        let Some(thread) = self
            .thread
            .as_mut()
            .filter(|thread| Some(thread.id.as_str()) == params["threadId"].as_str())
        else {
            respond_error(id, -32600, "thread not loaded");
            return;
        };
        let Some(at) = thread.turns.iter().position(|turn| turn.id == before) else {
            respond_error(id, -32600, &format!("no turn {before} in the thread"));
            return;
        };
        thread.turns.truncate(at);
        thread.save();
        respond(id, json!({"thread": thread.json()}));
        notify("thread/reverted", json!({"threadId": thread.id}));
    }

    /// A new thread with the turns of a stored one through `lastTurnId`, open in its place.
    pub(super) fn fork(&mut self, id: &Value, params: &Value) {
        let wanted = params["threadId"].as_str().unwrap_or_default();
        let Some(mut history) = Thread::load(wanted) else {
            respond_error(
                id,
                -32600,
                &format!("no rollout found for thread id {wanted}"),
            );
            return;
        };
        if let Some(last) = params["lastTurnId"].as_str() {
            let Some(at) = history.turns.iter().position(|turn| turn.id == last) else {
                respond_error(id, -32600, &format!("no turn {last} in the thread"));
                return;
            };
            history.turns.truncate(at + 1);
        }
        let fork = Thread {
            id: uuid_v7(now_ms()),
            ..history
        };
        fork.save();
        self.open(id, fork);
    }

    /// The stored thread's turns, newest first (the only order agentty asks for).
    pub(super) fn list_turns(&mut self, id: &Value, params: &Value) {
        let wanted = params["threadId"].as_str().unwrap_or_default();
        let Some(thread) = Thread::load(wanted) else {
            respond_error(
                id,
                -32600,
                &format!("no rollout found for thread id {wanted}"),
            );
            return;
        };
        let limit = params["limit"]
            .as_u64()
            .map_or(usize::MAX, |limit| limit as usize);
        let data: Vec<Value> = thread
            .turns
            .iter()
            .rev()
            .take(limit)
            .map(|turn| json!({"id": turn.id, "status": "completed", "items": []}))
            .collect();
        respond(id, json!({"data": data, "nextCursor": null}));
    }
}

/// What the model would receive: the thread's user messages.
pub(super) fn log_request(thread: &Thread, settings: &Value) {
    let dir = state::state_dir();
    let _ = std::fs::create_dir_all(&dir);
    let request = json!({"thread": thread.id, "users": thread.users(), "model": settings["model"],
        "effort": settings["effort"], "approvalPolicy": settings["approvalPolicy"],
        "sandbox": settings["sandbox"], "pid": std::process::id()});
    state::append_line(&requests_file(&dir), &request.to_string());
}

/// The most recently changed thread of `cwd`, as `thread/list` lists it.
pub(super) fn latest_thread(cwd: Option<&str>) -> Vec<Value> {
    let dir = state::state_dir().join("codex-threads");
    let mut best: Option<(std::time::SystemTime, Thread)> = None;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Some(thread) = std::fs::read_to_string(entry.path())
            .ok()
            .and_then(|text| serde_json::from_str::<Thread>(&text).ok())
        else {
            continue;
        };
        if cwd.is_some_and(|cwd| cwd != thread.cwd) {
            continue;
        }
        let modified = entry
            .metadata()
            .and_then(|meta| meta.modified())
            .unwrap_or(std::time::UNIX_EPOCH);
        if best.as_ref().is_none_or(|(time, _)| modified > *time) {
            best = Some((modified, thread));
        }
    }
    best.map(|(_, thread)| vec![thread.json()])
        .unwrap_or_default()
}
