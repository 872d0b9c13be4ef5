//! Frame scheduling: redraw on demand, coalesced, never on a fixed tick.
//!
//! Requests made while a frame is pending merge into it; a frame never follows the previous one
//! closer than `min_interval` (about 60 frames/s while streaming). With no request pending there
//! is no deadline, and the event loop sleeps until an event arrives.

use std::time::{Duration, Instant};

/// About 60 frames per second.
pub(crate) const MIN_FRAME_INTERVAL: Duration = Duration::from_millis(16);

#[derive(Debug, Clone)]
pub(crate) struct FrameScheduler {
    min_interval: Duration,
    last_frame: Option<Instant>,
    pending: Option<Instant>,
}

impl Default for FrameScheduler {
    fn default() -> Self {
        Self::new(MIN_FRAME_INTERVAL)
    }
}

impl FrameScheduler {
    pub(crate) fn new(min_interval: Duration) -> Self {
        Self {
            min_interval,
            last_frame: None,
            pending: None,
        }
    }

    /// A frame as soon as allowed.
    pub(crate) fn request(&mut self, now: Instant) {
        self.request_at(now);
    }

    /// A frame at `at` (or as soon after it as allowed); an earlier pending frame wins.
    pub(crate) fn request_at(&mut self, at: Instant) {
        let earliest = match self.last_frame {
            Some(last) => at.max(last + self.min_interval),
            None => at,
        };
        self.pending = Some(match self.pending {
            Some(pending) => pending.min(earliest),
            None => earliest,
        });
    }

    /// When the next frame is due; `None`: nothing to draw, sleep.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.pending
    }

    /// Whether a frame is due at `now` (the tests' question; the loop sleeps until `deadline`).
    #[cfg(test)]
    pub(crate) fn is_due(&self, now: Instant) -> bool {
        self.pending.is_some_and(|at| at <= now)
    }

    pub(crate) fn frame_drawn(&mut self, now: Instant) {
        self.last_frame = Some(now);
        self.pending = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_coalesce_and_respect_the_interval() {
        let t0 = Instant::now();
        let mut frames = FrameScheduler::new(Duration::from_millis(16));
        assert_eq!(frames.deadline(), None, "idle: no deadline at all");
        frames.request(t0);
        frames.request(t0 + Duration::from_millis(1));
        assert_eq!(frames.deadline(), Some(t0));
        frames.frame_drawn(t0);
        assert_eq!(frames.deadline(), None);
        // A burst right after a frame waits for the interval, as one frame.
        for ms in 1..10 {
            frames.request(t0 + Duration::from_millis(ms));
        }
        assert_eq!(frames.deadline(), Some(t0 + Duration::from_millis(16)));
        assert!(!frames.is_due(t0 + Duration::from_millis(15)));
        assert!(frames.is_due(t0 + Duration::from_millis(16)));
    }

    #[test]
    fn timer_requests_yield_to_earlier_ones() {
        let t0 = Instant::now();
        let mut frames = FrameScheduler::new(Duration::from_millis(16));
        frames.frame_drawn(t0);
        frames.request_at(t0 + Duration::from_millis(250));
        frames.request(t0 + Duration::from_millis(100));
        assert_eq!(frames.deadline(), Some(t0 + Duration::from_millis(100)));
    }
}
