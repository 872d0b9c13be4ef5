//! A fake OpenAI-compatible Chat Completions server (`POST /v1/chat/completions`, streaming),
//! on the HTTP core in `http.rs`. Mirrors protocols/pi/fake_openai.py: the scenario is the
//! request's `model`, and the step of a multi-request scenario is the number of `role:"tool"`
//! messages in the request, so a retried request repeats its step.
//!
//! Scenarios: `plain` (text), `think` (reasoning, then text), `tool` (one bash call `echo hi`,
//! then text), `err500` (HTTP 500), `sleep` (a bash call that writes its PID to the file named
//! by the prompt's last word, then sleeps 100 s), `session` (says how many user messages it got),
//! `nap` (a bash call `sleep 3`, then says how many user messages it got: steering lands there);
//! a `session` answer to a prompt saying "slow please" streams slowly; `edit` (a bash call
//! `printf 'v2\n' > notes.txt`, then text).

use std::time::Duration;

use serde_json::{json, Value};

use super::http::{FakeHttpServer, HttpRequest, HttpResponse, SseEvent};

pub const PLAIN_TEXT: &str =
    "The quick brown fox jumps over the lazy dog, then naps in the warm afternoon sun.";
pub const THOUGHT: &str = "The user wants a greeting. I should keep it short and friendly.";
pub const THINK_ANSWER: &str = "Hello! Nice to meet you, how can I help today?";
pub const TOOL_INTRO: &str = "I will run echo hi now.";
pub const TOOL_ANSWER: &str = "The command printed hi, so the shell works fine.";
pub const ERROR_500: &str = "fake internal server error";
pub const SCENARIOS: [&str; 8] = [
    "plain", "think", "tool", "err500", "sleep", "session", "nap", "edit",
];
/// The `edit` scenario's command and its answer once the command ran.
pub const EDIT_COMMAND: &str = "printf 'v2\\n' > notes.txt";
pub const EDIT_ANSWER: &str = "notes.txt now says v2.";

const DELAY: Duration = Duration::from_millis(20);

/// In a `session` request whose last prompt says this, the answer streams slowly (a word every
/// [`SLOW_DELAY`], about 4 s in all), so that a test can stop it mid-answer.
pub const SLOW_PLEASE: &str = "slow please";
const SLOW_DELAY: Duration = Duration::from_millis(250);

pub struct FakeOpenAi {
    pub server: FakeHttpServer,
}

impl FakeOpenAi {
    pub async fn start() -> FakeOpenAi {
        Self::start_failing(|_| false).await
    }

    /// Like `start`, but a completion request for which `fail` (given the last user message's
    /// text) says so is answered with HTTP 500.
    pub async fn start_failing(fail: impl Fn(&str) -> bool + Send + Sync + 'static) -> FakeOpenAi {
        Self::start_failing_with(500, fail).await
    }

    /// Like `start_failing`, with HTTP `status` (a 4xx other than 429 is one no agent retries
    /// by itself).
    pub async fn start_failing_with(
        status: u16,
        fail: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> FakeOpenAi {
        let server = FakeHttpServer::start(move |request: &HttpRequest| {
            let body = request.json().unwrap_or(Value::Null);
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            if request.method == "POST" && fail(&last_user_text(&messages)) {
                let kind = if status >= 500 {
                    "server_error"
                } else {
                    "invalid_request_error"
                };
                return HttpResponse::json(
                    status,
                    &json!({"error": {"message": ERROR_500, "type": kind, "code": null}}),
                );
            }
            respond(request)
        })
        .await
        .expect("bind the fake OpenAI server on 127.0.0.1");
        FakeOpenAi { server }
    }

    /// The user messages' texts of every completion request, in order.
    pub fn user_texts_per_request(&self) -> Vec<Vec<String>> {
        self.completion_requests()
            .iter()
            .map(|request| {
                let body = request.json().unwrap_or(Value::Null);
                body["messages"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|message| message["role"] == "user")
                    .map(|message| match &message["content"] {
                        Value::String(text) => text.clone(),
                        Value::Array(parts) => parts
                            .iter()
                            .filter_map(|part| part["text"].as_str())
                            .collect::<Vec<_>>()
                            .join(""),
                        _ => String::new(),
                    })
                    .collect()
            })
            .collect()
    }

    /// The `baseUrl` for a client: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.server.base_url())
    }

    /// The chat completion requests received so far.
    pub fn completion_requests(&self) -> Vec<HttpRequest> {
        self.server
            .requests()
            .into_iter()
            .filter(|request| {
                request.method == "POST" && request.path.ends_with("/chat/completions")
            })
            .collect()
    }

    /// A pi `models.json` with a provider `fake` pointing here, one model per scenario.
    pub fn pi_models_json(&self) -> Value {
        let models: Vec<Value> = SCENARIOS
            .iter()
            .map(|id| json!({"id": id, "reasoning": *id == "think"}))
            .collect();
        json!({"providers": {"fake": {
            "baseUrl": self.base_url(),
            "api": "openai-completions",
            "apiKey": "fake-key",
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false, "supportsStore": false},
            "models": models,
        }}})
    }
}

