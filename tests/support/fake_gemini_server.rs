//! A fake Gemini API (`v1beta`) on 127.0.0.1 for running the real Gemini CLI in tests, after
//! `protocols/gemini/fake_gemini_server.py`: `…:streamGenerateContent?alt=sse` answered per
//! scenario, side calls (`…:generateContent`, which ask for JSON by schema) answered with a
//! value filled from the schema, `…:countTokens` with a count. Built on the HTTP plumbing in
//! `fake_codex_server::shared`.

use std::time::Duration;

use serde_json::{json, Map, Value};

use super::fake_codex_server::shared::{Exchange, FakeServer, Request};

/// What the fake Gemini API streams for the main turn.
#[derive(Debug, Clone)]
pub enum GeminiScenario {
    Text,
    /// Thought parts, then text (stream-json drops the thoughts).
    Reasoning,
    /// First a `run_shell_command` call with this command, then (once the function response
    /// comes back) text.
    Tool(String),
    /// Every streamed request: HTTP 500.
    Http500,
    /// A few text parts, then the connection is cut, on every request.
    Drop,
    /// This text a word at a time, with `pause` after each word.
    Say {
        text: String,
        pause: Duration,
    },
}

pub const TEXT_REPLY: &str = "Hello from the fake Gemini.";
pub const REASONING_REPLY: &str = "After thinking: hello!";
pub const TOOL_PREAMBLE: &str = "I'll run it.";
pub const TOOL_REPLY: &str = "The command printed hi.";
pub const DROPPED_PARTIAL: &str = "Partial answer before drop";

/// The path part of streamed turn requests.
pub const STREAM_PATH: &str = ":streamGenerateContent";

/// Writes `<home>/.gemini/settings.json` for running Gemini CLI against the fake server: API-key
/// auth, no update checks, statistics or telemetry; `max_attempts` is the CLI's own retry bound
/// (`general.maxAttempts`; the CLI's default is 10).
pub fn write_cli_settings(home: &std::path::Path, max_attempts: Option<u32>) {
    let mut general = json!({"enableAutoUpdate": false, "enableAutoUpdateNotification": false});
    if let Some(max_attempts) = max_attempts {
        general["maxAttempts"] = json!(max_attempts);
    }
    let settings = json!({
        "general": general,
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "security": {"auth": {"selectedType": "gemini-api-key"}},
    });
    std::fs::create_dir_all(home.join(".gemini")).expect("create ~/.gemini");
    std::fs::write(home.join(".gemini/settings.json"), settings.to_string())
        .expect("write settings.json");
}

pub fn start(scenario: GeminiScenario) -> FakeServer {
    start_failing(scenario, |_| false)
}

/// Like [`start`], but the scenario of each streamed turn request is chosen by `choose` from
/// the text of its last user content (several turns of one conversation, each with its own
/// scenario).
pub fn start_choosing(
    choose: impl Fn(&str) -> GeminiScenario + Send + Sync + 'static,
) -> FakeServer {
    serve(
        move |request| choose(user_texts(request).last().map_or("", String::as_str)),
        |_| false,
    )
}

/// Like [`start`], but a streamed turn request for which `fail` (given the text of its last
/// user content) says so is answered with HTTP 500 instead.
pub fn start_failing(
    scenario: GeminiScenario,
    fail: impl Fn(&str) -> bool + Send + Sync + 'static,
) -> FakeServer {
    serve(move |_| scenario.clone(), fail)
}

fn serve(
    scenario_for: impl Fn(&Request) -> GeminiScenario + Send + Sync + 'static,
    fail: impl Fn(&str) -> bool + Send + Sync + 'static,
) -> FakeServer {
    FakeServer::start(move |request, _index, exchange| {
        let flaky = || {
            user_texts(request)
                .last()
                .is_some_and(|text| fail(text.as_str()))
        };
        if request.path.contains(":countTokens") {
            exchange.json(200, &json!({"totalTokens": 10}));
            return;
        } else if request.path.contains(":generateContent") {
            side_call(request, exchange);
            return;
        } else if !request.path.contains(STREAM_PATH) {
            exchange.json(
                404,
                &json!({"error": {"code": 404, "message": "unknown path (fake)", "status": "NOT_FOUND"}}),
            );
            return;
        }
        let scenario = scenario_for(request);
        if matches!(scenario, GeminiScenario::Http500) || flaky() {
            exchange.json(
                500,
                &json!({"error": {"code": 500, "message": "fake internal error", "status": "INTERNAL"}}),
            );
        } else {
            exchange.start_events();
            // A write error means the CLI went away (stopped): nothing more to send.
            let _ = stream(&scenario, request, exchange);
        }
    })
}

