//! The gate of the server over streamable HTTP, in process through a raw HTTP/1.1 client:
//! bearer tokens (401 with `WWW-Authenticate`, `/healthz` without), browser origins, each
//! token its own principal (its own default context, its own minted handles, its own legacy
//! sessions), malformed messages and an oversized body answered with JSON-RPC errors, and
//! a client that goes away mid-call leaving no process of the call behind; the Python SDK's
//! client and the inspector CLI served, each legacy session with a fresh context; a minted
//! context with a ledger of its own, named in every result; an Edit that asks, approved or
//! declined through the client's elicitation.

use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use test_support::http::{Conn, call, legacy_headers, legacy_session, modern, text};
use test_support::mcp::run_client;
use test_support::peers::peer;
use test_support::procs::{marker, survivors, wait_for_process};
use tool_core::{
    PathField, PermissionMode, ReadRecord, ReadSource, Tool, ToolCategory, ToolContext, ToolError,
    ToolMeta, ToolPool, ToolResult, Typed, TypedTool, content_hash,
};
use tools_mcp::{HttpOptions, SessionFactory, tokens_from_text};

use crate::http_errors::authority;
use crate::server::{Sleep, contexts_in, serve_options};

/// Input of [`Read`]
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReadInput {
    file_path: PathBuf,
}

/// Returns a file's text and records in the context's ledger that it was read.
struct Read;

