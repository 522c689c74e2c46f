//! Integration tests of tools-agent through tool-core's execution path (`ToolPool`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent;
mod aliases_and_deferral;
mod ask_user_question;
mod config;
mod continuation;
mod cron;
mod plan_mode;
mod search;
mod send_user_message;
mod skill;
mod tasks;
mod team;
mod teammates;
mod todo_write;
mod worktree;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;
use tempfile::TempDir;
use tool_core::{
    CallResult, PermissionAnswer, PermissionMode, PermissionPrompter, PermissionRequest,
    ToolContext, ToolPool,
};

/// A project directory plus a separate state directory.
pub(crate) struct Fixture {
    _dir: TempDir,
    pub(crate) root: PathBuf,
    pub(crate) state: PathBuf,
}

impl Fixture {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir
            .path()
            .join("project")
            .canonicalize()
            .unwrap_or_else(|_| {
                std::fs::create_dir_all(dir.path().join("project")).unwrap();
                dir.path().join("project").canonicalize().unwrap()
            });
        let state = dir.path().join("state");
        Fixture {
            _dir: dir,
            root,
            state,
        }
    }

    pub(crate) fn ctx(&self) -> ToolContext {
        self.builder().build()
    }

    pub(crate) fn builder(&self) -> tool_core::ToolContextBuilder {
        ToolContext::builder(&self.root)
            .state_dir(&self.state)
            .session_id("test-session")
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Records a person's approval of every skill, agent and cron file of the project as
    /// they are now (what `agent-tools trust` does), so their widening keys apply.
    pub(crate) fn approve_project(&self) {
        let store = tool_core::TrustStore::in_state_dir(&self.state);
        for file in tools_agent::review_project_definitions(&self.root, &self.state) {
            store.approve(&self.root, &file.name, &file.sha256).unwrap();
        }
    }
}

/// Runs git in `dir`, asserting it succeeds; its trimmed standard output.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A fixture whose project is a git repository with one commit (of `a.txt`) on `main`.
pub(crate) fn git_repo() -> Fixture {
    let f = Fixture::new();
    git(&f.root, &["init", "-q", "-b", "main"]);
    git(&f.root, &["config", "user.email", "t@example.com"]);
    git(&f.root, &["config", "user.name", "T"]);
    std::fs::write(f.path("a.txt"), "a\n").unwrap();
    git(&f.root, &["add", "."]);
    git(&f.root, &["commit", "-q", "-m", "init"]);
    f
}

pub(crate) fn pool() -> ToolPool {
    ToolPool::new(tools_agent::tools())
}

pub(crate) async fn call(ctx: &ToolContext, tool: &str, input: Value) -> CallResult {
    pool().call(tool, input, ctx).await
}

/// Asserts an error result whose text contains `needle`.
#[track_caller]
pub(crate) fn assert_error(result: &CallResult, needle: &str) {
    assert!(result.is_error, "expected an error, got {}", result.text());
    assert!(
        result.text().contains(needle),
        "expected {needle:?} in {}",
        result.text()
    );
}

/// A permission prompter that answers every ask the same way and records the reasons.
pub(crate) struct Approver {
    pub(crate) allow: bool,
    pub(crate) asked: std::sync::Mutex<Vec<String>>,
}

#[async_trait]
impl PermissionPrompter for Approver {
    async fn ask(&self, request: &PermissionRequest) -> PermissionAnswer {
        self.asked.lock().unwrap().push(request.reason.clone());
        if self.allow {
            PermissionAnswer::Allow
        } else {
            PermissionAnswer::Deny(None)
        }
    }
}

pub(crate) fn approver(allow: bool) -> Arc<Approver> {
    Arc::new(Approver {
        allow,
        asked: std::sync::Mutex::new(Vec::new()),
    })
}

pub(crate) fn with_prompter(
    f: &Fixture,
    prompter: Arc<Approver>,
    mode: PermissionMode,
) -> ToolContext {
    f.builder()
        .mode(mode)
        .service(prompter as Arc<dyn PermissionPrompter>)
        .build()
}
