//! A synthetic pi 0.73.1 `--mode json` stream for benchmarks: the shape of the real captures
//! (every `message_update` carries the cumulative `message` and `partial` snapshots), with the
//! assistant text growing to `total_text` bytes over `updates` deltas.
#![allow(dead_code)]

use serde_json::json;

pub fn pi_stream(total_text: usize, updates: usize) -> Vec<String> {
    let chunk_len = total_text / updates;
    let words = "lorem ipsum dolor sit amet, consectetur adipiscing elit; sed do eiusmod tempor. ";
    let usage = json!({"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,
        "cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}});
    let snapshot = |text: &str| {
        json!({"role":"assistant","content":[{"type":"text","text":text}],"api":"openai-completions",
            "provider":"fake","model":"plain","usage":usage,"stopReason":"stop",
            "timestamp":1795983776062u64,"responseId":"chatcmpl-fake-1"})
    };
    let mut lines = vec![
        json!({"type":"session","version":3,"id":"01a228f9-98fb-76ae-b8f6-b0c38dd67462",
            "timestamp":"2026-11-29T20:22:55.996Z","cwd":"/home/user/work"})
        .to_string(),
        r#"{"type":"agent_start"}"#.to_owned(),
        r#"{"type":"turn_start"}"#.to_owned(),
        json!({"type":"message_start","message":{"role":"user","content":[{"type":"text","text":"Write a lot."}],"timestamp":1795983776018u64}}).to_string(),
        json!({"type":"message_end","message":{"role":"user","content":[{"type":"text","text":"Write a lot."}],"timestamp":1795983776018u64}}).to_string(),
        json!({"type":"message_start","message":snapshot("")}).to_string(),
    ];
    let mut text = String::with_capacity(total_text);
    for index in 0..updates {
        let delta: String = words
            .chars()
            .cycle()
            .skip(index % words.len())
            .take(chunk_len)
            .collect();
        text.push_str(&delta);
        let event_type = if index == 0 {
            "text_start"
        } else {
            "text_delta"
        };
        let mut event = json!({"type":event_type,"contentIndex":0,"partial":snapshot(&text)});
        if index > 0 {
            event["delta"] = json!(delta);
        }
        lines.push(json!({"type":"message_update","assistantMessageEvent":event,"message":snapshot(&text)}).to_string());
    }
    lines.push(
        json!({"type":"message_update","assistantMessageEvent":{"type":"text_end","contentIndex":0,"content":text,"partial":snapshot(&text)},"message":snapshot(&text)})
            .to_string(),
    );
    lines.push(json!({"type":"message_end","message":snapshot(&text)}).to_string());
    lines.push(json!({"type":"turn_end","message":snapshot(&text),"toolResults":[]}).to_string());
    lines.push(json!({"type":"agent_end","messages":[snapshot(&text)]}).to_string());
    lines
}
