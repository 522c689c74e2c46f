//! What the client gives and keeps, against the real servers: the protocol version each
//! one answers with, the session's working directories as MCP roots (server-everything's
//! get-roots-list, server-filesystem, the Python SDK's `roots/list`), a tool's
//! `outputSchema` with its `structuredContent` checked and passed on through the server
//! adapter, and `TCP_NODELAY` on its HTTP connections.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::mcp::run_client;
use test_support::peers::peer;
use tool_core::{PermissionMode, ToolContext, ToolPool};
use tools_mcp::{LivePool, SessionFactory, mcp_tool_list};

use crate::client::{Session, bin, fake_server, free_port, python_http};
use crate::live::{assembler, dynamic_server};
use crate::server::serve_with;

/// The pool of `s`'s MCP tools as they are now, once `name` is among them (tools a server
/// registers after the handshake come with `tools/list_changed`).
async fn pool_with(s: &Session, name: &str) -> ToolPool {
    for _ in 0..400 {
        let pool = ToolPool::new(s.manager.tools());
        if pool.get(name).is_some() {
            return pool;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{name} never appeared: {:?}", s.manager.statuses());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_servers_answer_2025_11_25_and_get_the_sessions_roots() {
    let (Some(peers), Some(_), Some(_)) = (
        peer("node_modules/.bin/mcp-server-everything"),
        peer("node_modules/.bin/mcp-server-filesystem"),
        peer("py/mcp"),
    ) else {
        return;
    };
    let s = Session::start(
        json!({"mcpServers": {
            "everything": {"command": bin(&peers, "mcp-server-everything"), "args": ["stdio"]},
            "fs": {"command": bin(&peers, "mcp-server-filesystem")},
            "dyn": dynamic_server(&peers)}}),
        &["mcp__everything", "mcp__dyn"],
        PermissionMode::Default,
    )
    .await;
    for status in s.manager.statuses() {
        assert!(status.connected && status.error.is_none(), "{status:?}");
        // The newest version with an `initialize` handshake; none of them offers newer there.
        assert_eq!(
            status.protocol_version.as_deref(),
            Some("2025-11-25"),
            "{status:?}"
        );
    }
    let root_uri = format!("file://{}", s.root.display());

    // server-everything registers get-roots-list only for a client with roots.
    let pool = pool_with(&s, "mcp__everything__get-roots-list").await;
    let r = pool
        .call("mcp__everything__get-roots-list", json!({}), &s.ctx)
        .await;
    assert!(!r.is_error, "{r:?}");
    assert!(r.text().contains(&root_uri), "{}", r.text());

    // The Python SDK's server asks with roots/list during a call.
    let r = s.call("mcp__dyn__roots", json!({})).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.text(), root_uri);

    // server-filesystem started without directories works in the roots alone.
    let stderr = s.manager.stderr("fs").unwrap();
    let mut text = String::new();
    for _ in 0..200 {
        text = stderr.text();
        if text.contains("Updated allowed directories from MCP roots") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        text.contains("Updated allowed directories from MCP roots: 1 valid directories"),
        "{text}"
    );
    s.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn additional_working_directories_are_roots_too() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let (_extra_dir, extra) = test_support::tempdir();
    let (_dir, root) = test_support::tempdir();
    std::fs::write(
        root.join(".mcp.json"),
        json!({"mcpServers": {"dyn": dynamic_server(&peers)}}).to_string(),
    )
    .unwrap();
    crate::client::approve_mcp_json(&root, &root.join("state"));
    let ctx = ToolContext::builder(&root)
        .state_dir(root.join("state"))
        .additional_dirs(vec![extra.clone()])
        .mode(PermissionMode::BypassPermissions)
        .build();
    let manager = tools_mcp::start_project_servers(&ctx).unwrap().unwrap();
    assert!(manager.wait_started(None).await.is_empty());
    let pool = ToolPool::new(manager.tools());
    let r = pool.call("mcp__dyn__roots", json!({}), &ctx).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(
        r.text(),
        format!("file://{}\nfile://{}", root.display(), extra.display())
    );
    manager.shutdown().await;
}

/// A fake-server tool declaring `schema` and answering `structured` (none when `Null`).
fn typed(name: &str, schema: &Value, structured: Value) -> Value {
    let mut tool = json!({"name": name, "outputSchema": schema});
    if !structured.is_null() {
        tool["structured"] = structured;
    }
    tool
}

/// The fake server with tools that keep or break the promise of their output schema.
fn fake_with_output_schemas(log: &Path) -> Value {
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"},
        "items": {"type": "array", "items": {"$ref": "#/$defs/item"}}},
        "required": ["n"], "$defs": {"item": {"type": "string"}}});
    let tools = json!([
        typed("typed", &schema, json!({"n": 1, "items": ["a", "b"]})),
        typed("typed_wrong", &schema, json!({"n": "one"})),
        typed("typed_deep_wrong", &schema, json!({"n": 1, "items": ["a", 2]})),
        typed("typed_missing", &schema, Value::Null),
        {"name": "untyped", "structured": {"free": true}},
    ]);
    fake_server(log, tools, 10_000)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn structured_content_is_kept_and_checked_against_the_output_schema() {
    let log = tempfile::tempdir().unwrap();
    let s = Session::start(
        json!({"mcpServers": {"fake": fake_with_output_schemas(log.path())}}),
        &["mcp__fake"],
        PermissionMode::Default,
    )
    .await;
    let check = |tool: &str, expected: Result<Value, &'static str>| {
        let s = &s;
        let tool = tool.to_owned();
        async move {
            let r = s.call(&tool, json!({})).await;
            match expected {
                Ok(data) => {
                    assert!(!r.is_error, "{tool}: {r:?}");
                    assert_eq!(r.data, data, "{tool}");
                }
                Err(fragment) => {
                    assert!(r.is_error, "{tool}: {r:?}");
                    assert!(r.text().contains(fragment), "{tool}: {}", r.text());
                    assert!(r.text().contains("MCP server \"fake\""), "{}", r.text());
                }
            }
        }
    };
    check("mcp__fake__typed", Ok(json!({"n": 1, "items": ["a", "b"]}))).await;
    check(
        "mcp__fake__typed_wrong",
        Err("structuredContent.n: expected integer, got string"),
    )
    .await;
    check(
        "mcp__fake__typed_deep_wrong",
        Err("structuredContent.items[1]: expected string, got integer"),
    )
    .await;
    check(
        "mcp__fake__typed_missing",
        Err("returned no structuredContent"),
    )
    .await;
    check("mcp__fake__untyped", Ok(json!({"free": true}))).await;
    let typed = s.pool.get("mcp__fake__typed").unwrap();
    assert_eq!(typed.output_schema().unwrap()["required"], json!(["n"]));
    assert!(
        s.pool
            .get("mcp__fake__untyped")
            .unwrap()
            .output_schema()
            .is_none()
    );
    s.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_servers_structured_results_pass_their_own_schemas() {
    let (Some(peers), Some(_)) = (
        peer("node_modules/.bin/mcp-server-everything"),
        peer("py/mcp"),
    ) else {
        return;
    };
    let s = Session::start(
        json!({"mcpServers": {
            "everything": {"command": bin(&peers, "mcp-server-everything"), "args": ["stdio"]},
            "dyn": dynamic_server(&peers)}}),
        &["mcp__everything", "mcp__dyn"],
        PermissionMode::Default,
    )
    .await;
    let everything = s
        .pool
        .get("mcp__everything__get-structured-content")
        .unwrap();
    assert!(everything.output_schema().is_some());
    let r = s
        .call(
            "mcp__everything__get-structured-content",
            json!({"location": "Chicago"}),
        )
        .await;
    assert!(!r.is_error, "{r:?}");
    assert!(r.data["temperature"].is_number(), "{r:?}");

    let weather = s.pool.get("mcp__dyn__weather").unwrap();
    let schema = weather.output_schema().unwrap();
    assert_eq!(schema["properties"]["temperature"]["type"], "number");
    let r = s.call("mcp__dyn__weather", json!({"city": "Oslo"})).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(
        r.data,
        json!({"city": "Oslo", "temperature": 21.5, "conditions": "sunny"})
    );
    // A plain `str` result of the Python SDK is wrapped as {"result": …} by its schema.
    let r = s.call("mcp__dyn__greet", json!({"name": "you"})).await;
    assert_eq!(r.data, json!({"result": "hello you"}), "{r:?}");
    s.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_adapter_passes_output_schema_and_structured_content_on() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let log = tempfile::tempdir().unwrap();
    let s = Session::start(
        json!({"mcpServers": {"fake": fake_with_output_schemas(log.path())}}),
        &["mcp__fake"],
        PermissionMode::Default,
    )
    .await;
    let live = LivePool::following(Arc::clone(&s.manager), assembler());
    let declared = mcp_tool_list(&live.current()).await;
    let typed = declared
        .iter()
        .find(|t| t.name == "mcp__fake__typed")
        .unwrap();
    assert!(typed.output_schema.is_some());
    let ctx = s.ctx.clone();
    let factory: SessionFactory =
        Arc::new(move |_: &tools_mcp::Principal| Ok::<ToolContext, _>(ctx.clone()));
    let (url, shutdown, server) = serve_with(factory, live).await;
    // The Python SDK's client checks structuredContent against the outputSchema itself.
    let scenario = json!({
        "transport": {"http": url},
        "steps": [
            {"op": "list"},
            {"op": "call", "tool": "mcp__fake__typed"},
            {"op": "call", "tool": "mcp__fake__untyped"},
        ],
    });
    let lines = tokio::task::spawn_blocking(move || run_client(&peers, &scenario))
        .await
        .unwrap();
    let listed = lines[0]["tools"].as_array().unwrap();
    let schema_of = |name: &str| {
        listed
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["outputSchema"].clone())
            .unwrap()
    };
    assert_eq!(schema_of("mcp__fake__typed")["required"], json!(["n"]));
    assert!(schema_of("mcp__fake__untyped").is_null());
    // Tools without an output schema declare none.
    assert!(schema_of("ListMcpResourcesTool").is_null());
    assert_eq!(lines[1]["is_error"], false, "{lines:#?}");
    assert_eq!(
        lines[1]["structured"],
        json!({"n": 1, "items": ["a", "b"]}),
        "{lines:#?}"
    );
    assert_eq!(lines[2]["is_error"], false, "{lines:#?}");
    shutdown.cancel();
    let _ = server.await;
    s.manager.shutdown().await;
}

