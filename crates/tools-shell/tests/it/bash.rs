//! Bash in the foreground: output, exit codes, the working directory, process groups on
//! timeout and cancellation (no process outlives its call), the output cap and spill.

use std::time::Duration;

use serde_json::json;
use tool_core::{ProgressSink, ToolCall};

use crate::{Fixture, data_str, survivors};

#[tokio::test]
async fn runs_the_command_as_one_argument() {
    let f = Fixture::new();
    let r = f
        .bash(r#"printf '%s\n' 'a\b$c' "x  y"; echo err >&2"#)
        .await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), "a\\b$c\nx  y\nerr");
    assert_eq!(r.data["exitCode"], 0);
    let r = f.bash("echo \"$GIT_EDITOR:$PAGER\"").await;
    assert_eq!(r.text(), "true:cat");
}

#[tokio::test]
async fn exit_codes_and_semantic_exits() {
    let f = Fixture::new();
    let r = f.bash("echo out; exit 3").await;
    assert!(r.is_error);
    assert_eq!(r.text(), "Exit code 3\nout");
    assert_eq!(r.data["exitCode"], 3);
    for (cmd, meaning) in [
        ("echo a | grep b", "No matches found"),
        ("diff <(echo a) <(echo b) > /dev/null", "Files differ"),
        ("test -f /nonexistent", "Condition is false"),
        ("[ 1 = 2 ]", "Condition is false"),
    ] {
        let r = f.bash(cmd).await;
        assert!(!r.is_error, "{cmd}: {}", r.text());
        assert_eq!(data_str(&r, "returnCodeInterpretation"), meaning, "{cmd}");
    }
    // Status 2 of grep is still an error.
    let r = f.bash("grep x /nonexistent/file").await;
    assert!(r.is_error);
    assert!(r.text().starts_with("Exit code 2"), "{}", r.text());
}

#[tokio::test]
async fn stdin_is_closed() {
    // A command reading stdin gets EOF, it does not hang.
    let f = Fixture::new();
    let r = f.bash("cat; echo done").await;
    assert_eq!(r.text(), "done");
}

#[tokio::test]
async fn cwd_persists_and_resets_outside_the_working_dirs() {
    let f = Fixture::new();
    std::fs::create_dir(f.root.join("sub dir")).unwrap();
    let r = f.bash("cd 'sub dir'").await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(f.ctx.cwd(), f.root.join("sub dir"));
    assert_eq!(
        f.bash("pwd").await.text(),
        f.root.join("sub dir").display().to_string()
    );
    // Shell variables do not persist.
    f.bash("export FOO=1").await;
    assert_eq!(f.bash("echo \"[$FOO]\"").await.text(), "[]");
    let r = f.bash("cd /").await;
    assert!(
        r.text()
            .contains(&format!("Shell cwd was reset to {}", f.root.display())),
        "{}",
        r.text()
    );
    assert_eq!(f.ctx.cwd(), f.root);
    assert!(data_str(&r, "stderr").starts_with("Shell cwd was reset"));
}

/// The fixtures the process-lifecycle tests run under: the default sandbox and none (the
/// process-group path without bubblewrap's pid namespace).
fn lifecycle_fixtures() -> Vec<Fixture> {
    vec![
        Fixture::new(),
        Fixture::with(
            tool_core::PermissionMode::BypassPermissions,
            &[],
            tools_shell::SandboxSettings {
                enabled: false,
                ..tools_shell::SandboxSettings::default()
            },
        ),
    ]
}

#[tokio::test]
async fn timeout_kills_the_whole_group() {
    // `sh -c 'sleep 1000 & sleep 1000'` with a 1 s timeout: both sleeps die.
    for (i, f) in lifecycle_fixtures().into_iter().enumerate() {
        let marker = format!("1000.013{i}");
        let r = f
        .call(
            "Bash",
            json!({"command": format!("echo started; sh -c 'sleep {marker} & sleep {marker}'"), "timeout": 1000}),
        )
        .await;
        assert!(r.is_error);
        let text = r.text();
        assert!(text.contains("Command timed out after 1s"), "{text}");
        assert!(text.contains("started"), "output so far is kept: {text}");
        assert_eq!(r.data["timedOut"], true);
        assert_eq!(survivors(&marker).await, Vec::<u32>::new());
    }
}

#[tokio::test]
async fn sigterm_ignored_escalates_to_sigkill() {
    // A command that ignores SIGTERM is killed with SIGKILL after the grace period.
    for (i, f) in lifecycle_fixtures().into_iter().enumerate() {
        let marker = format!("100.014{i}");
        let r = f
        .call(
            "Bash",
            json!({"command": format!("trap '' TERM; sh -c \"trap '' TERM; sleep {marker}\" & sleep {marker}"), "timeout": 500}),
        )
        .await;
        assert!(r.is_error);
        assert!(r.text().contains("timed out"), "{}", r.text());
        assert_eq!(survivors(&marker).await, Vec::<u32>::new());
    }
}

