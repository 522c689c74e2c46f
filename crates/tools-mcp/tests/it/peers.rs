//! Finding the installed peers (`cargo xtask peers`): `AGENT_TOOLS_PEERS_DIR`, else
//! `$HOME/.cache/agent-tools/peers`. A missing peer fails when `AGENT_TOOLS_REQUIRE_PEERS=1`
//! and is skipped with a message otherwise.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// The peers directory when `what` is installed in it; `None` (after saying why) otherwise.
pub fn peer(what: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("AGENT_TOOLS_PEERS_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/agent-tools/peers"))
        })?;
    let path = dir.join(what);
    if path.exists() {
        return Some(dir);
    }
    let message = format!(
        "peer {} is missing; run `cargo xtask peers`",
        path.display()
    );
    assert!(
        std::env::var("AGENT_TOOLS_REQUIRE_PEERS").as_deref() != Ok("1"),
        "{message}"
    );
    eprintln!("skipped: {message}");
    None
}

/// Runs the Python client (`mcp_client.py`) on `scenario`; returns its output lines.
pub fn python(peers: &Path, scenario: &Value) -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/mcp_client.py");
    let output = Command::new("python3")
        .arg(script)
        .arg(scenario.to_string())
        .env("PYTHONPATH", peers.join("py"))
        .stdin(Stdio::null())
        .output()
        .expect("run python3");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "python client failed: {}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect()
}
