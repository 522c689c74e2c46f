//! The client setup of `docs/clients.md`, tested with the clients it names: every snippet
//! is read from the document, the real binary's path is put where it says
//! `/path/to/agent-tools`, and a real MCP client must connect with it — Claude Code's CLI
//! (`claude mcp add` as written, then `claude mcp list`, over stdio and HTTP), Codex
//! (`config.toml` as written, then `codex app-server` lists the tools), and, for the desktop
//! applications that cannot run here (Claude Desktop, Cursor, VS Code, Zed), their JSON read
//! as they read it and the server entry started by the MCP Inspector CLI, which lists the
//! tools and runs a Glob call in the project the entry names.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use test_support::peers::peer;

use crate::serve::{HttpServer, inspector_in};
use crate::{Project, binary};

/// Every client the document must cover, by the name of its snippet.
const CLIENTS: &[&str] = &[
    "claude-code",
    "claude-code-http",
    "claude-desktop",
    "codex",
    "cursor",
    "vscode",
    "zed",
];

/// The document, from the repository.
fn document() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/clients.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The snippets of `doc`: the fenced block after each `<!-- client-config: NAME -->` line.
fn snippets(doc: &str) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut lines = doc.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line
            .trim()
            .strip_prefix("<!-- client-config:")
            .and_then(|r| r.strip_suffix("-->"))
        else {
            continue;
        };
        let fence = lines.next().expect("a fenced block after the marker");
        assert!(
            fence.starts_with("```"),
            "{name}: no fence after the marker"
        );
        let body: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .collect();
        let previous = found.insert(name.trim().to_owned(), body.join("\n"));
        assert!(previous.is_none(), "{name}: two snippets with one name");
    }
    found
}

/// `snippet` with the real binary, the project and the server's URL in place of the
/// document's placeholders.
fn fill(snippet: &str, project: &Project, url: Option<&str>) -> String {
    let mut text = snippet
        .replace(
            "/path/to/agent-tools",
            binary().to_str().expect("UTF-8 path"),
        )
        .replace("/path/to/project", project.root_str())
        // VS Code fills in the workspace folder itself.
        .replace("${workspaceFolder}", project.root_str());
    if let Some(url) = url {
        text = text.replace("http://127.0.0.1:8765/mcp", url);
    }
    text
}

#[test]
fn the_document_has_a_snippet_for_every_client() {
    let found = snippets(&document());
    let names: Vec<&str> = found.keys().map(String::as_str).collect();
    assert_eq!(names, CLIENTS);
    for (name, body) in &found {
        assert!(
            body.contains("/path/to/agent-tools") || body.contains("http://127.0.0.1:8765/mcp"),
            "{name} names neither the binary nor the HTTP endpoint: {body}"
        );
    }
}

/// The `command`, `args` and `env` of the agent-tools entry in a desktop client's JSON, read
/// the way that client reads its file.
fn desktop_entry(client: &str, config: &Value) -> Value {
    let list = match client {
        "claude-desktop" | "cursor" => "mcpServers",
        "vscode" => "servers",
        "zed" => "context_servers",
        other => panic!("not a desktop client: {other}"),
    };
    let entry = &config[list]["agent-tools"];
    assert!(
        entry.is_object(),
        "{client}: no {list}.agent-tools in {config}"
    );
    if client == "vscode" {
        assert_eq!(entry["type"], "stdio", "VS Code wants a type");
    }
    let command = entry["command"].as_str().expect("a command");
    let args = entry["args"].as_array().expect("args").clone();
    assert!(
        args.iter().any(|a| a == "serve"),
        "{client}: the entry does not run serve"
    );
    json!({"command": command, "args": args, "env": entry.get("env").cloned().unwrap_or(json!({}))})
}

#[test]
fn desktop_client_entries_start_a_server_the_inspector_lists_and_calls() {
    let Some(peers) = peer("node_modules/.bin/mcp-inspector") else {
        return;
    };
    let doc = snippets(&document());
    for client in ["claude-desktop", "cursor", "vscode", "zed"] {
        let project = Project::new(&["notes.txt = hello", "src/lib.rs"]);
        let config: Value = serde_json::from_str(&fill(&doc[client], &project, None))
            .unwrap_or_else(|e| panic!("{client}: the snippet is not JSON: {e}"));
        let entry = desktop_entry(client, &config);
        let file = project.home().join(format!("{client}.json"));
        std::fs::write(
            &file,
            json!({"mcpServers": {"agent-tools": entry}}).to_string(),
        )
        .expect("write the inspector's config");
        let file = file.to_str().expect("UTF-8 path");
        // Started outside the project, as a desktop application starts its servers: the
        // entry's --cwd is what points the session at the project.
        let base = ["--config", file, "--server", "agent-tools"];
        let listed = inspector_in(
            &peers,
            &project,
            project.home(),
            &[&base[..], &["--method", "tools/list"]].concat(),
        );
        let names: Vec<&str> = listed["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{client}: no tools: {listed}"))
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        for tool in ["Read", "Edit", "Bash", "Glob", "Grep"] {
            assert!(
                names.contains(&tool),
                "{client}: {tool} missing from {names:?}"
            );
        }
        let called = inspector_in(
            &peers,
            &project,
            project.home(),
            &[
                &base[..],
                &[
                    "--method",
                    "tools/call",
                    "--tool-name",
                    "Glob",
                    "--tool-arg",
                    "pattern=*.txt",
                ],
            ]
            .concat(),
        );
        let text = called["content"][0]["text"].as_str().unwrap_or_default();
        assert!(
            text.contains("notes.txt"),
            "{client}: Glob did not run in the project: {called}"
        );
    }
}

