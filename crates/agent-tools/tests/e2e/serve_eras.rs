//! `agent-tools serve` on both protocol eras, over stdio and HTTP, driven by the Python SDK's
//! high-level `Client` (test-support's `mcp_client.py` with a `mode`): its default (`mode="auto"`, protocol 2026-07-28,
//! no sessions) and `mode="legacy"` (the `initialize` handshake and a session).
//!
//! One scenario per transport and era: Read → Edit (a permission ask the client allows) →
//! Read; a background Bash → TaskOutput → TaskStop; a foreground Bash whose output lines
//! arrive as progress; the todo list written twice; plan mode refusing a Write. A second
//! scenario declines the ask. State must carry across requests in every case.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use test_support::mcp::{check_told_of_new_tool, listen_for_a_new_tool};
use test_support::peers::peer;

pub(crate) use test_support::procs::{marker, processes_with, survivors, wait_for_process};

use crate::Project;
use crate::serve::{HttpServer, stdio};

/// Runs test-support's Python client on `scenario` with the SDK's high-level `Client`
/// (`"mode": "auto"` unless the scenario names one) and returns its output lines.
pub(crate) fn python(peers: &Path, project: &Project, scenario: &Value) -> Vec<Value> {
    let mut scenario = scenario.clone();
    if scenario.get("mode").is_none() {
        scenario["mode"] = json!("auto");
    }
    let home = project.home();
    test_support::mcp::run_client_with_env(
        peers,
        &scenario,
        &[("HOME", home), ("AGENT_TOOLS_HOME", home)],
    )
}

/// The steps of the main scenario (the ask is answered by the client).
fn scenario_steps(project: &Project, marker: &str) -> Vec<Value> {
    let notes = project.root().join("notes.txt");
    let planned = project.root().join("planned.txt");
    let todo = |items: Value| json!({"op": "call", "tool": "TodoWrite", "args": {"todos": items}});
    vec![
        json!({"op": "call", "tool": "Read", "args": {"file_path": notes}}),
        json!({"op": "call", "tool": "Edit",
               "args": {"file_path": notes, "old_string": "alpha", "new_string": "omega"}}),
        json!({"op": "call", "tool": "Read", "args": {"file_path": notes}}),
        json!({"op": "call", "tool": "Bash",
               "args": {"command": format!("echo started; sleep 300 # {marker}"),
                        "run_in_background": true, "ready_pattern": "started"},
               "capture": {"name": "task", "pattern": "ID: (\\S+?)\\."}}),
        json!({"op": "call", "tool": "TaskOutput", "args": {"task_id": "{task}", "block": false}}),
        json!({"op": "call", "tool": "TaskStop", "args": {"task_id": "{task}"}}),
        json!({"op": "call", "tool": "Bash",
               "args": {"command": "for i in 1 2 3; do echo line$i; sleep 0.8; done"}}),
        todo(json!([{"content": "Read", "status": "in_progress", "activeForm": "Reading"}])),
        todo(json!([
            {"content": "Read", "status": "completed", "activeForm": "Reading"},
            {"content": "Edit", "status": "pending", "activeForm": "Editing"},
        ])),
        json!({"op": "call", "tool": "EnterPlanMode", "args": {}}),
        json!({"op": "call", "tool": "Write", "args": {"file_path": planned, "content": "x"}}),
    ]
}

