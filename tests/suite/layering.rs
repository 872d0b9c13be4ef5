//! The layers of DESIGN.md, checked on the source of `src/`:
//!
//! - DIRECTION: a module only uses modules of its own layer or of the layers below it
//!   ([`LAYERS`], lowest first);
//! - no top-level module depends, directly or through others, on a module that depends on it,
//!   counting test code too (a test may reach up a layer, never round a circle);
//! - no file inside a folder depends, through its siblings, on itself (`app/completion.rs` ->
//!   `app/state.rs` -> `app/completion.rs` is a circle even though both are `app`);
//! - nothing below `app` names the terminal crates (ratatui, crossterm, tui-textarea), not even
//!   in its tests.
//!
//! The graph is read from the source with a small tokenizer: comments, strings and character
//! literals are left out; `use` trees with groups (`use crate::{a, b::{c, d}}`), paths used
//! inline (`crate::x::f()`), `super::` / `self::` paths and paths through a file's own child
//! modules are edges, resolved to the file that defines the longest module prefix. Code under
//! `#[cfg(test)]` (a `mod tests { … }`, a `#[cfg(test)] mod x;` file, a test-only `use`) is read
//! too and its edges are marked test-only: they are exempt from DIRECTION only.
//!
//! There are no exceptions: every violation fails the test.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, lowest first; a module may use its own layer and those below it. From
/// DESIGN.md's data flow (process -> provider (mapper) -> orchestrator -> app state -> view,
/// the chat loop on top) and the shared modules the code puts beneath or beside them.
const LAYERS: &[(&str, &[&str])] = &[
    // Leaves that use nothing of the crate: the shared message stream, making text inert,
    // files, images attached to a prompt, threads for background work, and the demo agent (a
    // program of its own, whose scenario names the demo backend reads).
    (
        "leaves",
        &[
            "stream",
            "sanitize",
            "files",
            "attachment",
            "background",
            "console",
            "demo_agent",
        ],
    ),
    // What every layer may read: logging, the configuration, working-tree snapshots.
    ("base", &["logging", "snapshot", "config"]),
    ("process", &["process"]),
    ("provider", &["provider"]),
    ("orchestrator", &["orchestrator"]),
    // The record of conversations, written from the orchestrator's events.
    ("record", &["session_log", "retention"]),
    ("app", &["app"]),
    ("view", &["view"]),
    // The terminal, the loop, `agentty run`, what starts them, and what each signal means to
    // them (job control reaches the agents' process groups).
    (
        "chat",
        &[
            "tui", "chat", "headless", "launch", "cli", "startup", "signals",
        ],
    ),
];

/// The first layer allowed to name the terminal crates.
const TERMINAL_FROM_LAYER: &str = "app";
const TERMINAL_CRATES: &[&str] = &["ratatui", "crossterm", "tui_textarea"];

#[test]
fn the_source_keeps_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = read_source(&src);
    assert!(
        files.iter().any(|file| file.module == ["app", "state"]),
        "the source reader did not find src/app/state.rs"
    );
    let found = violations(&files);
    let graph = describe(&top_level_graph(&files, true));
    assert!(
        found.is_empty(),
        "layering violations: {found:#?}\n\nmodule graph:\n{graph}"
    );
    // Shown with `--nocapture`: the graph the checks passed on.
    eprintln!("module graph (no cycle, no arrow up a layer, no circle in a folder):\n{graph}");
}

// ---- The checks ----

/// One file of `src/`: its module path, whether it is compiled for tests only, and what it uses.
#[derive(Debug)]
struct SourceFile {
    path: PathBuf,
    module: Vec<String>,
    test_only: bool,
    uses: Vec<Use>,
}