#[async_trait]
impl TypedTool for Read {
    type Input = ReadInput;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Read")
        .category(ToolCategory::FileSystem)
        .read_only();
    async fn call(
        &self,
        input: ReadInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<String>, ToolError> {
        let path = input.file_path;
        let bytes = std::fs::read(&path).map_err(|e| ToolError::io(&path, e))?;
        ctx.ledger().record(
            &path,
            ReadRecord {
                content_hash: Some(content_hash(&bytes)),
                mtime: None,
                len: bytes.len() as u64,
                offset: None,
                limit: None,
                partial_view: false,
                source: ReadSource::Read,
            },
        );
        Ok(ToolResult::ok(String::from_utf8_lossy(&bytes).into_owned()))
    }
}

/// Input of [`Edit`]
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EditInput {
    file_path: PathBuf,
    old_string: String,
    new_string: String,
}

/// Replaces a string in a file that this context's [`Read`] read and that did not change
/// since, as the real Edit does; the Edit rules apply to its `file_path` (it asks in the
/// default mode).
struct Edit;

#[async_trait]
impl TypedTool for Edit {
    type Input = EditInput;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Edit")
        .category(ToolCategory::FileSystem)
        .path_fields(&[PathField::write("file_path")]);
    async fn call(
        &self,
        input: EditInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<String>, ToolError> {
        let path = input.file_path;
        let Some(record) = ctx.ledger().get(&path) else {
            return Err(ToolError::respond(format!(
                "File has not been read yet: {}. Read it first before writing to it.",
                path.display()
            )));
        };
        let old = std::fs::read_to_string(&path).map_err(|e| ToolError::io(&path, e))?;
        if record.content_hash != Some(content_hash(old.as_bytes())) {
            return Err(ToolError::respond(format!(
                "File has been modified since read: {}. Read it again before attempting to write it.",
                path.display()
            )));
        }
        let new = old.replacen(&input.old_string, &input.new_string, 1);
        std::fs::write(&path, &new).map_err(|e| ToolError::io(&path, e))?;
        ctx.ledger().record(
            &path,
            ReadRecord {
                content_hash: Some(content_hash(new.as_bytes())),
                source: ReadSource::Write,
                len: new.len() as u64,
                ..record
            },
        );
        Ok(ToolResult::ok("edited".to_owned()))
    }
}

const TOKEN_A: &str = "token-a-0123456789abcdef";
const TOKEN_B: &str = "token-b-fedcba9876543210";

/// A factory of contexts in `root` (mode acceptEdits, Sleep allowed) with their state in
/// `root/state`.
fn factory(root: &std::path::Path) -> SessionFactory {
    let root = root.to_path_buf();
    Arc::new(move |_: &tools_mcp::Principal| {
        Ok(ToolContext::builder(&root)
            .state_dir(root.join("state"))
            .mode(PermissionMode::AcceptEdits)
            .allow("Sleep")
            .build())
    })
}

fn pool() -> ToolPool {
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Typed::new(Read)),
        Arc::new(Typed::new(Edit)),
        Arc::new(Typed::new(Sleep)),
    ];
    ToolPool::new(tools)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_origins_and_the_state_of_each_principal() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let notes = root.join("notes.txt");
    std::fs::write(&notes, "alpha\n").unwrap();
    let mut options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    // What `--token-file` reads: a comment, then one token per line.
    options.tokens = tokens_from_text(
        &format!("# two clients\n{TOKEN_A}\n{TOKEN_B}\n"),
        "tokens",
        1,
    )
    .unwrap();
    assert_eq!(options.tokens.len(), 2);
    let (url, shutdown, server) = serve_options(factory(&root), pool(), options).await;
    let authority = authority(&url);
    tokio::task::spawn_blocking(move || {
        let authority = authority.as_str();
        let mut conn = Conn::open(authority);
        let list = |token: Option<&str>| modern(1, "tools/list", json!({}), token, None);

        // /healthz needs no token; /mcp does.
        let health = conn.send("GET", "/healthz", &[], "");
        assert_eq!(
            (health.status, health.body.as_str()),
            (200, r#"{"status":"ok"}"#)
        );
        // A refusal closes the connection (the body was not read): each gets its own.
        for token in [None, Some("token-c-0123456789abcdef"), Some("token-a")] {
            let (headers, body) = list(token);
            let response = Conn::open(authority).send("POST", "/mcp", &headers, &body);
            assert_eq!(response.status, 401, "{token:?}: {response:#?}");
            assert!(
                response
                    .header("www-authenticate")
                    .is_some_and(|v| v.starts_with("Bearer"))
            );
            assert!(
                response.body.contains("Authorization: Bearer"),
                "{response:#?}"
            );
        }
        let (headers, body) = list(Some(TOKEN_A));
        assert_eq!(conn.send("POST", "/mcp", &headers, &body).status, 200);
        let (headers, body) = list(Some(TOKEN_B));
        assert_eq!(conn.send("POST", "/mcp", &headers, &body).status, 200);

        // A foreign Origin is refused even with a token; a loopback one passes.
        for (origin, status) in [
            ("http://evil.example", 403),
            ("http://localhost.evil.example:8080", 403),
            ("null", 403),
            ("http://localhost:6274", 200),
            ("http://127.0.0.1", 200),
        ] {
            let (mut headers, body) = list(Some(TOKEN_A));
            headers.push(("Origin", origin.to_owned()));
            let response = Conn::open(authority).send("POST", "/mcp", &headers, &body);
            assert_eq!(response.status, status, "{origin}: {response:#?}");
        }

        // Each token is its own principal with its own default context: B cannot edit on
        // the strength of A's read, and A's minted handle means nothing to B.
        let read = call(
            &mut conn,
            2,
            "Read",
            json!({"file_path": notes}),
            Some(TOKEN_A),
            None,
        );
        assert_eq!(read["result"]["isError"], false, "{read:#}");
        let edit = json!({"file_path": notes, "old_string": "alpha", "new_string": "omega"});
        let by_b = call(&mut conn, 3, "Edit", edit.clone(), Some(TOKEN_B), None);
        assert_eq!(by_b["result"]["isError"], true, "{by_b:#}");
        assert!(text(&by_b).contains("has not been read"), "{by_b:#}");
        let minted = call(
            &mut conn,
            4,
            "Read",
            json!({"file_path": notes}),
            Some(TOKEN_A),
            Some("new"),
        );
        let handle = minted["result"]["_meta"]["agent-tools/context"]
            .as_str()
            .expect("a minted handle")
            .to_owned();
        let stolen = call(
            &mut conn,
            5,
            "Edit",
            edit.clone(),
            Some(TOKEN_B),
            Some(&handle),
        );
        assert_eq!(stolen["error"]["code"], -32602, "{stolen:#}");
        assert!(
            stolen["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("no context"),
            "{stolen:#}"
        );
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "alpha\n");
        let own = call(&mut conn, 6, "Edit", edit, Some(TOKEN_A), Some(&handle));
        assert_eq!(own["result"]["isError"], false, "{own:#}");
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "omega\n");

        // A legacy session belongs to the token that opened it.
        let session = legacy_session(&mut conn, Some(TOKEN_A)).expect("a session");
        let tools_list = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).to_string();
        let response = Conn::open(authority).send(
            "POST",
            "/mcp",
            &legacy_headers(&session, Some(TOKEN_B)),
            &tools_list,
        );
        assert_eq!(response.status, 404, "{response:#?}");
        let response = Conn::open(authority).send(
            "DELETE",
            "/mcp",
            &legacy_headers(&session, Some(TOKEN_B)),
            "",
        );
        assert_eq!(response.status, 404, "{response:#?}");
        let response = conn.send(
            "POST",
            "/mcp",
            &legacy_headers(&session, Some(TOKEN_A)),
            &tools_list,
        );
        assert_eq!(response.status, 200, "{response:#?}");
        let response = conn.send(
            "DELETE",
            "/mcp",
            &legacy_headers(&session, Some(TOKEN_A)),
            "",
        );
        assert_eq!(response.status, 204, "{response:#?}");
        // Without its token, no legacy session at all.
        let refused = legacy_session(&mut Conn::open(authority), None)
            .expect_err("no legacy session without a token");
        assert_eq!(refused.status, 401, "{refused:#?}");
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_and_an_oversized_body_get_json_rpc_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    options.max_body_bytes = 4096;
    let (url, shutdown, server) = serve_options(factory(dir.path()), pool(), options).await;
    let authority = authority(&url);
    tokio::task::spawn_blocking(move || {
        let mut conn = Conn::open(&authority);
        let headers = [
            ("Content-Type", "application/json".to_owned()),
            ("Accept", "application/json, text/event-stream".to_owned()),
        ];
        let bad_args = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"Read","arguments":"str"}}"#;
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{{"name":"Read","arguments":{{"file_path":"{}"}}}}}}"#,
            "x".repeat(5000)
        );
        for (body, status, code, id) in [
            ("{", 400, -32700, Value::Null),
            ("not json at all", 400, -32700, Value::Null),
            ("[1, 2]", 400, -32600, Value::Null),
            (bad_args, 200, -32602, json!(7)),
            (big.as_str(), 413, -32600, Value::Null),
        ] {
            let response = conn.send("POST", "/mcp", &headers, body);
            assert_eq!(response.status, status, "{body:.60}: {response:#?}");
            let message: Value = serde_json::from_str(&response.body).expect("a JSON-RPC error");
            assert_eq!(message["error"]["code"], code, "{message:#}");
            assert_eq!(message["id"], id, "{message:#}");
            assert_eq!(message["jsonrpc"], "2.0");
            if status == 413 {
                // The server reads no more than the cap; the connection is not reusable.
                conn = Conn::open(&authority);
            }
        }
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_call_leaves_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    let (url, shutdown, server) = serve_options(factory(dir.path()), pool(), options).await;
    let authority = authority(&url);
    tokio::task::spawn_blocking(move || {
        // Protocol 2026-07-28: closing the response is the cancellation.
        let m = marker("disconnect-modern");
        let mut conn = Conn::open(&authority);
        let (headers, body) = modern(
            1,
            "tools/call",
            json!({"name": "Sleep", "arguments": {"marker": m}}),
            None,
            None,
        );
        conn.write("POST", "/mcp", &headers, &body);
        assert!(wait_for_process(&m, 30), "the command never started");
        drop(conn);
        assert_eq!(
            survivors(&m, 20),
            Vec::<u32>::new(),
            "the command outlived its client"
        );

        // A legacy session: the session's end (DELETE) ends its calls.
        let m = marker("disconnect-legacy");
        let mut conn = Conn::open(&authority);
        let session = legacy_session(&mut conn, None).expect("a session");
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "Sleep", "arguments": {"marker": m}}});
        let mut call = Conn::open(&authority);
        call.write(
            "POST",
            "/mcp",
            &legacy_headers(&session, None),
            &body.to_string(),
        );
        assert!(wait_for_process(&m, 30), "the command never started");
        drop(call);
        let response = conn.send("DELETE", "/mcp", &legacy_headers(&session, None), "");
        assert_eq!(response.status, 204, "{response:#?}");
        assert_eq!(
            survivors(&m, 20),
            Vec::<u32>::new(),
            "the command outlived its session"
        );
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}

