//! Which paths stay read-only inside the sandbox's writable roots, from the one list of
//! protected names in `tool_core::path`.
//!
//! Names are protected in *bases*: each working directory (the names read at the top of a
//! project), the home directory when it lies in a writable root (the names read from home),
//! and each other writable root from the settings (the names that exist there). In a base:
//! - an existing protected directory is bound read-only over itself, except `.git`, which
//!   is bound writable over itself (a mount point cannot be renamed or removed, so `.git`
//!   cannot be swapped for a planted one) with the entries that run or configure code
//!   (`config`, `config.worktree`, `hooks/`, `commondir`, and the same in each submodule's
//!   directory under `modules/`, and the redirecting files of each linked worktree under
//!   `worktrees/`) bound read-only; `.agent-tools/worktrees` and `.claude/worktrees` are
//!   bound writable again;
//! - an existing protected file is bound read-only over itself;
//! - a `.git` *file* (a linked worktree or a submodule's checkout) is bound read-only, and
//!   the git directory it names is protected as above when it lies in a writable root;
//! - a missing name gets a placeholder (see the `placeholder` module) under bubblewrap, and
//!   is simply not granted under Landlock, whose base directories are granted entry by
//!   entry (no new entry can be made in them at all);
//! - a protected name that is a symbolic link is protected at its target (when that lies in
//!   a writable root); the link itself is an entry of a writable directory.
//!
//! Besides the bases, paths protected wherever they are (the files approved configuration
//! names, the state directory, the home directory's configuration) are bound read-only
//! when they exist inside a writable root.

use std::path::{Path, PathBuf};

use tool_core::path::{
    self, GIT_DIR_ENTRIES, GIT_NESTED, GIT_WORKTREE_ENTRIES, PROTECTED_NAMES, WORKTREE_PARENTS,
    WORKTREES,
};

use crate::placeholder_shape::Shape;

/// How a protected path is bound inside the writable roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bind {
    /// Read-only, over itself
    ReadOnly(PathBuf),
    /// Writable, over itself: its name cannot change (`.git`)
    Pinned(PathBuf),
    /// Writable again inside a read-only protected directory (`.agent-tools/worktrees`)
    Writable(PathBuf),
    /// A protected name that does not exist: a placeholder of this shape, bound read-only
    Missing(PathBuf, Shape),
}

impl Bind {
    /// The path bound.
    pub fn path(&self) -> &Path {
        match self {
            Bind::ReadOnly(p) | Bind::Pinned(p) | Bind::Writable(p) | Bind::Missing(p, _) => p,
        }
    }
}

/// A directory whose protected names are protected.
#[derive(Debug, Clone, Copy)]
pub struct Base<'a> {
    /// The directory (canonical)
    pub dir: &'a Path,
    /// Protect the names read at the top of a project, missing or not
    pub project: bool,
    /// Protect the names read from the home directory, missing or not
    pub home: bool,
}

/// How many submodule or worktree directories are looked at per git directory.
const NESTED_LIMIT: usize = 256;

/// The binds protecting `bases` and the paths `read_only` inside `roots`, parents before
/// children.
pub fn binds(bases: &[Base<'_>], roots: &[PathBuf], read_only: &[PathBuf]) -> Vec<Bind> {
    let mut out = Protect {
        roots,
        binds: Vec::new(),
    };
    for base in bases {
        out.base(base);
    }
    for p in read_only {
        if out.writable(p) && std::fs::symlink_metadata(p).is_ok() {
            out.binds.push(Bind::ReadOnly(p.clone()));
        }
    }
    let mut binds = out.binds;
    let mut seen = std::collections::HashSet::new();
    binds.retain(|b| seen.insert(b.path().to_path_buf()));
    binds.sort_by_key(|b| b.path().components().count());
    binds
}

struct Protect<'a> {
    roots: &'a [PathBuf],
    binds: Vec<Bind>,
}

