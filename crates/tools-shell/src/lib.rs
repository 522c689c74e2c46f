//! Shell tools for agent-tools: Bash with background tasks, a sandbox and shell-aware
//! permissions; TaskOutput and TaskStop; Monitor behind the `monitor` feature.
//!
//! # Overview
//!
//! - [`Bash`] runs `bash -c COMMAND` (the command is one argument, never quoted into a
//!   string) in its own process group, stdin closed, stdout and stderr interleaved into one
//!   pipe; the working directory persists across calls; timeouts and cancellation kill the
//!   whole group (SIGTERM, a grace period, SIGKILL) and reap it; the model reads at most
//!   30,000 characters and the output stays in a file, capped at [`OUTPUT_CAP`].
//! - [`ShellTasks`] is the background task manager (tool-core's [`tool_core::TaskManager`]):
//!   `run_in_background` commands (with readiness conditions: a regex on the output or a
//!   TCP port on 127.0.0.1), Monitor commands, and futures of other crates (background
//!   agents). [`TaskOutput`] and [`TaskStop`] work on every kind.
//! - Permissions parse the command with tree-sitter-bash into the simple commands bash will
//!   run, with their words as bash will see them, find every program the line runs
//!   (through wrappers, shell code and option values: [`command_programs`]), and match
//!   `Bash(...)` rules against each ([`check_command`]); deny rules hold in every mode, the
//!   Read and Edit rules and the protected paths apply to the paths a command names, and
//!   the read-only classification ([`is_read_only_command`], an allow-list of shapes)
//!   decides auto-approval and concurrency. See "Shell permissions" below. The analysis
//!   itself (parsing, option tables parsed as each program parses its options, wrappers,
//!   classification) is the pure crate [`shell_analysis`], re-exported here; this crate adds
//!   what needs the file system (scripts a line runs, package.json scripts, configuration
//!   that steers git and cargo, paths against the Read and Edit rules).
//! - Every command runs contained (the `sandbox` crate, re-exported here as far as a host
//!   needs it): what the read-only classification alone allowed runs in the **read-only
//!   jail** (nothing writable but a private `/tmp`, no network, secrets hidden, the
//!   environment scrubbed), and so does a call whose approval is unknown; what a person
//!   approved — an allow rule, an answer, the permission mode — runs in the **workspace
//!   sandbox** the [`SandboxSettings`] describe (the settings' `sandbox` section, with the
//!   session's Read deny rules), enforced with bubblewrap, or Landlock and seccomp when
//!   bubblewrap is missing. Where no jail can be made, a read-only command asks instead.
//!   Sandboxed commands get an allow-listed environment and resource limits; a limit hit is
//!   named in the result. What holds under each mechanism, and where it stops, is in
//!   `docs/sandbox.md`.
//!
//! # The supervisor
//!
//! Commands run under a supervisor: the host binary started again (a host calls
//! [`sandbox_supervisor_entry`] first thing in `main`, as agent-tools does, or names a
//! program with [`set_supervisor_program`]). Foreground Bash calls of a session share one
//! supervisor per kind of launch, profile (jail or workspace) and policy; each background
//! command and Monitor gets one of its own. A process runs at most [`SandboxLimits::max_instances`] (see
//! [`set_sandbox_limits`]); at the limit the instance idle the longest is ended, and when
//! all are busy the call is refused with a retryable error that says so. A registered
//! program that does not answer when started with [`SUPERVISOR_ARG`] is set aside, with one
//! warning on stderr (also passed on, once, at the end of the next Bash result), and
//! commands then get a sandbox each. Nothing a command starts outlives it, sandboxed or not
//! (the `sandbox` crate's documentation says how).
//!
//! # Output and the files the host opens
//!
//! A command writes into a pipe; a thread of the host moves what arrives into a file the
//! host created itself (`O_EXCL | O_NOFOLLOW`, in a directory held open and opened level by
//! level without following links), with `splice(2)`. The file keeps the first and last
//! 32 MiB of the output ([`OUTPUT_CAP`] in all) with `… [N bytes dropped] …` between them,
//! and the result says what was dropped; memory stays bounded. The working directory comes
//! back on a second pipe, given to the command as its stdin, which the start-up code moves
//! to a high descriptor before the command runs (with `/dev/null` as its stdin). So no path
//! crosses into the sandbox, the sandbox needs no writable file of the host's, and the host
//! never opens a file a sandboxed command could have replaced with a link: it reads and
//! truncates its output files through the descriptors it created, and the path it gives the
//! model is checked to still be that file (else it gets a copy). Foreground output files are
//! reused through their descriptors (creating a file per call costs more than a short
//! command on ext4); an output that is kept leaves the pool under its name.
//!
//! Sharing an instance is as safe as one instance per call:
//! - Every command gets the same mounts, namespaces and network policy it would have had
//!   alone; a policy change never reuses an instance.
//! - The supervisor holds no state a command can change: it is another process, commands
//!   get their own pipes and none of its descriptors, and it runs each command with a fresh
//!   `bash -c`. Files are as without sharing: `/tmp` in the workspace sandbox is the
//!   host's (a writable root under workspace-write), in the jail one of its own that its
//!   commands share (so what a command leaves there is what it would have left with a
//!   sandbox per call, visible only to the session's other jailed commands while the
//!   instance lives). The start-up code every
//!   command runs travels in bash's arguments, not in a file, so no command can rewrite
//!   what the next ones run first.
//! - Kills go through the supervisor (the bubblewrap sandbox has its own pid namespace,
//!   which is kept: without it `/proc/PID/root` of the user's other processes would lead
//!   out of the sandbox). If the supervisor does not answer, the instance is killed with
//!   everything below it.
//!
//! # Shell permissions
//!
//! The check never matches a rule against the raw string. It works on what the parser
//! makes of the line, and two rules make it sound rather than a list of known tricks:
//! - **Nothing unknown is approved.** Every node of the syntax tree must be of a kind the
//!   parser handles, and every command or process substitution anywhere in the tree (an
//!   arithmetic subscript, a test operand, an unquoted here-document body, backticks
//!   included) is found by a walk over the whole tree. A command is read-only only when
//!   every word is plain and its options pass that command's shape; `test`, `[` and `[[`
//!   take no `-v`/`-R` (bash evaluates their operand as a subscript) and compare
//!   arithmetically only integer literals; `printf -v`, `read`, `let`, `declare` and
//!   `unset` are never read-only.
//! - **Deny rules hold in every mode.** Each command word is taken as bash passes it (quotes
//!   removed, `$'…'` decoded, line continuations joined, braces expanded, paths reduced to
//!   the program's base name), every wrapper that runs its arguments (`env`, `nohup`,
//!   `sudo`, `nsenter`, `flock`, `xargs`, `find -exec`, … and shell code run by `sh -c`,
//!   `eval`, `trap`, `su -c`, `script -c`, `watch`, `git -c alias.x=!…`, `tar
//!   --to-command`, …) is followed, and a line whose programs cannot all be known before
//!   it runs — a computed command name, a shell reading code from standard input, an
//!   inline interpreter program, an alias, `hash`, an exported variable that can change
//!   what runs, a variable set on the line whose value bash evaluates as arithmetic — is
//!   *denied* while any deny rule names Bash, whatever the mode.
//!
//! Paths: an operand or input redirection that a Read deny rule covers denies the command
//! (also a directory read recursively when a denied file lies beneath it); a read-only
//! command is approved only when its operands pass the Read check, as the Read tool's would
//! (so `cat /etc/passwd` asks); writing a protected path asks in every mode; an Edit deny
//! rule denies a write. Paths only known at run time are left to the sandbox, which masks
//! denied files; when the command would run outside it and Read deny rules exist, it is
//! denied. A wildcard allow rule for a reading command (`Bash(git diff *)`) does not cover
//! an option that makes it write or run a program (`--output`, `-o`, `--pre`, `-C`).
//! `dangerouslyDisableSandbox` always needs a person's approval.
//!
//! Deny rules name programs. A program allowed to run code of its own — a script file run
//! by an interpreter, a build tool running its recipes — can do what a denied program does;
//! there the sandbox is what holds.
//!
//! # Deviations from the reference and known limits
//!
//! - What the read-only classification alone approves runs in a read-only jail, not in the
//!   session's sandbox: a misclassified command can neither write nor reach the network
//!   nor read a secret. Without bubblewrap or Landlock such a command asks.
//! - The reference lets Read deny rules stop at the shell (`cat .env` ran under a
//!   `Read(.env)` deny); here they cover the shell, and reads outside the working
//!   directories ask as they do for the Read tool.
//! - The reference turned "ask" into "allow" in bypassPermissions mode even for lines it
//!   could not classify while deny rules were in force; here such a line is denied.
//! - `dangerouslyDisableSandbox` is not covered by an allow rule for the command, nor by
//!   bypassPermissions mode: it asks a person every time.
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
//!   messages on its socket and pipe (see `cargo xtask bench bash-200`). The supervisor
//!   needs pidfds (Linux 5.3).
//! - Output over [`OUTPUT_CAP`] keeps its first and last 32 MiB on disk; a background
//!   command's file holds only the first 32 MiB until it ends (the rest is appended then),
//!   while TaskOutput, readiness and Monitor read the latest output all along.
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
#[cfg(feature = "monitor")]
mod monitor;
mod operands;
mod output;
mod permissions;
mod probe;
mod session;
mod spool;
mod steered;
mod task_tools;
mod tasks;

