//! The persistent sandbox's supervisor on its own, for this crate's tests: a host binary
//! (agent-tools) is its own supervisor and needs no second executable.

fn main() -> std::process::ExitCode {
    tools_shell::sandbox_supervisor_entry().unwrap_or_else(|| {
        eprintln!(
            "run as `agent-tools-sandbox-supervisor {} BASH INLINE GRACE_MS SLOT_DIR`",
            tools_shell::SUPERVISOR_ARG
        );
        std::process::ExitCode::from(2)
    })
}
