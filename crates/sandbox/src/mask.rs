//! Paths hidden from sandboxed commands: what the session's Read deny rules match, and the
//! user's credential stores ([`SECRETS`], unless `sandbox.hideSecrets` is false).
//!
//! Masks are resolved when the policy is built (for every command): a literal pattern is one
//! path; a glob is matched against the paths under its literal prefix, and a pattern
//! without a slash (`.env`, `*.key`, which deny rules apply anywhere) against the paths
//! under the working directories and the home directory's own entries. Walks skip `.git`
//! and `node_modules` and stop after [`WALK_LIMIT`] entries per start. Only paths that exist
//! are masked; one created later is masked from the next command on (a changed mask set
//! starts a new persistent sandbox). A mask that would hide a working directory or a
//! writable root is narrowed to the entries beside them.

use std::path::{Component, Path, PathBuf};

use tool_core::PathPattern;

/// A Read deny rule: its pattern (the rule's content) and the directory its `/x` patterns
/// are relative to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenyRead {
    /// The pattern, as in `Read(PATTERN)`
    pub pattern: String,
    /// The rule source's root (the project for a settings file)
    pub root: PathBuf,
}

/// A hidden path (canonical, existing when the policy was built).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mask {
    /// A file: reads as empty
    File(PathBuf),
    /// A directory: an empty directory nobody can enter
    Dir(PathBuf),
}

impl Mask {
    /// The hidden path.
    pub fn path(&self) -> &Path {
        match self {
            Mask::File(p) | Mask::Dir(p) => p,
        }
    }
}

/// Credential stores under the home directory, hidden by default: SSH and GnuPG keys,
/// cloud, container and cluster credentials, tokens of package registries, git
/// credentials, and the tokens of Claude Code and GitHub's CLI.
pub const SECRETS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/gh/hosts.yml",
    ".claude/.credentials.json",
    ".password-store",
    ".local/share/keyrings",
];

/// Entries a walk looks at per start, at most.
pub const WALK_LIMIT: usize = 20_000;

/// How deep a walk goes below its start.
const WALK_DEPTH: usize = 24;

/// Where masks are looked for, and what must stay visible.
pub struct Scope<'a> {
    /// The working directories (canonical)
    pub dirs: &'a [PathBuf],
    /// The current working directory
    pub cwd: &'a Path,
    /// The home directory, if known
    pub home: Option<&'a Path>,
    /// Paths a mask must not hide (working directories, writable roots)
    pub keep: &'a [PathBuf],
}

/// Every path to hide for `rules` (and [`SECRETS`] with `secrets`, and the paths `hidden`).
pub fn masks(
    rules: &[DenyRead],
    secrets: bool,
    hidden: &[PathBuf],
    scope: &Scope<'_>,
) -> Vec<Mask> {
    let mut found: Vec<PathBuf> = hidden.to_vec();
    if secrets {
        // Under `HOME` and under the account's own home (a changed `HOME` does not move the
        // account's credentials).
        let account = tool_core::path::account_home();
        let mut homes: Vec<&Path> = scope.home.into_iter().chain(account.as_deref()).collect();
        homes.dedup();
        for home in homes {
            found.extend(SECRETS.iter().map(|s| home.join(s)));
        }
    }
    let home = scope.home.unwrap_or(Path::new("/"));
    for rule in rules {
        let Ok(pattern) = PathPattern::parse(&rule.pattern, &rule.root) else {
            continue;
        };
        match start(&rule.pattern, &rule.root, scope.cwd, home) {
            Start::Literal(p) => found.push(p),
            Start::Under(base) => walk(&base, &pattern, scope, &mut found, false),
            Start::Anywhere => {
                for dir in scope.dirs {
                    walk(dir, &pattern, scope, &mut found, true);
                }
                if let Ok(entries) = std::fs::read_dir(home) {
                    for e in entries.flatten().take(WALK_LIMIT) {
                        let p = e.path();
                        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
                        if pattern.matches(&p, is_dir, scope.cwd, home, true) {
                            found.push(p);
                        }
                    }
                }
            }
        }
    }
    let mut out: Vec<Mask> = Vec::new();
    for p in found {
        // Resolve links: the mask goes where reads would land (most defaults do not exist:
        // one `lstat` says so, where resolving walks every component).
        if std::fs::symlink_metadata(&p).is_err() {
            continue;
        }
        let Ok(p) = p.canonicalize() else { continue };
        // Another sandbox's placeholder (a state directory that does not exist yet, in a home
        // inside a writable root) is empty, and goes when that sandbox ends.
        #[cfg(target_os = "linux")]
        if crate::placeholder::marked(&p) {
            continue;
        }
        narrow(&p, scope.keep, &mut out, 0);
    }
    out.sort();
    out.dedup();
    // A mask inside another adds nothing.
    let all = out.clone();
    out.retain(|m| {
        !all.iter()
            .any(|o| o != m && matches!(o, Mask::Dir(_)) && m.path().starts_with(o.path()))
    });
    out
}