use std::sync::Arc;

pub use bash::{Bash, BashInput, BashOutput, DEFAULT_READY_TIMEOUT, DEFAULT_TIMEOUT, MAX_TIMEOUT};
// The containment, from the `sandbox` crate: what a host of the shell needs of it.
#[cfg(feature = "monitor")]
pub use monitor::{MONITOR_LIMIT, Monitor, MonitorInput, MonitorOutput};
pub use output::MAX_OUTPUT_CHARS;
pub use permissions::{
    check as check_command, check_with as check_command_with, command_programs, is_read_only,
};
pub use probe::{SandboxTrial, try_sandbox};
pub use sandbox::{
    DenyRead, EXEC_ARG, Launch, LimitHit, Mask, Mechanism, Prepared, Profile, ResourceLimits,
    SECRETS, SandboxInstance, SandboxMode, SandboxPolicy, SandboxProbe, SandboxSettings,
    bubblewrap, landlock_available, one_call_process, probe_sandbox, sandbox_supervisor_entry,
    settle_sandboxes,
};
#[cfg(target_os = "linux")]
pub use sandbox::{
    SUPERVISOR_ARG, SandboxLimits, live_sandbox_instances, sandbox_limits, set_sandbox_limits,
    set_supervisor_program,
};
/// The command analysis (parsing, option tables, classification), re-exported for library
/// users of the shell tools.
pub use shell_analysis::{
    self, MAX_SUBCOMMANDS, ParseError, Redirect, Script, SimpleCommand, Verdict, Word, classify,
    is_read_only_command, parse as parse_command,
};
pub use spool::OUTPUT_CAP;
pub use task_tools::{
    RetrievalStatus, TASK_OUTPUT_CHARS, TaskOutput, TaskOutputData, TaskOutputInput, TaskStop,
    TaskStopData, TaskStopInput,
};
pub use tasks::{Readiness, ReadyOutcome, ShellTaskSpec, ShellTasks};