/// Runs the inspector CLI of `peers` with `args` in `dir` (also its `HOME`) and parses its
/// JSON output.
fn inspector(peers: &std::path::Path, dir: &std::path::Path, args: &[&str]) -> Value {
    let output = std::process::Command::new(peers.join("node_modules/.bin/mcp-inspector"))
        .arg("--cli")
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run mcp-inspector");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "inspector failed: {}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_client_and_inspector_over_http() {
    let (Some(peers), Some(_)) = (peer("py/mcp"), peer("node_modules/.bin/mcp-inspector")) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let file = root.join("notes.txt");
    std::fs::write(&file, "alpha\n").unwrap();
    let options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    let (url, shutdown, server) = serve_options(factory(&root), pool(), options).await;
    tokio::task::spawn_blocking(move || {
        let scenario = json!({
            "transport": {"http": url},
            "steps": [
                {"op": "call", "tool": "Read", "args": {"file_path": file}},
                {"op": "call", "tool": "Edit", "args": {"file_path": file, "old_string": "alpha", "new_string": "omega"}},
                {"op": "call", "tool": "Read", "args": {"file_path": file}},
            ],
        });
        let lines = run_client(&peers, &scenario);
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert_eq!(lines[0]["is_error"], false, "{lines:#?}");
        assert!(
            lines[0]["text"].as_str().unwrap().contains("alpha"),
            "{lines:#?}"
        );
        assert_eq!(
            lines[1]["is_error"], false,
            "Edit after Read in one session: {lines:#?}"
        );
        assert!(
            lines[2]["text"].as_str().unwrap().contains("omega"),
            "{lines:#?}"
        );

        let listed = inspector(
            &peers,
            &root,
            &[&url, "--transport", "http", "--method", "tools/list"],
        );
        let names: Vec<&str> = listed["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        assert!(
            names.contains(&"Read") && names.contains(&"Edit"),
            "{names:?}"
        );

        // A second session starts fresh: the Edit needs its own Read first.
        let scenario = json!({
            "transport": {"http": url},
            "steps": [{"op": "call", "tool": "Edit", "args": {"file_path": file, "old_string": "omega", "new_string": "x"}}],
        });
        let lines = run_client(&peers, &scenario);
        assert_eq!(lines[0]["is_error"], true, "{lines:#?}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "omega\n");
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_minted_context_is_separate_and_named_in_every_result() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let notes = root.join("notes.txt");
    std::fs::write(&notes, "alpha\n").unwrap();
    let options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    let (url, shutdown, server) = serve_options(factory(&root), pool(), options).await;
    tokio::task::spawn_blocking(move || {
        let read = json!({"op": "call", "tool": "Read", "args": {"file_path": notes}});
        let edit = |to: &str| {
            json!({"op": "call", "tool": "Edit",
                   "args": {"file_path": notes, "old_string": "alpha", "new_string": to}})
        };
        let mut in_new = read.clone();
        in_new["context"] = json!("new");
        let mut edit_in_last = edit("omega");
        edit_in_last["context"] = json!("last");
        // The SDK's high-level client on protocol 2026-07-28.
        let scenario = json!({
            "transport": {"http": url},
            "mode": "auto",
            "steps": [
                read,          // the default context reads the file
                in_new,        // a new context reads it too
                edit_in_last,  // and edits it: its own ledger knows the read
                edit("gamma"), // the default context's read is stale now
            ],
        });
        let lines = run_client(&peers, &scenario);
        assert_eq!(lines[0]["context"], "default", "{lines:#?}");
        let minted = lines[1]["context"].as_str().unwrap_or_default();
        assert_eq!(minted.len(), 32, "{lines:#?}");
        assert_eq!(lines[2]["context"], minted, "{lines:#?}");
        assert_eq!(lines[2]["is_error"], false, "{lines:#?}");
        assert_eq!(lines[3]["is_error"], true, "{lines:#?}");
        assert!(
            lines[3]["text"].as_str().unwrap_or("").contains("modified"),
            "{lines:#?}"
        );
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "omega\n");
        // A handle that does not exist says what to send instead.
        let scenario = json!({
            "transport": {"http": url},
            "mode": "auto",
            "steps": [{"op": "call", "tool": "Read", "args": {"file_path": notes},
                       "context": "0123456789abcdef0123456789abcdef"}],
        });
        let output = std::process::Command::new("python3")
            .arg(test_support::mcp::client())
            .arg(scenario.to_string())
            .env("PYTHONPATH", peers.join("py"))
            .output()
            .expect("run python3");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success());
        assert!(
            stderr.contains("send \\\"new\\\"") || stderr.contains("send \"new\""),
            "{stderr}"
        );
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_is_approved_or_declined_through_elicitation() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let notes = root.join("notes.txt");
    // The default mode: Edit asks.
    let (url, shutdown, server) = serve_options(
        contexts_in(&root),
        pool(),
        HttpOptions::new("127.0.0.1:0".parse().unwrap()),
    )
    .await;
    tokio::task::spawn_blocking(move || {
        let steps = json!([
            {"op": "call", "tool": "Read", "args": {"file_path": notes}},
            {"op": "call", "tool": "Edit",
             "args": {"file_path": notes, "old_string": "alpha", "new_string": "omega"}},
            {"op": "call", "tool": "Read", "args": {"file_path": notes}},
        ]);
        // A legacy session (the SDK's ClientSession) whose client accepts: asked once.
        std::fs::write(&notes, "alpha\n").unwrap();
        let scenario = json!({"transport": {"http": url}, "elicit": "accept", "steps": steps});
        let lines = run_client(&peers, &scenario);
        assert_eq!(lines[1]["is_error"], false, "{lines:#?}");
        assert!(
            lines[2]["text"].as_str().unwrap().contains("omega"),
            "{lines:#?}"
        );
        let asked = lines[3]["elicited"].as_array().expect("elicited");
        assert_eq!(asked.len(), 1, "{asked:#?}");
        assert!(
            asked[0].as_str().unwrap().contains("Allow Edit"),
            "{asked:#?}"
        );
        // Declining refuses the call with a message the model can read.
        std::fs::write(&notes, "alpha\n").unwrap();
        let scenario = json!({"transport": {"http": url}, "elicit": "decline", "steps": steps});
        let lines = run_client(&peers, &scenario);
        assert_eq!(lines[1]["is_error"], true, "{lines:#?}");
        assert!(
            lines[1]["text"].as_str().unwrap().contains("declined"),
            "{lines:#?}"
        );
        assert_eq!(std::fs::read_to_string(&notes).unwrap(), "alpha\n");
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}
