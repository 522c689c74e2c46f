//! `agent-tools serve` driven by real MCP clients: the Python `mcp` package and
//! `@modelcontextprotocol/inspector --cli`, over stdio and streamable HTTP.
//!
//! The peers come from `test_support::peers` (installed by `cargo xtask peers`). A missing
//! peer fails the test when `AGENT_TOOLS_REQUIRE_PEERS=1`, otherwise the test prints why it
//! skipped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use test_support::peers::peer;

use crate::{Project, binary};

/// Runs the Python client on `scenario` with the project's state directory as `HOME` and
/// `AGENT_TOOLS_HOME`; its output lines.
fn python(peers: &Path, project: &Project, scenario: &Value) -> Vec<Value> {
    let home = project.home();
    test_support::mcp::run_client_with_env(
        peers,
        scenario,
        &[("HOME", home), ("AGENT_TOOLS_HOME", home)],
    )
}

/// The stdio transport of the Python client: `agent-tools --cwd ROOT serve ARGS`.
pub(crate) fn stdio(project: &Project, args: &[&str]) -> Value {
    let mut all = vec!["--cwd", project.root_str(), "serve"];
    all.extend_from_slice(args);
    let home = project.home().to_str().expect("UTF-8 home");
    json!({"stdio": {
        "command": binary(),
        "args": all,
        "env": {"AGENT_TOOLS_HOME": home, "HOME": home},
    }})
}

/// Runs the inspector CLI with `args` and parses its JSON output.
pub(crate) fn inspector(peers: &Path, project: &Project, args: &[&str]) -> Value {
    // The CLI looks for its package.json relative to the working directory first.
    inspector_in(peers, project, project.root(), args)
}