/// What only this crate's tests reach: the sandbox instance a session's foreground Bash
/// calls last started. Not part of the API.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing {
    pub use crate::session::sandbox_instance;
}

/// Wires the shell into a session being built: the background task manager (Bash's
/// `run_in_background`, Monitor, TaskOutput and TaskStop, and other crates' background
/// work) for the builder's working directories and state directory, and the sandbox
/// settings every command runs under. Call it after `additional_dirs`, `state_dir` and
/// `private_state_dir` (task output goes to the private one).
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let builder = tool_core::ToolContext::builder(dir.path()).state_dir(dir.path().join(".state"));
/// let ctx = tools_shell::install(builder, tools_shell::SandboxSettings::default()).build();
/// assert!(ctx.services().get::<std::sync::Arc<tools_shell::ShellTasks>>().is_some());
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn install(
    builder: tool_core::ToolContextBuilder,
    sandbox: SandboxSettings,
) -> tool_core::ToolContextBuilder {
    let tasks = Arc::new(ShellTasks::new(
        &builder.private_state_dir_path(),
        sandbox.clone(),
        builder.working_dirs(),
    ));
    builder
        .tasks(Arc::clone(&tasks) as Arc<dyn tool_core::TaskManager>)
        .service(tasks)
        .service(Arc::new(sandbox))
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
