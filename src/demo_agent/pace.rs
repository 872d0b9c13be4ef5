//! The script's clock: every scripted delay of every mode, scaled by `AGENTTY_DEMO_TIME_SCALE`.

use std::time::Duration;

/// Scales every scripted delay (tests run long scenarios quickly); 1.0 = real time.
pub const TIME_SCALE_VAR: &str = "AGENTTY_DEMO_TIME_SCALE";

/// The clock of the script.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    scale: f64,
}

impl Pace {
    pub(crate) fn from_env() -> Self {
        let scale = std::env::var(TIME_SCALE_VAR)
            .ok()
            .and_then(|value| value.trim().parse::<f64>().ok())
            .filter(|scale| scale.is_finite() && *scale >= 0.0)
            .unwrap_or(1.0);
        Self {
            scale: scale.min(100.0),
        }
    }

    /// No delays at all.
    pub(crate) fn instant() -> Self {
        Self { scale: 0.0 }
    }

    /// `ms` of script time in real time.
    pub(crate) fn scaled(self, ms: u64) -> Duration {
        Duration::from_micros((ms as f64 * self.scale * 1000.0) as u64)
    }

    pub(crate) fn sleep_ms(self, ms: u64) {
        let scaled = ms as f64 * self.scale;
        if scaled >= 1.0 {
            std::thread::sleep(Duration::from_micros((scaled * 1000.0) as u64));
        }
    }
}