fn respond(request: &HttpRequest) -> HttpResponse {
    if request.method != "POST" {
        return HttpResponse::json(200, &json!({"object": "list", "data": []}));
    }
    let body = request.json().unwrap_or(Value::Null);
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    let step = messages
        .iter()
        .filter(|message| message["role"] == "tool")
        .count();
    let first = json!({"role": "assistant", "content": ""});
    match (model.as_str(), step) {
        ("plain", _) => stream(
            &model,
            [first].into_iter().chain(text_deltas(PLAIN_TEXT)),
            "stop",
        ),
        ("think", _) => {
            let thinking = words(THOUGHT).map(|piece| json!({"reasoning_content": piece}));
            let deltas = [json!({"role": "assistant", "content": null})]
                .into_iter()
                .chain(thinking)
                .chain(text_deltas(THINK_ANSWER));
            stream(&model, deltas, "stop")
        }
        ("tool", 0) => stream(
            &model,
            [first]
                .into_iter()
                .chain(text_deltas(TOOL_INTRO))
                .chain(tool_call("call_echo_1", &json!({"command": "echo hi"}))),
            "tool_calls",
        ),
        ("edit", 0) => stream(
            &model,
            [first]
                .into_iter()
                .chain(tool_call("call_edit_1", &json!({"command": EDIT_COMMAND}))),
            "tool_calls",
        ),
        ("edit", _) => stream(
            &model,
            [first].into_iter().chain(text_deltas(EDIT_ANSWER)),
            "stop",
        ),
        ("tool", _) => stream(
            &model,
            [first].into_iter().chain(text_deltas(TOOL_ANSWER)),
            "stop",
        ),
        ("err500", _) => HttpResponse::json(
            500,
            &json!({"error": {"message": ERROR_500, "type": "server_error", "code": null}}),
        ),
        ("sleep", 0) => {
            let pid_file = last_user_text(&messages)
                .split_whitespace()
                .last()
                .unwrap_or("/dev/null")
                .to_owned();
            let command = format!("echo $$ > {pid_file}; exec sleep 100");
            stream(
                &model,
                [first]
                    .into_iter()
                    .chain(tool_call("call_sleep_1", &json!({"command": command}))),
                "tool_calls",
            )
        }
        ("sleep", _) => stream(
            &model,
            [first].into_iter().chain(text_deltas("Slept.")),
            "stop",
        ),
        ("nap", 0) => stream(
            &model,
            [first]
                .into_iter()
                .chain(tool_call("call_nap_1", &json!({"command": "sleep 3"}))),
            "tool_calls",
        ),
        ("session" | "nap", _) => {
            let users = messages
                .iter()
                .filter(|message| message["role"] == "user")
                .count();
            let text = format!("This request carried {users} user message(s).");
            if last_user_text(&messages).contains(SLOW_PLEASE) {
                let text = format!("{text} Counting slowly: one two three four five six seven.");
                return stream_paced(
                    &model,
                    [first].into_iter().chain(text_deltas(&text)),
                    "stop",
                    SLOW_DELAY,
                );
            }
            stream(
                &model,
                [first].into_iter().chain(text_deltas(&text)),
                "stop",
            )
        }
        _ => stream(
            &model,
            [first]
                .into_iter()
                .chain(text_deltas(&format!("Unknown fake model {model}."))),
            "stop",
        ),
    }
}

fn last_user_text(messages: &[Value]) -> String {
    let Some(user) = messages
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
    else {
        return String::new();
    };
    match &user["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}

/// Splits on spaces, keeping each space in front of the word that follows it.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(' ').enumerate().map(|(index, word)| {
        if index == 0 {
            word.to_owned()
        } else {
            format!(" {word}")
        }
    })
}

fn text_deltas(text: &str) -> Vec<Value> {
    words(text).map(|piece| json!({"content": piece})).collect()
}

/// A tool call streamed the way OpenAI does: id and name first, then argument fragments.
fn tool_call(id: &str, arguments: &Value) -> Vec<Value> {
    let arguments = arguments.to_string();
    let mut deltas = vec![
        json!({"tool_calls": [{"index": 0, "id": id, "type": "function",
                                                 "function": {"name": "bash", "arguments": ""}}]}),
    ];
    let chars: Vec<char> = arguments.chars().collect();
    for piece in chars.chunks(chars.len().div_ceil(3).max(1)) {
        let piece: String = piece.iter().collect();
        deltas.push(json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}));
    }
    deltas
}

fn chunk(model: &str, choice: Option<Value>, usage: Option<Value>) -> String {
    let mut chunk = json!({"id": "chatcmpl-fake-1", "object": "chat.completion.chunk",
                           "created": 0, "model": model,
                           "choices": choice.into_iter().collect::<Vec<_>>()});
    if let Some(usage) = usage {
        chunk["usage"] = usage;
    }
    chunk.to_string()
}

fn stream(model: &str, deltas: impl IntoIterator<Item = Value>, finish: &str) -> HttpResponse {
    stream_paced(model, deltas, finish, DELAY)
}

fn stream_paced(
    model: &str,
    deltas: impl IntoIterator<Item = Value>,
    finish: &str,
    pace: Duration,
) -> HttpResponse {
    let mut events: Vec<SseEvent> = deltas
        .into_iter()
        .map(|delta| {
            SseEvent::data(chunk(
                model,
                Some(json!({"index": 0, "delta": delta, "finish_reason": null})),
                None,
            ))
            .after(pace)
        })
        .collect();
    events.push(SseEvent::data(chunk(
        model,
        Some(json!({"index": 0, "delta": {}, "finish_reason": finish})),
        None,
    )));
    events.push(SseEvent::data(chunk(
        model,
        None,
        Some(
            json!({"prompt_tokens": 1234, "completion_tokens": 56, "total_tokens": 1290,
                    "prompt_tokens_details": {"cached_tokens": 0}}),
        ),
    )));
    events.push(SseEvent::data("[DONE]"));
    HttpResponse::sse(events)
}