#[tokio::test]
async fn large_output_is_capped_and_spilled_whole() {
    // Output past the cap is spilled whole and bounded in memory, at 64 MiB (the benchmark
    // does the GiB).
    let f = Fixture::new();
    let r = f.bash("yes | head -c 64M").await;
    assert!(!r.is_error, "{}", &r.text()[..200.min(r.text().len())]);
    let text = r.text();
    assert!(text.starts_with("y\ny\n"));
    assert!(
        text.contains("lines truncated] …"),
        "{}",
        &text[text.len() - 300..]
    );
    let path = data_str(&r, "persistedOutputPath");
    assert!(
        text.ends_with(&format!("saved to: {path}")),
        "{}",
        &text[text.len() - 300..]
    );
    assert_eq!(std::fs::metadata(path).unwrap().len(), 64 << 20);
    assert_eq!(r.data["persistedOutputSize"], 64 << 20);
    assert!(text.chars().count() < tools_shell::MAX_OUTPUT_CHARS + 500);
    // 30,000 characters of "y\n" keep 15,000 lines; the rest is counted.
    let lines_total = (64 << 20) / 2;
    assert!(
        text.contains(&format!("[{} lines truncated]", lines_total - 15_000)),
        "{}",
        &text[text.len() - 300..]
    );
}

#[tokio::test]
async fn cancellation_kills_the_tree_and_returns_a_result() {
    for (i, f) in lifecycle_fixtures().into_iter().enumerate() {
        let marker = format!("300.017{i}");
        let ctx = f.ctx.child();
        let token = ctx.cancel_token().clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(500)).await;
            token.cancel();
        });
        let call = ToolCall::new(
            "Bash",
            json!({"command": format!("echo begun; sleep {marker} & sleep {marker}")}),
        );
        let r = f.pool.execute(call, &ctx, ProgressSink::default()).await;
        assert!(r.is_error);
        assert!(
            r.text().contains("Command was aborted before completion"),
            "{}",
            r.text()
        );
        assert!(r.text().contains("begun"), "{}", r.text());
        assert_eq!(r.data["interrupted"], true);
        assert_eq!(survivors(&marker).await, Vec::<u32>::new());
    }
}

#[tokio::test]
async fn bad_commands_are_refused_before_running() {
    // A line that does not parse runs nothing.
    let f = Fixture::new();
    for bad in [
        "touch made; echo \"abc",
        "touch made && ls &&",
        "touch made\0",
    ] {
        let r = f.bash(bad).await;
        assert!(r.is_error, "{bad:?}");
        assert!(
            r.text().contains("syntax error") || r.text().contains("NUL"),
            "{}",
            r.text()
        );
    }
    assert!(!f.root.join("made").exists());
    let r = f.bash("  ").await;
    assert!(r.text().contains("The command is empty"), "{}", r.text());
}

#[tokio::test]
async fn read_only_commands_are_concurrency_safe() {
    let f = Fixture::new();
    let bash = f.pool.get("Bash").unwrap();
    let input = |c: &str| bash.parse_input(&json!({"command": c})).unwrap();
    assert!(bash.is_read_only(&input("git status && ls -la")));
    assert!(bash.is_concurrency_safe(&input("cat a | wc -l")));
    assert!(!bash.is_read_only(&input("rm -rf x")));
    assert!(!bash.is_concurrency_safe(&input("ls > out")));
    assert!(bash.cancels_siblings_on_error());
}

#[tokio::test]
async fn a_failing_bash_cancels_its_siblings() {
    let f = Fixture::new();
    let marker = "200.0191";
    let calls = vec![
        ToolCall::new("Bash", json!({"command": format!("sleep {marker}")})),
        ToolCall::new("Bash", json!({"command": "cat /nonexistent/x"})),
    ];
    // Read-only (sleep, cat), so they run together; cat's failure cancels the sleep.
    let results = f.pool.batch(calls, &f.ctx).await;
    assert!(results[1].is_error);
    assert!(results[0].is_error);
    assert!(
        results[0]
            .text()
            .contains("Cancelled: parallel tool call Bash errored"),
        "{}",
        results[0].text()
    );
    assert_eq!(survivors(marker).await, Vec::<u32>::new());
}

#[tokio::test]
async fn a_long_command_reports_its_output_lines_as_progress() {
    for f in lifecycle_fixtures() {
        let events = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = {
            let events = std::sync::Arc::clone(&events);
            ProgressSink::new(move |e| events.lock().unwrap().push(e))
        };
        let command = "for i in 1 2 3 4; do echo line$i; sleep 0.7; done";
        let call = ToolCall::new("Bash", json!({ "command": command }));
        let r = f.pool.execute(call, &f.ctx, sink).await;
        assert!(!r.is_error, "{}", r.text());
        let events = events.lock().unwrap().clone();
        assert!(!events.is_empty(), "no progress for a 2.8 s command");
        assert!(events[0].message.starts_with("line1"), "{events:?}");
        // Counts of lines reported so far: strictly increasing, never past what was printed.
        let counts: Vec<f64> = events.iter().filter_map(|e| e.progress).collect();
        assert!(counts.windows(2).all(|w| w[0] < w[1]), "{events:?}");
        assert!(
            counts.iter().all(|&c| (1.0..=4.0).contains(&c)),
            "{events:?}"
        );
        let text: String = events.iter().map(|e| format!("{}\n", e.message)).collect();
        let seen: Vec<&str> = text.lines().collect();
        let want: Vec<String> = (1..=seen.len()).map(|i| format!("line{i}")).collect();
        assert_eq!(seen, want, "each line once, in order");
    }
}
