//! Git worktrees: `<repo>/.agent-tools/worktrees/<name>` on branch `worktree-<name>`,
//! created from the commit the project's repository is at, checked for uncommitted or new
//! commits, and removed with their branch. Git runs hardened (tool-core's [`HardenedGit`]:
//! no hook, fsmonitor, filter or other program a repository names runs) and only for the
//! project's own repository: it starts at the session's project root, never in a directory a
//! command moved to, and a working directory inside another repository nested in the
//! project is refused. A worktree's checks name its git directory outright, so nothing
//! inside the worktree chooses the repository.

use std::path::{Path, PathBuf};

use serde::Serialize;
use tool_core::{HardenedGit, ToolError, linked_worktree, nested_repository};

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
    /// The worktree's administrative directory in the repository (`.git/worktrees/<id>`)
    #[serde(skip)]
    pub git_dir: PathBuf,
}

/// Creates `<repo>/.agent-tools/worktrees/<name>` on a new branch `worktree-<name>` from
/// the commit the repository of `project` (the session's project root) is at; `cwd` (the
/// session's working directory) must lie in that repository, not in another one nested in
/// it. `who` names the caller in errors.
pub(crate) async fn create_worktree(
    project: &Path,
    cwd: &Path,
    name: &str,
    who: &str,
) -> Result<ActiveWorktree, ToolError> {
    let branch = format!("worktree-{name}");
    let git = HardenedGit::at(project);
    let top = git.text(&["rev-parse", "--show-toplevel"]).await;
    let repo = tool_core::path::canonicalize_lenient(Path::new(&top.map_err(|_| {
        ToolError::respond(format!(
            "{who} needs a git repository, and the project {} is not inside one",
            project.display()
        ))
    })?));
    let here = tool_core::path::canonicalize_lenient(cwd);
    if let Some(nested) = nested_repository(&here, &repo) {
        return Err(ToolError::respond(if here.starts_with(&repo) {
            format!(
                "{who} works only in the project's own repository ({}), and the working directory {} is inside another repository ({}): change back into the project (cd {}) and try again",
                repo.display(),
                here.display(),
                nested.join(".git").display(),
                repo.display()
            )
        } else {
            format!(
                "{who} works only in the project's own repository ({}), and the working directory {} is outside it: change back into the project (cd {}) and try again",
                repo.display(),
                here.display(),
                repo.display()
            )
        }));
    }
    let git = HardenedGit::at(&repo);
    let base_commit = git.text(&["rev-parse", "HEAD"]).await.map_err(|_| {
        ToolError::respond(
            "The repository has no commit yet: commit something before creating a worktree",
        )
    })?;
    let common = git
        .text(&["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .await
        .map_err(ToolError::respond)?;
    let path = real_parent(&repo, name)?;
    if std::fs::symlink_metadata(&path).is_ok() {
        return Err(ToolError::respond(format!(
            "{} already exists: choose another name, or remove it with `git worktree remove`",
            path.display()
        )));
    }
    let shown = path.to_string_lossy().into_owned();
    git.text(&["worktree", "add", "-b", &branch, &shown, &base_commit])
        .await
        .map_err(ToolError::respond)?;
    // Checked out where it was meant to go, through no link put there since.
    let made = tool_core::path::canonicalize_lenient(&path);
    if made != path {
        return Err(ToolError::respond(format!(
            "the worktree was created at {}, which resolves to {}: a link was put in its path; remove it (`git worktree remove`) and check {}",
            path.display(),
            made.display(),
            repo.join(".agent-tools").display()
        )));
    }
    let git_dir = linked_worktree(Path::new(&common), &made).ok_or_else(|| {
        ToolError::respond(format!(
            "git created the worktree {}, but its entry under {}/worktrees was not found: remove it with `git worktree remove --force {}`",
            made.display(),
            common,
            made.display()
        ))
    })?;
    Ok(ActiveWorktree {
        path: made,
        branch,
        repo,
        base_commit,
        original_cwd: cwd.to_path_buf(),
        git_dir,
    })
}

/// The directory a worktree `name` goes into, `<repo>/.agent-tools/worktrees/<name>`, with
/// every directory above it made real: `.agent-tools` is repository content, so a committed
/// link there (`.agent-tools/worktrees -> /elsewhere`) would check the repository out
/// anywhere and move the session there. A link or a file in the way is refused, naming it;
/// missing directories are created (never through a link).
fn real_parent(repo: &Path, name: &str) -> Result<PathBuf, ToolError> {
    let repo = tool_core::path::canonicalize_lenient(repo);
    let mut parts: Vec<&str> = vec![".agent-tools", "worktrees"];
    let segments: Vec<&str> = name.split('/').collect();
    let Some((last, above)) = segments.split_last() else {
        return Err(ToolError::respond("the worktree name is empty"));
    };
    parts.extend(above.iter().copied());
    let mut dir = repo.clone();
    for part in parts {
        if part.is_empty() || part == "." || part == ".." {
            return Err(ToolError::respond(format!(
                "the worktree name {name:?} has an empty, . or .. segment"
            )));
        }
        dir.push(part);
        loop {
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(ToolError::respond(format!(
                        "{} is a symbolic link: worktrees are created only under real directories of the repository; remove the link (it may be committed) and try again",
                        dir.display()
                    )));
                }
                Ok(meta) if !meta.is_dir() => {
                    return Err(ToolError::respond(format!(
                        "{} is in the way: it is a file, and worktrees go under it as a directory; move it away and try again",
                        dir.display()
                    )));
                }
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    match std::fs::create_dir(&dir) {
                        // Made here, or by someone else meanwhile: look again.
                        Ok(()) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                        Err(e) => return Err(ToolError::io(&dir, e)),
                    }
                }
                Err(e) => return Err(ToolError::io(&dir, e)),
            }
        }
    }
    Ok(dir.join(last))
}

/// Deletes a worktree and its branch.
pub(crate) async fn remove_worktree(wt: &ActiveWorktree) -> Result<(), ToolError> {
    let path = wt.path.to_string_lossy().into_owned();
    let git = HardenedGit::at(&wt.repo);
    git.text(&["worktree", "remove", "--force", &path])
        .await
        .map_err(ToolError::respond)?;
    git.text(&["branch", "-D", &wt.branch])
        .await
        .map_err(ToolError::respond)?;
    Ok(())
}

/// Uncommitted files and commits since the start, or why they cannot be counted.
pub(crate) async fn pending_work(wt: &ActiveWorktree) -> Result<(usize, usize), ToolError> {
    let git = HardenedGit::with_git_dir(&wt.git_dir, &wt.path);
    let status = git
        .text(&["status", "--porcelain", "--ignore-submodules=all"])
        .await
        .map_err(ToolError::respond)?;
    let files = status.lines().filter(|l| !l.trim().is_empty()).count();
    let range = format!("{}..HEAD", wt.base_commit);
    let commits: usize = git
        .text(&["rev-list", "--count", &range])
        .await
        .map_err(ToolError::respond)?
        .trim()
        .parse()
        .map_err(|e| ToolError::respond(format!("unexpected output of git rev-list: {e}")))?;
    Ok((files, commits))
}
