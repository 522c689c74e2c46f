//! What the server over streamable HTTP answers to requests it cannot take, in process
//! through a raw HTTP/1.1 client: JSON-RPC error objects in every body (400, 404, 405, 406,
//! 415 included, as the streamable HTTP transport describes), and `-32601` "Method not
//! found" naming an unknown method; a foreign `Host` refused; an unknown or ended legacy
//! session answered 404 so that clients start again; generated bad bodies (random bytes,
//! deep, oversized, malformed JSON-RPC) each answered with a JSON-RPC message.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use test_support::fuzz::{Case, Rng, answer_all, bad_bodies};
use test_support::http::{Conn, Response, healthz, modern};
use tool_core::{Tool, ToolPool, Typed};
use tools_mcp::HttpOptions;

use crate::server::{Sleep, contexts_in, serve, serve_options};

const JSON: (&str, &str) = ("Content-Type", "application/json");
const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");

fn headers(extra: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    [JSON, ACCEPT]
        .iter()
        .chain(extra)
        .map(|(k, v)| (*k, (*v).to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_are_json_rpc_errors_and_unknown_methods_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let (url, shutdown, server) = serve(Vec::new(), dir.path()).await;
    let authority = authority(&url);
    tokio::task::spawn_blocking(move || {
        let mut conn = Conn::open(&authority);
        let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}).to_string();
        let check = |response: Response, status: u16, code: i64, needle: &str| {
            assert_eq!(response.status, status, "{response:#?}");
            let message: Value = serde_json::from_str(&response.body)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {response:#?}"));
            assert_eq!(message["jsonrpc"], "2.0", "{message}");
            assert_eq!(message["error"]["code"], code, "{message}");
            assert!(
                message["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(needle)),
                "{needle}: {message}"
            );
        };
        // No session id on a legacy request, an unknown one, a GET without a session.
        check(
            conn.send("POST", "/mcp", &headers(&[]), &list),
            400,
            -32000,
            "Session ID is required",
        );
        let mut conn = Conn::open(&authority);
        check(
            conn.send(
                "POST",
                "/mcp",
                &headers(&[("Mcp-Session-Id", "nope")]),
                &list,
            ),
            404,
            -32001,
            "Session not found",
        );
        let mut conn = Conn::open(&authority);
        check(
            conn.send(
                "GET",
                "/mcp",
                &[("Accept", "text/event-stream".to_owned())],
                "",
            ),
            400,
            -32000,
            "Session ID is required",
        );
        // A client that accepts only one of the two content types.
        let mut conn = Conn::open(&authority);
        check(
            conn.send(
                "POST",
                "/mcp",
                &[
                    ("Content-Type", "application/json".to_owned()),
                    ("Accept", "text/plain".to_owned()),
                ],
                &list,
            ),
            406,
            -32000,
            "Not Acceptable",
        );
        // An unknown method in a session: -32601 naming it.
        let mut conn = Conn::open(&authority);
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
        let response = conn.send("POST", "/mcp", &headers(&[]), &init.to_string());
        assert_eq!(response.status, 200, "{response:#?}");
        let session = response_session(&response);
        let in_session = headers(&[
            ("Mcp-Session-Id", &session),
            ("MCP-Protocol-Version", "2025-11-25"),
        ]);
        let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(
            conn.send("POST", "/mcp", &in_session, &done.to_string())
                .status,
            202
        );
        let unknown = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/frobnicate", "params": {}});
        let answer = conn
            .send("POST", "/mcp", &in_session, &unknown.to_string())
            .answer(9);
        assert_eq!(answer["error"]["code"], -32601, "{answer}");
        assert_eq!(
            answer["error"]["message"], "Method not found: tools/frobnicate",
            "{answer}"
        );
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}

fn response_session(response: &Response) -> String {
    response
        .header("mcp-session-id")
        .expect("mcp-session-id")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_host_headers_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (url, shutdown, server) = serve(Vec::new(), dir.path()).await;
    let authority = authority(&url);
    tokio::task::spawn_blocking(move || {
    let authority = authority.as_str();
    let status = |host: &str| -> String {
        let mut stream = std::net::TcpStream::connect(authority).expect("connect");
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        write!(
            stream,
            "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("write");
        let mut response = String::new();
        let _ = stream.read_to_string(&mut response);
        response.lines().next().unwrap_or("").to_owned()
    };
    let foreign = status("evil.example");
    assert!(
        foreign.contains(" 403") || foreign.contains(" 400"),
        "{foreign}"
    );
    let local = status(authority);
    assert!(!local.contains(" 403"), "{local}");
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}

/// One raw HTTP/1.1 exchange with the server at `authority`: the status line, and the
/// value of the `mcp-session-id` header when there is one.
fn exchange(
    authority: &str,
    method: &str,
    session: Option<&str>,
    body: &str,
) -> (String, Option<String>) {
    let mut stream = std::net::TcpStream::connect(authority).expect("connect");
    let session = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "{method} /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-06-18\r\n{session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response.lines().next().unwrap_or("").to_owned();
    let id = response
        .lines()
        .take_while(|l| !l.is_empty())
        .find_map(|l| {
            l.split_once(':')
                .filter(|(k, _)| k.eq_ignore_ascii_case("mcp-session-id"))
                .map(|(_, v)| v.trim().to_owned())
        });
    (status, id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_or_ended_session_is_answered_404_so_clients_start_again() {
    let dir = tempfile::tempdir().unwrap();
    let (url, shutdown, server) = serve(Vec::new(), dir.path()).await;
    let authority = authority(&url);
    tokio::task::spawn_blocking(move || {
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    let (status, _) = exchange(&authority, "POST", Some("no-such-session"), list);
    assert!(status.contains(" 404"), "{status}");

    // A session that existed and was ended is unknown too.
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let (status, id) = exchange(&authority, "POST", None, init);
    assert!(status.contains(" 200"), "{status}");
    let id = id.expect("initialize names the session");
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (status, _) = exchange(&authority, "POST", Some(&id), initialized);
    assert!(status.contains(" 202"), "{status}");
    let (status, _) = exchange(&authority, "POST", Some(&id), list);
    assert!(status.contains(" 200"), "{status}");
    // The Python SDK treats anything but 200 and 204 as a failed termination.
    let (status, _) = exchange(&authority, "DELETE", Some(&id), "");
    assert!(status.contains(" 204"), "{status}");
    let (status, _) = exchange(&authority, "POST", Some(&id), list);
    assert!(status.contains(" 404"), "{status}");
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_bad_bodies_get_json_rpc_answers() {
    let dir = tempfile::tempdir().unwrap();
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Typed::new(Sleep))];
    let mut options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    // Below the oversized body's 5 MB.
    options.max_body_bytes = 4 << 20;
    let (url, shutdown, server) =
        serve_options(contexts_in(dir.path()), ToolPool::new(tools), options).await;
    let authority = authority(&url);
    tokio::task::spawn_blocking(move || {
        let (headers, _) = modern(0, "tools/list", json!({}), None, None);
        let cases: Vec<Case> = bad_bodies(&mut Rng(0x5eed_f1ee7))
            .into_iter()
            .map(|(label, body)| (label, headers.clone(), body))
            .collect();
        let total = cases.len();
        let failures = answer_all(&authority, cases);
        assert!(
            failures.is_empty(),
            "{} of {total} bad bodies were not answered as they should be:\n{}",
            failures.len(),
            failures.join("\n")
        );
        assert_eq!(healthz(&authority, Duration::from_secs(5)), Some(200));
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}

/// The `host:port` of a server's URL.
pub fn authority(url: &str) -> String {
    url.trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned()
}