#[track_caller]
fn assert_scenario(project: &Project, lines: &[Value], era: &str, marker: &str) {
    let text = |i: usize| lines[i]["text"].as_str().unwrap_or_default().to_owned();
    assert_eq!(lines.len(), 12, "{lines:#?}");
    for (i, line) in lines[..9].iter().enumerate() {
        assert_eq!(line["is_error"], false, "step {i}: {lines:#?}");
    }
    assert!(text(0).contains("alpha"), "{lines:#?}");
    assert!(text(2).contains("omega"), "Edit after Read: {lines:#?}");
    // The background command is known to the next requests, and stopped.
    assert!(text(3).contains("running in background"), "{lines:#?}");
    assert!(
        text(4).contains("<status>running</status>") && text(4).contains("started"),
        "TaskOutput sees the task: {lines:#?}"
    );
    assert!(text(5).contains("Successfully stopped task"), "{lines:#?}");
    assert!(
        survivors(marker, 15).is_empty(),
        "the stopped task's process survived"
    );
    // A foreground command's lines arrive as progress.
    let progress = lines[6]["progress"].as_array().cloned().unwrap_or_default();
    assert!(!progress.is_empty(), "no progress: {lines:#?}");
    assert!(
        progress[0]["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("line1"),
        "{progress:#?}"
    );
    // One todo list across both calls: one session file, holding the second list.
    let todos: Vec<PathBuf> = std::fs::read_dir(project.home().join("todos"))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert_eq!(todos.len(), 1, "one todo file for one context: {todos:?}");
    let stored = std::fs::read_to_string(&todos[0]).unwrap_or_default();
    assert!(
        stored.contains("Editing") && stored.contains("completed"),
        "{stored}"
    );
    // Plan mode holds for the next request.
    assert_eq!(lines[10]["is_error"], true, "{lines:#?}");
    assert!(text(10).contains("Plan mode"), "{lines:#?}");
    assert!(!project.root().join("planned.txt").exists());
    // The client was asked once, about the Edit, and the version is the one expected.
    let end = &lines[11];
    let asked = end["elicited"].as_array().cloned().unwrap_or_default();
    assert_eq!(asked.len(), 1, "{end:#?}");
    assert!(
        asked[0].as_str().unwrap_or("").contains("Allow Edit"),
        "{end:#?}"
    );
    let protocol = end["protocol"].as_str().unwrap_or_default();
    if era == "legacy" {
        assert!(protocol < "2026-07-28", "{protocol}");
    } else {
        assert_eq!(protocol, "2026-07-28");
        assert_eq!(lines[0]["context"], "default", "{lines:#?}");
    }
}

/// The declined ask: the Edit is refused with a message, and the file is unchanged.
fn declined_steps(project: &Project) -> Vec<Value> {
    let file = project.root().join("other.txt");
    vec![
        json!({"op": "call", "tool": "Read", "args": {"file_path": file}}),
        json!({"op": "call", "tool": "Edit",
               "args": {"file_path": file, "old_string": "alpha", "new_string": "omega"}}),
    ]
}

#[track_caller]
fn assert_declined(project: &Project, lines: &[Value]) {
    assert_eq!(lines[0]["is_error"], false, "{lines:#?}");
    assert_eq!(lines[1]["is_error"], true, "{lines:#?}");
    assert!(
        lines[1]["text"].as_str().unwrap_or("").contains("declined"),
        "{lines:#?}"
    );
    assert_eq!(
        std::fs::read_to_string(project.root().join("other.txt")).unwrap_or_default(),
        "alpha\n"
    );
    assert_eq!(lines[2]["elicited"].as_array().map(Vec::len), Some(1));
}

fn project() -> Project {
    Project::new(&["notes.txt = alpha\\nbeta\\n", "other.txt = alpha\\n"])
}

/// Both scenarios on one transport and era.
fn run_both(transport: impl Fn(&Project) -> (Value, Option<HttpServer>), era: &str) {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let project = project();
    let marker = marker(&format!("eras-{era}"));
    let (transport_json, server) = transport(&project);
    let accepted = json!({
        "transport": transport_json,
        "mode": era,
        "elicit": "accept",
        "steps": scenario_steps(&project, &marker),
    });
    assert_scenario(&project, &python(&peers, &project, &accepted), era, &marker);
    drop(server);
    // A fresh server: on 2026-07-28 the default context would still be in plan mode.
    let (transport_json, _server) = transport(&project);
    let declined = json!({
        "transport": transport_json,
        "mode": era,
        "elicit": "decline",
        "steps": declined_steps(&project),
    });
    assert_declined(&project, &python(&peers, &project, &declined));
}

fn over_stdio(project: &Project) -> (Value, Option<HttpServer>) {
    (stdio(project, &["--allow", "Bash"]), None)
}

fn over_http(project: &Project) -> (Value, Option<HttpServer>) {
    let server = HttpServer::start(project, &["--allow", "Bash"]);
    (json!({"http": server.url}), Some(server))
}

#[test]
fn the_default_python_client_keeps_state_over_stdio() {
    run_both(over_stdio, "auto");
}

#[test]
fn the_default_python_client_keeps_state_over_http() {
    run_both(over_http, "auto");
}

#[test]
fn a_legacy_python_client_keeps_state_over_stdio() {
    run_both(over_stdio, "legacy");
}

#[test]
fn a_legacy_python_client_keeps_state_over_http() {
    run_both(over_http, "legacy");
}

#[test]
fn without_elicitation_an_ask_is_the_headless_denial_on_2026_07_28() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let project = project();
    let server = HttpServer::start(&project, &[]);
    let scenario = json!({"transport": {"http": server.url}, "steps": declined_steps(&project)});
    let lines = python(&peers, &project, &scenario);
    assert_eq!(lines[1]["is_error"], true, "{lines:#?}");
    let text = lines[1]["text"].as_str().unwrap_or("");
    assert!(
        text.contains("acceptEdits") || text.contains("--allow"),
        "{text}"
    );
}

/// The binary's AskUserQuestion wired to the form before the call, over stdio (how the form
/// is asked and answered over HTTP, on both eras, is tools-mcp's `tests/it/questions.rs`).
#[test]
fn ask_user_question_is_asked_before_the_call_on_2026_07_28() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let project = Project::new(&[]);
    let question = json!({"questions": [{"question": "Which colour?", "header": "Colour",
        "options": [{"label": "Blue", "description": "cool"}, {"label": "Red", "description": "warm"}]}]});
    let (transport, _) = over_stdio(&project);
    let scenario = json!({
        "transport": transport,
        "elicit": "accept",
        "elicit_content": {"q1": "Blue"},
        "steps": [{"op": "call", "tool": "AskUserQuestion", "args": question}],
    });
    let lines = python(&peers, &project, &scenario);
    assert_eq!(lines[0]["is_error"], false, "{lines:#?}");
    assert!(
        lines[0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("\"Which colour?\"=\"Blue\""),
        "{lines:#?}"
    );
    assert_eq!(lines[1]["elicited"].as_array().map(Vec::len), Some(1));
    let declined = json!({
        "transport": scenario["transport"],
        "elicit": "decline",
        "steps": [{"op": "call", "tool": "AskUserQuestion", "args": question}],
    });
    let lines = python(&peers, &project, &declined);
    assert_eq!(lines[0]["is_error"], true, "{lines:#?}");
    assert!(
        lines[0]["text"].as_str().unwrap_or("").contains("declined"),
        "{lines:#?}"
    );
}

/// Over stdio (over HTTP, a listening client is told in tools-mcp's `tests/it/live.rs`).
#[test]
fn a_tool_added_upstream_reaches_a_stdio_client_listening_on_2026_07_28() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let project = crate::serve::project_with_dynamic_server(&peers);
    let steps = listen_for_a_new_tool();
    let scenario = json!({"transport": stdio(&project, &["--allow", "mcp__dyn"]), "steps": steps});
    let lines = python(&peers, &project, &scenario);
    check_told_of_new_tool(&lines);
}
