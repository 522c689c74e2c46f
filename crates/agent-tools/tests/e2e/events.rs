//! Events reach the driver: with the agent-triggers build, a live `batch` prints fired cron
//! prompts, Monitor lines and background tasks that ended as event lines between results.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::{Project, triggers_binary};

/// A live `batch` of the agent-triggers build: send lines, read lines.
struct Live {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: mpsc::Receiver<Value>,
}

impl Live {
    fn start(project: &Project) -> Self {
        let mut child = Command::new(triggers_binary())
            .args([
                "--cwd",
                project.root_str(),
                "--mode",
                "bypassPermissions",
                "batch",
            ])
            .env("AGENT_TOOLS_HOME", project.home())
            .env("HOME", project.home())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str(&line)
                    && tx.send(v).is_err()
                {
                    break;
                }
            }
        });
        Live {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, call: Value) {
        self.stdin.write_all(call.to_string().as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next line that satisfies `want`, within a bound (not a timing assertion: the
    /// bound only keeps a broken build from hanging the suite).
    fn next(&self, what: &str, want: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(120))
                .unwrap_or_else(|_| panic!("no {what} arrived"));
            if want(&line) {
                return line;
            }
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_due_cron_job_is_an_event_line_in_batch() {
    let p = Project::new(&[".agent-tools/"]);
    let created = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - 180_000;
    // A durable one-shot job that came due while no session ran.
    let job = json!([{"id": "feedbeef", "cron": "* * * * *", "prompt": "check the build",
        "recurring": false, "durable": true, "createdAt": created}]);
    std::fs::write(
        p.root().join(".agent-tools/scheduled_tasks.json"),
        job.to_string(),
    )
    .unwrap();
    // The file is the project's: its jobs run once a person approved it.
    p.trust();
    let mut live = Live::start(&p);
    live.send(json!({"tool": "CronList", "input": {}}));
    // The job fires on the scheduler's first tick: its event line may come before or after
    // the result line.
    let mut seen: Vec<Value> = Vec::new();
    while !(seen.iter().any(|l| l["event"] == "cron")
        && seen.iter().any(|l| l["tool"] == "CronList"))
    {
        seen.push(live.next("line", |_| true));
    }
    let event = seen.iter().find(|l| l["event"] == "cron").cloned().unwrap();
    assert_eq!(event["id"], "feedbeef", "{event}");
    assert_eq!(event["text"], "check the build", "{event}");
    assert!(event.get("tool").is_none(), "{event}");
    // One-shot: it is gone afterwards.
    live.send(json!({"tool": "CronList", "input": {}}));
    let listed = live.next("CronList result", |l| l["tool"] == "CronList");
    assert!(!listed.to_string().contains("feedbeef"), "{listed}");
}

#[test]
fn monitor_lines_and_ended_tasks_are_event_lines_in_batch() {
    let p = Project::new(&[]);
    let mut live = Live::start(&p);
    live.send(json!({"tool": "Monitor", "input": {
        "command": "for i in 1 2 3; do echo line$i; sleep 0.2; done",
        "description": "three lines"}}));
    // The first lines may arrive before the result line: read every line, in order.
    let mut started = Value::Null;
    let mut text = String::new();
    while started.is_null() || !text.contains("line3") {
        let l = live.next("line", |_| true);
        if l["tool"] == "Monitor" {
            started = l;
        } else if l["event"] == "monitor" {
            text.push_str(l["text"].as_str().unwrap_or_default());
            text.push('\n');
        }
    }
    assert_eq!(started["is_error"], false, "{started}");
    assert!(text.contains("line1") && text.contains("line2"), "{text}");
    let ended = live.next("task event", |l| l["event"] == "task");
    assert_eq!(ended["data"]["status"], "completed", "{ended}");
    // A background Bash command that ends is announced too.
    live.send(json!({"tool": "Bash", "input": {
        "command": "echo finished", "run_in_background": true}}));
    let bg = live.next("Bash result", |l| l["tool"] == "Bash");
    let id = bg["data"]["backgroundTaskId"].clone();
    let ended = live.next("task event", |l| l["event"] == "task" && l["id"] == id);
    assert!(
        ended["text"]
            .as_str()
            .unwrap_or_default()
            .contains("completed"),
        "{ended}"
    );
}

/// Over `serve` (stdio, a protocol version that has logging), the same events reach the
/// client as `notifications/message` from the logger `agent-tools/event`.
#[test]
fn ended_tasks_reach_an_mcp_client_as_notifications() {
    let p = Project::new(&[]);
    let mut child = Command::new(crate::binary())
        .args([
            "--cwd",
            p.root_str(),
            "--mode",
            "bypassPermissions",
            "serve",
        ])
        .env("AGENT_TOOLS_HOME", p.home())
        .env("HOME", p.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(v) = serde_json::from_str(&line)
                && tx.send(v).is_err()
            {
                break;
            }
        }
    });
    let mut send = |v: Value| {
        stdin.write_all(v.to_string().as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    let next = |want: &dyn Fn(&Value) -> bool| loop {
        let v = lines
            .recv_timeout(Duration::from_secs(120))
            .expect("a line from serve");
        if want(&v) {
            return v;
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}}),
    );
    let init = next(&|v| v["id"] == 1);
    assert!(
        init["result"]["capabilities"].get("logging").is_some(),
        "{init}"
    );
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "Bash", "arguments": {"command": "echo hi", "run_in_background": true}}}),
    );
    let started = next(&|v| v["id"] == 2);
    assert_eq!(started["result"]["isError"], false, "{started}");
    let note = next(&|v| {
        v["method"] == "notifications/message" && v["params"]["logger"] == "agent-tools/event"
    });
    assert_eq!(note["params"]["data"]["event"], "task", "{note}");
    assert_eq!(
        note["params"]["data"]["data"]["status"], "completed",
        "{note}"
    );
    let _ = child.kill();
    let _ = child.wait();
}

