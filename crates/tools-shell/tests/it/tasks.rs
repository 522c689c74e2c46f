//! Background tasks: run_in_background with readiness conditions, TaskOutput, TaskStop, and
//! tasks of other kinds (futures) through the task manager.

use std::time::Duration;

use serde_json::json;
use tool_core::{PermissionMode, TaskFinish, TaskKind, TaskRun, TaskSpec, TaskStatus};

use crate::{Fixture, data_str, default_sandbox, survivors};

#[tokio::test]
async fn readiness_regex_then_task_output_then_task_stop() {
    let f = Fixture::new();
    let marker = "1000.0401";
    let r = f
        .call(
            "Bash",
            json!({
                "command": format!("echo booting; sleep 0.3; echo 'Listening on port 8080'; sleep {marker}"),
                "run_in_background": true,
                "ready_pattern": "Listening on port \\d+",
                "description": "Start the dev server"
            }),
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    let id = data_str(&r, "backgroundTaskId").to_owned();
    let path = data_str(&r, "persistedOutputPath").to_owned();
    assert!(r.text().starts_with(&format!(
        "Command running in background with ID: {id}. Output is being written to: {path}"
    )));
    assert!(
        r.text()
            .contains("Ready: a line matched ready_pattern: Listening on port 8080"),
        "{}",
        r.text()
    );
    assert_eq!(r.data["ready"], true);

    let out = f
        .call("TaskOutput", json!({"task_id": id, "block": false}))
        .await;
    assert!(!out.is_error, "{}", out.text());
    let text = out.text();
    assert!(
        text.contains("<retrieval_status>not_ready</retrieval_status>"),
        "{text}"
    );
    assert!(text.contains("<status>running</status>"), "{text}");
    assert!(text.contains("<task_type>local_bash</task_type>"), "{text}");
    assert!(text.contains("booting\nListening on port 8080"), "{text}");

    let stop = f.call("TaskStop", json!({"task_id": id})).await;
    assert!(!stop.is_error, "{}", stop.text());
    assert!(
        data_str(&stop, "message")
            .starts_with(&format!("Successfully stopped task: {id} (echo booting"))
    );
    assert_eq!(survivors(marker).await, Vec::<u32>::new());

    let out = f.call("TaskOutput", json!({"task_id": id})).await;
    assert!(
        out.text()
            .contains("<retrieval_status>success</retrieval_status>"),
        "{}",
        out.text()
    );
    assert!(
        out.text().contains("<status>killed</status>"),
        "{}",
        out.text()
    );

    let again = f.call("KillShell", json!({"shell_id": id})).await;
    assert!(again.is_error);
    assert!(
        again
            .text()
            .contains(&format!("Task {id} is not running (status: killed)")),
        "{}",
        again.text()
    );
}

#[tokio::test]
async fn readiness_port_and_its_failures() {
    // The port must be reachable from here: the sandbox's network is on.
    let f = Fixture::with(
        PermissionMode::BypassPermissions,
        &[],
        tools_shell::SandboxSettings {
            network: true,
            ..default_sandbox()
        },
    );
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let have_python = std::process::Command::new("python3")
        .arg("-V")
        .output()
        .is_ok();
    if have_python {
        let r = f
            .call(
                "Bash",
                json!({
                    "command": format!("sleep 0.2; exec python3 -m http.server {port} --bind 127.0.0.1"),
                    "run_in_background": true,
                    "ready_port": port,
                    "ready_timeout": 20000
                }),
            )
            .await;
        assert!(!r.is_error, "{}", r.text());
        assert!(
            r.text()
                .contains(&format!("Ready: 127.0.0.1:{port} accepts connections")),
            "{}",
            r.text()
        );
        let id = data_str(&r, "backgroundTaskId").to_owned();
        let stop = f.call("TaskStop", json!({"task_id": id})).await;
        assert!(!stop.is_error, "{}", stop.text());
    }
    // The command ends before it is ready.
    let r = f
        .call(
            "Bash",
            json!({"command": "echo nope; exit 4", "run_in_background": true, "ready_pattern": "never"}),
        )
        .await;
    assert!(r.is_error);
    assert!(
        r.text()
            .contains("Not ready: the command ended (failed) with exit code 4"),
        "{}",
        r.text()
    );
    assert_eq!(r.data["ready"], false);
    // The condition times out; the command keeps running.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let r = f
        .call(
            "Bash",
            json!({"command": "sleep 30.0402", "run_in_background": true, "ready_port": port, "ready_timeout": 300}),
        )
        .await;
    assert!(r.is_error);
    assert!(
        r.text()
            .contains("not met within 0.3s; the command is still running"),
        "{}",
        r.text()
    );
    let id = data_str(&r, "backgroundTaskId").to_owned();
    assert_eq!(
        f.ctx.tasks().get(&id).await.unwrap().status,
        TaskStatus::Running
    );
    f.ctx.tasks().stop(&id).await.unwrap();
    assert_eq!(survivors("30.0402").await, Vec::<u32>::new());
}

#[tokio::test]
async fn completion_exit_codes_and_tail() {
    let f = Fixture::new();
    let r = f
        .call(
            "Bash",
            json!({"command": "seq 1 20000; exit 3", "run_in_background": true}),
        )
        .await;
    let id = data_str(&r, "backgroundTaskId").to_owned();
    let out = f
        .call("TaskOutput", json!({"task_id": id, "timeout": 20000}))
        .await;
    let text = out.text();
    assert!(
        text.contains("<retrieval_status>success</retrieval_status>"),
        "{text}"
    );
    assert!(text.contains("<status>failed</status>"), "{text}");
    assert!(text.contains("<exit_code>3</exit_code>"), "{text}");
    assert!(text.contains("[Truncated. Full output: "), "{text}");
    assert!(
        text.contains("\n20000\n</output>"),
        "{}",
        &text[text.len() - 100..]
    );
    assert!(!text.contains("\n1\n2\n3\n"));

    let r = f
        .call(
            "Bash",
            json!({"command": "echo ok", "run_in_background": true}),
        )
        .await;
    let id = data_str(&r, "backgroundTaskId").to_owned();
    let out = f.call("BashOutputTool", json!({"task_id": id})).await;
    assert!(
        out.text().contains("<status>completed</status>"),
        "{}",
        out.text()
    );
    assert!(
        out.text().contains("<exit_code>0</exit_code>"),
        "{}",
        out.text()
    );
    assert!(
        out.text().contains("<output>\nok\n</output>"),
        "{}",
        out.text()
    );
}

#[tokio::test]
async fn validation_messages() {
    let f = Fixture::new();
    let r = f.call("TaskOutput", json!({"task_id": " "})).await;
    assert!(r.text().contains("Task ID is required"), "{}", r.text());
    let r = f.call("TaskOutput", json!({"task_id": "zz9"})).await;
    assert!(
        r.text().contains("No task found with ID: zz9"),
        "{}",
        r.text()
    );
    let r = f.call("TaskStop", json!({})).await;
    assert!(
        r.text().contains("Missing required parameter: task_id"),
        "{}",
        r.text()
    );
    let r = f.call("TaskStop", json!({"task_id": "zz9"})).await;
    assert!(
        r.text().contains("No task found with ID: zz9"),
        "{}",
        r.text()
    );
    let r = f
        .call("Bash", json!({"command": "ls", "ready_pattern": "x"}))
        .await;
    assert!(
        r.text().contains("only apply with run_in_background"),
        "{}",
        r.text()
    );
    let r = f
        .call(
            "Bash",
            json!({"command": "ls", "run_in_background": true, "ready_pattern": "("}),
        )
        .await;
    assert!(
        r.text()
            .contains("ready_pattern is not a valid regular expression"),
        "{}",
        r.text()
    );
}

#[tokio::test]
async fn future_tasks_of_other_kinds() {
    let f = Fixture::new();
    let tasks = f.ctx.tasks();
    let waiting = tasks
        .start(TaskSpec {
            kind: TaskKind::LocalAgent,
            description: "an agent that waits".into(),
            run: TaskRun::Future(Box::new(|token| {
                Box::pin(async move {
                    token.cancelled().await;
                    TaskFinish {
                        status: TaskStatus::Killed,
                        exit_code: None,
                        output: "stopped\n".into(),
                    }
                })
            })),
        })
        .await
        .unwrap();
    assert_eq!(waiting.status, TaskStatus::Running);
    let stop = f.call("TaskStop", json!({"task_id": waiting.id})).await;
    assert!(!stop.is_error, "{}", stop.text());
    assert_eq!(stop.data["task_type"], "local_agent");
    assert_eq!(
        tasks.get(&waiting.id).await.unwrap().status,
        TaskStatus::Killed
    );

    let done = tasks
        .start(TaskSpec {
            kind: TaskKind::LocalAgent,
            description: "an agent that answers".into(),
            run: TaskRun::Future(Box::new(|_| {
                Box::pin(async {
                    TaskFinish {
                        status: TaskStatus::Completed,
                        exit_code: Some(0),
                        output: "the answer\n".into(),
                    }
                })
            })),
        })
        .await
        .unwrap();
    let out = f.call("AgentOutputTool", json!({"task_id": done.id})).await;
    assert!(
        out.text().contains("<output>\nthe answer\n</output>"),
        "{}",
        out.text()
    );
    assert!(
        out.text().contains("<task_type>local_agent</task_type>"),
        "{}",
        out.text()
    );
    let all = tasks.list().await.unwrap();
    assert_eq!(all.len(), 2);

    // Shell tasks through the generic trait run in the manager's sandbox.
    let info = tasks
        .start(TaskSpec {
            kind: TaskKind::LocalBash,
            description: "generic".into(),
            run: TaskRun::Shell {
                command: "echo \"$GREETING\"".into(),
                cwd: f.root.clone(),
                env: vec![("GREETING".into(), "it's me".into())],
            },
        })
        .await
        .unwrap();
    let info = tasks
        .wait(&info.id, Duration::from_secs(20), f.ctx.cancel_token())
        .await
        .unwrap();
    assert_eq!(info.status, TaskStatus::Completed);
    assert_eq!(
        std::fs::read_to_string(&info.output_path).unwrap(),
        "it's me\n"
    );
}

/// The files (not directories) under `dir` this process holds open.
fn open_under(dir: &std::path::Path) -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |fds| {
        fds.flatten()
            .filter(|fd| std::fs::metadata(fd.path()).is_ok_and(|m| m.is_file()))
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .filter(|target| target.starts_with(dir))
            .count()
    })
}

