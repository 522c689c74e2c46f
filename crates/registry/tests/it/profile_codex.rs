//! The codex profile through a session's pool: each tool's input, result text and errors,
//! and the permission rules, modes and sandbox of the built-ins it stands for, asserted on
//! the files left behind.

use std::path::{Path, PathBuf};

use registry::{Profile, SessionOptions, ToolRegistry, build_context};
use serde_json::{Value, json};
use tool_core::{CallResult, PermissionMode, ToolContext, ToolPool};

struct Session {
    _dir: tempfile::TempDir,
    root: PathBuf,
    ctx: ToolContext,
    pool: ToolPool,
}

fn session_with(configure: impl FnOnce(&mut SessionOptions, &Path)) -> Session {
    let (dir, root) = test_support::tempdir();
    std::fs::create_dir_all(root.join("home")).unwrap();
    let mut opts = SessionOptions {
        cwd: root.clone(),
        state_dir: Some(root.join("home")),
        profile: Some(Profile::Codex),
        mode: Some(PermissionMode::BypassPermissions),
        ..SessionOptions::default()
    };
    configure(&mut opts, &root);
    let ctx = build_context(&opts).unwrap();
    let pool = ToolRegistry::for_profile(Profile::Codex).pool(ctx.permissions(), Vec::new());
    Session {
        _dir: dir,
        root,
        ctx,
        pool,
    }
}

fn session() -> Session {
    session_with(|_, _| {})
}

impl Session {
    async fn call(&self, tool: &str, input: Value) -> CallResult {
        self.pool.call(tool, input, &self.ctx).await
    }

    /// Calls `tool` and checks the outcome: `Ok(text)` that the result succeeded and
    /// contains `text`, `Err(text)` that it failed and says `text`.
    async fn check(&self, tool: &str, input: Value, expected: Result<&str, &str>) -> CallResult {
        let result = self.call(tool, input.clone()).await;
        let text = result.text();
        match expected {
            Ok(want) => assert!(
                !result.is_error && text.contains(want),
                "{tool} {input}: expected success with {want:?}, got {result:#?}"
            ),
            Err(want) => assert!(
                result.is_error && text.contains(want),
                "{tool} {input}: expected an error with {want:?}, got {result:#?}"
            ),
        }
        result
    }
}

