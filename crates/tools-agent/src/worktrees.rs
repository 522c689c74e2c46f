//! Git worktrees: `<repo>/.agent-tools/worktrees/<name>` on branch `worktree-<name>`,
//! created from the commit the working directory is at, checked for uncommitted or new
//! commits, and removed with their branch. Git runs as the leader of a process group of its
//! own, awaited without holding a thread, and the group is killed if the call is dropped.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde::Serialize;
use tool_core::ProcessGroup;

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
async fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    let mut command = tokio::process::Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (child, group) =
        ProcessGroup::spawn(&mut command).map_err(|e| format!("cannot run git: {e}"))?;
    let out = child
        .wait_with_output()
        .await
        .map_err(|e| format!("cannot run git: {e}"))?;
    // It exited by itself: a process it detached may stay.
    group.release();
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
/// the commit `cwd` is at; `who` names the caller in errors.
pub(crate) async fn create_worktree(
    cwd: &Path,
    name: &str,
    who: &str,
) -> Result<ActiveWorktree, String> {
    let branch = format!("worktree-{name}");
    let top = git(cwd, &["rev-parse", "--show-toplevel"]).await;
    let repo = PathBuf::from(top.map_err(|_| {
        format!(
            "{who} needs a git repository, and {} is not inside one",
            cwd.display()
        )
    })?);
    let base_commit = git(&repo, &["rev-parse", "HEAD"]).await.map_err(|_| {
        "The repository has no commit yet: commit something before creating a worktree".to_owned()
    })?;
    let path = real_parent(&repo, name)?;
    if std::fs::symlink_metadata(&path).is_ok() {
        return Err(format!(
            "{} already exists: choose another name, or remove it with `git worktree remove`",
            path.display()
        ));
    }
    let shown = path.to_string_lossy().into_owned();
    git(
        &repo,
        &["worktree", "add", "-b", &branch, &shown, &base_commit],
    )
    .await?;
    // Checked out where it was meant to go, through no link put there since.
    let made = tool_core::path::canonicalize_lenient(&path);
    if made != path {
        return Err(format!(
            "the worktree was created at {}, which resolves to {}: a link was put in its path; remove it (`git worktree remove`) and check {}",
            path.display(),
            made.display(),
            repo.join(".agent-tools").display()
        ));
    }
    Ok(ActiveWorktree {
        path: made,
        branch,
        repo,
        base_commit,
        original_cwd: cwd.to_path_buf(),
    })
}

/// The directory a worktree `name` goes into, `<repo>/.agent-tools/worktrees/<name>`, with
/// every directory above it made real: `.agent-tools` is repository content, so a committed
/// link there (`.agent-tools/worktrees -> /elsewhere`) would check the repository out
/// anywhere and move the session there. A link or a file in the way is refused, naming it;
/// missing directories are created (never through a link).
fn real_parent(repo: &Path, name: &str) -> Result<PathBuf, String> {
    let repo = tool_core::path::canonicalize_lenient(repo);
    let mut parts: Vec<&str> = vec![".agent-tools", "worktrees"];
    let segments: Vec<&str> = name.split('/').collect();
    let Some((last, above)) = segments.split_last() else {
        return Err("the worktree name is empty".to_owned());
    };
    parts.extend(above.iter().copied());
    let mut dir = repo.clone();
    for part in parts {
        if part.is_empty() || part == "." || part == ".." {
            return Err(format!(
                "the worktree name {name:?} has an empty, . or .. segment"
            ));
        }
        dir.push(part);
        loop {
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(format!(
                        "{} is a symbolic link: worktrees are created only under real directories of the repository; remove the link (it may be committed) and try again",
                        dir.display()
                    ));
                }
                Ok(meta) if !meta.is_dir() => {
                    return Err(format!(
                        "{} is in the way: it is a file, and worktrees go under it as a directory; move it away and try again",
                        dir.display()
                    ));
                }
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    match std::fs::create_dir(&dir) {
                        // Made here, or by someone else meanwhile: look again.
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(format!("cannot create {}: {e}", dir.display())),
                    }
                }
                Err(e) => return Err(format!("{}: {e}", dir.display())),
            }
        }
    }
    Ok(dir.join(last))
}

/// Deletes a worktree and its branch.
pub(crate) async fn remove_worktree(wt: &ActiveWorktree) -> Result<(), String> {
    let path = wt.path.to_string_lossy().into_owned();
    git(&wt.repo, &["worktree", "remove", "--force", &path]).await?;
    git(&wt.repo, &["branch", "-D", &wt.branch]).await?;
    Ok(())
}

/// Uncommitted files and commits since the start, or why they cannot be counted.
pub(crate) async fn pending_work(wt: &ActiveWorktree) -> Result<(usize, usize), String> {
    let status = git(&wt.path, &["status", "--porcelain"]).await?;
    let files = status.lines().filter(|l| !l.trim().is_empty()).count();
    let range = format!("{}..HEAD", wt.base_commit);
    let commits: usize = git(&wt.path, &["rev-list", "--count", &range])
        .await?
        .trim()
        .parse()
        .map_err(|e| format!("unexpected output of git rev-list: {e}"))?;
    Ok((files, commits))
}
