//! A raw HTTP/1.1 client for tests of the MCP server over streamable HTTP (tools-mcp's in
//! process, the binary's `serve --http`): [`Conn`], one kept-alive connection that sends
//! any request, well-formed or not, and reads [`Response`]s; [`modern`] builds a JSON-RPC
//! request of protocol 2026-07-28 with its headers, [`call`] sends one `tools/call` of it;
//! [`legacy_session`] opens a session of the 2025-11-25 protocol and [`legacy_headers`]
//! are the headers of a request in it. [`healthz`] and [`closed_within`] watch the server's
//! health check and its closing of connections.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

/// One HTTP response.
#[derive(Debug)]
pub struct Response {
    /// The status code
    pub status: u16,
    headers: Vec<(String, String)>,
    /// The body, decoded as UTF-8 (lossily)
    pub body: String,
}

impl Response {
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The JSON-RPC messages of the body: the JSON body, or the `data:` lines of an SSE
    /// stream.
    pub fn messages(&self) -> Vec<Value> {
        if let Ok(value) = serde_json::from_str::<Value>(&self.body) {
            return vec![value];
        }
        self.body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect()
    }

    /// The message that answers request `id`.
    #[track_caller]
    pub fn answer(&self, id: u64) -> Value {
        self.messages()
            .into_iter()
            .find(|m| m["id"] == json!(id))
            .unwrap_or_else(|| panic!("no answer to {id} in {self:#?}"))
    }
}

/// A keep-alive HTTP/1.1 connection.
pub struct Conn {
    reader: BufReader<TcpStream>,
    authority: String,
}

impl Conn {
    /// Connects to `authority` (`host:port`), with a read timeout of two minutes.
    pub fn open(authority: &str) -> Self {
        let stream = TcpStream::connect(authority).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .expect("timeout");
        Conn {
            reader: BufReader::new(stream),
            authority: authority.to_owned(),
        }
    }

    /// Sends one request and reads its whole response.
    pub fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &str,
    ) -> Response {
        self.write(method, path, headers, body);
        self.read()
    }

    /// Sends one request without reading the answer.
    pub fn write(&mut self, method: &str, path: &str, headers: &[(&str, String)], body: &str) {
        self.write_bytes(method, path, headers, body.as_bytes());
    }

    /// Sends one request whose body is any bytes, without reading the answer.
    pub fn write_bytes(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
            self.authority,
            body.len()
        );
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let stream = self.reader.get_mut();
        // The server may answer (and close) before the whole body is written.
        let _ = stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(body));
    }

    /// How long a read may wait.
    pub fn set_timeout(&mut self, limit: Duration) {
        self.reader
            .get_mut()
            .set_read_timeout(Some(limit))
            .expect("timeout");
    }

    /// The connection's socket.
    pub fn into_stream(self) -> TcpStream {
        self.reader.into_inner()
    }

    fn try_line(&mut self) -> std::io::Result<String> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        Ok(line.trim_end_matches(['\r', '\n']).to_owned())
    }

    /// Reads one whole response; panics when there is none.
    #[track_caller]
    pub fn read(&mut self) -> Response {
        self.try_read().expect("a response")
    }

    /// Reads one whole response.
    pub fn try_read(&mut self) -> std::io::Result<Response> {
        let status_line = self.try_line()?;
        let status = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| std::io::Error::other(format!("no status in {status_line:?}")))?;
        let mut headers = Vec::new();
        loop {
            let line = self.try_line()?;
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.push((k.trim().to_owned(), v.trim().to_owned()));
            }
        }
        let find = |name: &str| {
            headers
                .iter()
                .find(|(k, _): &&(String, String)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.clone())
        };
        let mut body = Vec::new();
        if find("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
            loop {
                let size = usize::from_str_radix(self.try_line()?.trim(), 16)
                    .map_err(std::io::Error::other)?;
                if size == 0 {
                    self.try_line()?;
                    break;
                }
                let mut chunk = vec![0; size];
                self.reader.read_exact(&mut chunk)?;
                body.extend(chunk);
                self.try_line()?;
            }
        } else if let Some(len) = find("content-length").and_then(|v| v.parse::<usize>().ok()) {
            body.resize(len, 0);
            self.reader.read_exact(&mut body)?;
        }
        Ok(Response {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        })
    }
}

