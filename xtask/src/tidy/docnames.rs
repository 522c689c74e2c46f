//! Every function, type and method the documentation names exists in the code.
//!
//! Checked: `README.md`, `ARCHITECTURE.md`, every `.md` file under `docs/` and each crate's
//! `README.md`, in their inline code spans and their `rust` code blocks. Three forms are
//! looked up, each against the public items of the workspace's crates (`pub fn`, `pub struct`
//! and the like, enum variants, and names re-exported with `pub use`):
//! - a path that starts with a workspace crate (`tools_lsp::install`,
//!   `registry::mcp::McpManager`): its last segment must be an item of that crate, or, after
//!   a type (`tools_shell::SandboxSettings::default`), of the crate that defines the type;
//! - `Type::member` (`ToolError::from_io`, `Dialect::Anthropic`): `Type` must be an item of
//!   some crate, and `member` an item or public field of that same crate;
//! - a method call `.name(` in an inline code span (`ctx.cwd()`, `.state_dir(state)`): some
//!   crate must have a `fn name` (in code blocks, mostly the standard library's, they are
//!   left alone; `docs/library.md`'s blocks are compiled as registry's doc tests).
//!
//! Names of other crates (`std::`, `tokio::`) and text that is not code are left alone. A
//! renamed or removed function then fails tidy until the documentation says the new name.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{Problem, walk};

/// What the crates define: per crate (by its Rust name), every item name, the names of
/// its types, and the external crates it re-exports whole (`pub use schemars;`).
#[derive(Debug, Default)]
struct Items {
    by_crate: HashMap<String, HashSet<String>>,
    types: HashMap<String, HashSet<String>>,
    reexported: HashMap<String, HashSet<String>>,
}

/// Methods of the standard library and common traits a document may call on a value.
const STD_METHODS: [&str; 16] = [
    "into",
    "clone",
    "to_owned",
    "to_string",
    "unwrap",
    "expect",
    "iter",
    "collect",
    "map",
    "as_ref",
    "as_str",
    "len",
    "is_empty",
    "join",
    "push",
    "get",
];

impl Items {
    fn read(root: &Path) -> Result<Items> {
        let mut items = Items::default();
        let mut dirs: Vec<PathBuf> = fs::read_dir(root.join("crates"))
            .map(|entries| entries.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        // The documents also name the checker's and the examples' own items.
        dirs.extend(["xtask", "examples"].iter().map(|d| root.join(d)));
        for dir in dirs {
            if !dir.join("Cargo.toml").is_file() {
                continue;
            }
            let Some(name) = dir
                .file_name()
                .map(|n| n.to_string_lossy().replace('-', "_"))
            else {
                continue;
            };
            let mut files = Vec::new();
            walk(&dir.join("src"), &mut files)?;
            for file in files
                .iter()
                .filter(|f| f.extension().is_some_and(|e| e == "rs"))
            {
                let text = fs::read_to_string(file)
                    .with_context(|| format!("cannot read {}", file.display()))?;
                items.collect(&name, &text);
            }
        }
        Ok(items)
    }

    fn collect(&mut self, krate: &str, text: &str) {
        collect_items(text, self.by_crate.entry(krate.to_owned()).or_default());
        let types = self.types.entry(krate.to_owned()).or_default();
        let reexported = self.reexported.entry(krate.to_owned()).or_default();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            for pair in words.windows(2) {
                if ["struct", "enum", "trait", "type", "union"].contains(&pair[0]) {
                    types.insert(ident_prefix(pair[1]).to_owned());
                }
            }
            if let Some(rest) = line.trim_start().strip_prefix("pub use ")
                && let Some(name) = rest.strip_suffix(';')
                && !name.contains("::")
            {
                reexported.insert(name.trim().to_owned());
            }
        }
    }

    fn crate_has(&self, krate: &str, name: &str) -> bool {
        self.by_crate.get(krate).is_some_and(|s| s.contains(name))
    }

