//! The paths a command line names, resolved as bash will: relative to the working directory
//! and to any `cd` earlier on the line, `~` expanded, globs expanded against the file system
//! (bounded). The permission check holds them to the Read and Edit rules and the protected
//! paths, the same way the file tools check theirs.

use std::path::{Path, PathBuf};

use regex::Regex;
use tool_core::path;

use shell_analysis::Word;

/// At most this many paths come out of one glob; more is treated as unknown.
const MAX_GLOB_PATHS: usize = 1_000;
/// At most this many directory entries are read to expand one glob.
const MAX_GLOB_ENTRIES: usize = 20_000;

/// What a word names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolved {
    /// These paths (one per possible base directory, or the matches of a glob)
    Paths(Vec<PathBuf>),
    /// Only known when the command runs (a variable, a substitution, a `cd` to one)
    Unknown,
}

/// The directories relative paths may be resolved against: the working directory and every
/// `cd` target on the line (`None` when a `cd` goes somewhere only known at run time).
#[derive(Debug, Clone)]
pub struct Bases(pub Option<Vec<PathBuf>>);

impl Bases {
    /// The working directory, and the known targets of `cd`s on the line.
    pub fn new(cwd: &Path, cd_targets: &[Word]) -> Self {
        let mut bases = vec![cwd.to_path_buf()];
        for t in cd_targets {
            match resolve_one(t, &bases) {
                Resolved::Paths(ps) => {
                    for p in ps {
                        if !bases.contains(&p) {
                            bases.push(p);
                        }
                    }
                }
                Resolved::Unknown => return Bases(None),
            }
        }
        Bases(Some(bases))
    }
}

/// Resolves a word against the bases.
pub fn resolve(word: &Word, bases: &Bases) -> Resolved {
    match &bases.0 {
        Some(b) => resolve_one(word, b),
        None if word.known && (word.text.starts_with('/') || word.text.starts_with('~')) => {
            resolve_one(word, &[PathBuf::from("/")])
        }
        None => Resolved::Unknown,
    }
}

fn resolve_one(word: &Word, bases: &[PathBuf]) -> Resolved {
    if !word.known {
        return Resolved::Unknown;
    }
    let text = word.text.as_str();
    let text = if text == "~" || text.starts_with("~/") {
        match path::home_dir() {
            Some(h) => format!("{}{}", h.display(), &text[1..]),
            None => return Resolved::Unknown,
        }
    } else if text.starts_with('~') {
        // `~user`.
        return Resolved::Unknown;
    } else {
        text.to_owned()
    };
    let absolute = text.starts_with('/');
    let bases: Vec<PathBuf> = if absolute {
        vec![PathBuf::from("/")]
    } else {
        bases.to_vec()
    };
    let mut out = Vec::new();
    for base in &bases {
        if word.glob {
            match expand_glob(base, &text) {
                Some(matches) if !matches.is_empty() => out.extend(matches),
                // No match: bash passes the pattern as it is.
                Some(_) => out.push(path::resolve(base, &text)),
                None => return Resolved::Unknown,
            }
        } else {
            out.push(path::resolve(base, &text));
        }
    }
    out.dedup();
    Resolved::Paths(out)
}

/// The paths a glob matches under `base`, as bash expands it by default (no `globstar`, no
/// `dotglob`: `*` does not match a leading dot). `None` when there are too many.
fn expand_glob(base: &Path, pattern: &str) -> Option<Vec<PathBuf>> {
    let start = if pattern.starts_with('/') {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    };
    let mut current = vec![start];
    let mut entries_read = 0usize;
    for component in pattern.split('/').filter(|c| !c.is_empty()) {
        let mut next = Vec::new();
        if !component.contains(['*', '?', '[']) {
            for c in current {
                let p = c.join(component);
                if std::fs::symlink_metadata(&p).is_ok() {
                    next.push(p);
                }
            }
        } else {
            let re = glob_regex(component)?;
            for dir in current {
                let Ok(entries) = std::fs::read_dir(&dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    entries_read += 1;
                    if entries_read > MAX_GLOB_ENTRIES {
                        return None;
                    }
                    let name = entry.file_name();
                    let Some(name) = name.to_str() else {
                        // A name that is not UTF-8 cannot be matched against the rules by
                        // its text: treat the glob as unknown.
                        return None;
                    };
                    if name.starts_with('.') && !component.starts_with('.') {
                        continue;
                    }
                    if re.is_match(name) {
                        next.push(dir.join(name));
                        if next.len() > MAX_GLOB_PATHS {
                            return None;
                        }
                    }
                }
            }
        }
        current = next;
    }
    Some(current.into_iter().map(|p| path::normalize(&p)).collect())
}