impl Protect<'_> {
    fn writable(&self, p: &Path) -> bool {
        self.roots.iter().any(|r| path::is_within(p, r))
    }

    fn base(&mut self, base: &Base<'_>) {
        for name in PROTECTED_NAMES {
            let wanted = (base.project && name.read_from.in_project())
                || (base.home && name.read_from.in_home());
            let p = base.dir.join(name.name);
            let Some(meta) = self.existing(&p, Shape::name(name.name, name.kind), wanted) else {
                continue;
            };
            match (name.name, meta.is_dir()) {
                (".git", true) => {
                    self.binds.push(Bind::Pinned(p.clone()));
                    self.git_dir(&p, 0);
                }
                (".git", false) => {
                    self.binds.push(Bind::ReadOnly(p.clone()));
                    self.git_file(&p);
                }
                (_, true) => {
                    self.binds.push(Bind::ReadOnly(p.clone()));
                    let worktrees = p.join(WORKTREES);
                    if WORKTREE_PARENTS.contains(&name.name)
                        && std::fs::symlink_metadata(&worktrees).is_ok_and(|m| m.is_dir())
                    {
                        self.binds.push(Bind::Writable(worktrees));
                    }
                }
                (_, false) => self.binds.push(Bind::ReadOnly(p.clone())),
            }
        }
    }

    /// The metadata of an existing, real entry at `p` inside a writable root (its target when
    /// `p` is a link, protected here); `None` when there is nothing more to do (missing ones
    /// that are `wanted` and placeholders are recorded as [`Bind::Missing`]).
    fn existing(&mut self, p: &Path, shape: Shape, wanted: bool) -> Option<std::fs::Metadata> {
        if !self.writable(p) {
            return None;
        }
        let meta = match std::fs::symlink_metadata(p) {
            Ok(meta) => meta,
            Err(_) => {
                if wanted {
                    self.binds.push(Bind::Missing(p.to_path_buf(), shape));
                }
                return None;
            }
        };
        if meta.file_type().is_symlink() {
            if let Ok(target) = p.canonicalize()
                && self.writable(&target)
            {
                self.binds.push(Bind::ReadOnly(target));
            }
            return None;
        }
        #[cfg(target_os = "linux")]
        let placeholder = crate::placeholder::is_placeholder(p, &meta, shape);
        #[cfg(not(target_os = "linux"))]
        let placeholder = false;
        if placeholder {
            self.binds.push(Bind::Missing(p.to_path_buf(), shape));
            return None;
        }
        Some(meta)
    }

    /// A git directory: its code-running entries read-only (placeholders where missing),
    /// then its submodules' and linked worktrees' directories.
    fn git_dir(&mut self, dir: &Path, depth: usize) {
        for (name, kind) in GIT_DIR_ENTRIES {
            let p = dir.join(name);
            if self
                .existing(&p, Shape::git_entry(name, *kind), true)
                .is_some()
            {
                self.binds.push(Bind::ReadOnly(p));
            }
        }
        if depth > 4 {
            return;
        }
        for nested in GIT_NESTED {
            let Ok(entries) = std::fs::read_dir(dir.join(nested)) else {
                continue;
            };
            for e in entries.flatten().take(NESTED_LIMIT) {
                if !e.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                if *nested == "modules" {
                    self.modules(&e.path(), depth + 1);
                } else {
                    self.worktree_admin(&e.path());
                }
            }
        }
    }

    /// `.git/modules/NAME`: a submodule's git directory, or (for submodules with a slash in
    /// their name) a directory of them.
    fn modules(&mut self, dir: &Path, depth: usize) {
        if dir.join("HEAD").exists() || dir.join("config").exists() {
            self.git_dir(dir, depth);
        } else if depth <= 4
            && let Ok(entries) = std::fs::read_dir(dir)
        {
            for e in entries.flatten().take(NESTED_LIMIT) {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    self.modules(&e.path(), depth + 1);
                }
            }
        }
    }

    /// `.git/worktrees/NAME`: a linked worktree's administrative directory.
    fn worktree_admin(&mut self, dir: &Path) {
        for (name, kind) in GIT_WORKTREE_ENTRIES {
            let p = dir.join(name);
            let wanted = *name == "config.worktree";
            if self
                .existing(&p, Shape::git_entry(name, *kind), wanted)
                .is_some()
            {
                self.binds.push(Bind::ReadOnly(p));
            }
        }
    }

    /// A `.git` file (`gitdir: PATH`): the git directory it names.
    fn git_file(&mut self, file: &Path) {
        let Ok(text) = std::fs::read_to_string(file) else {
            return;
        };
        let Some(target) = text.trim().strip_prefix("gitdir:") else {
            return;
        };
        let parent = file.parent().unwrap_or(Path::new("/"));
        let Ok(gitdir) = parent.join(target.trim()).canonicalize() else {
            return;
        };
        if !self.writable(&gitdir) {
            return;
        }
        let commondir = gitdir.join("commondir");
        if let Ok(common) = std::fs::read_to_string(&commondir) {
            self.worktree_admin(&gitdir);
            if let Ok(common) = gitdir.join(common.trim()).canonicalize()
                && self.writable(&common)
            {
                self.git_dir(&common, 0);
            }
        } else {
            self.git_dir(&gitdir, 0);
        }
    }
}

