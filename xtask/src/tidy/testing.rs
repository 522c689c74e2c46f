//! A crate's `testing` module is for tests only.
//!
//! A library crate may export what its integration tests need beyond its API in a module
//! `#[cfg(feature = "testing")] #[doc(hidden)] pub mod testing` declared in its
//! `src/lib.rs`, whose `testing` feature only its own dev-dependency on itself turns on. So
//! the compiler refuses production code that names the module, however it is spelled, and
//! this check keeps the door shut:
//! - no manifest turns a `testing` feature on outside `[dev-dependencies]` (not in
//!   `[dependencies]`, `[build-dependencies]` or `[features]`);
//! - a `pub mod testing` in a `lib.rs` is `#[cfg(feature = "testing")]` and
//!   `#[doc(hidden)]`;
//! - and, as before the feature, production code — every other file under `crates/*/src`
//!   and the `src` of the members outside `crates/` — does not name another crate's
//!   `testing` module (files under `tests/`, `benches/` or `examples/` and `#[cfg(test)]`
//!   items may). xtask is not checked: it is the checker.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::{Problem, source, walk};

/// Whether a `src/lib.rs` (`code`: its text with comments and strings blanked, `text`: as
/// written) declares `pub mod testing`, and whether that declaration is `#[doc(hidden)]` and
/// behind `#[cfg(feature = "testing")]`: `None` without one, else the 1-based line and
/// whether it is both.
fn testing_module(code: &str, text: &str) -> Option<(usize, bool)> {
    let lines: Vec<&str> = code.lines().collect();
    let written: Vec<&str> = text.lines().collect();
    let at = lines.iter().position(|l| {
        let t = l.trim_start();
        t.starts_with("pub mod testing ")
            || t.starts_with("pub mod testing{")
            || t == "pub mod testing;"
    })?;
    let attributes: Vec<String> = written[..at]
        .iter()
        .rev()
        .map(|l| l.trim())
        .take_while(|l| l.starts_with("#[") || l.is_empty())
        .map(|l| l.replace(' ', ""))
        .collect();
    let has = |a: &str| attributes.iter().any(|l| l == a);
    Some((
        at + 1,
        has("#[doc(hidden)]") && has("#[cfg(feature=\"testing\")]"),
    ))
}

/// Lines of a manifest that turn a `testing` feature on outside `[dev-dependencies]`: the
/// word `testing` however it is quoted (`"testing"`, `'testing'`, `"crate/testing"`,
/// `"crate?/testing"`) in `[dependencies]`, `[build-dependencies]`, their `[target.…]`,
/// `[….name]` and `[workspace.…]` forms, or `[features]`, where only the feature's own
/// definition (`testing = […]`) may name it. Matching the word, not a spelling of the
/// value, makes a doubtful line a finding rather than a miss. Returns 1-based lines.
fn enables_testing(manifest: &str) -> Vec<usize> {
    let word = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    let mut checked = false;
    let mut features = false;
    let mut found = Vec::new();
    for (index, raw) in manifest.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let header = header.trim_matches(['[', ']']).trim();
            features = header == "features";
            checked = !header.contains("dev-dependencies")
                && !header.contains("dev_dependencies")
                && (header.contains("dependencies") || features);
            continue;
        }
        let body = match line.strip_prefix("testing") {
            // The feature's own definition: its value may not name it again.
            Some(rest) if features && rest.trim_start().starts_with('=') => rest,
            _ => line,
        };
        let named = body.match_indices("testing").any(|(at, w)| {
            !body[..at].chars().next_back().is_some_and(word)
                && !body[at + w.len()..].chars().next().is_some_and(word)
        });
        if checked && named {
            found.push(index + 1);
        }
    }
    found
}

/// Problems in one production file's text (`rel` is the path reported): names of the
/// `testing` modules of `crates` (crate names as Rust paths, `tools_agent`) outside
/// `#[cfg(test)]` items. `own` is the file's own crate, which may use its module.
pub fn check_text(
    rel: &Path,
    text: &str,
    crates: &[String],
    own: &str,
    problems: &mut Vec<Problem>,
) {
    let masked = source::mask(text);
    let tests = source::test_lines(&masked.code);
    for (index, line) in masked.code.split('\n').enumerate() {
        if tests.get(index).copied().unwrap_or(false) {
            continue;
        }
        for name in crates.iter().filter(|c| c.as_str() != own) {
            let needle = format!("{name}::testing");
            let found = line.match_indices(&needle).any(|(at, _)| {
                let before = line[..at].chars().next_back();
                let after = line[at + needle.len()..].chars().next();
                !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                    && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
            });
            if found {
                problems.push(Problem {
                    path: rel.to_path_buf(),
                    line: index + 1,
                    message: format!(
                        "uses `{needle}` in production code: rule: a crate's `testing` module \
                         is for tests only (tests/, #[cfg(test)]); export what production \
                         code needs through the crate's API"
                    ),
                });
            }
        }
    }
}

/// The packages checked: every folder under `crates/` and the members outside it.
fn packages(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = match std::fs::read_dir(root.join("crates")) {
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    };
    dirs.sort();
    dirs.extend(super::TOP_LEVEL_PACKAGES.iter().map(|p| root.join(p)));
    dirs
}

/// A package folder's crate name as a Rust path (`tools-agent` → `tools_agent`).
fn crate_ident(dir: &Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().replace('-', "_"))
        .unwrap_or_default()
}

