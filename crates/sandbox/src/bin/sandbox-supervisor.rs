//! The persistent sandbox's supervisor on its own, for this crate's tests: a host binary
//! (agent-tools) is its own supervisor and needs no second executable.

fn main() -> std::process::ExitCode {
    sandbox::sandbox_supervisor_entry().unwrap_or_else(|| {
        eprintln!(
            "run as `sandbox-supervisor __agent-tools-sandbox-supervisor BASH INLINE GRACE_MS`"
        );
        std::process::ExitCode::from(2)
    })
}
