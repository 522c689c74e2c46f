//! Approval covers what configuration points at. A project's `.mcp.json` runs a server
//! script that lives in the project; approving the file records the script's SHA-256 too.
//! The file tools refuse to change the script in every mode (the message names the
//! configuration that runs it); a change by another process withdraws the approval, so the
//! server does not start and the notice names the changed file; approving again starts it.
//! Whether the server started is read from the log it appends its pid to, never from
//! messages alone.

use std::path::Path;

use serde_json::json;

use crate::{Project, text};

/// How many times the server started (lines of its log).
fn starts(log: &Path) -> usize {
    std::fs::read_to_string(log.join("starts"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn an_approved_server_script_is_protected_and_a_change_needs_approval_again() {
    let project = Project::new(&["tools/", "notes.txt = notes\\n"]);
    let root = project.root();
    let script = root.join("tools/server.py");
    std::fs::copy(test_support::mcp::fake_server(), &script).unwrap();
    let log = project.home().join("server-log");
    std::fs::create_dir_all(&log).unwrap();
    std::fs::write(
        root.join(".mcp.json"),
        json!({"mcpServers": {"local": {"command": "python3",
            "args": ["tools/server.py", log], "startupTimeoutMs": 20000}}})
        .to_string(),
    )
    .unwrap();
    std::os::unix::fs::symlink("tools", root.join("link")).unwrap();
    let original = std::fs::read(&script).unwrap();

    // A person reviews and approves: the review shows the script it runs.
    let run = project.run(&["trust", "--show"], None);
    assert!(run.stdout.contains("tools/server.py"), "{run:#?}");
    project.trust();
    let run = project.run(&["list"], None);
    assert!(run.stdout.contains("mcp__local__echo"), "{run:#?}");
    assert_eq!(starts(&log), 1);

    // Every file tool, in every mode, through every spelling: refused, naming the config.
    let spellings = [
        script.display().to_string(),
        "tools/server.py".to_owned(),
        "./tools/../tools/server.py".to_owned(),
        "link/server.py".to_owned(),
    ];
    let mut refused = 0;
    for mode in ["default", "acceptEdits", "bypassPermissions", "dontAsk"] {
        for path in &spellings {
            let calls = [
                json!({"tool": "Read", "input": {"file_path": path}}),
                json!({"tool": "Edit", "input": {"file_path": path,
                    "old_string": "import json", "new_string": "import json, os"}}),
                json!({"tool": "Write", "input": {"file_path": path, "content": "print(1)\n"}}),
                json!({"tool": "MultiEdit", "input": {"file_path": path, "edits": [
                    {"old_string": "import json", "new_string": "import os"}]}}),
            ];
            let stdin: String = calls.iter().map(|c| format!("{c}\n")).collect();
            let run = project.run(&["--mode", mode, "batch"], Some(&stdin));
            let lines = run.lines();
            assert_eq!(lines.len(), calls.len(), "{run:#?}");
            for line in &lines[1..] {
                assert_eq!(line["is_error"], true, "{mode} {path}: {line}");
                if mode != "dontAsk" {
                    assert!(
                        text(line).contains(".mcp.json names it"),
                        "{mode} {path}: {line}"
                    );
                }
                refused += 1;
            }
            assert_eq!(std::fs::read(&script).unwrap(), original, "{mode} {path}");
        }
    }
    eprintln!("edits of the approved server script refused: {refused}");

    // Another process changes the script: the server does not start, and the notice says
    // which file changed.
    let before = starts(&log);
    let mut changed = original.clone();
    changed.extend_from_slice(b"\n# changed by someone else\n");
    std::fs::write(&script, &changed).unwrap();
    let run = project.run(&["list"], None);
    assert!(!run.stdout.contains("mcp__local__"), "{run:#?}");
    assert_eq!(starts(&log), before, "the changed script ran: {run:#?}");
    assert!(
        run.stderr.contains(&format!(
            ".mcp.json (a file it names changed since it was approved: {})",
            script.display()
        )),
        "{run:#?}"
    );
    let run = project.run(&["trust", "--show"], None);
    assert!(run.stdout.contains("tools/server.py"), "{run:#?}");

    // A person approves again: it starts.
    project.trust();
    let run = project.run(&["list"], None);
    assert!(run.stdout.contains("mcp__local__echo"), "{run:#?}");
    assert_eq!(starts(&log), before + 1);
    assert!(!run.stderr.contains("these parts were ignored"), "{run:#?}");
}
