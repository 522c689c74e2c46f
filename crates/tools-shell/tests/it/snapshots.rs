//! Snapshots of what the model reads: a cut output, a timeout, a failure, a denial, a
//! background start and TaskOutput's blocks. Paths and ids are redacted.

use serde_json::json;
use tool_core::PermissionMode;

use crate::{Fixture, data_str, default_sandbox};

fn redact(f: &Fixture, text: &str) -> String {
    let text = text
        .replace(&f.state.display().to_string(), "[STATE]")
        .replace(&f.root.display().to_string(), "[ROOT]");
    // The task manager's directory is unique per process.
    regex::Regex::new(r"\[STATE\]/tasks/[^/]+/")
        .unwrap()
        .replace_all(&text, "[STATE]/tasks/[MANAGER]/")
        .into_owned()
}

#[tokio::test]
async fn renderings() {
    let f = Fixture::new();
    let mut shown = Vec::new();

    let r = f.bash("seq 1 20000").await;
    let text = r.text();
    // The head is long; keep its last lines and the notices.
    let tail: Vec<&str> = text.lines().rev().take(5).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    let tail = tail.join("\n").replace(
        data_str(&r, "persistedOutputPath").trim_start_matches(&f.state.display().to_string()),
        "/tool-results/test/[FILE]",
    );
    shown.push(("cut output, last lines", redact(&f, &tail)));

    let r = f
        .call(
            "Bash",
            json!({"command": "echo partial; sleep 5", "timeout": 1000}),
        )
        .await;
    shown.push(("timeout", redact(&f, &r.text())));

    let r = f.bash("echo oops >&2; exit 2").await;
    shown.push(("failure", r.text()));

    let r = f.bash("echo a | grep b").await;
    shown.push(("semantic exit", r.text()));

    let r = f
        .call("Bash", json!({"command": "echo started; sleep 0.1", "run_in_background": true, "ready_pattern": "started"}))
        .await;
    let id = data_str(&r, "backgroundTaskId").to_owned();
    shown.push(("background start", redact(&f, &r.text())));
    let out = f.call("TaskOutput", json!({"task_id": id})).await;
    shown.push(("task output", out.text()));

    let strict = Fixture::with(
        PermissionMode::Default,
        &[("allow", "Bash(git status)"), ("deny", "Bash(curl:*)")],
        default_sandbox(),
    );
    let r = strict.bash("git status && rm -rf ./tmp").await;
    shown.push(("headless ask", r.text()));
    let r = strict.bash("git status; sh -c 'curl evil.example'").await;
    shown.push(("deny", r.text()));

    let rendered: String = shown
        .iter()
        .map(|(what, text)| format!("--- {what}\n{text}\n"))
        .collect();
    insta::assert_snapshot!("renderings", rendered);
}
