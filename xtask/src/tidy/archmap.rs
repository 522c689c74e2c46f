//! `ARCHITECTURE.md` is a map: it names every source file, every path it names exists, and
//! it stays short.
//!
//! The map has a section per crate, headed `` ### `crates/NAME` `` (or `` ### `examples` ``,
//! `` ### `xtask` ``). Every `.rs` file under the crate's `src/` must be named in its section
//! as a code span holding its path from `src/` (`read.rs`, `index/mod.rs`) or from the crate
//! (`src/bin/fs-loop.rs`). A bullet that starts with a folder span (`` - `index/`: ``) names
//! its files relative to that folder (`` `mod.rs` ``, `` `watch.rs` ``), so a folder's files
//! fit on one line. Every code span or link that names a repository path (starting with
//! `crates/`, `docs/`, `examples/` or `xtask/`) must exist, and every `.rs` span in a crate's
//! section must be one of its files. The map has at most [`MAX_LINES`] lines; what does not
//! fit goes to module docs or `docs/`.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{Problem, walk};

/// The map, from the workspace root.
pub const MAP: &str = "ARCHITECTURE.md";

/// The longest the map may be.
pub const MAX_LINES: usize = 300;

/// Top-level folders whose paths the map may name (and which must then exist).
const ROOTS: [&str; 4] = ["crates/", "docs/", "examples/", "xtask/"];

/// Folders outside `crates/` whose `src/` the map covers.
const TOP_LEVEL: [&str; 2] = ["examples", "xtask"];

/// One crate's section of the map.
#[derive(Debug)]
struct Section {
    /// The crate's folder from the root (`crates/tools-fs`, `xtask`)
    dir: String,
    /// 1-based line of its heading
    line: usize,
    /// The `.rs` names it gives, each with its line, resolved against its bullet's folder
    names: Vec<(String, usize)>,
}

/// The code spans of `line`, in order.
fn spans(line: &str) -> Vec<&str> {
    line.split('`').skip(1).step_by(2).collect()
}

/// The targets of the Markdown links of `line` (`[text](target)`), anchors cut.
fn links(line: &str) -> Vec<&str> {
    line.split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .map(|target| target.split('#').next().unwrap_or(target))
        .collect()
}

/// The crate sections of `text`.
fn sections(text: &str) -> Vec<Section> {
    let mut found: Vec<Section> = Vec::new();
    let mut folder = String::new();
    for (index, line) in text.lines().enumerate() {
        if line.starts_with("## ") {
            folder.clear();
            found.push(Section {
                dir: String::new(),
                line: index + 1,
                names: Vec::new(),
            });
            continue;
        }
        if let Some(heading) = line.strip_prefix("### ") {
            folder.clear();
            let dir = spans(heading)
                .first()
                .map_or(String::new(), |d| (*d).to_owned());
            found.push(Section {
                dir,
                line: index + 1,
                names: Vec::new(),
            });
            continue;
        }
        let Some(section) = found.last_mut() else {
            continue;
        };
        if let Some(bullet) = line.strip_prefix("- ") {
            folder = bullet
                .strip_prefix('`')
                .and_then(|rest| rest.split('`').next())
                .filter(|first| first.ends_with('/'))
                .unwrap_or_default()
                .to_owned();
        } else if !line.starts_with("  ") {
            folder.clear();
        }
        for span in spans(line) {
            if span.ends_with(".rs")
                && !span.contains(' ')
                && !ROOTS.iter().any(|r| span.starts_with(r))
            {
                section.names.push((format!("{folder}{span}"), index + 1));
            }
        }
    }
    found.retain(|s| !s.dir.is_empty());
    found
}

/// The `.rs` files under `dir/src`, as paths from `dir/src`.
fn sources(root: &Path, dir: &str) -> Result<BTreeSet<String>> {
    let src = root.join(dir).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files)?;
    Ok(files
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        .filter_map(|f| f.strip_prefix(&src).ok())
        .map(|f| f.to_string_lossy().into_owned())
        .collect())
}

/// The crate folders the map must cover: `crates/*` and [`TOP_LEVEL`].
fn crate_dirs(root: &Path) -> Vec<String> {
    let mut dirs: Vec<String> = fs::read_dir(root.join("crates"))
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().join("src").is_dir())
                .map(|e| format!("crates/{}", e.file_name().to_string_lossy()))
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs.extend(
        TOP_LEVEL
            .iter()
            .filter(|d| root.join(d).join("src").is_dir())
            .map(|d| (*d).to_owned()),
    );
    dirs
}

/// Checks the map of the workspace at `root`.
pub fn check(root: &Path, problems: &mut Vec<Problem>) -> Result<()> {
    let path = root.join(MAP);
    let text =
        fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
    check_text(root, &text, problems)
}

