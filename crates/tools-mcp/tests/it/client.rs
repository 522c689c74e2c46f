//! The client manager against real servers: `@modelcontextprotocol/server-everything` over
//! stdio and streamable HTTP, `@modelcontextprotocol/server-filesystem`, and a deliberately
//! misbehaving server (`fake_server.py`) for timeouts, crashes and stderr floods.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;
use test_support::peers::peer;
use tool_core::{
    CallResult, PermissionEngine, PermissionMode, PermissionRule, ProgressSink, RuleBehavior,
    RuleSource, RuleSourceKind, SourcedRule, Tool, ToolCall, ToolContext, ToolPool,
};
use tools_mcp::{LivePool, McpManager, STDERR_CAP, start_project_servers};

use crate::live::assembler;

/// A session with the servers of `mcp_json` started from `<root>/.mcp.json`.
pub struct Session {
    _dir: TempDir,
    pub root: PathBuf,
    pub ctx: ToolContext,
    pub manager: Arc<McpManager>,
    pub pool: ToolPool,
}

impl Session {
    pub async fn start(mcp_json: Value, allow: &[&str], mode: PermissionMode) -> Session {
        let (dir, root) = test_support::tempdir();
        std::fs::write(root.join(".mcp.json"), mcp_json.to_string()).unwrap();
        approve_mcp_json(&root, &root.join("state"));
        let source = RuleSource {
            kind: RuleSourceKind::CliArg,
            file: None,
            root: root.clone(),
        };
        let rules = allow
            .iter()
            .map(|r| SourcedRule {
                rule: PermissionRule::parse(r).unwrap(),
                behavior: RuleBehavior::Allow,
                source: source.clone(),
            })
            .collect();
        let ctx = ToolContext::builder(&root)
            .state_dir(root.join("state"))
            .mode(mode)
            .permissions(PermissionEngine::new(rules))
            .build();
        let manager = start_project_servers(&ctx).unwrap().unwrap();
        // The servers start in the background; these tests want them started.
        let starting = manager.wait_started(None).await;
        assert!(starting.is_empty(), "{starting:?}");
        let mut tools: Vec<Arc<dyn Tool>> = tools_mcp::tools();
        tools.extend(manager.tools());
        Session {
            _dir: dir,
            root,
            pool: ToolPool::new(tools),
            manager,
            ctx,
        }
    }

    pub async fn call(&self, tool: &str, input: Value) -> CallResult {
        self.pool.call(tool, input, &self.ctx).await
    }
}

/// Records a person's approval of `<root>/.mcp.json` as it is now, in the approvals of
/// `state` (what `agent-tools trust` does).
pub fn approve_mcp_json(root: &Path, state: &Path) {
    let bytes = std::fs::read(root.join(".mcp.json")).unwrap();
    tool_core::TrustStore::in_state_dir(state)
        .approve(root, tool_core::MCP_JSON, &tool_core::sha256_hex(&bytes))
        .unwrap();
}

pub fn bin(peers: &Path, name: &str) -> String {
    peers
        .join("node_modules/.bin")
        .join(name)
        .to_str()
        .unwrap()
        .to_owned()
}

