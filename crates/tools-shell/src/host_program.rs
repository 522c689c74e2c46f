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
/// confinement).
#[cfg(target_os = "linux")]
pub fn set_supervisor_program(program: impl Into<PathBuf>) {
    let _ = PROGRAM.set(program.into());
}

/// The registered supervisor program, when it still exists.
#[cfg(target_os = "linux")]
pub(crate) fn supervisor_program() -> Option<&'static Path> {
    PROGRAM.get().map(PathBuf::as_path).filter(|p| p.is_file())
}
