//! `tools/list_changed` reaching a pool that is already built: a real MCP server (the Python
//! SDK's MCPServer in `dynamic_server.py`) adds a tool at run time; the live pool offers it,
//! a changed definition stays refused, and the server adapter tells its own clients, each
//! one connected over HTTP, a later session too, and a client of protocol 2026-07-28 that
//! listens for changes.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use test_support::mcp::{check_told_of_new_tool, listen_for_a_new_tool, run_client};
use test_support::peers::peer;
use tool_core::{PermissionMode, Tool, ToolContext, ToolPool};
use tools_mcp::{LivePool, SessionFactory};

use crate::client::Session;
use crate::server::serve_with;

/// The `.mcp.json` entry of `dynamic_server.py` over stdio.
pub fn dynamic_server(peers: &Path) -> Value {
    let script = test_support::mcp::dynamic_server();
    json!({"command": "python3", "args": [script, "stdio"],
           "env": {"PYTHONPATH": peers.join("py")}})
}

/// The pool of the tests: the resource tools (built once, as a registry does), then the MCP
/// tools.
pub fn assembler() -> impl Fn(Vec<Arc<dyn Tool>>) -> ToolPool + Send + Sync + 'static {
    let base = tools_mcp::tools();
    move |mcp| {
        let mut tools = base.clone();
        tools.extend(mcp);
        ToolPool::new(tools)
    }
}

