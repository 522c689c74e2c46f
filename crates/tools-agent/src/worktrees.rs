//! Git worktrees: `<repo>/.agent-tools/worktrees/<name>` on branch `worktree-<name>`,
//! created from the commit the working directory is at, checked for uncommitted or new
//! commits, and removed with their branch. Every function here runs git (blocking).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

/// The worktree EnterWorktree created in this session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActiveWorktree {
    /// The worktree directory
    pub path: PathBuf,
    /// Its branch
    pub branch: String,
    /// The repository's top directory
    pub repo: PathBuf,
    /// The commit the worktree started from
    pub base_commit: String,
    /// The working directory to return to
    pub original_cwd: PathBuf,
}

/// Runs git in `dir`; stdout on success, a message with git's stderr otherwise.
fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .output()
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

/// Creates `<repo>/.agent-tools/worktrees/<name>` on a new branch `worktree-<name>` from
/// the commit `cwd` is at (blocking: it runs git); `who` names the caller in errors.
pub(crate) fn create_worktree(cwd: &Path, name: &str, who: &str) -> Result<ActiveWorktree, String> {
    let branch = format!("worktree-{name}");
    let repo = PathBuf::from(git(cwd, &["rev-parse", "--show-toplevel"]).map_err(|_| {
        format!(
            "{who} needs a git repository, and {} is not inside one",
            cwd.display()
        )
    })?);
    let base_commit = git(&repo, &["rev-parse", "HEAD"]).map_err(|_| {
        "The repository has no commit yet: commit something before creating a worktree".to_owned()
    })?;
    let path = repo.join(".agent-tools").join("worktrees").join(name);
    if path.exists() {
        return Err(format!(
            "{} already exists: choose another name, or remove it with `git worktree remove`",
            path.display()
        ));
    }
    let shown = path.to_string_lossy().into_owned();
    git(
        &repo,
        &["worktree", "add", "-b", &branch, &shown, &base_commit],
    )?;
    Ok(ActiveWorktree {
        path: tool_core::path::canonicalize_lenient(&path),
        branch,
        repo,
        base_commit,
        original_cwd: cwd.to_path_buf(),
    })
}

/// Deletes a worktree and its branch (blocking: it runs git).
pub(crate) fn remove_worktree(wt: &ActiveWorktree) -> Result<(), String> {
    let path = wt.path.to_string_lossy().into_owned();
    git(&wt.repo, &["worktree", "remove", "--force", &path])?;
    git(&wt.repo, &["branch", "-D", &wt.branch])?;
    Ok(())
}

/// Uncommitted files and commits since the start, or why they cannot be counted.
pub(crate) fn pending_work(wt: &ActiveWorktree) -> Result<(usize, usize), String> {
    let status = git(&wt.path, &["status", "--porcelain"])?;
    let files = status.lines().filter(|l| !l.trim().is_empty()).count();
    let range = format!("{}..HEAD", wt.base_commit);
    let commits: usize = git(&wt.path, &["rev-list", "--count", &range])?
        .trim()
        .parse()
        .map_err(|e| format!("unexpected output of git rev-list: {e}"))?;
    Ok((files, commits))
}
