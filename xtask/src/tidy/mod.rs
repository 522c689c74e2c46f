//! `cargo xtask tidy`: source hygiene and architecture checks, also run as the `tidy` test.
//!
//! Hygiene, under `crates/`, `examples/` and `xtask/` (tracked or not, `target/` skipped):
//! - every `.rs` file starts (after blank lines) with a `//!` line;
//! - no file contains an ignore or should-panic test attribute, or a todo or unimplemented
//!   macro call (the needles are built by concatenation so this file does not flag itself);
//! - every crate directory under `crates/` has a `src/lib.rs` or `src/main.rs` whose first doc
//!   block says something;
//! - `.rs` and `.toml` files have no trailing whitespace (the workspace's own `*.toml`,
//!   `.cargo/*.toml` and `.config/*.toml` too).
//!
//! Architecture (each in its own module, each taking the workspace root):
//! - [`deps`]: the dependency rules between crates, from `crates/*/Cargo.toml` and the
//!   manifests of [`TOP_LEVEL_PACKAGES`];
//! - [`shell`]: only tools-shell and the sandbox crate start a shell;
//! - [`cycles`]: no import cycle between a crate's top-level modules;
//! - [`refs`]: no reference to a document outside the repository;
//! - [`docnames`]: every function, type and method the documentation names exists;
//! - [`testing`]: a crate's `#[doc(hidden)] pub mod testing` is used by tests only.
//!
//! Every problem is reported as `path:line: message`. `cargo xtask tidy --report` also
//! prints every crate's import cycles, exceptions included.

pub mod archmap;
pub mod cycles;
pub mod deps;
pub mod docnames;
pub mod fnlen;
pub mod refs;
pub mod shell;
pub mod snippets;
pub mod source;
pub mod testing;

#[cfg(test)]
mod seeded;

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// Directories checked, relative to the workspace root.
const CHECKED_DIRS: [&str; 3] = ["crates", "examples", "xtask"];

/// Workspace members outside `crates/`, each in the root folder of its name, that the
/// architecture checks hold to the crates' rules: `examples` (programs embedding the
/// library crates). xtask is not one: it is the checker, and may run anything.
pub const TOP_LEVEL_PACKAGES: [&str; 1] = ["examples"];

/// Directories holding configuration `.toml` files checked for trailing whitespace (not
/// recursively); `""` is the workspace root.
const CONFIG_DIRS: [&str; 3] = ["", ".cargo", ".config"];

/// Text no file may contain, and why.
const FORBIDDEN: [(&str, &str); 4] = [
    (
        concat!("#[", "ignore"),
        "ignored test: fix it, or skip at run time with a printed reason",
    ),
    (
        concat!("#[", "should_panic"),
        "should-panic test: assert on a returned error instead",
    ),
    (
        concat!("todo", "!("),
        "todo macro: finish the code or return an error",
    ),
    (
        concat!("unimplemented", "!("),
        "unimplemented macro: finish the code or return an error",
    ),
];

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Path relative to the workspace root.
    pub path: PathBuf,
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.path.display(), self.line, self.message)
    }
}

/// Collects every file under `dir`, skipping `target` directories and not following symlinks.
pub(crate) fn walk(dir: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(err) => return Err(err).with_context(|| format!("cannot list {}", dir.display())),
    };
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let path = entry.path();
        let kind = entry
            .file_type()
            .with_context(|| format!("cannot stat {}", path.display()))?;
        if kind.is_dir() {
            if entry.file_name() != "target" {
                walk(&path, files)?;
            }
        } else if kind.is_file() {
            files.push(path);
        }
    }
    Ok(())
}

fn has_extension(path: &Path, ext: &str) -> bool {
    path.extension().is_some_and(|e| e == ext)
}

/// The lines of the leading `//!` block (after blank lines), without the `//!` marker.
/// `None` when the first non-blank line is not a `//!` line.
fn first_doc_block(text: &str) -> Option<Vec<&str>> {
    let mut lines = text
        .lines()
        .skip_while(|line| line.trim().is_empty())
        .peekable();
    if !lines.peek()?.trim_start().starts_with("//!") {
        return None;
    }
    Some(
        lines
            .map_while(|line| line.trim_start().strip_prefix("//!"))
            .collect(),
    )
}

/// Problems in one file's text. `rel` is the path reported.
fn check_text(rel: &Path, text: &str, problems: &mut Vec<Problem>) {
    let problem = |line: usize, message: String| Problem {
        path: rel.to_path_buf(),
        line,
        message,
    };
    if has_extension(rel, "rs") && first_doc_block(text).is_none() {
        let line = text
            .lines()
            .position(|l| !l.trim().is_empty())
            .map_or(1, |i| i + 1);
        problems.push(problem(
            line,
            "the first non-blank line must be a `//!` doc comment saying what the file is"
                .to_owned(),
        ));
    }
    let check_whitespace = has_extension(rel, "rs") || has_extension(rel, "toml");
    for (index, line) in text.lines().enumerate() {
        for (needle, why) in FORBIDDEN {
            if line.contains(needle) {
                problems.push(problem(index + 1, format!("contains `{needle}`: {why}")));
            }
        }
        if check_whitespace && line.ends_with([' ', '\t']) {
            problems.push(problem(index + 1, "trailing whitespace".to_owned()));
        }
    }
}

