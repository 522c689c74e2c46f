//! Integration tests of tools-mcp: the server adapter driven by the Python `mcp` client,
//! and the client manager against the reference MCP servers: how servers start, what the
//! client offers them (roots) and keeps of their tools (output schemas, structured content).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod approval;
mod client;
mod complete;
mod conns;
mod contexts;
mod http;
mod http_errors;
mod legacy;
mod live;
mod questions;
mod server;
mod shutdown;
mod startup;
