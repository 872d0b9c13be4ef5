//! Signal behaviour of pi in print/json mode, measured in the captures (`f_slow_*`, `g_sleep_*`):
//!
//! - SIGINT has no handler: the process dies at once, printing nothing more.
//! - SIGTERM / SIGHUP: SIGKILL every running bash tool's process group, then exit 143 / 129,
//!   printing nothing more.
//!
//! The handler only does async-signal-safe things (atomic loads, `kill`, `_exit`). Tool groups
//! are registered in a fixed table of atomics for that reason. Writers defer termination while a
//! line is being written, so SIGTERM never leaves half a JSON line behind.

use std::sync::atomic::{AtomicI32, Ordering};

/// Room for this many concurrently running tool process groups.
const TOOL_GROUP_SLOTS: usize = 16;

static TOOL_GROUPS: [AtomicI32; TOOL_GROUP_SLOTS] = [const { AtomicI32::new(0) }; TOOL_GROUP_SLOTS];

extern "C" fn on_termination(signal: libc::c_int) {
    for slot in &TOOL_GROUPS {
        let group = slot.load(Ordering::SeqCst);
        if group > 0 {
            // SAFETY: kill(2) is async-signal-safe; a negative pid addresses the group.
            unsafe { libc::kill(-group, libc::SIGKILL) };
        }
    }
    // SAFETY: _exit(2) is async-signal-safe and skips destructors on purpose, like pi's exit.
    unsafe { libc::_exit(128 + signal) }
}

fn set_disposition(signal: libc::c_int, handler: libc::sighandler_t) {
    // SAFETY: a zeroed sigaction with an empty mask is valid; the handler is either SIG_DFL,
    // SIG_IGN or `on_termination`, which is async-signal-safe.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(signal, &action, std::ptr::null_mut());
    }
}

/// pi's dispositions: SIGINT default (even if our parent ignored it), SIGTERM/SIGHUP handled.
pub(crate) fn install_pi_handlers() {
    set_disposition(libc::SIGINT, libc::SIG_DFL);
    let handler = on_termination as extern "C" fn(libc::c_int) as libc::sighandler_t;
    set_disposition(libc::SIGTERM, handler);
    set_disposition(libc::SIGHUP, handler);
}

/// For the `ignore-sigint` scenario: an agent that shrugs off SIGINT and SIGTERM.
pub(crate) fn ignore_interrupt_and_terminate() {
    set_disposition(libc::SIGINT, libc::SIG_IGN);
    set_disposition(libc::SIGTERM, libc::SIG_IGN);
}

fn termination_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set before sigaddset uses it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGTERM);
        libc::sigaddset(&mut set, libc::SIGHUP);
        set
    }
}

/// Holds SIGTERM and SIGHUP back while alive; a pending one is delivered on drop.
pub(crate) struct TerminationDeferred {
    previous: libc::sigset_t,
}

impl TerminationDeferred {
    pub(crate) fn new() -> Self {
        let set = termination_set();
        // SAFETY: both sets are valid; the demo agent is single-threaded, so the process mask
        // and the thread mask are the same thing.
        unsafe {
            let mut previous: libc::sigset_t = std::mem::zeroed();
            libc::sigprocmask(libc::SIG_BLOCK, &set, &mut previous);
            Self { previous }
        }
    }
}

impl Drop for TerminationDeferred {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in `new`.
        unsafe { libc::sigprocmask(libc::SIG_SETMASK, &self.previous, std::ptr::null_mut()) };
    }
}

/// A tool process group the termination handler kills; unregistered on drop.
pub(crate) struct ToolGroup {
    slot: Option<usize>,
}

impl ToolGroup {
    pub(crate) fn register(group: i32) -> Self {
        let slot = TOOL_GROUPS.iter().position(|slot| {
            slot.compare_exchange(0, group, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok()
        });
        Self { slot }
    }
}

impl Drop for ToolGroup {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            TOOL_GROUPS[slot].store(0, Ordering::SeqCst);
        }
    }
}

/// Runs in a freshly forked child before exec: a new session (pi spawns its bash tool with
/// `detached: true`), and an empty signal mask, since the mask survives exec and the spawn
/// happens while termination is deferred.
pub(crate) fn detach_in_child() -> std::io::Result<()> {
    // SAFETY: setsid and sigprocmask are async-signal-safe, as required between fork and exec.
    unsafe {
        if libc::setsid() < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let mut empty: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut empty);
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
    }
    Ok(())
}
