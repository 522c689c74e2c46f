//! Which servers of a project's `.mcp.json` start: only those a person approved (the file's
//! exact content, recorded in the state directory) or the session's settings enable. Each
//! case asserts on the servers' own start logs, not only on the manager's view.

use std::sync::Arc;

use serde_json::{Value, json};
use tool_core::{RuleSourceKind, SettingsLayer, ToolContext};
use tools_mcp::start_project_servers;

use crate::client::approve_mcp_json;

/// How the case prepares approval before the session starts.
#[derive(Debug, Clone, Copy)]
enum Approve {
    Nothing,
    File,
    FileThenChanged,
}

/// Starts the servers of a `.mcp.json` holding `a`, `b` (whose entry names an unset
/// variable) and `c`, after `approve` and with `settings` as the session's user settings;
/// checks which started, by the manager and by each server's start log.
async fn check(approve: Approve, settings: Option<Value>, expected: &[&str]) {
    let (_dir, root) = test_support::tempdir();
    let script = test_support::mcp::fake_server();
    let mut servers = serde_json::Map::new();
    for name in ["a", "b", "c"] {
        let log = root.join(format!("log-{name}"));
        std::fs::create_dir(&log).unwrap();
        let mut entry = json!({"command": "python3", "args": [script, log]});
        if name == "b" {
            entry["env"] = json!({"X": "${AGENT_TOOLS_TEST_UNSET_VARIABLE}"});
        }
        servers.insert(name.to_owned(), entry);
    }
    let text = json!({"mcpServers": servers}).to_string();
    std::fs::write(root.join(".mcp.json"), &text).unwrap();
    let state = root.join("state");
    match approve {
        Approve::Nothing => {}
        Approve::File => approve_mcp_json(&root, &state),
        Approve::FileThenChanged => {
            approve_mcp_json(&root, &state);
            std::fs::write(root.join(".mcp.json"), format!("{text}\n")).unwrap();
        }
    }
    let mut builder = ToolContext::builder(&root).state_dir(&state);
    if let Some(settings) = &settings {
        let layer = SettingsLayer::parse(
            RuleSourceKind::UserSettings,
            &state.join("settings.json"),
            &settings.to_string(),
        )
        .unwrap();
        builder = builder.service(Arc::new(vec![layer]));
    }
    let ctx = builder.build();
    let label = format!("{approve:?} with {settings:?}");
    let manager = match start_project_servers(&ctx) {
        Ok(manager) => manager,
        Err(e) => panic!("{label}: {e}"),
    };
    if let Some(m) = &manager {
        assert!(m.wait_started(None).await.is_empty(), "{label}");
    }
    let names: Vec<String> = manager
        .as_ref()
        .map(|m| m.statuses().into_iter().map(|s| s.name).collect())
        .unwrap_or_default();
    assert_eq!(names, expected, "{label}");
    if let Some(m) = &manager {
        assert!(
            m.statuses().iter().all(|s| s.error.is_none()),
            "{label}: {:?}",
            m.statuses()
        );
        m.shutdown().await;
    }
    for name in ["a", "b", "c"] {
        let ran = root.join(format!("log-{name}/starts")).exists();
        assert_eq!(ran, expected.contains(&name), "{label}: server {name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_approved_or_enabled_servers_start() {
    check(Approve::Nothing, None, &[]).await;
    check(Approve::FileThenChanged, None, &[]).await;
    check(
        Approve::Nothing,
        Some(json!({"enabledMcpjsonServers": ["a", "c"]})),
        &["a", "c"],
    )
    .await;
    check(
        Approve::Nothing,
        Some(json!({"enableAllProjectMcpServers": false, "enabledMcpjsonServers": ["zzz"]})),
        &[],
    )
    .await;
    check(
        Approve::File,
        Some(json!({"disabledMcpjsonServers": ["b"]})),
        &["a", "c"],
    )
    .await;
    check(
        Approve::FileThenChanged,
        Some(json!({"enableAllProjectMcpServers": true, "disabledMcpjsonServers": ["b"]})),
        &["a", "c"],
    )
    .await;
}
