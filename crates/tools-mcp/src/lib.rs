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

mod prompts;
mod server;

pub use prompts::{ElicitationPrompter, SamplingSummariser};
pub use server::{
    HttpOptions, PoolServer, SessionFactory, mcp_tool_list, parse_listen_addr, serve_http,
    serve_stdio, to_mcp_result,
};
