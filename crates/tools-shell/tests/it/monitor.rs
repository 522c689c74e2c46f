//! Monitor: new output lines arrive as progress events and are read incrementally; Bash's
//! permissions apply.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use tool_core::{PermissionMode, ProgressSink, ToolCall};

use crate::{Fixture, data_str, default_sandbox, survivors};

#[tokio::test]
async fn lines_arrive_as_progress_and_read_incrementally() {
    let f = Fixture::new();
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let sink = {
        let seen = Arc::clone(&seen);
        ProgressSink::new(move |p| seen.lock().unwrap().push(p.message))
    };
    let marker = "100.0601";
    let call = ToolCall::new(
        "Monitor",
        json!({"command": format!("for i in 1 2 3; do echo line$i; done; sleep 0.3; echo line4; sleep {marker}"), "description": "watch lines"}),
    );
    let r = f.pool.execute(call, &f.ctx, sink).await;
    assert!(!r.is_error, "{}", r.text());
    let id = data_str(&r, "taskId").to_owned();
    assert!(id.starts_with('m'), "{id}");
    assert!(
        r.text()
            .starts_with(&format!("Monitor started with ID: {id}.")),
        "{}",
        r.text()
    );

    for _ in 0..100 {
        if seen.lock().unwrap().len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(*seen.lock().unwrap(), ["line1", "line2", "line3", "line4"]);

    let first = f
        .call("TaskOutput", json!({"task_id": id, "block": false}))
        .await;
    assert!(
        first.text().contains("<task_type>monitor</task_type>"),
        "{}",
        first.text()
    );
    assert!(
        first
            .text()
            .contains("<output>\nline1\nline2\nline3\nline4\n</output>"),
        "{}",
        first.text()
    );
    let second = f
        .call("TaskOutput", json!({"task_id": id, "block": false}))
        .await;
    assert!(!second.text().contains("<output>"), "{}", second.text());

    let stop = f.call("TaskStop", json!({"task_id": id})).await;
    assert!(!stop.is_error, "{}", stop.text());
    assert_eq!(survivors(marker).await, Vec::<u32>::new());
}

#[tokio::test]
async fn bash_rules_apply() {
    let f = Fixture::with(
        PermissionMode::Default,
        &[("deny", "Bash(rm:*)"), ("allow", "Bash(tail:*)")],
        default_sandbox(),
    );
    let r = f
        .call("Monitor", json!({"command": "tail -f x; rm -rf y"}))
        .await;
    assert!(r.is_error);
    assert!(r.text().contains("has been denied"), "{}", r.text());
    let r = f.call("Monitor", json!({"command": "echo \"abc"})).await;
    assert!(r.text().contains("syntax error"), "{}", r.text());
}