/// A session with `dynamic_server.py` as "dyn", its tools allowed.
async fn dynamic_session(peers: &Path) -> Session {
    Session::start(
        json!({"mcpServers": {"dyn": dynamic_server(peers)}}),
        &["mcp__dyn"],
        PermissionMode::Default,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_added_by_the_server_joins_the_live_pool_and_a_changed_one_stays_refused() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let s = dynamic_session(&peers).await;
    assert!(
        s.manager.statuses()[0].error.is_none(),
        "{:?}",
        s.manager.statuses()
    );
    let live = LivePool::following(Arc::clone(&s.manager), assembler());
    let mut changes = live.subscribe();
    let before = live.current();
    assert!(before.get("mcp__dyn__greet").is_some(), "{before:?}");
    assert!(before.get("mcp__dyn__fresh").is_none());

    let r = before
        .call("mcp__dyn__add_tool", json!({"name": "fresh"}), &s.ctx)
        .await;
    assert!(!r.is_error, "{r:?}");
    // The call's response may come before the new list; a host waits for it between calls.
    let after = live.settled().await;
    assert!(after.get("mcp__dyn__fresh").is_some(), "{after:?}");
    assert!(changes.has_changed().unwrap(), "subscribers are woken");
    changes.borrow_and_update();
    // The tools that were there are the same tools (same first definitions).
    assert!(Arc::ptr_eq(
        before.get("mcp__dyn__greet").unwrap(),
        after.get("mcp__dyn__greet").unwrap()
    ));
    let r = after.call("mcp__dyn__fresh", json!({}), &s.ctx).await;
    assert!(!r.is_error, "{r:?}");
    assert_eq!(r.text(), "fresh was added");

    // A changed definition is a rug pull: the pool keeps the first one, which refuses.
    let r = after
        .call("mcp__dyn__reword_greet", json!({}), &s.ctx)
        .await;
    assert!(!r.is_error, "{r:?}");
    let latest = live.settled().await;
    let greet = latest.get("mcp__dyn__greet").unwrap();
    assert_eq!(greet.description(None).await, "Greets someone");
    let r = latest
        .call("mcp__dyn__greet", json!({"name": "x"}), &s.ctx)
        .await;
    assert!(r.is_error, "{r:?}");
    assert!(r.text().contains("changed its definition"), "{}", r.text());
    assert!(
        !changes.has_changed().unwrap(),
        "a changed definition does not change the pool"
    );
    s.manager.shutdown().await;
}

/// Serves the pool that follows `s`'s servers over HTTP; each session gets a child of
/// `s`'s context (ending a session then ends only its own).
async fn serve_following(
    s: &Session,
) -> (
    String,
    tokio_util::sync::CancellationToken,
    tokio::task::JoinHandle<Result<(), tool_core::ToolError>>,
) {
    let live = LivePool::following(Arc::clone(&s.manager), assembler());
    let ctx = s.ctx.clone();
    let factory: SessionFactory =
        Arc::new(move |_: &tools_mcp::Principal| Ok::<ToolContext, _>(ctx.child()));
    serve_with(factory, live).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_adapter_tells_its_client_and_offers_the_new_tool() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let s = dynamic_session(&peers).await;
    let (url, shutdown, server) = serve_following(&s).await;
    let scenario = json!({
        "transport": {"http": url},
        "capabilities": true,
        "steps": [
            {"op": "call", "tool": "mcp__dyn__add_tool", "args": {"name": "fresh"}},
            {"op": "wait_list_changed"},
            {"op": "list"},
            {"op": "call", "tool": "mcp__dyn__fresh"},
        ],
    });
    let lines = tokio::task::spawn_blocking(move || run_client(&peers, &scenario))
        .await
        .unwrap();
    assert_eq!(
        lines[0]["capabilities"]["tools"]["listChanged"], true,
        "{lines:#?}"
    );
    assert_eq!(lines[1]["is_error"], false, "{lines:#?}");
    assert_eq!(lines[2]["list_changed"], 1, "{lines:#?}");
    let names: Vec<&str> = lines[3]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(names.contains(&"mcp__dyn__fresh"), "{names:?}");
    assert_eq!(lines[4]["is_error"], false, "{lines:#?}");
    assert_eq!(lines[4]["text"], "fresh was added", "{lines:#?}");
    shutdown.cancel();
    let _ = server.await;
    s.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_connected_http_client_is_told() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let s = dynamic_session(&peers).await;
    let live = LivePool::following(Arc::clone(&s.manager), assembler());
    // Each session its own context (an ended session cancels its context's token).
    let ctx = s.ctx.clone();
    let factory: SessionFactory =
        Arc::new(move |_: &tools_mcp::Principal| Ok::<ToolContext, _>(ctx.child()));
    let (url, shutdown, server) = serve_with(factory, live).await;
    let dir = tempfile::tempdir().unwrap();
    let ready = dir.path().join("ready");
    tokio::task::spawn_blocking(move || {
        // The upstream server may still be starting: wait until its tools are offered.
        let up = json!({"transport": {"http": url},
            "steps": [{"op": "wait_tool", "tool": "mcp__dyn__greet"}]});
        assert_eq!(run_client(&peers, &up)[0]["found"], true);
        // A client that only listens, connected while another one adds a tool.
        let listening = json!({
            "transport": {"http": url},
            "steps": [
                {"op": "touch", "path": ready},
                {"op": "wait_list_changed", "seconds": 60},
                {"op": "list"},
            ],
        });
        std::thread::scope(|scope| {
            let listener = scope.spawn(|| run_client(&peers, &listening));
            let mut waited = 0;
            while !ready.exists() && waited < 600 {
                std::thread::sleep(std::time::Duration::from_millis(50));
                waited += 1;
            }
            assert!(ready.exists(), "the listening client did not connect");
            let scenario = json!({
                "transport": {"http": url},
                "steps": [{"op": "call", "tool": "mcp__dyn__add_tool", "args": {"name": "fresh"}}],
            });
            let lines = run_client(&peers, &scenario);
            assert_eq!(lines[0]["is_error"], false, "{lines:#?}");
            let heard = listener.join().expect("the listening client");
            assert_eq!(heard[0]["list_changed"], 1, "{heard:#?}");
            let names = heard[1]["tools"].as_array().expect("tools");
            assert!(
                names.iter().any(|t| t["name"] == "mcp__dyn__fresh"),
                "{heard:#?}"
            );
        });
        // A later session sees the tool from the start; adding another one tells it too.
        let scenario = json!({
            "transport": {"http": url},
            "steps": [
                {"op": "call", "tool": "mcp__dyn__fresh"},
                {"op": "call", "tool": "mcp__dyn__add_tool", "args": {"name": "second"}},
                {"op": "wait_list_changed"},
                {"op": "call", "tool": "mcp__dyn__second"},
            ],
        });
        let lines = run_client(&peers, &scenario);
        assert_eq!(lines[0]["is_error"], false, "{lines:#?}");
        assert_eq!(lines[2]["list_changed"], 1, "{lines:#?}");
        assert_eq!(lines[3]["text"], "second was added", "{lines:#?}");
    })
    .await
    .unwrap();
    shutdown.cancel();
    let _ = server.await;
    s.manager.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_listening_on_2026_07_28_is_told() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let s = dynamic_session(&peers).await;
    let (url, shutdown, server) = serve_following(&s).await;
    // The SDK's high-level client on protocol 2026-07-28: no session, a listen stream.
    let scenario = json!({
        "transport": {"http": url},
        "mode": "auto",
        "steps": listen_for_a_new_tool(),
    });
    let lines = tokio::task::spawn_blocking(move || run_client(&peers, &scenario))
        .await
        .unwrap();
    check_told_of_new_tool(&lines);
    shutdown.cancel();
    let _ = server.await;
    s.manager.shutdown().await;
}
