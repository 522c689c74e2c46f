//! The host binary started again: the first arguments that make it the persistent sandbox's
//! supervisor ([`SUPERVISOR_ARG`]) or, inside bubblewrap, the helper that applies the seccomp
//! filter ([`EXEC_ARG`]), both handled by
//! [`sandbox_supervisor_entry`](crate::sandbox_supervisor_entry), and the program registered
//! to be started so.

#[cfg(target_os = "linux")]
use std::path::{Path, PathBuf};
#[cfg(target_os = "linux")]
use std::sync::OnceLock;

/// The first argument that makes the host binary act as the supervisor (see
/// [`sandbox_supervisor_entry`](crate::sandbox_supervisor_entry)).
#[cfg(target_os = "linux")]
pub const SUPERVISOR_ARG: &str = "__agent-tools-sandbox-supervisor";

/// The first argument that makes the host binary apply the sandbox's seccomp filter to
/// itself and then run the rest of its arguments (see `sandbox_supervisor_entry`):
/// `EXEC_ARG SOCKETS -- PROGRAM ARGS...`.
pub const EXEC_ARG: &str = "__agent-tools-sandbox-exec";

#[cfg(target_os = "linux")]
static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Names the executable that serves as the persistent sandbox's supervisor: run with
/// [`SUPERVISOR_ARG`] first, it must call
/// [`sandbox_supervisor_entry`](crate::sandbox_supervisor_entry) before anything else. The
/// first call wins. Hosts normally let
/// [`sandbox_supervisor_entry`](crate::sandbox_supervisor_entry) register themselves; without
/// a program, a sandboxed command gets a bubblewrap of its own (slower, the same
/// confinement). A program that does not answer as a supervisor is set aside with a warning
/// on stderr, and commands then run as without one.
#[cfg(target_os = "linux")]
pub fn set_supervisor_program(program: impl Into<PathBuf>) {
    let _ = PROGRAM.set(program.into());
}

/// The registered program, once found not to answer when started with [`SUPERVISOR_ARG`].
#[cfg(target_os = "linux")]
static UNANSWERED: OnceLock<PathBuf> = OnceLock::new();

/// Whether the process was told, once, that it runs commands without a supervisor.
#[cfg(target_os = "linux")]
static MISSING_REPORTED: std::sync::Once = std::sync::Once::new();

/// The registered supervisor program, when it still exists and has not been found to ignore
/// [`SUPERVISOR_ARG`].
#[cfg(target_os = "linux")]
pub(crate) fn supervisor_program() -> Option<&'static Path> {
    if UNANSWERED.get().is_some() {
        return None;
    }
    PROGRAM.get().map(PathBuf::as_path).filter(|p| p.is_file())
}

/// The supervisor program to run a command under, as [`supervisor_program`]; when there is
/// none (the host never called `sandbox_supervisor_entry`, or registered a program that is
/// gone), says so once per process on stderr: each command then starts a sandbox of its own,
/// which works but costs about twice as much per call.
#[cfg(target_os = "linux")]
pub(crate) fn command_supervisor() -> Option<&'static Path> {
    let program = supervisor_program();
    if program.is_none() && UNANSWERED.get().is_none() {
        MISSING_REPORTED.call_once(|| {
            let registered = PROGRAM.get().map_or_else(
                || "no supervisor program is registered".to_owned(),
                |p| format!("the supervisor program {} does not exist", p.display()),
            );
            eprintln!(
                "agent-tools sandbox: {registered}, so every shell command starts a sandbox \
                 of its own (about twice as slow per call); call \
                 sandbox::sandbox_supervisor_entry() first in main to run them under one \
                 supervisor"
            );
        });
    }
    program
}

/// Records that `program`, started with [`SUPERVISOR_ARG`], did not answer the supervisor's
/// handshake: from now on commands run one sandbox each, as without a program. The first
/// time, says so on stderr and returns the warning.
#[cfg(target_os = "linux")]
pub(crate) fn unanswered(program: &Path) -> Option<String> {
    let mut first = false;
    UNANSWERED.get_or_init(|| {
        first = true;
        program.to_path_buf()
    });
    if !first {
        return None;
    }
    let warning = unanswered_warning(program);
    eprintln!("agent-tools sandbox: {warning}");
    if let Ok(mut n) = NOTICE.lock() {
        *n = Some(warning.clone());
    }
    Some(warning)
}

/// The warning of [`unanswered`], until a call's result has shown it once.
#[cfg(target_os = "linux")]
static NOTICE: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

/// The warning about a supervisor program that does not answer, the first time it is asked
/// for after the program was set aside (for the result of the call that ran the command);
/// `None` ever after, and always when the program answers.
pub fn take_notice() -> Option<String> {
    #[cfg(target_os = "linux")]
    {
        NOTICE.lock().ok().and_then(|mut n| n.take())
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// What a host whose supervisor program does not answer is told.
#[cfg(target_os = "linux")]
fn unanswered_warning(program: &Path) -> String {
    format!(
        "the supervisor program {} did not answer when started with {SUPERVISOR_ARG}: its \
         main must call sandbox::sandbox_supervisor_entry() first and return the exit \
         code it gives. Until then every shell command starts a sandbox of its own (the same \
         confinement, about twice as slow per call).",
        program.display()
    )
}
