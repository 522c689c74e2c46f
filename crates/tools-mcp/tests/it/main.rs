//! Integration tests of tools-mcp: the server adapter driven by the Python `mcp` client,
//! and the client manager against the reference MCP servers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approval;
mod client;
mod live;
mod peers;
mod server;
