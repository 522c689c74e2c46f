//! `shell-tasks`: a foreground and a background Bash call under the default sandbox, and
//! TaskOutput's wait for the background one.

use std::fs;

use test_support::peers;

use crate::{command, run_ok};

#[test]
fn runs_in_the_sandbox_and_reports_the_background_task() {
    if !peers::require("bubblewrap (the default sandbox)", peers::bwrap().is_some()) {
        return;
    }
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let (stdout, _) = run_ok(
        command(
            env!("CARGO_BIN_EXE_shell-tasks"),
            project.path(),
            home.path(),
        )
        .arg(project.path()),
    );

    // The foreground command ran in bubblewrap and wrote inside the project.
    assert!(stdout.contains("hello from the sandbox"), "{stdout}");
    assert!(stdout.contains("(sandbox: bubblewrap"), "{stdout}");
    assert_eq!(
        fs::read_to_string(project.path().join("hello.txt")).unwrap(),
        "hello from the sandbox\n"
    );
    // The background command started, and TaskOutput waited for it to end.
    assert!(
        stdout.contains("Command running in background with ID:"),
        "{stdout}"
    );
    let output = stdout.split("> TaskOutput").nth(1).unwrap_or_default();
    assert!(output.contains("<status>completed</status>"), "{stdout}");
    assert!(
        output.contains("<output>\nbackground work done\n</output>"),
        "{stdout}"
    );
    // Its output file is under the state directory given to the program, not the real home.
    assert!(home.path().join("tasks").is_dir());
}
