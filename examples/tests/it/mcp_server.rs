//! `mcp-server`: the registry's pool served over stdio, driven by the Python SDK's MCP
//! client (a peer): it lists the tools and calls Glob, and Bash, whose sandbox supervisor
//! is the example program itself.

use std::fs;

use serde_json::{Value, json};
use test_support::peers;

#[test]
fn a_real_mcp_client_lists_the_tools_and_calls_glob() {
    let Some(peers) = peers::peer("py/mcp") else {
        return;
    };
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    fs::create_dir(project.path().join("src")).unwrap();
    fs::write(project.path().join("src/lib.rs"), "//! A crate.\n").unwrap();
    fs::write(project.path().join("README.md"), "# Demo\n").unwrap();
    let home_str = home.path().to_str().unwrap();
    let scenario = json!({
        "transport": {"stdio": {
            "command": env!("CARGO_BIN_EXE_mcp-server"),
            "args": [project.path()],
            "env": {"HOME": home_str, "AGENT_TOOLS_HOME": home_str},
        }},
        "steps": [
            {"op": "list"},
            {"op": "call", "tool": "Glob", "args": {"pattern": "**/*.rs"}},
            {"op": "call", "tool": "Bash", "args": {"command": "ls src"}},
        ],
    });
    let lines = test_support::mcp::run_client_with_env(
        &peers,
        &scenario,
        &[("HOME", home.path()), ("AGENT_TOOLS_HOME", home.path())],
    );

    let names: Vec<&str> = lines[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for name in ["Bash", "Edit", "Glob", "Grep", "Read", "WebFetch", "Write"] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    let glob: &Value = &lines[1];
    assert_eq!(glob["is_error"], false, "{glob}");
    let text = glob["text"].as_str().unwrap();
    assert!(text.contains("lib.rs"), "{text}");
    assert!(!text.contains("README.md"), "{text}");
    let bash = &lines[2];
    assert_eq!(bash["is_error"], false, "{bash}");
    assert!(bash["text"].as_str().unwrap().contains("lib.rs"), "{bash}");
}