fn stream(
    scenario: &GeminiScenario,
    request: &Request,
    exchange: &mut Exchange,
) -> std::io::Result<()> {
    match scenario {
        GeminiScenario::Text => text_parts(
            exchange,
            &["Hello", " from", " the", " fake", " Gemini", "."],
        ),
        GeminiScenario::Reasoning => {
            for thought in ["**Thinking about greeting**\n\n", "I should", " say hello."] {
                exchange.event(
                    None,
                    &chunk(json!([{"text": thought, "thought": true}]), None),
                )?;
            }
            text_parts(exchange, &["After", " thinking:", " hello", "!"])
        }
        GeminiScenario::Tool(command) if !has_function_response(request) => {
            exchange.event(None, &chunk(json!([{"text": TOOL_PREAMBLE}]), None))?;
            exchange.event(
                None,
                &chunk(
                    json!([{"functionCall": {"name": "run_shell_command",
                                             "args": {"command": command, "description": "run it"}}}]),
                    Some("STOP"),
                ),
            )
        }
        GeminiScenario::Tool(_) => {
            text_parts(exchange, &["The", " command", " printed", " hi", "."])
        }
        GeminiScenario::Drop => {
            for part in ["Partial", " answer", " before", " drop"] {
                exchange.event(None, &chunk(json!([{ "text": part }]), None))?;
                std::thread::sleep(Duration::from_millis(30));
            }
            Err(std::io::Error::other("connection cut by the scenario"))
        }
        GeminiScenario::Say { text, pause } => {
            let words: Vec<&str> = text.split_inclusive(' ').collect();
            for (index, word) in words.iter().enumerate() {
                let last = index + 1 == words.len();
                exchange.event(
                    None,
                    &chunk(json!([{ "text": word }]), last.then_some("STOP")),
                )?;
                std::thread::sleep(*pause);
            }
            Ok(())
        }
        GeminiScenario::Http500 => Ok(()),
    }
}

/// The text of each user content of a Gemini request (`contents` of role `user` that carry
/// text; function responses are left out), in order; several text parts are joined by
/// newlines.
pub fn user_texts(request: &Request) -> Vec<String> {
    let body = request.json().unwrap_or(Value::Null);
    body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|content| content["role"] == "user")
        .filter_map(|content| {
            let texts: Vec<&str> = content["parts"]
                .as_array()?
                .iter()
                .filter_map(|part| part["text"].as_str())
                .collect();
            (!texts.is_empty()).then(|| texts.join("\n"))
        })
        .collect()
}

fn text_parts(exchange: &mut Exchange, parts: &[&str]) -> std::io::Result<()> {
    for (index, part) in parts.iter().enumerate() {
        let last = index + 1 == parts.len();
        exchange.event(
            None,
            &chunk(json!([{ "text": part }]), last.then_some("STOP")),
        )?;
        std::thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// One streamed `GenerateContentResponse`; the last one carries the finish reason and usage.
fn chunk(parts: Value, finish: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    let mut response = json!({"modelVersion": "fake-gemini", "responseId": "fake-resp-1"});
    if let Some(finish) = finish {
        candidate["finishReason"] = json!(finish);
        response["usageMetadata"] =
            json!({"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15});
    }
    response["candidates"] = json!([candidate]);
    response
}

/// The function responses a Gemini request carries back to the model (`functionResponse`
/// parts, as JSON text), in order.
pub fn function_responses(request: &Request) -> Vec<String> {
    let body = request.json().unwrap_or(Value::Null);
    body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|content| content["parts"].as_array())
        .flatten()
        .filter_map(|part| part.get("functionResponse"))
        .map(Value::to_string)
        .collect()
}

fn has_function_response(request: &Request) -> bool {
    request
        .json()
        .and_then(|body| {
            body["contents"].as_array().map(|contents| {
                contents.iter().any(|content| {
                    content["parts"].as_array().is_some_and(|parts| {
                        parts
                            .iter()
                            .any(|part| part.get("functionResponse").is_some())
                    })
                })
            })
        })
        .unwrap_or(false)
}

/// Side calls (model router, next-speaker check, ...) ask for JSON by schema: answer with a
/// value filled from it, else with plain text.
fn side_call(request: &Request, exchange: &mut Exchange) {
    let body = request.json().unwrap_or(Value::Null);
    let config = &body["generationConfig"];
    let schema = config
        .get("responseJsonSchema")
        .or_else(|| config.get("responseSchema"));
    let text = schema.map_or_else(|| "ok".to_owned(), |schema| fill(schema, None).to_string());
    exchange.json(200, &chunk(json!([{ "text": text }]), Some("STOP")));
}

fn fill(schema: &Value, key: Option<&str>) -> Value {
    if let Some(choices) = schema["enum"].as_array() {
        let user = json!("user");
        if key == Some("next_speaker") && choices.contains(&user) {
            return user;
        }
        return choices.first().cloned().unwrap_or(Value::Null);
    }
    match schema["type"]
        .as_str()
        .unwrap_or("")
        .to_ascii_uppercase()
        .as_str()
    {
        "OBJECT" => Value::Object(
            schema["properties"]
                .as_object()
                .map(|properties| {
                    properties
                        .iter()
                        .map(|(name, property)| (name.clone(), fill(property, Some(name))))
                        .collect::<Map<String, Value>>()
                })
                .unwrap_or_default(),
        ),
        "ARRAY" => json!([]),
        "INTEGER" | "NUMBER" => json!(10),
        "BOOLEAN" => json!(false),
        _ if key == Some("next_speaker") => json!("user"),
        _ => json!("fake"),
    }
}
