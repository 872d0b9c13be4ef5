//! A generated working tree for the snapshot benches: `pkgNN/modNN/fNN.rs`, 50 × 50 × 20 =
//! 50,000 files of source-like text (words from a small vocabulary, so it compresses about as
//! source does), 12 KiB on average: about 600 MB. Deterministic (a xorshift seeded by the file's
//! number), made once under the system's temporary folder and reused while its marker says it
//! is complete; nothing is read from outside the repository.
// Each bench that includes it uses part of it.
#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};

pub const PACKAGES: usize = 50;
pub const MODULES: usize = 50;
pub const FILES: usize = 20;

const WORDS: [&str; 48] = [
    "fn", "let", "mut", "self", "match", "Some", "None", "Ok", "Err", "impl", "pub", "struct",
    "enum", "return", "if", "else", "for", "in", "while", "loop", "break", "continue", "use",
    "crate", "super", "mod", "const", "static", "where", "type", "trait", "dyn", "async", "await",
    "move", "ref", "as", "u64", "usize", "String", "Vec", "Option", "Result", "value", "index",
    "state", "entry", "path",
];

/// The tree's folder (`AGENTTY_BENCH_TREE_DIR`, else under the temporary folder).
pub fn tree_dir() -> PathBuf {
    std::env::var_os("AGENTTY_BENCH_TREE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("agentty-bench-tree-50k"))
}

/// The relative path of file `index` (0 ..= 49,999).
pub fn file_path(index: usize) -> String {
    let file = index % FILES;
    let module = (index / FILES) % MODULES;
    let package = index / (FILES * MODULES);
    format!("pkg{package:02}/mod{module:02}/f{file:02}.rs")
}

/// File `index`'s bytes: 2 to 22 KiB of lines of words.
fn content(index: usize) -> Vec<u8> {
    let mut state = (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let size = 2048 + (next() % (20 * 1024)) as usize;
    let mut out = Vec::with_capacity(size + 64);
    while out.len() < size {
        let indent = (next() % 4) as usize * 4;
        out.extend(std::iter::repeat_n(b' ', indent));
        let words = 3 + next() % 9;
        for word in 0..words {
            if word > 0 {
                out.push(b' ');
            }
            out.extend_from_slice(WORDS[(next() % WORDS.len() as u64) as usize].as_bytes());
        }
        out.extend_from_slice(b";\n");
    }
    out
}

/// Makes the tree (once) and returns its folder, its file count and its bytes.
pub fn ensure() -> (PathBuf, usize, u64) {
    let dir = tree_dir();
    let marker = dir.join(".complete");
    let count = PACKAGES * MODULES * FILES;
    if let Ok(text) = std::fs::read_to_string(&marker) {
        if let Ok(bytes) = text.trim().parse::<u64>() {
            return (dir, count, bytes);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    let mut bytes = 0u64;
    for index in 0..count {
        let path = dir.join(file_path(index));
        if index % FILES == 0 {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        }
        let content = content(index);
        bytes += content.len() as u64;
        std::fs::File::create(&path)
            .and_then(|mut file| file.write_all(&content))
            .unwrap();
    }
    // Not a file of the tree's: git and agentty leave it out alike.
    std::fs::write(dir.join(".gitignore"), "/.complete\n").unwrap();
    std::fs::write(&marker, bytes.to_string()).unwrap();
    (dir, count, bytes)
}

/// Appends a line to each of the first `count` files (a turn's edits).
pub fn touch(dir: &Path, count: usize, turn: usize) {
    for index in 0..count {
        let path = dir.join(file_path(index * 997 % (PACKAGES * MODULES * FILES)));
        let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        writeln!(file, "// edited by turn {turn}").unwrap();
    }
}
