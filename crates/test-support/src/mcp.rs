//! The fake MCP servers and the Python MCP client that several test binaries drive
//! (tools-mcp's, the registry's and the binary's end-to-end tests), kept in this crate's
//! `mcp/` folder. The Python ones need the peers' `py/` folder on `PYTHONPATH`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp").join(name)
}

/// `fake_server.py LOGDIR`: a deliberately misbehaving server over stdio, for fault tests
/// (its docstring lists the tools and the environment variables it reads). Plain Python.
pub fn fake_server() -> PathBuf {
    script("fake_server.py")
}

/// `dynamic_server.py stdio|http PORT [CERT KEY]`: the Python SDK's MCPServer whose tool
/// list changes at run time.
pub fn dynamic_server() -> PathBuf {
    script("dynamic_server.py")
}

/// `tls_certs.py OUTDIR`: a throw-away certificate authority and a server certificate it
/// signed (Python `cryptography`).
pub fn tls_certs() -> PathBuf {
    script("tls_certs.py")
}

/// `oauth_server.py LIFETIME`: a hosted MCP server behind OAuth, its own authorization
/// server (discovery, dynamic registration, PKCE, refresh, revocation, a scope step-up);
/// prints `PORT <n>`. Plain Python.
pub fn oauth_server() -> PathBuf {
    script("oauth_server.py")
}

/// `elicit_server.py`: the Python SDK's MCPServer over stdio whose tools ask the client:
/// `book(date)` elicits a form (integer, enum, boolean, with defaults), `summarize(text)`
/// samples the client's model.
pub fn elicit_server() -> PathBuf {
    script("elicit_server.py")
}

/// `browser.py URL`: a headless browser for `$BROWSER`, which follows the authorization
/// server's redirects back to a login's loopback address. Plain Python.
pub fn browser() -> PathBuf {
    script("browser.py")
}

/// `mcp_client.py SCENARIO_JSON`: drives a server with the Python SDK's client, its
/// `ClientSession` or, when the scenario names a `mode`, its high-level `Client` (the
/// workspace's one Python test client; its docstring lists the steps and what each prints).
pub fn client() -> PathBuf {
    script("mcp_client.py")
}

/// Runs the Python client on `scenario` with the peers' `py/` folder; its output lines.
#[track_caller]
pub fn run_client(peers: &Path, scenario: &Value) -> Vec<Value> {
    run_client_with_env(peers, scenario, &[])
}

/// [`run_client`] with `env` added to the client's environment (the servers it starts over
/// stdio inherit it).
#[track_caller]
pub fn run_client_with_env(peers: &Path, scenario: &Value, env: &[(&str, &Path)]) -> Vec<Value> {
    let output = Command::new("python3")
        .arg(client())
        .arg(scenario.to_string())
        .env("PYTHONPATH", peers.join("py"))
        .envs(env.iter().copied())
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

/// The steps of a client on protocol 2026-07-28 that listens, has the dynamic server (see
/// [`dynamic_server`], configured as `dyn`) add a tool `fresh`, waits to be told the list
/// changed, lists and calls the new tool; [`check_told_of_new_tool`] reads its lines.
pub fn listen_for_a_new_tool() -> Value {
    serde_json::json!([
        {"op": "listen"},
        {"op": "call", "tool": "mcp__dyn__add_tool", "args": {"name": "fresh"}},
        {"op": "wait_list_changed", "seconds": 30},
        {"op": "list"},
        {"op": "call", "tool": "mcp__dyn__fresh"},
    ])
}

/// Checks the lines of [`listen_for_a_new_tool`]: the listen honoured, the client told of
/// the change, the new tool listed and answering, all on protocol 2026-07-28.
#[track_caller]
pub fn check_told_of_new_tool(lines: &[Value]) {
    assert_eq!(lines[0]["honored"], true, "{lines:#?}");
    assert_eq!(lines[1]["is_error"], false, "{lines:#?}");
    assert!(
        lines[2]["list_changed"].as_u64().unwrap_or(0) >= 1,
        "{lines:#?}"
    );
    let tools = lines[3]["tools"].as_array().cloned().unwrap_or_default();
    assert!(
        tools.iter().any(|t| t["name"] == "mcp__dyn__fresh"),
        "{lines:#?}"
    );
    assert_eq!(lines[4]["text"], "fresh was added", "{lines:#?}");
    assert_eq!(lines[5]["protocol"], "2026-07-28", "{lines:#?}");
}

/// A test certificate authority and a certificate it signed for 127.0.0.1 and localhost, in
/// a new temporary directory: `ca.pem`, `server.pem`, `server.key` (see [`tls_certs`]).
#[track_caller]
pub fn certificates(peers: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let status = Command::new("python3")
        .arg(tls_certs())
        .arg(dir.path())
        .env("PYTHONPATH", peers.join("py"))
        .status()
        .expect("run tls_certs.py");
    assert!(status.success(), "tls_certs.py failed");
    dir
}
