//! The codex profile through the binary: `--profile codex list` and `call`, Bash's deny
//! rules over `shell`, and the sandbox holding for a command the model sends as an argv.

use serde_json::json;

use crate::{Project, text};

#[test]
fn list_shows_codex_names() {
    let p = Project::new(&[]);
    let run = p.run(&["--profile", "codex", "list"], None);
    run.assert_code(0);
    for name in [
        "exec_command",
        "write_stdin",
        "update_plan",
        "view_image",
        "shell",
    ] {
        assert!(run.stdout.contains(name), "{name}: {run:#?}");
    }
    assert!(!run.stdout.contains("\"TodoWrite\""), "{run:#?}");
    assert!(!run.stdout.contains("\"Bash\""), "{run:#?}");
}

#[test]
fn shell_runs_with_codex_text() {
    let p = Project::new(&["sub/a.txt = hello"]);
    let input = json!({"command": ["bash", "-lc", "cat a.txt"], "workdir": "sub"}).to_string();
    let run = p.run(
        &[
            "--profile",
            "codex",
            "--mode",
            "bypassPermissions",
            "call",
            "shell",
            &input,
        ],
        None,
    );
    run.assert_code(0);
    let result = run.result();
    assert_eq!(result["tool"], "shell");
    let text = text(&result);
    assert!(text.starts_with("Exit code: 0\nWall time: "), "{text}");
    assert!(text.ends_with("Output:\nhello"), "{text}");
}

#[test]
fn deny_rules_hold_for_shell_in_bypass_mode() {
    let p = Project::new(&["v = keep"]);
    for argv in [
        json!(["rm", "v"]),
        json!(["/bin/rm", "v"]),
        json!(["env", "rm", "v"]),
        json!(["bash", "-lc", "rm v"]),
        json!(["sh", "-c", "rm v"]),
    ] {
        let input = json!({ "command": argv }).to_string();
        let run = p.run(
            &[
                "--profile",
                "codex",
                "--mode",
                "bypassPermissions",
                "--deny",
                "Bash(rm:*)",
                "call",
                "shell",
                &input,
            ],
            None,
        );
        run.assert_code(1);
        assert!(p.root().join("v").exists(), "{argv} removed v: {run:#?}");
    }
}

#[test]
fn the_sandbox_holds_for_shell() {
    let p = Project::new(&[]);
    let outside = format!("/opt/agent-tools-codex-e2e-{}", std::process::id());
    let cases = [
        json!(["touch", outside]),
        json!([
            "bash",
            "-lc",
            "exec 3<>/dev/tcp/1.1.1.1/80 && echo connected"
        ]),
    ];
    for argv in cases {
        let input = json!({ "command": argv }).to_string();
        let run = p.run(
            &[
                "--profile",
                "codex",
                "--mode",
                "bypassPermissions",
                "call",
                "shell",
                &input,
            ],
            None,
        );
        let result = run.result();
        let sandbox = result["data"]["sandbox"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let created = std::path::Path::new(&outside).exists();
        let _ = std::fs::remove_file(&outside);
        if result["is_error"] == false && sandbox.contains("none") {
            // No sandbox on this machine: nothing to hold.
            continue;
        }
        assert_eq!(result["is_error"], true, "{argv}: {run:#?}");
        assert!(
            !created,
            "{argv} wrote outside the working directories: {run:#?}"
        );
        assert!(!text(&result).contains("connected"), "{argv}: {run:#?}");
    }
}
