//! Logging: tracing to a daily-rolling file in the platform's state dir, never to the terminal
//! (the terminal belongs to the UI, and stderr to headless output's consumers). The file is
//! opened without following a link (`crate::files::no_follow`): a link planted in place of a
//! day's log must not make agentty append to a file elsewhere.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
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
pub(crate) fn state_dir() -> PathBuf {
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

/// Makes a folder of agentty's state dir (`sessions`, `logs`, ...) with [`private_dir_under`]
/// the state dir: never through a link in any of its components. A folder outside the state
/// dir (a test's) is made as any folder.
pub(crate) fn private_state_dir(path: &Path) -> std::io::Result<()> {
    let state = state_dir();
    if path.starts_with(&state) {
        crate::files::private_dir_under(&state, path)
    } else {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(path)
    }
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
    day_log_file(&log_dir(), days_since_epoch())
}

fn day_log_file(dir: &Path, days: i64) -> PathBuf {
    let date = (time::OffsetDateTime::UNIX_EPOCH + time::Duration::days(days)).date();
    dir.join(format!(
        "agentty.log.{:04}-{:02}-{:02}",
        date.year(),
        u8::from(date.month()),
        date.day()
    ))
}

/// Today in UTC, as days since 1970-01-01 (the logs' names use UTC dates).
fn days_since_epoch() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs() / 86_400)
        .unwrap_or(0) as i64
}

/// The day's log file, opened anew when the day changes, never through a link.
struct DailyLog {
    dir: PathBuf,
    day: i64,
    file: Option<File>,
}

impl DailyLog {
    fn open(dir: PathBuf, day: i64) -> Self {
        let file = Self::open_day(&dir, day);
        Self { dir, day, file }
    }

    fn open_day(dir: &Path, day: i64) -> Option<File> {
        crate::files::no_follow()
            .append(true)
            .create(true)
            .open(day_log_file(dir, day))
            .ok()
    }
}

impl Write for DailyLog {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let today = days_since_epoch();
        if today != self.day {
            self.day = today;
            self.file = Self::open_day(&self.dir, today);
        }
        match self.file.as_mut() {
            Some(file) => file.write(bytes),
            // The day's file could not be opened (a link in its place): the line is dropped.
            None => Ok(bytes.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().map_or(Ok(()), File::flush)
    }
}

/// Log lines that may wait for the disk.
const LOG_QUEUE_LINES: usize = 4096;

/// Starts file logging. Keep the guard alive until exit so buffered lines are written.
/// `AGENTTY_LOG` sets the filter (default `info`).
pub fn init() -> Option<WorkerGuard> {
    let dir = log_dir();
    private_state_dir(&dir).ok()?;
    let appender = DailyLog::open(dir, days_since_epoch());
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
    use super::*;

    #[test]
    fn a_link_in_place_of_the_days_log_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let elsewhere = dir.path().join("user-file");
        std::fs::write(&elsewhere, "mine\n").unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir(&logs).unwrap();
        std::os::unix::fs::symlink(&elsewhere, day_log_file(&logs, days_since_epoch())).unwrap();
        let mut log = DailyLog::open(logs.clone(), days_since_epoch());
        log.write_all(b"a log line\n").unwrap();
        log.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "mine\n");

        // Where no link is in the way, the day's file is written.
        let plain = tempfile::tempdir().unwrap();
        let mut log = DailyLog::open(plain.path().to_path_buf(), days_since_epoch());
        log.write_all(b"kept\n").unwrap();
        assert_eq!(
            std::fs::read_to_string(day_log_file(plain.path(), log.day)).unwrap(),
            "kept\n"
        );
    }

    #[test]
    fn the_days_file_is_named_by_its_utc_date() {
        assert_eq!(
            day_log_file(Path::new("/l"), 0),
            Path::new("/l/agentty.log.1970-01-01")
        );
        assert_eq!(
            day_log_file(Path::new("/l"), 20_786),
            Path::new("/l/agentty.log.2026-11-29")
        );
    }
}
