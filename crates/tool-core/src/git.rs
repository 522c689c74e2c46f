//! Git as the host runs it: the one way any crate starts `git` for its own purposes
//! (worktrees and their checks, `git check-ignore`), hardened so that nothing a command could
//! have planted in a repository runs on the host.
//!
//! A repository's own configuration (`.git/config`, `config.worktree`, and every file they
//! include) and its `.gitattributes` may have been written by anyone, and git runs programs
//! they name: hooks, `core.fsmonitor`, pagers, editors, filter drivers (`clean`, `smudge`,
//! `process`), diff drivers (`textconv`, `command`), merge drivers, transports
//! (`core.sshCommand`, `ext::`), credential helpers. [`HardenedGit`] turns all of them off:
//!
//! - fixed overrides on the command line (`-c`, which wins over every file): hooks go to
//!   `/dev/null`, `core.fsmonitor` is off, no pager, no editor, every transport protocol is
//!   `never`, no credential helper, no submodule recursion, no automatic `gc` or maintenance
//!   (which would leave processes behind), no signing;
//! - the repository's configuration is listed first (`git config --list --show-scope
//!   --includes`, which runs nothing), and every driver it defines in the repository's own
//!   scope (`local`, `worktree`, and what those include) is emptied with another `-c`, so a
//!   `.gitattributes` naming it finds no program. Drivers of the person's global
//!   configuration stay (git-lfs, for example): a person wrote those;
//! - a clean environment: no `GIT_*` variable of the host (such as `GIT_DIR` or
//!   `GIT_CONFIG_PARAMETERS`) reaches git; only `PATH`, `HOME`, the locale, `TMPDIR` and
//!   `XDG_CONFIG_HOME` pass, plus the variables that switch prompts, pagers, editors, lazy
//!   fetches and the system configuration off;
//! - git leads a process group of its own, which is killed when git ends or the call is
//!   dropped: nothing it started stays.
//!
//! Callers decide where git runs: [`HardenedGit::at`] discovers the repository from a
//! directory (callers pass the session's project root, never a directory a command chose),
//! and [`HardenedGit::with_git_dir`] names the git directory and work tree outright, so no
//! `.git` entry inside a work tree is consulted.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use crate::ProcessGroup;

/// Configuration that always applies, whatever the repository or the person configured.
const FIXED: &[&str] = &[
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.editor=true",
    "sequence.editor=true",
    "core.askPass=",
    "core.sshCommand=",
    "core.gitProxy=",
    "core.alternateRefsCommand=",
    "credential.helper=",
    "protocol.allow=never",
    "protocol.file.allow=never",
    "protocol.git.allow=never",
    "protocol.ssh.allow=never",
    "protocol.http.allow=never",
    "protocol.https.allow=never",
    "protocol.ext.allow=never",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "diff.ignoreSubmodules=all",
    "status.submoduleSummary=false",
    "gc.auto=0",
    "gc.autoDetach=false",
    "maintenance.auto=false",
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "gpg.program=false",
];

/// The environment variables passed from the host, by name or (ending in `_`) by prefix.
const PASSED: &[&str] = &["PATH", "LANG", "LC_", "TMPDIR", "XDG_CONFIG_HOME"];

/// Variables set for every run: no system configuration or attributes, no prompt, no
/// pager, no editor, no optional lock (status writes no index), no lazy fetch of missing
/// objects, and no protocol allowed (this list replaces the configured policy).
const SET: &[(&str, &str)] = &[
    ("GIT_CONFIG_NOSYSTEM", "1"),
    ("GIT_ATTR_NOSYSTEM", "1"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("GIT_PAGER", "cat"),
    ("PAGER", "cat"),
    ("GIT_EDITOR", "true"),
    ("GIT_SEQUENCE_EDITOR", "true"),
    ("GIT_OPTIONAL_LOCKS", "0"),
    ("GIT_NO_LAZY_FETCH", "1"),
    ("GIT_ALLOW_PROTOCOL", "none"),
    ("GIT_PROTOCOL_FROM_USER", "0"),
];

/// Driver keys whose value is a program: `(section, key)` as in `filter.<driver>.clean`.
const DRIVER_PROGRAMS: &[(&str, &str)] = &[
    ("filter", "clean"),
    ("filter", "smudge"),
    ("filter", "process"),
    ("diff", "textconv"),
    ("diff", "command"),
    ("merge", "driver"),
    ("hook", "command"),
];

/// Scopes whose configuration lives in the repository, where anyone may have written it.
const REPOSITORY_SCOPES: &[&str] = &["local", "worktree"];

/// Git, run so that nothing a repository holds makes it run another program (see the
/// module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HardenedGit {
    /// The directory git starts in (`-C`)
    dir: PathBuf,
    /// An explicit git directory and work tree (no discovery)
    repo: Option<(PathBuf, PathBuf)>,
}