/// Finds the crates with a `testing` module, then checks every package's `src`.
pub fn check(root: &Path, problems: &mut Vec<Problem>) -> Result<()> {
    let dirs = packages(root);
    let mut crates = Vec::new();
    for dir in &dirs {
        let lib = dir.join("src/lib.rs");
        let Ok(text) = std::fs::read_to_string(&lib) else {
            continue;
        };
        if let Some((line, hidden)) = testing_module(&source::mask(&text).code, &text) {
            crates.push(crate_ident(dir));
            if !hidden {
                problems.push(Problem {
                    path: lib.strip_prefix(root).unwrap_or(&lib).to_path_buf(),
                    line,
                    message: "`pub mod testing` is not `#[cfg(feature = \"testing\")]` and \
                              `#[doc(hidden)]`: rule: a testing module is not part of the API \
                              and exists only in the crate's own test builds"
                        .to_owned(),
                });
            }
        }
    }
    // Every package's manifest, and the workspace's (its dependency table is inherited).
    for dir in dirs.iter().chain([&root.to_path_buf()]) {
        let manifest = dir.join("Cargo.toml");
        if let Ok(text) = std::fs::read_to_string(&manifest) {
            for line in enables_testing(&text) {
                problems.push(Problem {
                    path: manifest
                        .strip_prefix(root)
                        .unwrap_or(&manifest)
                        .to_path_buf(),
                    line,
                    message: "turns a `testing` feature on outside [dev-dependencies]: rule: \
                              a crate's testing module is for its own tests only"
                        .to_owned(),
                });
            }
        }
    }
    if crates.is_empty() {
        return Ok(());
    }
    for dir in &dirs {
        let own = crate_ident(dir);
        let mut files = Vec::new();
        walk(&dir.join("src"), &mut files)?;
        files.sort();
        for file in files
            .iter()
            .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        {
            let Ok(text) = std::fs::read_to_string(file) else {
                continue;
            };
            check_text(
                file.strip_prefix(root).unwrap_or(file),
                &text,
                &crates,
                &own,
                problems,
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<String> {
        let mut problems = Vec::new();
        let crates = vec!["tools_agent".to_owned()];
        check_text(Path::new("a.rs"), text, &crates, "registry", &mut problems);
        problems.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn production_code_may_not_use_a_testing_module() {
        let used = "//! D.\nuse tools_agent::testing::TeamStore;\n";
        assert_eq!(found(used).len(), 1);
        assert!(found(used)[0].starts_with("a.rs:2: uses `tools_agent::testing`"));
        assert_eq!(found("fn f() { tools_agent::testing::NO_MATCH; }").len(), 1);
        // The API, another crate's name that merely ends alike, comments and strings.
        assert!(found("use tools_agent::tools;\nuse my_tools_agent::testing::X;\n").is_empty());
        assert!(
            found("// tools_agent::testing::X\nconst S: &str = \"tools_agent::testing\";\n")
                .is_empty()
        );
        // Tests may.
        assert!(found("#[cfg(test)]\nmod tests {\n use tools_agent::testing::X;\n}\n").is_empty());
        // The crate itself may.
        let mut problems = Vec::new();
        let crates = vec!["tools_agent".to_owned()];
        check_text(
            Path::new("a.rs"),
            "use tools_agent::testing::X;\n",
            &crates,
            "tools_agent",
            &mut problems,
        );
        assert!(problems.is_empty());
    }

    #[test]
    fn only_dev_dependencies_turn_testing_on() {
        let manifest = r#"[package]
name = "a"
keywords = ["testing"]

[features]
default = []
testing = []
more = ["b/testing"]

[dependencies]
b = { workspace = true, features = ["x", "testing"] }

[target.'cfg(unix)'.dependencies]
c = { workspace = true, features = [
  "testing",
] }

[dependencies.d]
features = ["testing"]

[dev-dependencies]
a = { workspace = true, features = ["testing"] }

[target.'cfg(unix)'.dev-dependencies]
c = { workspace = true, features = ["testing"] }
"#;
        assert_eq!(enables_testing(manifest), vec![8, 11, 15, 19]);
        assert!(enables_testing("[features]\ntesting = []\n").is_empty());
        // Other quotes, an optional dependency, the workspace's table, a feature turning
        // on its own testing, a spaced header; names that merely contain the word do not.
        let spelled = r#"[features]
a = ['testing']
b = ["c?/testing"]
testing = ["testing-extra"]
c = ["testing"]
[workspace.dependencies]
d = { path = "d", features = ['testing'] }
[ dependencies ]
e = { workspace = true, features = ["my-testing", "testing_x"] }
f = { workspace = true, features = ["testing"] }
"#;
        assert_eq!(enables_testing(spelled), vec![2, 3, 5, 7, 10]);
    }

    #[test]
    fn a_testing_module_is_found_and_must_be_gated_and_hidden() {
        assert_eq!(
            testing_module(
                "#[cfg(feature = \"testing\")]\n#[doc(hidden)]\npub mod testing {\n}\n",
                "#[cfg(feature = \"testing\")]\n#[doc(hidden)]\npub mod testing {\n}\n"
            ),
            Some((3, true))
        );
        assert_eq!(
            testing_module(
                "#[doc(hidden)]\npub mod testing {\n}\n",
                "#[doc(hidden)]\npub mod testing {\n}\n"
            ),
            Some((2, false))
        );
        assert_eq!(
            testing_module("mod a;\npub mod testing;\n", "mod a;\npub mod testing;\n"),
            Some((2, false))
        );
        assert_eq!(
            testing_module(
                "pub mod testing_tools;\nmod testing;\n",
                "pub mod testing_tools;\nmod testing;\n"
            ),
            None
        );
    }
}
