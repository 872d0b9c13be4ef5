//! A private mirror of an agent CLI's config dir: every entry a symlink to the user's, except the
//! settings file, which is the user's settings with agentty's overrides merged in (pi's and
//! Gemini CLI's own retries off). The CLI then reads and writes the user's credentials, sessions
//! and extensions through the links, and only the settings differ.
//!
//! The sync runs at every spawn: it is small (one directory listing, one small file), idempotent,
//! and safe against a concurrent agentty (links that already exist are fine, the settings file is
//! replaced by rename).

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// Where a backend keeps its CLI's private mirrors: agentty's state dir, unless a test names
/// another.
#[derive(Debug, Clone, Default)]
pub(crate) struct MirrorRoot(Option<PathBuf>);

impl MirrorRoot {
    pub(crate) fn at(dir: PathBuf) -> Self {
        Self(Some(dir))
    }

    /// What `prepare(user_dir, state_dir)` makes of `user_dir`, or `None` when it cannot be made:
    /// the CLI then runs with the user's own config, and the warning names `what` could not be
    /// prepared (the CLI's own retries stay on); a spawn never fails because of it.
    pub(crate) fn prepare(
        &self,
        what: &str,
        user_dir: &Path,
        prepare: impl FnOnce(&Path, &Path) -> io::Result<PathBuf>,
    ) -> Option<PathBuf> {
        let state_dir = self.0.clone().unwrap_or_else(crate::logging::state_dir);
        match prepare(user_dir, &state_dir) {
            Ok(private) => Some(private),
            Err(error) => {
                tracing::warn!(
                    %error,
                    user_dir = %user_dir.display(),
                    "cannot prepare {what}; its own retries stay on"
                );
                None
            }
        }
    }
}

/// Where the mirror of `user_dir` lives: `<state_dir>/<tool>/<prefix>-<hash of the user's dir>`.
/// `Ok(None)` when `user_dir` is already one of agentty's mirrors (agentty started from inside
/// an agent it runs): it is used as it is.
pub(crate) fn mirror_path(
    user_dir: &Path,
    state_dir: &Path,
    tool: &str,
    prefix: &str,
) -> io::Result<Option<PathBuf>> {
    let root = state_dir.join(tool);
    fs::create_dir_all(&root)?;
    if is_inside(user_dir, &root) {
        return Ok(None);
    }
    Ok(Some(root.join(format!(
        "{prefix}-{:016x}",
        fnv1a(user_dir.as_os_str().as_encoded_bytes())
    ))))
}

/// Makes every entry of `user_dir` a symlink in `private_dir`, except those `skip` names, and
/// removes the links whose user entry is gone.
pub(crate) fn link_entries(
    user_dir: &Path,
    private_dir: &Path,
    skip: impl Fn(&OsStr) -> bool,
) -> io::Result<()> {
    fs::create_dir_all(private_dir)?;
    let mut linked: HashSet<OsString> = HashSet::new();
    for entry in fs::read_dir(user_dir)? {
        let name = entry?.file_name();
        if skip(&name) {
            continue;
        }
        link(&private_dir.join(&name), &user_dir.join(&name))?;
        linked.insert(name);
    }
    for entry in fs::read_dir(private_dir)? {
        let entry = entry?;
        if entry.file_type()?.is_symlink() && !linked.contains(&entry.file_name()) {
            remove_if_present(&entry.path())?;
        }
    }
    Ok(())
}

/// Writes `private_settings`: the user's settings (read by `parse`; missing, unreadable or not
/// an object counts as `{}`) with `overrides` deep-merged over them.
pub(crate) fn write_settings(
    user_settings: &Path,
    private_settings: &Path,
    parse: fn(&str) -> Option<Value>,
    overrides: Value,
) -> io::Result<()> {
    let mut settings = match fs::read_to_string(user_settings) {
        Ok(text) => match parse(&text).filter(Value::is_object) {
            Some(settings) => settings,
            None => {
                tracing::warn!(path = %user_settings.display(), "settings are not a JSON object; using only agentty's overrides");
                Value::Object(Map::new())
            }
        },
        Err(_) => Value::Object(Map::new()),
    };
    merge(&mut settings, overrides);
    // Pretty JSON of a Value cannot fail.
    write_if_changed(
        private_settings,
        &serde_json::to_string_pretty(&settings).unwrap_or_default(),
    )
}

/// Makes `path` a symlink to `target`. Whatever the CLI created there itself (while the user had
/// no such entry) gives way to the user's entry.
pub(crate) fn link(path: &Path, target: &Path) -> io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            if fs::read_link(path)? == target {
                return Ok(());
            }
            remove_if_present(path)?;
        }
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path)?,
        Ok(_) => remove_if_present(path)?,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    match std::os::unix::fs::symlink(target, path) {
        // A concurrent agentty made the same link.
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        result => result,
    }
}

pub(crate) fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        result => result,
    }
}

/// Deep-merges `overlay` into `base` (objects key by key, anything else replaced).
fn merge(base: &mut Value, overlay: Value) {
    match (base, overlay) {
        (Value::Object(base), Value::Object(overlay)) => {
            for (key, value) in overlay {
                merge(base.entry(key).or_insert(Value::Null), value);
            }
        }
        (base, overlay) => *base = overlay,
    }
}

use crate::files::Durability;

fn write_if_changed(path: &Path, contents: &str) -> io::Result<()> {
    if fs::read_to_string(path).is_ok_and(|current| current == contents) {
        return Ok(());
    }
    crate::files::write_atomically(path, contents.as_bytes(), 0o600, Durability::Synced)
}

fn is_inside(path: &Path, dir: &Path) -> bool {
    match (path.canonicalize(), dir.canonicalize()) {
        (Ok(path), Ok(dir)) => path.starts_with(dir),
        _ => path.starts_with(dir),
    }
}

/// A stable name for the user's dir (std's hasher may change between Rust versions).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