#[cfg(test)]
mod tests {
    use tool_core::path::EntryKind;

    use super::*;

    fn rel(root: &Path, b: &Bind) -> String {
        let p = b.path().strip_prefix(root).unwrap_or(b.path()).display();
        match b {
            Bind::ReadOnly(_) => format!("ro {p}"),
            Bind::Pinned(_) => format!("pin {p}"),
            Bind::Writable(_) => format!("rw {p}"),
            Bind::Missing(_, s) if s.kind == EntryKind::Dir => format!("new {p}/"),
            Bind::Missing(_, _) => format!("new {p}"),
        }
    }

    /// Makes `files` (a trailing slash makes a directory) and checks the binds of a working
    /// directory (`project`) or a home directory there.
    fn check(files: &[&str], project: bool, home: bool, expected: &[&str]) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().canonicalize().unwrap_or_else(|e| panic!("{e}"));
        for f in files {
            let p = root.join(f.trim_end_matches('/'));
            if let Some((link, target)) = f.split_once(" -> ") {
                std::os::unix::fs::symlink(target, root.join(link))
                    .unwrap_or_else(|e| panic!("{e}"));
            } else if f.ends_with('/') {
                std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("{e}"));
            } else {
                std::fs::create_dir_all(p.parent().unwrap_or(&root))
                    .unwrap_or_else(|e| panic!("{e}"));
                let content = if f.ends_with("commondir") {
                    "../..\n"
                } else {
                    ""
                };
                std::fs::write(&p, content).unwrap_or_else(|e| panic!("{e}"));
            }
        }
        let bases = [Base {
            dir: &root,
            project,
            home,
        }];
        let got: Vec<String> = binds(&bases, std::slice::from_ref(&root), &[])
            .iter()
            .map(|b| rel(&root, b))
            .collect();
        let mut got_sorted = got.clone();
        got_sorted.sort();
        let mut want: Vec<String> = expected.iter().map(|s| (*s).to_owned()).collect();
        want.sort();
        assert_eq!(got_sorted, want, "{files:?}: {got:?}");
    }

    const PROJECT_MISSING: &[&str] = &[
        "new .git/",
        "new .agent-tools/",
        "new .claude/",
        "new .vscode/",
        "new .idea/",
        "new .mcp.json",
        "new .gitmodules",
    ];

    #[test]
    fn an_empty_project_gets_placeholders_for_what_it_reads() {
        check(&[], true, false, PROJECT_MISSING);
    }

    #[test]
    fn a_home_directory_gets_placeholders_for_what_it_reads() {
        let mut want = vec![
            "new .agent-tools/",
            "new .claude/",
            "new .vscode/",
            "new .gitconfig",
            "new .claude.json",
            "new .ripgreprc",
        ];
        for rc in [
            ".bashrc",
            ".bash_profile",
            ".bash_login",
            ".bash_logout",
            ".profile",
            ".zshrc",
            ".zprofile",
            ".zshenv",
            ".zlogin",
        ] {
            want.push(Box::leak(format!("new {rc}").into_boxed_str()));
        }
        check(&[".bashrc"], false, true, &{
            let mut w = want.clone();
            w.retain(|s| *s != "new .bashrc");
            w.push("ro .bashrc");
            w
        });
        // Another writable root only protects what exists.
        check(
            &[".bashrc", ".vscode/"],
            false,
            false,
            &["ro .bashrc", "ro .vscode"],
        );
    }

    #[test]
    fn a_repository_keeps_git_writable_but_not_what_runs_code() {
        let mut want: Vec<&str> = PROJECT_MISSING
            .iter()
            .copied()
            .filter(|s| *s != "new .git/")
            .collect();
        want.extend([
            "pin .git",
            "ro .git/config",
            "ro .git/hooks",
            "new .git/config.worktree",
            "new .git/commondir",
            "ro .git/modules/lib/config",
            "new .git/modules/lib/hooks/",
            "new .git/modules/lib/config.worktree",
            "new .git/modules/lib/commondir",
            "ro .git/worktrees/w1/commondir",
            "ro .git/worktrees/w1/gitdir",
            "new .git/worktrees/w1/config.worktree",
        ]);
        check(
            &[
                ".git/config",
                ".git/hooks/",
                ".git/HEAD",
                ".git/objects/",
                ".git/modules/lib/config",
                ".git/worktrees/w1/commondir",
                ".git/worktrees/w1/gitdir",
            ],
            true,
            false,
            &want,
        );
    }

    #[test]
    fn worktrees_stay_writable_and_links_are_protected_at_their_target() {
        let mut want: Vec<&str> = PROJECT_MISSING
            .iter()
            .copied()
            .filter(|s| !matches!(*s, "new .agent-tools/" | "new .mcp.json" | "new .claude/"))
            .collect();
        want.extend([
            "ro .agent-tools",
            "rw .agent-tools/worktrees",
            "ro .claude",
            "ro shared/mcp.json",
        ]);
        check(
            &[
                ".agent-tools/worktrees/w1/",
                ".claude/settings.json",
                "shared/mcp.json",
                ".mcp.json -> shared/mcp.json",
            ],
            true,
            false,
            &want,
        );
    }

    #[test]
    fn a_linked_worktree_protects_the_git_directory_it_names() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().canonicalize()?;
        let admin = root.join("main/.git/worktrees/w1");
        std::fs::create_dir_all(&admin)?;
        std::fs::create_dir_all(root.join("main/.git/hooks"))?;
        std::fs::write(root.join("main/.git/config"), "")?;
        std::fs::write(admin.join("commondir"), "../..\n")?;
        std::fs::write(admin.join("gitdir"), "")?;
        let worktree = root.join("wt");
        std::fs::create_dir_all(&worktree)?;
        std::fs::write(worktree.join(".git"), "gitdir: ../main/.git/worktrees/w1\n")?;
        let bases = [Base {
            dir: &worktree,
            project: true,
            home: false,
        }];
        let got: Vec<String> = binds(&bases, std::slice::from_ref(&root), &[])
            .iter()
            .map(|b| rel(&root, b))
            .filter(|s| !s.starts_with("new wt/"))
            .collect();
        let mut got_sorted = got.clone();
        got_sorted.sort();
        let mut want = vec![
            "ro wt/.git",
            "ro main/.git/worktrees/w1/commondir",
            "ro main/.git/worktrees/w1/gitdir",
            "new main/.git/worktrees/w1/config.worktree",
            "ro main/.git/config",
            "ro main/.git/hooks",
            "new main/.git/config.worktree",
            "new main/.git/commondir",
        ];
        want.sort_unstable();
        assert_eq!(got_sorted, want, "{got:?}");
        Ok(())
    }
}
