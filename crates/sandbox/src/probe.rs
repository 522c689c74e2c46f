//! What this machine offers each sandbox mechanism, for hosts that report on the machine
//! (`agent-tools doctor`). The probes are the ones the launch paths use, so the report
//! cannot disagree with them.

use std::path::PathBuf;

/// What the machine offers each sandbox mechanism.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxProbe {
    /// A bubblewrap that can start a sandbox here
    pub bubblewrap: Option<PathBuf>,
    /// Whether that bubblewrap runs its sandboxes in a user namespace
    pub user_namespaces: bool,
    /// The kernel's Landlock ABI version, when Landlock is enforced
    pub landlock_abi: Option<i32>,
    /// Whether the kernel takes the sandbox's seccomp filter
    pub seccomp: bool,
    /// Where resource limits come from: `cgroup v2`, `cgroup v1` or `rlimits`
    pub limits: &'static str,
}

/// Probes the machine (each probe runs once per process).
pub fn probe_sandbox() -> SandboxProbe {
    #[cfg(target_os = "linux")]
    let (landlock_abi, seccomp) = (crate::landlock::abi(), crate::filter::available());
    #[cfg(not(target_os = "linux"))]
    let (landlock_abi, seccomp) = (None, false);
    SandboxProbe {
        bubblewrap: crate::launch::bubblewrap().map(PathBuf::from),
        user_namespaces: crate::launch::bubblewrap_user_namespaces().unwrap_or(false),
        landlock_abi,
        seccomp,
        limits: crate::resources::mechanism(),
    }
}
