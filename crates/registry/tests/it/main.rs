//! Registry tests: pool order, MCP de-duplication, deny filtering, the feature plumbing,
//! sessions from settings files, schema snapshots of every tool in every dialect checked
//! against each provider, and Edit reporting what it broke through a language server.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[cfg(all(feature = "fs", feature = "lsp"))]
mod lsp_edit;
mod pool;
mod profile_codex;
mod profile_gemini;
mod schemas;
mod session;