/// The home directories of other users: the entries of `/home` and `/root`, except the
/// user's own home (`home`, and the account's home in the password database) and what
/// leads to them.
pub fn other_homes(home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let account = tool_core::path::account_home();
    let mine = |p: &Path| {
        [home, account.as_deref()]
            .into_iter()
            .flatten()
            .any(|h| h.starts_with(p) || p.starts_with(h))
    };
    if let Ok(entries) = std::fs::read_dir("/home") {
        for e in entries.flatten() {
            let p = e.path();
            if !mine(&p) {
                out.push(p);
            }
        }
    }
    let root = Path::new("/root");
    if !mine(root) {
        out.push(root.to_path_buf());
    }
    out
}

/// Where a pattern's matches are looked for.
enum Start {
    /// One path (no glob)
    Literal(PathBuf),
    /// Below this directory
    Under(PathBuf),
    /// Anywhere (a pattern without a slash)
    Anywhere,
}

fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// The literal part of a pattern, rooted as the rule grammar roots it.
fn start(pattern: &str, source_root: &Path, cwd: &Path, home: &Path) -> Start {
    let raw = pattern.trim();
    let (base, rest, mut anchored) = if let Some(rest) = raw.strip_prefix("//") {
        (PathBuf::from("/"), rest, true)
    } else if raw == "~" {
        (home.to_path_buf(), "", true)
    } else if let Some(rest) = raw.strip_prefix("~/") {
        (home.to_path_buf(), rest, true)
    } else if let Some(rest) = raw.strip_prefix('/') {
        (source_root.to_path_buf(), rest, true)
    } else if let Some(rest) = raw.strip_prefix("./") {
        (cwd.to_path_buf(), rest, true)
    } else {
        (cwd.to_path_buf(), raw, false)
    };
    let rest = rest.trim_end_matches('/');
    let rest = rest.strip_suffix("/**").unwrap_or(rest);
    if rest.contains('/') {
        anchored = true;
    }
    if !anchored {
        return if rest.is_empty() {
            Start::Literal(base)
        } else {
            Start::Anywhere
        };
    }
    let mut literal = base;
    for part in rest.split('/').filter(|p| !p.is_empty()) {
        if has_glob(part) {
            return Start::Under(literal);
        }
        literal.push(part);
    }
    Start::Literal(tool_core::path::normalize(&literal))
}

/// Walks below `base`, adding what `pattern` matches (a matching directory whole).
fn walk(
    base: &Path,
    pattern: &PathPattern,
    scope: &Scope<'_>,
    found: &mut Vec<PathBuf>,
    skip_vendored: bool,
) {
    let home = scope.home.unwrap_or(Path::new("/"));
    let mut budget = WALK_LIMIT;
    let mut stack: Vec<(PathBuf, usize)> = vec![(base.to_path_buf(), 0)];
    while let Some((dir, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            if budget == 0 {
                return;
            }
            budget -= 1;
            let Ok(t) = e.file_type() else { continue };
            let p = e.path();
            if pattern.matches(&p, t.is_dir(), scope.cwd, home, true) {
                found.push(p);
                continue;
            }
            let name = e.file_name();
            let vendored = skip_vendored && (name == ".git" || name == "node_modules");
            if t.is_dir() && !vendored && depth < WALK_DEPTH {
                stack.push((p, depth + 1));
            }
        }
    }
}

/// Adds the mask for `p`, or, when `p` holds a path that must stay visible, masks for its
/// entries beside that path.
fn narrow(p: &Path, keep: &[PathBuf], out: &mut Vec<Mask>, depth: usize) {
    if never_masked(p) || keep.iter().any(|k| k == p) {
        return;
    }
    let Ok(meta) = std::fs::symlink_metadata(p) else {
        return;
    };
    if !meta.is_dir() {
        out.push(Mask::File(p.to_path_buf()));
        return;
    }
    if !keep.iter().any(|k| k.starts_with(p)) {
        out.push(Mask::Dir(p.to_path_buf()));
        return;
    }
    if depth > 64 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(p) else {
        return;
    };
    for e in entries.flatten() {
        narrow(&e.path(), keep, out, depth + 1);
    }
}

