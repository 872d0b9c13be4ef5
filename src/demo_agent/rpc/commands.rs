//! The RPC commands answered the same with or without a turn running: `get_state`, the
//! session's statistics, `new_session` and `switch_session`, the models and the thinking level,
//! `steer`/`follow_up` kept for the next turn, and `compact`.

use std::io;
use std::path::Path;

use serde_json::{json, Value};

use super::super::state::{Session, SessionChoice};
use super::{response, Engine};

/// The models the demo offers: (id, name, takes a thinking level).
const MODELS: [(&str, &str, bool); 2] = [
    ("demo-1", "Demo One", false),
    ("demo-2", "Demo Two (thinks)", true),
];

/// pi's `Model` object for one of [`MODELS`].
fn model_object(index: usize) -> Value {
    let (id, name, reasoning) = MODELS[index];
    json!({"id": id, "name": name, "api": "openai-completions", "provider": "demo",
           "reasoning": reasoning})
}

impl Engine {
    /// Commands that need no running turn (and are answered the same way during one).
    pub(super) fn idle_command(&mut self, command: &Value) -> io::Result<()> {
        let id = command.get("id");
        let kind = command["type"].as_str().unwrap_or_default();
        let mut answer = response(id, kind, true);
        match kind {
            "get_state" => {
                answer["data"] = json!({
                    "model": model_object(self.model),
                    "thinkingLevel": self.thinking_level,
                    "isStreaming": self.streaming,
                    "isCompacting": false,
                    "steeringMode": "one-at-a-time",
                    "followUpMode": "one-at-a-time",
                    "sessionFile": self.session.file().display().to_string(),
                    "sessionId": self.session.header.id,
                    "autoCompactionEnabled": true,
                    "messageCount": self.session.history.len() * 2,
                    "pendingMessageCount": self.steering.len() + self.follow_up.len(),
                });
            }
            "get_session_stats" => {
                let prompts = self.session.history.len() as u64;
                answer["data"] = json!({
                    "sessionId": self.session.header.id,
                    "userMessages": prompts,
                    "assistantMessages": prompts,
                    "toolCalls": 0, "toolResults": 0,
                    "totalMessages": prompts * 2,
                    "tokens": {"input": prompts * 1234, "output": prompts * 56, "cacheRead": 0, "cacheWrite": 0, "total": prompts * 1290},
                    "cost": 0,
                    // pi's estimate of the context: here 1,290 tokens a prompt of 200k.
                    "contextUsage": {
                        "tokens": prompts * 1290,
                        "contextWindow": 200_000,
                        "percent": (prompts * 1290) as f64 / 2000.0,
                    },
                });
            }
            "set_auto_retry" | "abort" | "set_steering_mode" | "set_follow_up_mode" => {}
            // pi re-reads a session file (one the client restored) in the running process,
            // in a new runtime: what its queues held is left behind.
            "switch_session" => {
                self.steering.clear();
                self.follow_up.clear();
                let path = Path::new(command["sessionPath"].as_str().unwrap_or_default());
                let loaded = path
                    .file_stem()
                    .and_then(|stem| stem.to_str())
                    .and_then(Session::load);
                match loaded {
                    Some((session, _)) => self.session = session,
                    None => {
                        answer = response(id, kind, false);
                        answer["error"] =
                            Value::String(format!("Session file not found: {}", path.display()));
                    }
                }
            }
            "new_session" => {
                self.steering.clear();
                self.follow_up.clear();
                let cwd = self.session.header.cwd.clone();
                match Session::open(&SessionChoice::New, &cwd) {
                    Ok(session) => self.session = session,
                    Err(error) => {
                        answer = response(id, kind, false);
                        answer["error"] = Value::String(error);
                    }
                }
            }
            "get_available_models" => {
                let models: Vec<Value> = (0..MODELS.len()).map(model_object).collect();
                answer["data"] = json!({ "models": models });
            }
            "set_model" => {
                let wanted = (command["provider"].as_str(), command["modelId"].as_str());
                match MODELS
                    .iter()
                    .position(|(id, _, _)| (Some("demo"), Some(*id)) == wanted)
                {
                    Some(index) => {
                        self.model = index;
                        // What the next prompt goes to, in `requests.jsonl`.
                        self.session.model = Some(MODELS[index].0.to_owned());
                        eprintln!("demo agent (rpc): set_model {}", MODELS[index].0);
                        answer["data"] = model_object(index);
                    }
                    None => {
                        answer = response(id, kind, false);
                        answer["error"] = Value::String(format!(
                            "Model not found: {}/{}",
                            wanted.0.unwrap_or_default(),
                            wanted.1.unwrap_or_default()
                        ));
                    }
                }
            }
            "compact" => return self.compact(command),
            "set_thinking_level" => {
                let level = command["level"].as_str().unwrap_or_default();
                self.thinking_level = level.to_owned();
                eprintln!("demo agent (rpc): set_thinking_level {level}");
            }
            "steer" | "follow_up" => {
                // Nothing runs: kept for the next turn, as pi does.
                let message = command["message"].as_str().unwrap_or_default().to_owned();
                if kind == "steer" {
                    self.steering.push_back(message);
                } else {
                    self.follow_up.push_back(message);
                }
                self.queue_update()?;
            }
            _ => {
                let mut unknown = response(None, kind, false);
                unknown["error"] = Value::String(format!("Unknown command: {kind}"));
                return self.line(&unknown);
            }
        }
        self.line(&answer)
    }

    /// `compact{customInstructions?}` as pi 0.73.1 does it: `compaction_start`, the summary
    /// request, `compaction_end` with the result (or the error), then the response. An
    /// instruction that says `slow` takes 30 s (for stop tests; pi's `abort` does not reach a
    /// compaction, so only a signal ends it early).
    fn compact(&mut self, command: &Value) -> io::Result<()> {
        let id = command.get("id");
        let instructions = command["customInstructions"].as_str();
        self.line(&json!({"type": "compaction_start", "reason": "manual"}))?;
        if instructions.is_some_and(|text| text.contains("slow")) {
            std::thread::sleep(self.pace.scaled(30_000));
        }
        let tokens_before = self.session.history.len() as u64 * 1290;
        let mut answer = response(id, "compact", true);
        match self.session.compact(instructions) {
            Ok(summary) => {
                let result = json!({
                    "summary": summary,
                    "firstKeptEntryId": "demo-kept",
                    "tokensBefore": tokens_before,
                });
                self.line(&json!({
                    "type": "compaction_end", "reason": "manual", "result": result,
                    "aborted": false, "willRetry": false,
                }))?;
                answer["data"] = result;
            }
            Err(error) => {
                self.line(&json!({
                    "type": "compaction_end", "reason": "manual", "aborted": false,
                    "willRetry": false, "errorMessage": format!("Compaction failed: {error}"),
                }))?;
                answer = response(id, "compact", false);
                answer["error"] = Value::String(error);
            }
        }
        self.line(&answer)
    }
}