/// [`inspector`] started in `cwd`.
pub(crate) fn inspector_in(peers: &Path, project: &Project, cwd: &Path, args: &[&str]) -> Value {
    let output = Command::new(peers.join("node_modules/.bin/mcp-inspector"))
        .arg("--cli")
        .args(args)
        .current_dir(cwd)
        .env("HOME", project.home())
        .env("AGENT_TOOLS_HOME", project.home())
        .stdin(Stdio::null())
        .output()
        .expect("run mcp-inspector");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "inspector failed: {}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

fn inspector_stdio_args<'a>(project: &'a Project, home_env: &'a str) -> Vec<&'a str> {
    vec![
        "-e",
        home_env,
        binary().to_str().expect("UTF-8 binary path"),
        "--cwd",
        project.root_str(),
        "serve",
    ]
}

/// A running `agent-tools serve --http 127.0.0.1:0`, killed on drop.
pub(crate) struct HttpServer {
    pub(crate) child: Child,
    pub(crate) url: String,
    /// The generated token and its file, when the server made one
    pub(crate) token: Option<(String, std::path::PathBuf)>,
    /// The lines on stderr before the address line (warnings, notices)
    pub(crate) notices: Vec<String>,
    /// The lines on stderr after the address line, as they come (drained so that the server
    /// never blocks on a full pipe)
    pub(crate) stderr: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl HttpServer {
    /// A server without authentication (`--no-auth`) unless `extra` names tokens.
    pub(crate) fn start(project: &Project, extra: &[&str]) -> Self {
        Self::start_with_env(project, extra, &[])
    }

    /// Starts the server with `env` added to its environment (`--no-auth` unless `extra`
    /// names tokens).
    pub(crate) fn start_with_env(project: &Project, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut args = extra.to_vec();
        if !extra
            .iter()
            .any(|a| matches!(*a, "--token-file" | "--token-env"))
        {
            args.push("--no-auth");
        }
        Self::spawn(project, &args, env)
    }

    /// A server as a person starts it without token options: it generates a token in the
    /// state directory and requires it.
    pub(crate) fn start_with_generated_token(project: &Project, extra: &[&str]) -> Self {
        Self::spawn(project, extra, &[])
    }

    fn spawn(project: &Project, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(binary())
            .args([
                "--cwd",
                project.root_str(),
                "serve",
                "--http",
                "127.0.0.1:0",
            ])
            .args(extra)
            .env("AGENT_TOOLS_HOME", project.home())
            .env("HOME", project.home())
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn agent-tools serve --http");
        let stderr = child.stderr.take().expect("stderr pipe");
        let mut lines = BufReader::new(stderr).lines();
        // Warnings and notices may come first; the address line names the URL.
        let mut notices = Vec::new();
        let line = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("a line announcing the address after {notices:?}"))
                .expect("readable stderr");
            if line.contains("http://") {
                break line;
            }
            notices.push(line);
        };
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .unwrap_or_else(|| panic!("no URL in {line}"))
            .to_owned();
        let token = line
            .split_once("the token is in ")
            .and_then(|(_, rest)| rest.split_once(" ("))
            .map(|(path, _)| {
                let path = std::path::PathBuf::from(path);
                let token = std::fs::read_to_string(&path).expect("the token file");
                (token.trim().to_owned(), path)
            });
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = std::sync::Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                kept.lock().expect("stderr lines").push(line);
            }
        });
        HttpServer {
            child,
            url,
            token,
            notices,
            stderr,
        }
    }

    /// `host:port` of the server.
    pub(crate) fn authority(&self) -> &str {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn read_edit_read(project: &Project) -> Vec<Value> {
    let file = project.root().join("notes.txt");
    let file = file.to_str().expect("UTF-8 path");
    vec![
        json!({"op": "call", "tool": "Read", "args": {"file_path": file}}),
        json!({"op": "call", "tool": "Edit", "args": {"file_path": file, "old_string": "alpha", "new_string": "omega"}}),
        json!({"op": "call", "tool": "Read", "args": {"file_path": file}}),
    ]
}

#[track_caller]
fn assert_read_edit_read(lines: &[Value]) {
    assert_eq!(lines.len(), 4, "{lines:#?}");
    assert_eq!(lines[0]["is_error"], false, "{lines:#?}");
    assert!(
        lines[0]["text"].as_str().unwrap().contains("alpha"),
        "{lines:#?}"
    );
    assert_eq!(
        lines[1]["is_error"], false,
        "Edit after Read in one session: {lines:#?}"
    );
    assert!(
        lines[2]["text"].as_str().unwrap().contains("omega"),
        "{lines:#?}"
    );
}

#[test]
fn inspector_lists_tools_with_schemas_and_hints_over_stdio() {
    let Some(peers) = peer("node_modules/.bin/mcp-inspector") else {
        return;
    };
    let project = Project::new(&["a.txt = hello\\n"]);
    let home_env = format!("AGENT_TOOLS_HOME={}", project.home().display());
    let mut args = inspector_stdio_args(&project, &home_env);
    args.extend(["--method", "tools/list"]);
    let listed = inspector(&peers, &project, &args);
    let tools = listed["tools"].as_array().expect("tools");
    let read = tools
        .iter()
        .find(|t| t["name"] == "Read")
        .expect("Read is listed");
    assert_eq!(read["annotations"]["readOnlyHint"], true, "{read:#}");
    assert_eq!(read["inputSchema"]["type"], "object");
    assert!(read["inputSchema"]["properties"]["file_path"].is_object());
    let glob = tools
        .iter()
        .find(|t| t["name"] == "Glob")
        .expect("Glob is listed");
    assert_eq!(glob["annotations"]["readOnlyHint"], true);
    let edit = tools
        .iter()
        .find(|t| t["name"] == "Edit")
        .expect("Edit is listed");
    assert_eq!(edit["annotations"]["readOnlyHint"], false, "{edit:#}");
}

#[test]
fn inspector_calls_read_over_stdio() {
    let Some(peers) = peer("node_modules/.bin/mcp-inspector") else {
        return;
    };
    let project = Project::new(&["a.txt = hello from a file\\n"]);
    let home_env = format!("AGENT_TOOLS_HOME={}", project.home().display());
    let file_arg = format!("file_path={}", project.root().join("a.txt").display());
    let mut args = inspector_stdio_args(&project, &home_env);
    args.extend([
        "--method",
        "tools/call",
        "--tool-name",
        "Read",
        "--tool-arg",
        &file_arg,
    ]);
    let result = inspector(&peers, &project, &args);
    assert_eq!(result["isError"], false, "{result:#}");
    let text = result["content"][0]["text"].as_str().expect("text");
    assert!(text.contains("hello from a file"), "{text}");
}

#[test]
fn python_client_reads_edits_and_reads_again_in_one_stdio_session() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let project = Project::new(&["notes.txt = alpha\\nbeta\\n"]);
    let scenario = json!({
        "transport": stdio(&project, &["--mode", "acceptEdits"]),
        "steps": read_edit_read(&project),
    });
    assert_read_edit_read(&python(&peers, &project, &scenario));
}

