//! What a host needs to report on a machine and a session (`agent-tools doctor`): the
//! category crates' own probes, passed through so that a host need not know those crates.

use std::sync::Arc;

use serde_json::Value;
use tool_core::{McpApproval, SettingsLayer, ToolContext, ToolError, TrustStore};

#[cfg(feature = "lsp")]
pub use tools_lsp::LanguageServerCheck;
#[cfg(feature = "shell")]
pub use tools_shell::{SandboxProbe, SandboxTrial, probe_sandbox, try_sandbox};

/// The settings layers a session applies (project files narrowed unless approved).
fn layers(ctx: &ToolContext) -> Arc<Vec<SettingsLayer>> {
    ctx.services()
        .get::<Arc<Vec<SettingsLayer>>>()
        .unwrap_or_default()
}

/// The language servers of the session: the defaults, found on `PATH` or not, and the
/// settings' `lsp` entries.
#[cfg(feature = "lsp")]
pub fn language_servers(ctx: &ToolContext) -> Result<Vec<LanguageServerCheck>, ToolError> {
    tools_lsp::language_servers(&layers(ctx))
}

/// One server of the project's `.mcp.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpEntry {
    /// Its name under `mcpServers`
    pub name: String,
    /// Whether a session may start it (the file approved, or the trusted settings enable it)
    pub approved: bool,
    /// Whether the settings turn it off (`disabledMcpjsonServers`)
    pub disabled: bool,
}

/// The servers of the session's `.mcp.json`, sorted by name, with whether each may start;
/// `None` without a `.mcp.json`. A file that is not valid JSON is an error naming it.
pub fn project_mcp_servers(ctx: &ToolContext) -> Result<Option<Vec<McpEntry>>, ToolError> {
    let root = ctx.original_cwd();
    let path = root.join(tool_core::MCP_JSON);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(ToolError::io(&path, e)),
    };
    let bad = |message: String| ToolError::Settings {
        path: path.clone(),
        message,
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| bad(format!("not UTF-8 text: {e}")))?;
    let value: Value =
        serde_json::from_str(text).map_err(|e| bad(format!("not valid JSON: {e}")))?;
    let approval = McpApproval::new(
        root,
        &bytes,
        &TrustStore::in_state_dir(ctx.state_dir()),
        &layers(ctx),
    )?;
    let mut entries: Vec<McpEntry> = value
        .get("mcpServers")
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|servers| servers.keys())
        .map(|name| McpEntry {
            name: name.clone(),
            approved: approval.allows(name),
            disabled: approval.is_disabled(name),
        })
        .collect();
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Some(entries))
}