    fn any_has(&self, name: &str) -> bool {
        self.by_crate.values().any(|s| s.contains(name))
    }

    /// The crates that define a type `name` (or re-export a name it could be).
    fn crates_with_type(&self, name: &str) -> Vec<&str> {
        self.by_crate
            .keys()
            .filter(|k| self.types.get(*k).is_some_and(|t| t.contains(name)))
            .map(String::as_str)
            .collect()
    }

    fn reexports(&self, krate: &str, name: &str) -> bool {
        self.reexported.get(krate).is_some_and(|s| s.contains(name))
    }
}

const ITEM_KEYWORDS: [&str; 9] = [
    "fn",
    "struct",
    "enum",
    "trait",
    "type",
    "const",
    "static",
    "mod",
    "macro_rules!",
];

/// Adds the names `text` defines: items after a keyword, enum variants (a capitalised
/// identifier alone at the start of a line, before `,`, `(` or `{`), and the names of
/// `use` lists.
fn collect_items(text: &str, set: &mut HashSet<String>) {
    for line in text.lines() {
        let trimmed = line.trim_start();
        let words: Vec<&str> = trimmed
            .split(|c: char| c.is_whitespace() || c == '(' || c == '<' || c == ':' || c == '{')
            .filter(|w| !w.is_empty())
            .collect();
        for pair in words.windows(2) {
            if ITEM_KEYWORDS.contains(&pair[0]) {
                set.insert(ident_prefix(pair[1]).to_owned());
            }
        }
        if trimmed.starts_with("pub use") || trimmed.starts_with("pub(crate) use") {
            for word in trimmed.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
                if !word.is_empty() {
                    set.insert(word.to_owned());
                }
            }
        }
        // Public fields (`pub read_only: Vec<PathBuf>`), which the docs name as members.
        if let Some(rest) = trimmed.strip_prefix("pub ") {
            let field = ident_prefix(rest);
            let after = rest[field.len()..].trim_start();
            if !field.is_empty() && after.starts_with(':') && !after.starts_with("::") {
                set.insert(field.to_owned());
            }
        }
        let first = ident_prefix(trimmed);
        if first.starts_with(|c: char| c.is_ascii_uppercase())
            && trimmed[first.len()..]
                .trim_start()
                .starts_with([',', '(', '{'])
        {
            set.insert(first.to_owned());
        }
    }
    // The continuation lines of multi-line `pub use` lists.
    let mut in_use = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("pub use") && trimmed.contains('{') && !trimmed.contains('}') {
            in_use = true;
            continue;
        }
        if in_use {
            for word in trimmed.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
                if !word.is_empty() {
                    set.insert(word.to_owned());
                }
            }
            if trimmed.contains('}') {
                in_use = false;
            }
        }
    }
}

/// The identifier at the start of `s`.
fn ident_prefix(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The documentation files checked.
fn doc_files(root: &Path) -> Result<Vec<PathBuf>> {
    let mut files = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    let mut docs = Vec::new();
    walk(&root.join("docs"), &mut docs)?;
    files.extend(
        docs.into_iter()
            .filter(|f| f.extension().is_some_and(|e| e == "md")),
    );
    if let Ok(entries) = fs::read_dir(root.join("crates")) {
        files.extend(entries.flatten().map(|e| e.path().join("README.md")));
    }
    files.retain(|f| f.is_file());
    files.sort();
    Ok(files)
}

/// The code of a Markdown text, line by line: inline code spans, and whole lines of `rust`
/// code blocks (marked `true`).
fn code_of(text: &str) -> Vec<(usize, String, bool)> {
    let mut out = Vec::new();
    let mut block: Option<bool> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(info) = trimmed.strip_prefix("```") {
            block = match block {
                Some(_) => None,
                None => Some(info.trim().is_empty() || info.trim().starts_with("rust")),
            };
            continue;
        }
        match block {
            Some(true) => out.push((i + 1, line.to_owned(), true)),
            Some(false) => {}
            None => {
                for (n, span) in line.split('`').enumerate() {
                    if n % 2 == 1 {
                        out.push((i + 1, span.to_owned(), false));
                    }
                }
            }
        }
    }
    out
}

