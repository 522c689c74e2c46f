//! EnterWorktree and ExitWorktree: a real `git worktree` under
//! `<repo>/.agent-tools/worktrees/<name>` on branch `worktree-<name>`, with the session's
//! working directory switched into it and back.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    PermissionDecision, ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult, TypedTool,
    ValidationResult,
};

use crate::stores::git_worktrees::{
    ActiveWorktree, create_worktree, pending_work, remove_worktree,
};
use crate::stores::state::session;

/// The longest worktree name.
pub const MAX_WORKTREE_NAME: usize = 64;
/// EnterWorktree while one is active.
pub const ALREADY_IN_WORKTREE: &str = "Already in a worktree session";
/// ExitWorktree without an active worktree (validation error code 1).
pub const NO_WORKTREE_SESSION: &str = "No-op: there is no active EnterWorktree session to exit. This tool only acts on worktrees created by EnterWorktree in the current session; it does not touch worktrees created any other way.";

/// Checks a worktree name: `/`-separated segments of `[A-Za-z0-9._-]`, at most 64 characters.
pub(crate) fn check_worktree_name(name: &str) -> Result<(), String> {
    if name.chars().count() > MAX_WORKTREE_NAME {
        return Err(format!(
            "Invalid worktree name \"{name}\": at most {MAX_WORKTREE_NAME} characters"
        ));
    }
    for segment in name.split('/') {
        if segment.is_empty()
            || segment == "."
            || segment == ".."
            || !segment
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        {
            return Err(format!(
                "Invalid worktree name \"{name}\": each \"/\"-separated part must be non-empty letters, digits, \".\", \"_\" or \"-\" (and not \".\" or \"..\")"
            ));
        }
    }
    Ok(())
}

fn random_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() ^ (d.as_secs() as u32))
        .unwrap_or(0);
    format!("wt-{:08x}", nanos ^ std::process::id().rotate_left(16))
}

/// Input of EnterWorktree.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnterWorktreeInput {
    /// A name for the worktree ("/"-separated parts of letters, digits, ".", "_", "-"; at
    /// most 64 characters); a random one when omitted
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub name: Option<String>,
}

/// The EnterWorktree tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnterWorktree;

#[async_trait]
impl TypedTool for EnterWorktree {
    type Input = EnterWorktreeInput;
    type Output = ActiveWorktree;
    const META: ToolMeta = ToolMeta::new("EnterWorktree")
        .describe("Create an isolated git worktree for this session and switch the session into it: a new checkout of the current commit under .agent-tools/worktrees/<name> on a new branch worktree-<name>, so you can change files without touching the user's working tree. Use it only when the user asks for a worktree or isolated work. Leave with ExitWorktree (keep or remove it).")
        .hint("work in an isolated git worktree")
        .category(ToolCategory::Worktree)
        .deferred();

    async fn validate(&self, input: &EnterWorktreeInput, ctx: &ToolContext) -> ValidationResult {
        if session(ctx).worktree.lock().is_ok_and(|w| w.is_some()) {
            return ValidationResult::invalid(ALREADY_IN_WORKTREE);
        }
        if let Some(name) = &input.name
            && let Err(message) = check_worktree_name(name)
        {
            return ValidationResult::invalid(message);
        }
        ValidationResult::Valid
    }
    async fn call(
        &self,
        input: EnterWorktreeInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<ActiveWorktree>, ToolError> {
        let name = input.name.unwrap_or_else(random_name);
        let cwd = ctx.cwd();
        let created = create_worktree(ctx.original_cwd(), &cwd, &name, "EnterWorktree").await?;
        let state = session(ctx);
        if let Ok(mut slot) = state.worktree.lock() {
            *slot = Some(created.clone());
        }
        ctx.set_cwd(&created.path);
        let text = format!(
            "Created worktree at {} on branch {}. The session is now working in the worktree. Use ExitWorktree to leave mid-session, or stay in it until the work is done.",
            created.path.display(),
            created.branch
        );
        Ok(ToolResult::ok(created).with_text(text))
    }
}

/// What ExitWorktree does with the worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExitAction {
    /// Leave it on disk with its branch
    Keep,
    /// Delete the directory and the branch
    Remove,
}

/// Input of ExitWorktree.
///
/// # JSON names
///
/// Every field's JSON name is its Rust name.
///
/// `action` takes the [`ExitAction`] variants in lower case.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExitWorktreeInput {
    /// "keep" leaves the worktree and its branch; "remove" deletes both
    pub action: ExitAction,
    /// With "remove": delete even uncommitted files and commits not in the starting commit
    #[serde(default)]
    pub discard_changes: Option<bool>,
}

