//! Path policy: resolve what the model sends relative to the working directory, canonicalise
//! symlinks, decide containment, refuse special files, and recognise protected paths.

use std::ffi::OsStr;
use std::fs::Metadata;
use std::os::unix::fs::FileTypeExt;
use std::path::{Component, Path, PathBuf};

use crate::ToolError;

/// The user's home directory, from `HOME`.
pub fn home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// Removes `.` and resolves `..` lexically (no file-system access). `..` at the root stays at
/// the root.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() && !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Resolves a path from the model: `~` and `~/x` expand to the home directory, relative
/// paths are joined to `cwd`, and the result is normalised lexically.
pub fn resolve(cwd: &Path, input: &str) -> PathBuf {
    let expanded = if input == "~" {
        home_dir().unwrap_or_else(|| PathBuf::from("/"))
    } else if let Some(rest) = input.strip_prefix("~/") {
        home_dir().unwrap_or_else(|| PathBuf::from("/")).join(rest)
    } else {
        PathBuf::from(input)
    };
    normalize(&cwd.join(expanded))
}

/// Canonicalises the deepest existing ancestor of `path` (resolving every symlink on the
/// way) and appends the rest, so paths that do not exist yet resolve too.
pub fn canonicalize_lenient(path: &Path) -> PathBuf {
    let path = normalize(path);
    let mut existing = path.as_path();
    let mut rest: Vec<&OsStr> = Vec::new();
    loop {
        if let Ok(canonical) = existing.canonicalize() {
            let mut out = canonical;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return normalize(&out);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return path,
        }
    }
}

/// Whether `path` is `root` or beneath it (both taken as they are: canonicalise first).
pub fn is_within(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

/// Whether the canonical form of `path` lies within the canonical form of any of `roots`.
pub fn within_any(path: &Path, roots: &[PathBuf]) -> bool {
    let canonical = canonicalize_lenient(path);
    roots
        .iter()
        .any(|root| is_within(&canonical, &canonicalize_lenient(root)))
}

/// Device files that block or never end, refused by name before any `open`.
const BLOCKING_DEVICES: &[&str] = &[
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/dev/full",
    "/dev/stdin",
    "/dev/tty",
    "/dev/console",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/fd/0",
    "/dev/fd/1",
    "/dev/fd/2",
];

/// Refuses device files, FIFOs and sockets without opening them (an `open` of a FIFO blocks).
///
/// A missing path passes: the caller reports "does not exist" in its own words.
pub fn check_regular_or_dir(path: &Path) -> Result<Option<Metadata>, ToolError> {
    let text = path.to_string_lossy();
    let is_proc_std_fd = text.starts_with("/proc/")
        && ["/fd/0", "/fd/1", "/fd/2"]
            .iter()
            .any(|s| text.ends_with(s));
    if BLOCKING_DEVICES.contains(&text.as_ref()) || is_proc_std_fd {
        return Err(ToolError::respond(format!(
            "Cannot read '{text}': this device file would block or produce infinite output."
        )));
    }
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ToolError::io(path, e)),
    };
    let ft = meta.file_type();
    let kind = if ft.is_fifo() {
        Some("a FIFO (named pipe)")
    } else if ft.is_char_device() || ft.is_block_device() {
        Some("a device file")
    } else if ft.is_socket() {
        Some("a socket")
    } else {
        None
    };
    match kind {
        Some(kind) => Err(ToolError::respond(format!(
            "Cannot use '{text}': it is {kind}, not a regular file; reading or writing it could block."
        ))),
        None => Ok(Some(meta)),
    }
}

/// File names that configure a shell, git or an agent, protected even in bypass mode.
const PROTECTED_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zprofile",
    ".zshenv",
    ".zlogin",
    ".gitconfig",
    ".gitmodules",
    ".ripgreprc",
    ".mcp.json",
    ".claude.json",
];