/// The names `code` uses, in the three forms the module describes.
#[derive(Debug, PartialEq, Eq)]
enum Name {
    /// `crate::…::last`, with the segments between
    CratePath(String, Vec<String>, String),
    /// `Type::member`
    Member(String, String),
    /// `.method(`
    Method(String),
}

fn names_in(code: &str, crates: &HashSet<String>) -> Vec<Name> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        let starts_ident = (c.is_ascii_alphabetic() || c == '_')
            && (i == 0 || !(bytes[i - 1] as char).is_ascii_alphanumeric() && bytes[i - 1] != b'_');
        if !starts_ident {
            i += 1;
            continue;
        }
        // A path: identifiers joined by `::`.
        let mut segments = Vec::new();
        let mut j = i;
        loop {
            let ident = ident_prefix(&code[j..]);
            if ident.is_empty() {
                break;
            }
            segments.push(ident.to_owned());
            j += ident.len();
            if code[j..].starts_with("::") {
                j += 2;
            } else {
                break;
            }
        }
        let after_dot = i > 0 && bytes[i - 1] == b'.';
        let called = code[j..].starts_with('(');
        if segments.len() >= 2 && crates.contains(&segments[0]) {
            let last = segments.last().cloned().unwrap_or_default();
            let middle = segments[1..segments.len() - 1].to_vec();
            out.push(Name::CratePath(segments[0].clone(), middle, last));
        } else if segments.len() == 2
            && segments[0].starts_with(|c: char| c.is_ascii_uppercase())
            && !after_dot
        {
            out.push(Name::Member(segments[0].clone(), segments[1].clone()));
        } else if segments.len() == 1 && after_dot && called {
            out.push(Name::Method(segments[0].clone()));
        }
        i = j.max(i + 1);
    }
    out
}

/// Checks every documentation file.
pub fn check(root: &Path, problems: &mut Vec<Problem>) -> Result<()> {
    let items = Items::read(root)?;
    let crates: HashSet<String> = items.by_crate.keys().cloned().collect();
    for file in doc_files(root)? {
        let text =
            fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
        let rel = file.strip_prefix(root).unwrap_or(&file).to_path_buf();
        check_doc(&rel, &text, &items, &crates, problems);
    }
    Ok(())
}

