//! `custom-tool`: the host's Greet tool in one pool with tools-fs's, called through it.

use crate::{command, run_ok};

#[test]
fn greet_answers_through_the_pool_beside_the_file_tools() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, _) =
        run_ok(command(env!("CARGO_BIN_EXE_custom-tool"), dir.path(), dir.path()).arg("Grace"));
    let mut lines = stdout.lines();
    let tools = lines.next().unwrap();
    assert!(tools.starts_with("tools: "), "{stdout}");
    for name in ["Glob", "Read", "Edit", "Greet"] {
        assert!(tools.split(", ").any(|t| t.ends_with(name)), "{tools}");
    }
    assert_eq!(lines.next(), Some("Hello, Grace!"), "{stdout}");
}