/// The Python SDK's client (legacy era, over stdio, the agent-triggers build) receives a due
/// cron job, Monitor lines and the ended Monitor task as `notifications/message` from the
/// logger `agent-tools/event`, through its logging callback.
#[test]
fn the_python_sdk_client_receives_cron_monitor_and_task_events() {
    let Some(peers) = test_support::peers::peer("py/mcp") else {
        return;
    };
    let p = Project::new(&[".agent-tools/"]);
    let created = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - 180_000;
    let job = json!([{"id": "c0ffee01", "cron": "* * * * *", "prompt": "run the nightly check",
        "recurring": false, "durable": true, "createdAt": created}]);
    std::fs::write(
        p.root().join(".agent-tools/scheduled_tasks.json"),
        job.to_string(),
    )
    .unwrap();
    // The file is the project's: its jobs run once a person approved it.
    p.trust();
    let home = p.home().to_str().unwrap().to_owned();
    let scenario = json!({
        "transport": {"stdio": {
            "command": triggers_binary(),
            "args": ["--cwd", p.root_str(), "--mode", "bypassPermissions", "serve"],
            "env": {"AGENT_TOOLS_HOME": home, "HOME": home},
        }},
        "mode": "legacy",
        "steps": [
            {"op": "wait_event", "event": "cron", "seconds": 120},
            {"op": "call", "tool": "Monitor", "args": {
                "command": "for i in 1 2 3; do echo line$i; sleep 0.2; done",
                "description": "three lines"}},
            {"op": "wait_event", "event": "monitor", "until": "line3", "seconds": 120},
            {"op": "wait_event", "event": "task", "until": "completed", "seconds": 120},
            {"op": "call", "tool": "CronList", "args": {}},
        ],
    });
    let lines = crate::serve_eras::python(&peers, &p, &scenario);
    assert_eq!(lines.len(), 6, "{lines:#?}");
    let cron = lines[0]["events"].as_array().cloned().unwrap_or_default();
    assert_eq!(cron.len(), 1, "the due job fired once: {lines:#?}");
    assert_eq!(cron[0]["id"], "c0ffee01", "{lines:#?}");
    assert_eq!(cron[0]["text"], "run the nightly check", "{lines:#?}");
    assert_eq!(lines[1]["is_error"], false, "{lines:#?}");
    let monitor: String = lines[2]["events"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|e| e["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    for want in ["line1", "line2", "line3"] {
        assert!(monitor.contains(want), "{want} missing: {lines:#?}");
    }
    let tasks = lines[3]["events"].as_array().cloned().unwrap_or_default();
    assert!(
        tasks.iter().any(|t| t["data"]["status"] == "completed"),
        "{lines:#?}"
    );
    // One-shot: gone after it fired.
    assert!(
        !lines[4]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("c0ffee01"),
        "{lines:#?}"
    );
    assert!(
        lines[5]["protocol"].as_str().unwrap_or_default() < "2026-07-28",
        "{lines:#?}"
    );
}
