//! What `agent-tools serve --http` answers to requests it cannot take: JSON-RPC error
//! objects in every body (400, 404, 405, 406, 415 included, as the streamable HTTP
//! transport describes), and `-32601` "Method not found" naming an unknown method.

use serde_json::{Value, json};

use crate::Project;
use crate::serve::HttpServer;
use crate::serve_http::Conn;

const JSON: (&str, &str) = ("Content-Type", "application/json");
const ACCEPT: (&str, &str) = ("Accept", "application/json, text/event-stream");

fn headers(extra: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    [JSON, ACCEPT]
        .iter()
        .chain(extra)
        .map(|(k, v)| (*k, (*v).to_owned()))
        .collect()
}

#[test]
fn refusals_are_json_rpc_errors_and_unknown_methods_are_named() {
    let project = Project::new(&[]);
    let server = HttpServer::start(&project, &[]);
    let mut conn = Conn::open(server.authority());
    let list = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}).to_string();
    let check = |response: crate::serve_http::Response, status: u16, code: i64, needle: &str| {
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
    let mut conn = Conn::open(server.authority());
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
    let mut conn = Conn::open(server.authority());
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
    let mut conn = Conn::open(server.authority());
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
    let mut conn = Conn::open(server.authority());
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
}

fn response_session(response: &crate::serve_http::Response) -> String {
    response
        .header("mcp-session-id")
        .expect("mcp-session-id")
        .to_owned()
}
