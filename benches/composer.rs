//! The composer's per-keystroke cost (issue 17). Each iteration types a character, draws a frame
//! at 160x50 and erases the character again (two keystrokes, one frame, the input unchanged
//! between iterations): with the `@` popup ranking 20,000 files, with a 2,000-character prompt
//! wrapped over many rows, and with an empty prompt as the baseline; plus the ranking alone.
//! Target: with the popup, both keystrokes and the frame stay within one 60 Hz frame (16 ms);
//! the wrapped prompt adds well under 1 ms to the baseline.

use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use agentty::app::mentions;
use agentty::app::state::{AppState, StartupInfo};
use agentty::view::{self, ChatView};

/// 20,000 plausible repository paths, shallow first as the walker sorts them.
fn repository_paths() -> Vec<String> {
    let mut files = Vec::new();
    for top in 0..20 {
        for middle in 0..25 {
            for leaf in 0..40 {
                files.push(format!(
                    "crates/part_{top}/src/module_{middle}/file_{leaf}_state.rs"
                ));
            }
        }
    }
    files
}

fn chat() -> AppState {
    AppState::new(StartupInfo {
        provider: "demo".into(),
        ..StartupInfo::default()
    })
}

fn type_char(state: &mut AppState, ch: char) {
    state.on_key(KeyEvent::new(KeyCode::Char(ch), KeyModifiers::NONE));
}

/// Benchmarks typing `ch`, drawing a 160x50 frame and erasing `ch` again on `state`.
fn type_frame_erase(c: &mut Criterion, name: &str, mut state: AppState, ch: char) {
    let mut chat_view = ChatView::default();
    let mut terminal = Terminal::new(TestBackend::new(160, 50)).unwrap();
    let now = Instant::now();
    c.bench_function(name, |b| {
        b.iter(|| {
            type_char(&mut state, ch);
            terminal
                .draw(|frame| view::render(frame, &state, &mut chat_view, now))
                .unwrap();
            state.on_key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE));
        })
    });
}

fn benches(c: &mut Criterion) {
    let files = repository_paths();
    c.bench_function("mention rank: 20,000 paths, query \"m12stat\"", |b| {
        b.iter(|| mentions::rank("m12stat", &files, mentions::MAX_SUGGESTIONS))
    });

    let mut state = chat();
    state.on_files_listed(files.clone());
    for ch in "look at @m12sta".chars() {
        type_char(&mut state, ch);
    }
    type_frame_erase(
        c,
        "type + frame + erase, @ popup over 20,000 files, 160x50",
        state,
        't',
    );

    let mut state = chat();
    let words = "wrap this prompt over many rows of the input ";
    let long: String = words.repeat(2_000 / words.len() + 1);
    // Typed in, not pasted: a paste this large would be folded to one short label.
    state.composer.set_text(&long[..2_000]);
    type_frame_erase(
        c,
        "type + frame + erase, 2,000-char wrapped prompt, 160x50",
        state,
        'x',
    );

    type_frame_erase(
        c,
        "type + frame + erase, empty prompt, 160x50 (baseline)",
        chat(),
        'x',
    );
}

criterion_group! {
    name = composer;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(3));
    targets = benches
}
criterion_main!(composer);
