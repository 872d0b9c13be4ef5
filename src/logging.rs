//! Logging: tracing to a daily-rolling file in the platform's state dir, never to the terminal
//! (the terminal belongs to the UI, and stderr to headless output's consumers).

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;

static LAUNCHED: OnceLock<Instant> = OnceLock::new();

/// Marks the process start (called first thing in `main`), for start-up timings.
pub fn mark_launch() {
    LAUNCHED.get_or_init(Instant::now);
}

/// Time since [`mark_launch`] (zero if it was never called).
pub(crate) fn since_launch() -> Duration {
    LAUNCHED.get().map(Instant::elapsed).unwrap_or_default()
}

/// The directory for logs and session logs.
pub fn state_dir() -> PathBuf {
    if let Ok(dir) = std::env::var("AGENTTY_STATE_DIR") {
        return PathBuf::from(dir);
    }
    directories::ProjectDirs::from("", "", "agentty")
        .map(|dirs| {
            dirs.state_dir()
                .unwrap_or_else(|| dirs.data_local_dir())
                .to_path_buf()
        })
        .unwrap_or_else(|| std::env::temp_dir().join("agentty"))
}

pub(crate) fn log_dir() -> PathBuf {
    state_dir().join("logs")
}

/// Where the markers of running agents are recorded (`process::orphans`).
pub(crate) fn agents_dir() -> PathBuf {
    state_dir().join("agents")
}

/// Where today's log file is (the appender names files `agentty.log.YYYY-MM-DD`).
pub fn current_log_file() -> PathBuf {
    let today = chrono_free_today();
    log_dir().join(format!("agentty.log.{today}"))
}

fn chrono_free_today() -> String {
    // The appender uses UTC dates; compute today's from the Unix time without a date crate.
    let days = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs() / 86_400)
        .unwrap_or(0) as i64;
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Log lines that may wait for the disk.
const LOG_QUEUE_LINES: usize = 4096;

/// Starts file logging. Keep the guard alive until exit so buffered lines are written.
/// `AGENTTY_LOG` sets the filter (default `info`).
pub fn init() -> Option<WorkerGuard> {
    let dir = log_dir();
    std::fs::create_dir_all(&dir).ok()?;
    let appender = tracing_appender::rolling::daily(&dir, "agentty.log");
    // The default queue (128,000 lines) is allocated and touched up front: ~5 MiB and a few
    // milliseconds at every start. Lines beyond this bound are dropped, never waited for.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .finish(appender);
    let filter = EnvFilter::try_from_env("AGENTTY_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init()
        .ok()?;
    Some(guard)
}

#[cfg(test)]
mod tests {
    use super::civil_from_days;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_786), (2026, 11, 29));
    }
}
