//! Linux containment for agent-tools: what a command (or a language server) may write,
//! read, reach and use, enforced with bubblewrap, or Landlock and seccomp where bubblewrap
//! is missing; the supervisor that runs commands inside and makes sure nothing they start
//! outlives them; the environment they get and the resource limits they run under.
//!
//! # What runs where
//!
//! A command runs in one of two [`Profile`]s, chosen by what approved it:
//!
//! - **The read-only jail** ([`Profile::Jail`]): for what runs unasked because a classifier
//!   judged it read-only. Nothing is writable but a private, empty `/tmp`; there is no
//!   network; the environment is scrubbed; the session's Read deny rules, the user's
//!   credential stores ([`SECRETS`]), `/etc/shadow` and `/etc/gshadow`, the state directory
//!   and other users' home directories are hidden. A misclassified command can therefore
//!   change nothing and read no secret. Where no jail can be made ([`jail_available`]), the
//!   caller asks a person instead of running the command.
//! - **The workspace sandbox** ([`Profile::Workspace`]): for what a person approved (an
//!   allow rule, an answer, the permission mode). The settings' `sandbox` section decides
//!   (workspace-write by default: the working directories and the temporary directory,
//!   without protected paths; no network).
//!
//! [`SandboxSettings`] are the `sandbox` section (plus the session's Read deny rules, the
//! state directory and the files approved configuration names); [`prepare_profile`] turns
//! them into a [`Prepared`] launch ([`Launch`]: bubblewrap, Landlock, or direct) with its
//! [`SandboxPolicy`]. Commands run through a session's [`Instances`] (one persistent
//! supervisor per kind of launch and profile, see below) or one-shot; a long-running program
//! with pipes (a language server) through [`spawn_program`].
//!
//! Every sandboxed command gets an allow-listed environment (the `env` module: `PATH`,
//! `HOME`, `LANG`, ... and what `sandbox.allowEnv` names; a secret-looking name only when
//! named exactly) and [`ResourceLimits`] (memory, processes, CPU time: a cgroup where the
//! machine lets this process make one, rlimits otherwise); a command that runs into one
//! ends with [`Finished::limit`] naming it. What holds under each mechanism, and where it
//! stops, is in `docs/sandbox.md`.
//!
//! # The supervisor
//!
//! Commands run under a supervisor: the host binary started again (a host calls
//! [`sandbox_supervisor_entry`] first thing in `main`, as agent-tools does, or names a
//! program with [`set_supervisor_program`]), reading requests from a Unix socket and
//! spawning each command into a process group of its own. Foreground commands of a session
//! share one supervisor per kind of launch, profile and policy, since starting bubblewrap
//! costs more than a short command; a background command gets one of its own. An instance
//! is started on first use, started anew when the policy changes (a protected path that
//! appeared, a bound path replaced outside) or when it died, and ends with the session,
//! after [`SandboxLimits::idle_timeout`] without a command, or when another session needs
//! its place: a process runs at most [`SandboxLimits::max_instances`] (see
//! [`set_sandbox_limits`]). Inside bubblewrap the supervisor runs under the seccomp filter,
//! which the host binary applies to itself first ([`EXEC_ARG`]).
//!
//! Nothing a command starts outlives it: its process group is signalled when its leader
//! exits (TERM, a grace period, KILL), and when no command of the instance runs, the
//! supervisor ends everything else it can reach (inside bubblewrap every other process of
//! the sandbox's pid namespace; elsewhere every descendant, since it is a child subreaper).
//! It does the same when its socket closes, which includes the host's death. Without a
//! supervisor program each command gets a sandbox of its own (the same confinement, about
//! twice the cost per call).
//!
//! # Example
//!
//! A command in the jail cannot write, even in its own working directory:
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use sandbox::{Instances, Profile, RunSpec, SandboxSettings};
//! let dir = tempfile::tempdir()?;
//! let settings = SandboxSettings::default();
//! if sandbox::jail_available(&settings).is_err() {
//!     return Ok(()); // no bubblewrap and no Landlock here: a caller would ask a person
//! }
//! let dirs = [dir.path().to_path_buf()];
//! let jail = sandbox::prepare_profile(Profile::Jail, &settings, &dirs, dir.path(), false)?;
//! let spec = RunSpec {
//!     command: "echo planted > marker; cat marker".to_owned(),
//!     cwd: dir.path().to_path_buf(),
//!     env: Vec::new(),
//! };
//! let ran = Instances::default().run(&spec, &jail.launch, None).await?;
//! assert_ne!(ran.finished.code, 0);
//! assert!(!dir.path().join("marker").exists());
//! # Ok(())
//! # }
//! ```

mod bwrap_cache;
mod command;
mod env;
#[cfg(target_os = "linux")]
mod filter;
mod host_program;
#[cfg(target_os = "linux")]
mod inside;
#[cfg(target_os = "linux")]
mod instances;
#[cfg(target_os = "linux")]
mod landlock;
mod launch;
mod mask;
#[cfg(target_os = "linux")]
mod placeholder;
mod placeholder_shape;
mod policy;
mod probe;
mod process;
mod program;
mod protect;
mod reaper;
mod resources;
mod session;
#[cfg(target_os = "linux")]
mod supervisor;

pub use command::{Ending, Finished, Io, KILL_GRACE, Pipes, RunSpec, bash_path};
pub use env::{ALLOWED as ENV_ALLOWED, is_secret_name};
pub use host_program::{EXEC_ARG, one_call_process, take_notice as take_supervisor_notice};
#[cfg(target_os = "linux")]
pub use host_program::{SUPERVISOR_ARG, set_supervisor_program};
#[cfg(target_os = "linux")]
pub use inside::sandbox_supervisor_entry;
#[cfg(target_os = "linux")]
pub use instances::{SandboxLimits, live_sandbox_instances, sandbox_limits, set_sandbox_limits};
pub use launch::{
    Launch, Prepared, bubblewrap, jail_available, landlock_available, prepare, prepare_profile,
    settle as settle_sandboxes,
};
pub use mask::{DenyRead, Mask, SECRETS};
pub use policy::{JAIL_HIDDEN, Mechanism, Profile, SandboxMode, SandboxPolicy, SandboxSettings};
pub use probe::{SandboxProbe, probe_sandbox};
pub use process::{Running, spawn as spawn_command};
pub use program::{SandboxHold, SandboxedProgram, spawn_program};
pub use resources::{
    DEFAULT_CPU, DEFAULT_MEMORY, DEFAULT_PROCESSES, LimitHit, ResourceLimits,
    mechanism as limits_mechanism,
};
pub use session::{CAPTURE_CAP, Captured, Instances, SandboxInstance, start_alone};

/// Elsewhere there is no persistent sandbox to supervise.
#[cfg(not(target_os = "linux"))]
pub fn sandbox_supervisor_entry() -> Option<std::process::ExitCode> {
    None
}