/// Output of ExitWorktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitWorktreeOutput {
    /// What was done
    pub action: ExitAction,
    /// The worktree
    pub worktree: ActiveWorktree,
    /// Uncommitted files discarded (with remove)
    pub discarded_files: usize,
    /// Commits discarded (with remove)
    pub discarded_commits: usize,
}

/// The ExitWorktree tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExitWorktree;

fn active(ctx: &ToolContext) -> Option<ActiveWorktree> {
    session(ctx).worktree.lock().ok().and_then(|w| w.clone())
}

#[async_trait]
impl TypedTool for ExitWorktree {
    type Input = ExitWorktreeInput;
    type Output = ExitWorktreeOutput;
    const META: ToolMeta = ToolMeta::new("ExitWorktree")
        .describe("Leave the worktree EnterWorktree created in this session and return to the original working directory. `action: \"keep\"` leaves the worktree and its branch on disk; `action: \"remove\"` deletes both, and refuses when there are uncommitted files or new commits unless `discard_changes` is true. It does nothing to worktrees this session did not create.")
        .hint("leave the session's git worktree")
        .category(ToolCategory::Worktree)
        .deferred();

    fn is_read_only(&self, input: &ExitWorktreeInput) -> bool {
        input.action == ExitAction::Keep
    }
    async fn validate(&self, _input: &ExitWorktreeInput, ctx: &ToolContext) -> ValidationResult {
        if active(ctx).is_none() {
            return ValidationResult::invalid_code(NO_WORKTREE_SESSION, 1);
        }
        ValidationResult::Valid
    }
    async fn check_permission(
        &self,
        input: &ExitWorktreeInput,
        ctx: &ToolContext,
    ) -> PermissionDecision {
        // Throwing work away is the one destructive case: a person confirms it.
        match (input.action, input.discard_changes, active(ctx)) {
            (ExitAction::Remove, Some(true), Some(wt)) => PermissionDecision::ask(
                format!(
                    "Remove worktree {} and discard its changes?",
                    wt.path.display()
                ),
                None,
            ),
            _ => PermissionDecision::Allow,
        }
    }
    async fn call(
        &self,
        input: ExitWorktreeInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<ExitWorktreeOutput>, ToolError> {
        let wt = active(ctx).ok_or_else(|| ToolError::respond(NO_WORKTREE_SESSION))?;
        let discard = input.discard_changes.unwrap_or(false);
        let (files, commits) = if input.action == ExitAction::Remove {
            let (files, commits) = pending_work(&wt).await.map_err(|e| {
                ToolError::respond(format!(
                    "Could not verify the state of the worktree at {} ({e}), so it was not removed. Use action \"keep\", or check it yourself.",
                    wt.path.display()
                ))
            })?;
            if (files > 0 || commits > 0) && !discard {
                return Err(ToolError::respond(format!(
                    "Worktree has {files} uncommitted file(s) and {commits} commit(s) on {} that are not in the starting commit. Commit and merge them first, use action \"keep\" to preserve the worktree, or set discard_changes: true to delete them.",
                    wt.branch
                )));
            }
            remove_worktree(&wt).await?;
            (files, commits)
        } else {
            (0, 0)
        };
        if let Ok(mut slot) = session(ctx).worktree.lock() {
            *slot = None;
        }
        ctx.set_cwd(&wt.original_cwd);
        let text = match input.action {
            ExitAction::Keep => format!(
                "Exited worktree. Your work is preserved at {} on branch {}. The session is back in {}.",
                wt.path.display(),
                wt.branch,
                wt.original_cwd.display()
            ),
            ExitAction::Remove => {
                let mut t = format!(
                    "Exited and removed worktree at {} (branch {} deleted). The session is back in {}.",
                    wt.path.display(),
                    wt.branch,
                    wt.original_cwd.display()
                );
                if files + commits > 0 {
                    t.push_str(&format!(
                        " Discarded {files} uncommitted file(s) and {commits} commit(s)."
                    ));
                }
                t
            }
        };
        Ok(ToolResult::ok(ExitWorktreeOutput {
            action: input.action,
            worktree: wt,
            discarded_files: files,
            discarded_commits: commits,
        })
        .with_text(text))
    }
}
