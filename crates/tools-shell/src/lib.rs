//! Shell tools for agent-tools: Bash with background tasks, a sandbox and shell-aware
//! permissions; TaskOutput and TaskStop; Monitor behind the `monitor` feature.
//!
//! # Overview
//!
//! - [`Bash`] runs `bash -c COMMAND` (the command is one argument, never quoted into a
//!   string) in its own process group, stdin closed, stdout and stderr interleaved into one
//!   output file; the working directory persists across calls; timeouts and cancellation
//!   kill the whole group (SIGTERM, a grace period, SIGKILL) and reap it; the model reads at
//!   most 30,000 characters and the whole output stays in a file.
//! - [`ShellTasks`] is the background task manager (tool-core's [`tool_core::TaskManager`]):
//!   `run_in_background` commands (with readiness conditions: a regex on the output or a
//!   TCP port on 127.0.0.1), Monitor commands, and futures of other crates (background
//!   agents). [`TaskOutput`] and [`TaskStop`] work on every kind.
//! - Permissions parse the command with tree-sitter-bash into simple commands and match
//!   `Bash(...)` rules against each ([`check_command`]); the read-only classification
//!   ([`is_read_only_command`]) decides auto-approval and concurrency.
//! - The [`SandboxSettings`] (the settings' `sandbox` section, and the session's Read deny
//!   rules) select a policy enforced with bubblewrap, or Landlock and seccomp when
//!   bubblewrap is missing; see [`prepare_sandbox`]. Inside, a command holds no capability,
//!   runs under a seccomp filter (no mount, namespace, ptrace, keyring, bpf, module or
//!   reboot call), cannot create, replace or rename a protected name (existing or not: a
//!   missing one is bound over a placeholder), reaches no host network or host Unix socket
//!   while the network is off, and cannot read what Read deny rules and the credential
//!   defaults ([`SECRETS`]) hide. What holds under each mechanism, and where it stops, is in
//!   `docs/sandbox.md`.
//!
//! # The persistent sandbox
//!
//! Starting bubblewrap costs several milliseconds, more than a short command. So foreground
//! Bash calls of a session share one bubblewrap instance per policy ([`sandbox_instance`]
//! shows it): a small supervisor inside it spawns each command into a process group of its
//! own (see the `supervisor` and `inside` modules). The supervisor is the host binary run
//! again inside bubblewrap: a host calls [`sandbox_supervisor_entry`] first thing in `main`
//! (agent-tools does), or names a program with [`set_supervisor_program`]; without one,
//! each foreground command gets a bubblewrap of its own. The instance is started on first
//! use, started anew when the policy changes (mode, network, writable roots, a protected
//! or hidden path that appeared, a bound path replaced outside) or when it died, and it
//! ends with the session (its pipe closes, bubblewrap is killed, `--die-with-parent` covers
//! this process dying; the placeholders it bound are removed). Background commands and
//! Monitor keep a sandbox of their own. The supervisor runs under the seccomp filter, which
//! the host binary applies to itself before it becomes the supervisor ([`EXEC_ARG`]).
//!
//! Sharing the instance is as safe as one instance per call:
//! - Every command gets the same mounts, namespaces and network policy it would have had
//!   alone; a policy change never reuses an instance.
//! - Nothing a command starts outlives it: its process group is signalled when its leader
//!   exits (TERM, the grace period, KILL), and when no command of the session runs the
//!   supervisor kills every other process in the sandbox's pid namespace, which catches
//!   what left the group (`setsid`, double forks) — what a per-call sandbox's teardown did.
//!   Concurrent read-only calls share that moment: an escaped process lives at most until
//!   the last of them ends.
//! - The supervisor holds no state a command can change: it is another process, commands
//!   get stdin from `/dev/null` and neither of its pipes, and it runs each command with a
//!   fresh `bash -c`. Files are as without sharing: `/tmp` in the sandbox is the host's
//!   (a writable root under workspace-write, read-only otherwise), so what a command leaves
//!   there is what it would have left with a sandbox per call.
//! - The difference: the session's slot directory (output and working-directory files of
//!   the calls in flight) is bound writable for every command, where a per-call sandbox
//!   bound only the call's own files. A command can write another running call's output or
//!   working-directory file in the same session — data the same sandboxed model could write
//!   through its own command anyway; the working directory read back is still checked to be
//!   inside the working directories. The start-up code every command runs travels in
//!   bash's arguments, not in a file, so no command can rewrite what the next ones run first
//!   (a shared file in the temporary directory was writable under Landlock).
//! - Kills go through the supervisor (the sandbox has its own pid namespace, which is kept:
//!   without it `/proc/PID/root` of the user's other processes would lead out of the
//!   sandbox). If the supervisor does not answer, the instance is killed, and its pid
//!   namespace with it.
//!
//! # Deviations from the reference and known limits
//!
//! - The timeout is clamped to 600 s (the reference does not clamp), and a timed-out command
//!   is killed, not moved to the background.
//! - Commands tree-sitter-bash cannot parse are refused, not run; this includes the rare
//!   read-write redirection `<>`.
//! - Under Landlock (no bubblewrap), a working directory, and a writable root that holds
//!   protected or hidden paths, are granted entry by entry, because Landlock rules only add
//!   access: new entries can be created in their subdirectories but not directly in them
//!   (which is what keeps a missing protected name from being created), and `git commit`
//!   cannot create `.git/index.lock`.
//! - With the network off, no Unix socket can be created inside the sandbox (so no host
//!   Unix socket can be reached): a program that needs one of its own needs
//!   `sandbox.network: true`. Under bubblewrap the sandbox's own loopback works; under
//!   Landlock no socket can be created at all.
//! - While a sandbox binds them, placeholders for missing protected names exist on the host
//!   (a `.mcp.json` without servers, an empty `.gitmodules`, empty `.git/`, `.claude/`...
//!   directories): `git status` lists the files as untracked meanwhile. `git init` at the
//!   top of a working directory fails inside the sandbox.
//! - A foreground command in the persistent bubblewrap sandbox costs about what an
//!   unsandboxed one does: a `posix_spawn` of `bash -c` by the supervisor and two short
//!   messages on its pipes (see `cargo xtask bench bash-200`). The persistent sandbox needs
//!   pidfds (Linux 5.3).
//! - With the network off, a background server's port lives in the sandbox's own network
//!   namespace (bubblewrap) or cannot be bound (Landlock), so `ready_port` needs
//!   `sandbox.network: true`.
//!
//! # Example
//!
//! ```
//! use serde_json::json;
//! use tool_core::{PermissionMode, ToolContext, ToolPool};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let dir = tempfile::tempdir()?;
//! let ctx = ToolContext::builder(dir.path())
//!     .mode(PermissionMode::BypassPermissions)
//!     .state_dir(dir.path().join("state"))
//!     .service(std::sync::Arc::new(tools_shell::SandboxSettings {
//!         allow_degraded: true,
//!         ..Default::default()
//!     }))
//!     .build();
//! let pool = ToolPool::new(tools_shell::tools());
//! let result = pool.call("Bash", json!({"command": "echo \"$((6 * 7))\""}), &ctx).await;
//! assert_eq!(result.text(), "42");
//! // Status 1 of grep means "no match", not failure.
//! let result = pool.call("Bash", json!({"command": "echo a | grep b"}), &ctx).await;
//! assert!(!result.is_error);
//! # Ok(())
//! # }
//! ```

