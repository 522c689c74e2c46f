//! Without the `mcp` feature no MCP server of `.mcp.json` starts: the same interface as
//! the `mcp_startup` module of an `mcp` build, over a manager and a reporter that cannot
//! exist, so the commands run unchanged and never reach them.

use std::sync::Arc;
use std::time::Duration;

use tool_core::{ToolContext, ToolPool};

/// No MCP servers: this type has no value.
#[derive(Debug)]
pub enum McpManager {}

impl McpManager {
    /// Never called: there is no manager to stop.
    pub async fn shutdown(&self) {
        match *self {}
    }
}

/// No MCP servers, so nothing to report: this type has no value.
#[derive(Debug)]
pub enum Reporter {}

impl Reporter {
    /// Never called: there is no reporter.
    pub fn finish(&self) {
        match *self {}
    }
}

/// Starts nothing: a build without `mcp` has no MCP servers.
pub fn start(_ctx: &ToolContext) -> Option<(Arc<McpManager>, Arc<Reporter>)> {
    None
}

/// Never called: there is no manager to wait for.
pub async fn wait(manager: &McpManager, _reporter: &Reporter, _wait: Duration, _later: &str) {
    match *manager {}
}

/// Never called: there is no manager to wait for.
pub async fn wait_for_tools<'a>(
    manager: &McpManager,
    _pool: &ToolPool,
    _tools: impl IntoIterator<Item = &'a str>,
) -> bool {
    match *manager {}
}

/// Never called: there is no manager to ask.
pub fn unavailable(manager: &McpManager, _tool: &str, _waited: Duration) -> Option<String> {
    match *manager {}
}