/// Runs a shell-style snippet (words separated by spaces, no quoting) with its first word
/// taken from the peers' `node_modules/.bin`.
fn run_words(peers: &Path, project: &Project, line: &str) -> String {
    let mut words = line.split_whitespace();
    let program = words.next().expect("a command");
    let output = Command::new(peers.join("node_modules/.bin").join(program))
        .args(words)
        .current_dir(project.root())
        .env("HOME", project.home())
        .env("AGENT_TOOLS_HOME", project.home())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {line}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{line} failed: {text}");
    text
}

/// Runs `line` with `sh -c`, with the peers' programs first on `PATH`.
fn run_shell(peers: &Path, project: &Project, line: &str) -> String {
    let path = format!(
        "{}:{}",
        peers.join("node_modules/.bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("sh")
        .args(["-c", line])
        .current_dir(project.root())
        .env("PATH", path)
        .env("HOME", project.home())
        .env("AGENT_TOOLS_HOME", project.home())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {line}: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{line} failed: {text}");
    text
}

#[test]
fn claude_code_connects_over_stdio_and_http() {
    let Some(peers) = peer("node_modules/.bin/claude") else {
        return;
    };
    let doc = snippets(&document());
    let project = Project::new(&["notes.txt = hello"]);
    // As the document says: the server makes its token, the client sends it.
    let server = HttpServer::start_with_generated_token(&project, &[]);
    let (_, token_file) = server.token.clone().expect("a generated token");
    let line = fill(&doc["claude-code"], &project, None);
    run_words(&peers, &project, &line);
    let line = fill(&doc["claude-code-http"], &project, Some(&server.url)).replace(
        "~/.agent-tools/serve-token",
        token_file.to_str().expect("UTF-8 path"),
    );
    run_shell(&peers, &project, &line);
    let listed = run_words(&peers, &project, "claude mcp list");
    for (name, line) in [("agent-tools:", "stdio"), ("agent-tools-http:", "HTTP")] {
        let row = listed
            .lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_else(|| panic!("claude mcp list has no {name} ({line}): {listed}"));
        assert!(row.contains("Connected"), "{line}: {row}");
    }
}

#[test]
fn codex_app_server_lists_the_tools() {
    let Some(peers) = peer("node_modules/.bin/codex") else {
        return;
    };
    let doc = snippets(&document());
    let project = Project::new(&["notes.txt = hello"]);
    let codex_home = project.home().join("codex");
    std::fs::create_dir_all(&codex_home).expect("mkdir CODEX_HOME");
    std::fs::write(
        codex_home.join("config.toml"),
        fill(&doc["codex"], &project, None),
    )
    .expect("write config.toml");
    let mut child = Command::new(peers.join("node_modules/.bin/codex"))
        .arg("app-server")
        .current_dir(project.root())
        .env("HOME", project.home())
        .env("CODEX_HOME", &codex_home)
        .env("AGENT_TOOLS_HOME", project.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn codex app-server");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").expect("write to codex");
        stdin.flush().expect("flush");
    };
    send(
        json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "agent-tools-e2e", "version": "1"}}}),
    );
    let initialized = reply(&rx, 1);
    assert!(initialized.get("result").is_some(), "{initialized}");
    send(json!({"method": "initialized"}));
    send(json!({"id": 2, "method": "mcpServerStatus/list", "params": {}}));
    let status = reply(&rx, 2);
    let _ = child.kill();
    let _ = child.wait();
    let server = status["result"]["data"]
        .as_array()
        .and_then(|d| d.iter().find(|s| s["name"] == "agent-tools"))
        .unwrap_or_else(|| panic!("codex lists no agent-tools server: {status}"));
    assert_eq!(server["serverInfo"]["name"], "agent-tools", "{server}");
    let tools = server["tools"].as_object().expect("tools by name");
    for tool in ["Read", "Edit", "Bash", "Glob"] {
        assert!(
            tools.contains_key(tool),
            "codex does not see {tool}: {server}"
        );
    }
}

/// The reply with `id`, skipping notifications, within a minute.
fn reply(rx: &mpsc::Receiver<String>, id: u64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("codex app-server sent no reply {id}"));
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if message["id"] == id {
            return message;
        }
    }
}
