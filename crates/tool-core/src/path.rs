//! Path policy: resolve what the model sends relative to the working directory, canonicalise
//! symlinks, decide containment, refuse special files, and recognise protected paths.

use std::fs::Metadata;
use std::os::unix::fs::FileTypeExt;
use std::path::{Component, Path, PathBuf};

use crate::ToolError;

/// The user's home directory: `HOME` when it is set and not empty, else the account's home
/// directory from the password database (see [`account_home`]). Never a shared fallback.
pub fn home_dir() -> Option<PathBuf> {
    match std::env::var_os("HOME") {
        Some(home) if !home.is_empty() => Some(PathBuf::from(home)),
        _ => account_home(),
    }
}

/// The home directory of the account this process runs as, from the password database
/// (`getpwuid_r`, through the standard library while `HOME` is unset; `/etc/passwd` read
/// directly when `HOME` is set but empty). `None` when the account has none.
pub fn account_home() -> Option<PathBuf> {
    let home = if std::env::var_os("HOME").is_none() {
        std::env::home_dir()
    } else {
        passwd_home(&std::fs::read_to_string("/etc/passwd").ok()?, current_uid())
    };
    home.filter(|h| h.is_absolute())
}

/// The real user id of this process.
pub fn current_uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// The home field of the entry of `uid` in `passwd` (the format of `/etc/passwd`).
fn passwd_home(passwd: &str, uid: u32) -> Option<PathBuf> {
    passwd.lines().find_map(|line| {
        let fields: Vec<&str> = line.split(':').collect();
        match fields.as_slice() {
            [_, _, id, _, _, home, ..] if id.parse() == Ok(uid) && !home.is_empty() => {
                Some(PathBuf::from(home))
            }
            _ => None,
        }
    })
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

/// The longest path a tool takes in a path field, in characters: the kernel's `PATH_MAX`
/// (a longer path cannot be opened in one call). With at most one component per two
/// characters, it bounds a path's components too, to 2,048.
pub const MAX_PATH_CHARS: usize = 4096;

/// Paths with at most this many components are resolved by `realpath` first (cheap for
/// short paths); deeper ones, and paths that do not exist whole, by one walk.
const REALPATH_COMPONENTS: usize = 64;

/// Canonicalises the deepest existing ancestor of `path` (resolving every symlink on the
/// way) and appends the rest, so paths that do not exist yet resolve too.
///
/// A symbolic link counts as existing when its target resolves whole; a dangling link is a
/// name like any other. The cost is linear in the number of components: one walk of
/// directory handles, one lookup per component (plus the components of the links
/// followed, at most 40 links as the kernel allows), never a lookup of every prefix.
pub fn canonicalize_lenient(path: &Path) -> PathBuf {
    let path = normalize(path);
    if path.components().count() <= REALPATH_COMPONENTS
        && let Ok(canonical) = path.canonicalize()
    {
        return canonical;
    }
    #[cfg(target_os = "linux")]
    {
        walk::resolve(&path)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let mut existing = path.as_path();
        let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
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
}

/// The walk behind [`canonicalize_lenient`]: directory handles opened one component at a
/// time (`O_PATH`, so only search permission is needed, as for `realpath`).
#[cfg(target_os = "linux")]
mod walk {
    use std::collections::VecDeque;
    use std::ffi::{OsStr, OsString};
    use std::os::fd::OwnedFd;
    use std::os::unix::ffi::OsStrExt;
    use std::path::{Component, Path, PathBuf};

    use rustix::fs::{AtFlags, CWD, FileType, Mode, OFlags};

    /// The kernel's limit on links followed in one lookup.
    const MAX_LINKS: u32 = 40;

    /// Where a walk stands: a handle on a directory and its canonical path, or a
    /// non-directory at the end.
    struct At {
        dir: OwnedFd,
        path: PathBuf,
        /// Set once a component named a file that is not a directory
        leaf: bool,
    }

    fn open_dir(dir: &OwnedFd, name: &OsStr) -> Option<OwnedFd> {
        rustix::fs::openat(
            dir,
            name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()
    }

    fn open_path(path: &Path) -> Option<OwnedFd> {
        rustix::fs::openat(
            CWD,
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .ok()
    }

    /// Follows `components` from `at`; `Err` gives the position reached and the
    /// components not resolved (the first of which does not exist, or is a link whose
    /// target does not resolve whole).
    fn follow(
        mut at: At,
        mut components: VecDeque<OsString>,
        links: &mut u32,
    ) -> Result<At, (At, VecDeque<OsString>)> {
        while let Some(name) = components.pop_front() {
            if name == "." || name.is_empty() {
                continue;
            }
            if at.leaf {
                // A component after a file: nothing beneath a file exists.
                components.push_front(name);
                return Err((at, components));
            }
            if name == ".." {
                let Some(parent) = open_dir(&at.dir, OsStr::new("..")) else {
                    components.push_front(name);
                    return Err((at, components));
                };
                at.dir = parent;
                at.path.pop();
                continue;
            }
            let Ok(stat) = rustix::fs::statat(&at.dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
            else {
                components.push_front(name);
                return Err((at, components));
            };
            match FileType::from_raw_mode(stat.st_mode) {
                FileType::Directory => match open_dir(&at.dir, &name) {
                    Some(dir) => {
                        at.dir = dir;
                        at.path.push(&name);
                    }
                    None => {
                        components.push_front(name);
                        return Err((at, components));
                    }
                },
                FileType::Symlink => {
                    let target = rustix::fs::readlinkat(&at.dir, name.as_os_str(), Vec::new())
                        .ok()
                        .map(|t| PathBuf::from(OsStr::from_bytes(t.as_bytes())));
                    *links += 1;
                    let Some(target) = target.filter(|_| *links <= MAX_LINKS) else {
                        components.push_front(name);
                        return Err((at, components));
                    };
                    // The link exists only if its target resolves whole.
                    let start = if target.is_absolute() {
                        open_path(Path::new("/")).map(|dir| At {
                            dir,
                            path: PathBuf::from("/"),
                            leaf: false,
                        })
                    } else {
                        open_dir(&at.dir, OsStr::new(".")).map(|dir| At {
                            dir,
                            path: at.path.clone(),
                            leaf: false,
                        })
                    };
                    let resolved =
                        start.and_then(|start| follow(start, parts(&target), links).ok());
                    match resolved {
                        Some(next) => at = next,
                        None => {
                            components.push_front(name);
                            return Err((at, components));
                        }
                    }
                }
                _ => {
                    at.path.push(&name);
                    at.leaf = true;
                }
            }
        }
        Ok(at)
    }

    /// The components of `path` after its root, as names.
    fn parts(path: &Path) -> VecDeque<OsString> {
        path.components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_os_string()),
                Component::ParentDir => Some(OsString::from("..")),
                _ => None,
            })
            .collect()
    }

    /// See [`super::canonicalize_lenient`]; `path` is already normalised.
    pub(super) fn resolve(path: &Path) -> PathBuf {
        let start = if path.is_absolute() {
            open_path(Path::new("/")).map(|dir| (dir, PathBuf::from("/")))
        } else {
            std::env::current_dir()
                .ok()
                .and_then(|cwd| open_path(Path::new(".")).map(|dir| (dir, cwd)))
        };
        let Some((dir, root)) = start else {
            return path.to_path_buf();
        };
        let at = At {
            dir,
            path: root,
            leaf: false,
        };
        let mut links = 0;
        match follow(at, parts(path), &mut links) {
            Ok(at) => at.path,
            // A relative path none of whose components exists stays as it was.
            Err((_, rest)) if !path.is_absolute() && rest.len() == parts(path).len() => {
                path.to_path_buf()
            }
            Err((at, rest)) => {
                let mut out = at.path;
                for name in rest {
                    out.push(name);
                }
                super::normalize(&out)
            }
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

/// Whether a protected name is a file or a directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A regular file
    File,
    /// A directory
    Dir,
}

/// Where a protected name configures something when it is read: the directory it must be
/// protected in even before it exists (inside the sandbox a missing name gets a placeholder
/// there; elsewhere an existing one is protected wherever it is).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadFrom {
    /// The top of a project (a working directory): agent settings, `.mcp.json`, git
    Project,
    /// The home directory: shell start-up files, git's user configuration
    Home,
    /// Both
    Both,
}

impl ReadFrom {
    /// Whether a name read from `self` matters at the top of a project.
    pub fn in_project(self) -> bool {
        matches!(self, ReadFrom::Project | ReadFrom::Both)
    }

    /// Whether a name read from `self` matters in the home directory.
    pub fn in_home(self) -> bool {
        matches!(self, ReadFrom::Home | ReadFrom::Both)
    }
}

/// A name that configures a shell, git, an editor or an agent: whatever writes it decides
/// what runs later, outside any sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProtectedName {
    /// The file or directory name
    pub name: &'static str,
    /// File or directory
    pub kind: EntryKind,
    /// Where it is read from
    pub read_from: ReadFrom,
}

const fn protected(name: &'static str, kind: EntryKind, read_from: ReadFrom) -> ProtectedName {
    ProtectedName {
        name,
        kind,
        read_from,
    }
}

/// The one list of protected names, shared by the file tools ([`is_protected`], which asks
/// for approval before writing any of them, in any directory, even in bypassPermissions
/// mode), the shell permissions, and the sandbox (which keeps them read-only inside writable
/// roots and keeps missing ones from being created). A protected directory protects
/// everything beneath it, except the worktrees of [`WORKTREE_PARENTS`]; inside the sandbox
/// `.git` is the exception described at [`GIT_DIR_ENTRIES`].
pub const PROTECTED_NAMES: &[ProtectedName] = &[
    protected(".git", EntryKind::Dir, ReadFrom::Project),
    protected(".agent-tools", EntryKind::Dir, ReadFrom::Both),
    protected(".claude", EntryKind::Dir, ReadFrom::Both),
    protected(".vscode", EntryKind::Dir, ReadFrom::Both),
    protected(".idea", EntryKind::Dir, ReadFrom::Project),
    protected(".mcp.json", EntryKind::File, ReadFrom::Project),
    protected(".gitmodules", EntryKind::File, ReadFrom::Project),
    protected(".gitconfig", EntryKind::File, ReadFrom::Home),
    protected(".claude.json", EntryKind::File, ReadFrom::Home),
    protected(".ripgreprc", EntryKind::File, ReadFrom::Home),
    protected(".bashrc", EntryKind::File, ReadFrom::Home),
    protected(".bash_profile", EntryKind::File, ReadFrom::Home),
    protected(".bash_login", EntryKind::File, ReadFrom::Home),
    protected(".bash_logout", EntryKind::File, ReadFrom::Home),
    protected(".profile", EntryKind::File, ReadFrom::Home),
    protected(".zshrc", EntryKind::File, ReadFrom::Home),
    protected(".zprofile", EntryKind::File, ReadFrom::Home),
    protected(".zshenv", EntryKind::File, ReadFrom::Home),
    protected(".zlogin", EntryKind::File, ReadFrom::Home),
];

/// Protected directories whose `worktrees/` subdirectory stays writable: EnterWorktree
/// creates git worktrees there, and the shell works in them.
pub const WORKTREE_PARENTS: &[&str] = &[".agent-tools", ".claude"];

/// The writable subdirectory of each of [`WORKTREE_PARENTS`].
pub const WORKTREES: &str = "worktrees";

/// The entries of a git directory (`.git`, or a submodule's directory under
/// `.git/modules/`) that run or configure code, or redirect git to another directory
/// (`commondir`). The file tools protect all of `.git`; the sandbox keeps `.git` itself
/// writable (objects, refs and the index, so `git commit` works) but these read-only, and
/// `.git` cannot be renamed or replaced.
pub const GIT_DIR_ENTRIES: &[(&str, EntryKind)] = &[
    ("config", EntryKind::File),
    ("config.worktree", EntryKind::File),
    ("hooks", EntryKind::Dir),
    ("commondir", EntryKind::File),
];

/// The entries of a linked worktree's administrative directory (`.git/worktrees/NAME`)
/// that redirect or configure git.
pub const GIT_WORKTREE_ENTRIES: &[(&str, EntryKind)] = &[
    ("commondir", EntryKind::File),
    ("gitdir", EntryKind::File),
    ("config.worktree", EntryKind::File),
];

/// Subdirectories of a git directory that hold further git directories: `modules`
/// (submodules, each a git directory) and `worktrees` (linked worktrees).
pub const GIT_NESTED: &[&str] = &["modules", "worktrees"];

/// The protected name `name` is, compared case-insensitively (`.GIT` on a
/// case-insensitive file system is `.git`).
pub fn protected_name(name: &str) -> Option<&'static ProtectedName> {
    PROTECTED_NAMES
        .iter()
        .find(|p| p.name.eq_ignore_ascii_case(name))
}

/// Whether writing `path` needs explicit approval whatever the mode: a path through a
/// protected directory or ending in a protected file name (see [`PROTECTED_NAMES`]).
/// Compared case-insensitively, so `.GIT/hooks/x` is caught on case-insensitive file
/// systems. Worktrees made by EnterWorktree (`.agent-tools/worktrees/`,
/// `.claude/worktrees/`) are exempt.
pub fn is_protected(path: &Path) -> bool {
    let names: Vec<String> = path
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().to_lowercase()),
            _ => None,
        })
        .collect();
    for (i, name) in names.iter().enumerate() {
        let Some(p) = protected_name(name) else {
            continue;
        };
        if p.kind == EntryKind::File {
            continue;
        }
        let worktree = WORKTREE_PARENTS.contains(&p.name)
            && names.get(i + 1).is_some_and(|n| n == WORKTREES)
            && names.len() > i + 2;
        if !worktree {
            return true;
        }
    }
    names
        .last()
        .and_then(|n| protected_name(n))
        .is_some_and(|p| p.kind == EntryKind::File)
}

