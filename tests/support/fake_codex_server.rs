//! A fake OpenAI Responses API on 127.0.0.1 for running the real Codex CLI in tests, after
//! `protocols/codex/fake_responses_server.py`: `POST /v1/responses` answered with the SSE
//! events Codex builds its items from.
//!
//! [`shared`] holds the HTTP plumbing, which the Gemini fake server uses as well.
#![allow(dead_code)]

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
        pub method: String,
        pub path: String,
        pub body: Vec<u8>,
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

        /// Cuts the connection mid-answer.
        pub fn drop_connection(self) {
            let _ = self.stream.shutdown(std::net::Shutdown::Both);
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
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or_default().to_owned();
        let path = parts.next().unwrap_or_default().to_owned();
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
        let request = Request { method, path, body };
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
    /// Every request: HTTP 500.
    Http500,
}

pub const TEXT_REPLY: &str = "Hello from the fake server.";
pub const REASONING_SUMMARY: &str = "**Thinking about greeting**\n\nI should say hello.";
pub const REASONING_REPLY: &str = "After thinking: hello!";
pub const TOOL_REPLY: &str = "The command printed hi.";

/// Starts the fake Responses API for `scenario`.
pub fn start(scenario: CodexScenario) -> FakeServer {
    start_failing(scenario, |_| false)
}

/// Like [`start`], but a model request for which `fail` (given the text of its last user
/// message) says so is answered with HTTP 500 instead.
pub fn start_failing(
    scenario: CodexScenario,
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
        CodexScenario::Tool(command) if !has_tool_output(request) => {
            let (name, arguments) = shell_tool_call(request, command);
            send(
                exchange,
                json!({"type": "response.output_item.done", "output_index": 0,
                       "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1",
                                "name": name, "arguments": arguments, "status": "completed"}}),
            )?;
        }
        CodexScenario::Tool(_) => {
            text_message(exchange, &["The", " command", " printed", " hi", "."], 0)?;
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
        std::thread::sleep(Duration::from_millis(10));
    }
    let text = chunks.concat();
    send(
        exchange,
        json!({"type": "response.output_item.done", "output_index": index,
               "item": {"type": "message", "id": id, "role": "assistant", "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}]}}),
    )
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