/// The `TCP_NODELAY` option of every TCP connection of this process to 127.0.0.1:`port`,
/// read through a duplicate of each socket (`pidfd_getfd` on this process).
fn nodelay_of_connections_to(port: u16) -> Vec<bool> {
    use rustix::process::{PidfdFlags, PidfdGetfdFlags, getpid, pidfd_getfd, pidfd_open};
    let me = pidfd_open(getpid(), PidfdFlags::empty()).unwrap();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let is_socket = std::fs::read_link(entry.path())
            .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"));
        let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        if !is_socket {
            continue;
        }
        let Ok(socket) = pidfd_getfd(&me, fd, PidfdGetfdFlags::empty()) else {
            continue;
        };
        let peer = rustix::net::getpeername(&socket)
            .ok()
            .flatten()
            .and_then(|a| std::net::SocketAddr::try_from(a).ok());
        if peer.is_some_and(|a| a.port() == port && a.ip().is_loopback()) {
            found.push(rustix::net::sockopt::tcp_nodelay(&socket).unwrap());
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_connections_to_a_server_do_not_wait_for_nagle() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let port = free_port();
    let mut child = python_http(&peers, port).await;
    let s = Session::start(
        json!({"mcpServers": {"remote": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}}}),
        &["mcp__remote"],
        PermissionMode::Default,
    )
    .await;
    let r = s.call("mcp__remote__greet", json!({"name": "x"})).await;
    assert!(!r.is_error, "{r:?}");
    // The kept-alive connections of the session (requests, the server's event stream).
    let nodelay = nodelay_of_connections_to(port);
    assert!(!nodelay.is_empty(), "no connection to port {port} found");
    assert!(nodelay.iter().all(|on| *on), "{nodelay:?}");
    s.manager.shutdown().await;
    let _ = child.kill().await;
}