/// A JSON-RPC request of protocol 2026-07-28 (`_meta` and the standard headers), with the
/// bearer `token` and the context `handle` when given.
pub fn modern(
    id: u64,
    method: &str,
    mut params: Value,
    token: Option<&str>,
    handle: Option<&str>,
) -> (Vec<(&'static str, String)>, String) {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    if let Some(handle) = handle {
        meta["agent-tools/context"] = json!(handle);
    }
    params["_meta"] = meta;
    let mut headers = vec![
        ("Content-Type", "application/json".to_owned()),
        ("Accept", "application/json, text/event-stream".to_owned()),
        ("MCP-Protocol-Version", "2026-07-28".to_owned()),
        ("Mcp-Method", method.to_owned()),
    ];
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        headers.push(("Mcp-Name", name.to_owned()));
    }
    if let Some(token) = token {
        headers.push(("Authorization", format!("Bearer {token}")));
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    (headers, body.to_string())
}

/// A `tools/call` of protocol 2026-07-28 on `conn`, with the bearer `token` and the context
/// `handle` when given; the answer (the status must be 200).
#[track_caller]
pub fn call(
    conn: &mut Conn,
    id: u64,
    tool: &str,
    args: Value,
    token: Option<&str>,
    handle: Option<&str>,
) -> Value {
    let (headers, body) = modern(
        id,
        "tools/call",
        json!({"name": tool, "arguments": args}),
        token,
        handle,
    );
    let response = conn.send("POST", "/mcp", &headers, &body);
    assert_eq!(response.status, 200, "{response:#?}");
    response.answer(id)
}

/// The text blocks of a `tools/call` answer, one per line.
pub fn text(answer: &Value) -> String {
    answer["result"]["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A legacy session (protocol 2025-11-25): `initialize` and `notifications/initialized`
/// with the bearer `token` when given; the session id, or the response that named none.
pub fn legacy_session(conn: &mut Conn, token: Option<&str>) -> Result<String, Response> {
    let mut headers = vec![
        ("Content-Type", "application/json".to_owned()),
        ("Accept", "application/json, text/event-stream".to_owned()),
    ];
    if let Some(token) = token {
        headers.push(("Authorization", format!("Bearer {token}")));
    }
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"}}});
    let response = conn.send("POST", "/mcp", &headers, &init.to_string());
    let Some(id) = response.header("mcp-session-id").map(str::to_owned) else {
        return Err(response);
    };
    headers.push(("Mcp-Session-Id", id.clone()));
    headers.push(("MCP-Protocol-Version", "2025-11-25".to_owned()));
    let done = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = conn.send("POST", "/mcp", &headers, &done.to_string());
    assert_eq!(response.status, 202, "{response:#?}");
    Ok(id)
}

/// The headers of a request in legacy session `session`, with the bearer `token` when given.
pub fn legacy_headers(session: &str, token: Option<&str>) -> Vec<(&'static str, String)> {
    let mut headers = vec![
        ("Content-Type", "application/json".to_owned()),
        ("Accept", "application/json, text/event-stream".to_owned()),
        ("MCP-Protocol-Version", "2025-11-25".to_owned()),
        ("Mcp-Session-Id", session.to_owned()),
    ];
    if let Some(token) = token {
        headers.push(("Authorization", format!("Bearer {token}")));
    }
    headers
}

/// `GET /healthz` on a new connection: the status, or `None` when no answer came within
/// `limit`.
pub fn healthz(authority: &str, limit: Duration) -> Option<u16> {
    let mut stream = TcpStream::connect(authority).ok()?;
    stream.set_read_timeout(Some(limit)).ok()?;
    write!(
        stream,
        "GET /healthz HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).ok()?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Reads from `stream` until it is closed: `true` if it closed within `limit`.
pub fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    let started = std::time::Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("timeout");
    let mut buf = [0u8; 1024];
    while started.elapsed() < limit {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return true,
        }
    }
    false
}
