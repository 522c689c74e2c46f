//! Integration tests of tools-lsp: inputs and errors, and the manager and the tool against
//! real language servers (installed by `cargo xtask peers`): pyright-langserver and
//! typescript-language-server. A missing server skips its tests with a message, or fails
//! them with `AGENT_TOOLS_REQUIRE_PEERS=1`.

mod across;
mod common;
mod input;
mod manager;
mod protocol;
mod sandboxed;
mod tool;
