//! Matchers for rule content: shell command patterns, gitignore-style path patterns with
//! their roots, and `domain:` patterns.

use std::path::{Component, Path, PathBuf};

use globset::{GlobBuilder, GlobMatcher};

use crate::ToolError;

/// A Bash-style command pattern (the content of a `Bash(…)` rule): exact, legacy `prefix:*`,
/// or wildcard.
///
/// It matches one simple command; splitting a compound command into subcommands is the
/// shell tool's job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandPattern {
    /// The whole command, exactly
    Exact(String),
    /// `prefix:*`: the prefix alone, or the prefix followed by a space and anything
    Prefix(String),
    /// `*` anywhere (matching any characters, newlines included); `\*` is a literal star
    /// and `\\` a backslash; one trailing ` *` is optional, so `git *` matches `git`
    Wildcard(Vec<WildcardPart>),
}

/// A piece of a wildcard pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WildcardPart {
    /// Literal text
    Literal(String),
    /// `*`
    Star,
}

impl CommandPattern {
    /// Reads the content of a `Bash(...)` rule.
    pub fn parse(content: &str) -> Self {
        let content = content.trim();
        if let Some(prefix) = content.strip_suffix(":*")
            && !prefix.contains('*')
        {
            return CommandPattern::Prefix(prefix.trim_end().to_owned());
        }
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut has_star = false;
        let mut chars = content.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if matches!(chars.peek(), Some('*') | Some('\\')) => {
                    if let Some(next) = chars.next() {
                        literal.push(next);
                    }
                }
                '*' => {
                    has_star = true;
                    if !literal.is_empty() {
                        parts.push(WildcardPart::Literal(std::mem::take(&mut literal)));
                    }
                    parts.push(WildcardPart::Star);
                }
                other => literal.push(other),
            }
        }
        if !literal.is_empty() {
            parts.push(WildcardPart::Literal(literal));
        }
        if has_star {
            CommandPattern::Wildcard(parts)
        } else {
            // Unescape `\*` and `\\` in an exact pattern too.
            let text = parts
                .into_iter()
                .map(|p| match p {
                    WildcardPart::Literal(s) => s,
                    WildcardPart::Star => String::new(),
                })
                .collect();
            CommandPattern::Exact(text)
        }
    }

    /// Whether `command` (one simple command, already trimmed of wrappers) matches.
    pub fn matches(&self, command: &str) -> bool {
        let command = command.trim();
        match self {
            CommandPattern::Exact(text) => command == text,
            CommandPattern::Prefix(prefix) => {
                command == prefix
                    || command
                        .strip_prefix(prefix.as_str())
                        .is_some_and(|rest| rest.starts_with(|c: char| c.is_whitespace()))
            }
            CommandPattern::Wildcard(parts) => {
                if wildcard_match(parts, command) {
                    return true;
                }
                // Beyond the reference (which only does this for a single wildcard): a trailing
                // ` *` is always optional, so `git * *` matches `git x` and `git *` matches `git`.
                if let [rest @ .., WildcardPart::Literal(lit), WildcardPart::Star] =
                    parts.as_slice()
                    && let Some(trimmed) = lit.strip_suffix(' ')
                {
                    let mut shorter = rest.to_vec();
                    if !trimmed.is_empty() {
                        shorter.push(WildcardPart::Literal(trimmed.to_owned()));
                    }
                    return wildcard_match(&shorter, command);
                }
                false
            }
        }
    }
}

/// Glob matching with `*` only: literals must appear in order, anchored at both ends.
fn wildcard_match(parts: &[WildcardPart], text: &str) -> bool {
    let mut rest = text;
    let mut anchored = true;
    let last_literal = parts
        .iter()
        .rposition(|p| matches!(p, WildcardPart::Literal(_)));
    for (i, part) in parts.iter().enumerate() {
        match part {
            WildcardPart::Star => anchored = false,
            WildcardPart::Literal(lit) => {
                let is_last = Some(i) == last_literal && i == parts.len() - 1;
                if anchored {
                    match rest.strip_prefix(lit.as_str()) {
                        Some(r) => rest = r,
                        None => return false,
                    }
                    if is_last {
                        return rest.is_empty();
                    }
                } else if is_last {
                    return rest.ends_with(lit.as_str());
                } else {
                    match rest.find(lit.as_str()) {
                        Some(pos) => rest = &rest[pos + lit.len()..],
                        None => return false,
                    }
                }
                anchored = true;
            }
        }
    }
    !anchored || rest.is_empty()
}

