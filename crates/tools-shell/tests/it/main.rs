//! Integration tests of tools-shell through tool-core's execution path: Bash's execution
//! model (process groups, timeouts, output cap, cwd, exit codes, cancellation), the
//! shell-aware permissions against the known ways around a rule (see permissions.rs),
//! background tasks with TaskOutput and TaskStop, the sandbox under bubblewrap and Landlock
//! and what it contains against an attacker, Monitor, and the lifecycle guarantees (planted
//! links, capped output, no survivors, bounded instances), as root and as an unprivileged
//! user.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod attacks;
mod bash;
mod containment;
mod jail;
mod lifecycle;
#[cfg(feature = "monitor")]
mod monitor;
mod permissions;
mod persistent;
mod sandbox;
mod snapshots;
mod supervisor;
mod tasks;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tempfile::TempDir;
use tool_core::{
    CallResult, PermissionAnswer, PermissionEngine, PermissionMode, PermissionPrompter,
    PermissionRequest, PermissionRule, RuleBehavior, RuleSource, RuleSourceKind, SourcedRule,
    TaskManager, ToolContext, ToolPool,
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
        // The supervisor of commands (a host binary is its own); a child run that tests the
        // embedding without one leaves it out.
        if std::env::var_os(NO_SUPERVISOR_VAR).is_none() {
            // A child run as another user gets a copy it can reach (the build directory may
            // sit under a home only its owner can search).
            match std::env::var_os(SUPERVISOR_COPY_VAR) {
                Some(copy) => tools_shell::set_supervisor_program(copy),
                None => tools_shell::set_supervisor_program(env!(
                    "CARGO_BIN_EXE_agent-tools-sandbox-supervisor"
                )),
            }
        }
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

/// Installs a person who approves every request to leave the sandbox (and refuses anything
/// else); returns how many times they were asked.
pub fn approve_unsandboxed(ctx: &ToolContext) -> Arc<std::sync::atomic::AtomicUsize> {
    struct Approve(Arc<std::sync::atomic::AtomicUsize>);
    #[async_trait::async_trait]
    impl PermissionPrompter for Approve {
        async fn ask(&self, request: &PermissionRequest) -> PermissionAnswer {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            if request.kind == tool_core::AskKind::Unsandboxed {
                PermissionAnswer::Allow
            } else {
                PermissionAnswer::Deny(None)
            }
        }
    }
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let prompter: Arc<dyn PermissionPrompter> = Arc::new(Approve(Arc::clone(&count)));
    ctx.services().insert(prompter);
    count
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
    // The test fails; kill what is left so it does not fail the next run too.
    let left = processes_with(marker);
    for p in &left {
        let _ = std::process::Command::new("kill")
            .args(["-9", &p.to_string()])
            .status();
    }
    left
}

/// Whether a test that needs `what` should run: true when present; when absent, fails
/// under `AGENT_TOOLS_REQUIRE_PEERS=1` and otherwise prints why it skips.
pub use test_support::peers::require;

/// A string field of a result's data.
pub fn data_str<'a>(r: &'a CallResult, key: &str) -> &'a str {
    r.data.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Set in a child run (see [`in_child`]) that must not register a supervisor program.
pub const NO_SUPERVISOR_VAR: &str = "AGENT_TOOLS_TEST_NO_SUPERVISOR";

/// Tells a child run of this binary which test it runs.
const CHILD_VAR: &str = "AGENT_TOOLS_TEST_CHILD";

/// Where a child run as another user finds its copy of the supervisor program.
pub const SUPERVISOR_COPY_VAR: &str = "AGENT_TOOLS_TEST_SUPERVISOR";

/// Who runs a test in a child process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum User {
    /// The user running the tests
    Same,
    /// An unprivileged user: `nobody` (65534) when the tests run as root, else the user
    /// running them (who is unprivileged already)
    Nobody,
}

/// For a test that needs a process of its own (process-wide settings) or an unprivileged
/// user: in the child run of test `name` this returns true (run the test's body);
/// otherwise it runs this binary again for that one test, as `user` and with `env`,
/// asserts that it passed, and returns false.
pub fn in_child(name: &str, user: User, env: &[(&str, &str)]) -> bool {
    if std::env::var(CHILD_VAR).as_deref() == Ok(name) {
        return true;
    }
    let exe = std::env::current_exe().unwrap();
    let root = rustix::process::geteuid().is_root();
    let setpriv = ["/usr/bin/setpriv", "/bin/setpriv"]
        .into_iter()
        .map(Path::new)
        .find(|p| p.is_file());
    let mut home = None;
    let mut cmd = match (user, root) {
        (User::Nobody, true) => {
            let Some(setpriv) = setpriv else {
                require("setpriv (util-linux), to run a test as user nobody", false);
                return false;
            };
            // A home of its own that nobody can write, holding a copy of the supervisor
            // program nobody can reach.
            let dir = tempfile::tempdir().unwrap();
            std::os::unix::fs::chown(dir.path(), Some(65534), Some(65534)).unwrap();
            let supervisor = dir.path().join("agent-tools-sandbox-supervisor");
            std::fs::copy(
                env!("CARGO_BIN_EXE_agent-tools-sandbox-supervisor"),
                &supervisor,
            )
            .unwrap();
            let mut cmd = std::process::Command::new(setpriv);
            cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
                .arg(&exe)
                .env("HOME", dir.path())
                .env(SUPERVISOR_COPY_VAR, &supervisor);
            home = Some(dir);
            cmd
        }
        _ => std::process::Command::new(&exe),
    };
    cmd.args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, name)
        .envs(env.iter().copied())
        .current_dir("/");
    let out = cmd.output().unwrap();
    drop(home);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the child run of {name} ({user:?}) failed:\n{stdout}\n{stderr}"
    );
    false
}

/// Like [`in_child`] as the same user, for a test that also checks what the child printed:
/// in the child run of test `name` this returns `None` (run the test's body); otherwise it
/// runs this binary again for that one test with `env`, asserts that it passed, and returns
/// its stderr.
pub fn child_stderr(name: &str, env: &[(&str, &str)]) -> Option<String> {
    if std::env::var(CHILD_VAR).as_deref() == Ok(name) {
        return None;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, name)
        .envs(env.iter().copied())
        .current_dir("/")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the child run of {name} failed:\n{stdout}\n{stderr}"
    );
    Some(stderr)
}

/// Live processes whose parent is `parent` and whose command name is `comm`.
pub fn children_named(parent: u32, comm: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            let Some((head, rest)) = stat.rsplit_once(')') else {
                return false;
            };
            let name = head.split_once('(').map(|(_, n)| n).unwrap_or("");
            let mut f = rest.split_whitespace();
            let state = f.next().unwrap_or("Z");
            let ppid: u32 = f.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            name == comm && ppid == parent && state != "Z"
        })
        .collect()
}
