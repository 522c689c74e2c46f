//! MCP for agent-tools: the client manager that turns MCP servers' tools into pool tools,
//! the resource tools, and the server adapter behind `agent-tools serve`.
//!
//! Nothing is implemented here yet: the client and server arrive with the tools-mcp issue.
//! The crate exists so the workspace layout and the registry's `mcp` feature are in place; it
//! exports no tools, and the registry registers none from it.
