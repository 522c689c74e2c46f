//! `agent-tools batch`: JSON lines in, one result line per call out, in order.

use serde_json::Value;

use crate::{Project, assert_result_shape, filenames, text};

/// Runs `batch` in `project` with `stdin` and checks the exit status and each result
/// line's `is_error`, in order; returns the result lines.
#[track_caller]
fn check(project: &Project, stdin: &str, errors: &[bool], code: i32) -> Vec<Value> {
    let run = project.run(&["batch"], Some(stdin));
    run.assert_code(code);
    let lines = run.lines();
    let got: Vec<bool> = lines
        .iter()
        .map(|l| {
            assert_result_shape(l);
            l["is_error"].as_bool().expect("is_error")
        })
        .collect();
    assert_eq!(got, errors, "{run:#?}");
    lines
}

fn glob_line(pattern: &str) -> String {
    serde_json::json!({"tool": "Glob", "input": {"pattern": pattern}}).to_string()
}

#[test]
fn valid_invalid_json_and_missing_field_in_order() {
    let p = Project::new(&["a.rs", "b.txt"]);
    let stdin = format!(
        "{}\n{{not json\n{}\n",
        glob_line("*.rs"),
        r#"{"tool": "Glob", "input": {}}"#
    );
    let lines = check(&p, &stdin, &[false, true, true], 1);
    assert_eq!(filenames(&lines[0]), ["a.rs"]);
    assert!(text(&lines[1]).contains("line 2"), "{}", lines[1]);
    assert!(text(&lines[1]).contains("JSON"), "{}", lines[1]);
    assert_eq!(lines[2]["tool"], "Glob");
    assert!(
        text(&lines[2]).contains("The required parameter `pattern` is missing"),
        "{}",
        lines[2]
    );
}

#[test]
fn empty_batch_prints_nothing() {
    let p = Project::new(&["a.rs"]);
    let run = p.run(&["batch"], Some(""));
    run.assert_code(0);
    assert!(run.stdout.is_empty(), "{run:#?}");
}

#[test]
fn no_stdin_is_an_empty_batch() {
    let p = Project::new(&["a.rs"]);
    let run = p.run(&["batch"], None);
    run.assert_code(0);
    assert!(run.stdout.is_empty(), "{run:#?}");
}

#[test]
fn blank_lines_are_skipped() {
    let p = Project::new(&["a.rs"]);
    let stdin = format!("\n{}\n   \n\n{}\n", glob_line("*.rs"), glob_line("*.md"));
    let lines = check(&p, &stdin, &[false, false], 0);
    assert_eq!(filenames(&lines[0]), ["a.rs"]);
    assert_eq!(text(&lines[1]), "No files found");
}

#[test]
fn fifteen_globs_come_back_in_order() {
    let tree: Vec<String> = (0..15).map(|i| format!("f{i:02}.txt")).collect();
    let tree: Vec<&str> = tree.iter().map(String::as_str).collect();
    let p = Project::new(&tree);
    // Reverse order, so results sorted by anything but call order would show.
    let stdin: String = (0..15)
        .rev()
        .map(|i| glob_line(&format!("f{i:02}.txt")) + "\n")
        .collect();
    let lines = check(&p, &stdin, &[false; 15], 0);
    for (line, i) in lines.iter().zip((0..15).rev()) {
        assert_eq!(filenames(line), [format!("f{i:02}.txt")], "{line}");
    }
}

#[test]
fn unknown_tool_line_is_an_error_result() {
    let p = Project::new(&["a.rs"]);
    let stdin = format!(
        "{}\n{}\n",
        r#"{"tool": "Nope", "input": {}}"#,
        glob_line("*.rs")
    );
    let lines = check(&p, &stdin, &[true, false], 1);
    assert_eq!(lines[0]["tool"], "Nope");
    assert!(text(&lines[0]).contains("Nope"), "{}", lines[0]);
}

#[test]
fn line_shape_mistakes_are_error_results() {
    let p = Project::new(&["a.rs"]);
    let stdin = [
        "[1, 2]",
        r#"{"input": {}}"#,
        r#"{"tool": 5}"#,
        r#"{"tool": "Glob", "input": {"pattern": "*.rs"}, "extra": 1}"#,
    ]
    .join("\n");
    let lines = check(&p, &stdin, &[true, true, true, true], 1);
    assert!(text(&lines[0]).contains("line 1"), "{}", lines[0]);
    assert!(text(&lines[1]).contains("\"tool\""), "{}", lines[1]);
    assert!(text(&lines[3]).contains("extra"), "{}", lines[3]);
}

#[test]
fn id_is_accepted() {
    let p = Project::new(&["a.rs"]);
    let stdin = r#"{"tool": "Glob", "input": {"pattern": "*.rs"}, "id": "call-1"}"#;
    let lines = check(&p, stdin, &[false], 0);
    assert_eq!(filenames(&lines[0]), ["a.rs"]);
}