/// The XDG base directories whose whole content configures programs or holds programs and
/// data they run later: `XDG_CONFIG_HOME`, `XDG_DATA_HOME` (`~/.local/share`: desktop
/// entries, fonts, applications), `XDG_STATE_HOME`, `XDG_CACHE_HOME` and `XDG_RUNTIME_DIR`
/// (sockets of agents such as ssh-agent and gpg-agent).
///
/// The cache is in on purpose: caches hold programs that run later outside any sandbox
/// (corepack's package managers, pre-commit's environments, browsers fetched by test
/// runners), so a write there is a write to code; a tool that wants a cache of its own keeps
/// it in the project.
pub const XDG_BASE_VARIABLES: &[&str] = &[
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_CACHE_HOME",
    "XDG_RUNTIME_DIR",
];

/// The directories of the home directory that are protected whole: `~/.config` and
/// `~/.local` (where the XDG variables are unset, their defaults live beneath these).
pub const HOME_CONFIG_DIRS: &[&str] = &[".config", ".local"];

/// The XDG base directories of this process's environment that are set to absolute paths
/// (the specification ignores relative ones).
fn xdg_base_dirs() -> Vec<PathBuf> {
    XDG_BASE_VARIABLES
        .iter()
        .filter_map(std::env::var_os)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .map(|p| normalize(&p))
        .collect()
}

