//! A fake Anthropic Messages API on 127.0.0.1, for running the real Claude Code CLI in tests.
//!
//! It answers what Claude Code 2.1.197 asks for (as the fake server of the Claude protocol notes does,
//! which recorded the captures): the `HEAD /` preconnect, `POST /v1/messages?beta=true` as a
//! chunked SSE stream (`message_start`, `content_block_*` for text / thinking + signature /
//! tool_use + `input_json_delta`, `message_delta`, `message_stop`) or as plain JSON when the
//! request does not stream, `count_tokens`, and `GET /v1/models`. Only requests that carry
//! `tools` are the conversation ("main" requests); the others get a short "ok".
//! Every request is logged for the test to inspect. Keep-alive connections are served until
//! the client closes them; the server stops when dropped.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What the main (tool-carrying) requests get.
#[derive(Debug, Clone)]
pub enum Scenario {
    /// A text reply in several deltas that echoes the prompt and the message count.
    Text,
    /// A thinking block (deltas and a signature), then a text block.
    Thinking,
    /// A Bash tool call running `command`; once the tool result is sent, a closing text.
    Tool { command: String },
    /// Always this HTTP error status.
    Error { status: u16 },
    /// This text a word at a time, with `pause` after each word.
    Say { text: String, pause: Duration },
    /// Streamed: `text`'s first `words` words, then the connection drops (no `message_stop`).
    /// Not streamed (a client's fallback): the whole text.
    Cut { text: String, words: usize },
    /// The tool calls (`name`, `input`) of each model request of the agent's loop, in order
    /// (the request's place is how many assistant messages its conversation holds), then
    /// "All done."; a sub-agent's requests (their first user message holds [`SUB_AGENT`])
    /// follow `sub_agent` the same way.
    Script {
        main: Vec<Vec<(String, Value)>>,
        sub_agent: Vec<Vec<(String, Value)>>,
    },
}

/// The word a sub-agent's prompt carries for [`Scenario::Script`].
pub const SUB_AGENT: &str = "SUBAGENT";

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct RequestRecord {
    pub method: String,
    pub path: String,
    /// The request carried `tools`: it is the conversation, not an auxiliary call.
    pub main: bool,
    pub stream: bool,
    pub retry_count: Option<String>,
    /// The request body (`Null` when it was not JSON).
    pub body: Value,
    /// When the request had been read (to time a CLI's start-up from outside).
    pub received_at: std::time::Instant,
}

