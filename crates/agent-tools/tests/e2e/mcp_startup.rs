//! `.mcp.json` servers never hold the binary up: `serve` answers `initialize` while a hung
//! upstream server is still starting (it is still running, and not yet given up on, when the
//! answer arrives), the healthy server's tools join with `notifications/tools/list_changed`,
//! and stderr names every server that did not start (the hung one, an unset variable, the
//! WebSocket transport). `list` and `call` wait briefly and say which servers are still
//! starting; no server process outlives the command.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::{Project, binary};

/// A project whose `.mcp.json` has a healthy server ("fake"), one that never answers
/// ("hung", given up on after `hung_timeout_ms`; it writes its pid to the returned file), one
/// whose entry needs an unset variable ("needs_key") and one on a transport agent-tools does not speak
/// ("legacy", a WebSocket). Approved, as a person would.
fn project(hung_timeout_ms: u64) -> (Project, PathBuf) {
    let project = Project::new(&["log/"]);
    let log = project.root().join("log");
    let pid_file = log.join("hung.pid");
    let fake = test_support::mcp::fake_server();
    let hung = "import os, sys, time\n\
                p = sys.argv[1]\n\
                open(p + '.tmp', 'w').write(str(os.getpid()))\n\
                os.rename(p + '.tmp', p)\n\
                time.sleep(3600)\n";
    let config = json!({"mcpServers": {
        "fake": {"command": "python3", "args": [fake, log]},
        "hung": {"command": "python3", "args": ["-c", hung, pid_file],
                 "startupTimeoutMs": hung_timeout_ms},
        "needs_key": {"command": "x", "env": {"KEY": "${AGENT_TOOLS_E2E_UNSET_KEY}"}},
        "legacy": {"type": "ws", "url": "ws://127.0.0.1:9/mcp"}}});
    std::fs::write(project.root().join(".mcp.json"), config.to_string()).unwrap();
    project.trust();
    (project, pid_file)
}

/// Whether process `pid` runs (a zombie counts as gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

/// The live processes whose command line contains `token` (the hung server's pid file, a
/// path unique to the test).
fn processes_with(token: &Path) -> Vec<u32> {
    test_support::procs::processes_with(&token.to_string_lossy())
}

/// Polls `check` for up to 60 s.
fn eventually(mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..1200 {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

/// The pid in `pid_file`, once it is there.
fn pid_in(pid_file: &Path) -> u32 {
    assert!(eventually(|| pid_file.exists()), "no {pid_file:?}");
    std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// What happened, in the order the test saw it.
#[derive(Debug, Clone, PartialEq)]
enum Event {
    /// A line on stderr
    Stderr(String),
    /// The answer to `initialize`
    Initialized,
}

#[test]
fn serve_answers_initialize_while_a_hung_server_is_still_starting() {
    let (project, pid_file) = project(8_000);
    let mut child = Command::new(binary())
        .arg("--cwd")
        .arg(project.root())
        .args(["serve", "--allow", "mcp__fake"])
        .env("AGENT_TOOLS_HOME", project.home())
        .env("HOME", project.home())
        .env_remove("AGENT_TOOLS_E2E_UNSET_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let seen = Arc::clone(&events);
    let stderr_reader = std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            seen.lock().unwrap().push(Event::Stderr(line));
        }
    });
    let (tx, messages) = mpsc::channel::<Value>();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if let Ok(message) = serde_json::from_str(&line) {
                let _ = tx.send(message);
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    // The next message with `id`, skipping notifications (kept in `noted`).
    let mut noted: Vec<Value> = Vec::new();
    let answer = |id: u64, noted: &mut Vec<Value>| loop {
        let message = messages
            .recv_timeout(Duration::from_secs(60))
            .expect("an answer from agent-tools serve");
        if message["id"] == id {
            return message;
        }
        noted.push(message);
    };

    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "e2e", "version": "1"}}}),
    );
    let initialized = answer(1, &mut noted);
    events.lock().unwrap().push(Event::Initialized);
    assert_eq!(
        initialized["result"]["capabilities"]["tools"]["listChanged"], true,
        "{initialized}"
    );
    // The hung server is running, and agent-tools has not given up on it.
    let pid = pid_in(&pid_file);
    assert!(alive(pid), "the hung server should still be starting");
    let given_up = |e: &Event| matches!(e, Event::Stderr(l) if l.contains("MCP server \"hung\" failed to connect"));
    assert!(!events.lock().unwrap().iter().any(given_up), "{events:#?}");

    // The healthy server's tools join, announced with tools/list_changed: list, and until
    // they are there, wait for the next announcement and list again.
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let announcements = |noted: &[Value]| {
        noted
            .iter()
            .filter(|m| m["method"] == "notifications/tools/list_changed")
            .count()
    };
    let mut id = 1;
    let names = loop {
        id += 1;
        send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        let listed = answer(id, &mut noted);
        let names: Vec<String> = listed["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        if names.iter().any(|n| n == "mcp__fake__echo") {
            break names;
        }
        let before = announcements(&noted);
        while announcements(&noted) == before {
            let message = messages
                .recv_timeout(Duration::from_secs(60))
                .expect("notifications/tools/list_changed when the server is ready");
            noted.push(message);
        }
    };
    assert!(names.iter().any(|n| n == "Read"), "{names:?}");
    assert!(
        names.iter().all(|n| !n.starts_with("mcp__hung")),
        "{names:?}"
    );
    id += 1;
    send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "mcp__fake__echo", "arguments": {"x": 1}}}));
    let called = answer(id, &mut noted);
    assert_eq!(called["result"]["isError"], false, "{called}");

    // Later, the hung server is given up on (and killed); stderr names every bad server.
    assert!(
        eventually(|| events.lock().unwrap().iter().any(given_up)),
        "{events:#?}"
    );
    assert!(
        eventually(|| !alive(pid)),
        "the hung server {pid} was not stopped"
    );
    drop(stdin);
    let status = child.wait().unwrap();
    stderr_reader.join().unwrap();
    assert!(status.success(), "{status:?}");
    let events = events.lock().unwrap().clone();
    let answered = events
        .iter()
        .position(|e| *e == Event::Initialized)
        .unwrap();
    let gave_up = events.iter().position(given_up).unwrap();
    assert!(answered < gave_up, "{events:#?}");
    let stderr: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            Event::Stderr(line) => Some(line.clone()),
            Event::Initialized => None,
        })
        .collect();
    let stderr = stderr.join("\n");
    for needle in [
        "MCP server \"hung\" failed to connect: did not finish starting within 8s",
        "MCP server \"needs_key\" was not started: mcpServers.needs_key: environment variable AGENT_TOOLS_E2E_UNSET_KEY is not set",
        "MCP server \"legacy\" was not started: mcpServers.legacy: transport type \"ws\" is not supported",
    ] {
        assert!(stderr.contains(needle), "{needle}\n{stderr}");
    }
    assert!(!stderr.contains("\"fake\""), "{stderr}");
}

