//! A fake OpenAI Responses API on 127.0.0.1 for running the real Codex CLI in tests, after
//! `protocols/codex/fake_responses_server.py`: `POST /v1/responses` answered with the SSE
//! events Codex builds its items from.
//!
//! [`shared`] holds the HTTP plumbing, which the Gemini fake server uses as well.

use std::time::Duration;

use serde_json::{json, Value};

use shared::{Exchange, FakeServer, Request};

pub mod shared {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::sync::{Arc, Mutex};

    use serde_json::Value;

    /// One HTTP request the fake server received.
    #[derive(Debug, Clone)]
    pub struct Request {
        pub path: String,
        pub body: Vec<u8>,
        /// When the request's body had been read (to time a CLI's start-up from outside).
        pub received_at: std::time::Instant,
    }

    impl Request {
        pub fn json(&self) -> Option<Value> {
            serde_json::from_slice(&self.body).ok()
        }
    }

    /// The answer side of one request; every answer closes the connection when done.
    pub struct Exchange {
        stream: TcpStream,
    }

    impl Exchange {
        pub fn json(&mut self, status: u16, body: &Value) {
            let body = body.to_string();
            let head = format!(
                "HTTP/1.1 {status} Fake\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = self.stream.write_all(head.as_bytes());
            let _ = self.stream.write_all(body.as_bytes());
        }

        /// Starts a server-sent-events answer; the body ends when the connection closes.
        pub fn start_events(&mut self) {
            let _ = self.stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                  Cache-Control: no-cache\r\nConnection: close\r\n\r\n",
            );
        }

        /// One event, framed as each real API frames it: a named event (`event:` and `data:`
        /// lines, `\n` endings) as the Responses API does, an unnamed one (`data:` only, `\r\n`
        /// endings) as the Gemini API does.
        pub fn event(&mut self, name: Option<&str>, data: &Value) -> std::io::Result<()> {
            let text = match name {
                Some(name) => format!("event: {name}\ndata: {data}\n\n"),
                None => format!("data: {data}\r\n\r\n"),
            };
            self.stream.write_all(text.as_bytes())?;
            self.stream.flush()
        }
    }

    type Handler = dyn Fn(&Request, usize, &mut Exchange) + Send + Sync;

    /// An HTTP/1.1 server on 127.0.0.1 (a free port) that logs every request and hands it,
    /// with its 0-based number, to the scenario's handler.
    pub struct FakeServer {
        pub port: u16,
        requests: Arc<Mutex<Vec<Request>>>,
    }

    impl FakeServer {
        pub fn start(
            handler: impl Fn(&Request, usize, &mut Exchange) + Send + Sync + 'static,
        ) -> FakeServer {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
            let port = listener.local_addr().expect("local address").port();
            let requests: Arc<Mutex<Vec<Request>>> = Arc::default();
            let handler: Arc<Handler> = Arc::new(handler);
            let log = requests.clone();
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    let (log, handler) = (log.clone(), handler.clone());
                    std::thread::spawn(move || serve(stream, &log, handler.as_ref()));
                }
            });
            FakeServer { port, requests }
        }

        pub fn requests(&self) -> Vec<Request> {
            self.requests.lock().map(|r| r.clone()).unwrap_or_default()
        }

        /// Requests whose path contains `part`.
        pub fn count(&self, part: &str) -> usize {
            self.requests()
                .iter()
                .filter(|request| request.path.contains(part))
                .count()
        }
    }

    fn serve(stream: TcpStream, log: &Mutex<Vec<Request>>, handler: &Handler) {
        let Ok(reader_stream) = stream.try_clone() else {
            return;
        };
        let mut reader = BufReader::new(reader_stream);
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        // "METHOD PATH VERSION": the method is not needed.
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_owned();
        let mut content_length = 0;
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    content_length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; content_length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request = Request {
            path,
            body,
            received_at: std::time::Instant::now(),
        };
        let index = match log.lock() {
            Ok(mut log) => {
                log.push(request.clone());
                log.len() - 1
            }
            Err(_) => return,
        };
        let mut exchange = Exchange { stream };
        handler(&request, index, &mut exchange);
        let _ = exchange.stream.shutdown(std::net::Shutdown::Both);
    }
}

