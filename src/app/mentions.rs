//! `@` file mentions: the files a mention can name, ranked by a fuzzy match, and how a mention
//! reaches the agent.
//!
//! The list is walked on each new mention (in the background) from the working directory with
//! ripgrep's `ignore` walker, so `.gitignore`d files stay out. It is complete up to
//! [`MAX_FILES`] paths and sorted, shallowest first; past that the deepest paths are the ones
//! left out, and the chat says so once.
//! Hidden files that are not ignored are listed (`.github/workflows/ci.yml` is often what the
//! user means), except the `.git` directory itself; folders are listed too, with a trailing
//! `/`, so a mention can name one and Tab on one goes on into it. Ranking uses nucleo's matcher (Helix's) in its path mode. A completed mention is
//! shown as `@path`; the agent receives the bare relative path, which every CLI understands
//! because it runs in the same working directory and reads files itself.

use std::collections::HashSet;
use std::path::Path;

use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher};

/// Paths listed at most (a huge tree must not stall the popup or fill memory): more than the
/// snapshots keep, so any tree they cover is listed whole.
pub(crate) const MAX_FILES: usize = 200_000;
/// Paths walked at most before the list is sorted and cut.
const WALK_LIMIT: usize = 1_000_000;

/// The paths of a tree for `@`, and how many there were when they had to be cut.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FileListing {
    pub(crate) files: Vec<String>,
    /// Paths found (at least) when more than [`MAX_FILES`] were.
    pub(crate) cut_from: Option<usize>,
}
/// Suggestions shown at once.
pub const MAX_SUGGESTIONS: usize = 8;

/// The files under the working directory, as relative paths with `/` separators.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum FileIndex {
    #[default]
    NotListed,
    Listing,
    Listed(Vec<String>),
}

impl FileIndex {
    pub(crate) fn files(&self) -> &[String] {
        match self {
            FileIndex::Listed(files) => files,
            FileIndex::NotListed | FileIndex::Listing => &[],
        }
    }
}