#[test]
fn list_and_call_wait_briefly_and_say_which_servers_are_not_there() {
    let (project, pid_file) = project(5_000);
    // `list` waits one second: the hung server is still starting then, and named.
    let run = project.run(&["list", "--mcp-wait", "1"], None);
    run.assert_code(0);
    assert!(run.stdout.lines().any(|n| n == "Read"), "{run:#?}");
    assert!(!run.stdout.contains("mcp__hung"), "{run:#?}");
    for needle in [
        "MCP server \"hung\" is still starting after 1s; its tools are not included (give --mcp-wait SECONDS to wait longer)",
        "MCP server \"needs_key\" was not started",
        "AGENT_TOOLS_E2E_UNSET_KEY is not set",
        "MCP server \"legacy\" was not started",
    ] {
        assert!(run.stderr.contains(needle), "{needle}: {run:#?}");
    }
    // The command ended: the server it was still starting is gone.
    assert!(
        eventually(|| processes_with(&pid_file).is_empty()),
        "{:?} outlived `list`",
        processes_with(&pid_file)
    );

    // A call of a healthy server's tool waits for that server, whatever --mcp-wait says.
    let run = project.run(
        &[
            "call",
            "mcp__fake__echo",
            r#"{"x": 1}"#,
            "--allow",
            "mcp__fake",
            "--mcp-wait",
            "0",
        ],
        None,
    );
    run.assert_code(0);
    assert_eq!(crate::text(&run.result()), r#"echo {"x": 1}"#, "{run:#?}");

    // A call of a tool of a server that never starts says why, as a tool error.
    let run = project.run(&["call", "mcp__hung__anything", "--mcp-wait", "0"], None);
    run.assert_code(1);
    let text = crate::text(&run.result());
    assert!(
        text.contains(
            "mcp__hung__anything is not available: MCP server \"hung\" failed to connect: did not finish starting within 5s"
        ),
        "{run:#?}"
    );
    assert!(
        eventually(|| processes_with(&pid_file).is_empty()),
        "{:?} outlived `call`",
        processes_with(&pid_file)
    );
    let run = project.run(&["call", "mcp__needs_key__x", "--mcp-wait", "0"], None);
    run.assert_code(1);
    assert!(
        crate::text(&run.result()).contains("AGENT_TOOLS_E2E_UNSET_KEY is not set"),
        "{run:#?}"
    );
}