#[tokio::test]
async fn a_finished_task_holds_no_file_and_its_output_may_be_pruned_or_replaced() {
    let f = Fixture::new();
    let mut ids = Vec::new();
    for i in 0..20 {
        let r = f
            .call(
                "Bash",
                json!({"command": format!("echo out {i}"), "run_in_background": true}),
            )
            .await;
        ids.push(data_str(&r, "backgroundTaskId").to_owned());
    }
    for id in &ids {
        let out = f
            .call("TaskOutput", json!({"task_id": id, "timeout": 20000}))
            .await;
        assert!(
            out.text().contains("<status>completed</status>"),
            "{}",
            out.text()
        );
    }
    // Every task ended: none of their output files is open any more…
    let tasks_dir = f.state.join("tasks");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while open_under(&tasks_dir) > 0 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(open_under(&tasks_dir), 0, "finished tasks keep files open");
    // …and each is read again through its directory.
    let out = f.call("TaskOutput", json!({"task_id": ids[3]})).await;
    assert!(
        out.text().contains("<output>\nout 3\n</output>"),
        "{}",
        out.text()
    );
    // A file put in the output's place is not read.
    let info = f.ctx.tasks().get(&ids[4]).await.unwrap();
    std::fs::remove_file(&info.output_path).unwrap();
    std::fs::write(&info.output_path, "planted\n").unwrap();
    let out = f.call("TaskOutput", json!({"task_id": ids[4]})).await;
    assert!(
        out.is_error && !out.text().contains("planted"),
        "{}",
        out.text()
    );
    assert!(out.text().contains("replaced"), "{}", out.text());
    // A pruned output is said to be pruned; the status is still known.
    let info = f.ctx.tasks().get(&ids[5]).await.unwrap();
    std::fs::remove_file(&info.output_path).unwrap();
    let out = f.call("TaskOutput", json!({"task_id": ids[5]})).await;
    assert!(out.is_error, "{}", out.text());
    assert!(out.text().contains("pruned"), "{}", out.text());
    assert_eq!(
        f.ctx.tasks().get(&ids[5]).await.unwrap().status,
        TaskStatus::Completed
    );
    // The session's end stops what runs and deletes the task directory.
    let r = f
        .call(
            "Bash",
            json!({"command": "sleep 600 # 30.0777", "run_in_background": true}),
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    let dir = info.output_path.parent().unwrap().to_path_buf();
    f.ctx.close().await;
    assert_eq!(survivors("30.0777").await, Vec::<u32>::new());
    assert!(!dir.exists(), "{} is left", dir.display());
    assert!(
        f.ctx.tasks().get(&ids[0]).await.is_err(),
        "a closed manager forgets its tasks"
    );
}

#[tokio::test]
async fn a_task_that_ended_before_anyone_waited_is_seen_ended_by_every_wait() {
    let f = Fixture::new();
    let r = f
        .call(
            "Bash",
            json!({"command": "echo early", "run_in_background": true}),
        )
        .await;
    let id = data_str(&r, "backgroundTaskId").to_owned();
    // Nobody waits while it runs: its status is read without subscribing.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !f.ctx.tasks().get(&id).await.unwrap().status.is_terminal() {
        assert!(std::time::Instant::now() < deadline, "the task never ended");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A blocking TaskOutput answers at once instead of after its 10-minute timeout…
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        f.call(
            "TaskOutput",
            json!({"task_id": id, "block": true, "timeout": 600000}),
        ),
    )
    .await
    .expect("TaskOutput waited for a task that had ended");
    assert!(
        out.text().contains("<status>completed</status>"),
        "{}",
        out.text()
    );
    // …and so does the wait of the session's end.
    let waited = tokio::time::timeout(
        Duration::from_secs(60),
        f.ctx
            .tasks()
            .wait(&id, Duration::from_secs(600), f.ctx.cancel_token()),
    )
    .await
    .expect("the wait for an ended task ran to its timeout")
    .unwrap();
    assert_eq!(waited.status, TaskStatus::Completed);
}