/// Directories whose contents are protected (compared case-insensitively).
const PROTECTED_DIRS: &[&str] = &[".git", ".agent-tools", ".claude", ".vscode", ".idea"];

/// Whether writing `path` needs explicit approval whatever the mode: version-control
/// internals, agent and editor settings, shell start-up files. Compared case-insensitively,
/// so `.GIT/hooks/x` is caught on case-insensitive file systems. Worktrees made by
/// EnterWorktree (`.agent-tools/worktrees/`, `.claude/worktrees/`) are exempt.
pub fn is_protected(path: &Path) -> bool {
    let names: Vec<String> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().to_lowercase()),
            _ => None,
        })
        .collect();
    for (i, name) in names.iter().enumerate() {
        if PROTECTED_DIRS.contains(&name.as_str()) {
            let worktree = (name == ".agent-tools" || name == ".claude")
                && names.get(i + 1).is_some_and(|n| n == "worktrees")
                && names.len() > i + 2;
            if !worktree {
                return true;
            }
        }
    }
    names
        .last()
        .is_some_and(|n| PROTECTED_FILES.contains(&n.as_str()))
}

/// `path` relative to `cwd` when it lies beneath it, otherwise absolute; for messages.
pub fn display_path(path: &Path, cwd: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_and_resolve() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/../..")), PathBuf::from("/"));
        assert_eq!(resolve(Path::new("/w"), "x/../y"), PathBuf::from("/w/y"));
        assert_eq!(resolve(Path::new("/w"), "/abs"), PathBuf::from("/abs"));
        assert_eq!(
            resolve(Path::new("/w"), "../../etc/passwd"),
            PathBuf::from("/etc/passwd")
        );
    }

    #[test]
    fn lenient_canonicalisation_follows_symlinks() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().canonicalize()?;
        std::os::unix::fs::symlink("/etc", root.join("link"))?;
        assert_eq!(
            canonicalize_lenient(&root.join("link/passwd")),
            PathBuf::from("/etc/passwd")
        );
        assert_eq!(
            canonicalize_lenient(&root.join("new/a/../b")),
            root.join("new/b")
        );
        assert!(!within_any(
            &root.join("link/passwd"),
            std::slice::from_ref(&root)
        ));
        assert!(within_any(&root.join("new/x"), std::slice::from_ref(&root)));
        Ok(())
    }

    #[test]
    fn special_files_refused() -> std::io::Result<()> {
        for dev in ["/dev/zero", "/dev/urandom", "/dev/stdin", "/proc/self/fd/0"] {
            assert!(check_regular_or_dir(Path::new(dev)).is_err(), "{dev}");
        }
        assert!(check_regular_or_dir(Path::new("/dev/null")).is_err());
        let dir = tempfile::tempdir()?;
        let fifo = dir.path().join("pipe");
        let status = std::process::Command::new("mkfifo").arg(&fifo).status()?;
        assert!(status.success());
        assert!(check_regular_or_dir(&fifo).is_err());
        assert!(check_regular_or_dir(&dir.path().join("missing")).is_ok_and(|m| m.is_none()));
        assert!(check_regular_or_dir(dir.path()).is_ok_and(|m| m.is_some()));
        Ok(())
    }

    #[test]
    fn protected_paths() {
        for p in [
            "/p/.git/config",
            "/p/.GIT/hooks/pre-commit",
            "/home/u/.bashrc",
            "/p/.agent-tools/settings.json",
            "/p/.claude/settings.json",
            "/p/.vscode/settings.json",
            "/p/.mcp.json",
            "/home/u/.gitconfig",
        ] {
            assert!(is_protected(Path::new(p)), "{p}");
        }
        for p in [
            "/p/src/main.rs",
            "/p/.agent-tools/worktrees/w1/src/a.rs",
            "/p/git/config",
            "/p/.github/ci.yml",
        ] {
            assert!(!is_protected(Path::new(p)), "{p}");
        }
    }
}
