//! Integration tests of tools-shell through tool-core's execution path: Bash's execution
//! model (process groups, timeouts, output cap, cwd, exit codes, cancellation), the
//! shell-aware permissions against safety.md §7 rows 1–16 and §6's bypasses, background
//! tasks with TaskOutput and TaskStop, the sandbox under bubblewrap and Landlock and what it
//! contains against an attacker (as root and as an unprivileged user), Monitor.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bash;
mod containment;
#[cfg(feature = "monitor")]
mod monitor;
mod permissions;
mod persistent;
mod sandbox;
mod snapshots;
mod tasks;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;
use tool_core::{
    CallResult, PermissionEngine, PermissionMode, PermissionRule, RuleBehavior, RuleSource,
    RuleSourceKind, SourcedRule, TaskManager, ToolContext, ToolPool,
};
use tools_shell::{SandboxSettings, ShellTasks};

/// A working directory, a state directory and a session context over them.
pub struct Fixture {
    _dir: TempDir,
    /// The working directory (canonical)
    pub root: PathBuf,
    /// The state directory
    pub state: PathBuf,
    /// The session
    pub ctx: ToolContext,
    /// Every tool of the crate
    pub pool: ToolPool,
}

/// Settings for tests that are not about the sandbox: the default policy, degraded to no
/// sandbox where no mechanism exists.
pub fn default_sandbox() -> SandboxSettings {
    SandboxSettings {
        allow_degraded: true,
        ..SandboxSettings::default()
    }
}

impl Default for Fixture {
    fn default() -> Self {
        Self::with(PermissionMode::BypassPermissions, &[], default_sandbox())
    }
}

impl Fixture {
    /// A fixture in bypassPermissions mode with the default sandbox.
    pub fn new() -> Self {
        Self::default()
    }

    /// A fixture with rules written as `("deny", "Bash(rm *)")`.
    pub fn with(mode: PermissionMode, rules: &[(&str, &str)], sandbox: SandboxSettings) -> Self {
        // The persistent bubblewrap sandbox's supervisor (a host binary is its own).
        tools_shell::set_supervisor_program(env!("CARGO_BIN_EXE_agent-tools-sandbox-supervisor"));
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work").canonicalize_or_create();
        let state = dir.path().join("state");
        std::fs::create_dir_all(&state).unwrap();
        let source = RuleSource {
            kind: RuleSourceKind::CliArg,
            file: None,
            root: root.clone(),
        };
        let rules = rules
            .iter()
            .map(|(behavior, text)| SourcedRule {
                rule: PermissionRule::parse(text).unwrap(),
                behavior: match *behavior {
                    "allow" => RuleBehavior::Allow,
                    "deny" => RuleBehavior::Deny,
                    _ => RuleBehavior::Ask,
                },
                source: source.clone(),
            })
            .collect();
        let tasks = Arc::new(ShellTasks::new(&state, sandbox.clone(), vec![root.clone()]));
        let ctx = ToolContext::builder(&root)
            .mode(mode)
            .permissions(
                PermissionEngine::new(rules)
                    .with_bypass_available(mode == PermissionMode::BypassPermissions),
            )
            .state_dir(&state)
            .session_id("test")
            .tasks(Arc::clone(&tasks) as Arc<dyn TaskManager>)
            .service(tasks)
            .service(Arc::new(sandbox))
            .build();
        Fixture {
            _dir: dir,
            root,
            state,
            ctx,
            pool: ToolPool::new(tools_shell::tools()),
        }
    }

    /// Calls a tool.
    pub async fn call(&self, tool: &str, input: Value) -> CallResult {
        self.pool.call(tool, input, &self.ctx).await
    }

    /// Calls Bash with a command.
    pub async fn bash(&self, command: &str) -> CallResult {
        self.call("Bash", serde_json::json!({ "command": command }))
            .await
    }
}

trait CreateDir {
    fn canonicalize_or_create(self) -> PathBuf;
}

impl CreateDir for PathBuf {
    fn canonicalize_or_create(self) -> PathBuf {
        std::fs::create_dir_all(&self).unwrap();
        self.canonicalize().unwrap()
    }
}

/// Processes whose command line contains `marker` (read from /proc, zombies excluded).
pub fn processes_with(marker: &str) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|s| s.trim_start().starts_with('Z'));
        if text.contains(marker) && !zombie && pid != std::process::id() {
            found.push(pid);
        }
    }
    found
}

/// Waits (bounded) until no process carries `marker`; returns the survivors.
pub async fn survivors(marker: &str) -> Vec<u32> {
    for _ in 0..100 {
        let left = processes_with(marker);
        if left.is_empty() {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    processes_with(marker)
}

/// Whether a test that needs `what` should run: true when present; when absent, fails
/// under `AGENT_TOOLS_REQUIRE_PEERS=1` and otherwise prints why it skips.
pub fn require(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    assert!(
        std::env::var("AGENT_TOOLS_REQUIRE_PEERS").as_deref() != Ok("1"),
        "{what} is required (AGENT_TOOLS_REQUIRE_PEERS=1) but not available; run `cargo xtask peers`"
    );
    eprintln!("skipping: {what} is not available");
    false
}

/// A string field of a result's data.
pub fn data_str<'a>(r: &'a CallResult, key: &str) -> &'a str {
    r.data.get(key).and_then(Value::as_str).unwrap_or_default()
}
