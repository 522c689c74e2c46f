//! Registry tests: pool order, MCP de-duplication, deny filtering, the feature plumbing,
//! sessions from settings files, and schema snapshots of every tool in every dialect.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod pool;
mod schemas;
mod session;
