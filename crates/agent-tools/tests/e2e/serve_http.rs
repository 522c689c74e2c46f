//! `agent-tools serve --http` from the outside, through a raw HTTP/1.1 client on loopback:
//! the token options (generated, `--no-auth`, beyond loopback), malformed messages over
//! stdio, a bounded load of 50 concurrent sessions, a stdio client that goes away
//! mid-command, SIGTERM over HTTP and over stdio, and the inspector CLI with and without a token.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::peers::peer;

use crate::serve::{HttpServer, inspector};
use crate::serve_eras::{marker, survivors, wait_for_process};
use crate::{Project, peak_rss_kib};

pub(crate) use test_support::http::{Conn, call, legacy_headers, legacy_session, modern, text};

const TOKEN_A: &str = "token-a-0123456789abcdef";

/// Without a token option, a loopback server makes a token (mode 0600 in the state
/// directory), says where it is, and requires it: requests without it, or with a wrong
/// one, get 401 and do nothing (no file written, no process started); with it, calls run.
/// The next server uses the same token.
#[test]
fn a_server_without_token_options_makes_one_and_requires_it() {
    use std::os::unix::fs::PermissionsExt;
    let project = Project::new(&["notes.txt = alpha\\n"]);
    let server = HttpServer::start_with_generated_token(&project, &["--mode", "bypassPermissions"]);
    let (token, path) = server
        .token
        .clone()
        .expect("the address line names the token file");
    assert_eq!(path, project.home().join("serve-token"));
    let mode = std::fs::metadata(&path)
        .expect("token file")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(token.len(), 64);
    let written = project.root().join("written.txt");
    let ran = project.root().join("ran");
    let procs = marker("serve-token");
    let calls = [
        ("Write", json!({"file_path": written, "content": "x"})),
        (
            "Bash",
            json!({"command": format!("touch '{}'; setsid sh -c 'sleep 300' {procs} >/dev/null 2>&1 &", ran.display())}),
        ),
    ];
    let wrong = "0".repeat(64);
    let mut refused = 0;
    for bad in [
        None,
        Some(wrong.as_str()),
        Some(&token[..32]),
        Some("Bearer"),
    ] {
        for (tool, args) in &calls {
            let (headers, body) = modern(
                1,
                "tools/call",
                json!({"name": tool, "arguments": args}),
                bad,
                None,
            );
            let response = Conn::open(server.authority()).send("POST", "/mcp", &headers, &body);
            assert_eq!(response.status, 401, "{bad:?} {tool}: {response:#?}");
            refused += 1;
        }
        let response = legacy_session(&mut Conn::open(server.authority()), bad)
            .expect_err("no legacy session without the token");
        assert_eq!(response.status, 401, "{response:#?}");
    }
    assert!(!written.exists() && !ran.exists());
    assert!(survivors(&procs, 1).is_empty());
    eprintln!("requests without the generated token refused: {refused}");
    // With the token, the call runs.
    let mut conn = Conn::open(server.authority());
    let answer = call(
        &mut conn,
        2,
        "Write",
        calls[0].1.clone(),
        Some(&token),
        None,
    );
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    assert!(written.exists());
    assert!(legacy_session(&mut conn, Some(&token)).is_ok());
    drop(server);
    let again = HttpServer::start_with_generated_token(&project, &[]);
    assert_eq!(again.token.as_ref().map(|t| &t.0), Some(&token));
}

/// `--no-auth` serves without a token and says on stderr what that means; it cannot be
/// combined with token options.
#[test]
fn no_auth_serves_anonymously_with_a_warning() {
    let project = Project::new(&["notes.txt = alpha\\n"]);
    let server = HttpServer::start(&project, &[]);
    assert!(server.token.is_none());
    assert!(
        server
            .notices
            .iter()
            .any(|n| n.contains("warning: --no-auth") && n.contains("every account")),
        "{:?}",
        server.notices
    );
    assert!(!project.home().join("serve-token").exists());
    let mut conn = Conn::open(server.authority());
    let notes = project.root().join("notes.txt");
    let answer = call(
        &mut conn,
        1,
        "Read",
        json!({"file_path": notes}),
        None,
        None,
    );
    assert!(text(&answer).contains("alpha"), "{answer}");
    let run = project.run(
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--no-auth",
            "--token-env",
            "X",
        ],
        None,
    );
    run.assert_code(2);
    assert!(run.stderr.contains("--no-auth"), "{run:#?}");
}