/// Checks `text` as the map of the workspace at `root`.
fn check_text(root: &Path, text: &str, problems: &mut Vec<Problem>) -> Result<()> {
    let problem = |line: usize, message: String| Problem {
        path: PathBuf::from(MAP),
        line,
        message,
    };
    let count = text.lines().count();
    if count > MAX_LINES {
        problems.push(problem(
            MAX_LINES + 1,
            format!(
                "the map has {count} lines, more than {MAX_LINES}: move mechanism detail into \
                 module docs or docs/ and keep one short fact per sentence here"
            ),
        ));
    }
    for (index, line) in text.lines().enumerate() {
        let named = spans(line).into_iter().chain(links(line));
        for target in named {
            let target = target.trim_end_matches(['.', ',']);
            if ROOTS.iter().any(|r| target.starts_with(r))
                && !target.contains(['*', '<', ' '])
                && !root.join(target).exists()
            {
                problems.push(problem(
                    index + 1,
                    format!("names `{target}`, which does not exist"),
                ));
            }
        }
    }
    let sections = sections(text);
    for dir in crate_dirs(root) {
        let files = sources(root, &dir)?;
        let Some(section) = sections.iter().find(|s| s.dir == dir) else {
            problems.push(problem(
                1,
                format!("has no section for `{dir}` (a `### `{dir}`` heading naming its files)"),
            ));
            continue;
        };
        let mut covered = BTreeSet::new();
        for (name, line) in &section.names {
            let from_crate = name.strip_prefix("src/").unwrap_or(name);
            if files.contains(from_crate) {
                covered.insert(from_crate.to_owned());
            } else {
                problems.push(problem(
                    *line,
                    format!("names `{name}` in `{dir}`'s section, but `{dir}/src/{from_crate}` does not exist"),
                ));
            }
        }
        for file in files.difference(&covered) {
            problems.push(problem(
                section.line,
                format!(
                    "`{dir}/src/{file}` is not named in `{dir}`'s section: say in a short \
                     sentence what it holds"
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[&str]) -> PathBuf {
        let root = std::env::temp_dir().join(format!(
            "xtask-archmap-{}-{}",
            std::process::id(),
            files.len()
        ));
        let _ = fs::remove_dir_all(&root);
        for file in files {
            let path = root.join(file);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, "//! x\n").unwrap();
        }
        root
    }

    fn found(root: &Path, text: &str) -> Vec<String> {
        let mut problems = Vec::new();
        check_text(root, text, &mut problems).unwrap();
        problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn folder_bullets_name_their_files() {
        let text = "## Code map\n\n### `crates/a`\n\n- `lib.rs`: root. `index/`: below.\n\
                    - `index/`: `mod.rs` and `watch.rs`,\n  `collect.rs` too.\n";
        let s = sections(text);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].dir, "crates/a");
        let names: Vec<&str> = s[0].names.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "lib.rs",
                "index/mod.rs",
                "index/watch.rs",
                "index/collect.rs"
            ]
        );
    }

    #[test]
    fn every_file_is_named_and_every_name_exists() {
        let root = tree(&[
            "crates/a/src/lib.rs",
            "crates/a/src/index/mod.rs",
            "crates/a/src/gone_from_map.rs",
            "xtask/src/main.rs",
            "docs/x.md",
        ]);
        let text = "# A\n\nSee [x](docs/x.md) and [y](docs/y.md#part).\n\n### `crates/a`\n\n\
                    - `lib.rs`, `old.rs`.\n- `index/`: `mod.rs`.\n\n### `xtask`\n\n\
                    - `src/main.rs`, in `xtask/src/main.rs`.\n";
        let problems = found(&root, text);
        assert_eq!(
            problems,
            [
                "ARCHITECTURE.md:3: names `docs/y.md`, which does not exist",
                "ARCHITECTURE.md:7: names `old.rs` in `crates/a`'s section, but \
                 `crates/a/src/old.rs` does not exist",
                "ARCHITECTURE.md:5: `crates/a/src/gone_from_map.rs` is not named in \
                 `crates/a`'s section: say in a short sentence what it holds",
            ],
            "{problems:#?}"
        );
        fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_crate_without_a_section_and_a_long_map_fail() {
        let root = tree(&["crates/b/src/lib.rs"]);
        let long = "line\n".repeat(MAX_LINES + 1);
        let problems = found(&root, &long);
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(problems[0].contains("more than 300"));
        assert!(problems[1].contains("no section for `crates/b`"));
        fs::remove_dir_all(&root).unwrap();
    }
}
