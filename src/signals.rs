//! Every signal agentty reacts to, as one typed event stream (pattern from nextest-runner's
//! `signal.rs`).
//!
//! The chat and `agentty run` both read [`SignalHandler::recv`] in their loops, so which signals
//! are caught, and what each one means, is decided here once: SIGINT, SIGTERM, SIGHUP and SIGQUIT
//! ask agentty to stop the agent and leave (SIGQUIT would otherwise dump core with the agent
//! still running and the terminal in raw mode); SIGTSTP and SIGCONT are job control. Installing
//! a handler replaces the default action for good in this process, so tests that must not touch
//! the process's signal dispositions use [`SignalHandlerKind::Noop`], whose stream never yields.

use std::io;

use tokio::signal::unix::{signal, Signal, SignalKind};

/// A signal that asks agentty to stop the agent and leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShutdownSignal {
    Interrupt,
    Terminate,
    Hangup,
    Quit,
}

impl ShutdownSignal {
    /// The usual name, for logs and the notice in the chat.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Interrupt => "SIGINT",
            Self::Terminate => "SIGTERM",
            Self::Hangup => "SIGHUP",
            Self::Quit => "SIGQUIT",
        }
    }

    /// The signal's number (a process ended by it exits with 128 + this).
    pub(crate) fn number(self) -> i32 {
        match self {
            Self::Interrupt => libc::SIGINT,
            Self::Terminate => libc::SIGTERM,
            Self::Hangup => libc::SIGHUP,
            Self::Quit => libc::SIGQUIT,
        }
    }
}

/// Job control from outside: the shell's `fg`/`bg`, or `kill -TSTP`/`-CONT` by hand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobControlEvent {
    /// SIGTSTP: suspend (agents first, then agentty).
    Stop,
    /// SIGCONT: continue (the agents too).
    Continue,
}

impl JobControlEvent {
    /// Does what job control means for agentty, decided here once for the chat (SIGTSTP, or
    /// Ctrl+Z, which arrives as a key in raw mode) and `agentty run`: `Stop` suspends the agents
    /// and then agentty itself, once `give_back_terminal` has restored the terminal, and returns
    /// when the shell continues agentty (`fg`, `bg`), the agents continued with it; `Continue`
    /// (sent by the shell, or `kill -CONT` by hand while the agents are stopped) continues them.
    pub(crate) fn act(self, give_back_terminal: impl FnOnce()) {
        match self {
            JobControlEvent::Stop => {
                tracing::info!("suspending the agents and agentty");
                give_back_terminal();
                crate::process::job_control::suspend_with_agents();
            }
            JobControlEvent::Continue => {
                crate::process::tree::signal_all_groups(nix::sys::signal::Signal::SIGCONT)
            }
        }
    }
}

/// One signal received.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SignalEvent {
    Shutdown(ShutdownSignal),
    JobControl(JobControlEvent),
}

/// Whether [`SignalHandler::new`] installs real handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SignalHandlerKind {
    /// The process's signals are caught and reported.
    Standard,
    /// Nothing is installed; `recv` never yields (for tests).
    #[cfg(test)]
    Noop,
}

/// The typed stream of received signals.
pub(crate) struct SignalHandler {
    signals: Option<Signals>,
}

struct Signals {
    interrupt: Signal,
    terminate: Signal,
    hangup: Signal,
    quit: Signal,
    stop: Signal,
    continued: Signal,
}

impl SignalHandler {
    /// Installs the handlers (for `Standard`); must be called inside a tokio runtime.
    pub(crate) fn new(kind: SignalHandlerKind) -> io::Result<Self> {
        let signals = match kind {
            #[cfg(test)]
            SignalHandlerKind::Noop => None,
            SignalHandlerKind::Standard => Some(Signals {
                interrupt: signal(SignalKind::interrupt())?,
                terminate: signal(SignalKind::terminate())?,
                hangup: signal(SignalKind::hangup())?,
                quit: signal(SignalKind::quit())?,
                stop: signal(SignalKind::from_raw(libc::SIGTSTP))?,
                continued: signal(SignalKind::from_raw(libc::SIGCONT))?,
            }),
        };
        Ok(Self { signals })
    }

    /// The next signal received. Cancel-safe (it can be a `select!` branch); never completes
    /// for a `Noop` handler.
    pub(crate) async fn recv(&mut self) -> SignalEvent {
        let Some(signals) = &mut self.signals else {
            return std::future::pending().await;
        };
        // Each `recv` yields `None` only once its driver is gone with the runtime; the loop that
        // polls this ends with the runtime too.
        tokio::select! {
            _ = signals.interrupt.recv() => SignalEvent::Shutdown(ShutdownSignal::Interrupt),
            _ = signals.terminate.recv() => SignalEvent::Shutdown(ShutdownSignal::Terminate),
            _ = signals.hangup.recv() => SignalEvent::Shutdown(ShutdownSignal::Hangup),
            _ = signals.quit.recv() => SignalEvent::Shutdown(ShutdownSignal::Quit),
            _ = signals.stop.recv() => SignalEvent::JobControl(JobControlEvent::Stop),
            _ = signals.continued.recv() => SignalEvent::JobControl(JobControlEvent::Continue),
        }
    }
}

#[cfg(test)]
mod tests {
    use futures::FutureExt;
    use nix::sys::signal::{raise, Signal};

    use super::*;

    /// Raises each signal at this test process (whose handlers stay installed afterwards, which
    /// is why no other test in this binary raises signals) and reads it back as its event.
    #[tokio::test]
    async fn each_signal_arrives_as_its_event() {
        let mut handler = SignalHandler::new(SignalHandlerKind::Standard).unwrap();
        let cases = [
            (
                Signal::SIGINT,
                SignalEvent::Shutdown(ShutdownSignal::Interrupt),
            ),
            (
                Signal::SIGTERM,
                SignalEvent::Shutdown(ShutdownSignal::Terminate),
            ),
            (
                Signal::SIGHUP,
                SignalEvent::Shutdown(ShutdownSignal::Hangup),
            ),
            (Signal::SIGQUIT, SignalEvent::Shutdown(ShutdownSignal::Quit)),
            (
                Signal::SIGTSTP,
                SignalEvent::JobControl(JobControlEvent::Stop),
            ),
            (
                Signal::SIGCONT,
                SignalEvent::JobControl(JobControlEvent::Continue),
            ),
        ];
        for (raised, expected) in cases {
            raise(raised).unwrap();
            assert_eq!(handler.recv().await, expected, "after {raised}");
        }
    }

    #[test]
    fn a_noop_handler_never_yields() {
        let mut handler = SignalHandler::new(SignalHandlerKind::Noop).unwrap();
        assert_eq!(handler.recv().now_or_never(), None);
    }

    #[test]
    fn shutdown_signals_name_their_number() {
        for (signal, name, number) in [
            (ShutdownSignal::Interrupt, "SIGINT", 2),
            (ShutdownSignal::Terminate, "SIGTERM", 15),
            (ShutdownSignal::Hangup, "SIGHUP", 1),
            (ShutdownSignal::Quit, "SIGQUIT", 3),
        ] {
            assert_eq!((signal.name(), signal.number()), (name, number));
        }
    }
}
