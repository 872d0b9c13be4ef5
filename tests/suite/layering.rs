//! The layers of DESIGN.md form an acyclic graph: no top-level module of `src/` depends, directly
//! or through others, on a module that depends on it.
//!
//! The graph is read from the source: every `crate::name` outside comments and outside the
//! `#[cfg(test)]` part of a file is an edge from the file's top-level module to `name` (tests may
//! reach anywhere). A failure prints each cycle and the whole graph.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

#[test]
fn top_level_modules_have_no_import_cycle() {
    let graph = module_graph(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    assert!(
        graph.contains_key("app") && graph.contains_key("view"),
        "the module graph misses app or view: {graph:#?}"
    );
    let cycles = cycles(&graph);
    assert!(
        cycles.is_empty(),
        "import cycles between top-level modules: {cycles:?}\n{}",
        describe(&graph)
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

#[test]
fn references_in_comments_and_tests_are_not_edges() {
    let source = "use crate::stream::Message; // crate::view\n/// crate::tui\n\
                  fn f() { crate::process::x(); }\n#[cfg(test)]\nmod tests { use crate::app; }\n";
    assert_eq!(
        references(source),
        BTreeSet::from(["process".to_string(), "stream".to_string()])
    );
}

/// Top-level module -> the top-level modules its files name (`lib.rs` and `main.rs` are the
/// root, not a layer).
fn module_graph(src: &Path) -> Graph {
    let mut graph = Graph::new();
    let mut files = Vec::new();
    collect_rust_files(src, &mut files);
    for file in files {
        let relative = file.strip_prefix(src).expect("file under src");
        let first = relative.components().next().expect("non-empty path");
        let name = first.as_os_str().to_string_lossy();
        let module = name.strip_suffix(".rs").unwrap_or(&name).to_string();
        if module == "lib" || module == "main" {
            continue;
        }
        let source = fs::read_to_string(&file).expect("readable source file");
        let targets = graph.entry(module.clone()).or_default();
        targets.extend(
            references(&source)
                .into_iter()
                .filter(|target| *target != module),
        );
    }
    graph
}

fn collect_rust_files(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable directory") {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            collect_rust_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}

/// The modules named as `crate::name` in the non-test code of `source`, comments left out.
fn references(source: &str) -> BTreeSet<String> {
    let code = source.split("#[cfg(test)]").next().unwrap_or_default();
    let mut names = BTreeSet::new();
    for line in code.lines() {
        let line = line.split("//").next().unwrap_or_default();
        for (index, _) in line.match_indices("crate::") {
            let rest = &line[index + "crate::".len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// Strongly connected components of more than one module (Tarjan), each sorted, in name order.
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
        fn visit(&mut self, module: &'a str) {
            self.index.insert(module, self.next_index);
            self.low.insert(module, self.next_index);
            self.next_index += 1;
            self.stack.push(module);
            self.on_stack.insert(module);
            for target in &self.graph[module] {
                let target = target.as_str();
                if !self.graph.contains_key(target) {
                    continue; // `crate::async_runtime` and other items of lib.rs
                }
                if !self.index.contains_key(target) {
                    self.visit(target);
                    let low = self.low[module].min(self.low[target]);
                    self.low.insert(module, low);
                } else if self.on_stack.contains(target) {
                    let low = self.low[module].min(self.index[target]);
                    self.low.insert(module, low);
                }
            }
            if self.low[module] == self.index[module] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    component.push(member.to_string());
                    if member == module {
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
    for module in graph.keys() {
        if !search.index.contains_key(module.as_str()) {
            search.visit(module);
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
