//! MCP for agent-tools: the server adapter behind `agent-tools serve`, the client manager
//! that turns MCP servers' tools into pool tools, and the resource tools.
//!
//! # Overview
//!
//! - [`serve_stdio`] and [`serve_http`] expose any [`tool_core::ToolPool`] as an MCP server:
//!   `tools/list` carries every tool's schema and annotations, `tools/call` goes through the
//!   pool's one execution path with one [`tool_core::ToolContext`] per MCP session, progress
//!   becomes `notifications/progress`, and the client's cancellation cancels the call. When
//!   the client offers elicitation, permission questions are asked through it
//!   ([`ElicitationPrompter`]); when it offers sampling, WebFetch's summariser uses it
//!   ([`SamplingSummariser`]).
//!
//! - [`McpManager`] connects the servers of `.mcp.json` that a person approved
//!   ([`load_project_config`]: `agent-tools trust`, or `enabledMcpjsonServers` /
//!   `enableAllProjectMcpServers` in the user settings) and turns
//!   each server tool into a pool tool named `mcp__<server>__<tool>` ([`qualified_name`]);
//!   [`start_project_servers`] does both for a session and stores the manager in the
//!   context's services, where [`ListMcpResourcesTool`] and [`ReadMcpResourceTool`] (from
//!   [`tools`]) find it. Servers start in the background: no server holds up the host, and
//!   each one's tools join when it is ready. The client offers the session's working
//!   directories as MCP roots, keeps a tool's `outputSchema` and checks its
//!   `structuredContent` against it.
//!
//! - [`LivePool`] keeps a session's pool current with its MCP servers: when a server sends
//!   `tools/list_changed`, the manager lists its tools again and announces the change
//!   ([`McpManager::subscribe`]); the live pool rebuilds itself with the host's assembly
//!   rule, and the MCP server adapter tells its own clients. A tool whose definition changed
//!   after it was offered keeps its first definition and refuses calls; new tools join.
//!
//! # `.mcp.json`
//!
//! `{"mcpServers": {NAME: SERVER}}` in the project root, where SERVER is
//! `{"command", "args", "env", "cwd"}` for a stdio server or `{"type": "http", "url",
//! "headers", "bearerTokenEnvVar", "caCertFile", "oauth"}` for a streamable-HTTP one
//! (`"type": "sse"` for the legacy HTTP+SSE transport), plus `startupTimeoutMs` and
//! `toolTimeoutMs` for any. Strings expand `${VAR}` and `${VAR:-default}`. An entry with a
//! problem (an unset variable, an unknown `type`) is skipped with its reason
//! ([`McpConfig::skipped`]) and the other servers start.
//!
//! # Hosted servers
//!
//! An HTTP server that requires OAuth is logged in to once ([`login`], the binary's `mcp
//! login`): discovery from its 401, a client identity ([`OAuthConfig`]: registered in
//! advance, a client ID metadata document, or dynamic registration), the authorization code
//! flow with PKCE through the person's browser ([`open_browser`], [`LoginPrompt`]), tokens
//! stored per server URL under the state directory ([`TOKEN_DIR`], never in the project).
//! Sessions refresh them by themselves; when no token can be had, a call's error says
//! `run: agent-tools mcp login NAME`. [`logout`] forgets and revokes them; [`auth_status`]
//! says how a server authenticates. A machine client (`"grant": "client_credentials"` or
//! `"enterprise"`) gets its own tokens in each session.
//!
//! A server's questions (`elicitation/create`) go to the person behind the call that is
//! running: the session's `QuestionPrompter`, or under the server adapter the MCP client
//! ([`ClientRelay`]), which also gets `sampling/createMessage` ([`ClientOffers`]). An `https` server must have a certificate the system trusts, or one
//! signed by the CA whose PEM file `caCertFile` names (trusted for that server only); a
//! certificate that is not trusted is a connection error naming the server, the TLS problem
//! and `caCertFile`. See [`parse_config`].
//!
//! The file lives in the project, where anyone may have written it, so a server starts only
//! once a person approved the file's content (`agent-tools trust`) or the user settings
//! enable it (`enabledMcpjsonServers: [names]`, `enableAllProjectMcpServers: true`); see
//! [`load_project_config`].
//!
//! # Example
//!
//! ```
//! use tools_mcp::{mcp_tool_list, parse_listen_addr};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let pool = tool_core::ToolPool::new(Vec::new());
//! assert!(mcp_tool_list(&pool).await.is_empty());
//! // `--http 8080` listens on loopback only.
//! assert_eq!(parse_listen_addr("8080").ok().map(|a| a.to_string()), Some("127.0.0.1:8080".into()));
//! # }
//! ```