/// What the fake Responses API answers.
#[derive(Debug, Clone)]
pub enum CodexScenario {
    Text,
    /// A reasoning summary, then text.
    Reasoning,
    /// First a call of Codex's shell tool with this command, then (once the tool output comes
    /// back) text.
    Tool(String),
    /// Like `Tool`, but the call asks to run outside the sandboxing (`sandbox_permissions:
    /// "require_escalated"`), which makes Codex ask the user first (codex-acp:
    /// `session/request_permission`).
    EscalatedTool(String),
    /// A reasoning summary and raw reasoning, each streamed as deltas (what codex-acp turns
    /// into `agent_thought_chunk`s), then text.
    StreamedReasoning,
    /// Every request: HTTP 500.
    Http500,
    /// This text a word at a time, with `pause` after each word.
    Say {
        text: String,
        pause: Duration,
    },
}

pub const TEXT_REPLY: &str = "Hello from the fake server.";
pub const REASONING_SUMMARY: &str = "**Thinking about greeting**\n\nI should say hello.";
pub const REASONING_REPLY: &str = "After thinking: hello!";
pub const TOOL_REPLY: &str = "The command printed hi.";
/// The summary and raw reasoning deltas of `StreamedReasoning`.
pub const STREAMED_SUMMARY: [&str; 5] = [
    "**Thinking",
    " about",
    " greeting**",
    "\n\nI should",
    " say hello.",
];
pub const STREAMED_RAW: [&str; 4] = ["raw", " chain", " of", " thought"];
/// The justification of `EscalatedTool`'s call.
pub const ESCALATION_REASON: &str = "needs to write outside the sandbox";

/// Writes `config.toml` into the Codex home `home` (the config of
/// `protocols/codex/capture.sh`): the fake server on `port` as the only model provider, with
/// `model`, and no background traffic. Over ACP use a model Codex knows (`gpt-5.4-mini`):
/// codex-acp puts "Model metadata for ... not found" into the assistant text for an unknown one.
pub fn write_codex_config(home: &std::path::Path, port: u16, model: &str) {
    let config = format!(
        r#"model = "{model}"
model_provider = "fake"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake local"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
plugin_sharing = false
apps = false
in_app_updates = false
"#
    );
    std::fs::write(home.join("config.toml"), config).expect("write config.toml");
}

/// Starts the fake Responses API for `scenario`.
pub fn start(scenario: CodexScenario) -> FakeServer {
    start_failing(scenario, |_| false)
}

/// Like [`start`], but the scenario of each model request is chosen by `choose` from the text
/// of its last user message (several turns of one conversation, each with its own scenario).
pub fn start_choosing(
    choose: impl Fn(&str) -> CodexScenario + Send + Sync + 'static,
) -> FakeServer {
    serve(
        move |request| choose(user_texts(request).last().map_or("", String::as_str)),
        |_| false,
    )
}

/// Like [`start`], but a model request for which `fail` (given the text of its last user
/// message) says so is answered with HTTP 500 instead.
pub fn start_failing(
    scenario: CodexScenario,
    fail: impl Fn(&str) -> bool + Send + Sync + 'static,
) -> FakeServer {
    serve(move |_| scenario.clone(), fail)
}

