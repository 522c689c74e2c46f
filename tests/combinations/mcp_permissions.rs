//! MCP tools × permissions: the fake MCP server (test-support's `fake_server.py`) behind a
//! `tee` that logs every request it receives, so each test checks on the server's side
//! which tools were called: a tool a deny rule names is not in the pool and is never
//! called, nor is one that needs approval in a headless session or one plan mode refuses;
//! one an allow rule names is called, and so is a read-only one.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tool_core::PermissionMode;

use crate::{Session, Setup, ok};

/// The tools of the fake server: `echo` (read-only) and, from `FAKE_TOOLS`, `store`,
/// `wipe` and `other` with no annotations.
const EXTRA: &str = r#"[{"name": "store"}, {"name": "wipe"}, {"name": "other"}]"#;

/// A session whose project's approved `.mcp.json` starts the fake server `fake` behind a
/// request log; the session and the log.
async fn session(setup: Setup<'_>) -> (Session, PathBuf) {
    let s = Session::new(setup);
    let log = s.root.parent().unwrap().join("mcp-log");
    std::fs::create_dir_all(&log).unwrap();
    let script = test_support::mcp::fake_server();
    let shell = format!(
        "tee -a '{}' | exec python3 '{}' '{}'",
        log.join("requests").display(),
        script.display(),
        log.display()
    );
    let config = json!({"mcpServers": {"fake": {"command": "sh", "args": ["-c", shell],
        "env": {"FAKE_TOOLS": EXTRA}}}});
    std::fs::write(s.root.join(".mcp.json"), config.to_string()).unwrap();
    // A person approved this `.mcp.json` (as `agent-tools trust` records it).
    tool_core::TrustStore::in_state_dir(&s.state)
        .approve(
            &s.root,
            tool_core::MCP_JSON,
            &tool_core::sha256_hex(config.to_string().as_bytes()),
        )
        .unwrap();
    (s.with_mcp().await, log.join("requests"))
}

/// The names of the tools the server was asked to call, in order.
fn called(requests: &Path) -> Vec<String> {
    std::fs::read_to_string(requests)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|m| m["method"] == "tools/call")
        .filter_map(|m| m["params"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rules_decide_which_mcp_tools_the_server_sees_called() {
    let (s, requests) = session(Setup {
        allow: &["mcp__fake__store"],
        deny: &["mcp__fake__wipe"],
        ..Setup::default()
    })
    .await;
    let names = s.pool.names();
    assert!(names.contains(&"mcp__fake__store"), "{names:?}");
    assert!(!names.contains(&"mcp__fake__wipe"), "{names:?}");
    let r = ok(s.call("mcp__fake__store", json!({"k": 1})).await, "store");
    assert!(r.text().contains("store"), "{r:#?}");
    // Denied: not even offered, so the call names an unknown tool.
    assert!(s.call("mcp__fake__wipe", json!({})).await.is_error);
    // No rule and no one to ask (MCP tools need approval, read-only or not): refused
    // before the server hears of it.
    assert!(s.call("mcp__fake__echo", json!({})).await.is_error);
    assert!(s.call("mcp__fake__other", json!({})).await.is_error);
    assert_eq!(called(&requests), ["store"]);
    // A person approves: called; the denied one is still out of reach.
    let approver = s.answer(true);
    ok(s.call("mcp__fake__other", json!({})).await, "other");
    assert!(s.call("mcp__fake__wipe", json!({})).await.is_error);
    assert_eq!(approver.asked.lock().unwrap().len(), 1);
    assert_eq!(called(&requests), ["store", "other"]);
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_wide_deny_holds_in_bypass_mode() {
    let (s, requests) = session(Setup {
        mode: Some(PermissionMode::BypassPermissions),
        deny: &["mcp__fake"],
        ..Setup::default()
    })
    .await;
    let names = s.pool.names();
    assert!(
        !names.iter().any(|n| n.starts_with("mcp__fake__")),
        "{names:?}"
    );
    for tool in ["echo", "store", "wipe", "other"] {
        assert!(
            s.call(&format!("mcp__fake__{tool}"), json!({}))
                .await
                .is_error
        );
    }
    assert!(called(&requests).is_empty(), "{:?}", called(&requests));
    s.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plan_mode_lets_only_read_only_mcp_tools_through() {
    // Every tool of the server allowed by a rule; plan mode still refuses all but echo.
    let (s, requests) = session(Setup {
        allow: &["mcp__fake"],
        ..Setup::default()
    })
    .await;
    ok(s.call("EnterPlanMode", json!({})).await, "plan");
    ok(s.call("mcp__fake__echo", json!({})).await, "echo");
    for tool in ["store", "wipe", "other"] {
        assert!(
            s.call(&format!("mcp__fake__{tool}"), json!({}))
                .await
                .is_error
        );
    }
    assert_eq!(called(&requests), ["echo"]);
    // Out of plan mode, the allow rule lets them through.
    s.ctx.set_permission_mode(PermissionMode::Default);
    ok(s.call("mcp__fake__store", json!({})).await, "store");
    assert_eq!(called(&requests), ["echo", "store"]);
    s.shutdown().await;
}
