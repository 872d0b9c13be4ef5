//! The terminal: entering and leaving full-screen mode, and the panic hook.
//!
//! Invariant: once [`TerminalGuard::enter`] succeeded, every way out of agentty restores the
//! terminal exactly once: the guard's `restore`/`Drop` on the normal path, the panic hook on a
//! panic (any thread), and the chat's handling of the shutdown signals (`crate::signals`). The order
//! matters (pattern from codex-rs/tui): keyboard-enhancement flags are popped and mouse capture
//! switched off first, then pending input (mouse reports in flight) is drained, and only then
//! does the terminal leave the alternate screen and raw mode and show the cursor again, so no
//! stray report lands in the user's shell.

pub(crate) mod attention;
pub(crate) mod frame;
mod hangup;

use std::fmt;
use std::io::{self, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste,
    EnableFocusChange, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, supports_keyboard_enhancement, EnterAlternateScreen,
    LeaveAlternateScreen,
};
use crossterm::{cursor, execute, Command};
use ratatui::backend::CrosstermBackend;
use ratatui::Terminal;

pub(crate) use frame::FrameScheduler;
pub(crate) use hangup::watch_for_hangup;

pub(crate) type ChatTerminal = Terminal<CrosstermBackend<Stdout>>;

/// Full-screen mode is on (restore has work to do).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Keyboard-enhancement flags were pushed and must be popped.
static KEYBOARD_FLAGS_PUSHED: AtomicBool = AtomicBool::new(false);
/// The panic hook is installed once per process.
static PANIC_HOOK_INSTALLED: AtomicBool = AtomicBool::new(false);

/// Mouse reporting for clicks and the wheel only (no motion events to flood the loop), in SGR
/// form so large terminals report correct coordinates.
struct EnableClickAndWheelReports;

impl Command for EnableClickAndWheelReports {
    fn write_ansi(&self, f: &mut impl fmt::Write) -> fmt::Result {
        f.write_str("\x1b[?1000h\x1b[?1006h")
    }
}

/// The terminal in full-screen mode; restores it when dropped.
pub(crate) struct TerminalGuard {
    terminal: ChatTerminal,
}

impl TerminalGuard {
    /// Raw mode, alternate screen, mouse clicks and wheel, bracketed paste, and the kitty
    /// keyboard protocol where the terminal supports it (so Shift+Enter is distinguishable).
    pub(crate) fn enter() -> io::Result<Self> {
        let entered = (|| {
            enter_modes()?;
            let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
            terminal.clear()?;
            terminal.hide_cursor()?;
            Ok(terminal)
        })();
        match entered {
            Ok(terminal) => Ok(Self { terminal }),
            Err(error) => {
                restore_terminal();
                Err(error)
            }
        }
    }

    pub(crate) fn terminal(&mut self) -> &mut ChatTerminal {
        &mut self.terminal
    }

    pub(crate) fn restore(&mut self) {
        restore_terminal();
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore_terminal();
    }
}

/// Raw mode, the alternate screen and the input modes, as `TerminalGuard::enter` sets them.
fn enter_modes() -> io::Result<()> {
    let mut stdout = io::stdout();
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    execute!(
        stdout,
        EnterAlternateScreen,
        EnableClickAndWheelReports,
        EnableBracketedPaste,
        // Focus reports tell when a call back is wanted (`app::attention`).
        EnableFocusChange,
        attention::SaveTitle
    )?;
    if supports_keyboard_enhancement().unwrap_or(false) {
        execute!(
            stdout,
            PushKeyboardEnhancementFlags(
                KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES
                    | KeyboardEnhancementFlags::REPORT_ALTERNATE_KEYS
            )
        )?;
        KEYBOARD_FLAGS_PUSHED.store(true, Ordering::SeqCst);
    }
    Ok(())
}

/// Full-screen mode again after `restore_terminal` (resuming from Ctrl+Z); the caller redraws.
pub(crate) fn reenter_terminal() -> io::Result<()> {
    let entered = enter_modes();
    if entered.is_err() {
        restore_terminal();
    }
    entered
}

/// Leaves full-screen mode; safe to call from anywhere, any number of times (only the first
/// call after `enter` does anything). Errors are ignored: the terminal may already be gone.
pub(crate) fn restore_terminal() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut stdout = io::stdout();
    if KEYBOARD_FLAGS_PUSHED.swap(false, Ordering::SeqCst) {
        let _ = execute!(stdout, PopKeyboardEnhancementFlags);
    }
    let _ = execute!(
        stdout,
        DisableMouseCapture,
        DisableBracketedPaste,
        DisableFocusChange,
        attention::RestoreTitle
    );
    let _ = stdout.flush();
    drain_pending_input(Duration::from_millis(50), Duration::from_millis(250));
    let _ = execute!(stdout, LeaveAlternateScreen, cursor::Show);
    let _ = disable_raw_mode();
    let _ = stdout.flush();
}

/// Reads and discards what the terminal already sent (mouse reports, key presses), waiting up
/// to `quiet` for more after the last byte and `limit` in all. Reads stdin directly: crossterm's
/// reader may be owned by an event stream on another thread.
fn drain_pending_input(quiet: Duration, limit: Duration) {
    let started = Instant::now();
    let mut buffer = [0u8; 1024];
    while started.elapsed() < limit {
        let mut poll_fd = libc::pollfd {
            fd: libc::STDIN_FILENO,
            events: libc::POLLIN,
            revents: 0,
        };
        let timeout = quiet.min(limit.saturating_sub(started.elapsed()));
        // SAFETY: one valid pollfd, count 1.
        let ready = unsafe { libc::poll(&mut poll_fd, 1, timeout.as_millis() as libc::c_int) };
        if ready <= 0 || poll_fd.revents & libc::POLLIN == 0 {
            break;
        }
        // SAFETY: reading into a local buffer of the given length.
        let read =
            unsafe { libc::read(libc::STDIN_FILENO, buffer.as_mut_ptr().cast(), buffer.len()) };
        if read <= 0 {
            break;
        }
    }
}

/// On a panic anywhere: restore the terminal, kill every agent tree, print the panic with the
/// previous hook, and exit. A panic on a background thread must not leave the UI drawing into a
/// restored terminal with agents still running.
pub(crate) fn install_panic_hook() {
    if PANIC_HOOK_INSTALLED.swap(true, Ordering::SeqCst) {
        return;
    }
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore_terminal();
        crate::process::tree::kill_all_trees_now();
        previous(info);
        std::process::exit(101);
    }));
}