/// The categories of the home directory `home` that no file tool writes without a
/// person's explicit approval, in every mode, and that the sandbox binds read-only: every
/// dot-entry directly in `home` that exists now (`~/.bashrc`, `~/.ssh`, `~/.gitconfig`,
/// `~/.cargo`, ...), `~/.config` and `~/.local` whether or not they exist, and the XDG base
/// directories of [`XDG_BASE_VARIABLES`] that are set. A dot-entry that does not exist yet is
/// protected by [`protected_home_category`] all the same; a sandbox keeps it from being
/// created by binding `home` itself read-only, or with a placeholder.
pub fn protected_home_categories(home: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut push = |p: PathBuf| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    for dir in HOME_CONFIG_DIRS {
        push(home.join(dir));
    }
    if let Ok(entries) = std::fs::read_dir(home) {
        let mut names: Vec<_> = entries
            .flatten()
            .map(|e| e.file_name())
            .filter(|n| n.as_encoded_bytes().starts_with(b"."))
            .collect();
        names.sort();
        for name in names {
            push(home.join(name));
        }
    }
    for dir in xdg_base_dirs() {
        push(dir);
    }
    out
}

/// The protected category of the home directory `home` that `path` (absolute, normalised)
/// lies in, as its top directory or file: the dot-entry of `home` it is or lies beneath
/// (existing or not), or the XDG base directory it lies in (see
/// [`protected_home_categories`]). `None` for every other path, `home` itself included.
pub fn protected_home_category(path: &Path, home: &Path) -> Option<PathBuf> {
    if let Ok(rel) = path.strip_prefix(home)
        && let Some(Component::Normal(first)) = rel.components().next()
        && first.as_encoded_bytes().starts_with(b".")
    {
        return Some(home.join(first));
    }
    xdg_base_dirs()
        .into_iter()
        .find(|dir| path.starts_with(dir))
}

