//! The real CLI captures in `shared/protocols/<cli>/captures`, for fixture and fuzz tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// `shared/` sits beside the crate in CI (`<x>/main`, `<x>/shared`); from a git worktree it is
/// further up, so the nearest ancestor that has it wins.
pub fn captures_dir(cli: &str) -> PathBuf {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let relative = format!("shared/protocols/{cli}/captures");
    crate_dir
        .ancestors()
        .skip(1)
        .map(|dir| dir.join(&relative))
        .find(|dir| dir.is_dir())
        .unwrap_or_else(|| crate_dir.join("..").join(relative))
}

/// Names of the captures that have a stdout stream, sorted.
pub fn capture_names(cli: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(captures_dir(cli))
        .unwrap_or_else(|error| panic!("no captures for {cli}: {error}"))
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            name.strip_suffix(".stdout.jsonl").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
}

/// The stdout lines of one capture.
pub fn stdout_lines(cli: &str, name: &str) -> Vec<String> {
    let path = captures_dir(cli).join(format!("{name}.stdout.jsonl"));
    let bytes = std::fs::read(&path).unwrap_or_else(|error| panic!("{path:?}: {error}"));
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect()
}