#[test]
fn listening_beyond_loopback_needs_a_token() {
    let project = Project::new(&[]);
    for args in [
        vec!["serve", "--http", "0.0.0.0:0"],
        vec!["serve", "--http", "[::]:0"],
        vec!["serve", "--http", "127.0.0.1:0", "--allowed-host", "*"],
    ] {
        let run = project.run(&args, None);
        run.assert_code(2);
        assert!(run.stderr.contains("token"), "{run:#?}");
    }
    // A token that is too short, or a file without one, is refused naming the place.
    let file = project.home().join("tokens");
    for (content, expected) in [("short\n", "line 1"), ("# none\n", "no token")] {
        std::fs::write(&file, content).expect("tokens");
        let path = file.to_str().expect("UTF-8");
        let run = project.run(
            &["serve", "--http", "0.0.0.0:0", "--token-file", path],
            None,
        );
        run.assert_code(2);
        assert!(
            run.stderr.contains(expected) && run.stderr.contains(path),
            "{run:#?}"
        );
    }
    let run = project.run(
        &[
            "serve",
            "--http",
            "127.0.0.1:0",
            "--token-env",
            "AGENT_TOOLS_NO_SUCH_VAR",
        ],
        None,
    );
    run.assert_code(2);
    assert!(run.stderr.contains("AGENT_TOOLS_NO_SUCH_VAR"), "{run:#?}");
}

#[test]
fn the_inspector_gets_in_with_the_token_only() {
    let Some(peers) = peer("node_modules/.bin/mcp-inspector") else {
        return;
    };
    let project = Project::new(&["a.txt = hello from a file\\n"]);
    let server = HttpServer::start_with_env(
        &project,
        &["--token-env", "SERVE_TOKEN"],
        &[("SERVE_TOKEN", TOKEN_A)],
    );
    let file_arg = format!("file_path={}", project.root().join("a.txt").display());
    let header = format!("Authorization: Bearer {TOKEN_A}");
    let mut args = vec![
        server.url.as_str(),
        "--transport",
        "http",
        "--method",
        "tools/call",
        "--tool-name",
        "Read",
        "--tool-arg",
        &file_arg,
    ];
    let without = args.clone();
    args.extend(["--header", &header]);
    let result = inspector(&peers, &project, &args);
    assert_eq!(result["isError"], false, "{result:#}");
    assert!(
        result["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("hello from a file"),
        "{result:#}"
    );
    let wrong = "Authorization: Bearer token-x-0123456789abcdef".to_owned();
    for extra in [vec![], vec!["--header", wrong.as_str()]] {
        let output = Command::new(peers.join("node_modules/.bin/mcp-inspector"))
            .arg("--cli")
            .args(&without)
            .args(&extra)
            .current_dir(project.root())
            .stdin(Stdio::null())
            .output()
            .expect("run mcp-inspector");
        assert!(!output.status.success(), "{extra:?}: {output:?}");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(all.contains("Unauthorized") || all.contains("401"), "{all}");
    }
}

/// Over stdio, malformed messages get JSON-RPC errors, one line each; a malformed
/// notification gets none (the same answers over HTTP are tools-mcp's `tests/it/http.rs`).
#[test]
fn malformed_messages_over_stdio_get_json_rpc_errors() {
    let project = Project::new(&[]);
    let bad_args = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"Read","arguments":"str"}}"#;
    let mut child = project
        .command(&["serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn agent-tools serve");
    let mut stdin = child.stdin.take().expect("stdin");
    let lines = [
        "{",
        r#"{"jsonrpc":"2.0","method":"tools/call","params":7}"#,
        bad_args,
    ];
    for line in lines {
        writeln!(stdin, "{line}").expect("write");
    }
    drop(stdin);
    let output = child.wait_with_output().expect("wait");
    let answers: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    assert_eq!(answers.len(), 2, "{answers:#?}");
    assert_eq!(answers[0]["error"]["code"], -32700, "{answers:#?}");
    assert_eq!(answers[1]["error"]["code"], -32602, "{answers:#?}");
    assert_eq!(answers[1]["id"], 7, "{answers:#?}");
}

#[test]
fn fifty_sessions_of_a_hundred_mixed_calls_lose_nothing() {
    const SESSIONS: usize = 50;
    const CALLS: usize = 100;
    let project = Project::new(&[]);
    let server = HttpServer::start(&project, &["--mode", "acceptEdits", "--allow", "Bash"]);
    let authority = server.authority().to_owned();
    let root = project.root().to_path_buf();
    let started = Instant::now();
    let outcomes: Vec<(usize, usize)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..SESSIONS)
            .map(|s| {
                let authority = authority.clone();
                let root = root.clone();
                scope.spawn(move || session_load(&authority, &root, s, CALLS))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a session"))
            .collect()
    });
    let elapsed = started.elapsed();
    let calls: usize = outcomes.iter().map(|(calls, _)| calls).sum();
    let edits: usize = outcomes.iter().map(|(_, edits)| edits).sum();
    assert_eq!(calls, SESSIONS * CALLS);
    // Nothing lost: every session's file holds its last version.
    for (s, (_, edits)) in outcomes.iter().enumerate() {
        let text = std::fs::read_to_string(root.join(format!("file-{s}.txt"))).unwrap_or_default();
        assert_eq!(text, format!("session {s} version {edits}\n"));
    }
    eprintln!(
        "load: {SESSIONS} sessions × {CALLS} calls ({edits} edits) in {:.1} s; server peak RSS {} MiB",
        elapsed.as_secs_f64(),
        peak_rss_kib(server.child.id()) / 1024
    );
}

