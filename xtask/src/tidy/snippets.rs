//! The Rust snippets of `docs/` compile: every Markdown file under `docs/` with a `rust`
//! code block is included as doc tests by some crate (`#[doc = include_str!(…)]` on a
//! `#[cfg(doctest)]` item, as registry does for `docs/library.md`), and no such block is
//! marked `ignore`. The doc tests run in CI (`cargo test --doc`), so a snippet that stops
//! building fails there.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{Problem, walk};

/// The `rust` code blocks of `text`: the 1-based line of each opening fence and its info
/// string.
fn rust_blocks(text: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut open = false;
    for (index, line) in text.lines().enumerate() {
        let Some(info) = line.trim_start().strip_prefix("```") else {
            continue;
        };
        if !open && info.trim().starts_with("rust") {
            blocks.push((index + 1, info.trim().to_owned()));
        }
        open = !open;
    }
    blocks
}

/// Whether some source under `crates/` includes `doc` (a path from the root) with
/// `include_str!`.
fn included(sources: &[(PathBuf, String)], doc: &str) -> bool {
    let needle = format!("{doc}\")");
    sources.iter().any(|(_, text)| {
        text.lines()
            .any(|line| line.contains("include_str!(") && line.contains(&needle))
    })
}

/// Checks the snippets of `docs/` in the workspace at `root`.
pub fn check(root: &Path, problems: &mut Vec<Problem>) -> Result<()> {
    let mut docs = Vec::new();
    walk(&root.join("docs"), &mut docs)?;
    docs.retain(|f| f.extension().is_some_and(|e| e == "md"));
    docs.sort();
    let mut files = Vec::new();
    walk(&root.join("crates"), &mut files)?;
    let mut sources = Vec::new();
    for file in files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
    {
        let text =
            fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
        sources.push((file.clone(), text));
    }
    for doc in docs {
        let text =
            fs::read_to_string(&doc).with_context(|| format!("cannot read {}", doc.display()))?;
        let rel = doc.strip_prefix(root).unwrap_or(&doc).to_path_buf();
        check_doc(&rel, &text, &sources, problems);
    }
    Ok(())
}

/// Problems of one document (`rel` from the root) against the crates' `sources`.
fn check_doc(rel: &Path, text: &str, sources: &[(PathBuf, String)], problems: &mut Vec<Problem>) {
    let blocks = rust_blocks(text);
    let Some((first, _)) = blocks.first() else {
        return;
    };
    let name = rel.to_string_lossy().replace('\\', "/");
    if !included(sources, &name) {
        problems.push(Problem {
            path: rel.to_path_buf(),
            line: *first,
            message: format!(
                "its rust blocks are compiled nowhere: include `{name}` as doc tests of a crate \
                 (`#[cfg(doctest)] #[doc = include_str!(…)] mod …`), or mark the blocks as text"
            ),
        });
    }
    for (line, info) in &blocks {
        if info.split(',').any(|part| part.trim() == "ignore") {
            problems.push(Problem {
                path: rel.to_path_buf(),
                line: *line,
                message: "an ignored rust block is never compiled: make it build (hidden \
                          `# ` lines may set it up)"
                    .to_owned(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn messages(text: &str, sources: &[(PathBuf, String)]) -> Vec<String> {
        let mut problems = Vec::new();
        check_doc(Path::new("docs/guide.md"), text, sources, &mut problems);
        problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn rust_blocks_are_found() {
        let text = "a\n```toml\nx\n```\n```rust\nfn f() {}\n```\n```rust,no_run\n```\n";
        assert_eq!(
            rust_blocks(text),
            [(5, "rust".to_owned()), (8, "rust,no_run".to_owned())]
        );
    }

    #[test]
    fn a_doc_with_rust_blocks_must_be_included_and_not_ignored() {
        let text = "# Guide\n\n```rust\nfn f() {}\n```\n\n```rust,ignore\nx\n```\n";
        let none: Vec<(PathBuf, String)> = Vec::new();
        let found = messages(text, &none);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("docs/guide.md:3: its rust blocks are compiled nowhere"));
        assert!(found[1].starts_with("docs/guide.md:7: an ignored rust block"));

        let lib = (
            PathBuf::from("crates/a/src/lib.rs"),
            "#[doc = include_str!(\"../../../docs/guide.md\")]\n".to_owned(),
        );
        assert_eq!(messages(text, &[lib]).len(), 1);
        assert!(messages("no code\n", &none).is_empty());
    }
}
