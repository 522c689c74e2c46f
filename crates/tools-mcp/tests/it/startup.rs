//! Servers start in the background and never hold up a session: a server that never
//! answers stays "starting" while the others' tools join, an entry with a problem (an unset
//! variable, a transport agent-tools does not speak) is skipped and named, the resource tools say which
//! server failed and why, and shutting down stops a server still starting.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{PermissionMode, Tool, ToolContext, ToolPool};
use tools_mcp::{LivePool, McpManager, start_project_servers};

use crate::client::{approve_mcp_json, eventually, fake_server};
use crate::live::assembler;

/// A stdio server that writes its pid to `pid_file` and then never answers.
pub fn hung_server(pid_file: &Path) -> Value {
    let script = "import os, sys, time\n\
                  p = sys.argv[1]\n\
                  open(p + '.tmp', 'w').write(str(os.getpid()))\n\
                  os.rename(p + '.tmp', p)\n\
                  time.sleep(3600)\n";
    json!({"command": "python3", "args": ["-c", script, pid_file], "startupTimeoutMs": 600_000})
}

/// Whether process `pid` runs (a zombie counts as gone).
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.contains(") Z "))
        .unwrap_or(false)
}

/// The pid in `pid_file`, once it is there.
async fn pid_in(pid_file: &Path) -> u32 {
    assert!(eventually(|| pid_file.exists()).await, "no {pid_file:?}");
    std::fs::read_to_string(pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// A session whose `.mcp.json` is `mcp_json`, started without waiting for its servers.
struct Started {
    _dir: tempfile::TempDir,
    ctx: ToolContext,
    manager: Arc<McpManager>,
}

fn start(mcp_json: &Value) -> Started {
    let (dir, root) = test_support::tempdir();
    std::fs::write(root.join(".mcp.json"), mcp_json.to_string()).unwrap();
    approve_mcp_json(&root, &root.join("state"));
    let ctx = ToolContext::builder(&root)
        .state_dir(root.join("state"))
        .mode(PermissionMode::BypassPermissions)
        .build();
    let manager = start_project_servers(&ctx).unwrap().unwrap();
    Started {
        _dir: dir,
        ctx,
        manager,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_server_holds_up_nothing_and_a_bad_entry_skips_only_itself() {
    let log = tempfile::tempdir().unwrap();
    let pid_file = log.path().join("hung.pid");
    let s = start(&json!({"mcpServers": {
        "fake": fake_server(log.path(), json!([]), 10_000),
        "hung": hung_server(&pid_file),
        "needs_key": {"command": "x", "env": {"KEY": "${AGENT_TOOLS_TEST_UNSET_KEY}"}},
        "legacy": {"type": "ws", "url": "ws://127.0.0.1:9/mcp"}}}));
    // Returned at once: the configuration's problems are known, the servers are starting.
    let statuses = s.manager.statuses();
    let names: Vec<&str> = statuses.iter().map(|st| st.name.as_str()).collect();
    assert_eq!(names, ["fake", "hung", "legacy", "needs_key"]);
    let error = |name: &str| {
        s.manager
            .statuses()
            .into_iter()
            .find(|st| st.name == name)
            .and_then(|st| st.error)
            .unwrap_or_default()
    };
    assert!(
        error("needs_key").contains(
            "MCP server \"needs_key\" was not started: mcpServers.needs_key: environment variable AGENT_TOOLS_TEST_UNSET_KEY is not set"
        ),
        "{}",
        error("needs_key")
    );
    assert!(
        error("legacy").contains("transport type \"ws\" is not supported"),
        "{}",
        error("legacy")
    );
    let hung = statuses.iter().find(|st| st.name == "hung").unwrap();
    assert!(
        hung.starting && !hung.connected && hung.error.is_none(),
        "{hung:?}"
    );

    // The healthy server's tools join the live pool while the hung one is still starting.
    let live = LivePool::following(Arc::clone(&s.manager), assembler());
    assert!(eventually(|| live.current().get("mcp__fake__echo").is_some()).await);
    let pid = pid_in(&pid_file).await;
    assert!(alive(pid));
    assert_eq!(s.manager.starting(), ["hung"]);
    assert_eq!(
        s.manager
            .wait_started(Some(Duration::from_millis(50)))
            .await,
        ["hung"]
    );
    let pool = live.settled().await;
    let r = pool.call("mcp__fake__echo", json!({"a": 1}), &s.ctx).await;
    assert!(!r.is_error, "{r:?}");
    assert!(pool.names().iter().all(|n| !n.starts_with("mcp__hung")));

    // Listing every server's resources does not wait for the hung one, and names the others.
    let r = pool.call("ListMcpResourcesTool", json!({}), &s.ctx).await;
    assert!(!r.is_error, "{r:?}");
    let text = r.text();
    for needle in [
        "No resources found",
        "MCP server \"hung\" is still starting",
        "MCP server \"needs_key\" was not started",
        "MCP server \"legacy\" was not started",
    ] {
        assert!(text.contains(needle), "{needle}: {text}");
    }
    assert!(alive(pid), "still starting, not given up on");
    // Naming a skipped server says why it was not started.
    for (tool, input) in [
        ("ListMcpResourcesTool", json!({"server": "needs_key"})),
        (
            "ReadMcpResourceTool",
            json!({"server": "needs_key", "uri": "x://y"}),
        ),
    ] {
        let r = pool.call(tool, input, &s.ctx).await;
        assert!(r.is_error, "{r:?}");
        assert!(
            r.text().contains("AGENT_TOOLS_TEST_UNSET_KEY is not set"),
            "{}",
            r.text()
        );
    }

    // Shutting down stops the server still starting, and nothing restarts it.
    s.manager.shutdown().await;
    assert!(
        eventually(|| !alive(pid)).await,
        "pid {pid} outlived shutdown"
    );
    assert!(s.manager.wait_started(None).await.is_empty());
    let hung = s
        .manager
        .statuses()
        .into_iter()
        .find(|st| st.name == "hung")
        .unwrap();
    assert!(
        hung.error
            .as_deref()
            .is_some_and(|e| e.contains("the session ended while it was starting")),
        "{hung:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resource_tools_name_a_failed_server_and_why() {
    let log = tempfile::tempdir().unwrap();
    let s = start(&json!({"mcpServers": {
        "broken": {"command": "/nonexistent/mcp-server"},
        "fake": fake_server(log.path(), json!([]), 10_000)}}));
    assert!(s.manager.wait_started(None).await.is_empty());
    let pool = ToolPool::new(
        tools_mcp::tools()
            .into_iter()
            .chain(s.manager.tools())
            .collect::<Vec<Arc<dyn Tool>>>(),
    );
    let why = "MCP server \"broken\" failed to connect: cannot start `/nonexistent/mcp-server`";
    let check = |tool: &'static str, input: Value, is_error: bool, needles: &'static [&str]| {
        let pool = pool.clone();
        let ctx = s.ctx.clone();
        async move {
            let r = pool.call(tool, input.clone(), &ctx).await;
            assert_eq!(r.is_error, is_error, "{tool} {input}: {r:?}");
            let text = r.text();
            for needle in needles {
                assert!(text.contains(needle), "{tool} {input}: {needle} in {text}");
            }
            text
        }
    };
    let text = check(
        "ListMcpResourcesTool",
        json!({"server": "broken"}),
        true,
        &["cannot start `/nonexistent/mcp-server`"],
    )
    .await;
    assert!(text.contains(why), "{text}");
    assert!(!text.contains("No resources found"), "{text}");
    let text = check(
        "ListMcpResourcesTool",
        json!({}),
        false,
        &["No resources found"],
    )
    .await;
    assert!(text.contains(why), "{text}");
    let text = check(
        "ReadMcpResourceTool",
        json!({"server": "broken", "uri": "x://y"}),
        true,
        &["Server \"broken\" is not connected"],
    )
    .await;
    assert!(text.contains(why), "{text}");
    // The healthy server has no resources: that is no error.
    check(
        "ListMcpResourcesTool",
        json!({"server": "fake"}),
        false,
        &["No resources found"],
    )
    .await;
    s.manager.shutdown().await;
}
