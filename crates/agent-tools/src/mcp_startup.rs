//! How a command starts the MCP servers of `.mcp.json`: in the background, so none holds
//! the command up. `serve` answers its client at once and lets each server's tools join when
//! it is ready; `call`, `list`, `schema` and `batch` wait for the servers at most
//! `--mcp-wait` seconds and say which are still starting. A call of a tool of a server still
//! starting waits for that server only (up to its start-up timeout), since the call cannot
//! run before. Every problem (an entry that could not start, a server that failed, a
//! rejected tool) is printed once on stderr, naming the server, when it happens.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use registry::mcp::McpManager;
use tool_core::{ToolContext, ToolPool};

/// Prints each server's problems on stderr once.
#[derive(Debug)]
pub struct Reporter {
    manager: Arc<McpManager>,
    printed: Mutex<HashSet<String>>,
    /// Set when the command ends: stopping the servers is no news
    finished: AtomicBool,
}

impl Reporter {
    /// Prints what is new: the errors of servers whose start ended (or that were not
    /// started), and their warnings.
    pub fn print_new(&self) {
        if self.finished.load(Ordering::SeqCst) {
            return;
        }
        // Listing the tools is what finds rejected names and collisions.
        let _ = self.manager.tools();
        let Ok(mut printed) = self.printed.lock() else {
            return;
        };
        for status in self.manager.statuses() {
            if status.starting {
                continue;
            }
            let lines = status.error.into_iter().chain(
                status
                    .warnings
                    .iter()
                    .map(|w| format!("MCP server \"{}\": {w}", status.name)),
            );
            for line in lines {
                if printed.insert(line.clone()) {
                    eprintln!("agent-tools: {line}");
                }
            }
        }
    }

    /// Prints what is new for the last time: the command is ending, and the servers it
    /// stops next are not reported as failures.
    pub fn finish(&self) {
        self.print_new();
        self.finished.store(true, Ordering::SeqCst);
    }
}

/// Starts the approved servers of the session's `.mcp.json` in the background and a task
/// that reports their problems as they happen. Returns the manager and the reporter, or
/// nothing when no server is configured.
pub fn start(ctx: &ToolContext) -> Option<(Arc<McpManager>, Arc<Reporter>)> {
    let manager = match registry::start_mcp_servers(ctx) {
        Ok(manager) => manager?,
        Err(e) => {
            eprintln!("agent-tools: MCP servers not started: {e}");
            return None;
        }
    };
    let reporter = Arc::new(Reporter {
        manager: Arc::clone(&manager),
        printed: Mutex::new(HashSet::new()),
        finished: AtomicBool::new(false),
    });
    reporter.print_new();
    let follower = Arc::clone(&reporter);
    let mut started = manager.subscribe_started();
    let mut tools = manager.subscribe();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                changed = started.changed() => if changed.is_err() { break },
                changed = tools.changed() => if changed.is_err() { break },
            }
            follower.print_new();
        }
    });
    Some((manager, reporter))
}

/// Waits up to `wait` for the servers to start, prints what went wrong, and names those
/// still starting; `later` says what becomes of their tools.
pub async fn wait(manager: &McpManager, reporter: &Reporter, wait: Duration, later: &str) {
    let starting = manager.wait_started(Some(wait)).await;
    reporter.print_new();
    for name in starting {
        eprintln!(
            "agent-tools: MCP server \"{name}\" is still starting after {}s; {later}",
            wait.as_secs_f64()
        );
    }
}

/// Waits for each server still starting that owns one of `tools` missing from `pool`,
/// saying so on stderr. Returns whether it waited (the pool should then be taken again).
pub async fn wait_for_tools<'a>(
    manager: &McpManager,
    pool: &ToolPool,
    tools: impl IntoIterator<Item = &'a str>,
) -> bool {
    let mut servers: Vec<String> = Vec::new();
    for tool in tools {
        if pool.get(tool).is_some() {
            continue;
        }
        if let Some(status) = manager.status_of_tool(tool)
            && status.starting
            && !servers.contains(&status.name)
        {
            servers.push(status.name);
        }
    }
    for name in &servers {
        eprintln!("agent-tools: waiting for the MCP server \"{name}\" to start: a call needs it");
        manager.wait_for_server(name).await;
    }
    !servers.is_empty()
}

/// Why `tool`, which is not in the pool, is unavailable when it names a tool of a
/// configured MCP server that is still starting or failed; `None` otherwise.
pub fn unavailable(manager: &McpManager, tool: &str, waited: Duration) -> Option<String> {
    let status = manager.status_of_tool(tool)?;
    if status.starting {
        return Some(format!(
            "{tool} is not available yet: the MCP server \"{}\" is still starting (agent-tools waited {}s; give --mcp-wait SECONDS to wait longer)",
            status.name,
            waited.as_secs_f64()
        ));
    }
    status
        .error
        .map(|error| format!("{tool} is not available: {error}"))
}