/// One session of the load test: half are legacy sessions, half minted contexts of
/// protocol 2026-07-28. Returns the calls made and the edits applied.
fn session_load(authority: &str, root: &std::path::Path, s: usize, calls: usize) -> (usize, usize) {
    let mut conn = Conn::open(authority);
    let legacy = if s.is_multiple_of(2) {
        Some(legacy_session(&mut conn, None).expect("a session"))
    } else {
        None
    };
    let mut handle: Option<String> = None;
    let file = root.join(format!("file-{s}.txt"));
    let mut version = 0;
    let mut made = 0;
    let mut run = |conn: &mut Conn, id: u64, tool: &str, args: Value| -> Value {
        made += 1;
        let answer = match &legacy {
            Some(session) => {
                let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                                  "params": {"name": tool, "arguments": args}});
                let response = conn.send(
                    "POST",
                    "/mcp",
                    &legacy_headers(session, None),
                    &body.to_string(),
                );
                assert_eq!(response.status, 200, "{response:#?}");
                response.answer(id)
            }
            None => {
                let wanted = handle.clone().unwrap_or_else(|| "new".to_owned());
                let answer = call(conn, id, tool, args, None, Some(&wanted));
                if handle.is_none() {
                    handle = answer["result"]["_meta"]["agent-tools/context"]
                        .as_str()
                        .map(str::to_owned);
                }
                answer
            }
        };
        assert_eq!(
            answer["result"]["isError"], false,
            "session {s}, {tool}: {answer:#}"
        );
        answer
    };
    let first = json!({"file_path": file, "content": format!("session {s} version 0\n")});
    run(&mut conn, 1, "Write", first);
    for i in 1..calls as u64 {
        let id = i + 1;
        match i % 10 {
            0 => {
                let answer = run(
                    &mut conn,
                    id,
                    "Bash",
                    json!({"command": format!("echo {s}-{i}")}),
                );
                assert!(text(&answer).contains(&format!("{s}-{i}")), "{answer:#}");
            }
            1 | 4 | 7 => {
                let answer = run(&mut conn, id, "Read", json!({"file_path": file}));
                assert!(
                    text(&answer).contains(&format!("version {version}")),
                    "{answer:#}"
                );
            }
            2 | 5 | 8 => {
                let args = json!({"file_path": file,
                    "old_string": format!("version {version}"),
                    "new_string": format!("version {}", version + 1)});
                run(&mut conn, id, "Edit", args);
                version += 1;
            }
            3 | 6 => {
                let answer = run(
                    &mut conn,
                    id,
                    "Glob",
                    json!({"pattern": format!("file-{s}.txt")}),
                );
                assert!(
                    text(&answer).contains(&format!("file-{s}.txt")),
                    "{answer:#}"
                );
            }
            _ => {
                let answer = run(
                    &mut conn,
                    id,
                    "Grep",
                    json!({"pattern": format!("session {s} version"), "output_mode": "count"}),
                );
                assert!(!text(&answer).is_empty(), "{answer:#}");
            }
        }
    }
    (made, version)
}

/// Sends a `tools/call` of Bash and returns the connection without reading the answer.
fn start_bash(authority: &str, command: &str, handle: Option<&str>) -> Conn {
    let mut conn = Conn::open(authority);
    let (headers, body) = modern(
        1,
        "tools/call",
        json!({"name": "Bash", "arguments": {"command": command}}),
        None,
        handle,
    );
    conn.write("POST", "/mcp", &headers, &body);
    conn
}

