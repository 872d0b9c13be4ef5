//! Noticing that the terminal is gone, whatever the signals.
//!
//! When a terminal goes away (its window closed, `tmux kill-server`), the kernel hangs the tty up:
//! from then on every read returns at once with nothing (or EIO), and SIGHUP goes to the session
//! leader. crossterm's reader takes neither for the end of input: it reads again, in a loop, a
//! full core for as long as agentty lives. And a shell that ignores SIGHUP (`nohup`, a wrapper's
//! `trap "" HUP`) passes no signal on, so nothing else would ever end agentty.
//!
//! So a thread of its own waits in poll(2) for the hang-up alone (it asks for no event: POLLHUP
//! and POLLERR are reported all the same) and, once it comes, puts an empty pipe where crossterm
//! reads, so that crossterm's next read finds "nothing yet" and goes back to waiting instead of
//! spinning, then tells the chat, which leaves through its one exit (the turn stopped, the log
//! written, status 1).

use std::io;
use std::os::fd::RawFd;

/// Watches the terminal the chat reads its keys from; calls `on_hangup` once, from a thread of
/// its own, when the terminal hangs up. Nothing is watched when stdin is not a terminal.
pub(crate) fn watch_for_hangup(on_hangup: impl FnOnce() + Send + 'static) -> io::Result<()> {
    // SAFETY: isatty and dup on a descriptor number only; the duplicate is ours to keep.
    let watched = unsafe {
        if libc::isatty(libc::STDIN_FILENO) != 1 {
            return Ok(());
        }
        libc::fcntl(libc::STDIN_FILENO, libc::F_DUPFD_CLOEXEC, 3)
    };
    if watched < 0 {
        return Err(io::Error::last_os_error());
    }
    std::thread::Builder::new()
        .name("terminal-hangup".to_owned())
        .spawn(move || {
            wait_for_hangup(watched);
            if let Err(error) = quiet_stdin() {
                tracing::warn!(%error, "cannot take the hung-up terminal away from the key reader");
            }
            on_hangup();
        })?;
    Ok(())
}

/// Blocks until `fd`, a terminal, is hung up.
fn wait_for_hangup(fd: RawFd) {
    loop {
        let mut watched = libc::pollfd {
            fd,
            events: 0,
            revents: 0,
        };
        // SAFETY: one valid pollfd, count 1, no timeout.
        let ready = unsafe { libc::poll(&mut watched, 1, -1) };
        if ready < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        if ready != 0 {
            return;
        }
    }
}

/// Puts the read end of an empty, non-blocking pipe on stdin, its write end kept open for good:
/// a read there says "would block", never "end of input", so crossterm's reader waits.
fn quiet_stdin() -> io::Result<()> {
    let mut ends = [0 as RawFd; 2];
    // SAFETY: `ends` has room for the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let [read_end, _write_end_kept_open] = ends;
    // SAFETY: dup2 of a descriptor we own onto stdin; the old stdin (the dead terminal) is
    // closed by it, and the read end's own number is closed after.
    unsafe {
        if libc::dup2(read_end, libc::STDIN_FILENO) < 0 {
            return Err(io::Error::last_os_error());
        }
        libc::close(read_end);
    }
    Ok(())
}
