//! `model-loop` against a stand-in for the Messages API: a small HTTP server on 127.0.0.1
//! that answers the first request with a `tool_use` of Glob and the second, which must
//! carry its `tool_result`, with a final text.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{command, run_ok};

/// Reads one HTTP request from `stream`: its request line and its JSON body.
fn read_request(stream: &TcpStream) -> (String, Value) {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).unwrap();
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).unwrap();
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap();
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    (request_line, serde_json::from_slice(&body).unwrap())
}

/// Answers with `body` as JSON and closes the connection.
fn respond(mut stream: TcpStream, body: &Value) {
    let body = body.to_string();
    write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\
         connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    stream.flush().unwrap();
}

/// The next connection, or `None` after a minute without one (the program ended early):
/// the test then fails on what was received instead of waiting forever.
fn accept(listener: &TcpListener) -> Option<TcpStream> {
    listener.set_nonblocking(true).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).unwrap();
                return Some(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
    None
}

/// The stand-in: two rounds, then the requests it received.
fn stand_in(listener: TcpListener) -> Vec<(String, Value)> {
    let mut received = Vec::new();
    let Some(stream) = accept(&listener) else {
        return received;
    };
    received.push(read_request(&stream));
    respond(
        stream,
        &json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "stand-in",
            "stop_reason": "tool_use",
            "content": [
                {"type": "text", "text": "Let me look for Rust files."},
                {"type": "tool_use", "id": "toolu_1", "name": "Glob",
                 "input": {"pattern": "**/*.rs"}},
            ],
        }),
    );
    let Some(stream) = accept(&listener) else {
        return received;
    };
    received.push(read_request(&stream));
    respond(
        stream,
        &json!({
            "id": "msg_2", "type": "message", "role": "assistant", "model": "stand-in",
            "stop_reason": "end_turn",
            "content": [{"type": "text", "text": "There is one: src/main.rs."}],
        }),
    );
    received
}

#[test]
fn runs_the_tool_the_model_asks_for_and_sends_the_result_back() {
    let project = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(project.path().join("src")).unwrap();
    std::fs::write(project.path().join("src/main.rs"), "fn main() {}\n").unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/messages", listener.local_addr().unwrap());
    let server = thread::spawn(move || stand_in(listener));

    let (stdout, _) = run_ok(
        command(
            env!("CARGO_BIN_EXE_model-loop"),
            project.path(),
            home.path(),
        )
        .arg(project.path())
        .arg("Which Rust files are there?")
        .env("MODEL_API_URL", &url)
        .env("MODEL_API_KEY", "test-key")
        .env_remove("MODEL_NAME"),
    );
    let received = server.join().unwrap();
    assert_eq!(received.len(), 2, "the stand-in got {received:?}\n{stdout}");

    // What the program printed: the model's text, the call, its result, the final answer.
    assert!(stdout.contains("tool call: Glob"), "{stdout}");
    assert!(stdout.contains("tool result: src/main.rs"), "{stdout}");
    assert!(
        stdout
            .trim_end()
            .ends_with("assistant: There is one: src/main.rs."),
        "{stdout}"
    );

    // The first request: the prompt and every tool's declaration in the Anthropic shape.
    let (line, first) = &received[0];
    assert!(line.starts_with("POST /v1/messages "), "{line}");
    assert_eq!(
        first["messages"][0]["content"],
        "Which Rust files are there?"
    );
    let tools = first["tools"].as_array().unwrap();
    let glob = tools.iter().find(|t| t["name"] == "Glob").unwrap();
    assert_eq!(glob["input_schema"]["type"], "object", "{glob}");
    assert!(glob["input_schema"]["properties"]["pattern"].is_object());
    for name in ["Read", "Edit", "Grep", "Write"] {
        assert!(tools.iter().any(|t| t["name"] == name), "{name}");
    }

    // The second: the conversation so far and the Glob's result under the call's id.
    let (_, second) = &received[1];
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 3, "{second}");
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(messages[1]["content"][1]["id"], "toolu_1");
    let result = &messages[2]["content"][0];
    assert_eq!(result["type"], "tool_result", "{result}");
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["content"], "src/main.rs");
}
