//! Shell permissions end to end, as an attacker model would try them through the binary:
//! hidden code in default mode, deny rules in bypass mode, Read rules over the shell, and
//! repeated keys in an input — through `call`, `batch` and `serve` over stdio. Every test
//! asserts on the files left behind.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::{Project, binary, text};

#[test]
fn hidden_code_does_not_run_in_default_mode() {
    let p = Project::new(&[]);
    for cmd in [
        "test -v 'x[$(touch PWN)]'",
        "[[ 'x[$(touch PWN)]' -eq 1 ]]",
        "printf -v 'a[$(touch PWN)]' 1",
        "cat <<EOF\n`touch PWN`\nEOF",
    ] {
        for mode in ["default", "plan", "dontAsk"] {
            let input = json!({ "command": cmd }).to_string();
            let run = p.run(&["--mode", mode, "call", "Bash", &input], None);
            run.assert_code(1);
            assert!(
                !p.root().join("PWN").exists(),
                "{cmd:?} in {mode}: {run:#?}"
            );
        }
    }
}

#[test]
fn deny_rules_hold_in_bypass_mode() {
    let p = Project::new(&["v = keep"]);
    for cmd in [
        "$'\\x72m' v",
        "/usr/bin/env rm v",
        "nohup -- rm v",
        "eval -- rm v",
        "bash -c -- 'rm v'",
        "rm{,} v",
        "r\\\nm v",
        "sh <<< 'rm v'",
        "printf 'rm v' | bash",
        "X=rm; $X v",
        "git -c alias.x='!rm v' x",
        "trap 'rm v' EXIT",
        "flock /tmp/agent-tools-e2e.lock rm v",
    ] {
        let input = json!({ "command": cmd }).to_string();
        let run = p.run(
            &[
                "--mode",
                "bypassPermissions",
                "--deny",
                "Bash(rm:*)",
                "call",
                "Bash",
                &input,
            ],
            None,
        );
        run.assert_code(1);
        assert!(text(&run.result()).contains("denied"), "{cmd:?}: {run:#?}");
        assert!(p.root().join("v").exists(), "{cmd:?} removed v: {run:#?}");
    }
}

#[test]
fn read_deny_rules_hold_for_the_shell() {
    let p = Project::new(&[".env = KEY=SECRET-91f3", "src/a.rs = fn main() {}"]);
    for cmd in ["cat .env", "grep -r SECRET .", "base64 .env", "cat .e*"] {
        for mode in ["default", "bypassPermissions"] {
            let input = json!({ "command": cmd }).to_string();
            let run = p.run(
                &[
                    "--mode",
                    mode,
                    "--deny",
                    "Read(.env)",
                    "call",
                    "Bash",
                    &input,
                ],
                None,
            );
            run.assert_code(1);
            assert!(!run.stdout.contains("SECRET-91f3"), "{cmd:?}: {run:#?}");
        }
    }
    let run = p.run(
        &[
            "--deny",
            "Read(.env)",
            "call",
            "Bash",
            r#"{"command": "grep -rn main src"}"#,
        ],
        None,
    );
    run.assert_code(0);
}

#[test]
fn repeated_keys_are_refused_by_call_and_batch() {
    let p = Project::new(&[]);
    let run = p.run(
        &[
            "--mode",
            "bypassPermissions",
            "call",
            "Bash",
            r#"{"command":"ls","command":"touch PWN"}"#,
        ],
        None,
    );
    run.assert_code(1);
    assert!(
        text(&run.result()).contains("`command` appears more than once"),
        "{run:#?}"
    );
    assert!(!p.root().join("PWN").exists());
    let run = p.run(
        &["--mode", "bypassPermissions", "batch"],
        Some(
            "{\"tool\":\"Bash\",\"input\":{\"command\":\"touch PWN\",\"command\":\"ls\"}}\n\
             {\"tool\":\"Bash\",\"tool\":\"Read\",\"input\":{}}\n",
        ),
    );
    let lines: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{run:#?}");
    assert!(
        text(&lines[0]).contains("appears more than once"),
        "{run:#?}"
    );
    assert!(
        text(&lines[1]).contains("appears more than once"),
        "{run:#?}"
    );
    assert!(!p.root().join("PWN").exists());
}

#[test]
fn repeated_keys_are_refused_over_mcp_stdio() {
    let p = Project::new(&[]);
    let mut child = Command::new(binary())
        .args([
            "--cwd",
            p.root_str(),
            "--mode",
            "bypassPermissions",
            "serve",
        ])
        .env("AGENT_TOOLS_HOME", p.home())
        .env("HOME", p.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |line: &str| {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"}}})
        .to_string(),
    );
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains("\"id\":1"), "{line}");
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    send(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"Bash","arguments":{"command":"ls","command":"touch PWN"}}}"#,
    );
    let reply: Value = loop {
        line.clear();
        assert!(
            stdout.read_line(&mut line).unwrap() > 0,
            "the server closed"
        );
        let v: Value = serde_json::from_str(&line).unwrap();
        if v["id"] == 2 {
            break v;
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(reply["result"]["isError"], true, "{reply}");
    assert!(
        reply["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("`command` appears more than once"),
        "{reply}"
    );
    assert!(!p.root().join("PWN").exists());
}
