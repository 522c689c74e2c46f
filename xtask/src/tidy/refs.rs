//! No reference to a document outside the repository.
//!
//! Code, comments and docs must stand alone: a comment says what the rule is, not where it
//! came from, and what a contributor needs lives in ARCHITECTURE.md or `docs/`. Flagged
//! (case-insensitively): the names of the design documents kept outside the repository, a
//! path into the sibling `shared` folder, any section sign (U+00A7: every one here cited a
//! section of such a document) and "the design" as a source of rules.
//!
//! Checked: every text file under `crates/`, `examples/`, `xtask/` and `docs/`, and the `.md`
//! and `.toml` files at the root. The needles are built by concatenation so this file does
//! not flag itself.

use std::path::Path;

use super::Problem;

/// Folders checked, recursively (root-level `.md` and `.toml` files are checked too).
pub const CHECKED_DIRS: [&str; 4] = ["crates", "examples", "xtask", "docs"];

/// Text no file may contain (lower case), and what it is.
pub const NEEDLES: [(&str, &str); 11] = [
    (
        concat!("design", ".md"),
        "a design document outside the repository",
    ),
    (
        concat!("safety", ".md"),
        "a design document outside the repository",
    ),
    (
        concat!("claude-code", "-tools"),
        "a design document outside the repository",
    ),
    (
        concat!("crates-and", "-peers"),
        "a design document outside the repository",
    ),
    (
        concat!("peer", "-systems"),
        "a design document outside the repository",
    ),
    (
        concat!("style", "-anchors"),
        "a design document outside the repository",
    ),
    (
        concat!("tool-system", "-design"),
        "a design document outside the repository",
    ),
    (concat!("../", "shared"), "a folder outside the repository"),
    ("\u{a7}", "a section of a document outside the repository"),
    (
        concat!("the design", "'s"),
        "a design document outside the repository",
    ),
    (
        concat!("as the ", "design "),
        "a design document outside the repository",
    ),
];

/// Files whose references are tolerated for now, one per line (paths from the root).
///
/// Empty: every file stands alone. A listed file without a reference is a problem, so the
/// list can only shrink.
pub const REFERENCE_EXCEPTIONS: &[&str] = &[];

/// Problems in one file's text (`rel` is the path reported, from the root).
pub fn check_text(rel: &Path, text: &str, problems: &mut Vec<Problem>) {
    for (index, line) in text.lines().enumerate() {
        let lower = line.to_lowercase();
        for (needle, what) in NEEDLES {
            if lower.contains(needle) {
                problems.push(Problem {
                    path: rel.to_path_buf(),
                    line: index + 1,
                    message: format!(
                        "cites `{needle}`, {what}: rule: code, comments and docs stand alone \
                         (say what the rule is; put what a contributor needs into \
                         ARCHITECTURE.md or docs/)"
                    ),
                });
            }
        }
    }
}

/// Whether `rel` (from the root) is checked: under the checked folders, or a root `.md` or
/// `.toml` file.
pub fn is_checked(rel: &Path) -> bool {
    let mut parts = rel.iter();
    let first = parts.next().map(|p| p.to_string_lossy().into_owned());
    match (first.as_deref(), parts.next()) {
        (Some(dir), Some(_)) => CHECKED_DIRS.contains(&dir),
        (Some(name), None) => name.ends_with(".md") || name.ends_with(".toml"),
        _ => false,
    }
}

/// Checks the texts of `files` (paths from the root, with their text), honouring
/// `exceptions`.
pub fn check_files<'a>(
    files: impl IntoIterator<Item = (&'a Path, &'a str)>,
    exceptions: &[&str],
    problems: &mut Vec<Problem>,
) {
    let mut used = vec![false; exceptions.len()];
    for (rel, text) in files {
        if !is_checked(rel) {
            continue;
        }
        let mut found = Vec::new();
        check_text(rel, text, &mut found);
        if let Some(i) = exceptions.iter().position(|e| Path::new(e) == rel) {
            used[i] = !found.is_empty();
            continue;
        }
        problems.extend(found);
    }
    for (exception, used) in exceptions.iter().zip(used) {
        if !used {
            problems.push(Problem {
                path: exception.into(),
                line: 1,
                message: "cites no outside document any more (or is gone): delete it from \
                          REFERENCE_EXCEPTIONS in xtask/src/tidy/refs.rs"
                    .to_owned(),
            });
        }
    }
}