/// `path` relative to `cwd` when it lies beneath it, otherwise absolute; for messages.
pub fn display_path(path: &Path, cwd: &Path) -> String {
    match path.strip_prefix(cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => path.display().to_string(),
    }
}

/// `name` as one file-name component: `[A-Za-z0-9._-]` kept, every other character `_`, and
/// a name that would be empty, `.` or `..` is `_`. For ids and names the model or a person
/// chose (sessions, agents, teams) used as a file or directory name.
pub fn safe_component(name: &str) -> String {
    let cleaned = replace_unsafe(name, true);
    match cleaned.as_str() {
        "" | "." | ".." => "_".to_owned(),
        _ => cleaned,
    }
}

/// `name` with every character outside `[A-Za-z0-9_-]` replaced by `_` (dots too): a stem
/// an extension is appended to, or a name part where a dot would mean something (MCP tool
/// names). An empty name stays empty.
pub fn safe_stem(name: &str) -> String {
    replace_unsafe(name, false)
}

fn replace_unsafe(name: &str, keep_dots: bool) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' || (keep_dots && c == '.') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_names() {
        assert_eq!(safe_component("a/b c"), "a_b_c");
        assert_eq!(safe_component(".."), "_");
        assert_eq!(safe_component("."), "_");
        assert_eq!(safe_component(""), "_");
        assert_eq!(safe_component("..."), "...");
        assert_eq!(safe_component("s1-2.x"), "s1-2.x");
        assert_eq!(safe_component("é/\\0"), "___0");
        assert_eq!(safe_stem("s1-2.x"), "s1-2_x");
        assert_eq!(safe_stem("toolu_01:a/b"), "toolu_01_a_b");
        assert_eq!(safe_stem("naïve"), "na_ve");
        assert_eq!(safe_stem(""), "");
    }

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

    /// The canonicalisation this module had before the walk: `realpath` of each ancestor
    /// in turn (quadratic in the depth), kept as the reference the walk must agree with.
    fn reference_lenient(path: &Path) -> PathBuf {
        let path = normalize(path);
        let mut existing = path.as_path();
        let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
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

    #[test]
    fn the_walk_agrees_with_realpath_of_each_ancestor() -> std::io::Result<()> {
        use std::os::unix::fs::symlink;
        let dir = tempfile::tempdir()?;
        let root = dir.path().canonicalize()?;
        std::fs::create_dir_all(root.join("a/b/c"))?;
        std::fs::write(root.join("a/file"), "x")?;
        symlink(root.join("a/b"), root.join("abs"))?;
        symlink("a/b/c", root.join("rel"))?;
        symlink("../a", root.join("a/b/up"))?;
        symlink("missing/deeper", root.join("dangling"))?;
        symlink("loop2", root.join("loop1"))?;
        symlink("loop1", root.join("loop2"))?;
        symlink("a/file", root.join("to-file"))?;
        symlink("/", root.join("to-root"))?;
        symlink("a/b/../../a/./b", root.join("dots"))?;
        symlink("rel/../..", root.join("chain"))?;
        let check = |rel: &str| {
            let path = root.join(rel);
            assert_eq!(
                walk::resolve(&normalize(&path)),
                reference_lenient(&path),
                "{rel}"
            );
        };
        for rel in [
            "a/b/c",
            "a/b/c/new/deeper",
            "abs/c/x",
            "rel",
            "rel/new",
            "a/b/up/b/up/file",
            "a/b/up/../b",
            "dangling",
            "dangling/x",
            "loop1",
            "loop1/x",
            "to-file",
            "to-file/x",
            "a/file/x/y",
            "to-root/etc",
            "dots/c",
            "chain/a",
            "chain/missing/x",
            "missing",
            "missing/a/../b",
        ] {
            check(rel);
        }
        Ok(())
    }

    #[test]
    fn deep_paths_resolve_in_one_walk() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().canonicalize()?;
        let mut existing = root.clone();
        for _ in 0..300 {
            existing.push("d");
        }
        std::fs::create_dir_all(&existing)?;
        std::os::unix::fs::symlink(&root, existing.join("back"))?;
        // Far beyond what realpath would take (and what one lookup may name), and beyond
        // what a quadratic walk would finish: 90,000 components, mostly missing.
        let missing = "ab/".repeat(90_000);
        let deep = existing.join("back").join("d").join(&missing);
        let resolved = canonicalize_lenient(&deep);
        assert_eq!(resolved, root.join("d").join(missing.trim_end_matches('/')));
        assert!(within_any(&deep, std::slice::from_ref(&root)));
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

    fn check_protected(path: &str, expected: bool) {
        assert_eq!(is_protected(Path::new(path)), expected, "{path}");
    }

    #[test]
    fn protected_paths() {
        for (path, expected) in [
            ("/p/.git/config", true),
            ("/p/.GIT/hooks/pre-commit", true),
            ("/p/.git", true),
            ("/home/u/.bashrc", true),
            ("/home/u/.Bash_Profile", true),
            ("/p/.agent-tools/settings.json", true),
            ("/p/.agent-tools/worktrees", true),
            ("/p/.claude/settings.json", true),
            ("/p/.claude/worktrees/w/.mcp.json", true),
            ("/p/.vscode/settings.json", true),
            ("/p/.idea/workspace.xml", true),
            ("/p/.mcp.json", true),
            ("/p/.gitmodules", true),
            ("/home/u/.gitconfig", true),
            ("/home/u/.claude.json", true),
            ("/home/u/.zlogin", true),
            ("/p/src/main.rs", false),
            ("/p/.agent-tools/worktrees/w1/src/a.rs", false),
            ("/p/.claude/worktrees/w1/README.md", false),
            ("/p/git/config", false),
            ("/p/.github/ci.yml", false),
            ("/p/.bashrc/notes.txt", false),
            ("/p/.gitignore", false),
        ] {
            check_protected(path, expected);
        }
    }

    #[test]
    fn the_password_database_gives_the_accounts_home() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\n\
# comment\n\
broken\n\
u:x:1000:1000::/home/u:/bin/sh\n\
nohome:x:1001:1001:::/bin/sh\n";
        assert_eq!(passwd_home(passwd, 0), Some(PathBuf::from("/root")));
        assert_eq!(passwd_home(passwd, 1000), Some(PathBuf::from("/home/u")));
        assert_eq!(passwd_home(passwd, 1001), None);
        assert_eq!(passwd_home(passwd, 7), None);
    }

    #[test]
    fn home_categories() {
        let home = Path::new("/home/u");
        let check = |path: &str, expected: Option<&str>| {
            assert_eq!(
                protected_home_category(Path::new(path), home),
                expected.map(PathBuf::from),
                "{path}"
            );
        };
        check("/home/u/.bashrc", Some("/home/u/.bashrc"));
        check("/home/u/.config/git/config", Some("/home/u/.config"));
        check("/home/u/.local/bin/git", Some("/home/u/.local"));
        check("/home/u/.new-tool/x/y", Some("/home/u/.new-tool"));
        check("/home/u/..", None);
        check("/home/u", None);
        check("/home/u/src/.git/config", None);
        check("/home/u/notes.txt", None);
        check("/home/uv/.bashrc", None);
        check("/etc/.hidden", None);
        let listed = protected_home_categories(Path::new("/nonexistent-home"));
        for dir in HOME_CONFIG_DIRS {
            assert!(listed.contains(&Path::new("/nonexistent-home").join(dir)));
        }
    }

    #[test]
    fn the_list_is_consistent() {
        for p in PROTECTED_NAMES {
            assert_eq!(
                protected_name(&p.name.to_uppercase()),
                Some(p),
                "{}",
                p.name
            );
            assert!(
                p.read_from.in_project() || p.read_from.in_home(),
                "{}",
                p.name
            );
        }
        for parent in WORKTREE_PARENTS {
            assert_eq!(protected_name(parent).map(|p| p.kind), Some(EntryKind::Dir));
        }
        assert_eq!(protected_name("README.md"), None);
    }
}