/// A path the file names: a module path inside the crate, or an external crate's name.
#[derive(Debug, Clone, PartialEq)]
struct Use {
    target: Target,
    test: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Target {
    /// Segments from the crate root (not yet cut to a module).
    Crate(Vec<String>),
    External(String),
}

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Every violation, each as one line.
fn violations(files: &[SourceFile]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let rank = layer_ranks();
    let terminal_rank = LAYERS
        .iter()
        .position(|(layer, _)| *layer == TERMINAL_FROM_LAYER)
        .expect("the terminal layer is one of LAYERS");
    let modules: BTreeSet<Vec<String>> = files.iter().map(|file| file.module.clone()).collect();
    for file in files.iter().filter(|file| !file.module.is_empty()) {
        let top = &file.module[0];
        let Some(&from_rank) = rank.get(top.as_str()) else {
            found.insert(format!("{top} is in no layer of LAYERS"));
            continue;
        };
        for used in &file.uses {
            let test = used.test || file.test_only;
            match &used.target {
                Target::External(name) if from_rank < terminal_rank => {
                    found.insert(format!("{} uses {name}", display(&file.path)));
                }
                Target::External(_) => {}
                Target::Crate(path) => {
                    let Some(target) = resolve(&modules, path) else {
                        continue;
                    };
                    let Some(to) = target.first() else { continue };
                    match rank.get(to.as_str()) {
                        Some(&to_rank) if to_rank > from_rank && !test => {
                            found.insert(format!("{top} -> {to} (up a layer)"));
                        }
                        Some(_) => {}
                        None => {
                            found.insert(format!("{to} is in no layer of LAYERS"));
                        }
                    }
                }
            }
        }
    }
    for cycle in cycles(&top_level_graph(files, true)) {
        found.insert(format!(
            "cycle between top-level modules: {}",
            cycle.join(", ")
        ));
    }
    for (folder, graph) in folder_graphs(files) {
        for cycle in cycles(&graph) {
            found.insert(format!("cycle in src/{folder}/: {}", cycle.join(", ")));
        }
    }
    found
}

fn layer_ranks() -> BTreeMap<&'static str, usize> {
    let mut rank = BTreeMap::new();
    for (index, (_, modules)) in LAYERS.iter().enumerate() {
        for module in *modules {
            assert!(
                rank.insert(*module, index).is_none(),
                "{module} twice in LAYERS"
            );
        }
    }
    rank
}

/// The longest prefix of `path` that is a module with a file of its own.
fn resolve(modules: &BTreeSet<Vec<String>>, path: &[String]) -> Option<Vec<String>> {
    (1..=path.len())
        .rev()
        .map(|len| path[..len].to_vec())
        .find(|prefix| modules.contains(prefix))
}

/// Top-level module -> the top-level modules it uses (`lib.rs` and `main.rs` are the root, not
/// a module); with `tests`, test code's uses too.
fn top_level_graph(files: &[SourceFile], tests: bool) -> Graph {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|file| file.module.clone()).collect();
    let mut graph = Graph::new();
    for file in files.iter().filter(|file| !file.module.is_empty()) {
        let from = file.module[0].clone();
        let targets = graph.entry(from.clone()).or_default();
        for path in crate_paths(file, tests) {
            if let Some(to) = resolve(&modules, path).and_then(|module| module.first().cloned()) {
                if to != from {
                    targets.insert(to);
                }
            }
        }
    }
    graph
}

/// For each folder of `src/`, the graph between the files and subfolders directly in it (a
/// folder's `mod.rs`, and `x.rs` beside `x/`, belong to the folder's parent: they declare it).
fn folder_graphs(files: &[SourceFile]) -> BTreeMap<String, Graph> {
    let modules: BTreeSet<Vec<String>> = files.iter().map(|file| file.module.clone()).collect();
    let mut graphs: BTreeMap<String, Graph> = BTreeMap::new();
    for file in files {
        for path in crate_paths(file, true) {
            let Some(target) = resolve(&modules, path) else {
                continue;
            };
            // The deepest folder holding both, and the child of it each lies in.
            let shared = file
                .module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if shared == 0 || shared >= file.module.len() || shared >= target.len() {
                continue; // across top-level modules, or to a module's own parent
            }
            let folder = file.module[..shared].join("/");
            let from = file.module[shared].clone();
            let to = target[shared].clone();
            let graph = graphs.entry(folder).or_default();
            graph.entry(to.clone()).or_default();
            graph.entry(from).or_default().insert(to);
        }
    }
    graphs
}

fn crate_paths(file: &SourceFile, tests: bool) -> impl Iterator<Item = &Vec<String>> {
    file.uses
        .iter()
        .filter(move |used| tests || !(used.test || file.test_only))
        .filter_map(|used| match &used.target {
            Target::Crate(path) => Some(path),
            Target::External(_) => None,
        })
}