/// Problems with a crate directory's root file.
fn check_crate(root: &Path, crate_dir: &Path, problems: &mut Vec<Problem>) -> Result<()> {
    let rel_dir = crate_dir.strip_prefix(root).unwrap_or(crate_dir);
    let roots: Vec<PathBuf> = ["src/lib.rs", "src/main.rs"]
        .iter()
        .map(|f| crate_dir.join(f))
        .filter(|p| p.is_file())
        .collect();
    if roots.is_empty() {
        problems.push(Problem {
            path: rel_dir.to_path_buf(),
            line: 1,
            message: "crate has neither src/lib.rs nor src/main.rs".to_owned(),
        });
    }
    for file in roots {
        let text =
            fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
        let says_something = first_doc_block(&text)
            .is_some_and(|block| block.iter().any(|line| !line.trim().is_empty()));
        if !says_something {
            problems.push(Problem {
                path: file.strip_prefix(root).unwrap_or(&file).to_path_buf(),
                line: 1,
                message: "the crate's first doc block (`//!`) is missing or empty: say what \
                          the crate is for"
                    .to_owned(),
            });
        }
    }
    Ok(())
}

/// Runs every check against the workspace at `root`, with the exceptions in the source.
pub fn check(root: &Path) -> Result<Vec<Problem>> {
    let mut problems = hygiene(root)?;
    check_references(root, refs::REFERENCE_EXCEPTIONS, &mut problems)?;
    deps::check(root, &mut problems)?;
    shell::check(root, &mut problems)?;
    cycles::check(root, &mut problems)?;
    docnames::check(root, &mut problems)?;
    fnlen::check(root, &mut problems)?;
    archmap::check(root, &mut problems)?;
    snippets::check(root, &mut problems)?;
    testing::check(root, &mut problems)?;
    Ok(problems)
}

/// The reference check over the files it covers (see [`refs`]).
fn check_references(root: &Path, exceptions: &[&str], problems: &mut Vec<Problem>) -> Result<()> {
    let mut files = Vec::new();
    for dir in refs::CHECKED_DIRS {
        walk(&root.join(dir), &mut files)?;
    }
    if let Ok(entries) = fs::read_dir(root) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_file()) {
                files.push(entry.path());
            }
        }
    }
    files.sort();
    let mut texts = Vec::new();
    for file in &files {
        let bytes = fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        if let Ok(text) = String::from_utf8(bytes) {
            texts.push((file.strip_prefix(root).unwrap_or(file).to_path_buf(), text));
        }
    }
    refs::check_files(
        texts.iter().map(|(p, t)| (p.as_path(), t.as_str())),
        exceptions,
        problems,
    );
    Ok(())
}

/// The hygiene checks (see the module's doc).
fn hygiene(root: &Path) -> Result<Vec<Problem>> {
    let mut files = Vec::new();
    for dir in CHECKED_DIRS {
        walk(&root.join(dir), &mut files)?;
    }
    for dir in CONFIG_DIRS {
        let Ok(entries) = fs::read_dir(root.join(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if has_extension(&path, "toml") && entry.file_type().is_ok_and(|t| t.is_file()) {
                files.push(path);
            }
        }
    }
    files.sort();
    files.dedup();

    let mut problems = Vec::new();
    for file in &files {
        let bytes = fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
        // Binary files (fixtures, images) have no lines to check.
        let Ok(text) = std::str::from_utf8(&bytes) else {
            continue;
        };
        let rel = file.strip_prefix(root).unwrap_or(file);
        check_text(rel, text, &mut problems);
    }

    let crates_dir = root.join("crates");
    if let Ok(entries) = fs::read_dir(&crates_dir) {
        let mut crate_dirs: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| !n.to_string_lossy().starts_with('.'))
            })
            .collect();
        crate_dirs.sort();
        for crate_dir in crate_dirs {
            check_crate(root, &crate_dir, &mut problems)?;
        }
    }
    Ok(problems)
}

/// Prints every crate's import cycles and the exceptions that tolerate them, then the
/// longest production functions.
pub fn report(root: &Path) -> Result<()> {
    println!("import cycles per crate (top-level modules; see xtask/src/tidy/cycles.rs):");
    for cycles::CrateCycles {
        krate,
        graph,
        cycles,
    } in cycles::all(root)?
    {
        if cycles.is_empty() {
            println!("  {krate}: none");
        }
        for cycle in &cycles {
            let excepted = cycles::excepted(cycles::CYCLE_EXCEPTIONS, &krate, cycle);
            println!(
                "  {krate}: {{{}}}{}",
                cycle.join(", "),
                if excepted {
                    " (listed in CYCLE_EXCEPTIONS)"
                } else {
                    ""
                }
            );
            println!("      {}", cycles::describe(&graph, cycle));
        }
    }
    fnlen::report(root)
}

