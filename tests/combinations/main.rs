//! Tests of what crosses crates, in process: a session built through the registry
//! (`build_context`, `ToolRegistry::pool`) and called through its pool, each test combining
//! features that live in different crates — the sandbox with worktrees and plan mode, MCP
//! tools with permission rules, the codex and gemini profiles with the sandbox and
//! protected paths. Assertions look at what was left on disk, in the MCP server's request
//! log and in the process table, not only at the results' text.
//!
//! What needs the `agent-tools` binary (its command line, `serve`, exit codes, one process
//! per call) stays in that crate's end-to-end tests, where `CARGO_BIN_EXE_agent-tools`
//! keeps a stale build from being tested.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod mcp_permissions;
mod profiles_sandbox;
mod worktree_plan;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use registry::{Profile, SessionOptions, ToolRegistry, build_context};
use serde_json::Value;
use tool_core::{
    CallResult, PermissionAnswer, PermissionMode, PermissionPrompter, PermissionRequest,
    ToolContext, ToolPool,
};

/// A session in a temporary project: its context and its pool of built-ins (plus MCP tools
/// when [`Session::with_mcp`] started the project's servers).
pub struct Session {
    _dir: tempfile::TempDir,
    /// The project (the session's first working directory)
    pub root: PathBuf,
    /// The session's state directory
    pub state: PathBuf,
    /// The session
    pub ctx: ToolContext,
    /// Its tools
    pub pool: ToolPool,
    mcp: Option<Arc<registry::mcp::McpManager>>,
}

/// Options for [`Session::new`].
#[derive(Default)]
pub struct Setup<'a> {
    /// Files to create before the session starts: `(relative path, contents)`
    pub files: &'a [(&'a str, &'a str)],
    /// The permission mode (`--mode`)
    pub mode: Option<PermissionMode>,
    /// `--allow` rules
    pub allow: &'a [&'a str],
    /// `--deny` rules
    pub deny: &'a [&'a str],
    /// `--profile`
    pub profile: Option<Profile>,
    /// A git repository with one commit of every file
    pub git: bool,
}

impl Session {
    /// A session over a new project made as `setup` says.
    pub fn new(setup: Setup<'_>) -> Session {
        let (dir, root) = test_support::tempdir();
        let state = root.join(".state-home");
        std::fs::create_dir_all(&state).unwrap();
        let project = root.join("project");
        std::fs::create_dir_all(&project).unwrap();
        for (path, contents) in setup.files {
            let file = project.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, contents).unwrap();
        }
        if setup.git {
            git(&project, &["init", "-q", "-b", "main"]);
            git(&project, &["add", "-A"]);
            git(&project, &["commit", "-qm", "first"]);
        }
        let options = SessionOptions {
            cwd: project.clone(),
            state_dir: Some(state.clone()),
            mode: setup.mode,
            allow: setup.allow.iter().map(|s| s.to_string()).collect(),
            deny: setup.deny.iter().map(|s| s.to_string()).collect(),
            profile: setup.profile,
            ..SessionOptions::default()
        };
        let ctx = build_context(&options).unwrap();
        let pool = ToolRegistry::for_profile(setup.profile.unwrap_or_default())
            .pool(ctx.permissions(), Vec::new());
        Session {
            _dir: dir,
            root: project,
            state,
            ctx,
            pool,
            mcp: None,
        }
    }

    /// Starts the project's approved `.mcp.json` servers and rebuilds the pool with their
    /// tools once they are up.
    pub async fn with_mcp(mut self) -> Session {
        let manager = registry::start_mcp_servers(&self.ctx).unwrap().unwrap();
        assert!(manager.wait_started(None).await.is_empty());
        self.pool = ToolRegistry::for_profile(registry::session_profile(&self.ctx))
            .pool(self.ctx.permissions(), manager.tools());
        self.mcp = Some(manager);
        self
    }

    /// Calls `tool` through the pool, as a model's call would be.
    pub async fn call(&self, tool: &str, input: Value) -> CallResult {
        self.pool.call(tool, input, &self.ctx).await
    }

    /// A person who answers every question `allow` from now on; the questions asked.
    pub fn answer(&self, allow: bool) -> Arc<Approver> {
        let approver = Arc::new(Approver {
            allow,
            asked: Mutex::new(Vec::new()),
        });
        self.ctx
            .services()
            .insert(Arc::clone(&approver) as Arc<dyn PermissionPrompter>);
        approver
    }

    /// Stops the MCP servers the session started.
    pub async fn shutdown(self) {
        if let Some(manager) = &self.mcp {
            manager.shutdown().await;
        }
    }
}

/// Checks that `r` succeeded; `r`.
#[track_caller]
pub fn ok(r: CallResult, what: &str) -> CallResult {
    assert!(!r.is_error, "{what}: expected success, got {r:#?}");
    r
}

/// The plan file an EnterPlanMode result names.
pub fn plan_file(entered: &CallResult) -> PathBuf {
    PathBuf::from(entered.data["planFile"].as_str().unwrap_or_default())
}

/// Checks that `r` failed and says `needle`.
#[track_caller]
pub fn refused(r: &CallResult, needle: &str) {
    assert!(
        r.is_error && r.text().contains(needle),
        "expected an error with {needle:?}, got {r:#?}"
    );
}

/// A permission prompter that answers every question the same way and records them.
pub struct Approver {
    allow: bool,
    /// The reasons of the questions asked, in order
    pub asked: Mutex<Vec<String>>,
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

/// Runs git in `dir` without the user's or the system's configuration; its stdout.
#[track_caller]
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A marker unique to this process and call, for finding a command's processes: a `sleep`
/// of about 30 seconds.
pub fn marker(n: u32) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    format!("30.{}{n}{nanos:09}", std::process::id())
}

/// The live processes (zombies left out) whose command line holds `marker`, each with its
/// `/proc/PID/stat` line.
pub fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().parse::<u32>().is_err() {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(marker) && !stat.contains(") Z ") {
            found.push(stat);
        }
    }
    found
}

/// Waits (at most about twenty seconds, polling) until `done` holds; whether it did.
pub async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    for _ in 0..400 {
        if done() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    done()
}

/// Whether the result of a Bash call ran under bubblewrap or Landlock.
pub fn sandboxed(r: &CallResult) -> bool {
    let mechanism = r.data["sandbox"].as_str().unwrap_or_default();
    mechanism.starts_with("bubblewrap") || mechanism.starts_with("landlock")
}