/// Strongly connected components of more than one node (Tarjan), each sorted, in name order.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct Search<'a> {
        graph: &'a Graph,
        next_index: usize,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    impl<'a> Search<'a> {
        fn visit(&mut self, node: &'a str) {
            self.index.insert(node, self.next_index);
            self.low.insert(node, self.next_index);
            self.next_index += 1;
            self.stack.push(node);
            self.on_stack.insert(node);
            for target in &self.graph[node] {
                let target = target.as_str();
                if !self.graph.contains_key(target) {
                    continue;
                }
                if !self.index.contains_key(target) {
                    self.visit(target);
                    let low = self.low[node].min(self.low[target]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(target) {
                    let low = self.low[node].min(self.index[target]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    component.push(member.to_string());
                    if member == node {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut search = Search {
        graph,
        next_index: 0,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for node in graph.keys() {
        if !search.index.contains_key(node.as_str()) {
            search.visit(node);
        }
    }
    search.found.sort();
    search.found
}

fn describe(graph: &Graph) -> String {
    graph
        .iter()
        .map(|(module, targets)| format!("{module} -> {targets:?}\n"))
        .collect()
}

fn display(path: &Path) -> String {
    let text = path.display().to_string();
    match text.find("/src/") {
        Some(at) => text[at + 1..].to_string(),
        None => text,
    }
}

// ---- Reading the source ----

/// Every `.rs` file under `src`, with its module path and what it uses; files declared as
/// `#[cfg(test)] mod x;` (and everything under them) are test-only.
fn read_source(src: &Path) -> Vec<SourceFile> {
    let mut paths = Vec::new();
    collect_rust_files(src, &mut paths);
    paths.sort();
    let mut files: Vec<SourceFile> = Vec::new();
    let mut test_modules: BTreeSet<Vec<String>> = BTreeSet::new();
    for path in paths {
        let module = module_path(src, &path);
        let source = fs::read_to_string(&path).expect("readable source file");
        let parsed = parse(&source, &module);
        for child in parsed.test_children {
            let mut child_module = module.clone();
            child_module.push(child);
            test_modules.insert(child_module);
        }
        files.push(SourceFile {
            path,
            module,
            test_only: false,
            uses: parsed.uses,
        });
    }
    for file in &mut files {
        file.test_only = test_modules
            .iter()
            .any(|test| file.module.starts_with(test));
    }
    files
}

fn collect_rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect_rust_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}

/// `src/app/state.rs` -> `[app, state]`; `src/app/mod.rs` -> `[app]`; `lib.rs`, `main.rs` -> `[]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).expect("file under src");
    let mut parts: Vec<String> = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.strip_suffix(".rs").unwrap_or(&last);
    if parts.is_empty() && (stem == "lib" || stem == "main") {
        return Vec::new();
    }
    if stem != "mod" {
        parts.push(stem.to_string());
    }
    parts
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    /// `::`
    PathSep,
    Punct(char),
}

/// The tokens of `source` that matter here: identifiers, `::` and single punctuation, with
/// comments, strings, character literals and lifetimes left out.
fn tokenize(source: &str) -> Vec<Token> {
    let chars: Vec<char> = source.chars().collect();
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        let next = chars.get(at + 1).copied();
        if c == '/' && next == Some('/') {
            while at < chars.len() && chars[at] != '\n' {
                at += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while at < chars.len() {
                if chars[at] == '/' && chars.get(at + 1) == Some(&'*') {
                    depth += 1;
                    at += 2;
                } else if chars[at] == '*' && chars.get(at + 1) == Some(&'/') {
                    depth -= 1;
                    at += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    at += 1;
                }
            }
        } else if c == '"' {
            at = skip_string(&chars, at + 1);
        } else if (c == 'r' || c == 'b')
            && raw_string_start(&chars, at).is_some()
            && !is_ident_char(chars.get(at.wrapping_sub(1)).copied())
        {
            let (hashes, quote) = raw_string_start(&chars, at).expect("checked");
            at = quote + 1;
            loop {
                if at >= chars.len() {
                    break;
                }
                if chars[at] == '"' && (1..=hashes).all(|k| chars.get(at + k) == Some(&'#')) {
                    at += 1 + hashes;
                    break;
                }
                at += 1;
            }
        } else if c == '\'' {
            // A character literal ('a', '\n', '\u{1b}'), else a lifetime ('a).
            if next == Some('\\') {
                at += 2;
                while at < chars.len() && chars[at] != '\'' {
                    at += 1;
                }
                at += 1;
            } else if chars.get(at + 2) == Some(&'\'') {
                at += 3;
            } else {
                at += 1;
                while is_ident_char(chars.get(at).copied()) {
                    at += 1;
                }
            }
        } else if is_ident_start(c) {
            let start = at;
            while is_ident_char(chars.get(at).copied()) {
                at += 1;
            }
            let word: String = chars[start..at].iter().collect();
            // b"..." and r"..." were handled above; a byte char b'x' is skipped here.
            if word == "b" && chars.get(at) == Some(&'\'') {
                at = skip_char_literal(&chars, at);
            } else {
                tokens.push(Token::Ident(word));
            }
        } else if c == ':' && next == Some(':') {
            tokens.push(Token::PathSep);
            at += 2;
        } else if c.is_whitespace() {
            at += 1;
        } else {
            tokens.push(Token::Punct(c));
            at += 1;
        }
    }
    tokens
}

fn skip_string(chars: &[char], mut at: usize) -> usize {
    while at < chars.len() {
        match chars[at] {
            '\\' => at += 2,
            '"' => return at + 1,
            _ => at += 1,
        }
    }
    at
}

fn skip_char_literal(chars: &[char], at: usize) -> usize {
    let mut at = at + 1;
    if chars.get(at) == Some(&'\\') {
        at += 2;
    } else {
        at += 1;
    }
    while at < chars.len() && chars[at] != '\'' {
        at += 1;
    }
    at + 1
}

/// At `r"`, `r#"`, `br"`, `b"`…: how many `#` and where the opening quote is.
fn raw_string_start(chars: &[char], at: usize) -> Option<(usize, usize)> {
    let mut at = at;
    if chars[at] == 'b' {
        at += 1;
        if chars.get(at) == Some(&'"') {
            return Some((0, at));
        }
    }
    if chars.get(at) != Some(&'r') {
        return None;
    }
    at += 1;
    let mut hashes = 0;
    while chars.get(at) == Some(&'#') {
        hashes += 1;
        at += 1;
    }
    (chars.get(at) == Some(&'"')).then_some((hashes, at))
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident_char(c: Option<char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric() || c == '_')
}

struct Parsed {
    uses: Vec<Use>,
    /// Child modules declared `#[cfg(test)] mod name;`.
    test_children: Vec<String>,
}

/// An open `{ … }`: an inline module (its name) or any other block, and whether it is test code.
struct Block {
    module: Option<String>,
    test: bool,
}

/// What a file of module `module` uses, test code marked.
fn parse(source: &str, module: &[String]) -> Parsed {
    let tokens = tokenize(source);
    let ident = |at: usize| match tokens.get(at) {
        Some(Token::Ident(word)) => Some(word.as_str()),
        _ => None,
    };
    // Child modules declared in the file itself (`mod x;`), which paths may start with.
    let children: BTreeSet<String> = (0..tokens.len())
        .filter(|&at| ident(at) == Some("mod") && tokens.get(at + 2) == Some(&Token::Punct(';')))
        .filter_map(|at| ident(at + 1).map(str::to_string))
        .collect();
    let mut parsed = Parsed {
        uses: Vec::new(),
        test_children: Vec::new(),
    };
    let mut blocks: Vec<Block> = Vec::new();
    // An item's `#[cfg(test)]`, pending until the item's `;` or `{`.
    let mut test_item = false;
    let mut at = 0;
    while at < tokens.len() {
        let in_test = test_item || blocks.iter().any(|block| block.test);
        match &tokens[at] {
            Token::Punct('#') => {
                let (end, test) = read_attribute(&tokens, at);
                test_item |= test;
                at = end;
                continue;
            }
            Token::Punct('{') => {
                let inline_module = (at >= 2 && ident(at - 2) == Some("mod"))
                    .then(|| ident(at - 1).map(str::to_string))
                    .flatten();
                blocks.push(Block {
                    module: inline_module,
                    test: test_item,
                });
                test_item = false;
            }
            Token::Punct('}') => {
                blocks.pop();
                test_item = false;
            }
            Token::Punct(';') => test_item = false,
            Token::Ident(word)
                if word == "mod" && tokens.get(at + 2) == Some(&Token::Punct(';')) =>
            {
                if let Some(name) = ident(at + 1).filter(|_| in_test) {
                    parsed.test_children.push(name.to_string());
                }
            }
            Token::Ident(word) => {
                let after_path =
                    at > 0 && matches!(tokens[at - 1], Token::PathSep | Token::Punct('.'));
                let starts_path = tokens.get(at + 1) == Some(&Token::PathSep);
                let in_use = at > 0 && ident(at - 1) == Some("use");
                if !after_path && (starts_path || in_use) {
                    // The module the code stands in: the file's, plus open inline modules.
                    let mut here = module.to_vec();
                    here.extend(blocks.iter().filter_map(|block| block.module.clone()));
                    let nested = blocks.iter().any(|block| block.module.is_some());
                    let (end, paths) = read_tree(&tokens, at, Vec::new());
                    for path in paths {
                        if let Some(target) = target_of(&path, &here, &children, nested, word) {
                            parsed.uses.push(Use {
                                target,
                                test: in_test,
                            });
                        }
                    }
                    at = end;
                    continue;
                }
            }
            _ => {}
        }
        at += 1;
    }
    parsed
}

/// Reads `#[ … ]` at `at`: where it ends and whether it is `cfg(test)` (or a `cfg(all(test, …))`,
/// never a `cfg(not(test))`).
fn read_attribute(tokens: &[Token], at: usize) -> (usize, bool) {
    let mut at = at + 1;
    if tokens.get(at) == Some(&Token::Punct('!')) {
        at += 1;
    }
    if tokens.get(at) != Some(&Token::Punct('[')) {
        return (at, false);
    }
    let start = at;
    let mut depth = 0;
    while at < tokens.len() {
        match tokens[at] {
            Token::Punct('[') => depth += 1,
            Token::Punct(']') => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            _ => {}
        }
        at += 1;
    }
    let words: Vec<&str> = tokens[start..at]
        .iter()
        .filter_map(|token| match token {
            Token::Ident(word) => Some(word.as_str()),
            _ => None,
        })
        .collect();
    let test = words.first() == Some(&"cfg") && words.contains(&"test") && !words.contains(&"not");
    (at + 1, test)
}

/// Reads a path or `use` tree starting at `at` (`a::b`, `a::{b, c::{d, e as f}}`, `a::*`):
/// where it ends and every full path in it.
fn read_tree(tokens: &[Token], at: usize, prefix: Vec<String>) -> (usize, Vec<Vec<String>>) {
    let mut path = prefix;
    let mut at = at;
    loop {
        match tokens.get(at) {
            Some(Token::Ident(word)) => {
                path.push(word.clone());
                at += 1;
            }
            Some(Token::Punct('{')) => {
                let mut paths = Vec::new();
                at += 1;
                loop {
                    match tokens.get(at) {
                        Some(Token::Punct('}')) | None => return (at + 1, paths),
                        Some(Token::Punct(',')) => at += 1,
                        Some(Token::Ident(word)) if word == "as" => at += 2,
                        Some(Token::Punct('*')) => at += 1,
                        Some(Token::Ident(word)) if word == "self" => {
                            paths.push(path.clone());
                            at += 1;
                        }
                        Some(_) => {
                            let (end, inner) = read_tree(tokens, at, path.clone());
                            paths.extend(inner);
                            // Stop at what is not part of the tree.
                            at = if end == at { at + 1 } else { end };
                        }
                    }
                }
            }
            _ => return (at, vec![path]),
        }
        if tokens.get(at) == Some(&Token::PathSep) {
            at += 1;
        } else {
            return (at, vec![path]);
        }
    }
}

/// Where `path` (as written in module `here`) leads: into the crate, to a terminal crate, or
/// nowhere of interest (another crate, a local name).
fn target_of(
    path: &[String],
    here: &[String],
    children: &BTreeSet<String>,
    nested: bool,
    first: &str,
) -> Option<Target> {
    let mut module = here.to_vec();
    let mut rest = path;
    match first {
        "crate" => {
            module.clear();
            rest = &path[1..];
        }
        "self" | "super" => {
            while let Some(step) = rest.first() {
                match step.as_str() {
                    "self" => {}
                    "super" => {
                        module.pop()?;
                    }
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        name if TERMINAL_CRATES.contains(&name) => {
            return Some(Target::External(name.to_string()));
        }
        // A path through one of the file's own child modules.
        name if !nested && children.contains(name) => {}
        _ => return None,
    }
    module.extend(rest.iter().cloned());
    Some(Target::Crate(module))
}

// ---- The reader's and the checks' own tests ----

fn parsed_targets(source: &str, module: &[&str]) -> Vec<(String, bool)> {
    let module: Vec<String> = module.iter().map(|part| part.to_string()).collect();
    parse(source, &module)
        .uses
        .into_iter()
        .map(|used| match used.target {
            Target::Crate(path) => (path.join("::"), used.test),
            Target::External(name) => (format!("extern {name}"), used.test),
        })
        .collect()
}

#[test]
fn grouped_imports_inline_paths_and_test_code_are_read() {
    let source = r#"
        use crate::{stream::AgentMessage, provider::{runner::{Runner, EndedBy}, Mapper as M}};
        use super::keymap::{self, Action};
        // crate::view in a comment
        /* crate::chat in a block comment */
        const S: &str = "crate::tui in a string";
        fn f<'a>(x: &'a str) -> char { crate::process::stop(); self::helper::g(); 'x' }
        use ratatui::text::Line;
        #[cfg(test)]
        mod tests {
            use super::*;
            use crate::view::render;
            fn g() { super::super::menu::open(); }
        }
        fn after_tests() { crate::orchestrator::run(); }
        #[cfg(test)]
        mod fsm_tests;
    "#;
    assert_eq!(
        parsed_targets(source, &["app", "state"]),
        [
            ("stream::AgentMessage", false),
            ("provider::runner::Runner", false),
            ("provider::runner::EndedBy", false),
            ("provider::Mapper", false),
            ("app::keymap", false),
            ("app::keymap::Action", false),
            ("process::stop", false),
            ("app::state::helper::g", false),
            ("extern ratatui", false),
            ("app::state", true),
            ("view::render", true),
            ("app::menu::open", true),
            ("orchestrator::run", false),
        ]
        .map(|(path, test)| (path.to_string(), test))
    );
    let parsed = parse(source, &["app".to_string()]);
    assert_eq!(parsed.test_children, ["fsm_tests"]);
}

#[test]
fn the_checks_report_direction_terminal_crates_and_circles_in_a_folder() {
    let file = |module: &[&str], source: &str| {
        let module: Vec<String> = module.iter().map(|part| part.to_string()).collect();
        SourceFile {
            path: PathBuf::from(format!("/x/src/{}.rs", module.join("/"))),
            uses: parse(source, &module).uses,
            module,
            test_only: false,
        }
    };
    let files = [
        file(&["app"], "mod completion; mod state;"),
        file(&["app", "completion"], "use super::state::AppState;"),
        file(
            &["app", "state"],
            "use crate::app::completion::{Completion};",
        ),
        file(
            &["provider"],
            "use crate::{view::x, process::spawn}; use crossterm::event::Key;",
        ),
        file(
            &["process"],
            "#[cfg(test)] mod tests { use crate::provider::y; }",
        ),
        file(
            &["view"],
            "use crate::{app::state::AppState, stream::AgentMessage};",
        ),
        file(&["stream"], ""),
    ];
    let found: Vec<String> = violations(&files).into_iter().collect();
    assert_eq!(
        found,
        [
            "cycle between top-level modules: process, provider",
            "cycle in src/app/: completion, state",
            "provider -> view (up a layer)",
            "src/provider.rs uses crossterm",
        ]
    );
}

#[test]
fn cycle_finder_reports_a_cycle_through_three_modules() {
    let graph: Graph = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]
        .iter()
        .fold(Graph::new(), |mut graph, (from, to)| {
            graph
                .entry(from.to_string())
                .or_default()
                .insert(to.to_string());
            graph.entry(to.to_string()).or_default();
            graph
        });
    assert_eq!(cycles(&graph), vec![vec!["a", "b", "c"]]);
}
