//! `agentty --resume` of a 10,000-block conversation (issue 18): the time to the first frame
//! and the peak memory, for a log in the current layout (raw lines in the compressed sidecar)
//! and for a log written before it (raw lines inline, ~100 MB of them). Resume reads only the
//! shared stream, so neither figure should follow the raw lines.
//!
//! Each run starts the release binary in tmux at 160x50 with `--provider demo --resume`, waits
//! for the status bar, and reads agentty's own "first frame drawn" log line (time since
//! `main`) and its VmHWM. Targets: first frame <= 150 ms, peak RSS <= 2x the transcript's text
//! + 30 MiB. Not a criterion bench (it needs a terminal); run: `cargo bench --bench resume`.

#[path = "support/tmux.rs"]
mod tmux;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use serde_json::json;
use tmux::{first_frame_ms, measuring_in_tmux, peak_rss_kib, Tmux};

const TMUX: Tmux = Tmux {
    socket: "agentty-bench-resume",
};
/// Four blocks a turn (thinking, tool call, tool output, answer): 2,500 turns = 10,000 blocks.
const TURNS: usize = 2500;
/// pi-like raw lines per turn and the answer text they grow to (two snapshots in each).
const RAW_LINES_PER_TURN: usize = 20;
const RAW_TEXT_PER_TURN: usize = 1000;

/// `--resume` reopens the last conversation of the working directory: the logs below record
/// `/`.
fn start(state: &Path) -> i32 {
    TMUX.start_agentty(state, "--resume", Some("/")).1
}

/// pi `message_update` lines of one turn: both cumulative snapshots in each.
fn raw_lines(turn: usize) -> Vec<String> {
    let step = RAW_TEXT_PER_TURN / RAW_LINES_PER_TURN;
    let words = "the parser tracks depth while it reads quoted strings; ".repeat(40);
    (1..=RAW_LINES_PER_TURN)
        .map(|index| {
            let text = &words[..index * step];
            let snapshot = json!({"role":"assistant","content":[{"type":"text","text":text}],"turn":turn});
            json!({"type":"message_update","assistantMessageEvent":{"type":"text_delta","delta":&text[text.len() - step..],"partial":snapshot},"message":snapshot}).to_string()
        })
        .collect()
}

/// Writes a 10,000-block conversation; raw lines inline (`old_layout`) or in a sidecar.
/// Returns the bytes of transcript text (prompts, thoughts, tool input and output, answers).
fn write_conversation(state: &Path, old_layout: bool) -> usize {
    let dir = state.join("sessions");
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("000000000000001-bench.jsonl");
    let mut file = std::io::BufWriter::new(std::fs::File::create(&log).unwrap());
    let mut sidecar = (!old_layout).then(|| {
        let file = std::fs::File::create(log.with_extension("raw.zst")).unwrap();
        zstd::stream::write::Encoder::new(std::io::BufWriter::new(file), 1).unwrap()
    });
    let mut text_bytes = 0;
    put(
        &mut file,
        json!({"kind":"header","version":1,"provider":"demo","started_at_ms":1,"cwd":"/"}),
    );
    for turn in 1..=TURNS {
        let prompt = format!("question {turn}: what does the parser do?");
        let thought = "Let me read the tokenizer, then the quoting rules. ".repeat(3);
        let output = "src/parser.rs:120: fn parse_quoted()\n".repeat(4);
        let answer = format!("## Answer {turn}\n\nThe parser **tracks depth**:\n\n- push\n- pop\n\n```rust\nfn parse() -> u32 {{ {turn} }}\n```\n");
        text_bytes += prompt.len() + thought.len() + output.len() + answer.len() + 16;
        put(
            &mut file,
            json!({"kind":"turn","turn":turn,"prompt":prompt}),
        );
        for raw in raw_lines(turn) {
            match &mut sidecar {
                Some(encoder) => {
                    writeln!(encoder, "{turn} 1 {}", raw.len()).unwrap();
                    writeln!(encoder, "{raw}").unwrap();
                }
                // As the previous release wrote them: the tag first (a `Value` sorts keys).
                None => writeln!(
                    file,
                    r#"{{"kind":"raw","turn":{turn},"attempt":1,"line":{}}}"#,
                    serde_json::Value::String(raw)
                )
                .unwrap(),
            }
        }
        let message = |message: serde_json::Value| json!({"kind":"message","turn":turn,"attempt":1,"message":message});
        put(
            &mut file,
            message(json!({"type":"assistant.thought","text":thought})),
        );
        put(
            &mut file,
            message(
                json!({"type":"tool.call","id":format!("c{turn}"),"name":"bash","input":{"command":"rg -n parse src/"}}),
            ),
        );
        put(
            &mut file,
            message(json!({"type":"tool.completed","id":format!("c{turn}"),"output":output})),
        );
        put(
            &mut file,
            message(json!({"type":"assistant","delta":answer})),
        );
        put(
            &mut file,
            message(json!({"type":"terminal.completed","stop_reason":"stop"})),
        );
        put(
            &mut file,
            json!({"kind":"turn_ended","turn":turn,"outcome":"completed"}),
        );
    }
    file.flush().unwrap();
    if let Some(encoder) = sidecar {
        encoder.finish().unwrap().flush().unwrap();
    }
    text_bytes
}

fn put(file: &mut impl Write, value: serde_json::Value) {
    writeln!(file, "{value}").unwrap();
}

fn files_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|entry| entry.metadata().unwrap().len())
        .sum()
}

fn main() {
    if !measuring_in_tmux() {
        return;
    }
    for (name, old_layout) in [
        ("current layout (raw lines in the sidecar)", false),
        ("previous release's layout (raw lines inline)", true),
    ] {
        let mut first_frames = Vec::new();
        let mut peaks = Vec::new();
        let mut text_bytes = 0;
        let mut log_bytes = 0;
        for _ in 0..5 {
            let state = tempfile::tempdir().unwrap();
            text_bytes = write_conversation(state.path(), old_layout);
            log_bytes = files_size(&state.path().join("sessions"));
            let pid = start(state.path());
            assert!(
                TMUX.wait_for_screen("idle", Duration::from_secs(30), Duration::from_millis(5))
                    .is_some(),
                "the resumed chat came up"
            );
            std::thread::sleep(Duration::from_millis(300));
            peaks.push(peak_rss_kib(pid));
            first_frames.push(first_frame_ms(state.path()).expect("first frame logged"));
            TMUX.kill_server();
        }
        first_frames.sort_by(f64::total_cmp);
        let peak = *peaks.iter().max().unwrap();
        let bound_kib = (2 * text_bytes as u64) / 1024 + 30 * 1024;
        println!(
            "resume, {name}: {TURNS} turns = {} blocks, transcript text {} KiB, session log {} KiB; \
             first frame median {:.1} ms (min {:.1}, max {:.1}; target <= 150 ms); \
             peak RSS {} KiB (max of 5: {peaks:?}; target <= 2x text + 30 MiB = {bound_kib} KiB: {})",
            TURNS * 4,
            text_bytes / 1024,
            log_bytes / 1024,
            first_frames[first_frames.len() / 2],
            first_frames[0],
            first_frames[first_frames.len() - 1],
            peak,
            if peak <= bound_kib { "met" } else { "missed" },
        );
    }
}