#[test]
fn without_elicitation_an_ask_is_a_headless_denial() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let project = Project::new(&["notes.txt = alpha\\n"]);
    let scenario = json!({
        "transport": stdio(&project, &[]),
        "steps": read_edit_read(&project),
    });
    let lines = python(&peers, &project, &scenario);
    assert_eq!(lines[1]["is_error"], true, "{lines:#?}");
    let text = lines[1]["text"].as_str().unwrap();
    assert!(
        text.contains("acceptEdits") || text.contains("--allow"),
        "{text}"
    );
}

#[test]
fn python_client_cancels_a_running_bash_call() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let project = Project::new(&["a.txt = x\\n"]);
    let started = project.root().join("started");
    let late = project.root().join("late");
    let scenario = json!({
        "transport": stdio(&project, &["--allow", "Bash", "--mode", "acceptEdits"]),
        "steps": [
            {"op": "call", "tool": "Bash",
             "args": {"command": "(sleep 2; touch late) & touch started; wait"},
             "cancel_when_file": started},
            {"op": "call", "tool": "Read", "args": {"file_path": project.root().join("a.txt")}},
        ],
    });
    let lines = python(&peers, &project, &scenario);
    // The binary under test has the shell feature (these tests need the default features):
    // a pool without Bash would have answered with an error instead of being cancelled.
    assert!(
        lines[0].get("is_error").is_none(),
        "Bash was not cancelled but answered (is it missing from the pool?): {lines:#?}"
    );
    assert_eq!(lines[0]["cancelled"], true, "{lines:#?}");
    assert_eq!(
        lines[1]["is_error"], false,
        "the session goes on: {lines:#?}"
    );
    // Had the command's process group survived the cancellation, its child would create
    // `late` two seconds after `started`.
    std::thread::sleep(Duration::from_secs(4));
    assert!(!late.exists(), "the cancelled command's child kept running");
}

#[test]
fn serve_rejects_a_bad_http_address() {
    let project = Project::new(&[]);
    let run = project.run(&["serve", "--http", "example.com:80"], None);
    run.assert_code(2);
    assert!(run.stderr.contains("--http example.com:80"), "{run:#?}");
}

