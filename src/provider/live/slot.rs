//! Where a long-lived transport keeps its live process between attempts: one slot per
//! provider, locked by the attempt that plays a turn on it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::protocol::Live;
use crate::stream::AgentMessage;

/// The live process an attempt claimed, locked until the attempt lets go.
pub(crate) type Claimed<S> = tokio::sync::OwnedMutexGuard<Option<Live<S>>>;

/// The slot (a handle: clones share it).
pub(crate) struct LiveSlot<S> {
    live: Arc<tokio::sync::Mutex<Option<Live<S>>>>,
    /// Set after a rollback of the stored session: the live process must not be reused as it
    /// is.
    stale: Arc<AtomicBool>,
}

impl<S> Clone for LiveSlot<S> {
    fn clone(&self) -> Self {
        Self {
            live: self.live.clone(),
            stale: self.stale.clone(),
        }
    }
}

impl<S: Send + 'static> LiveSlot<S> {
    pub(crate) fn new() -> Self {
        Self {
            live: Arc::new(tokio::sync::Mutex::new(None)),
            stale: Arc::new(AtomicBool::new(false)),
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

    /// Waits for the slot and locks it for one attempt.
    pub(crate) async fn lock(&self) -> Claimed<S> {
        self.live.clone().lock_owned().await
    }

    /// Starts the process ahead of the first prompt, unless one is there; a failure is only
    /// logged (the first prompt starts it again and reports the failure in its stream).
    pub(crate) fn warm_up<F>(&self, start: F, what: &'static str)
    where
        F: std::future::Future<Output = Result<Live<S>, AgentMessage>> + Send + 'static,
    {
        let live = self.live.clone();
        tokio::spawn(async move {
            let mut slot = live.lock().await;
            if slot.is_some() {
                return;
            }
            match start.await {
                Ok(session) => *slot = Some(session),
                Err(terminal) => {
                    tracing::warn!(?terminal, "{what} did not start ahead of the first prompt")
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
