//! Dependency rules between the workspace's crates, read from each `crates/*/Cargo.toml`
//! and from the manifests of the members outside `crates/` ([`super::TOP_LEVEL_PACKAGES`]).
//!
//! The rules are data: [`RULES`] says, per crate, which internal crates it may depend on,
//! which internal crates are for tests only (test-support: a dev-dependency of anyone, a
//! dependency of no one), and, per restricted external crate, who may (or may not) use it. Manifests are read by a
//! small parser that knows what Cargo manifests here use: `[dependencies]`,
//! `[dev-dependencies]`, `[build-dependencies]`, their `[target.'…'.…]` forms and
//! `[dependencies.name]` tables, `name.workspace = true`, inline tables (also spanning
//! lines) and `package = "…"` renames.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::Problem;

/// The crates that implement one category of tools each.
pub const CATEGORIES: [&str; 6] = [
    "tools-fs",
    "tools-shell",
    "tools-web",
    "tools-lsp",
    "tools-mcp",
    "tools-agent",
];

/// What a category crate may depend on: tool-core and the pure command analysis.
const CATEGORY_DEPS: &[&str] = &["tool-core", "shell-analysis"];

/// Why a category crate may depend on tool-core (and shell-analysis) only.
const CATEGORY_WHY: &str = "a category crate depends on tool-core (and the pure command \
                            analysis, shell-analysis) and never on another category crate, \
                            registry or agent-tools (what one needs from another goes through \
                            a tool-core trait)";

/// The categories that start programs of the project: the shell's commands and the
/// language servers run in the sandbox.
const SANDBOXED_CATEGORY_DEPS: &[&str] = &["tool-core", "shell-analysis", "sandbox"];

/// Why tools-shell and tools-lsp may also depend on sandbox.
const SANDBOXED_CATEGORY_WHY: &str = "a category crate depends on tool-core (and the pure \
                                      command analysis, shell-analysis) and never on another \
                                      category crate, registry or agent-tools; tools-shell and \
                                      tools-lsp also use the sandbox crate, \
                                      which runs what they start contained";

/// What tools-fs may depend on: tool-core, and the search index it answers Grep and Glob
/// from.
const FS_DEPS: &[&str] = &["tool-core", "search-index"];

/// The registry knows every category.
const REGISTRY_DEPS: &[&str] = &[
    "tool-core",
    "tools-fs",
    "tools-shell",
    "tools-web",
    "tools-lsp",
    "tools-mcp",
    "tools-agent",
];

/// The examples embed the library crates as a user's program would: any of them.
const EXAMPLES_DEPS: &[&str] = &[
    "tool-core",
    "sandbox",
    "shell-analysis",
    "tools-fs",
    "tools-shell",
    "tools-web",
    "tools-lsp",
    "tools-mcp",
    "tools-agent",
    "registry",
];