#[test]
fn batch_shares_the_session_permissions() {
    let p = Project::new(&["a.rs", "secret/b.rs"]);
    let run = p.run(
        &["--deny", "Read(secret/**)", "batch"],
        Some(&format!(
            "{}\n{}\n",
            glob_line("**/*.rs"),
            glob_line("*.rs")
        )),
    );
    run.assert_code(0);
    for line in run.lines() {
        assert_eq!(filenames(&line), ["a.rs"], "{line}");
    }
}

/// Under bubblewrap the binary is its own sandbox supervisor: every call of a batch runs in
/// one instance whose pid 2 is `agent-tools __agent-tools-sandbox-supervisor …`.
#[test]
fn bash_calls_share_one_sandbox_supervised_by_the_binary() {
    if !test_support::peers::require(
        "bubblewrap (`cargo xtask peers` installs it)",
        test_support::peers::bwrap().is_some(),
    ) {
        return;
    }
    let p = Project::new(&["a.txt"]);
    let settings = p.home().join("bwrap-settings.json");
    std::fs::write(&settings, r#"{"sandbox": {"mechanism": "bubblewrap"}}"#).unwrap();
    let line = serde_json::json!({
        "tool": "Bash",
        "input": {"command": "tr '\\0' ' ' < /proc/2/cmdline; echo; cat /proc/2/stat | cut -d' ' -f22"}
    })
    .to_string();
    let stdin = format!("{line}\n{line}\n{line}\n");
    let run = p.run(
        &[
            "batch",
            "--mode",
            "bypassPermissions",
            "--settings",
            settings.to_str().unwrap(),
        ],
        Some(&stdin),
    );
    run.assert_code(0);
    let lines = run.lines();
    assert_eq!(lines.len(), 3, "{run:#?}");
    for l in &lines {
        assert!(
            l["data"]["sandbox"]
                .as_str()
                .unwrap()
                .starts_with("bubblewrap"),
            "{l}"
        );
        let shown = text(l);
        let first = shown.lines().next().unwrap();
        assert!(
            first.starts_with(crate::binary().to_str().unwrap())
                && first.contains(" __agent-tools-sandbox-supervisor "),
            "{shown}"
        );
    }
    // The same supervisor (its start time) served all three.
    assert_eq!(text(&lines[0]), text(&lines[1]));
    assert_eq!(text(&lines[1]), text(&lines[2]));
}

/// A driver that talks to `batch` the way an agent does: it sends one call, waits for its
/// result, and decides the next call from it. Each result must arrive while the driver
/// waits, without more input; a result that waits for more input fails the test by timing
/// out (a bound, never a timing assertion).
#[test]
fn batch_is_a_live_session() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    use std::sync::mpsc;
    use std::time::Duration;

    let p = Project::new(&["notes.txt = alpha\\nbeta\\n"]);
    let mut child = Command::new(crate::binary())
        .args(["--cwd", p.root_str(), "--mode", "acceptEdits", "batch"])
        .env("AGENT_TOOLS_HOME", p.home())
        .env("HOME", p.home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(v) = serde_json::from_str(&line)
                && tx.send(v).is_err()
            {
                break;
            }
        }
    });
    let mut ask = |call: Value| -> Value {
        stdin.write_all(call.to_string().as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        rx.recv_timeout(Duration::from_secs(60))
            .expect("the result did not arrive without more input")
    };
    let path = p.root().join("notes.txt").display().to_string();
    let read = ask(serde_json::json!({"tool": "Read", "input": {"file_path": path}}));
    assert_eq!(read["is_error"], false, "{read}");
    // Decide the edit from what was read.
    let first = text(&read)
        .lines()
        .next()
        .and_then(|l| l.split('\t').nth(1))
        .unwrap_or_default()
        .to_owned();
    assert_eq!(first, "alpha", "{read}");
    let edit = ask(serde_json::json!({"tool": "Edit", "input": {
        "file_path": path, "old_string": first, "new_string": "ALPHA"}}));
    assert_eq!(edit["is_error"], false, "{edit}");
    let again = ask(serde_json::json!({"tool": "Read", "input": {"file_path": path}}));
    assert!(text(&again).contains("ALPHA"), "{again}");
    // Concurrency-safe calls sent together still come back in order.
    let lines = [glob_line("*.txt"), "{oops".to_owned(), glob_line("*.none")].join("\n");
    stdin.write_all(lines.as_bytes()).unwrap();
    stdin.write_all(b"\n").unwrap();
    stdin.flush().unwrap();
    let got: Vec<Value> = (0..3)
        .map(|_| rx.recv_timeout(Duration::from_secs(60)).expect("a result"))
        .collect();
    assert_eq!(filenames(&got[0]), ["notes.txt"]);
    assert_eq!(got[1]["is_error"], true);
    assert_eq!(got[2]["is_error"], false);
    // End of input ends the session.
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1));
}