/// SIGTERM to `serve` over stdio: a call that finishes within the grace period and one
/// cancelled at its end are both answered on standard output before serve exits, and no
/// process is left. The answers of the cancelled calls used to be lost: the MCP layer
/// stopped before the contexts ended.
#[test]
fn sigterm_over_stdio_answers_every_call_then_leaves_no_process() {
    use std::io::BufRead;
    let project = Project::new(&[]);
    let m = marker("sigterm-stdio");
    let mut child = project
        .command(&["serve", "--allow", "Bash", "--grace", "3"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn agent-tools serve");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter_map(|l| serde_json::from_str::<Value>(&l).ok())
            .collect::<Vec<Value>>()
    });
    for (id, command) in [
        (1, format!("sleep 600 # {m}")),
        (2, "sleep 1; echo finished".to_owned()),
    ] {
        let (_, body) = modern(
            id,
            "tools/call",
            json!({"name": "Bash", "arguments": {"command": command}}),
            None,
            None,
        );
        writeln!(stdin, "{body}").expect("write");
    }
    assert!(wait_for_process(&m, 30), "the command never started");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(child.id() as i32).expect("a pid"),
        rustix::process::Signal::TERM,
    )
    .expect("SIGTERM");
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().expect("status").is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = child.try_wait().expect("status");
    drop(stdin);
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
    let answers = reader.join().expect("the reader");
    let answer = |id: i64| answers.iter().find(|a| a["id"] == id).cloned();
    let finished = answer(2).unwrap_or_else(|| panic!("no answer to the quick call: {answers:#?}"));
    assert!(finished.to_string().contains("finished"), "{finished:#}");
    let cancelled =
        answer(1).unwrap_or_else(|| panic!("no answer to the cancelled call: {answers:#?}"));
    assert!(
        cancelled.get("result").is_some() || cancelled.get("error").is_some(),
        "{cancelled:#}"
    );
    assert_eq!(
        survivors(&m, 10),
        Vec::<u32>::new(),
        "the command outlived serve"
    );
}

/// A client that closes the pipe of `serve` over stdio mid-command: serve ends and leaves
/// no process (over HTTP, a client going away mid-call is tools-mcp's `tests/it/http.rs`).
#[test]
fn a_client_that_closes_stdin_mid_command_leaves_no_process() {
    let project = Project::new(&[]);
    let m = marker("disconnect-stdio");
    let mut child = project
        .command(&["serve", "--allow", "Bash"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn agent-tools serve");
    let mut stdin = child.stdin.take().expect("stdin");
    let (_, body) = modern(
        1,
        "tools/call",
        json!({"name": "Bash", "arguments": {"command": format!("sleep 600 # {m}")}}),
        None,
        None,
    );
    writeln!(stdin, "{body}").expect("write");
    assert!(wait_for_process(&m, 30), "the command never started");
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().expect("status").is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        child.try_wait().expect("status").is_some(),
        "serve outlived its client"
    );
    assert_eq!(
        survivors(&m, 10),
        Vec::<u32>::new(),
        "the command outlived serve"
    );
}

#[test]
fn sigterm_lets_calls_finish_then_leaves_no_process() {
    let project = Project::new(&[]);
    let mut server = HttpServer::start(&project, &["--allow", "Bash", "--grace", "3"]);
    let authority = server.authority().to_owned();
    let long = marker("sigterm-fg");
    let background = marker("sigterm-bg");
    // A background command in a minted context, and a foreground one that never ends.
    let mut conn = Conn::open(&authority);
    let args = json!({"command": format!("sleep 600 # {background}"), "run_in_background": true});
    let answer = call(&mut conn, 1, "Bash", args, None, Some("new"));
    assert_eq!(answer["result"]["isError"], false, "{answer:#}");
    let mut stuck = start_bash(&authority, &format!("sleep 600 # {long}"), None);
    assert!(wait_for_process(&long, 30) && wait_for_process(&background, 30));
    // A call that ends within the grace period.
    let quick = std::thread::spawn({
        let authority = authority.clone();
        move || {
            let mut conn = start_bash(&authority, "sleep 1.5; echo finished", Some("new"));
            conn.read()
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(server.child.id() as i32).expect("a pid"),
        rustix::process::Signal::TERM,
    )
    .expect("SIGTERM");
    let started = Instant::now();
    let mut status = None;
    while status.is_none() && started.elapsed() < Duration::from_secs(60) {
        status = server.child.try_wait().expect("status");
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = status.expect("serve did not stop within 60 s of SIGTERM");
    assert!(status.success(), "{status:?}");
    let finished = quick.join().expect("the quick call");
    assert!(
        finished.answer(1).to_string().contains("finished"),
        "{finished:#?}"
    );
    // The stuck call was cancelled and answered (or its connection closed).
    stuck.set_timeout(Duration::from_secs(5));
    assert_eq!(
        survivors(&long, 10),
        Vec::<u32>::new(),
        "a foreground command survived"
    );
    assert_eq!(
        survivors(&background, 10),
        Vec::<u32>::new(),
        "a background command survived"
    );
}