/// One dependency rule.
#[derive(Clone, Copy)]
pub enum Rule {
    /// `krate`'s `[dependencies]` and `[build-dependencies]` may name these internal crates
    /// and no other; its `[dev-dependencies]` may also name `dev_extra`. A crate under
    /// `crates/` without such a rule is itself a problem.
    Internal {
        krate: &'static str,
        allowed: &'static [&'static str],
        dev_extra: &'static [&'static str],
        why: &'static str,
    },
    /// Only `users` may depend on the external crate `dep` (in any section). A `dep` ending
    /// in `*` is a prefix.
    ExternalOnly {
        dep: &'static str,
        users: &'static [&'static str],
        why: &'static str,
    },
    /// The internal crate `krate` is for tests only: any crate may name it in
    /// `[dev-dependencies]`, none in `[dependencies]` or `[build-dependencies]` (this rule
    /// comes before every `Internal` rule's lists, which never name it).
    DevOnly {
        krate: &'static str,
        why: &'static str,
    },
    /// None of `crates` may depend on the external crate `dep` (in any section).
    ExternalNever {
        dep: &'static str,
        crates: &'static [&'static str],
        why: &'static str,
    },
    /// A temporary allowance: the crate (first) may depend on these crates (second)
    /// whatever the other rules say. Listing a dependency the crate no longer has is a
    /// problem, so the allowance shrinks with the code. [`RULES`] needs none today (the
    /// seeded tests still exercise the mechanism).
    #[cfg_attr(not(test), allow(dead_code))]
    Exception(&'static str, &'static [&'static str]),
}

/// Dev-dependencies are freer: a category crate's tests may run tools of other categories
/// for real (tools-agent's run Read, Grep and TaskOutput). They may not pull in registry or
/// the binary, and tool-core's tests stay independent of every category (the categories
/// depend on tool-core). The external rules hold in every section.
const TESTS_MAY_USE_CATEGORIES: &[&str] = &CATEGORIES;

const NO_HTTP_MCP_LSP: &str = "tool-core has no HTTP, MCP or LSP dependency (nor a parser \
                               of a tool's language)";

/// The dependency rules, checked by `cargo xtask tidy`.
pub const RULES: &[Rule] = &[
    Rule::Internal {
        krate: "tool-core",
        allowed: &[],
        dev_extra: &[],
        why: "tool-core depends on no other crate of the workspace",
    },
    Rule::Internal {
        krate: "shell-analysis",
        allowed: &[],
        dev_extra: &[],
        why: "shell-analysis is the pure command analysis under the shell tools: it sits \
              between tool-core and the category crates and depends on no crate of the \
              workspace (no category, not even tool-core: rules reach it as matchers)",
    },
    Rule::Internal {
        krate: "tools-fs",
        allowed: FS_DEPS,
        dev_extra: TESTS_MAY_USE_CATEGORIES,
        why: "a category crate depends on tool-core and never on another category crate, \
              registry or agent-tools; tools-fs also uses search-index, the support crate \
              its Grep and Glob answer from",
    },
    Rule::Internal {
        krate: "search-index",
        allowed: &[],
        dev_extra: &[],
        why: "search-index is pure of tool knowledge: it depends on no crate of the \
              workspace (tools-fs decides what is indexed and searches the candidates)",
    },
    Rule::Internal {
        krate: "sandbox",
        allowed: &["tool-core"],
        dev_extra: &[],
        why: "the sandbox is the containment the category crates run their programs in: it \
              depends on tool-core only, never on a category crate",
    },
    Rule::Internal {
        krate: "tools-shell",
        allowed: SANDBOXED_CATEGORY_DEPS,
        dev_extra: TESTS_MAY_USE_CATEGORIES,
        why: SANDBOXED_CATEGORY_WHY,
    },
    Rule::Internal {
        krate: "tools-web",
        allowed: CATEGORY_DEPS,
        dev_extra: TESTS_MAY_USE_CATEGORIES,
        why: CATEGORY_WHY,
    },
    Rule::Internal {
        krate: "tools-lsp",
        allowed: SANDBOXED_CATEGORY_DEPS,
        dev_extra: TESTS_MAY_USE_CATEGORIES,
        why: SANDBOXED_CATEGORY_WHY,
    },
    Rule::Internal {
        krate: "tools-mcp",
        allowed: CATEGORY_DEPS,
        dev_extra: TESTS_MAY_USE_CATEGORIES,
        why: CATEGORY_WHY,
    },
    Rule::Internal {
        krate: "tools-agent",
        allowed: CATEGORY_DEPS,
        dev_extra: TESTS_MAY_USE_CATEGORIES,
        why: CATEGORY_WHY,
    },
    Rule::Internal {
        krate: "registry",
        allowed: REGISTRY_DEPS,
        dev_extra: &[],
        why: "the registry is the only crate that knows every category",
    },
    Rule::Internal {
        krate: "agent-tools",
        allowed: &["registry", "tool-core"],
        dev_extra: &["shell-analysis"],
        why: "the binary reaches the tools through the registry and tool-core",
    },
    Rule::Internal {
        krate: "test-support",
        allowed: &[],
        dev_extra: &[],
        why: "test-support serves every crate's tests, tool-core's included, so it depends on \
              no crate of the workspace",
    },
    Rule::Internal {
        krate: "examples",
        allowed: EXAMPLES_DEPS,
        dev_extra: &[],
        why: "the examples embed the library crates as a user's program would: any library \
              crate, never the binary (what it does, a user's host does through the registry)",
    },
    Rule::DevOnly {
        krate: "test-support",
        why: "test-support is shared by the tests only: a dev-dependency of any crate, never \
              a dependency of a library or the binary",
    },
    Rule::ExternalOnly {
        dep: "rmcp",
        users: &["tools-mcp"],
        why: "tools-mcp is the only crate that speaks the MCP wire format",
    },
    Rule::ExternalOnly {
        dep: "landlock",
        users: &["sandbox"],
        why: "the sandbox crate is the one place that confines processes",
    },
    Rule::ExternalOnly {
        dep: "seccompiler",
        users: &["sandbox"],
        why: "the sandbox crate is the one place that confines processes",
    },
    Rule::ExternalNever {
        dep: "rmcp",
        crates: &["tool-core"],
        why: NO_HTTP_MCP_LSP,
    },
    Rule::ExternalNever {
        dep: "reqwest",
        crates: &["tool-core"],
        why: NO_HTTP_MCP_LSP,
    },
    Rule::ExternalNever {
        dep: "hyper*",
        crates: &["tool-core"],
        why: NO_HTTP_MCP_LSP,
    },
    Rule::ExternalNever {
        dep: "axum",
        crates: &["tool-core"],
        why: NO_HTTP_MCP_LSP,
    },
    Rule::ExternalNever {
        dep: "lsp-types",
        crates: &["tool-core"],
        why: NO_HTTP_MCP_LSP,
    },
    Rule::ExternalNever {
        dep: "tree-sitter*",
        crates: &["tool-core"],
        why: NO_HTTP_MCP_LSP,
    },
    Rule::ExternalNever {
        dep: "tokio",
        crates: &["shell-analysis"],
        why: "shell-analysis is pure: no I/O, no runtime, no processes",
    },
];

/// Which section a dependency is declared in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Normal,
    Dev,
    Build,
}