/// Where a path pattern is rooted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathRoot {
    /// `//abs/path`: the filesystem root
    Filesystem,
    /// `~/x`: the home directory
    Home,
    /// `/x`: the rule source's root (the project for settings files, the original working
    /// directory for command-line rules)
    Source(PathBuf),
    /// `./x` or `x`: the current working directory
    Cwd,
}

/// A gitignore-style path pattern from a `Read(...)` or `Edit(...)` rule.
#[derive(Debug, Clone)]
pub struct PathPattern {
    raw: String,
    root: PathRoot,
    /// Matched against the path relative to the root.
    glob: GlobMatcher,
    /// For patterns without a slash: matched against a single file or directory name.
    name_glob: Option<GlobMatcher>,
    /// `dir/**` also matches `dir` itself.
    dir_itself: Option<String>,
    dir_only: bool,
}

impl PathPattern {
    /// Compiles the content of a path rule; `source_root` is the root of `/x` patterns.
    pub fn parse(content: &str, source_root: &Path) -> Result<Self, ToolError> {
        let raw = content.trim().to_owned();
        let (root, rest, mut anchored) = if let Some(rest) = raw.strip_prefix("//") {
            (PathRoot::Filesystem, rest.to_owned(), true)
        } else if raw == "~" {
            (PathRoot::Home, "**".to_owned(), true)
        } else if let Some(rest) = raw.strip_prefix("~/") {
            (PathRoot::Home, rest.to_owned(), true)
        } else if let Some(rest) = raw.strip_prefix('/') {
            (
                PathRoot::Source(source_root.to_path_buf()),
                rest.to_owned(),
                true,
            )
        } else if let Some(rest) = raw.strip_prefix("./") {
            (PathRoot::Cwd, rest.to_owned(), true)
        } else {
            (PathRoot::Cwd, raw.clone(), false)
        };
        let dir_only = rest.ends_with('/') && rest.len() > 1;
        let mut body = rest.trim_end_matches('/').to_owned();
        if body.is_empty() {
            body = "**".to_owned();
        }
        if body.contains('/') {
            anchored = true;
        }
        let dir_itself = body.strip_suffix("/**").map(str::to_owned);
        let full = if anchored {
            body.clone()
        } else {
            format!("**/{body}")
        };
        let compile = |g: &str| {
            GlobBuilder::new(g)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map(|g| g.compile_matcher())
                .map_err(|e| ToolError::InvalidRule {
                    rule: raw.clone(),
                    message: e.to_string(),
                })
        };
        let glob = compile(&full)?;
        let name_glob = if anchored {
            None
        } else {
            Some(compile(&body)?)
        };
        let dir_itself = match dir_itself {
            Some(d) if !d.contains(['*', '?', '[', '{']) => Some(d),
            _ => None,
        };
        Ok(PathPattern {
            raw,
            root,
            glob,
            name_glob,
            dir_itself,
            dir_only,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.raw
    }

    /// The directory the pattern is rooted at.
    pub fn root_dir(&self, cwd: &Path, home: &Path) -> PathBuf {
        match &self.root {
            PathRoot::Filesystem => PathBuf::from("/"),
            PathRoot::Home => home.to_path_buf(),
            PathRoot::Source(dir) => dir.clone(),
            PathRoot::Cwd => cwd.to_path_buf(),
        }
    }

    /// Whether `path` (absolute and normalised) matches.
    ///
    /// As in gitignore, a pattern that matches a directory matches everything beneath it.
    /// With `anywhere`, an unrooted pattern without a slash (such as `.env` or `*.key`) also
    /// matches a file of that name outside its root: the reference never applies such rules
    /// outside the working directory, so a deny of `Read(.env)` did not protect `~/.env`. We
    /// use `anywhere` for deny and ask rules only, never to widen an allow.
    pub fn matches(
        &self,
        path: &Path,
        is_dir: bool,
        cwd: &Path,
        home: &Path,
        anywhere: bool,
    ) -> bool {
        let root = self.root_dir(cwd, home);
        if let Ok(rel) = path.strip_prefix(&root)
            && self.matches_relative(rel, is_dir)
        {
            return true;
        }
        if anywhere && let Some(name_glob) = &self.name_glob {
            let names: Vec<&std::ffi::OsStr> = path
                .components()
                .filter_map(|c| match c {
                    Component::Normal(n) => Some(n),
                    _ => None,
                })
                .collect();
            let last = names.len().saturating_sub(1);
            return names.iter().enumerate().any(|(i, name)| {
                let this_is_dir = i < last || is_dir;
                (!self.dir_only || this_is_dir) && name_glob.is_match(Path::new(name))
            });
        }
        false
    }

    /// Whether the pattern may match something beneath `dir` (absolute, normalised): a
    /// pattern without a slash (`.env`, `*.key`) may match anywhere; an anchored one when its
    /// literal leading part and `dir` lie one within the other. Used to decide whether a
    /// recursive read of `dir` can reach a denied file without walking it.
    pub fn may_match_beneath(&self, dir: &Path, cwd: &Path, home: &Path) -> bool {
        match self.literal_prefix(cwd, home) {
            None => true,
            Some(literal) => literal.starts_with(dir) || dir.starts_with(&literal),
        }
    }

    /// The literal leading part of an anchored pattern, as a path: its root joined with the
    /// components before the first wildcard (`~/.config/git/**` gives `<home>/.config/git`).
    /// `None` for a pattern without a slash (`.env`, `*.key`), which may match anywhere.
    pub fn literal_prefix(&self, cwd: &Path, home: &Path) -> Option<PathBuf> {
        if self.name_glob.is_some() {
            return None;
        }
        let body = match &self.root {
            PathRoot::Filesystem => self.raw.trim_start_matches('/'),
            PathRoot::Home => self.raw.trim_start_matches('~').trim_start_matches('/'),
            PathRoot::Source(_) => self.raw.trim_start_matches('/'),
            PathRoot::Cwd => self.raw.trim_start_matches("./"),
        };
        let mut literal = self.root_dir(cwd, home);
        for part in body.split('/') {
            if part.is_empty() {
                continue;
            }
            if part.contains(['*', '?', '[', '{', '\\']) {
                break;
            }
            literal.push(part);
        }
        Some(crate::path::normalize(&literal))
    }

    fn matches_relative(&self, rel: &Path, is_dir: bool) -> bool {
        if let Some(dir) = &self.dir_itself
            && rel == Path::new(dir)
        {
            return true;
        }
        // The path itself, then each ancestor (ancestors are directories).
        let mut current = Some(rel);
        let mut first = true;
        while let Some(p) = current {
            if p.as_os_str().is_empty() {
                break;
            }
            let this_is_dir = !first || is_dir;
            if (!self.dir_only || this_is_dir) && self.glob.is_match(p) {
                return true;
            }
            first = false;
            current = p.parent();
        }
        false
    }
}

/// A `domain:host` pattern of a WebFetch rule: the exact host, or with a leading `*.` any
/// subdomain (not the apex).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainPattern {
    host: String,
}

impl DomainPattern {
    /// Reads `domain:host`; `None` when the content is not a domain pattern.
    pub fn parse(content: &str) -> Option<Self> {
        let host = content
            .trim()
            .strip_prefix("domain:")?
            .trim()
            .to_ascii_lowercase();
        (!host.is_empty()).then_some(DomainPattern { host })
    }