fn serve(
    scenario_for: impl Fn(&Request) -> CodexScenario + Send + Sync + 'static,
    fail: impl Fn(&str) -> bool + Send + Sync + 'static,
) -> FakeServer {
    FakeServer::start(move |request, index, exchange| {
        if !request.path.trim_end_matches('/').ends_with("/responses") {
            exchange.json(
                404,
                &json!({"error": {"message": "not found", "type": "not_found"}}),
            );
            return;
        }
        let scenario = scenario_for(request);
        let flaky = user_texts(request)
            .last()
            .is_some_and(|text| fail(text.as_str()));
        if flaky || matches!(scenario, CodexScenario::Http500) {
            exchange.json(
                500,
                &json!({"error": {"message": "fake internal server error", "type": "server_error"}}),
            );
            return;
        }
        exchange.start_events();
        let response_id = format!("resp_fake_{index}");
        // A write error means Codex went away (stopped): nothing more to send.
        let _ = answer(&scenario, request, &response_id, exchange);
    })
}

fn answer(
    scenario: &CodexScenario,
    request: &Request,
    response_id: &str,
    exchange: &mut Exchange,
) -> std::io::Result<()> {
    send(
        exchange,
        json!({"type": "response.created", "response": {"id": response_id, "status": "in_progress", "output": []}}),
    )?;
    match scenario {
        CodexScenario::Text => text_message(
            exchange,
            &["Hello", " from", " the", " fake", " server", "."],
            0,
        )?,
        CodexScenario::Reasoning => {
            send(
                exchange,
                json!({"type": "response.output_item.added", "output_index": 0,
                       "item": {"type": "reasoning", "id": "rs_1", "summary": [], "content": []}}),
            )?;
            send(
                exchange,
                json!({"type": "response.output_item.done", "output_index": 0,
                       "item": {"type": "reasoning", "id": "rs_1",
                                "summary": [{"type": "summary_text", "text": REASONING_SUMMARY}],
                                "content": [], "encrypted_content": null}}),
            )?;
            text_message(exchange, &["After", " thinking:", " hello", "!"], 1)?;
        }
        CodexScenario::StreamedReasoning => {
            streamed_reasoning(exchange)?;
            text_message(exchange, &["After", " thinking:", " hello", "!"], 1)?;
        }
        CodexScenario::EscalatedTool(command) if !has_tool_output(request) => {
            let (name, arguments) = shell_tool_call(request, command);
            let mut arguments: Value = serde_json::from_str(&arguments).unwrap_or_default();
            arguments["sandbox_permissions"] = json!("require_escalated");
            arguments["justification"] = json!(ESCALATION_REASON);
            send(
                exchange,
                json!({"type": "response.output_item.done", "output_index": 0,
                       "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                                "name": name, "arguments": arguments.to_string(), "status": "completed"}}),
            )?;
        }
        CodexScenario::Tool(command) if !has_tool_output(request) => {
            let (name, arguments) = shell_tool_call(request, command);
            send(
                exchange,
                json!({"type": "response.output_item.done", "output_index": 0,
                       "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                                "name": name, "arguments": arguments, "status": "completed"}}),
            )?;
        }
        CodexScenario::Tool(_) | CodexScenario::EscalatedTool(_) => {
            text_message(exchange, &["The", " command", " printed", " hi", "."], 0)?;
        }
        CodexScenario::Say { text, pause } => {
            let words: Vec<&str> = text.split_inclusive(' ').collect();
            text_message_paced(exchange, &words, 0, *pause)?;
        }
        CodexScenario::Http500 => {}
    }
    send(
        exchange,
        json!({"type": "response.completed", "response": {"id": response_id, "status": "completed",
               "usage": {"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0},
                         "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 3},
                         "total_tokens": 19}}}),
    )
}

/// The text of each user message of a Responses request (`input` items of role `user`), in
/// order; a message of several text parts gives their texts joined by newlines.
pub fn user_texts(request: &Request) -> Vec<String> {
    let body = request.json().unwrap_or(Value::Null);
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["role"] == "user")
        .map(|item| match &item["content"] {
            Value::String(text) => text.clone(),
            content => content
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|part| part["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
        })
        .collect()
}

fn send(exchange: &mut Exchange, data: Value) -> std::io::Result<()> {
    let name = data["type"].as_str().unwrap_or_default().to_owned();
    exchange.event(Some(&name), &data)
}

fn text_message(exchange: &mut Exchange, chunks: &[&str], index: usize) -> std::io::Result<()> {
    text_message_paced(exchange, chunks, index, Duration::from_millis(10))
}

fn text_message_paced(
    exchange: &mut Exchange,
    chunks: &[&str],
    index: usize,
    pause: Duration,
) -> std::io::Result<()> {
    let id = format!("msg_{index}");
    send(
        exchange,
        json!({"type": "response.output_item.added", "output_index": index,
               "item": {"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []}}),
    )?;
    for chunk in chunks {
        send(
            exchange,
            json!({"type": "response.output_text.delta", "item_id": id, "output_index": index,
                   "content_index": 0, "delta": chunk}),
        )?;
        std::thread::sleep(pause);
    }
    let text = chunks.concat();
    send(
        exchange,
        json!({"type": "response.output_item.done", "output_index": index,
               "item": {"type": "message", "id": id, "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}}),
    )
}

/// A reasoning item whose summary and raw text stream as deltas, as
/// `protocols/codex/fake_responses_server.py` sends them.
fn streamed_reasoning(exchange: &mut Exchange) -> std::io::Result<()> {
    let id = "rs_1";
    send(
        exchange,
        json!({"type": "response.output_item.added", "output_index": 0,
               "item": {"type": "reasoning", "id": id, "summary": [], "content": []}}),
    )?;
    send(
        exchange,
        json!({"type": "response.reasoning_summary_part.added", "item_id": id, "output_index": 0,
               "summary_index": 0, "part": {"type": "summary_text", "text": ""}}),
    )?;
    for delta in STREAMED_SUMMARY {
        send(
            exchange,
            json!({"type": "response.reasoning_summary_text.delta", "item_id": id, "output_index": 0,
                   "summary_index": 0, "delta": delta}),
        )?;
        std::thread::sleep(Duration::from_millis(10));
    }
    let summary = STREAMED_SUMMARY.concat();
    send(
        exchange,
        json!({"type": "response.reasoning_summary_text.done", "item_id": id, "output_index": 0,
               "summary_index": 0, "text": summary}),
    )?;
    for delta in STREAMED_RAW {
        send(
            exchange,
            json!({"type": "response.reasoning_text.delta", "item_id": id, "output_index": 0,
                   "content_index": 0, "delta": delta}),
        )?;
    }
    send(
        exchange,
        json!({"type": "response.output_item.done", "output_index": 0,
               "item": {"type": "reasoning", "id": id,
                        "summary": [{"type": "summary_text", "text": summary}],
                        "content": [{"type": "reasoning_text", "text": STREAMED_RAW.concat()}],
                        "encrypted_content": null}}),
    )
}

/// The outputs of the tool calls a Responses request carries back to the model
/// (`function_call_output` items), in order.
pub fn tool_outputs(request: &Request) -> Vec<String> {
    let body = request.json().unwrap_or(Value::Null);
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| match &item["output"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

fn has_tool_output(request: &Request) -> bool {
    request
        .json()
        .and_then(|body| {
            body["input"].as_array().map(|items| {
                items
                    .iter()
                    .any(|item| item["type"] == "function_call_output")
            })
        })
        .unwrap_or(false)
}

/// Whichever shell tool Codex offered, with `command` in the arguments it expects.
fn shell_tool_call(request: &Request, command: &str) -> (String, String) {
    let offered: Vec<String> = request
        .json()
        .and_then(|body| {
            body["tools"].as_array().map(|tools| {
                tools
                    .iter()
                    .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
                    .collect()
            })
        })
        .unwrap_or_default();
    let name = ["exec_command", "shell_command", "shell"]
        .into_iter()
        .find(|name| offered.iter().any(|offered| offered == name))
        .unwrap_or("exec_command");
    let arguments = match name {
        "exec_command" => json!({"cmd": command}),
        "shell_command" => json!({"command": command}),
        _ => json!({"command": ["bash", "-lc", command]}),
    };
    (name.to_owned(), arguments.to_string())
}
