//! Where a long-lived transport keeps its live process between attempts: one slot per
//! provider, locked by the attempt that plays a turn on it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::protocol::Live;
use crate::process::StopControl;
use crate::stream::AgentMessage;

/// The live process an attempt claimed, locked until the attempt lets go.
pub(crate) type Claimed<S> = tokio::sync::OwnedMutexGuard<Option<Live<S>>>;

/// The slot (a handle: clones share it).
pub(crate) struct LiveSlot<S> {
    live: Arc<tokio::sync::Mutex<Option<Live<S>>>>,
    /// Set after a rollback of the stored session: the live process must not be reused as it
    /// is.
    stale: Arc<AtomicBool>,
    /// The stop of the warm-up start in progress, if one is.
    warming: Arc<Mutex<Option<StopControl>>>,
    /// How the last warm-up failed, for the attempt that waited for it (the same start is not
    /// waited for twice).
    warm_failure: Arc<Mutex<Option<AgentMessage>>>,
}

impl<S> Clone for LiveSlot<S> {
    fn clone(&self) -> Self {
        Self {
            live: self.live.clone(),
            stale: self.stale.clone(),
            warming: self.warming.clone(),
            warm_failure: self.warm_failure.clone(),
        }
    }
}

impl<S: Send + 'static> LiveSlot<S> {
    pub(crate) fn new() -> Self {
        Self {
            live: Arc::new(tokio::sync::Mutex::new(None)),
            stale: Arc::new(AtomicBool::new(false)),
            warming: Arc::new(Mutex::new(None)),
            warm_failure: Arc::new(Mutex::new(None)),
        }
    }

    /// The agent's stored session was restored: what the live process holds is out of date.
    pub(crate) fn mark_stale(&self) {
        self.stale.store(true, Ordering::SeqCst);
    }

    /// Whether a restore happened since the last claim (and forgets it).
    pub(crate) fn take_stale(&self) -> bool {
        self.stale.swap(false, Ordering::SeqCst)
    }

    /// Locks the slot for one attempt, waiting for the attempt or warm-up that holds it; a
    /// stop while waiting stops a warm-up start (an agent that never answers must not hold the
    /// user). `Err` is the failure of the warm-up start this attempt waited for: the attempt's
    /// own, rather than the same start waited for again.
    pub(crate) async fn lock(&self, stop: &StopControl) -> (Claimed<S>, Option<AgentMessage>) {
        if let Ok(claimed) = self.live.clone().try_lock_owned() {
            self.take_warm_failure();
            return (claimed, None);
        }
        let claimed = tokio::select! {
            claimed = self.live.clone().lock_owned() => claimed,
            _ = stop.stop_token().cancelled() => {
                if let Some(warming) = self.warming.lock().ok().and_then(|warming| warming.clone()) {
                    warming.stop();
                }
                self.live.clone().lock_owned().await
            }
        };
        let failure = self.take_warm_failure();
        (claimed, failure)
    }

    fn take_warm_failure(&self) -> Option<AgentMessage> {
        self.warm_failure
            .lock()
            .ok()
            .and_then(|mut failure| failure.take())
    }

    /// Starts the process ahead of the first prompt, unless one is there; a failure is logged
    /// and kept for the attempt that waits for it. `start` is given the warm-up's stop.
    pub(crate) fn warm_up<F, Fut>(&self, start: F, what: &'static str)
    where
        F: FnOnce(StopControl) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<Live<S>, AgentMessage>> + Send + 'static,
    {
        let slot = self.clone();
        tokio::spawn(async move {
            let mut live = slot.live.clone().lock_owned().await;
            if live.is_some() {
                return;
            }
            let stop = StopControl::new();
            if let Ok(mut warming) = slot.warming.lock() {
                *warming = Some(stop.clone());
            }
            let started = start(stop).await;
            if let Ok(mut warming) = slot.warming.lock() {
                *warming = None;
            }
            match started {
                Ok(session) => *live = Some(session),
                Err(terminal) => {
                    tracing::warn!(?terminal, "{what} did not start ahead of the first prompt");
                    if let Ok(mut failure) = slot.warm_failure.lock() {
                        *failure = Some(terminal);
                    }
                }
            }
        });
    }

    /// The provider goes away: with no attempt running the process ends now; a running
    /// attempt holds the slot, and the process ends when that attempt lets go of it.
    pub(crate) fn release_if_idle(&self) {
        if let Ok(mut live) = self.live.try_lock() {
            live.take();
        }
    }
}