    /// Whether `host` matches (case-insensitively, ignoring a trailing dot).
    pub fn matches(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        match self.host.strip_prefix("*.") {
            Some(suffix) => host.len() > suffix.len() + 1 && host.ends_with(&format!(".{suffix}")),
            None => host == self.host,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check_cmd(pattern: &str, command: &str, expected: bool) {
        assert_eq!(
            CommandPattern::parse(pattern).matches(command),
            expected,
            "{pattern:?} vs {command:?}"
        );
    }

    #[test]
    fn exact() {
        check_cmd("npm test", "npm test", true);
        check_cmd("npm test", " npm test ", true);
        check_cmd("npm test", "npm test --watch", false);
        check_cmd("npm test", "npm", false);
    }

    #[test]
    fn legacy_prefix() {
        check_cmd("npm run test:*", "npm run test", true);
        check_cmd("npm run test:*", "npm run test --watch", true);
        check_cmd("npm run test:*", "npm run testing", false);
        check_cmd("git:*", "git status", true);
        check_cmd("git:*", "gitk", false);
    }

    #[test]
    fn wildcard() {
        check_cmd("git *", "git status", true);
        check_cmd("git *", "git", true);
        check_cmd("git *", "gitk", false);
        check_cmd("git diff *", "git diff HEAD~1", true);
        check_cmd("* --version", "node --version", true);
        check_cmd("* --version", "node --help", false);
        check_cmd("make docker-*", "make docker-build", true);
        check_cmd("make docker-*", "make test", false);
        check_cmd("echo *", "echo a\nb", true);
        check_cmd("a*b*c", "aXbYc", true);
        check_cmd("a*b*c", "aXcYb", false);
        check_cmd("ls \\*", "ls *", true);
        check_cmd("ls \\*", "ls x", false);
        check_cmd("git * *", "git x", true);
        check_cmd("aws *", "aws s3 ls", true);
    }

    #[track_caller]
    fn check_path(pattern: &str, path: &str, expected: bool) {
        check_path_with(pattern, path, false, false, expected);
    }

    #[track_caller]
    fn check_path_with(pattern: &str, path: &str, is_dir: bool, anywhere: bool, expected: bool) {
        let p = PathPattern::parse(pattern, Path::new("/proj"))
            .unwrap_or_else(|e| panic!("{pattern}: {e:?}"));
        assert_eq!(
            p.matches(
                Path::new(path),
                is_dir,
                Path::new("/proj/sub"),
                Path::new("/home/u"),
                anywhere
            ),
            expected,
            "{pattern:?} vs {path:?}"
        );
    }

    #[test]
    fn path_roots() {
        check_path("//etc/**", "/etc/passwd", true);
        check_path("//etc/**", "/etc", true);
        check_path("//etc/**", "/usr/etc/x", false);
        check_path("~/secrets/**", "/home/u/secrets/a/b", true);
        check_path("~/secrets/**", "/proj/secrets/a", false);
        check_path("~", "/home/u/x", true);
        check_path("/src/**", "/proj/src/main.rs", true);
        check_path("/src/**", "/proj/sub/src/main.rs", false);
        check_path("./.env", "/proj/sub/.env", true);
        check_path("./.env", "/proj/sub/deeper/.env", false);
        check_path(".env", "/proj/sub/deeper/.env", true);
        check_path("*.key", "/proj/sub/a/b.key", true);
        check_path("docs/*.md", "/proj/sub/docs/a.md", true);
        check_path("docs/*.md", "/proj/sub/x/docs/a.md", false);
        check_path("docs/*.md", "/proj/sub/docs/deep/a.md", false);
    }

    #[test]
    fn gitignore_semantics() {
        // A matching directory covers its contents.
        check_path("node_modules", "/proj/sub/a/node_modules/x/y.js", true);
        check_path("build/", "/proj/sub/build/out.o", true);
        check_path_with("build/", "/proj/sub/build", false, false, false);
        check_path_with("build/", "/proj/sub/build", true, false, true);
        check_path("//a/**/z", "/a/b/c/z", true);
        check_path("//a/*/z", "/a/b/c/z", false);
    }

    #[test]
    fn unrooted_deny_outside_cwd() {
        check_path(".env", "/home/u/.env", false);
        check_path_with(".env", "/home/u/.env", false, true, true);
        check_path_with("*.pem", "/etc/ssl/x.pem", false, true, true);
        check_path_with("docs/*.md", "/elsewhere/docs/a.md", false, true, false);
    }

    #[test]
    fn domains() {
        let d = DomainPattern::parse("domain:docs.rs").unwrap_or_else(|| panic!("no parse"));
        assert!(d.matches("docs.rs"));
        assert!(d.matches("DOCS.rs."));
        assert!(!d.matches("evil-docs.rs"));
        assert!(!d.matches("x.docs.rs"));
        let w = DomainPattern::parse("domain:*.example.com").unwrap_or_else(|| panic!("no parse"));
        assert!(w.matches("a.example.com"));
        assert!(!w.matches("example.com"));
        assert!(DomainPattern::parse("docs.rs").is_none());
    }
}
