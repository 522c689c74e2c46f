//! No import cycle between the files of a crate.
//!
//! A crate's nodes are its top-level modules: each `src/*.rs` but the crate root, and each
//! folder module `src/name/` (with `src/name.rs` or `src/name/mod.rs`) as one node; `src/bin`
//! is skipped. An edge `a → b` is a path in `a`'s code, outside comments, strings and
//! `#[cfg(test)]` items, that starts with `crate::b` (also `crate::{…, b::…}`) or with as
//! many `super::` as lead to the crate root and then `b`. Paths through the crate root's
//! re-exports (`crate::Item`) are not followed. A strongly connected component of more than
//! one node is a cycle; it fails the check unless all its members are listed for their crate
//! in [`CYCLE_EXCEPTIONS`].

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{Problem, source, walk};

/// Cycles tolerated for now: (crate directory, the modules of one cycle).
///
/// A cycle found fails unless one entry of its crate lists all its members (a cycle that
/// shrinks still passes; one that grows or merges with another fails). A listed module that
/// is in no cycle at all is a problem too, so the list shrinks as cycles are
/// untangled: delete the entry, or the module, then.
pub const CYCLE_EXCEPTIONS: &[(&str, &[&str])] = &[
    // Empty: no crate has an import cycle. A cycle that cannot be untangled at once gets a
    // line here, `("crate-dir", &["module", …])`, and loses it when it is.
];

/// Whether `exceptions` tolerate `cycle` in `krate`.
pub fn excepted(exceptions: &[(&str, &[&str])], krate: &str, cycle: &[String]) -> bool {
    exceptions
        .iter()
        .any(|(k, members)| *k == krate && cycle.iter().all(|m| members.contains(&m.as_str())))
}

/// One crate's module graph.
#[derive(Debug, Default)]
pub struct Graph {
    /// Node → (node it refers to → first file and line of such a reference).
    pub edges: BTreeMap<String, BTreeMap<String, (PathBuf, usize)>>,
}

/// The top-level module a file under `src/` belongs to, and its module path.
fn module_of(rel: &Path) -> Option<(String, Vec<String>)> {
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let (last, dirs) = parts.split_last()?;
    let stem = last.strip_suffix(".rs")?;
    if dirs.is_empty() && (stem == "lib" || stem == "main") {
        return None;
    }
    if dirs.first().is_some_and(|d| d == "bin") {
        return None;
    }
    let mut path: Vec<String> = dirs.to_vec();
    if stem != "mod" {
        path.push(stem.to_owned());
    }
    Some((path.first()?.clone(), path))
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The first segments of the paths that follow `at` in `code`: `name`, or each item of a
/// `{…}` group.
fn first_segments(rest: &str) -> Vec<String> {
    let rest = rest.trim_start();
    if let Some(group) = rest.strip_prefix('{') {
        let mut items = Vec::new();
        let mut depth = 0usize;
        let mut current = String::new();
        for c in group.chars() {
            match c {
                '{' => {
                    depth += 1;
                    current.push(c);
                }
                '}' if depth == 0 => break,
                '}' => {
                    depth -= 1;
                    current.push(c);
                }
                ',' if depth == 0 => items.push(std::mem::take(&mut current)),
                _ => current.push(c),
            }
        }
        items.push(current);
        items
            .iter()
            .map(|item| item.trim().chars().take_while(|&c| is_ident(c)).collect())
            .collect()
    } else {
        vec![rest.chars().take_while(|&c| is_ident(c)).collect()]
    }
}

/// The top-level modules a file's code refers to: (module, byte offset).
fn references(code: &str, path: &[String]) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    for (start, _) in code.match_indices("crate::") {
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c == '$') {
            continue;
        }
        for name in first_segments(&code[start + "crate::".len()..]) {
            found.push((name, start));
        }
    }
    let mut from = 0;
    while let Some(at) = code[from..].find("super::") {
        let start = from + at;
        let before = code[..start].chars().next_back();
        let mut end = start;
        let mut count = 0;
        while code[end..].starts_with("super::") {
            end += "super::".len();
            count += 1;
            while end < bytes.len() && bytes[end].is_ascii_whitespace() {
                end += 1;
            }
        }
        from = end;
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        // `super::` × count from a file whose module path is `path` reaches the crate root
        // when count == path.len().
        if count == path.len() {
            for name in first_segments(&code[end..]) {
                found.push((name, start));
            }
        }
    }
    found
}

/// Builds the module graph of the crate in `crate_dir`.
pub fn graph(root: &Path, crate_dir: &Path) -> Result<Graph> {
    let src = crate_dir.join("src");
    let mut files = Vec::new();
    walk(&src, &mut files)?;
    files.sort();
    let mut modules: Vec<(String, Vec<String>, PathBuf)> = Vec::new();
    for file in files {
        let Ok(rel) = file.strip_prefix(&src) else {
            continue;
        };
        if let Some((node, path)) = module_of(rel) {
            modules.push((node, path, file.clone()));
        }
    }
    let nodes: BTreeSet<String> = modules.iter().map(|(n, _, _)| n.clone()).collect();
    let mut graph = Graph::default();
    for node in &nodes {
        graph.edges.entry(node.clone()).or_default();
    }
    for (node, path, file) in &modules {
        let text =
            fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
        let code = source::without_tests(&source::mask(&text).code);
        for (target, offset) in references(&code, path) {
            if &target == node || !nodes.contains(&target) {
                continue;
            }
            let rel = file.strip_prefix(root).unwrap_or(file).to_path_buf();
            graph
                .edges
                .entry(node.clone())
                .or_default()
                .entry(target)
                .or_insert((rel, source::line_of(&code, offset)));
        }
    }
    Ok(graph)
}