mod bash;
#[cfg(target_os = "linux")]
mod filter;
#[cfg(target_os = "linux")]
mod inside;
#[cfg(target_os = "linux")]
mod landlock;
mod mask;
#[cfg(feature = "monitor")]
mod monitor;
mod output;
mod parse;
mod permissions;
#[cfg(target_os = "linux")]
mod placeholder;
mod process;
mod protect;
mod readonly;
mod sandbox;
mod session;
#[cfg(target_os = "linux")]
mod supervisor;
mod task_tools;
mod tasks;

use std::sync::Arc;

pub use bash::{
    Bash, BashInput, BashOutput, DEFAULT_READY_TIMEOUT, DEFAULT_TIMEOUT, MAX_TIMEOUT,
    interpret_exit,
};
#[cfg(target_os = "linux")]
pub use inside::{SUPERVISOR_ARG, sandbox_supervisor_entry, set_supervisor_program};
#[cfg(feature = "monitor")]
pub use monitor::{MONITOR_LIMIT, Monitor, MonitorInput, MonitorOutput};
pub use output::MAX_OUTPUT_CHARS;
pub use parse::{ParseError, Redirect, Script, SimpleCommand, Word, parse as parse_command};
pub use permissions::{MAX_SUBCOMMANDS, check as check_command, is_read_only};
pub use process::KILL_GRACE;
pub use readonly::is_read_only_command;
pub use sandbox::{
    DenyRead, EXEC_ARG, Launch, Mask, Mechanism, Prepared, SECRETS, SandboxMode, SandboxPolicy,
    SandboxSettings, bubblewrap, landlock_available, prepare as prepare_sandbox,
};
pub use session::{SandboxInstance, sandbox_instance};
pub use task_tools::{
    TASK_OUTPUT_CHARS, TaskOutput, TaskOutputData, TaskOutputInput, TaskStop, TaskStopData,
    TaskStopInput,
};
pub use tasks::{Readiness, ReadyOutcome, ShellTaskSpec, ShellTasks};

/// Elsewhere there is no persistent sandbox to supervise.
#[cfg(not(target_os = "linux"))]
pub fn sandbox_supervisor_entry() -> Option<std::process::ExitCode> {
    None
}

/// Every tool of this crate compiled in, ready for a pool: Bash and TaskOutput, plus
/// TaskStop with the `task-stop` feature and Monitor with `monitor`.
pub fn tools() -> Vec<Arc<dyn tool_core::Tool>> {
    #[allow(unused_mut)]
    let mut tools: Vec<Arc<dyn tool_core::Tool>> = vec![
        Arc::new(tool_core::Typed::new(Bash)),
        Arc::new(tool_core::Typed::new(TaskOutput)),
    ];
    #[cfg(feature = "task-stop")]
    tools.push(Arc::new(tool_core::Typed::new(TaskStop)));
    #[cfg(feature = "monitor")]
    tools.push(Arc::new(tool_core::Typed::new(Monitor)));
    tools
}
