//! Rendering cost must be flat in the transcript's length (issue: performance).
//!
//! App states with 10, 1,000 and 10,000 transcript blocks (markdown with code, thinking, tool
//! calls with output, user prompts; about 4 MiB of text at the largest), drawn at 200x60 on
//! ratatui's TestBackend. Measured: (a) one appended delta + frame, (b) one keystroke + frame,
//! (c) a full redraw after a resize; and streaming one 200 KiB markdown answer in 5,000 deltas
//! (time per delta + frame on an empty screen, on a full screen early on, and at the end). Also
//! prints the RSS growth of the
//! 10,000-block state against its text size.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

use agentty::app::state::{AppState, StartupInfo};
use agentty::orchestrator::{OrchestratorEvent, TurnOutcome};
use agentty::stream::AgentMessage;
use agentty::view::{self, ChatView};

struct Chat {
    state: AppState,
    view: ChatView,
    terminal: Terminal<TestBackend>,
    now: Instant,
    turn: u64,
    text_bytes: usize,
}

impl Chat {
    fn new() -> Self {
        Self {
            state: AppState::new(StartupInfo {
                provider: "demo".into(),
                ..StartupInfo::default()
            }),
            view: ChatView::default(),
            terminal: Terminal::new(TestBackend::new(200, 60)).unwrap(),
            now: Instant::now(),
            turn: 0,
            text_bytes: 0,
        }
    }

    fn event(&mut self, event: OrchestratorEvent) {
        self.state.on_orchestrator_event(event, self.now);
    }

    fn message(&mut self, message: AgentMessage) {
        let turn = self.turn;
        self.event(OrchestratorEvent::Message {
            turn,
            attempt: 1,
            message,
        });
    }

    fn start_turn(&mut self, prompt: &str) {
        self.turn += 1;
        self.text_bytes += prompt.len();
        let turn = self.turn;
        self.event(OrchestratorEvent::TurnStarted {
            turn,
            prompt: prompt.into(),
        });
        self.event(OrchestratorEvent::AttemptStarted {
            turn,
            attempt: 1,
            max_attempts: 1,
        });
    }

    fn delta(&mut self, text: &str) {
        self.text_bytes += text.len();
        self.message(AgentMessage::Assistant { delta: text.into() });
    }

    fn end_turn(&mut self) {
        self.message(AgentMessage::Completed {
            stop_reason: "stop".into(),
            usage: None,
        });
        let turn = self.turn;
        self.event(OrchestratorEvent::TurnEnded {
            turn,
            outcome: TurnOutcome::Completed,
        });
    }

    /// One turn of four blocks: prompt, thinking, a tool call with output, a markdown answer.
    fn add_turn(&mut self, index: usize) {
        self.start_turn(&format!(
            "question {index}: how does the parser handle nested quotes?"
        ));
        let thought = "Let me look at the tokenizer first, then the quoting rules. ".repeat(3);
        self.text_bytes += thought.len();
        self.message(AgentMessage::Thought { text: thought });
        let id = format!("call_{index}");
        let output = "src/parser.rs:120: fn parse_quoted(&mut self) -> Result<Token>\n".repeat(4);
        self.text_bytes += output.len();
        self.message(AgentMessage::ToolCall {
            id: id.clone(),
            name: "bash".into(),
            input: json!({"command": "rg -n parse_quoted src/"}),
            parent_id: None,
        });
        self.message(AgentMessage::ToolCompleted { id, output });
        self.delta(&format!(
            "## Answer {index}\n\nThe parser **tracks depth** in `parse_quoted`; each nested quote \
             pushes a frame:\n\n- opening quote: push\n- closing quote: pop\n\n```rust\nfn \
             parse_quoted(&mut self) -> Result<Token> {{\n    let depth = self.depth + 1;\n    \
             Ok(Token::Quoted(depth))\n}}\n```\n\nThat keeps it linear in the input.\n\n{}\n",
            "A longer explanation follows, as real answers have: the tokenizer hands the parser \
             one token at a time, and quoting only changes how the next token is read. "
                .repeat(6)
        ));
        self.end_turn();
    }

    fn with_blocks(blocks: usize) -> Self {
        let mut chat = Self::new();
        for index in 0..blocks.div_ceil(4) {
            chat.add_turn(index);
        }
        chat.start_turn("tail question");
        chat.delta("streaming tail");
        chat.draw();
        chat
    }

    fn draw(&mut self) {
        let Self {
            state,
            view,
            terminal,
            now,
            ..
        } = self;
        terminal
            .draw(|frame| view::render(frame, state, view, *now))
            .unwrap();
    }
}

fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|line| line.starts_with("VmRSS:"))
        .and_then(|line| line.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

fn render(c: &mut Criterion) {
    let mut group = c.benchmark_group("render_200x60");
    group.sample_size(30);
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_millis(500));
    for blocks in [10usize, 1_000, 10_000] {
        let before = rss_bytes();
        let mut chat = Chat::with_blocks(blocks);
        if blocks == 10_000 {
            let growth = rss_bytes().saturating_sub(before);
            eprintln!(
                "memory: {blocks} blocks, {:.1} MiB of text, RSS grew {:.1} MiB (target ≤ 3x text + 30 MiB = {:.1} MiB)",
                chat.text_bytes as f64 / 1048576.0,
                growth as f64 / 1048576.0,
                (3 * chat.text_bytes) as f64 / 1048576.0 + 30.0
            );
        }
        group.bench_with_input(
            BenchmarkId::new("delta_then_frame", blocks),
            &blocks,
            |b, _| {
                b.iter(|| {
                    chat.delta(" word");
                    chat.draw();
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::new("keystroke_then_frame", blocks),
            &blocks,
            |b, _| {
                b.iter(|| {
                    chat.state
                        .on_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE));
                    chat.draw();
                })
            },
        );
        let mut width = 200;
        group.bench_with_input(
            BenchmarkId::new("resize_full_redraw", blocks),
            &blocks,
            |b, _| {
                b.iter(|| {
                    width = if width == 200 { 199 } else { 200 };
                    chat.terminal.backend_mut().resize(width, 60);
                    chat.terminal.autoresize().unwrap();
                    chat.draw();
                })
            },
        );
    }
    group.finish();

    // Streaming markdown: one 200 KiB answer in 5,000 deltas, each followed by a frame.
    let mut group = c.benchmark_group("streaming_markdown_200KiB_5000_deltas");
    group.sample_size(10);
    let paragraph = "Some *markdown* text with `code` and a [link](https://example.com). ";
    let deltas: Vec<String> = (0..5_000)
        .map(|index| {
            if index % 50 == 49 {
                "\n\n```rust\nlet x = 1;\n```\n\n".to_owned()
            } else {
                paragraph[..41].to_owned()
            }
        })
        .collect();
    // The first window starts on an empty screen (fewer rows to draw); the second starts once
    // the answer fills the 60 rows, so it and the last window differ only by what came before.
    for (label, range) in [
        ("first_100_deltas", 0..100),
        ("deltas_1000_to_1100", 1_000..1_100),
        ("last_100_deltas", 4_900..5_000),
    ] {
        group.bench_function(label, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let mut chat = Chat::new();
                    chat.start_turn("write a long answer");
                    for delta in &deltas[..range.start] {
                        chat.delta(delta);
                    }
                    chat.draw();
                    let started = Instant::now();
                    for delta in &deltas[range.clone()] {
                        chat.delta(delta);
                        chat.draw();
                    }
                    total += started.elapsed();
                }
                total
            })
        });
    }
    group.finish();
}

criterion_group!(benches, render);
criterion_main!(benches);
