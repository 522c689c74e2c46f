//! Language-server tools for agent-tools: the LSP tool and the manager that starts, talks to
//! and stops language servers (tool-core's `LspManager`).
//!
//! Nothing is implemented here yet: the tools arrive with the tools-lsp issue. The crate
//! exists so the workspace layout and the registry's `lsp` feature are in place; it exports
//! no tools, and the registry registers none from it.