/// A regular expression for one glob component (`*`, `?`, `[…]`, `[!…]`).
fn glob_regex(component: &str) -> Option<Regex> {
    let mut re = String::from("^");
    let mut chars = component.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            '[' => {
                let mut class = String::new();
                let mut closed = false;
                if matches!(chars.peek(), Some('!') | Some('^')) {
                    chars.next();
                    class.push('^');
                }
                for d in chars.by_ref() {
                    if d == ']' && !(class.is_empty() || class == "^") {
                        closed = true;
                        break;
                    }
                    if matches!(d, '\\' | '[' | '&' | '~') || (d == '^' && !class.is_empty()) {
                        class.push('\\');
                    }
                    class.push(d);
                }
                if closed {
                    re.push('[');
                    re.push_str(&class);
                    re.push(']');
                } else {
                    re.push_str(&regex::escape("["));
                    re.push_str(&regex::escape(&class));
                }
            }
            '\\' => {
                if let Some(d) = chars.next() {
                    re.push_str(&regex::escape(&d.to_string()));
                }
            }
            other => re.push_str(&regex::escape(&other.to_string())),
        }
    }
    re.push('$');
    Regex::new(&re).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(text: &str, glob: bool) -> Word {
        Word {
            text: text.to_owned(),
            literal: !glob,
            known: true,
            glob,
        }
    }

    #[test]
    fn resolves_relative_to_every_cd() {
        let bases = Bases::new(Path::new("/w"), &[word("/etc", false)]);
        assert_eq!(
            resolve(&word("passwd", false), &bases),
            Resolved::Paths(vec![
                PathBuf::from("/w/passwd"),
                PathBuf::from("/etc/passwd")
            ])
        );
        let unknown = Bases::new(
            Path::new("/w"),
            &[Word {
                known: false,
                ..word("$D", false)
            }],
        );
        assert_eq!(resolve(&word("x", false), &unknown), Resolved::Unknown);
        assert_eq!(
            resolve(&word("/abs", false), &unknown),
            Resolved::Paths(vec![PathBuf::from("/abs")])
        );
    }

    #[test]
    fn expands_globs_like_bash() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path();
        for f in [".env", "a.rs", "b.rs", "c.txt"] {
            std::fs::write(root.join(f), "")?;
        }
        std::fs::create_dir(root.join("sub"))?;
        std::fs::write(root.join("sub/.env"), "")?;
        let bases = Bases::new(root, &[]);
        let paths = |p: &str| match resolve(&word(p, true), &bases) {
            Resolved::Paths(mut v) => {
                v.sort();
                v.into_iter()
                    .map(|p| {
                        p.strip_prefix(root)
                            .map(|r| r.display().to_string())
                            .unwrap_or_default()
                    })
                    .collect::<Vec<_>>()
            }
            Resolved::Unknown => vec!["?".to_owned()],
        };
        assert_eq!(paths("*.rs"), ["a.rs", "b.rs"]);
        assert_eq!(paths("*"), ["a.rs", "b.rs", "c.txt", "sub"]);
        assert_eq!(paths(".en*"), [".env"]);
        assert_eq!(paths("*/.e?v"), ["sub/.env"]);
        assert_eq!(paths("[ab].rs"), ["a.rs", "b.rs"]);
        assert_eq!(paths("[!a].rs"), ["b.rs"]);
        assert_eq!(paths("nomatch*"), ["nomatch*"]);
        Ok(())
    }
}