/// Paths the sandbox mounts itself (`/proc`, `/dev`) or needs whole (`/`).
fn never_masked(p: &Path) -> bool {
    let mut parts = p.components();
    if parts.next() != Some(Component::RootDir) {
        return true;
    }
    match parts.next() {
        None => true,
        Some(Component::Normal(first)) => first == "proc" || first == "dev" || first == "sys",
        Some(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(pattern: &str, root: &Path) -> DenyRead {
        DenyRead {
            pattern: pattern.to_owned(),
            root: root.to_path_buf(),
        }
    }

    /// Builds a project with files and returns the masks for `patterns`, relative to it.
    fn check(patterns: &[&str], expected: &[&str]) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let project = root.join("p");
        for f in [
            "p/.env",
            "p/src/main.rs",
            "p/src/.env",
            "p/keys/a.key",
            "p/keys/b.pem",
            "p/node_modules/x/.env",
            "p/secrets/deep/x.txt",
            "home/.ssh/id_ed25519",
            "home/.netrc",
            "home/.env",
        ] {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap_or(&root)).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(&p, "x").unwrap_or_else(|e| panic!("{e}"));
        }
        let home = root.join("home");
        let rules: Vec<DenyRead> = patterns.iter().map(|p| rule(p, &project)).collect();
        let dirs = [project.clone()];
        let scope = Scope {
            dirs: &dirs,
            cwd: &project,
            home: Some(&home),
            keep: &dirs,
        };
        // (The account's own home, whose credential stores are hidden too, is not the
        // test's.)
        let got: Vec<String> = masks(&rules, patterns.is_empty(), &[], &scope)
            .iter()
            .filter(|m| m.path().starts_with(&root))
            .map(|m| {
                let rel = m.path().strip_prefix(&root).unwrap_or(m.path());
                match m {
                    Mask::File(_) => rel.display().to_string(),
                    Mask::Dir(_) => format!("{}/", rel.display()),
                }
            })
            .collect();
        assert_eq!(got, expected, "{patterns:?}");
    }

    #[test]
    fn rules_resolve_to_existing_paths() {
        // No rules: the secrets that exist.
        check(&[], &["home/.netrc", "home/.ssh/"]);
        check(&["./.env"], &["p/.env"]);
        check(&["/.env"], &["p/.env"]);
        check(&[".env"], &["home/.env", "p/.env", "p/src/.env"]);
        check(&["*.key"], &["p/keys/a.key"]);
        check(&["keys/*.pem"], &["p/keys/b.pem"]);
        check(&["/keys/**"], &["p/keys/"]);
        check(&["./secrets/"], &["p/secrets/"]);
        check(&["~/.ssh/**"], &["home/.ssh/"]);
        check(&["./missing.txt"], &[]);
        check(&["src/**/*.rs"], &["p/src/main.rs"]);
    }

    #[test]
    fn masks_never_hide_the_working_directory() {
        // Denying the whole home directory, with the project inside it: the project stays
        // visible, everything beside it is hidden.
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let home = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        let project = home.join("work/p");
        for f in ["work/p/a.txt", "work/other/b.txt", ".netrc"] {
            let p = home.join(f);
            std::fs::create_dir_all(p.parent().unwrap_or(&home)).unwrap_or_else(|e| panic!("{e}"));
            std::fs::write(&p, "x").unwrap_or_else(|e| panic!("{e}"));
        }
        let dirs = [project.clone()];
        let scope = Scope {
            dirs: &dirs,
            cwd: &project,
            home: Some(&home),
            keep: &dirs,
        };
        let got = masks(&[rule("~/**", &project)], false, &[], &scope);
        assert_eq!(
            got,
            vec![
                Mask::File(home.join(".netrc")),
                Mask::Dir(home.join("work/other")),
            ]
        );
        // The file system root, /proc and /dev are never masked.
        for p in ["/", "/proc/self", "/dev/null", "relative"] {
            assert!(never_masked(Path::new(p)), "{p}");
        }
        assert!(!never_masked(Path::new("/home/u/.ssh")));
    }
}
