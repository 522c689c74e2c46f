//! agent-tools as the client of MCP servers beyond stdio ones: a server on the legacy HTTP+SSE
//! transport (server-everything's `sse` mode) used through `.mcp.json`, and an upstream
//! server's question (elicitation) answered by the person behind `agent-tools serve` — the
//! Python SDK's client, whose answer reaches the upstream server (the Python SDK's server)
//! with its types.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::serve::stdio;
use crate::serve_eras::python;
use crate::{Project, text};

/// A child process killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("address")
        .port()
}

#[test]
fn a_legacy_sse_server_through_mcp_json() {
    let Some(everything) = test_support::peers::peer("node_modules/.bin/mcp-server-everything")
    else {
        return;
    };
    let port = free_port();
    let _server = Killed(
        Command::new(everything.join("node_modules/.bin/mcp-server-everything"))
            .arg("sse")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start server-everything"),
    );
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "server-everything did not listen"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let project = Project::new(&[]);
    let config = json!({"mcpServers": {"old": {"type": "sse", "url": format!("http://127.0.0.1:{port}/sse")}}});
    project.add(&format!(".mcp.json = {config}"));
    project.trust();
    // Two calls in one session (both answers arrive on the one event stream), then a
    // one-shot call.
    let batch = project.run(
        &["--allow", "mcp__old", "batch"],
        Some(concat!(
            "{\"tool\": \"mcp__old__echo\", \"input\": {\"message\": \"first\"}}\n",
            "{\"tool\": \"mcp__old__get-sum\", \"input\": {\"a\": 2, \"b\": 40}}\n",
        )),
    );
    batch.assert_code(0);
    let lines = batch.lines();
    assert!(text(&lines[0]).contains("Echo: first"), "{batch:#?}");
    assert!(text(&lines[1]).contains("42"), "{batch:#?}");
    let status = project.run(&["mcp", "status"], None);
    assert!(
        status
            .stdout
            .contains(&format!("transport:  sse http://127.0.0.1:{port}/sse"))
            && status.stdout.contains("state:      connected"),
        "{status:#?}"
    );
    // A wrong address says which transport the server might speak instead.
    let wrong = json!({"mcpServers": {"old": {"type": "sse", "url": format!("http://127.0.0.1:{port}/nope")}}});
    project.add(&format!(".mcp.json = {wrong}"));
    project.trust();
    let call = project.run(
        &[
            "--allow",
            "mcp__old",
            "call",
            "mcp__old__echo",
            "{\"message\": \"x\"}",
        ],
        None,
    );
    call.assert_code(1);
    let message = text(&call.result());
    assert!(
        message.contains(&format!(
            "MCP server \"old\" failed to connect to http://127.0.0.1:{port}/nope"
        )) && message.contains("HTTP 404"),
        "{call:#?}"
    );
}

#[test]
fn an_upstream_question_is_answered_by_the_person_behind_serve() {
    let Some(peers) = test_support::peers::peer("py/mcp/__init__.py") else {
        return;
    };
    let project = Project::new(&[]);
    let config = json!({"mcpServers": {"shop": {
        "command": "python3",
        "args": [test_support::mcp::elicit_server()],
        "env": {"PYTHONPATH": peers.join("py")},
    }}});
    project.add(&format!(".mcp.json = {config}"));
    project.trust();
    let scenario = json!({
        "transport": stdio(&project, &["--allow", "mcp__shop"]),
        "mode": "legacy",
        "elicit": "accept",
        "elicit_content": {"guests": 4, "seating": "outdoor", "confirm": true},
        "steps": [
            {"op": "call", "tool": "mcp__shop__book", "args": {"date": "Friday"}},
            {"op": "call", "tool": "mcp__shop__summarize", "args": {"text": "long text"}},
        ],
    });
    let lines = python(&peers, &project, &scenario);
    assert_eq!(lines[0]["is_error"], false, "{lines:#?}");
    assert_eq!(
        lines[0]["text"], "booked for 4 guests, outdoor, confirmed=True",
        "{lines:#?}"
    );
    // The client declared no sampling: the upstream server is told so, and says it.
    assert!(
        lines[1]["text"]
            .as_str()
            .is_some_and(|t| t.contains("sampling failed") && t.contains("does not offer it")),
        "{lines:#?}"
    );
    let asked = lines[2]["elicited"].as_array().cloned().unwrap_or_default();
    assert_eq!(asked.len(), 1, "{lines:#?}");
    assert!(
        asked[0]
            .as_str()
            .is_some_and(|m| m.contains("Booking a table on Friday")),
        "{lines:#?}"
    );

    // A client that samples: the upstream server's request reaches its model.
    let sampled = json!({
        "transport": stdio(&project, &["--allow", "mcp__shop"]),
        "mode": "legacy",
        "sample": "three words only",
        "steps": [{"op": "call", "tool": "mcp__shop__summarize", "args": {"text": "a long story"}}],
    });
    let lines = python(&peers, &project, &sampled);
    assert_eq!(lines[0]["text"], "summary: three words only", "{lines:#?}");
    assert_eq!(
        lines[1]["sampled"][0]["prompt"], "a long story",
        "{lines:#?}"
    );
    assert_eq!(lines[1]["elicited"], json!([]), "{lines:#?}");

    // A person who declines: the upstream server hears it.
    let declined = json!({
        "transport": stdio(&project, &["--allow", "mcp__shop"]),
        "mode": "legacy",
        "elicit": "decline",
        "steps": [{"op": "call", "tool": "mcp__shop__book", "args": {"date": "Monday"}}],
    });
    let lines = python(&peers, &project, &declined);
    assert_eq!(
        lines[0]["text"], "not booked: the person chose decline",
        "{lines:#?}"
    );
}

#[test]
fn the_hosted_servers_example_of_the_docs_is_accepted() {
    let doc = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/clients.md"),
    )
    .expect("docs/clients.md");
    let after = doc
        .split("<!-- mcp-json: hosted -->")
        .nth(1)
        .expect("the marked example");
    let block = after
        .split("```json")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("a json block");
    let example: serde_json::Value = serde_json::from_str(block).expect("valid JSON");
    let names: Vec<String> = example["mcpServers"]
        .as_object()
        .expect("mcpServers")
        .keys()
        .cloned()
        .collect();
    let project = Project::new(&[]);
    project.add(&format!(".mcp.json = {example}"));
    project.trust();
    // The example's secret comes from the environment, as it says.
    let output = std::process::Command::new(crate::binary())
        .args([
            "--cwd",
            project.root_str(),
            "--mcp-wait",
            "1",
            "mcp",
            "status",
            "--json",
        ])
        .env("AGENT_TOOLS_HOME", project.home())
        .env("HOME", project.home())
        .env("INTERNAL_MCP_SECRET", "from-the-environment")
        .output()
        .expect("mcp status");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), names.len(), "{stdout}");
    for line in &lines {
        // Every entry parsed: a transport and an address, nothing "not started".
        assert!(
            line["transport"].is_string() && line["transport"] != "",
            "{line}"
        );
        assert!(
            !line["state"].as_str().unwrap_or("").contains("not started"),
            "{line}"
        );
    }
    assert!(
        !stdout.contains("from-the-environment"),
        "a secret was printed"
    );
}
