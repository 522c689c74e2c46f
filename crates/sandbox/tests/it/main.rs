//! Integration tests of the sandbox crate through its public API — the read-only jail run
//! directly, with no classifier involved: writes of every kind, network, secrets, the
//! environment and the resource limits, each class with generated variants, asserting on
//! side effects (files on disk, what reached a listener, what the output holds, what is
//! left in the process table).
//!
//! Tests that need a home directory of their own (the credential stores hidden by default)
//! or a variable in the host's environment run this binary again for themselves with that
//! environment ([`in_child`]).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod environment;
mod home;
mod jail;
mod limits;
mod prestart;
mod stop;

use std::path::PathBuf;
use std::time::Duration;

use sandbox::{Captured, Instances, Mechanism, Prepared, Profile, RunSpec, SandboxSettings};

pub use test_support::peers::require;

/// The mechanisms this machine offers, each as settings selecting it.
pub fn mechanisms() -> Vec<(&'static str, SandboxSettings)> {
    let mut out = Vec::new();
    if sandbox::bubblewrap().is_some() {
        out.push((
            "bubblewrap",
            SandboxSettings {
                mechanism: Mechanism::Bubblewrap,
                ..SandboxSettings::default()
            },
        ));
    }
    if sandbox::landlock_available() {
        out.push((
            "landlock",
            SandboxSettings {
                mechanism: Mechanism::Landlock,
                ..SandboxSettings::default()
            },
        ));
    }
    require("bubblewrap or Landlock, to make a jail", !out.is_empty());
    out
}

/// A project directory, a directory outside it, and the sandbox session running commands.
pub struct Site {
    _dir: tempfile::TempDir,
    /// The project (the working directory)
    pub project: PathBuf,
    /// A directory outside the project
    pub outside: PathBuf,
    /// The session's supervisors
    pub instances: Instances,
}

impl Site {
    /// A fresh site; commands run under the persistent supervisor as a host's would.
    pub fn new() -> Site {
        if std::env::var_os(NO_SUPERVISOR_VAR).is_none() {
            sandbox::set_supervisor_program(env!("CARGO_BIN_EXE_sandbox-supervisor"));
        }
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let project = base.join("project");
        let outside = base.join("outside");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        Site {
            _dir: dir,
            project,
            outside,
            instances: Instances::default(),
        }
    }

    /// The launch of `profile` for `settings` in this project.
    pub fn prepare(&self, profile: Profile, settings: &SandboxSettings) -> Prepared {
        sandbox::prepare_profile(
            profile,
            settings,
            std::slice::from_ref(&self.project),
            &self.project,
            false,
        )
        .unwrap()
    }

    /// Runs `command` in the project under `prepared` (at most 60 s).
    pub async fn run(&self, prepared: &Prepared, command: &str) -> Captured {
        let spec = RunSpec {
            command: command.to_owned(),
            cwd: self.project.clone(),
            env: Vec::new(),
        };
        self.instances
            .run(&spec, &prepared.launch, Some(Duration::from_secs(60)))
            .await
            .unwrap()
    }
}

impl Default for Site {
    fn default() -> Self {
        Site::new()
    }
}

/// Set in a child run that runs every command one sandbox each (no supervisor program).
pub const NO_SUPERVISOR_VAR: &str = "AGENT_TOOLS_SANDBOX_TEST_NO_SUPERVISOR";

/// Tells a child run of this binary which test it runs.
const CHILD_VAR: &str = "AGENT_TOOLS_SANDBOX_TEST_CHILD";

/// For a test that needs its own environment (a home directory, host variables): in the
/// child run of test `name` this returns true (run the test's body); otherwise it runs this
/// binary again for that one test with `env`, asserts that it passed, and returns false.
pub fn in_child(name: &str, env: &[(&str, &str)]) -> bool {
    if std::env::var(CHILD_VAR).as_deref() == Ok(name) {
        return true;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, name)
        .envs(env.iter().copied())
        .current_dir("/")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "the child run of {name} failed:\n{stdout}\n{stderr}"
    );
    false
}

/// Processes whose command line contains `marker` (zombies excluded).
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

/// Waits (bounded) until no process carries `marker`; returns the survivors (killed).
pub async fn survivors(marker: &str) -> Vec<u32> {
    for _ in 0..150 {
        let left = processes_with(marker);
        if left.is_empty() {
            return left;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left = processes_with(marker);
    for p in &left {
        if let Some(pid) = rustix::process::Pid::from_raw(*p as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
    left
}