impl HardenedGit {
    /// Git in `dir`, finding the repository from there as git does. Pass the session's
    /// project root (`ToolContext::original_cwd`), not a directory a command moved to.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        HardenedGit {
            dir: dir.into(),
            repo: None,
        }
    }

    /// Git with the git directory `git_dir` and the work tree `work_tree` named outright
    /// (`--git-dir`, `--work-tree`): nothing inside the work tree decides which repository
    /// is used.
    pub fn with_git_dir(git_dir: impl Into<PathBuf>, work_tree: impl Into<PathBuf>) -> Self {
        let work_tree = work_tree.into();
        HardenedGit {
            dir: work_tree.clone(),
            repo: Some((git_dir.into(), work_tree)),
        }
    }

    /// The directory git starts in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A command for `git` with the clean environment, the fixed overrides and `extra`
    /// overrides, ready for `args`.
    fn command(&self, extra: &[String]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new("git");
        command.env_clear();
        for (name, value) in std::env::vars_os().filter(|(name, _)| passes(name)) {
            command.env(name, value);
        }
        if std::env::var_os("PATH").is_none() {
            command.env("PATH", "/usr/local/bin:/usr/bin:/bin");
        }
        if let Some(home) = crate::path::home_dir() {
            command.env("HOME", home);
        }
        for (name, value) in SET {
            command.env(name, value);
        }
        command.arg("--no-pager").arg("-C").arg(&self.dir);
        if let Some((git_dir, work_tree)) = &self.repo {
            command
                .arg(format!("--git-dir={}", git_dir.display()))
                .arg(format!("--work-tree={}", work_tree.display()));
        }
        for setting in FIXED
            .iter()
            .map(|s| (*s).to_owned())
            .chain(extra.iter().cloned())
        {
            command.arg("-c").arg(setting);
        }
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// Runs `command` as the leader of its own process group, feeding `stdin`; the group is
    /// killed once git ended (or when this future is dropped), so nothing it started stays.
    async fn run(
        mut command: tokio::process::Command,
        stdin: Option<&[u8]>,
    ) -> std::io::Result<Output> {
        if stdin.is_some() {
            command.stdin(Stdio::piped());
        }
        let (mut child, group) = ProcessGroup::spawn(&mut command)?;
        if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
            use tokio::io::AsyncWriteExt;
            // A git that exits early closes the pipe; its status says what happened.
            let _ = pipe.write_all(bytes).await;
        }
        let output = child.wait_with_output().await;
        drop(group);
        output
    }

    /// The `-c` overrides that empty every program-valued driver key the repository's own
    /// configuration defines (see the module documentation).
    async fn repository_overrides(&self) -> std::io::Result<Vec<String>> {
        let mut command = self.command(&[]);
        command.args(["config", "--list", "-z", "--show-scope", "--includes"]);
        let output = Self::run(command, None).await?;
        // Outside a repository (or with no configuration) there is nothing to empty.
        if !output.status.success() {
            return Ok(Vec::new());
        }
        Ok(overrides_for(&output.stdout))
    }

    /// Runs `git ARGS` (with `stdin` when given) hardened: git's output, whatever its exit
    /// status; an error only when git could not be started.
    pub async fn output(&self, args: &[&str], stdin: Option<&[u8]>) -> std::io::Result<Output> {
        let extra = self.repository_overrides().await?;
        let mut command = self.command(&extra);
        command.args(args);
        Self::run(command, stdin).await
    }

    /// Runs `git ARGS` hardened: its standard output (trailing whitespace removed) on
    /// success, otherwise a message naming the command and git's standard error.
    pub async fn text(&self, args: &[&str]) -> Result<String, String> {
        let out = self
            .output(args, None)
            .await
            .map_err(|e| format!("cannot run git: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_owned())
        } else {
            Err(format!(
                "git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }
}

/// The overrides for the output of `git config --list -z --show-scope`: each entry is
/// `scope NUL key LF value NUL` (or `scope NUL key NUL` for a key without a value).
fn overrides_for(listing: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut fields = listing.split(|b| *b == 0);
    while let (Some(scope), Some(entry)) = (fields.next(), fields.next()) {
        let scope = String::from_utf8_lossy(scope);
        if !REPOSITORY_SCOPES.contains(&scope.as_ref()) {
            continue;
        }
        let entry = String::from_utf8_lossy(entry);
        let key = entry.split('\n').next().unwrap_or_default();
        for setting in neutralise(key) {
            if !out.contains(&setting) {
                out.push(setting);
            }
        }
    }
    out
}

/// The overrides that neutralise `key` (`section.subsection.name`, section and name in
/// lower case as git lists them) when it names a program of a driver.
fn neutralise(key: &str) -> Vec<String> {
    let Some((section, rest)) = key.split_once('.') else {
        return Vec::new();
    };
    let Some((subsection, name)) = rest.rsplit_once('.') else {
        return Vec::new();
    };
    let section = section.to_ascii_lowercase();
    let name = name.to_ascii_lowercase();
    // A subsection is case-sensitive and may hold any character but a newline; `-c` splits
    // at the first `=`, which the key part therefore must not contain.
    if subsection.contains('=') {
        return Vec::new();
    }
    let mut out = Vec::new();
    if section == "filter" {
        // An emptied driver that is `required` would fail the checkout instead of passing
        // the file through unchanged.
        out.push(format!("filter.{subsection}.required=false"));
        for program in ["clean", "smudge", "process"] {
            out.push(format!("filter.{subsection}.{program}="));
        }
    } else if DRIVER_PROGRAMS.contains(&(section.as_str(), name.as_str())) {
        out.push(format!("{section}.{subsection}.{name}="));
    }
    out
}

/// Whether the host's environment variable `name` reaches git: by name or prefix, never a
/// `GIT_*` variable.
fn passes(name: &OsStr) -> bool {
    let text = name.to_string_lossy();
    PASSED
        .iter()
        .any(|p| text == *p || (p.ends_with('_') && text.starts_with(p)))
}

/// The project's repository as seen from `dir`: `Ok(None)` when `dir` belongs to the
/// repository whose work tree is `top` (no other `.git` entry lies between them), otherwise
/// the directory holding the nested repository's `.git` entry. `dir` and `top` are canonical;
/// `dir` outside `top` is reported as itself.
pub fn nested_repository(dir: &Path, top: &Path) -> Option<PathBuf> {
    if !dir.starts_with(top) {
        return Some(dir.to_path_buf());
    }
    let mut current = Some(dir);
    while let Some(d) = current {
        if d == top {
            return None;
        }
        if std::fs::symlink_metadata(d.join(".git")).is_ok() {
            return Some(d.to_path_buf());
        }
        current = d.parent();
    }
    None
}

/// The administrative directory (`<common>/worktrees/<id>`) of the linked worktree at `dir`
/// (canonical), when `dir` is one of the repository whose common git directory is `common`:
/// the entry whose `gitdir` file points back at `<dir>/.git`. What `<dir>/.git` itself says
/// is not consulted.
pub fn linked_worktree(common: &Path, dir: &Path) -> Option<PathBuf> {
    let wanted = dir.join(".git");
    std::fs::read_dir(common.join("worktrees"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .find(|admin| {
            std::fs::read_to_string(admin.join("gitdir")).is_ok_and(|text| {
                crate::path::canonicalize_lenient(Path::new(text.trim())) == wanted
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drivers_of_the_repository_are_emptied_and_the_persons_kept() {
        let listing = b"global\0filter.lfs.process\ngit-lfs filter-process\0\
local\0filter.evil.smudge\nsh -c x\0\
local\0diff.Pic.textconv\nexiftool\0\
worktree\0merge.m.driver\nrun %A\0\
local\0hook.pre.command\n./x\0\
local\0core.bare\nfalse\0\
local\0boolkey\0\
command\0filter.c.clean\nx\0\
local\0filter.a=b.clean\nx\0";
        assert_eq!(
            overrides_for(listing),
            [
                "filter.evil.required=false",
                "filter.evil.clean=",
                "filter.evil.smudge=",
                "filter.evil.process=",
                "diff.Pic.textconv=",
                "merge.m.driver=",
                "hook.pre.command=",
            ]
        );
        assert!(overrides_for(b"").is_empty());
        assert!(overrides_for(b"local").is_empty());
    }

    #[test]
    fn no_git_variable_passes() {
        for (name, expected) in [
            ("PATH", true),
            ("GIT_DIR", false),
            ("GIT_CONFIG_PARAMETERS", false),
            ("GIT_EXTERNAL_DIFF", false),
            ("LC_ALL", true),
            ("LANG", true),
            ("HOME", false),
            ("LD_PRELOAD", false),
            ("XDG_CONFIG_HOME", true),
            ("PATHX", false),
        ] {
            assert_eq!(passes(OsStr::new(name)), expected, "{name}");
        }
    }

    #[test]
    fn nested_repositories_are_found_between_dir_and_top() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        let top = dir.path().canonicalize()?;
        std::fs::create_dir_all(top.join("a/b/c"))?;
        std::fs::create_dir_all(top.join(".git"))?;
        assert_eq!(nested_repository(&top, &top), None);
        assert_eq!(nested_repository(&top.join("a/b/c"), &top), None);
        std::fs::write(top.join("a/.git"), "gitdir: /elsewhere")?;
        assert_eq!(
            nested_repository(&top.join("a/b/c"), &top),
            Some(top.join("a"))
        );
        assert_eq!(nested_repository(&top.join("a"), &top), Some(top.join("a")));
        assert_eq!(
            nested_repository(Path::new("/"), &top),
            Some(PathBuf::from("/"))
        );
        Ok(())
    }
}