fn check_doc(
    rel: &Path,
    text: &str,
    items: &Items,
    crates: &HashSet<String>,
    problems: &mut Vec<Problem>,
) {
    for (line, code, in_block) in code_of(text) {
        for name in names_in(&code, crates) {
            // A block's method calls are mostly the standard library's; its paths are checked.
            if in_block && matches!(name, Name::Method(_)) {
                continue;
            }
            let missing = match &name {
                // Through a re-exported crate (`tool_core::schemars::JsonSchema`): not ours.
                Name::CratePath(krate, middle, _)
                    if middle.iter().any(|m| items.reexports(krate, m)) =>
                {
                    None
                }
                Name::CratePath(krate, middle, last) => {
                    // `tools_shell::SandboxSettings::default`: a member of a type the crate
                    // re-exports from another one is found in the crate that defines it.
                    let of_type = middle.last().is_some_and(|ty| {
                        items
                            .crates_with_type(ty)
                            .iter()
                            .any(|k| items.crate_has(k, last))
                    });
                    (!items.crate_has(krate, last) && !of_type)
                        .then(|| format!("`{krate}::…::{last}`: {krate} has no item `{last}`"))
                }
                Name::Member(ty, member) => {
                    let owners = items.crates_with_type(ty);
                    // A type the workspace does not define (std's, a dependency's): not ours.
                    (!owners.is_empty() && !owners.iter().any(|k| items.crate_has(k, member))).then(
                        || {
                            format!(
                                "`{ty}::{member}`: no `{member}` in the crate that defines `{ty}`"
                            )
                        },
                    )
                }
                Name::Method(method) => (!STD_METHODS.contains(&method.as_str())
                    && !items.any_has(method))
                .then(|| format!("`.{method}(…)`: no crate has a function `{method}`")),
            };
            if let Some(message) = missing {
                problems.push(Problem {
                    path: rel.to_path_buf(),
                    line,
                    message: format!(
                        "{message}; the documentation names something the code does not have"
                    ),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(crates: &[(&str, &str)]) -> Items {
        let mut items = Items::default();
        for (krate, src) in crates {
            items.collect(krate, src);
        }
        items
    }

    fn check(doc: &str) -> Vec<String> {
        let items = items(&[
            (
                "tool_core",
                "pub struct ToolError;\nimpl ToolError {\n    pub fn from_io() {}\n}\npub enum Dialect {\n    Anthropic,\n    OpenAi { x: u8 },\n}\npub use context::{\n    ToolContext, default_state_dir,\n};\nimpl ToolContext { pub fn cwd(&self) {} }",
            ),
            (
                "tools_lsp",
                "pub fn install() {}\npub struct LspConfig;\nimpl LspConfig {\n    pub const fn defaults() -> Self { LspConfig }\n}",
            ),
            (
                "sandbox",
                "pub struct SandboxSettings {\n    pub read_only: Vec<u8>,\n    hidden: u8,\n}\nimpl Default for SandboxSettings {\n    fn default() -> Self { todo() }\n}",
            ),
            ("tools_shell", "pub use sandbox::{SandboxSettings};"),
        ]);
        let crates: HashSet<String> = items.by_crate.keys().cloned().collect();
        let mut problems = Vec::new();
        check_doc(Path::new("doc.md"), doc, &items, &crates, &mut problems);
        problems
            .iter()
            .map(|p| format!("{}: {}", p.line, p.message))
            .collect()
    }

    #[test]
    fn names_that_exist_pass() {
        let doc = "Use `tools_lsp::install(builder, LspConfig::defaults(), root)`, \
                   `ToolError::from_io(path, ctx.cwd(), e)`, `Dialect::Anthropic`, \
                   `tool_core::default_state_dir()` and `std::fs::read(p)`; \
                   `tools_shell::SandboxSettings::default()`, `SandboxSettings::read_only`.\n\
                   ```rust\nlet d = tool_core::Dialect::OpenAi;\n```\n\
                   ```sh\nagent-tools call Bash '{}'.nope()\n```\n";
        assert_eq!(check(doc), Vec::<String>::new());
    }

    #[test]
    fn missing_names_are_problems_with_their_line() {
        let doc = "intro\n`tools_lsp::wire(b)` and `LspConfig::standard()`\n\
                   `ctx.working_directory()` and `Dialect::Gemini`\n\
                   ```rust\nToolError::from_file(p);\n```\n\
                   `tools_shell::SandboxSettings::strict()` and `SandboxSettings::hidden`\n";
        let got = check(doc);
        assert_eq!(got.len(), 7, "{got:?}");
        assert!(got[0].starts_with("2: `tools_lsp::…::wire`"), "{got:?}");
        assert!(got[1].starts_with("2: `LspConfig::standard`"), "{got:?}");
        assert!(got[2].starts_with("3: `.working_directory(…)`"), "{got:?}");
        assert!(got[3].starts_with("3: `Dialect::Gemini`"), "{got:?}");
        assert!(got[4].starts_with("5: `ToolError::from_file`"), "{got:?}");
        assert!(got[5].starts_with("7: `tools_shell::…::strict`"), "{got:?}");
        assert!(
            got[6].starts_with("7: `SandboxSettings::hidden`"),
            "{got:?}"
        );
    }
}