impl Kind {
    fn section(self) -> &'static str {
        match self {
            Kind::Normal => "[dependencies]",
            Kind::Dev => "[dev-dependencies]",
            Kind::Build => "[build-dependencies]",
        }
    }
}

/// One declared dependency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dep {
    /// The package depended on (after a `package = "…"` rename).
    pub name: String,
    pub kind: Kind,
    /// 1-based line of its declaration.
    pub line: usize,
}

/// What the checks need of a manifest.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// `[package] name`.
    pub package: Option<String>,
    pub deps: Vec<Dep>,
}

/// The section a header opens.
enum Section {
    Package,
    /// A table of dependencies.
    Deps(Kind),
    /// `[dependencies.name]`: one dependency's table (index into `deps`).
    One(usize),
    Other,
}

/// The kind of a dependency table named `name` (`dependencies`, `dev-dependencies`, …).
fn kind_of(name: &str) -> Option<Kind> {
    match name {
        "dependencies" => Some(Kind::Normal),
        "dev-dependencies" | "dev_dependencies" => Some(Kind::Dev),
        "build-dependencies" | "build_dependencies" => Some(Kind::Build),
        _ => None,
    }
}

/// Splits a dotted key or header on dots outside quotes, unquoting each part.
fn dotted(key: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    for c in key.chars() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '.') => parts.push(std::mem::take(&mut current).trim().to_owned()),
            _ => current.push(c),
        }
    }
    parts.push(current.trim().to_owned());
    parts
}

/// The line without its comment (a `#` outside a string).
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' => return &line[..i],
            None => {}
        }
    }
    line
}

/// Open brackets and braces minus closed ones, outside strings.
fn nesting(text: &str) -> i64 {
    let mut quote: Option<char> = None;
    let mut depth = 0;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None => match c {
                '"' | '\'' => quote = Some(c),
                '[' | '{' => depth += 1,
                ']' | '}' => depth -= 1,
                _ => {}
            },
        }
    }
    depth
}

/// The value of `key = "value"` inside an inline table's text, if present.
fn inline_string(value: &str, key: &str) -> Option<String> {
    let mut rest = value;
    while let Some(at) = rest.find(key) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + key.len()..].trim_start();
        rest = &rest[at + key.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '-' || c == '_') {
            continue;
        }
        if let Some(value) = after.strip_prefix('=') {
            let value = value.trim_start();
            let quote = value.chars().next()?;
            if quote == '"' || quote == '\'' {
                let inner = &value[1..];
                return inner.find(quote).map(|end| inner[..end].to_owned());
            }
        }
    }
    None
}