/// A project whose `.mcp.json` starts the fake server of the tools-mcp tests.
fn project_with_fake_server() -> (Project, PathBuf) {
    let project = Project::new(&["log/"]);
    let script = test_support::mcp::fake_server();
    let log = project.root().join("log");
    let config = json!({"mcpServers": {"fake": {"command": "python3", "args": [script, log],
        "env": {"FAKE_TOOLS": r#"[{"name": "Read"}]"#}}}});
    std::fs::write(project.root().join(".mcp.json"), config.to_string()).unwrap();
    project.trust();
    (project, log)
}

/// Whether process `pid` still runs (zombies count as gone).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

#[test]
fn mcp_json_servers_join_the_pool_after_the_built_ins() {
    let (project, log) = project_with_fake_server();
    // `list` waits for the servers up to --mcp-wait (they start in the background).
    let run = project.run(&["list", "--mcp-wait", "120"], None);
    run.assert_code(0);
    let names: Vec<&str> = run.stdout.lines().collect();
    let first_mcp = names.iter().position(|n| n.starts_with("mcp__")).unwrap();
    assert!(names[..first_mcp].contains(&"Read"), "{names:?}");
    assert!(names[first_mcp..].contains(&"mcp__fake__echo"), "{names:?}");
    assert!(names[first_mcp..].contains(&"mcp__fake__Read"), "{names:?}");
    assert!(
        names[first_mcp..].iter().all(|n| n.starts_with("mcp__")),
        "{names:?}"
    );

    // MCP tools ask by default; headless, that is a denial naming the rule to add.
    let run = project.run(&["call", "mcp__fake__echo", r#"{"x": 1}"#], None);
    run.assert_code(1);
    assert!(
        crate::text(&run.result()).contains("mcp__fake__echo"),
        "{run:#?}"
    );
    let run = project.run(
        &[
            "call",
            "mcp__fake__echo",
            r#"{"x": 1}"#,
            "--allow",
            "mcp__fake",
        ],
        None,
    );
    run.assert_code(0);
    assert_eq!(crate::text(&run.result()), r#"echo {"x": 1}"#);

    // Every server started was stopped when its command ended.
    let starts = std::fs::read_to_string(log.join("starts")).unwrap();
    assert_eq!(starts.lines().count(), 3, "{starts}");
    for pid in starts.lines() {
        let mut tries = 0;
        while alive(pid) && tries < 200 {
            std::thread::sleep(Duration::from_millis(50));
            tries += 1;
        }
        assert!(!alive(pid), "MCP server {pid} outlived agent-tools");
    }
}

#[test]
fn a_broken_mcp_json_is_reported_and_the_built_ins_still_work() {
    let project = Project::new(&[".mcp.json = {\"mcpServers\": {\"x\": {}}}"]);
    project.trust();
    let run = project.run(&["list"], None);
    run.assert_code(0);
    assert!(run.stdout.lines().any(|n| n == "Glob"), "{run:#?}");
    assert!(run.stderr.contains("mcpServers.x"), "{run:#?}");
}

#[test]
fn serve_offers_the_mcp_json_tools_too() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let (project, _log) = project_with_fake_server();
    // `serve` answers at once; the server's tools join when it is ready, announced with
    // notifications/tools/list_changed.
    let scenario = json!({
        "transport": stdio(&project, &[]),
        "steps": [{"op": "wait_tool", "tool": "mcp__fake__echo"}, {"op": "list"}],
    });
    let lines = python(&peers, &project, &scenario);
    assert_eq!(lines[0]["found"], true, "{lines:#?}");
    let names: Vec<&str> = lines[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        names.contains(&"mcp__fake__echo") && names.contains(&"ListMcpResourcesTool"),
        "{names:?}"
    );
}

#[test]
fn ask_user_question_is_answered_through_elicitation() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let project = Project::new(&[]);
    let question = json!({"questions": [{"question": "Which colour?", "header": "Colour",
        "options": [{"label": "Blue", "description": "cool"}, {"label": "Red", "description": "warm"}]}]});
    let scenario = json!({
        "transport": stdio(&project, &[]),
        "elicit": "accept",
        "elicit_content": {"q1": "Blue"},
        "steps": [{"op": "call", "tool": "AskUserQuestion", "args": question}],
    });
    let lines = python(&peers, &project, &scenario);
    assert_eq!(lines[0]["is_error"], false, "{lines:#?}");
    assert!(
        lines[0]["text"].as_str().unwrap().contains("Blue"),
        "{lines:#?}"
    );
    let asked = lines[1]["elicited"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{asked:#?}");
}

/// A project whose `.mcp.json` starts `dynamic_server.py` (the Python SDK's MCPServer, whose
/// `add_tool` adds a tool at run time and announces it with `tools/list_changed`).
pub(crate) fn project_with_dynamic_server(peers: &Path) -> Project {
    let project = Project::new(&[]);
    let script = test_support::mcp::dynamic_server();
    let config = json!({"mcpServers": {"dyn": {"command": "python3", "args": [script, "stdio"],
        "env": {"PYTHONPATH": peers.join("py")}}}});
    std::fs::write(project.root().join(".mcp.json"), config.to_string()).unwrap();
    project.trust();
    project
}

/// Waits for the upstream server to be ready (it starts in the background), adds a tool
/// upstream, waits for the notification, lists, calls the new tool and finds it with
/// ToolSearch.
fn list_changed_steps() -> Vec<Value> {
    vec![
        json!({"op": "wait_tool", "tool": "mcp__dyn__greet"}),
        json!({"op": "list"}),
        json!({"op": "call", "tool": "mcp__dyn__add_tool", "args": {"name": "fresh"}}),
        json!({"op": "wait_list_changed"}),
        json!({"op": "list"}),
        json!({"op": "call", "tool": "mcp__dyn__fresh"}),
        json!({"op": "call", "tool": "ToolSearch", "args": {"query": "select:mcp__dyn__fresh"}}),
    ]
}

#[track_caller]
fn assert_list_changed(lines: &[Value]) {
    // The server was ready; the steps after waiting for it are what is checked.
    let (waited, lines): (Vec<Value>, Vec<Value>) = lines
        .iter()
        .cloned()
        .partition(|l| l.get("found").is_some());
    assert_eq!(waited, [json!({"found": true})], "{lines:#?}");
    let lines = &lines[..];
    let names = |line: &Value| -> Vec<String> {
        line["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("a tool list: {lines:#?}"))
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(
        lines[0]["capabilities"]["tools"]["listChanged"], true,
        "{lines:#?}"
    );
    let before = names(&lines[1]);
    assert!(before.contains(&"mcp__dyn__greet".to_owned()), "{before:?}");
    assert!(
        !before.contains(&"mcp__dyn__fresh".to_owned()),
        "{before:?}"
    );
    assert_eq!(lines[2]["is_error"], false, "{lines:#?}");
    assert_eq!(
        lines[3]["list_changed"], 1,
        "the client was told: {lines:#?}"
    );
    let after = names(&lines[4]);
    assert!(after.contains(&"mcp__dyn__fresh".to_owned()), "{after:?}");
    // Built-ins first, then the MCP tools sorted by name, as when the pool was built.
    let first_mcp = after.iter().position(|n| n.starts_with("mcp__")).unwrap();
    let mut mcp = after[first_mcp..].to_vec();
    mcp.sort();
    assert_eq!(mcp, after[first_mcp..], "{after:?}");
    assert!(after[..first_mcp].contains(&"Read".to_owned()), "{after:?}");
    assert_eq!(lines[5]["is_error"], false, "{lines:#?}");
    assert_eq!(lines[5]["text"], "fresh was added", "{lines:#?}");
    assert_eq!(
        lines[6]["is_error"], false,
        "ToolSearch is in the pool: {lines:#?}"
    );
    assert!(
        lines[6]["text"]
            .as_str()
            .unwrap()
            .contains("mcp__dyn__fresh"),
        "ToolSearch sees the new tool: {lines:#?}"
    );
}

#[test]
fn a_tool_added_upstream_reaches_the_stdio_client() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let project = project_with_dynamic_server(&peers);
    let scenario = json!({
        "transport": stdio(&project, &["--allow", "mcp__dyn"]),
        "capabilities": true,
        "steps": list_changed_steps(),
    });
    assert_list_changed(&python(&peers, &project, &scenario));
}

#[test]
fn a_tool_added_upstream_reaches_the_http_client() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let project = project_with_dynamic_server(&peers);
    let server = HttpServer::start(&project, &["--allow", "mcp__dyn"]);
    let scenario = json!({
        "transport": {"http": server.url},
        "capabilities": true,
        "steps": list_changed_steps(),
    });
    assert_list_changed(&python(&peers, &project, &scenario));
}

#[test]
fn batch_sees_a_tool_added_by_an_earlier_call() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let project = project_with_dynamic_server(&peers);
    let stdin = [
        json!({"tool": "mcp__dyn__add_tool", "input": {"name": "fresh"}}),
        json!({"tool": "mcp__dyn__fresh", "input": {}}),
        json!({"tool": "mcp__dyn__reword_greet", "input": {}}),
        json!({"tool": "mcp__dyn__greet", "input": {"name": "x"}}),
    ]
    .map(|l| l.to_string())
    .join("\n");
    let run = project.run(&["batch", "--allow", "mcp__dyn"], Some(&stdin));
    let lines = run.lines();
    assert_eq!(lines.len(), 4, "{run:#?}");
    assert_eq!(lines[0]["is_error"], false, "{run:#?}");
    assert_eq!(crate::text(&lines[1]), "fresh was added", "{run:#?}");
    // A tool whose definition changed after it was offered stays refused.
    assert_eq!(lines[3]["is_error"], true, "{run:#?}");
    assert!(
        crate::text(&lines[3]).contains("changed its definition"),
        "{run:#?}"
    );

    // The rebuilt pool follows the same rules: a blanket deny hides the new tool.
    let stdin = [
        json!({"tool": "mcp__dyn__add_tool", "input": {"name": "fresh"}}),
        json!({"tool": "mcp__dyn__fresh", "input": {}}),
    ]
    .map(|l| l.to_string())
    .join("\n");
    let run = project.run(
        &["batch", "--allow", "mcp__dyn", "--deny", "mcp__dyn__fresh"],
        Some(&stdin),
    );
    let lines = run.lines();
    assert_eq!(lines[0]["is_error"], false, "{run:#?}");
    assert_eq!(lines[1]["is_error"], true, "{run:#?}");
    assert!(
        crate::text(&lines[1]).contains("No such tool available: mcp__dyn__fresh"),
        "{run:#?}"
    );
}

/// `dynamic_server.py` over https on a free port with a certificate from a test CA that
/// nothing trusts, killed on drop.
struct TlsServer {
    child: Child,
    url: String,
    /// The certificates, kept while the server runs
    _certs: tempfile::TempDir,
}

impl TlsServer {
    fn start(peers: &Path) -> Self {
        let certs = test_support::mcp::certificates(peers);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut child = Command::new("python3")
            .arg(test_support::mcp::dynamic_server())
            .args(["http", &port.to_string()])
            .arg(certs.path().join("server.pem"))
            .arg(certs.path().join("server.key"))
            .env("PYTHONPATH", peers.join("py"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run dynamic_server.py");
        let mut tries = 0;
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() && tries < 400 {
            std::thread::sleep(Duration::from_millis(50));
            tries += 1;
        }
        assert!(
            child.try_wait().expect("status").is_none(),
            "dynamic_server.py could not listen on {port}"
        );
        TlsServer {
            child,
            url: format!("https://127.0.0.1:{port}/mcp"),
            _certs: certs,
        }
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server whose certificate is not trusted (no `caCertFile`): the built-ins still work,
/// and the binary's stderr says which server failed, why, and what to set (trusting it
/// through `caCertFile` is tools-mcp's `tests/it/client.rs`).
#[test]
fn an_untrusted_https_server_is_reported_and_the_built_ins_still_work() {
    let Some(peers) = peer("py/cryptography") else {
        return;
    };
    let server = TlsServer::start(&peers);
    let project = Project::new(&[]);
    let config = json!({"mcpServers": {"secure": {"type": "http", "url": server.url}}});
    std::fs::write(project.root().join(".mcp.json"), config.to_string()).unwrap();
    project.trust();
    let run = project.run(&["list"], None);
    run.assert_code(0);
    assert!(run.stdout.lines().any(|n| n == "Read"), "{run:#?}");
    assert!(!run.stdout.contains("mcp__secure"), "{run:#?}");
    assert!(
        run.stderr
            .contains("MCP server \"secure\" failed to connect")
            && run.stderr.contains("invalid peer certificate")
            && run.stderr.contains("caCertFile"),
        "{run:#?}"
    );
}