impl RequestRecord {
    /// The text of each user message, in order (a message of several text blocks gives their
    /// texts joined by newlines; tool results and images are left out).
    pub fn user_texts(&self) -> Vec<String> {
        self.body["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|message| message["role"] == "user")
            .map(|message| match &message["content"] {
                Value::String(text) => text.clone(),
                content => content
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|block| block["type"] == "text")
                    .filter_map(|block| block["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            })
            .collect()
    }
}

impl RequestRecord {
    /// The tool results (`tool_result` blocks) of the last message, as text, in order.
    pub fn tool_results(&self) -> Vec<String> {
        let Some(last) = self.body["messages"].as_array().and_then(|m| m.last()) else {
            return Vec::new();
        };
        last["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|block| block["type"] == "tool_result")
            .map(|block| match &block["content"] {
                Value::String(text) => text.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
                other => other.to_string(),
            })
            .collect()
    }
}

/// The environment that points Claude Code (or the Claude ACP adapter, which runs it) at the
/// fake server at `base_url`, with a throwaway `home`, telemetry and non-essential traffic off.
pub fn cli_env(
    base_url: &str,
    home: &std::path::Path,
) -> std::collections::BTreeMap<String, String> {
    let home = home.to_string_lossy().into_owned();
    [
        ("ANTHROPIC_BASE_URL", base_url.to_owned()),
        ("ANTHROPIC_API_KEY", "sk-ant-fake-key".to_owned()),
        ("CLAUDE_CONFIG_DIR", format!("{home}/.claude")),
        ("HOME", home),
        ("DISABLE_TELEMETRY", "1".to_owned()),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1".to_owned()),
        ("DISABLE_AUTOUPDATER", "1".to_owned()),
        ("DISABLE_ERROR_REPORTING", "1".to_owned()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value))
    .collect()
}

/// Decides, from the text of its last user message, whether a main request fails with HTTP 500.
type FailRule = dyn Fn(&str) -> bool + Send + Sync;
/// Chooses, from the text of its last user message, what a main request gets.
type ChooseRule = dyn Fn(&str) -> Scenario + Send + Sync;

pub struct FakeAnthropic {
    pub base_url: String,
    requests: Arc<Mutex<Vec<RequestRecord>>>,
    accept_loop: JoinHandle<()>,
}

impl Drop for FakeAnthropic {
    fn drop(&mut self) {
        self.accept_loop.abort();
    }
}

impl FakeAnthropic {
    pub async fn start(scenario: Scenario) -> FakeAnthropic {
        Self::start_failing(scenario, |_| false).await
    }

    /// Like [`FakeAnthropic::start`], but a main request for which `fail` (given the text of
    /// its last user message) says so is answered with HTTP 500 instead.
    pub async fn start_failing(
        scenario: Scenario,
        fail: impl Fn(&str) -> bool + Send + Sync + 'static,
    ) -> FakeAnthropic {
        Self::serve(Box::new(move |_| scenario.clone()), Box::new(fail)).await
    }

    /// Like [`FakeAnthropic::start`], but the scenario of each main request is chosen by
    /// `choose` from the text of its last user message (several turns of one conversation,
    /// each with its own scenario).
    pub async fn start_choosing(
        choose: impl Fn(&str) -> Scenario + Send + Sync + 'static,
    ) -> FakeAnthropic {
        Self::serve(Box::new(choose), Box::new(|_| false)).await
    }

    async fn serve(choose: Box<ChooseRule>, fail: Box<FailRule>) -> FakeAnthropic {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("local address").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let server = Arc::new(Server {
            choose,
            requests: requests.clone(),
            fail,
        });
        let accept_loop = tokio::spawn(async move {
            while let Ok((connection, _)) = listener.accept().await {
                tokio::spawn(server.clone().serve(connection));
            }
        });
        FakeAnthropic {
            base_url: format!("http://127.0.0.1:{port}"),
            requests,
            accept_loop,
        }
    }

    pub fn requests(&self) -> Vec<RequestRecord> {
        self.requests.lock().expect("request log").clone()
    }

    /// `POST /v1/messages` requests (main or auxiliary).
    pub fn message_requests(&self) -> Vec<RequestRecord> {
        self.requests()
            .into_iter()
            .filter(|request| {
                request.method == "POST" && request.path.split('?').next() == Some("/v1/messages")
            })
            .collect()
    }
}

struct Server {
    choose: Box<ChooseRule>,
    requests: Arc<Mutex<Vec<RequestRecord>>>,
    fail: Box<FailRule>,
}

struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Bounds for a test server that must not be made to allocate without limit.
const MAX_HEADER_LINES: usize = 200;
const MAX_BODY: usize = 64 * 1024 * 1024;
const DELTA_PAUSE: Duration = Duration::from_millis(20);

impl Server {
    async fn serve(self: Arc<Self>, connection: TcpStream) {
        let (reader, mut writer) = connection.into_split();
        let mut reader = BufReader::new(reader);
        while let Some(request) = read_request(&mut reader).await {
            let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let main = body["tools"]
                .as_array()
                .is_some_and(|tools| !tools.is_empty());
            let stream = body["stream"].as_bool().unwrap_or(false);
            self.requests
                .lock()
                .expect("request log")
                .push(RequestRecord {
                    method: request.method.clone(),
                    path: request.path.clone(),
                    main,
                    stream,
                    retry_count: request.header("x-stainless-retry-count").map(str::to_owned),
                    body: body.clone(),
                    received_at: std::time::Instant::now(),
                });
            let close = request
                .header("connection")
                .is_some_and(|value| value.eq_ignore_ascii_case("close"));
            if self
                .respond(&mut writer, &request, &body, main, stream)
                .await
                .is_err()
                || close
            {
                return;
            }
        }
    }

    async fn respond(
        &self,
        writer: &mut (impl AsyncWriteExt + Unpin),
        request: &Request,
        body: &Value,
        main: bool,
        stream: bool,
    ) -> std::io::Result<()> {
        let path = request.path.split('?').next().unwrap_or_default();
        match request.method.as_str() {
            "HEAD" => return write_response(writer, 200, "", b"").await,
            "GET" if path.starts_with("/v1/models") => {
                let models =
                    json!({"data": [], "has_more": false, "first_id": null, "last_id": null});
                return write_json(writer, 200, &models).await;
            }
            "POST" if path.ends_with("/count_tokens") => {
                return write_json(writer, 200, &json!({"input_tokens": 1234})).await;
            }
            "POST" if path == "/v1/messages" => {}
            _ => {
                let error = json!({"type": "error", "error": {"type": "not_found_error", "message": format!("fake: no route {path}")}});
                return write_json(writer, 404, &error).await;
            }
        }
        let model = body["model"].as_str().unwrap_or("claude-fake").to_owned();
        if !main {
            let reply = Reply::text(vec!["ok".into()]);
            return reply.send(writer, &model, stream).await;
        }
        if (self.fail)(&last_user_text(body)) {
            let error = json!({"type": "error", "error": {"type": "api_error", "message": "fake HTTP 500 (flaky)"}});
            return write_json(writer, 500, &error).await;
        }
        let reply = match &(self.choose)(&last_user_text(body)) {
            Scenario::Error { status } => {
                let error = json!({"type": "error", "error": {"type": error_type(*status), "message": format!("fake HTTP {status}")}});
                return write_json(writer, *status, &error).await;
            }
            Scenario::Text => {
                let text = format!(
                    "Hello from the fake server. You said: '{}'. messages={}.",
                    last_user_text(body),
                    body["messages"].as_array().map_or(0, Vec::len)
                );
                Reply::text(word_chunks(&text))
            }
            Scenario::Thinking => Reply {
                blocks: vec![
                    Block::Thinking(vec![
                        "Let me think".into(),
                        " about this".into(),
                        " carefully.".into(),
                    ]),
                    Block::Text(word_chunks("After thinking: the answer is 42.")),
                ],
                stop_reason: "end_turn",
                pause: DELTA_PAUSE,
                cut_after: None,
            },
            Scenario::Tool { command } => match tool_result_text(body) {
                None => Reply {
                    blocks: vec![
                        Block::Text(vec!["I'll run".into(), " a command.".into()]),
                        Block::ToolUse {
                            id: format!("toolu_fake_{}", uuid::Uuid::new_v4().simple()),
                            name: "Bash".into(),
                            input: json!({"command": command, "description": "fake tool call"}),
                        },
                    ],
                    stop_reason: "tool_use",
                    pause: DELTA_PAUSE,
                    cut_after: None,
                },
                Some(output) => Reply::text(word_chunks(&format!(
                    "The command printed: {}. Done.",
                    output.trim()
                ))),
            },
            Scenario::Say { text, pause } => Reply {
                blocks: vec![Block::Text(
                    text.split_inclusive(' ').map(str::to_owned).collect(),
                )],
                stop_reason: "end_turn",
                pause: *pause,
                cut_after: None,
            },
            Scenario::Cut { text, words } => Reply {
                cut_after: Some(*words),
                ..Reply::text(text.split_inclusive(' ').map(str::to_owned).collect())
            },
            Scenario::Script { main, sub_agent } => {
                let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
                let first_user = messages
                    .iter()
                    .find(|message| message["role"] == "user")
                    .map(|message| message["content"].to_string())
                    .unwrap_or_default();
                let steps = if first_user.contains(SUB_AGENT) {
                    sub_agent
                } else {
                    main
                };
                let step = messages
                    .iter()
                    .filter(|message| message["role"] == "assistant")
                    .count();
                match steps.get(step) {
                    Some(calls) => Reply {
                        blocks: calls
                            .iter()
                            .map(|(name, input)| Block::ToolUse {
                                id: format!("toolu_fake_{}", uuid::Uuid::new_v4().simple()),
                                name: name.clone(),
                                input: input.clone(),
                            })
                            .collect(),
                        stop_reason: "tool_use",
                        pause: DELTA_PAUSE,
                        cut_after: None,
                    },
                    None => Reply::text(word_chunks("All done.")),
                }
            }
        };
        reply.send(writer, &model, stream).await
    }
}

enum Block {
    Text(Vec<String>),
    Thinking(Vec<String>),
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
}

struct Reply {
    blocks: Vec<Block>,
    stop_reason: &'static str,
    /// Before each delta.
    pause: Duration,
    /// Streamed, the connection drops after this many deltas.
    cut_after: Option<usize>,
}

impl Reply {
    fn text(pieces: Vec<String>) -> Reply {
        Reply {
            blocks: vec![Block::Text(pieces)],
            stop_reason: "end_turn",
            pause: DELTA_PAUSE,
            cut_after: None,
        }
    }

    async fn send(
        &self,
        writer: &mut (impl AsyncWriteExt + Unpin),
        model: &str,
        stream: bool,
    ) -> std::io::Result<()> {
        let id = format!("msg_fake_{}", uuid::Uuid::new_v4().simple());
        if !stream {
            return write_json(writer, 200, &self.whole_message(&id, model)).await;
        }
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
                    transfer-encoding: chunked\r\nrequest-id: req_fake\r\n\r\n";
        writer.write_all(head.as_bytes()).await?;
        let usage = json!({"input_tokens": 1234, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1});
        let start = json!({"message": {"id": id, "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null, "usage": usage}});
        send_event(writer, "message_start", start).await?;
        for (index, block) in self.blocks.iter().enumerate() {
            let (start_block, deltas) = match block {
                Block::Text(pieces) => (
                    json!({"type": "text", "text": ""}),
                    pieces
                        .iter()
                        .map(|piece| json!({"type": "text_delta", "text": piece}))
                        .collect(),
                ),
                Block::Thinking(pieces) => {
                    let mut deltas: Vec<Value> = pieces
                        .iter()
                        .map(|piece| json!({"type": "thinking_delta", "thinking": piece}))
                        .collect();
                    deltas.push(
                        json!({"type": "signature_delta", "signature": "ZmFrZS1zaWduYXR1cmU="}),
                    );
                    (
                        json!({"type": "thinking", "thinking": "", "signature": ""}),
                        deltas,
                    )
                }
                Block::ToolUse { id, name, input } => {
                    let input = input.to_string();
                    let step = (input.len() / 3).max(1);
                    let deltas = input
                        .as_bytes()
                        .chunks(step)
                        .map(|part| json!({"type": "input_json_delta", "partial_json": String::from_utf8_lossy(part)}))
                        .collect();
                    (
                        json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                        deltas,
                    )
                }
            };
            send_event(
                writer,
                "content_block_start",
                json!({"index": index, "content_block": start_block}),
            )
            .await?;
            for (sent, delta) in deltas.into_iter().enumerate() {
                if self.cut_after == Some(sent) {
                    writer.flush().await?;
                    return Err(std::io::Error::other("fake: stream cut"));
                }
                tokio::time::sleep(self.pause).await;
                send_event(
                    writer,
                    "content_block_delta",
                    json!({"index": index, "delta": delta}),
                )
                .await?;
            }
            send_event(writer, "content_block_stop", json!({"index": index})).await?;
        }
        let end = json!({"delta": {"stop_reason": self.stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 25}});
        send_event(writer, "message_delta", end).await?;
        send_event(writer, "message_stop", json!({})).await?;
        writer.write_all(b"0\r\n\r\n").await?;
        writer.flush().await
    }

    fn whole_message(&self, id: &str, model: &str) -> Value {
        let content: Vec<Value> = self
            .blocks
            .iter()
            .map(|block| match block {
                Block::Text(pieces) => json!({"type": "text", "text": pieces.concat()}),
                Block::Thinking(pieces) => {
                    json!({"type": "thinking", "thinking": pieces.concat(), "signature": "ZmFrZS1zaWduYXR1cmU="})
                }
                Block::ToolUse { id, name, input } => {
                    json!({"type": "tool_use", "id": id, "name": name, "input": input})
                }
            })
            .collect();
        json!({"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
            "stop_reason": self.stop_reason, "stop_sequence": null,
            "usage": {"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}})
    }
}

fn error_type(status: u16) -> &'static str {
    match status {
        401 => "authentication_error",
        429 => "rate_limit_error",
        529 => "overloaded_error",
        400..=499 => "invalid_request_error",
        _ => "api_error",
    }
}

/// The text of the last user message, leaving out the CLI's `<system-reminder>` blocks.
fn last_user_text(body: &Value) -> String {
    let messages = body["messages"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    for message in messages
        .iter()
        .rev()
        .filter(|message| message["role"] == "user")
    {
        if let Some(text) = message["content"].as_str() {
            return text.to_owned();
        }
        let texts: Vec<&str> = message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|block| block["type"] == "text")
            .filter_map(|block| block["text"].as_str())
            .filter(|text| !text.trim_start().starts_with("<system-reminder>"))
            .collect();
        if let Some(last) = texts.last() {
            return (*last).to_owned();
        }
    }
    String::new()
}

/// The tool result in the last message, if the last message carries one.
fn tool_result_text(body: &Value) -> Option<String> {
    let last = body["messages"].as_array()?.last()?;
    let result = last["content"]
        .as_array()?
        .iter()
        .find(|block| block["type"] == "tool_result")?;
    Some(match &result["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    })
}

/// Three words per delta, the way the recorded fake server chunked its replies.
fn word_chunks(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split(' ').collect();
    words
        .chunks(3)
        .enumerate()
        .map(|(index, chunk)| {
            let piece = chunk.join(" ");
            if index == 0 {
                piece
            } else {
                format!(" {piece}")
            }
        })
        .collect()
}

async fn send_event(
    writer: &mut (impl AsyncWriteExt + Unpin),
    kind: &str,
    mut data: Value,
) -> std::io::Result<()> {
    data["type"] = json!(kind);
    let event = format!("event: {kind}\ndata: {data}\n\n");
    let chunk = format!("{:x}\r\n{event}\r\n", event.len());
    writer.write_all(chunk.as_bytes()).await?;
    writer.flush().await
}

async fn write_json(
    writer: &mut (impl AsyncWriteExt + Unpin),
    status: u16,
    body: &Value,
) -> std::io::Result<()> {
    write_response(
        writer,
        status,
        "application/json",
        body.to_string().as_bytes(),
    )
    .await
}

async fn write_response(
    writer: &mut (impl AsyncWriteExt + Unpin),
    status: u16,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        404 => "Not Found",
        _ => "Error",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-length: {}\r\nrequest-id: req_fake\r\n",
        body.len()
    );
    if !content_type.is_empty() {
        head.push_str(&format!("content-type: {content_type}\r\n"));
    }
    head.push_str("\r\n");
    writer.write_all(head.as_bytes()).await?;
    writer.write_all(body).await?;
    writer.flush().await
}

/// Reads one HTTP/1.1 request; `None` when the client closed the connection or sent junk.
async fn read_request(reader: &mut (impl AsyncBufReadExt + Unpin)) -> Option<Request> {
    let mut line = String::new();
    if reader.read_line(&mut line).await.ok()? == 0 {
        return None;
    }
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    for _ in 0..MAX_HEADER_LINES {
        line.clear();
        if reader.read_line(&mut line).await.ok()? == 0 {
            return None;
        }
        let header = line.trim_end();
        if header.is_empty() {
            let body = read_body(reader, &headers).await?;
            return Some(Request {
                method,
                path,
                headers,
                body,
            });
        }
        let (name, value) = header.split_once(':')?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
    }
    None
}

async fn read_body(
    reader: &mut (impl AsyncBufReadExt + Unpin),
    headers: &[(String, String)],
) -> Option<Vec<u8>> {
    let header = |name: &str| {
        headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    };
    if header("transfer-encoding").is_some_and(|value| value.eq_ignore_ascii_case("chunked")) {
        let mut body = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            reader.read_line(&mut line).await.ok()?;
            let size = usize::from_str_radix(line.trim().split(';').next()?, 16).ok()?;
            if body.len() + size > MAX_BODY {
                return None;
            }
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).await.ok()?;
            if size == 0 {
                return Some(body);
            }
            body.extend_from_slice(&chunk[..size]);
        }
    }
    let length: usize = header("content-length").map_or(Some(0), |value| value.parse().ok())?;
    if length > MAX_BODY {
        return None;
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).await.ok()?;
    Some(body)
}