#[test]
fn the_pool_speaks_codex() {
    let s = session();
    let names = s.pool.names();
    for name in [
        "exec_command",
        "write_stdin",
        "shell",
        "shell_command",
        "update_plan",
        "view_image",
        "Read",
        "Glob",
        "Grep",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for gone in ["Bash", "TodoWrite"] {
        assert!(!names.contains(&gone), "{gone} still in {names:?}");
    }
    let deferred = |n: &str| s.pool.get(n).unwrap().is_deferred();
    assert!(!deferred("exec_command") && !deferred("write_stdin"));
    assert!(!deferred("update_plan") && !deferred("view_image"));
    assert!(deferred("shell") && deferred("shell_command"));
}

#[test]
fn a_blanket_bash_deny_hides_every_shell_tool() {
    let s = session_with(|o, _| o.deny = vec!["Bash".into()]);
    let names = s.pool.names();
    for name in ["shell", "shell_command", "exec_command", "write_stdin"] {
        assert!(!names.contains(&name), "{name} still in {names:?}");
    }
    assert!(names.contains(&"update_plan"));
}

#[tokio::test]
async fn shell_runs_argv_and_renders_codex_text() {
    let s = session();
    std::fs::create_dir(s.root.join("sub")).unwrap();
    std::fs::write(s.root.join("sub/f.txt"), "hello\n").unwrap();
    let r = s
        .check(
            "shell",
            json!({"command": ["echo", "a b"]}),
            Ok("Exit code: 0\nWall time: "),
        )
        .await;
    assert!(r.text().ends_with("Output:\na b"), "{}", r.text());
    s.check(
        "shell",
        json!({"command": ["bash", "-lc", "cat f.txt"], "workdir": "sub"}),
        Ok("Output:\nhello"),
    )
    .await;
    s.check(
        "shell",
        json!({"command": ["bash", "-lc", "echo out; echo err >&2; exit 3"]}),
        Err("Exit code: 3"),
    )
    .await;
    let r = s
        .check(
            "shell",
            json!({"command": ["bash", "-lc", "echo out; echo err >&2; exit 3"]}),
            Err("out\nerr"),
        )
        .await;
    assert!(r.text().starts_with("Exit code: 3\n"), "{}", r.text());
    s.check(
        "shell",
        json!({"command": ["sleep", "5"], "timeout_ms": 300}),
        Err("command timed out after 300 milliseconds"),
    )
    .await;
    // A `cd` does not carry over to the next call.
    s.check(
        "shell",
        json!({"command": ["bash", "-lc", "cd sub && pwd"]}),
        Ok("sub"),
    )
    .await;
    let r = s
        .check("shell", json!({"command": ["pwd"]}), Ok("Output:"))
        .await;
    assert!(
        r.text().ends_with(&s.root.display().to_string()),
        "{}",
        r.text()
    );
    // Long output is cut, counted and saved.
    let r = s
        .check(
            "shell",
            json!({"command": ["bash", "-lc", "seq 1 20000"]}),
            Ok("Total output lines: 20000"),
        )
        .await;
    assert!(
        r.text()
            .contains("[output truncated; the whole output is saved in")
    );
}

#[tokio::test]
async fn shell_command_runs_a_script() {
    let s = session();
    s.check(
        "shell_command",
        json!({"command": "printf 'x\\ny\\n' | wc -l", "login": true}),
        Ok("Exit code: 0"),
    )
    .await;
    s.check(
        "shell_command",
        json!({"command": "exit 7"}),
        Err("Exit code: 7"),
    )
    .await;
    s.check(
        "shell_command",
        json!({"command": "cd /tmp"}),
        Ok("Exit code: 0"),
    )
    .await;
    let r = s
        .check("shell_command", json!({"command": "pwd"}), Ok(""))
        .await;
    assert!(
        r.text().ends_with(&s.root.display().to_string()),
        "{}",
        r.text()
    );
}

#[tokio::test]
async fn bad_shell_input_names_the_field() {
    let s = session();
    for (tool, input, want) in [
        ("shell", json!({"command": []}), "`command` is empty"),
        ("shell", json!({"command": [""]}), "`command` is empty"),
        (
            "shell_command",
            json!({"command": "  "}),
            "`command` is empty",
        ),
        ("exec_command", json!({"cmd": ""}), "`cmd` is empty"),
        (
            "shell",
            json!({"command": ["ls"], "workdir": "nope"}),
            "`workdir`",
        ),
        (
            "shell_command",
            json!({"command": "ls", "workdir": "/definitely/not/here"}),
            "does not exist",
        ),
        (
            "exec_command",
            json!({"cmd": "ls", "workdir": "missing"}),
            "`workdir`",
        ),
        (
            "shell",
            json!({"command": ["ls"], "timeout_ms": 0}),
            "`timeout_ms` is 0",
        ),
        (
            "shell_command",
            json!({"command": "ls", "timeout_ms": 0}),
            "`timeout_ms` is 0",
        ),
        (
            "shell",
            json!({"command": ["ls"], "sandbox_permissions": "bogus"}),
            "`sandbox_permissions`",
        ),
        (
            "exec_command",
            json!({"cmd": "ls", "sandbox_permissions": "with_additional_permissions"}),
            "`sandbox_permissions`",
        ),
        (
            "exec_command",
            json!({"cmd": "ls", "max_output_tokens": 0}),
            "`max_output_tokens` is 0",
        ),
        ("shell", json!({"command": "ls"}), "command"),
        ("shell", json!({"cmd": ["ls"]}), "cmd"),
    ] {
        s.check(tool, input, Err(want)).await;
    }
    // A huge timeout is clamped like Bash's.
    s.check(
        "shell",
        json!({"command": ["true"], "timeout_ms": u64::MAX}),
        Ok("Exit code: 0"),
    )
    .await;
}

#[tokio::test]
async fn exec_command_finishes_or_becomes_a_session() {
    let s = session();
    let r = s
        .check(
            "exec_command",
            json!({"cmd": "echo hi; exit 4"}),
            Ok("Process exited with code 4"),
        )
        .await;
    let text = r.text();
    assert!(text.starts_with("Chunk ID: "), "{text}");
    assert!(
        text.contains("\nWall time: ") && text.ends_with("Output:\nhi\n"),
        "{text}"
    );

    let r = s
        .check(
            "exec_command",
            json!({"cmd": "echo first; sleep 1; echo second", "yield_time_ms": 250}),
            Ok("Process running with session ID "),
        )
        .await;
    let id = r.data["session_id"].as_str().unwrap().to_owned();
    assert!(r.text().contains(&format!("session ID {id}\n")));
    // Polling returns what came since the last read, then the exit.
    let r = s
        .check(
            "write_stdin",
            json!({"session_id": id, "chars": "", "yield_time_ms": 5000}),
            Ok("Process exited with code 0"),
        )
        .await;
    assert!(r.text().ends_with("Output:\nsecond\n"), "{}", r.text());
    // Writing to stdin is refused, saying why.
    s.check(
        "write_stdin",
        json!({"session_id": id, "chars": "y\n"}),
        Err("`chars` must be empty"),
    )
    .await;
    s.check(
        "write_stdin",
        json!({"session_id": "no-such-task"}),
        Err("no-such-task"),
    )
    .await;
    s.check(
        "write_stdin",
        json!({"session_id": ""}),
        Err("`session_id` is empty"),
    )
    .await;
    // The working directory and the subshell.
    std::fs::create_dir(s.root.join("d")).unwrap();
    let r = s
        .check(
            "exec_command",
            json!({"cmd": "pwd", "workdir": "d"}),
            Ok("exited with code 0"),
        )
        .await;
    assert!(
        r.text()
            .ends_with(&format!("{}\n", s.root.join("d").display()))
    );
}

#[tokio::test]
async fn update_plan_writes_the_todo_list() {
    let s = session();
    s.check(
        "update_plan",
        json!({"explanation": "start", "plan": [
            {"step": "Read the code", "status": "completed"},
            {"step": "Fix the bug", "status": "in_progress"},
            {"step": "Run the tests", "status": "pending"}
        ]}),
        Ok("Plan updated"),
    )
    .await;
    let r = s
        .check("update_plan", json!({"plan": []}), Ok("Plan updated"))
        .await;
    assert_eq!(r.text(), "Plan updated");
    for (input, want) in [
        (
            json!({"plan": [{"step": "a", "status": "done"}]}),
            "`plan[0].status` is \"done\": use one of pending, in_progress, completed",
        ),
        (
            json!({"plan": [{"step": "a", "status": "pending"}, {"step": " ", "status": "pending"}]}),
            "`plan[1].step` is empty",
        ),
        (json!({"plan": [{"step": "a"}]}), "status"),
        (json!({"explanation": "x"}), "plan"),
        (
            json!({"plan": [{"step": "a", "status": "pending", "x": 1}]}),
            "x",
        ),
    ] {
        s.check("update_plan", input, Err(want)).await;
    }
}

/// A 1x1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

#[tokio::test]
async fn view_image_shows_images_only() {
    let s = session();
    std::fs::write(s.root.join("dot.png"), PNG).unwrap();
    std::fs::write(s.root.join("notes.txt"), "text").unwrap();
    std::fs::create_dir(s.root.join("pics.png")).unwrap();
    let r = s.call("view_image", json!({"path": "dot.png"})).await;
    assert!(!r.is_error, "{r:#?}");
    assert!(
        r.content
            .iter()
            .all(|b| matches!(b, tool_core::ContentBlock::Image { .. })),
        "{r:#?}"
    );
    assert_eq!(r.content.len(), 1);
    let abs = s.root.join("dot.png").display().to_string();
    assert!(!s.call("view_image", json!({"path": abs})).await.is_error);
    for (input, want) in [
        (
            json!({"path": "notes.txt"}),
            "unable to process image at `notes.txt`",
        ),
        (json!({"path": "missing.png"}), "unable to locate image at"),
        (json!({"path": "pics.png"}), "is not a file"),
        (json!({"path": ""}), "`path` is empty"),
        (json!({}), "path"),
    ] {
        s.check("view_image", input, Err(want)).await;
    }
}

#[tokio::test]
async fn view_image_answers_to_read_rules() {
    let s = session_with(|o, root| o.deny = vec![format!("Read(/{}/secret/**)", root.display())]);
    std::fs::create_dir(s.root.join("secret")).unwrap();
    std::fs::write(s.root.join("secret/x.png"), PNG).unwrap();
    let r = s.call("view_image", json!({"path": "secret/x.png"})).await;
    assert!(r.is_error, "{r:#?}");
    assert!(r.content.iter().all(|b| b.as_text().is_some()), "{r:#?}");
}

/// Argv forms of `rm f`, as a model could send them.
fn rm_variants() -> Vec<Value> {
    let argv: Vec<Vec<&str>> = vec![
        vec!["rm", "f"],
        vec!["rm", "-f", "f"],
        vec!["rm", "--", "f"],
        vec!["/bin/rm", "f"],
        vec!["/usr/bin/rm", "f"],
        vec!["env", "rm", "f"],
        vec!["/usr/bin/env", "rm", "f"],
        vec!["env", "-i", "rm", "f"],
        vec!["nice", "rm", "f"],
        vec!["nohup", "rm", "f"],
        vec!["timeout", "5", "rm", "f"],
        vec!["xargs", "rm", "f"],
        vec!["command", "rm", "f"],
        vec!["exec", "rm", "f"],
        vec!["bash", "-lc", "rm f"],
        vec!["bash", "-c", "rm f"],
        vec!["/bin/bash", "-lc", "rm f"],
        vec!["sh", "-c", "rm f"],
        vec!["/bin/sh", "-c", "rm f"],
        vec!["zsh", "-lc", "rm f"],
        vec!["dash", "-c", "rm f"],
        vec!["bash", "-lc", "true && rm f"],
        vec!["bash", "-lc", "true; rm f"],
        vec!["bash", "-lc", "false || rm f"],
        vec!["bash", "-lc", "echo | rm f"],
        vec!["bash", "-lc", "$(rm f)"],
        vec!["bash", "-lc", "`rm f`"],
        vec!["bash", "-lc", "eval rm f"],
        vec!["bash", "-lc", "eval 'rm f'"],
        vec!["bash", "-lc", "X=rm; $X f"],
        vec!["bash", "-lc", "r\\m f"],
        vec!["bash", "-lc", "'rm' f"],
        vec!["bash", "-lc", "\"rm\" f"],
        vec!["bash", "-lc", "bash -c 'rm f'"],
        vec!["bash", "-lc", "sh -c \"rm f\""],
        vec!["bash", "-lc", "echo rm f | bash"],
        vec!["bash", "-lc", "(rm f)"],
        vec!["bash", "-lc", "{ rm f; }"],
        vec!["bash", "-lc", "if true; then rm f; fi"],
        vec!["bash", "-lc", "for i in 1; do rm f; done"],
        vec!["sh", "-c", "exec rm f"],
        vec!["bash", "-c", "--", "rm f"],
        vec!["bash", "rm-script"],
        vec!["find", ".", "-name", "f", "-delete"],
        vec!["find", ".", "-name", "f", "-exec", "rm", "{}", ";"],
    ];
    argv.into_iter().map(|a| json!({ "command": a })).collect()
}

fn prepare_victim(root: &Path) {
    std::fs::write(root.join("f"), "keep").unwrap();
    std::fs::write(root.join("rm-script"), "rm f\n").unwrap();
}

#[tokio::test]
async fn a_bash_deny_rule_holds_for_shell_even_in_bypass_mode() {
    let s = session_with(|o, _| o.deny = vec!["Bash(rm:*)".into(), "Bash(find:*)".into()]);
    let variants = rm_variants();
    assert!(variants.len() >= 30);
    for input in variants {
        prepare_victim(&s.root);
        let r = s.call("shell", input.clone()).await;
        assert!(r.is_error, "{input}: {r:#?}");
        assert!(s.root.join("f").exists(), "{input} removed f: {r:#?}");
    }
    // The same for the string forms.
    for cmd in [
        "rm f",
        "/bin/rm f",
        "env rm f",
        "sh -c 'rm f'",
        "bash -lc 'rm f'",
    ] {
        for tool in ["shell_command", "exec_command"] {
            prepare_victim(&s.root);
            let key = if tool == "exec_command" {
                "cmd"
            } else {
                "command"
            };
            let r = s.call(tool, json!({ key: cmd })).await;
            assert!(r.is_error, "{tool} {cmd}: {r:#?}");
            assert!(s.root.join("f").exists(), "{tool} {cmd} removed f");
        }
    }
}

#[tokio::test]
async fn without_an_allow_rule_a_write_asks_and_headless_refuses() {
    let s = session_with(|o, _| o.mode = Some(PermissionMode::Default));
    for input in [
        json!({"command": ["touch", "new"]}),
        json!({"command": ["bash", "-lc", "echo x > new"]}),
    ] {
        let r = s.call("shell", input.clone()).await;
        assert!(r.is_error, "{input}: {r:#?}");
        assert!(!s.root.join("new").exists(), "{input} created the file");
    }
    let r = s.call("exec_command", json!({"cmd": "touch new"})).await;
    assert!(r.is_error, "{r:#?}");
    assert!(!s.root.join("new").exists());
    // A read-only command runs without a rule.
    s.check("shell", json!({"command": ["ls"]}), Ok("Exit code: 0"))
        .await;
    // An allow rule lets it run.
    let s = session_with(|o, _| {
        o.mode = Some(PermissionMode::Default);
        o.allow = vec!["Bash(touch:*)".into()];
    });
    s.check(
        "shell",
        json!({"command": ["touch", "new"]}),
        Ok("Exit code: 0"),
    )
    .await;
    assert!(s.root.join("new").exists());
}

#[tokio::test]
async fn plan_mode_refuses_writes() {
    let s = session_with(|o, _| o.mode = Some(PermissionMode::Plan));
    for (tool, input) in [
        ("shell", json!({"command": ["touch", "new"]})),
        ("shell_command", json!({"command": "echo x > new"})),
        ("exec_command", json!({"cmd": "touch new"})),
    ] {
        let r = s.call(tool, input).await;
        assert!(r.is_error, "{tool}: {r:#?}");
        assert!(!s.root.join("new").exists(), "{tool} wrote in plan mode");
    }
}

#[tokio::test]
async fn escalation_always_asks() {
    // Even with an allow rule and in bypass mode, leaving the sandbox asks a person; headless
    // that is a refusal.
    let s = session_with(|o, _| o.allow = vec!["Bash(touch:*)".into()]);
    for (tool, input) in [
        (
            "shell",
            json!({"command": ["touch", "esc"], "sandbox_permissions": "require_escalated", "justification": "Do you want to create esc?"}),
        ),
        (
            "shell",
            json!({"command": ["touch", "esc"], "with_escalated_permissions": true}),
        ),
        (
            "shell_command",
            json!({"command": "touch esc", "sandbox_permissions": "require_escalated"}),
        ),
        (
            "exec_command",
            json!({"cmd": "touch esc", "sandbox_permissions": "require_escalated"}),
        ),
    ] {
        let r = s.call(tool, input.clone()).await;
        assert!(r.is_error, "{tool} {input}: {r:#?}");
        assert!(
            !s.root.join("esc").exists(),
            "{tool} {input} ran unsandboxed"
        );
    }
    // Refused outright when the settings forbid unsandboxed commands.
    let s = session_with(|o, root| {
        let file = root.join("home/extra.json");
        std::fs::write(&file, r#"{"sandbox":{"allowUnsandboxedCommands":false}}"#).unwrap();
        o.settings_file = Some(file);
    });
    let r = s
        .call(
            "shell",
            json!({"command": ["touch", "esc"], "sandbox_permissions": "require_escalated"}),
        )
        .await;
    assert!(
        r.is_error && r.text().contains("allowUnsandboxedCommands"),
        "{r:#?}"
    );
    assert!(!s.root.join("esc").exists());
}