mod capped;
mod config;
mod conns;
mod contexts;
mod failure;
mod http;
mod legacy_sse;
mod live;
mod login;
mod manager;
mod mrtr;
mod naming;
mod oauth;
mod oauth_store;
mod principal;
mod prompts;
mod questions;
mod random;
mod reaper;
mod relay;
mod resources;
mod server;
mod server_conn;
mod structured;
mod tool;

use std::sync::Arc;

use tool_core::{Tool, ToolContext, ToolError, Typed};

pub use capped::MAX_MESSAGE_DEPTH;
pub use config::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_STARTUP_TIMEOUT, EnterpriseConfig,
    Grant, HttpKind, McpConfig, OAuthConfig, Secret, ServerConfig, SkippedServer, Transport,
    expand, load_project_config, parse_config,
};
pub use conns::{DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS};
pub use contexts::{CONTEXT_META_KEY, DEFAULT_IDLE, MAX_MINTED, SessionFactory};
pub use http::{
    DEFAULT_GRACE, HttpOptions, MIN_TOKEN_LEN, Token, parse_listen_addr, serve_http,
    tokens_from_text,
};
pub use legacy_sse::LegacySseError;
pub use live::LivePool;
pub use login::{
    AuthStatus, LOGIN_TIMEOUT, LoginOutcome, LoginPrompt, LogoutOutcome, auth_status, login,
    logout, open_browser,
};
pub use manager::McpManager;
pub use mrtr::{ROUND_TTL, UpfrontInput};
pub use naming::{MAX_DESCRIPTION_CHARS, MAX_NAME_LEN, qualified_name};
pub use oauth_store::TOKEN_DIR;
pub use principal::Principal;
pub use prompts::{ElicitationPrompter, SamplingSummariser};
pub use questions::{ElicitQuestions, QuestionForm, question_hook};
pub use relay::{ClientOffers, ClientRelay};
pub use resources::{ListMcpResourcesTool, ReadMcpResourceTool};
pub use server::{
    ClientHook, ClientHookFn, MAX_REQUEST_BYTES, StdioOptions, mcp_tool_list, serve_stdio,
    serve_stdio_with,
};
pub use server_conn::{STDERR_CAP, ServerStatus};
pub use tool::MAX_RESULT_CHARS;

/// The tools this crate always contributes: ListMcpResourcesTool and ReadMcpResourceTool.
pub fn tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(Typed::new(ListMcpResourcesTool)),
        Arc::new(Typed::new(ReadMcpResourceTool)),
    ]
}

/// Starts the MCP servers of `<cwd>/.mcp.json` that a person approved (see
/// [`load_project_config`]) for the session of `ctx`, in the background, and returns their
/// manager at once (also stored in the context's services, for the resource tools). Their
/// tools join [`McpManager::tools`] as each server becomes ready; [`LivePool::following`]
/// follows them and [`McpManager::wait_started`] waits for them. Without a `.mcp.json`, or
/// without an approved server, nothing starts and `None` is returned. A server whose entry
/// has a problem is not started and is listed with it ([`McpManager::skipped`]). Needs a
/// tokio runtime.
pub fn start_project_servers(ctx: &ToolContext) -> Result<Option<Arc<McpManager>>, ToolError> {
    let config = load_project_config(ctx)?;
    if config.is_empty() {
        return Ok(None);
    }
    let manager = McpManager::start(config, ctx)?;
    ctx.services().insert(Arc::clone(&manager));
    Ok(Some(manager))
}