/// Checks the workspace and prints every problem; fails when there is one. With `report`,
/// prints every crate's import cycles and the longest functions first.
pub fn run(root: &Path, report_cycles: bool) -> Result<()> {
    if report_cycles {
        report(root)?;
    }
    let problems = check(root)?;
    if problems.is_empty() {
        println!(
            "tidy: ok ({}; dependency rules, shell spawns, import cycles, outside references, names in the docs, function lengths, the map, doc snippets, testing modules)",
            CHECKED_DIRS.join("/, ") + "/"
        );
        return Ok(());
    }
    for problem in &problems {
        println!("{problem}");
    }
    bail!("tidy: {} problem(s), listed above", problems.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The workspace itself must be tidy: `cargo nextest run --workspace` enforces it.
    #[test]
    fn tidy() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .parent()
            .unwrap()
            .to_path_buf();
        let problems = check(&root).unwrap();
        let report: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert!(
            problems.is_empty(),
            "tidy found {} problem(s) (run `cargo xtask tidy`):\n{}",
            problems.len(),
            report.join("\n")
        );
    }

    fn problems_in(path: &str, text: &str) -> Vec<String> {
        let mut problems = Vec::new();
        check_text(Path::new(path), text, &mut problems);
        problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn rust_files_need_a_leading_module_doc() {
        assert!(problems_in("a.rs", "//! Doc.\nfn f() {}\n").is_empty());
        assert!(problems_in("a.rs", "\n\n  //! Doc.\n").is_empty());
        assert_eq!(problems_in("a.rs", "\n/// Item doc.\nfn f() {}\n").len(), 1);
        assert!(problems_in("a.rs", "\n/// Item doc.\n")[0].starts_with("a.rs:2: "));
        assert_eq!(problems_in("a.rs", "").len(), 1);
        // Only .rs files need one.
        assert!(problems_in("a.toml", "[x]\n").is_empty());
    }

    #[test]
    fn forbidden_text_is_reported_with_its_line() {
        let attr = concat!("#[", "ignore", "]");
        let text = format!("//! Doc.\n\n{attr}\nfn t() {{}}\n");
        let found = problems_in("t.rs", &text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with("t.rs:3: contains"), "{found:?}");

        let call = concat!("to", "do!()");
        assert_eq!(problems_in("notes.md", &format!("x\n{call}\n")).len(), 1);
        let call = concat!("unimpl", "emented!(\"x\")");
        assert_eq!(problems_in("a.txt", call).len(), 1);
        let attr = concat!("#[should", "_panic(expected = \"x\")]");
        assert_eq!(problems_in("a.txt", attr).len(), 1);
    }

    #[test]
    fn trailing_whitespace_only_in_rust_and_toml() {
        assert_eq!(
            problems_in("a.rs", "//! Doc. \n"),
            vec!["a.rs:1: trailing whitespace".to_owned()]
        );
        assert_eq!(problems_in("Cargo.toml", "[x]\t\n").len(), 1);
        assert!(problems_in("a.md", "text  \n").is_empty());
    }

    #[test]
    fn doc_blocks_are_parsed() {
        assert_eq!(
            first_doc_block("//! a\n//!\n//! b\nfn f() {}"),
            Some(vec![" a", "", " b"])
        );
        assert_eq!(first_doc_block("fn f() {}"), None);
        assert_eq!(first_doc_block("//!\n"), Some(vec![""]));
    }

    #[test]
    fn checks_a_whole_tree() {
        let root = std::env::temp_dir().join(format!("xtask-tidy-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let write = |rel: &str, text: &str| {
            let path = root.join(rel);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        };
        write("crates/good/src/lib.rs", "//! A good crate.\n");
        write("crates/empty-doc/src/main.rs", "//!\n//!\nfn main() {}\n");
        write("crates/no-root/Cargo.toml", "[package]\n");
        write("crates/good/target/debug/junk.rs", "no doc, but skipped\n");
        write("xtask/src/bad.rs", "fn main() {}\n");
        write("xtask/src/main.rs", "//! Fine.\n");
        write("Cargo.toml", "[workspace] \n");
        let found: Vec<String> = hygiene(&root)
            .unwrap()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            found,
            vec![
                "Cargo.toml:1: trailing whitespace".to_owned(),
                "xtask/src/bad.rs:1: the first non-blank line must be a `//!` doc comment saying \
                 what the file is"
                    .to_owned(),
                "crates/empty-doc/src/main.rs:1: the crate's first doc block (`//!`) is missing \
                 or empty: say what the crate is for"
                    .to_owned(),
                "crates/no-root:1: crate has neither src/lib.rs nor src/main.rs".to_owned(),
            ]
        );
        fs::remove_dir_all(&root).unwrap();
    }
}
