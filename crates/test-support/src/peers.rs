//! The real peers the tests talk to (MCP servers, language servers, the provider SDKs,
//! ripgrep, codex; bubblewrap), installed by `cargo xtask peers` into
//! `$AGENT_TOOLS_PEERS_DIR`, else `$HOME/.cache/agent-tools/peers`.
//!
//! A test whose peer is missing says why and skips, unless `AGENT_TOOLS_REQUIRE_PEERS=1`
//! (which CI sets): then it fails, so nothing passes silently where everything is installed.

use std::path::{Path, PathBuf};

/// Whether a missing peer fails the test (`AGENT_TOOLS_REQUIRE_PEERS=1`).
pub fn required() -> bool {
    std::env::var("AGENT_TOOLS_REQUIRE_PEERS").as_deref() == Ok("1")
}

/// The peers directory: `$AGENT_TOOLS_PEERS_DIR` when set and not empty, else
/// `$HOME/.cache/agent-tools/peers`; `None` when neither variable is set.
pub fn dir() -> Option<PathBuf> {
    std::env::var_os("AGENT_TOOLS_PEERS_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/agent-tools/peers"))
        })
}

/// Whether a test that needs `what` runs: true when `present`. When it is not, the test
/// fails under `AGENT_TOOLS_REQUIRE_PEERS=1` and otherwise prints why it skips.
#[track_caller]
pub fn require(what: &str, present: bool) -> bool {
    if present {
        return true;
    }
    assert!(
        !required(),
        "{what} is required (AGENT_TOOLS_REQUIRE_PEERS=1) but missing"
    );
    eprintln!("skipped: {what} is missing");
    false
}

/// `<peers>/rel` when it exists; `None` after saying why (see [`require`]).
#[track_caller]
pub fn path(rel: &str) -> Option<PathBuf> {
    let path = dir().map(|d| d.join(rel));
    let found = path.as_deref().is_some_and(Path::exists);
    let what = match &path {
        Some(path) => format!("peer {} (run `cargo xtask peers`)", path.display()),
        None => format!("peer {rel} (neither AGENT_TOOLS_PEERS_DIR nor HOME is set)"),
    };
    if require(&what, found) { path } else { None }
}

/// The peers directory when `rel` is installed in it (`"py/mcp"`,
/// `"node_modules/.bin/mcp-inspector"`); `None` after saying why (see [`require`]).
#[track_caller]
pub fn peer(rel: &str) -> Option<PathBuf> {
    path(rel)?;
    dir()
}

/// The program `name` from the peers' `node_modules/.bin` (a language server, an MCP
/// server); `None` after saying why (see [`require`]).
#[track_caller]
pub fn bin(name: &str) -> Option<PathBuf> {
    path(&format!("node_modules/.bin/{name}"))
}

/// The first file named `name` in a directory of `$PATH`, without any message.
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// bubblewrap, where the sandbox looks for it.
pub fn bwrap() -> Option<PathBuf> {
    ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}
