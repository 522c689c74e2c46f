//! Runs every example program the way a user would, and checks what it prints and what it
//! leaves on disk; one module per program, plus a crate built outside the workspace.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod custom_tool;
mod fs_loop;
mod mcp_server;
mod model_loop;
mod outside_crate;
mod shell_tasks;

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// A command for the program `exe` whose home and state directory are `home` (never the
/// real ones) and whose working directory is `dir`.
pub fn command(exe: &str, dir: &Path, home: &Path) -> Command {
    let mut command = Command::new(exe);
    command
        .current_dir(dir)
        .env("HOME", home)
        .env("AGENT_TOOLS_HOME", home)
        .stdin(Stdio::null());
    command
}

/// Runs `command` and returns its output, failing the test with both streams when it fails.
#[track_caller]
pub fn run_ok(command: &mut Command) -> (String, Output) {
    let output = command.output().expect("start the example program");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{command:?} failed: {}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    (stdout, output)
}
