//! What the workspace's tests share, so each crate's tests stop carrying their own copy:
//! finding the real peers `cargo xtask peers` installs ([`peers`]), temporary trees with
//! fixed modification times ([`tree`]), the fake MCP servers and the Python MCP client
//! several test binaries drive ([`mcp`]), a raw HTTP/1.1 client for the MCP server's HTTP
//! tests ([`http`]) and the bad input they send ([`fuzz`]), processes found by a marker in
//! their command line ([`procs`]), and the symbolic-link swapper of the file tools' race
//! tests ([`race`]).
//!
//! A dev-dependency only: no crate's `[dependencies]` may name it (`cargo xtask tidy`
//! enforces it), and it depends on no crate of the workspace, so every crate's tests may use
//! it, tool-core's included.
#![allow(clippy::expect_used)]

pub mod fuzz;
pub mod http;
pub mod mcp;
pub mod peers;
pub mod procs;
pub mod race;
pub mod tree;

pub use race::Swapper;
pub use tree::{FIXED_MTIME, Tree, listing, tempdir};