/// Walks `root` for files and folders (respecting `.gitignore` and `.ignore`, even outside a
/// git repository; hidden ones included, `.git` not), sorted shallowest first, at most `limit`
/// of them (the deepest are left out). A folder is listed as `path/`.
pub(crate) fn list_files(root: &Path, limit: usize) -> FileListing {
    let mut files: Vec<String> = ignore::WalkBuilder::new(root)
        .require_git(false)
        .hidden(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .build()
        .filter_map(Result::ok)
        .filter(|entry| entry.depth() > 0)
        .filter_map(|entry| {
            let kind = entry.file_type()?;
            let folder = kind.is_dir();
            if !folder && !kind.is_file() {
                return None;
            }
            let relative = entry.path().strip_prefix(root).ok()?;
            let parts: Vec<&str> = relative
                .components()
                .map(|part| part.as_os_str().to_str())
                .collect::<Option<_>>()?;
            let path = parts.join("/");
            Some(if folder { path + "/" } else { path })
        })
        // A name with control characters (an escape sequence in a file name) is not offered:
        // shown inert it would no longer name the file.
        .filter(|path| crate::sanitize::is_inert(path))
        .take(WALK_LIMIT)
        .collect();
    // Shallow first (a folder's own slash does not count).
    let depth = |path: &str| path.trim_end_matches('/').matches('/').count();
    files.sort_unstable_by(|a, b| (depth(a), a.as_str()).cmp(&(depth(b), b.as_str())));
    let found = files.len();
    files.truncate(limit);
    files.shrink_to_fit();
    FileListing {
        files,
        cut_from: (found > limit).then_some(found),
    }
}

/// The best matches of `query` among `files`, best first (ties keep the listing's order).
pub fn rank(query: &str, files: &[String], limit: usize) -> Vec<String> {
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    Pattern::parse(query, CaseMatching::Smart, Normalization::Smart)
        .match_list(files.iter(), &mut matcher)
        .into_iter()
        .take(limit)
        .map(|(file, _)| file.clone())
        .collect()
}

/// The mention being typed: the `@word` that ends at the cursor, given the text before the
/// cursor. Returns the query (after `@`) when the word starts with `@` at a word start.
pub(crate) fn mention_before_cursor(before_cursor: &str) -> Option<&str> {
    let word_start = before_cursor
        .rfind(char::is_whitespace)
        .map_or(0, |index| index + 1);
    before_cursor[word_start..].strip_prefix('@')
}

/// How `path` is written in the input when a mention completes (a path with spaces is quoted so
/// that it stays one word). No space follows, so `:10-20` can be typed right after it.
pub(crate) fn mention_text(path: &str) -> String {
    if path.contains(char::is_whitespace) {
        format!("@\"{path}\"")
    } else {
        format!("@{path}")
    }
}

/// Whether a listed path is a folder (a mention of one goes on into it).
pub(crate) fn is_folder(path: &str) -> bool {
    path.ends_with('/')
}

/// The prompt as the agent receives it: every `@path` (or `@"path"`) that names a listed file
/// becomes the bare path; any other `@word` (an e-mail, a handle) is left as typed.
pub(crate) fn resolve_mentions(prompt: &str, files: &[String]) -> String {
    if !prompt.contains('@') || files.is_empty() {
        return prompt.to_owned();
    }
    let known: HashSet<&str> = files.iter().map(String::as_str).collect();
    let mut out = String::with_capacity(prompt.len());
    let mut rest = prompt;
    while let Some(at) = rest.find('@') {
        out.push_str(&rest[..at]);
        let preceded_ok = out.chars().next_back().is_none_or(char::is_whitespace);
        let after = &rest[at + 1..];
        if preceded_ok {
            if let Some((word, used)) = mention_path(after) {
                // `@path:12` or `@path:12-40`: a line range, kept after the bare path.
                let (path, range) = split_line_range(word);
                if known.contains(path) {
                    let path = if range.is_empty() { path } else { word };
                    if path.contains(char::is_whitespace) {
                        out.push('"');
                        out.push_str(path);
                        out.push('"');
                    } else {
                        out.push_str(path);
                    }
                    rest = &after[used..];
                    continue;
                }
            }
        }
        out.push('@');
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A mention's path and its line range suffix (`:12`, `:12-40`), if it has one.
fn split_line_range(word: &str) -> (&str, &str) {
    if let Some((path, range)) = word.rsplit_once(':') {
        let mut bounds = range.splitn(2, '-');
        let numeric = |part: Option<&str>| {
            part.is_some_and(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        };
        let first = bounds.next();
        let second = bounds.next();
        if numeric(first) && (second.is_none() || numeric(second)) {
            return (path, range);
        }
    }
    (word, "")
}

/// The path after an `@`: quoted, or up to whitespace, without trailing sentence punctuation.
/// Returns it and the bytes it used.
fn mention_path(after: &str) -> Option<(&str, usize)> {
    if let Some(quoted) = after.strip_prefix('"') {
        let end = quoted.find('"')?;
        return Some((&quoted[..end], end + 2));
    }
    let end = after.find(char::is_whitespace).unwrap_or(after.len());
    let word = after[..end].trim_end_matches([',', '.', ';', ':', '!', '?', ')']);
    (!word.is_empty()).then_some((word, word.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files() -> Vec<String> {
        [
            "README.md",
            "src/main.rs",
            "src/app/state.rs",
            "my notes.txt",
        ]
        .map(String::from)
        .to_vec()
    }

    #[test]
    fn the_mention_at_the_cursor_is_found() {
        assert_eq!(mention_before_cursor("look at @src/ma"), Some("src/ma"));
        assert_eq!(mention_before_cursor("@"), Some(""));
        assert_eq!(mention_before_cursor("mail me@host"), None);
        assert_eq!(mention_before_cursor("@done and more"), None);
    }

    #[test]
    fn fuzzy_ranking_puts_the_closest_path_first() {
        assert_eq!(rank("state", &files(), 3)[0], "src/app/state.rs");
        assert_eq!(rank("srcmain", &files(), 3)[0], "src/main.rs");
        assert!(rank("zzz", &files(), 3).is_empty());
        assert_eq!(rank("", &files(), 2), ["README.md", "src/main.rs"]);
    }

    #[test]
    fn mentions_reach_the_agent_as_bare_paths() {
        assert_eq!(
            resolve_mentions("explain @src/main.rs, then @README.md.", &files()),
            "explain src/main.rs, then README.md."
        );
        assert_eq!(
            resolve_mentions("read @\"my notes.txt\" now", &files()),
            "read \"my notes.txt\" now"
        );
        assert_eq!(
            resolve_mentions("see @src/main.rs:10-20 and @README.md:3", &files()),
            "see src/main.rs:10-20 and README.md:3"
        );
        assert_eq!(
            resolve_mentions("odd @src/main.rs:x", &files()),
            "odd @src/main.rs:x"
        );
        assert_eq!(
            resolve_mentions("mail me@example.com about @nobody", &files()),
            "mail me@example.com about @nobody"
        );
    }

    #[test]
    fn listing_respects_gitignore_and_skips_hostile_names() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        std::fs::create_dir_all(root.join("target")).unwrap();
        std::fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
        for file in [
            "a.txt",
            "src/lib.rs",
            "src/deep/x.rs",
            "target/out",
            "debug.log",
            ".secret",
            "evil\u{1b}]0;title\u{7}.txt",
        ] {
            std::fs::write(root.join(file), "").unwrap();
        }
        assert_eq!(
            list_files(root, MAX_FILES).files,
            [
                ".gitignore",
                ".secret",
                "a.txt",
                "src/",
                "src/deep/",
                "src/lib.rs",
                "src/deep/x.rs"
            ]
        );
        let cut = list_files(root, 1);
        assert_eq!(cut.files, [".gitignore"], "the shallowest stay");
        assert_eq!(cut.cut_from, Some(7), "and the cut is said");
    }

    #[test]
    fn hidden_files_that_are_not_ignored_and_folders_are_listed_but_not_git_itself() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".github/workflows")).unwrap();
        std::fs::create_dir_all(root.join(".git/objects")).unwrap();
        std::fs::create_dir_all(root.join(".cache")).unwrap();
        std::fs::write(root.join(".gitignore"), ".cache/\n").unwrap();
        std::fs::write(root.join(".github/workflows/ci.yml"), "").unwrap();
        std::fs::write(root.join(".git/HEAD"), "").unwrap();
        std::fs::write(root.join(".cache/blob"), "").unwrap();
        let listed = list_files(root, MAX_FILES).files;
        assert!(
            listed.contains(&".github/workflows/ci.yml".to_owned()),
            "{listed:?}"
        );
        assert!(
            listed.contains(&".github/workflows/".to_owned()),
            "{listed:?}"
        );
        assert!(
            listed.iter().all(|path| !path.starts_with(".git/")),
            "{listed:?}"
        );
        assert!(
            listed.iter().all(|path| !path.starts_with(".cache")),
            "{listed:?}"
        );
        assert_eq!(rank("ci.yml", &listed, 1), [".github/workflows/ci.yml"]);
        // A mentioned folder reaches the agent as its bare path.
        assert_eq!(
            resolve_mentions("look in @.github/workflows/ please", &listed),
            "look in .github/workflows/ please"
        );
    }

    #[test]
    fn a_completed_mention_ends_at_the_path_so_a_line_range_can_follow() {
        assert_eq!(mention_text("src/main.rs"), "@src/main.rs");
        assert_eq!(mention_text("my notes.txt"), "@\"my notes.txt\"");
        assert!(is_folder("src/") && !is_folder("src/main.rs"));
    }
}
