//! Language-server tools for agent-tools: the `LSP` tool and [`LanguageServers`], the
//! manager that starts, talks to and stops language servers (tool-core's `LspManager`).
//!
//! - [`LanguageServers`] runs one server per (server, workspace root), from an
//!   [`LspConfig`] built from the settings' `lsp` section and the default servers.
//!   It speaks JSON-RPC over the server's stdio with a small client of its own, answers the
//!   server's requests, keeps documents in sync with versions, caches diagnostics, restarts a
//!   crashed server on the next call, and stops every server (`shutdown`, `exit`, process
//!   group killed) when dropped. Hosts install it with `ToolContextBuilder::lsp`.
//! - [`Lsp`] is the tool: goToDefinition, findReferences, hover, documentSymbol,
//!   workspaceSymbol, goToImplementation, prepareCallHierarchy, incomingCalls and
//!   outgoingCalls at a 1-based position, plus `diagnostics` of a file or of every open
//!   file; results are readable text with paths relative to the working directory, and
//!   locations in gitignored files are left out.
//! - Edit and Write report the diagnostics their change introduced through
//!   `LspManager::did_change_diagnostics`, only when a server for the file already runs:
//!   in the edited file and in the other files that refer to what the change touched (the
//!   server's outline and references, at most [`MAX_AFFECTED_FILES`]), compared with how
//!   those stood before the change. Finding them takes at most [`IMPACT_WAIT`], the
//!   server's verdict at most [`CHANGE_DIAGNOSTICS_WAIT`].
//! - Before each use, a server hears which files in its workspace were created, changed or
//!   deleted on disk since the last one (a bounded scan, `workspace/didChangeWatchedFiles`,
//!   new files opened), so pyright's `workspaceSymbol` finds symbols in files it never had
//!   open, also ones a shell command created after it started.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use tool_core::{LspManager, ToolContext};
//! use tools_lsp::{LanguageServers, LspConfig, LanguageServerConfig};
//!
//! let config = LspConfig::empty().with_server("py,pyi", LanguageServerConfig::new("pyright-langserver", &["--stdio"]));
//! let servers = LanguageServers::new(config, std::env::temp_dir());
//! assert!(servers.has_server_for(std::path::Path::new("/project/main.py")));
//! assert!(!servers.has_server_for(std::path::Path::new("/project/main.rb")));
//! let ctx = ToolContext::builder(std::env::temp_dir()).lsp(Arc::new(servers)).build();
//! # drop(ctx);
//! ```

mod config;
mod format;
mod impact;
mod manager;
mod position;
mod server;
mod tool;
mod transport;
mod watch;

use std::sync::Arc;

pub use config::{
    DEFAULT_REQUEST_TIMEOUT, LanguageServerCheck, LanguageServerConfig, LspConfig, language_servers,
};
pub use manager::{
    CHANGE_DIAGNOSTICS_WAIT, DIAGNOSTICS_WAIT, IMPACT_WAIT, LanguageServers, MAX_AFFECTED_FILES,
    ServerStatus,
};
pub use sandbox::SandboxSettings;
pub use tool::{Lsp, LspInput, LspOperation, LspOutput, MAX_LSP_FILE_BYTES};

/// Wires a language-server manager into a session being built: servers from `config`
/// (`LspConfig::defaults()` for the usual servers, `LspConfig::from_settings` for the
/// settings' `lsp` sections over them),
/// rooted at `root`. The servers start on first use and stop when the session ends.
pub fn install(
    builder: tool_core::ToolContextBuilder,
    config: LspConfig,
    root: std::path::PathBuf,
) -> tool_core::ToolContextBuilder {
    install_sandboxed(builder, config, root, sandbox::SandboxSettings::default())
}

/// [`install`], with the servers in the session's sandbox (`settings`, the `sandbox`
/// section; the builder's working directories): see [`LanguageServers::with_sandbox`].
/// Call it after `additional_dirs` and `state_dir`.
pub fn install_sandboxed(
    builder: tool_core::ToolContextBuilder,
    config: LspConfig,
    root: std::path::PathBuf,
    mut settings: sandbox::SandboxSettings,
) -> tool_core::ToolContextBuilder {
    let dirs = builder.working_dirs();
    settings.state_dir = Some(builder.state_dir_path());
    let servers = LanguageServers::new(config, root).with_sandbox(settings, dirs);
    builder.lsp(Arc::new(servers))
}

/// Every tool of this crate, ready for a pool: the `LSP` tool.
pub fn tools() -> Vec<Arc<dyn tool_core::Tool>> {
    vec![Arc::new(tool_core::Typed::new(Lsp))]
}
