//! A minimal HTTP/1.1 server for fake model APIs in tests: tokio `TcpListener` on
//! 127.0.0.1:0, one request per connection (`Connection: close`), plain or chunked request
//! bodies, and responses that are either a whole body or a paced Server-Sent-Events stream
//! (which may also be cut off mid-stream, as a dropped connection).
//!
//! Every request is recorded, so a test can assert how many reached the server. The server
//! stops when dropped.
// benches/enter_to_request.rs includes this file by #[path] as well and uses only part of it.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// Requests larger than this are refused (a fake server needs no more).
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: String,
    pub path: String,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl HttpRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| value.as_str())
    }

    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }
}

/// One Server-Sent Event, written after `delay`.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub delay: Duration,
    pub data: String,
}

impl SseEvent {
    pub fn data(data: impl Into<String>) -> Self {
        Self {
            delay: Duration::ZERO,
            data: data.into(),
        }
    }

    pub fn after(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }
}

#[derive(Debug, Clone)]
pub enum Body {
    Bytes(Vec<u8>),
    /// `text/event-stream`, chunked; `complete: false` closes the connection after the last
    /// event without the terminating chunk (a dropped stream).
    Sse {
        events: Vec<SseEvent>,
        complete: bool,
    },
}

#[derive(Debug, Clone)]
pub struct HttpResponse {
    pub status: u16,
    pub content_type: String,
    pub body: Body,
}

impl HttpResponse {
    pub fn json(status: u16, value: &serde_json::Value) -> Self {
        Self {
            status,
            content_type: "application/json".into(),
            body: Body::Bytes(value.to_string().into_bytes()),
        }
    }

    pub fn sse(events: Vec<SseEvent>) -> Self {
        Self {
            status: 200,
            content_type: "text/event-stream".into(),
            body: Body::Sse {
                events,
                complete: true,
            },
        }
    }
}

pub type Handler = dyn Fn(&HttpRequest) -> HttpResponse + Send + Sync;

pub struct FakeHttpServer {
    port: u16,
    requests: Arc<Mutex<Vec<HttpRequest>>>,
    accept_task: JoinHandle<()>,
}

impl FakeHttpServer {
    /// Binds 127.0.0.1 on a free port and serves every request with `handler`.
    pub async fn start(
        handler: impl Fn(&HttpRequest) -> HttpResponse + Send + Sync + 'static,
    ) -> std::io::Result<FakeHttpServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let log = requests.clone();
        let accept_task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(serve_connection(stream, handler.clone(), log.clone()));
            }
        });
        Ok(FakeHttpServer {
            port,
            requests,
            accept_task,
        })
    }

    /// `http://127.0.0.1:PORT`
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<HttpRequest> {
        self.requests
            .lock()
            .map(|log| log.clone())
            .unwrap_or_default()
    }
}

impl Drop for FakeHttpServer {
    fn drop(&mut self) {
        self.accept_task.abort();
    }
}

async fn serve_connection(
    stream: TcpStream,
    handler: Arc<Handler>,
    log: Arc<Mutex<Vec<HttpRequest>>>,
) {
    let mut reader = BufReader::new(stream);
    let Ok(Some(request)) = read_request(&mut reader).await else {
        return;
    };
    if let Ok(mut log) = log.lock() {
        log.push(request.clone());
    }
    let response = handler(&request);
    let _ = write_response(reader.get_mut(), response).await;
}

async fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<Option<HttpRequest>> {
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).await? == 0 {
        return Ok(None);
    }
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
        return Ok(None);
    };
    let (method, path) = (method.to_owned(), path.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return Ok(None);
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let mut request = HttpRequest {
        method,
        path,
        headers,
        body: Vec::new(),
    };
    if request
        .header("transfer-encoding")
        .is_some_and(|value| value.eq_ignore_ascii_case("chunked"))
    {
        request.body = read_chunked(reader).await?;
    } else if let Some(length) = request
        .header("content-length")
        .and_then(|value| value.parse::<usize>().ok())
    {
        if length > MAX_BODY_BYTES {
            return Ok(None);
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).await?;
        request.body = body;
    }
    Ok(Some(request))
}

async fn read_chunked(reader: &mut BufReader<TcpStream>) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size_line = String::new();
        reader.read_line(&mut size_line).await?;
        let size_text = size_line.trim().split(';').next().unwrap_or_default();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| std::io::Error::other("bad chunk size"))?;
        if size == 0 {
            // Trailers (none expected), then the empty line.
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).await? == 0 || line.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(std::io::Error::other("request body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..]).await?;
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf).await?;
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

async fn write_response(stream: &mut TcpStream, response: HttpResponse) -> std::io::Result<()> {
    let head = |extra: &str| {
        format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nConnection: close\r\n{extra}\r\n",
            response.status,
            reason_phrase(response.status),
            response.content_type
        )
    };
    match &response.body {
        Body::Bytes(bytes) => {
            stream
                .write_all(head(&format!("Content-Length: {}\r\n", bytes.len())).as_bytes())
                .await?;
            stream.write_all(bytes).await?;
        }
        Body::Sse { events, complete } => {
            stream
                .write_all(
                    head("Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n").as_bytes(),
                )
                .await?;
            stream.flush().await?;
            for event in events {
                if !event.delay.is_zero() {
                    tokio::time::sleep(event.delay).await;
                }
                let payload = format!("data: {}\n\n", event.data);
                stream
                    .write_all(format!("{:x}\r\n{payload}\r\n", payload.len()).as_bytes())
                    .await?;
                stream.flush().await?;
            }
            if *complete {
                stream.write_all(b"0\r\n\r\n").await?;
            }
        }
    }
    stream.flush().await?;
    stream.shutdown().await
}
