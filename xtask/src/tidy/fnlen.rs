//! Long functions in production code: none over [`MAX_LINES`] lines unless listed with a
//! reason, and no more over [`WATCH_LINES`] than recorded.
//!
//! Production code is every `.rs` file under `crates/*/src` (test-support excluded: it is
//! test code) and `examples/src`, less `#[cfg(test)]` items and the files of out-of-line
//! `#[cfg(test)] mod x;` modules. A function's length runs from the line of its `fn` to the
//! line of its closing brace; a function nested in another counts on its own too.
//!
//! Both lists ratchet: an entry of [`LONG_FN_ALLOWED`] whose function is no longer over
//! [`MAX_LINES`] is a problem, and so is a count over [`WATCH_LINES`] below
//! [`OVER_WATCH_RECORDED`] (lower the number), so they only shrink. `cargo xtask tidy
//! --report` prints the longest functions.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::source::{mask, test_lines};
use super::{Problem, walk};

/// No production function may be longer, unless listed in [`LONG_FN_ALLOWED`].
pub const MAX_LINES: usize = 120;

/// Functions longer than this are counted; the count may not exceed [`OVER_WATCH_RECORDED`].
pub const WATCH_LINES: usize = 100;

/// How many production functions are over [`WATCH_LINES`] lines today.
pub const OVER_WATCH_RECORDED: usize = 21;

/// Functions over [`MAX_LINES`] tolerated for now: crate, the file's path in the crate's
/// `src` (or its last components, so a file moved into a folder still matches), function
/// name, why. Empty: every production function is within [`MAX_LINES`].
pub const LONG_FN_ALLOWED: &[(&str, &str, &str, &str)] = &[];

/// Crates whose `src` is not production code.
const TEST_CRATES: [&str; 1] = ["test-support"];

/// One function of production code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// The crate's directory name (`examples` for the examples).
    pub krate: String,
    /// Path from the workspace root.
    pub path: PathBuf,
    /// The function's name.
    pub name: String,
    /// 1-based line of its `fn`.
    pub line: usize,
    /// Lines from its `fn` to its closing brace.
    pub lines: usize,
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The functions with a body in `code` (masked, test items blanked): name, first line,
/// length in lines.
fn functions_in(code: &str) -> Vec<(String, usize, usize)> {
    let bytes = code.as_bytes();
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(pos) = code[at..].find("fn") {
        let start = at + pos;
        at = start + 2;
        let before_ok = start == 0 || !is_ident(bytes[start - 1]);
        let after = bytes.get(start + 2).copied();
        if !before_ok || !after.is_some_and(|c| c == b' ' || c == b'\n' || c == b'\t') {
            continue;
        }
        let rest = code[start + 2..].trim_start();
        let name: String = rest
            .bytes()
            .take_while(|&c| is_ident(c))
            .map(char::from)
            .collect();
        if name.is_empty() {
            continue;
        }
        if let Some(end) = body_end(bytes, start + 2) {
            let first = line_at(bytes, start);
            let last = line_at(bytes, end);
            found.push((name, first, last - first + 1));
        }
    }
    found
}

/// The offset of the brace closing the body of the function whose signature starts at
/// `from`; `None` for a declaration without a body.
fn body_end(bytes: &[u8], from: usize) -> Option<usize> {
    let mut parens = 0usize;
    let mut index = from;
    while index < bytes.len() {
        match bytes[index] {
            b'(' | b'[' => parens += 1,
            b')' | b']' => parens = parens.saturating_sub(1),
            b';' if parens == 0 => return None,
            b'{' if parens == 0 => break,
            _ => {}
        }
        index += 1;
    }
    let mut depth = 0usize;
    while index < bytes.len() {
        match bytes[index] {
            b'{' => depth += 1,
            b'}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(index);
                }
            }
            _ => {}
        }
        index += 1;
    }
    None
}

fn line_at(bytes: &[u8], offset: usize) -> usize {
    bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1
}

/// The names of the out-of-line modules declared under `#[cfg(test)]` in `code`.
fn test_modules(code: &str) -> Vec<String> {
    let flags = test_lines(code);
    code.split('\n')
        .zip(flags)
        .filter(|(_, test)| *test)
        .filter_map(|(line, _)| {
            let line = line.trim();
            let rest = line
                .strip_prefix("pub(crate) mod ")
                .or_else(|| line.strip_prefix("pub mod "))
                .or_else(|| line.strip_prefix("mod "))
                .or_else(|| {
                    line.strip_prefix("#[cfg(test)]")
                        .map(str::trim_start)
                        .and_then(|l| l.strip_prefix("mod "))
                })?;
            let name = rest.strip_suffix(';')?.trim();
            Some(name.to_owned())
        })
        .collect()
}