/// Parses what the checks need of a Cargo manifest.
pub fn parse_manifest(text: &str) -> Manifest {
    let mut manifest = Manifest::default();
    let mut section = Section::Other;
    // Open brackets of a value that continues on the next lines, and the dependency it
    // belongs to (its rename may come later).
    let mut open: i64 = 0;
    let mut open_dep: Option<usize> = None;
    for (index, raw) in text.lines().enumerate() {
        let line = strip_comment(raw).trim();
        if open > 0 {
            open += nesting(line);
            if let (Some(dep), Some(package)) = (open_dep, inline_string(line, "package")) {
                manifest.deps[dep].name = package;
            }
            continue;
        }
        if line.is_empty() {
            continue;
        }
        if line.starts_with("[[") {
            section = Section::Other;
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let parts = dotted(header);
            let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
            // `[target.'cfg(…)'.dependencies…]` is the same as without the target.
            let parts = match parts.as_slice() {
                ["target", _, rest @ ..] => rest,
                all => all,
            };
            section = match parts {
                ["package"] => Section::Package,
                [table] => kind_of(table).map_or(Section::Other, Section::Deps),
                [table, name] => match kind_of(table) {
                    Some(kind) => {
                        manifest.deps.push(Dep {
                            name: (*name).to_owned(),
                            kind,
                            line: index + 1,
                        });
                        Section::One(manifest.deps.len() - 1)
                    }
                    None => Section::Other,
                },
                _ => Section::Other,
            };
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = dotted(key);
        let value = value.trim();
        match section {
            Section::Package => {
                if key.len() == 1 && key[0] == "name" {
                    manifest.package = Some(value.trim_matches(['"', '\'']).to_owned());
                }
            }
            Section::Deps(kind) => {
                let name = inline_string(value, "package").unwrap_or_else(|| key[0].clone());
                manifest.deps.push(Dep {
                    name,
                    kind,
                    line: index + 1,
                });
                open = nesting(value);
                open_dep = Some(manifest.deps.len() - 1);
            }
            Section::One(dep) => {
                if key.len() == 1 && key[0] == "package" {
                    manifest.deps[dep].name = value.trim_matches(['"', '\'']).to_owned();
                }
                open = nesting(value);
                open_dep = None;
            }
            Section::Other => open = nesting(value),
        }
    }
    manifest
}

/// Whether the dependency name `name` matches the rule's `pattern` (`*` suffix: a prefix).
fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

/// The workspace's internal crates: every `crates/*` package name.
fn internal_names(manifests: &[(String, Manifest)]) -> Vec<String> {
    manifests
        .iter()
        .filter_map(|(_, m)| m.package.clone())
        .collect()
}

/// Reads every `crates/*/Cargo.toml` under `root`, then those of the
/// [`super::TOP_LEVEL_PACKAGES`] present: (path relative to root, manifest).
pub fn manifests(root: &Path) -> Result<Vec<(String, Manifest)>> {
    let mut found = Vec::new();
    let mut dirs: Vec<_> = match fs::read_dir(root.join("crates")) {
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    };
    dirs.sort();
    dirs.extend(super::TOP_LEVEL_PACKAGES.iter().map(|p| root.join(p)));
    for dir in dirs {
        let path = dir.join("Cargo.toml");
        if !path.is_file() {
            continue;
        }
        let text =
            fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let rel = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .into_owned();
        let mut manifest = parse_manifest(&text);
        if manifest.package.is_none() {
            // Reported below by name; the directory names the crate.
            manifest.package = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        }
        found.push((rel, manifest));
    }
    Ok(found)
}

/// Checks every manifest [`manifests`] reads against [`RULES`].
pub fn check(root: &Path, problems: &mut Vec<Problem>) -> Result<()> {
    check_with(root, RULES, problems)
}

/// Checks every manifest [`manifests`] reads against `rules`.
pub fn check_with(root: &Path, rules: &[Rule], problems: &mut Vec<Problem>) -> Result<()> {
    let manifests = manifests(root)?;
    let internal = internal_names(&manifests);
    for (path, manifest) in &manifests {
        let krate = manifest.package.as_deref().unwrap_or_default();
        let mut report = |line: usize, message: String| {
            problems.push(Problem {
                path: path.into(),
                line,
                message,
            });
        };
        let exceptions: Vec<&str> = rules
            .iter()
            .filter_map(|rule| match rule {
                Rule::Exception(k, deps) if *k == krate => Some(*deps),
                _ => None,
            })
            .flatten()
            .copied()
            .collect();
        let dev_only = |name: &str| {
            rules.iter().find_map(|rule| match rule {
                Rule::DevOnly { krate: k, why } if *k == name => Some(*why),
                _ => None,
            })
        };
        let internal_rule = rules.iter().find_map(|rule| match rule {
            Rule::Internal {
                krate: k,
                allowed,
                dev_extra,
                why,
            } if *k == krate => Some((*allowed, *dev_extra, *why)),
            _ => None,
        });
        let Some((allowed, dev_extra, why)) = internal_rule else {
            report(
                1,
                format!(
                    "crate `{krate}` has no dependency rule: add a `Rule::Internal` for it to \
                     RULES in xtask/src/tidy/deps.rs"
                ),
            );
            continue;
        };
        for dep in &manifest.deps {
            let name = dep.name.as_str();
            if exceptions.contains(&name) {
                continue;
            }
            let section = dep.kind.section();
            if let Some(why) = dev_only(name) {
                if dep.kind != Kind::Dev {
                    report(
                        dep.line,
                        format!("`{krate}` depends on `{name}` in {section}: rule: {why}"),
                    );
                }
                continue;
            }
            if internal.iter().any(|i| i == name) {
                // A dev-dependency on itself is how a crate's tests turn on its `testing`
                // feature (see `testing.rs`).
                let ok = allowed.contains(&name)
                    || (dep.kind == Kind::Dev && (dev_extra.contains(&name) || name == krate));
                if !ok {
                    report(
                        dep.line,
                        format!("`{krate}` depends on `{name}` in {section}: rule: {why}"),
                    );
                }
                continue;
            }
            for rule in rules {
                match rule {
                    Rule::ExternalOnly { dep: d, users, why }
                        if matches(d, name) && !users.contains(&krate) =>
                    {
                        report(
                            dep.line,
                            format!("`{krate}` depends on `{name}` in {section}: rule: {why}"),
                        );
                    }
                    Rule::ExternalNever {
                        dep: d,
                        crates,
                        why,
                    } if matches(d, name) && crates.contains(&krate) => {
                        report(
                            dep.line,
                            format!("`{krate}` depends on `{name}` in {section}: rule: {why}"),
                        );
                    }
                    _ => {}
                }
            }
        }
        for allowed in exceptions {
            if !manifest.deps.iter().any(|d| d.name == allowed) {
                report(
                    1,
                    format!(
                        "`{krate}` no longer depends on `{allowed}`: delete it from its \
                         `Rule::Exception` in xtask/src/tidy/deps.rs"
                    ),
                );
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_forms_manifests_use() {
        let text = r#"[package]
name = "demo" # a comment
[features]
x = ["dep:y"]
[dependencies]
a.workspace = true
b = { workspace = true, features = [
    "one",
    "two",
] }
renamed = { package = "real", version = "1" }
[target.'cfg(unix)'.dependencies]
c = "1"
[dev-dependencies.d]
version = "1"
package = "dd"
[[test]]
name = "it"
[build-dependencies]
"e" = "1"
"#;
        let manifest = parse_manifest(text);
        assert_eq!(manifest.package.as_deref(), Some("demo"));
        let deps: Vec<(&str, Kind, usize)> = manifest
            .deps
            .iter()
            .map(|d| (d.name.as_str(), d.kind, d.line))
            .collect();
        assert_eq!(
            deps,
            vec![
                ("a", Kind::Normal, 6),
                ("b", Kind::Normal, 7),
                ("real", Kind::Normal, 11),
                ("c", Kind::Normal, 13),
                ("dd", Kind::Dev, 14),
                ("e", Kind::Build, 20),
            ]
        );
    }
}