/// The strongly connected components of more than one node, each sorted, in order.
pub fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct Tarjan<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        found: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, node: &'a str) {
            self.index.insert(node, self.next);
            self.low.insert(node, self.next);
            self.next += 1;
            self.stack.push(node);
            self.on_stack.insert(node);
            let targets = self
                .graph
                .edges
                .get(node)
                .into_iter()
                .flat_map(|e| e.keys());
            for target in targets {
                let target = target.as_str();
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
                    component.push(member.to_owned());
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
    let mut tarjan = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        found: Vec::new(),
    };
    for node in graph.edges.keys() {
        if !tarjan.index.contains_key(node.as_str()) {
            tarjan.visit(node);
        }
    }
    tarjan.found.sort();
    tarjan.found
}

/// Every crate directory under `crates/`, sorted.
fn crate_dirs(root: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(root.join("crates")) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// One crate's module graph and its cycles.
pub struct CrateCycles {
    /// The crate's directory name under `crates/`.
    pub krate: String,
    pub graph: Graph,
    /// Each cycle's members, sorted.
    pub cycles: Vec<Vec<String>>,
}

/// The cycles of every crate.
pub fn all(root: &Path) -> Result<Vec<CrateCycles>> {
    let mut out = Vec::new();
    for dir in crate_dirs(root) {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let graph = graph(root, &dir)?;
        let cycles = cycles(&graph);
        out.push(CrateCycles {
            krate: name,
            graph,
            cycles,
        });
    }
    Ok(out)
}

/// How a cycle goes, for messages: `a → b (file:line)` for each edge inside it.
pub fn describe(graph: &Graph, cycle: &[String]) -> String {
    let mut parts = Vec::new();
    for from in cycle {
        for (to, (file, line)) in graph.edges.get(from).into_iter().flatten() {
            if cycle.contains(to) {
                parts.push(format!("{from} → {to} ({}:{line})", file.display()));
            }
        }
    }
    parts.join(", ")
}

/// Checks every crate against [`CYCLE_EXCEPTIONS`].
pub fn check(root: &Path, problems: &mut Vec<Problem>) -> Result<()> {
    check_with(root, CYCLE_EXCEPTIONS, problems)
}

/// Checks every crate against `exceptions`.
pub fn check_with(
    root: &Path,
    exceptions: &[(&str, &[&str])],
    problems: &mut Vec<Problem>,
) -> Result<()> {
    for CrateCycles {
        krate,
        graph,
        cycles,
    } in all(root)?
    {
        let src = Path::new("crates").join(&krate).join("src");
        for cycle in &cycles {
            if excepted(exceptions, &krate, cycle) {
                continue;
            }
            problems.push(Problem {
                path: src.clone(),
                line: 1,
                message: format!(
                    "import cycle between the modules {{{}}}: {}; rule: no file-level import \
                     cycle inside a crate (move what both need into a module of its own)",
                    cycle.join(", "),
                    describe(&graph, cycle)
                ),
            });
        }
        for (_, members) in exceptions.iter().filter(|(k, _)| *k == krate) {
            for member in members.iter() {
                let in_cycle = cycles.iter().any(|c| c.iter().any(|m| m == member));
                if !in_cycle {
                    problems.push(Problem {
                        path: src.clone(),
                        line: 1,
                        message: format!(
                            "`{member}` is in no import cycle any more: delete it \
                             from CYCLE_EXCEPTIONS in xtask/src/tidy/cycles.rs"
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(code: &str, path: &[&str]) -> Vec<String> {
        let path: Vec<String> = path.iter().map(|s| (*s).to_owned()).collect();
        references(code, &path)
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    }

    #[test]
    fn references_are_found() {
        assert_eq!(refs("use crate::a::X;", &["m"]), vec!["a"]);
        assert_eq!(
            refs("use crate::{a::X, b, c::{D, E}};", &["m"]),
            vec!["a", "b", "c"]
        );
        assert_eq!(refs("let x = crate::a::f();", &["m"]), vec!["a"]);
        assert!(refs("$crate::a::f(); my_crate::b::g();", &["m"]).is_empty());
        assert_eq!(refs("use super::a;", &["m"]), vec!["a"]);
        // From a file inside a folder module, one `super::` stays inside it.
        assert!(refs("use super::a;", &["m", "n"]).is_empty());
        assert_eq!(
            refs("use super::super::{a, b};", &["m", "n"]),
            vec!["a", "b"]
        );
    }

    #[test]
    fn modules_of_files() {
        assert_eq!(module_of(Path::new("lib.rs")), None);
        assert_eq!(
            module_of(Path::new("a.rs")),
            Some(("a".to_owned(), vec!["a".to_owned()]))
        );
        assert_eq!(
            module_of(Path::new("a/mod.rs")),
            Some(("a".to_owned(), vec!["a".to_owned()]))
        );
        assert_eq!(
            module_of(Path::new("a/b.rs")),
            Some(("a".to_owned(), vec!["a".to_owned(), "b".to_owned()]))
        );
        assert_eq!(module_of(Path::new("bin/x.rs")), None);
    }
}