/// Where the files of module `name`, declared in `file`, live: `name.rs` and `name/`.
fn module_paths(file: &Path, name: &str) -> [PathBuf; 2] {
    let stem = file.file_stem().map(|s| s.to_string_lossy().into_owned());
    let dir = file.parent().unwrap_or(Path::new(""));
    let base = match stem.as_deref() {
        Some("lib" | "main" | "mod") => dir.to_path_buf(),
        Some(stem) => dir.join(stem),
        None => dir.to_path_buf(),
    };
    [base.join(format!("{name}.rs")), base.join(name)]
}

/// Every function of production code under `root`.
pub fn all(root: &Path) -> Result<Vec<Function>> {
    let mut sources: Vec<(String, PathBuf)> = Vec::new();
    let crates = root.join("crates");
    if let Ok(entries) = fs::read_dir(&crates) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir() && !TEST_CRATES.contains(&name.as_str()) {
                sources.push((name, entry.path().join("src")));
            }
        }
    }
    sources.push(("examples".to_owned(), root.join("examples/src")));
    sources.sort();

    let mut functions = Vec::new();
    for (krate, src) in sources {
        let mut files = Vec::new();
        walk(&src, &mut files)?;
        files.retain(|f| f.extension().is_some_and(|e| e == "rs"));
        files.sort();
        let mut texts = Vec::new();
        let mut excluded: HashSet<PathBuf> = HashSet::new();
        let mut excluded_dirs: Vec<PathBuf> = Vec::new();
        for file in &files {
            let text = fs::read_to_string(file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let code = mask(&text).code;
            for module in test_modules(&code) {
                let [file_path, dir] = module_paths(file, &module);
                excluded.insert(file_path);
                excluded_dirs.push(dir);
            }
            texts.push((file.clone(), code));
        }
        for (file, code) in texts {
            if excluded.contains(&file) || excluded_dirs.iter().any(|d| file.starts_with(d)) {
                continue;
            }
            let flags = test_lines(&code);
            let production: String = code
                .split('\n')
                .zip(flags)
                .map(|(line, test)| if test { "" } else { line })
                .collect::<Vec<_>>()
                .join("\n");
            let rel = file.strip_prefix(root).unwrap_or(&file).to_path_buf();
            for (name, line, lines) in functions_in(&production) {
                functions.push(Function {
                    krate: krate.clone(),
                    path: rel.clone(),
                    name,
                    line,
                    lines,
                });
            }
        }
    }
    functions.sort_by(|a, b| b.lines.cmp(&a.lines).then(a.path.cmp(&b.path)));
    Ok(functions)
}

/// Whether `entry` (crate, file path or its last components, function) names `function`.
fn names(entry: &(&str, &str, &str, &str), function: &Function) -> bool {
    entry.0 == function.krate && function.path.ends_with(entry.1) && entry.2 == function.name
}

/// Checks the workspace's functions against [`LONG_FN_ALLOWED`] and [`OVER_WATCH_RECORDED`].
pub fn check(root: &Path, problems: &mut Vec<Problem>) -> Result<()> {
    let functions = all(root)?;
    check_with(&functions, LONG_FN_ALLOWED, OVER_WATCH_RECORDED, problems);
    Ok(())
}

/// The check over given functions, allowances and recorded count.
pub fn check_with(
    functions: &[Function],
    allowed: &[(&str, &str, &str, &str)],
    recorded: usize,
    problems: &mut Vec<Problem>,
) {
    const HERE: &str = "xtask/src/tidy/fnlen.rs";
    for function in functions.iter().filter(|f| f.lines > MAX_LINES) {
        if !allowed.iter().any(|entry| names(entry, function)) {
            problems.push(Problem {
                path: function.path.clone(),
                line: function.line,
                message: format!(
                    "function `{}` is {} lines long: split it to at most {MAX_LINES} lines \
                     (name the steps as functions of their own)",
                    function.name, function.lines
                ),
            });
        }
    }
    for entry in allowed {
        let still_long = functions
            .iter()
            .any(|f| f.lines > MAX_LINES && names(entry, f));
        if !still_long {
            problems.push(Problem {
                path: PathBuf::from(HERE),
                line: 1,
                message: format!(
                    "`{}` in {}'s {} is no longer over {MAX_LINES} lines: remove its entry \
                     from LONG_FN_ALLOWED",
                    entry.2, entry.0, entry.1
                ),
            });
        }
    }
    let over = functions.iter().filter(|f| f.lines > WATCH_LINES).count();
    if over != recorded {
        let message = if over > recorded {
            format!(
                "{over} production functions are over {WATCH_LINES} lines, more than the \
                 {recorded} recorded in OVER_WATCH_RECORDED: shorten the new long function \
                 (`cargo xtask tidy --report` lists them)"
            )
        } else {
            format!(
                "{over} production functions are over {WATCH_LINES} lines, fewer than the \
                 {recorded} recorded: lower OVER_WATCH_RECORDED to {over}"
            )
        };
        problems.push(Problem {
            path: PathBuf::from(HERE),
            line: 1,
            message,
        });
    }
}