pub fn fake_server(log: &Path, extra_tools: Value, timeout_ms: u64) -> Value {
    let script = test_support::mcp::fake_server();
    json!({"command": "python3", "args": [script, log], "toolTimeoutMs": timeout_ms,
           "env": {"FAKE_TOOLS": extra_tools.to_string()}})
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Polls `check` for up to 20 s (notifications arrive asynchronously).
pub async fn eventually(mut check: impl FnMut() -> bool) -> bool {
    for _ in 0..400 {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_stdio_lists_calls_and_maps_results() {
    let Some(peers) = peer("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    let s = Session::start(
        json!({"mcpServers": {"everything": {"command": bin(&peers, "mcp-server-everything"), "args": ["stdio"]}}}),
        &["mcp__everything"],
        PermissionMode::Default,
    )
    .await;
    let status = &s.manager.statuses()[0];
    assert!(status.connected && status.error.is_none(), "{status:?}");
    let names = s.pool.names();
    for name in [
        "mcp__everything__echo",
        "mcp__everything__get-sum",
        "mcp__everything__get-tiny-image",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let echo = s.pool.get("mcp__everything__echo").unwrap();
    assert!(echo.annotations().read_only);
    let schema = echo.input_schema();
    assert_eq!(
        schema["properties"]["message"]["type"], "string",
        "{schema}"
    );
    let gzip = s
        .pool
        .get("mcp__everything__gzip-file-as-resource")
        .unwrap();
    assert!(!gzip.annotations().read_only);

    let r = s
        .call("mcp__everything__echo", json!({"message": "hi"}))
        .await;
    assert!(!r.is_error, "{r:?}");
    assert!(r.text().contains("hi"), "{r:?}");

    let r = s
        .call(
            "mcp__everything__get-structured-content",
            json!({"location": "New York"}),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    assert!(r.data.is_object(), "structured content becomes data: {r:?}");

    let r = s.call("mcp__everything__get-tiny-image", json!({})).await;
    assert!(!r.is_error, "{r:?}");
    assert!(
        r.content.iter().any(|b| matches!(b, tool_core::ContentBlock::Image { media_type, .. } if media_type == "image/png")),
        "{r:?}"
    );

    let r = s
        .call(
            "mcp__everything__get-resource-reference",
            json!({"resourceType": "Text", "resourceId": 1}),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    assert!(
        r.text().contains("[Resource "),
        "embedded resources are shown inline: {r:?}"
    );

    // A server-side error is an error result the model can read.
    let r = s.call("mcp__everything__get-sum", json!({"a": "x"})).await;
    assert!(r.is_error, "{r:?}");

    // Progress notifications reach the call's sink.
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&events);
    let sink = ProgressSink::new(move |p| seen.lock().unwrap().push(p));
    let call = ToolCall::new(
        "mcp__everything__trigger-long-running-operation",
        json!({"duration": 1, "steps": 3}),
    );
    let r = s.pool.execute(call, &s.ctx, sink).await;
    assert!(!r.is_error, "{r:?}");
    assert!(
        !events.lock().unwrap().is_empty(),
        "no progress was reported"
    );

    // server-everything announces tools/list_changed; the manager refreshes the list.
    assert!(eventually(|| s.manager.list_changes("everything") >= 1).await);
    s.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_ask_unless_a_rule_allows_them() {
    let Some(peers) = peer("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    let config = json!({"mcpServers": {"everything": {"command": bin(&peers, "mcp-server-everything"), "args": ["stdio"]}}});
    let s = Session::start(config.clone(), &[], PermissionMode::Default).await;
    let r = s
        .call("mcp__everything__echo", json!({"message": "hi"}))
        .await;
    assert!(r.is_error, "{r:?}");
    assert!(r.text().contains("mcp__everything__echo"), "{}", r.text());
    s.manager.shutdown().await;
    for rule in ["mcp__everything__*", "mcp__everything__echo"] {
        let s = Session::start(config.clone(), &[rule], PermissionMode::Default).await;
        let r = s
            .call("mcp__everything__echo", json!({"message": "hi"}))
            .await;
        assert!(!r.is_error, "{rule}: {r:?}");
        s.manager.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_are_listed_and_read() {
    let Some(peers) = peer("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    let s = Session::start(
        json!({"mcpServers": {"everything": {"command": bin(&peers, "mcp-server-everything"), "args": ["stdio"]}}}),
        &[],
        PermissionMode::Default,
    )
    .await;
    let r = s.call("ListMcpResourcesTool", json!({})).await;
    assert!(!r.is_error, "{r:?}");
    let listed = r.data.as_array().unwrap();
    let text = listed
        .iter()
        .find(|res| res["mimeType"] == "text/markdown")
        .expect("a markdown resource");
    assert_eq!(text["server"], "everything");
    let uri = text["uri"].as_str().unwrap();
    let r = s
        .call(
            "ReadMcpResourceTool",
            json!({"server": "everything", "uri": uri}),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    assert!(
        r.data["contents"][0]["text"].as_str().unwrap().len() > 10,
        "{r:?}"
    );

    // A binary resource is saved to a file.
    let blob = listed
        .iter()
        .find(|res| res["uri"].as_str().is_some_and(|u| u.contains("blob")))
        .map(|res| res["uri"].as_str().unwrap().to_owned());
    if let Some(uri) = blob {
        let r = s
            .call(
                "ReadMcpResourceTool",
                json!({"server": "everything", "uri": uri}),
            )
            .await;
        assert!(!r.is_error, "{r:?}");
        let saved = r.data["contents"][0]["blobSavedTo"]
            .as_str()
            .expect("saved");
        assert!(
            Path::new(saved).starts_with(s.root.join("state")),
            "{saved}"
        );
        assert!(std::fs::metadata(saved).unwrap().len() > 0);
    }

    let r = s
        .call("ListMcpResourcesTool", json!({"server": "nope"}))
        .await;
    assert!(r.is_error);
    assert!(
        r.text()
            .contains("Server \"nope\" not found. Available servers: everything"),
        "{}",
        r.text()
    );
    let r = s
        .call(
            "ReadMcpResourceTool",
            json!({"server": "everything", "uri": "demo://nope"}),
        )
        .await;
    assert!(r.is_error, "{r:?}");
    s.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filesystem_server_reads_a_file_inside_the_sessions_roots_only() {
    let Some(peers) = peer("node_modules/.bin/mcp-server-filesystem") else {
        return;
    };
    // The directory given on its command line is replaced by the client's roots (the
    // session's working directories), as server-filesystem does for a client with roots.
    let (_other_dir, other) = test_support::tempdir();
    std::fs::write(other.join("elsewhere.txt"), "not in the session\n").unwrap();
    let s = Session::start(
        json!({"mcpServers": {"fs": {"command": bin(&peers, "mcp-server-filesystem"), "args": [other]}}}),
        &["mcp__fs"],
        PermissionMode::Default,
    )
    .await;
    std::fs::write(
        s.root.join("hello.txt"),
        "hello from the filesystem server\n",
    )
    .unwrap();
    assert!(
        s.pool.get("mcp__fs__read_text_file").is_some(),
        "{:?}",
        s.pool.names()
    );
    // The server asks for the roots after the handshake, on its own time.
    let root = s.root.display().to_string();
    let mut allowed = String::new();
    for _ in 0..200 {
        allowed = s
            .call("mcp__fs__list_allowed_directories", json!({}))
            .await
            .text();
        if allowed.contains(&root) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(allowed.contains(&root), "{allowed}");
    assert!(!allowed.contains(&other.display().to_string()), "{allowed}");
    let r = s
        .call(
            "mcp__fs__read_text_file",
            json!({"path": s.root.join("hello.txt")}),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    assert!(
        r.text().contains("hello from the filesystem server"),
        "{r:?}"
    );
    for outside in [other.join("elsewhere.txt"), PathBuf::from("/etc/passwd")] {
        let r = s
            .call("mcp__fs__read_text_file", json!({"path": outside}))
            .await;
        assert!(r.is_error, "outside the roots: {r:?}");
    }
    let stderr = s.manager.stderr("fs").unwrap().text();
    assert!(!stderr.contains("does not support MCP Roots"), "{stderr}");
    assert!(
        stderr.contains("Updated allowed directories from MCP roots"),
        "{stderr}"
    );
    s.manager.shutdown().await;
}

/// server-everything over streamable HTTP on `port`, killed on drop.
async fn everything_http(peers: &Path, port: u16) -> tokio::process::Child {
    let child = tokio::process::Command::new(bin(peers, "mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let up = eventually(|| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()).await;
    assert!(up, "server-everything did not listen on {port}");
    child
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_over_streamable_http() {
    let Some(peers) = peer("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    let port = free_port();
    let mut child = everything_http(&peers, port).await;
    let s = Session::start(
        json!({"mcpServers": {"remote": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp"),
               "headers": {"X-Test": "1"}}}}),
        &["mcp__remote"],
        PermissionMode::Default,
    )
    .await;
    let status = &s.manager.statuses()[0];
    assert!(status.error.is_none(), "{status:?}");
    let r = s
        .call("mcp__remote__echo", json!({"message": "over http"}))
        .await;
    assert!(!r.is_error, "{r:?}");
    assert!(r.text().contains("over http"), "{r:?}");
    let r = s
        .call("ListMcpResourcesTool", json!({"server": "remote"}))
        .await;
    assert!(
        !r.is_error && !r.data.as_array().unwrap().is_empty(),
        "{r:?}"
    );
    s.manager.shutdown().await;
    let _ = child.kill().await;
}

/// `dynamic_server.py` (the Python SDK) over streamable HTTP on `port`, killed on drop.
pub async fn python_http(peers: &Path, port: u16) -> tokio::process::Child {
    python_server(peers, port, None).await
}

/// `dynamic_server.py` over HTTP, or over https with the certificate and key in `tls`.
async fn python_server(peers: &Path, port: u16, tls: Option<&Path>) -> tokio::process::Child {
    let script = test_support::mcp::dynamic_server();
    let mut command = tokio::process::Command::new("python3");
    command.arg(script).args(["http", &port.to_string()]);
    if let Some(dir) = tls {
        command
            .arg(dir.join("server.pem"))
            .arg(dir.join("server.key"));
    }
    let mut child = command
        .env("PYTHONPATH", peers.join("py"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let up = eventually(|| std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()).await;
    assert!(up, "dynamic_server.py did not listen on {port}");
    // Another process could have taken the port meanwhile: then ours has exited.
    assert!(
        child.try_wait().unwrap().is_none(),
        "dynamic_server.py could not listen on {port}"
    );
    child
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_server_signed_by_the_ca_of_ca_cert_file_is_trusted() {
    let Some(peers) = peer("py/cryptography") else {
        return;
    };
    let certs = test_support::mcp::certificates(&peers);
    let port = free_port();
    let mut child = python_server(&peers, port, Some(certs.path())).await;
    let url = format!("https://127.0.0.1:{port}/mcp");
    let s = Session::start(
        json!({"mcpServers": {"secure": {"type": "http", "url": url, "caCertFile": certs.path().join("ca.pem")}}}),
        &["mcp__secure"],
        PermissionMode::Default,
    )
    .await;
    let status = &s.manager.statuses()[0];
    assert!(status.error.is_none(), "{status:?}");
    let r = s
        .call("mcp__secure__greet", json!({"name": "over tls"}))
        .await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.text(), "hello over tls");
    s.manager.shutdown().await;

    // Without caCertFile the certificate is not trusted: the error names the server, the
    // TLS problem and the setting that fixes it.
    let s = Session::start(
        json!({"mcpServers": {"secure": {"type": "http", "url": url}}}),
        &["mcp__secure"],
        PermissionMode::Default,
    )
    .await;
    let error = s.manager.statuses()[0].error.clone().expect("an error");
    assert!(
        error.contains("MCP server \"secure\" failed to connect"),
        "{error}"
    );
    assert!(error.contains(&url), "{error}");
    assert!(error.to_lowercase().contains("certificate"), "{error}");
    assert!(error.contains("caCertFile"), "{error}");
    assert!(s.pool.get("mcp__secure__greet").is_none());
    s.manager.shutdown().await;

    // A caCertFile that holds no certificate is named in the error.
    let bogus = certs.path().join("not-a-cert.pem");
    std::fs::write(&bogus, "hello").unwrap();
    let s = Session::start(
        json!({"mcpServers": {"secure": {"type": "http", "url": url, "caCertFile": bogus}}}),
        &[],
        PermissionMode::Default,
    )
    .await;
    let error = s.manager.statuses()[0].error.clone().expect("an error");
    assert!(
        error.contains(&format!(
            "caCertFile {}: no certificate in it",
            bogus.display()
        )),
        "{error}"
    );
    s.manager.shutdown().await;
    let _ = child.kill().await;
}

/// A session with the server "remote" over streamable HTTP at 127.0.0.1:`port`, its tools
/// allowed.
async fn remote_session(port: u16) -> Session {
    Session::start(
        json!({"mcpServers": {"remote": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}}}),
        &["mcp__remote"],
        PermissionMode::Default,
    )
    .await
}

/// The note a call gets when its session had to be started again.
const RENEWED: &str = "no longer knew agent-tools' session";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_python_server_restarted_on_its_port_answers_404_and_gets_a_new_session() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let port = free_port();
    let mut child = python_http(&peers, port).await;
    let s = remote_session(port).await;
    let live = LivePool::following(Arc::clone(&s.manager), assembler());
    let r = s
        .call("mcp__remote__add_tool", json!({"name": "fresh"}))
        .await;
    assert!(!r.is_error, "{r:?}");
    assert!(eventually(|| live.current().get("mcp__remote__fresh").is_some()).await);

    // The server restarts on the same port: it answers the old session id with HTTP 404.
    let _ = child.kill().await;
    let _ = child.wait().await;
    let mut child = python_http(&peers, port).await;
    let r = s.call("mcp__remote__greet", json!({"name": "again"})).await;
    assert!(!r.is_error, "{r:?}");
    let text = r.text();
    assert!(text.contains("hello again"), "{text}");
    assert!(
        text.contains(RENEWED) && text.contains("HTTP 404"),
        "{text}"
    );
    // The new session lists the tools again: the restarted server has no `fresh`.
    assert!(live.settled().await.get("mcp__remote__fresh").is_none());
    let r = s.call("mcp__remote__greet", json!({"name": "later"})).await;
    assert!(!r.is_error && !r.text().contains(RENEWED), "{r:?}");
    s.manager.shutdown().await;
    let _ = child.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_restarted_on_its_port_gets_a_new_session() {
    let Some(peers) = peer("node_modules/.bin/mcp-server-everything") else {
        return;
    };
    let port = free_port();
    let mut child = everything_http(&peers, port).await;
    let s = remote_session(port).await;
    let r = s
        .call("mcp__remote__echo", json!({"message": "first"}))
        .await;
    assert!(!r.is_error, "{r:?}");
    // server-everything answers an unknown session with HTTP 400 and a JSON-RPC error
    // without an id (not the spec's 404); the call must not wait for its timeout.
    let _ = child.kill().await;
    let _ = child.wait().await;
    let mut child = everything_http(&peers, port).await;
    let r = s
        .call("mcp__remote__echo", json!({"message": "second"}))
        .await;
    assert!(!r.is_error, "{r:?}");
    let text = r.text();
    assert!(text.contains("second"), "{text}");
    assert!(
        text.contains(RENEWED) && text.contains("No valid session ID"),
        "{text}"
    );
    // Resources work in the new session too.
    let _ = child.kill().await;
    let _ = child.wait().await;
    let mut child = everything_http(&peers, port).await;
    let r = s
        .call("ListMcpResourcesTool", json!({"server": "remote"}))
        .await;
    assert!(!r.is_error, "{r:?}");
    s.manager.shutdown().await;
    let _ = child.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out_is_cancelled_and_restarted() {
    let log = tempfile::tempdir().unwrap();
    let s = Session::start(
        json!({"mcpServers": {"fake": fake_server(log.path(), json!([]), 500)}}),
        &["mcp__fake"],
        PermissionMode::Default,
    )
    .await;
    let r = s.call("mcp__fake__hang", json!({})).await;
    assert!(r.is_error, "{r:?}");
    assert!(r.text().contains("timed out"), "{}", r.text());
    // notifications/cancelled reached the server before it was stopped.
    assert!(eventually(|| !lines(&log.path().join("cancelled")).is_empty()).await);
    // The next call starts the server again.
    let r = s.call("mcp__fake__echo", json!({"x": 1})).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(lines(&log.path().join("starts")).len(), 2);

    // A cancelled call returns at once and tells the server.
    let before = lines(&log.path().join("cancelled")).len();
    let call_ctx = s.ctx.child();
    let token = call_ctx.cancel_token().clone();
    let pool = s.pool.clone();
    let task =
        tokio::spawn(async move { pool.call("mcp__fake__hang", json!({}), &call_ctx).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    token.cancel();
    let r = task.await.unwrap();
    assert!(r.is_error && r.text().contains("cancelled"), "{r:?}");
    assert!(eventually(|| lines(&log.path().join("cancelled")).len() > before).await);
    s.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_call_is_a_clear_error_then_reconnects() {
    let log = tempfile::tempdir().unwrap();
    let s = Session::start(
        json!({"mcpServers": {"fake": fake_server(log.path(), json!([]), 10_000)}}),
        &["mcp__fake"],
        PermissionMode::Default,
    )
    .await;
    let r = s.call("mcp__fake__die", json!({})).await;
    assert!(r.is_error, "{r:?}");
    assert!(r.text().contains("lost the connection"), "{}", r.text());
    let r = s.call("mcp__fake__echo", json!({"again": true})).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(lines(&log.path().join("starts")).len(), 2);
    s.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_flooding_stderr_or_answering_10_mb_is_bounded() {
    let log = tempfile::tempdir().unwrap();
    let s = Session::start(
        json!({"mcpServers": {"fake": fake_server(log.path(), json!([]), 30_000)}}),
        &["mcp__fake"],
        PermissionMode::Default,
    )
    .await;
    let r = s.call("mcp__fake__flood", json!({})).await;
    assert!(!r.is_error, "{r:?}");
    let tail = s.manager.stderr("fake").unwrap();
    // A 10 MB result is spilled to a file with a preview.
    let r = s.call("mcp__fake__big", json!({})).await;
    assert!(!r.is_error, "{}", r.text().len());
    let text = r.text();
    assert!(text.len() < 10_000, "{}", text.len());
    assert!(text.contains("Full output saved to:"), "{text}");
    assert!(
        eventually(|| tail.total() >= 5 * 1024 * 1024).await,
        "{}",
        tail.total()
    );
    assert!(tail.kept() <= STDERR_CAP);
    s.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_are_sanitised_collisions_rejected_and_descriptions_capped() {
    let log = tempfile::tempdir().unwrap();
    let extra = json!([
        {"name": "read-file"}, {"name": "read_file"}, {"name": "read.file"},
        {"name": "bad name"}, {"name": "caf\u{e9}"}, {"name": "x".repeat(500)},
        {"name": "ns/long", "description": "Hidden\u{200B}", "pad": 200_000},
        {"name": "a".repeat(100)},
    ]);
    let s = Session::start(
        json!({"mcpServers": {"fake": fake_server(log.path(), extra, 10_000), "other": fake_server(log.path(), json!([]), 10_000)}}),
        &[],
        PermissionMode::Default,
    )
    .await;
    let names = s.pool.names();
    // Two servers with the same tool are both reachable under their own names.
    assert!(names.contains(&"mcp__fake__echo") && names.contains(&"mcp__other__echo"));
    // read-file and read.file collide after sanitising; both are refused, read_file too
    // (read.file sanitises to read_file).
    assert!(
        names.contains(&"mcp__fake__read-file"),
        "read-file alone is distinct: {names:?}"
    );
    assert!(!names.contains(&"mcp__fake__read_file"), "{names:?}");
    assert!(
        names
            .iter()
            .all(|n| !n.contains("bad") && !n.contains("caf"))
    );
    assert!(names.iter().all(|n| n.len() <= 64), "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("mcp__fake__aaaa")));
    let long = s.pool.get("mcp__fake__ns_long").unwrap();
    let description = long.description(None).await;
    assert!(description.ends_with("… [truncated]") && !description.contains('\u{200B}'));
    let warnings = s.manager.statuses()[0].warnings.join("\n");
    assert!(
        warnings.contains("\"read_file\" of server \"fake\" and \"read.file\" of server \"fake\""),
        "{warnings}"
    );
    assert!(
        warnings.contains("\"bad name\" of server \"fake\" was rejected"),
        "{warnings}"
    );
    assert!(warnings.contains("invisible"), "{warnings}");
    s.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_server_is_listed_with_its_error_and_does_not_block_others() {
    let log = tempfile::tempdir().unwrap();
    let s = Session::start(
        json!({"mcpServers": {
            "broken": {"command": "/nonexistent/mcp-server"},
            "silent": {"command": "sleep", "args": ["600"], "startupTimeoutMs": 500},
            "fake": fake_server(log.path(), json!([]), 10_000)}}),
        &["mcp__fake"],
        PermissionMode::Default,
    )
    .await;
    let statuses = s.manager.statuses();
    let by_name = |n: &str| statuses.iter().find(|st| st.name == n).unwrap().clone();
    assert!(
        by_name("broken")
            .error
            .unwrap()
            .contains("cannot start `/nonexistent/mcp-server`")
    );
    assert!(
        by_name("silent")
            .error
            .unwrap()
            .contains("did not finish starting within 0.5s")
    );
    assert!(by_name("fake").error.is_none());
    let r = s.call("mcp__fake__echo", json!({})).await;
    assert!(!r.is_error, "{r:?}");
    s.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_whose_definition_changes_is_not_called_until_reviewed() {
    let log = tempfile::tempdir().unwrap();
    let s = Session::start(
        json!({"mcpServers": {"fake": fake_server(log.path(), json!([]), 10_000)}}),
        &["mcp__fake"],
        PermissionMode::Default,
    )
    .await;
    let r = s.call("mcp__fake__echo", json!({})).await;
    assert!(!r.is_error, "{r:?}");
    let r = s.call("mcp__fake__mutate", json!({})).await;
    assert!(!r.is_error, "{r:?}");
    assert!(eventually(|| s.manager.list_changes("fake") >= 1).await);
    let r = s.call("mcp__fake__echo", json!({})).await;
    assert!(r.is_error, "{r:?}");
    assert!(r.text().contains("changed its definition"), "{}", r.text());
    // The manager keeps offering the first definition, which keeps refusing.
    let again = s.manager.tools();
    let echo = again
        .iter()
        .find(|t| t.name() == "mcp__fake__echo")
        .unwrap();
    assert_eq!(echo.description(None).await, "Echoes");
    let r = s.call("mcp__fake__echo", json!({})).await;
    assert!(r.is_error, "{r:?}");
    s.manager.shutdown().await;
}

/// `fake_server.py` with `FAKE_BEFORE_INIT=before` and a start-up timeout of 20 s.
fn fake_server_before_init(log: &Path, before: &str) -> Value {
    let mut server = fake_server(log, json!([]), 10_000);
    server["env"]["FAKE_BEFORE_INIT"] = json!(before);
    server["startupTimeoutMs"] = json!(20_000);
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_change_sent_before_the_handshake_ends_leaves_no_refresh_in_flight() {
    let log = tempfile::tempdir().unwrap();
    let s = Session::start(
        json!({"mcpServers": {"fake": fake_server_before_init(log.path(), "list_changed")}}),
        &["mcp__fake"],
        PermissionMode::Default,
    )
    .await;
    let status = &s.manager.statuses()[0];
    assert!(status.error.is_none(), "{status:?}");
    assert!(s.pool.get("mcp__fake__echo").is_some());
    // The tools listed after the handshake cover the early notification: settling does
    // not wait for a refresh that will never come (up to the 20 s start-up timeout).
    let settled = tokio::time::timeout(Duration::from_secs(5), s.manager.settle()).await;
    assert!(
        settled.is_ok(),
        "settle() waited for a refresh never started"
    );
    s.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialize_refused_with_an_error_naming_no_request_is_reported_with_its_message() {
    let log = tempfile::tempdir().unwrap();
    let s = Session::start(
        json!({"mcpServers": {"fake": fake_server_before_init(log.path(), "refuse")}}),
        &["mcp__fake"],
        PermissionMode::Default,
    )
    .await;
    let error = s.manager.statuses()[0].error.clone().expect("an error");
    assert!(error.contains("initialize refused by the fake"), "{error}");
    s.manager.shutdown().await;
}
