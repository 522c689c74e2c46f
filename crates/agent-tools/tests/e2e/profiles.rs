//! `agent-tools serve --profile codex` used by the Python SDK's client, as an OpenAI model's
//! host would: codex's vocabulary over MCP on both protocol eras, over stdio and HTTP —
//! `apply_patch` adds and updates a file, `exec_command` runs a command, `shell` (deferred,
//! callable by name) is refused a command no rule allows, and the built-ins the profile
//! replaces are not offered.

use serde_json::{Value, json};
use test_support::peers::peer;

use crate::Project;
use crate::serve::{HttpServer, stdio};
use crate::serve_eras::python;

fn steps() -> Value {
    let add = "*** Begin Patch\n*** Add File: notes/todo.txt\n+alpha\n+beta\n*** End Patch\n";
    let update = "*** Begin Patch\n*** Update File: notes/todo.txt\n@@\n alpha\n-beta\n+gamma\n*** End Patch\n";
    json!([
        {"op": "list"},
        {"op": "call", "tool": "apply_patch", "args": {"input": add}},
        {"op": "call", "tool": "apply_patch", "args": {"input": update}},
        {"op": "call", "tool": "exec_command", "args": {"cmd": "cat todo.txt", "workdir": "notes"}},
        {"op": "call", "tool": "shell", "args": {"command": ["rm", "keep.txt"]}},
    ])
}

fn check(project: &Project, lines: &[Value], label: &str) {
    assert_eq!(lines.len(), 6, "{label}: {lines:#?}");
    let names: Vec<&str> = lines[0]["tools"]
        .as_array()
        .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    for want in [
        "apply_patch",
        "exec_command",
        "write_stdin",
        "update_plan",
        "view_image",
    ] {
        assert!(
            names.contains(&want),
            "{label}: {want} missing from {names:?}"
        );
    }
    for gone in ["Bash", "Edit", "Write", "TodoWrite"] {
        assert!(!names.contains(&gone), "{label}: {gone} offered: {names:?}");
    }
    for (i, want) in [(1, "A notes/todo.txt"), (2, "M notes/todo.txt")] {
        assert_eq!(lines[i]["is_error"], false, "{label}: {lines:#?}");
        let text = lines[i]["text"].as_str().unwrap_or_default();
        assert!(text.contains(want), "{label}: {text}");
    }
    assert_eq!(lines[3]["is_error"], false, "{label}: {lines:#?}");
    let text = lines[3]["text"].as_str().unwrap_or_default();
    assert!(text.contains("alpha\ngamma"), "{label}: {text}");
    // No rule allows removing keep.txt: refused without anyone to ask; it is still there.
    assert_eq!(lines[4]["is_error"], true, "{label}: {lines:#?}");
    assert!(project.root().join("keep.txt").is_file(), "{label}");
    assert_eq!(
        std::fs::read_to_string(project.root().join("notes/todo.txt")).unwrap(),
        "alpha\ngamma\n",
        "{label}"
    );
}

/// Writes under notes/ allowed through the rules apply_patch answers to (Edit); nothing
/// allows removing keep.txt.
const ARGS: &[&str] = &["--profile", "codex", "--allow", "Edit(notes/**)"];

#[test]
fn the_python_client_uses_the_codex_profile_over_stdio_on_both_eras() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    for mode in ["auto", "legacy"] {
        let project = Project::new(&["notes/", "keep.txt"]);
        let scenario = json!({"transport": stdio(&project, ARGS), "mode": mode, "steps": steps()});
        check(&project, &python(&peers, &project, &scenario), mode);
    }
}

#[test]
fn the_python_client_uses_the_codex_profile_over_http_on_both_eras() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    for mode in ["auto", "legacy"] {
        let project = Project::new(&["notes/", "keep.txt"]);
        let server = HttpServer::start(&project, ARGS);
        let scenario = json!({"transport": {"http": server.url}, "mode": mode, "steps": steps()});
        check(&project, &python(&peers, &project, &scenario), mode);
    }
}