/// Prints the longest production functions.
pub fn report(root: &Path) -> Result<()> {
    let functions = all(root)?;
    let over = functions.iter().filter(|f| f.lines > WATCH_LINES).count();
    println!(
        "longest production functions ({over} over {WATCH_LINES} lines, {} over {MAX_LINES}; \
         see xtask/src/tidy/fnlen.rs):",
        functions.iter().filter(|f| f.lines > MAX_LINES).count()
    );
    for function in functions.iter().take(over.max(10)) {
        let allowed = LONG_FN_ALLOWED
            .iter()
            .find(|entry| names(entry, function))
            .filter(|_| function.lines > MAX_LINES)
            .map(|entry| format!(" (allowed: {})", entry.3))
            .unwrap_or_default();
        println!(
            "  {:>4}  {}:{} {}{allowed}",
            function.lines,
            function.path.display(),
            function.line,
            function.name
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, usize, usize)> {
        let code = mask(text).code;
        functions_in(&code)
    }

    #[test]
    fn functions_are_measured_from_fn_to_closing_brace() {
        let text = "fn a() {}\n\npub async fn b<T>(x: [u8; 2]) -> Vec<T>\nwhere\n    T: Clone,\n{\n    \
                    let s = \"}\";\n    // }\n    g(|| { 1 });\n}\n";
        assert_eq!(
            found(text),
            vec![("a".to_owned(), 1, 1), ("b".to_owned(), 3, 8)]
        );
    }

    #[test]
    fn declarations_and_pointer_types_are_not_functions() {
        let text = "trait T {\n    fn f(&self);\n    fn g(&self) {\n    }\n}\ntype P = fn(u8) -> u8;\n\
                    struct S { f: Box<dyn Fn(u8)> }\n";
        assert_eq!(found(text), vec![("g".to_owned(), 3, 2)]);
    }

    #[test]
    fn nested_functions_count_on_their_own() {
        let text = "fn outer() {\n    fn inner() {\n        x();\n    }\n}\n";
        assert_eq!(
            found(text),
            vec![("outer".to_owned(), 1, 5), ("inner".to_owned(), 2, 3)]
        );
    }

    #[test]
    fn test_modules_are_found() {
        let code = "#[cfg(test)]\nmod tests;\n#[cfg(test)]\npub(crate) mod fixtures;\nmod real;\n";
        assert_eq!(test_modules(code), vec!["tests", "fixtures"]);
        assert_eq!(
            module_paths(Path::new("src/a.rs"), "tests"),
            [
                PathBuf::from("src/a/tests.rs"),
                PathBuf::from("src/a/tests")
            ]
        );
        assert_eq!(
            module_paths(Path::new("src/lib.rs"), "tests"),
            [PathBuf::from("src/tests.rs"), PathBuf::from("src/tests")]
        );
    }

    fn function(krate: &str, path: &str, name: &str, lines: usize) -> Function {
        Function {
            krate: krate.to_owned(),
            path: PathBuf::from(path),
            name: name.to_owned(),
            line: 3,
            lines,
        }
    }

    fn messages(
        functions: &[Function],
        allowed: &[(&str, &str, &str, &str)],
        recorded: usize,
    ) -> Vec<String> {
        let mut problems = Vec::new();
        check_with(functions, allowed, recorded, &mut problems);
        problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn long_functions_need_an_entry_and_entries_ratchet() {
        let functions = [
            function("a", "crates/a/src/x.rs", "long", 130),
            function("a", "crates/a/src/y.rs", "watched", 110),
            function("a", "crates/a/src/y.rs", "short", 20),
        ];
        let found = messages(&functions, &[], 2);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("crates/a/src/x.rs:3: function `long` is 130 lines"));

        let allowed = [("a", "x.rs", "long", "split pending")];
        assert!(messages(&functions, &allowed, 2).is_empty());

        let stale = [("a", "y.rs", "watched", "split pending")];
        let found = messages(&functions, &stale, 2);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[1].contains("remove its entry"), "{found:?}");
    }

    #[test]
    fn the_count_over_the_watch_line_ratchets() {
        let functions = [
            function("a", "crates/a/src/y.rs", "one", 110),
            function("a", "crates/a/src/y.rs", "two", 101),
        ];
        assert!(messages(&functions, &[], 2).is_empty());
        assert!(messages(&functions, &[], 1)[0].contains("more than the 1 recorded"));
        assert!(messages(&functions, &[], 3)[0].contains("lower OVER_WATCH_RECORDED to 2"));
    }
}
