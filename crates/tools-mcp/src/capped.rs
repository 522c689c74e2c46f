//! Limits on what a stdio server sends: [`Capped`] reads the server's output line by line
//! (one JSON-RPC message per line) and passes on each message within
//! [`ServerConfig::max_message_bytes`](crate::ServerConfig::max_message_bytes) and
//! [`MAX_MESSAGE_DEPTH`] levels of nesting as it arrives. A message over either limit is
//! never held whole: the part passed on is spoiled (so the JSON-RPC reader drops it), the
//! rest is read and dropped while a small scanner notes the message's top-level `id` and
//! whether it has a `method`, and a response is replaced by an error response for the same
//! id that names the server and the limit — the call it answers ends at once instead of
//! waiting for its timeout. The host keeps at most one message's limit of it in memory.
//! [`stdio_transport`] starts a server with this reader in front of rmcp's line reader.

use std::pin::Pin;
use std::task::{Context, Poll};

use rmcp::RoleClient;
use rmcp::transport::async_rw::AsyncRwTransport;
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{ChildStdin, ChildStdout};

/// The deepest nesting of arrays and objects a server's message may have, counting the
/// JSON-RPC envelope (below the JSON reader's own limit of 128, which would drop the
/// message without a word).
pub const MAX_MESSAGE_DEPTH: usize = 100;

/// The most bytes of a message's top-level `id` the scanner keeps.
const MAX_ID_BYTES: usize = 256;

/// How much is read from the server at a time.
const CHUNK: usize = 64 * 1024;

/// Which top-level key's value the scanner is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Id,
    Method,
    Other,
}

/// A byte-at-a-time scanner of one JSON text: nesting depth, strings, and the top-level
/// `id` (kept raw) and `method` keys. It keeps a bounded amount of state whatever it reads.
#[derive(Debug, Default)]
struct Scan {
    depth: usize,
    in_string: bool,
    escape: bool,
    /// At depth 1, the next string is a key
    expect_key: bool,
    /// The string being read is a key
    in_key: bool,
    key: Vec<u8>,
    value: Option<Key>,
    /// The raw `id` value so far (a number, or a string with its quotes)
    id: Vec<u8>,
    id_ok: bool,
    has_method: bool,
}

impl Scan {
    fn new() -> Self {
        Scan {
            id_ok: true,
            ..Scan::default()
        }
    }

    fn keep_id(&mut self, b: u8) {
        if self.id.len() < MAX_ID_BYTES {
            self.id.push(b);
        } else {
            self.id_ok = false;
        }
    }

    fn feed(&mut self, b: u8) {
        let at_top = self.depth == 1;
        if self.in_string {
            if self.in_key {
                if self.escape || (b != b'"' && b != b'\\') {
                    if self.key.len() < 8 {
                        self.key.push(b);
                    } else {
                        self.key.push(b'?');
                        self.key.truncate(9);
                    }
                }
            } else if at_top && self.value == Some(Key::Id) {
                self.keep_id(b);
            }
            if self.escape {
                self.escape = false;
                return;
            }
            match b {
                b'\\' => self.escape = true,
                b'"' => {
                    self.in_string = false;
                    if self.in_key {
                        self.in_key = false;
                        self.value = Some(match self.key.as_slice() {
                            b"id" => Key::Id,
                            b"method" => Key::Method,
                            _ => Key::Other,
                        });
                        if self.value == Some(Key::Method) {
                            self.has_method = true;
                        }
                        if self.value == Some(Key::Id) {
                            self.id.clear();
                        }
                    }
                }
                _ => {}
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if at_top && self.expect_key {
                    self.in_key = true;
                    self.expect_key = false;
                    self.key.clear();
                } else if at_top && self.value == Some(Key::Id) {
                    self.keep_id(b);
                }
            }
            b'{' | b'[' => {
                if at_top && self.value == Some(Key::Id) {
                    self.id_ok = false;
                }
                self.depth += 1;
                self.expect_key = self.depth == 1 && b == b'{';
            }
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
            }
            b',' if at_top => {
                self.expect_key = true;
                self.value = None;
            }
            b' ' | b'\t' | b'\r' | b':' => {}
            _ => {
                if at_top && self.value == Some(Key::Id) {
                    self.keep_id(b);
                }
            }
        }
    }

    /// The message's `id` when it is a response (no `method`) with a number or string id.
    fn response_id(&self) -> Option<serde_json::Value> {
        if self.has_method || !self.id_ok {
            return None;
        }
        match serde_json::from_slice::<serde_json::Value>(&self.id).ok()? {
            id @ (serde_json::Value::Number(_) | serde_json::Value::String(_)) => Some(id),
            _ => None,
        }
    }
}

/// Why a message was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Over {
    Size,
    Depth,
}

/// A server's output with each message held to a size and a nesting limit (see the module
/// documentation).
pub(crate) struct Capped<R> {
    inner: R,
    server: String,
    limit: usize,
    depth_limit: usize,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    /// Bytes to hand out before anything else (a spoiler, a replacement line)
    pending: Vec<u8>,
    pending_at: usize,
    scan: Scan,
    line_len: usize,
    /// The current message broke a limit: the rest of its line is dropped
    over: Option<Over>,
}

impl<R> Capped<R> {
    pub(crate) fn new(inner: R, server: &str, limit: usize, depth_limit: usize) -> Self {
        Capped {
            inner,
            server: server.to_owned(),
            limit,
            depth_limit,
            buf: vec![0; CHUNK].into_boxed_slice(),
            start: 0,
            end: 0,
            pending: Vec::new(),
            pending_at: 0,
            scan: Scan::new(),
            line_len: 0,
            over: None,
        }
    }

    /// The line that replaces a refused message: an error response for its id, or nothing
    /// (a request or notification is dropped; the server's own timeout ends it).
    fn replacement(&self, over: Over) -> Vec<u8> {
        let Some(id) = self.scan.response_id() else {
            return Vec::new();
        };
        let why = match over {
            Over::Size => format!(
                "MCP server \"{}\" sent a message larger than {} bytes, its limit (maxMessageBytes in .mcp.json, or MCP_MAX_MESSAGE_BYTES); the message was dropped without being read whole and this call ended",
                self.server, self.limit
            ),
            Over::Depth => format!(
                "MCP server \"{}\" sent a message nested more than {} levels deep, the limit; the message was dropped and this call ended",
                self.server, self.depth_limit
            ),
        };
        let message = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32603, "message": why},
        });
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        line
    }

    /// Looks at the buffered input: how many of its bytes are used up now, how many of
    /// those are passed on (at most `room`), and whether the line ended there.
    fn step(&mut self, room: usize) -> (usize, usize, bool) {
        let avail = self.end - self.start;
        for i in 0..avail {
            if self.over.is_none() && i >= room {
                return (i, i, false);
            }
            let b = self.buf[self.start + i];
            if b == b'\n' {
                let passed = if self.over.is_some() { 0 } else { i + 1 };
                return (i + 1, passed, true);
            }
            self.scan.feed(b);
            self.line_len += 1;
            if self.over.is_none() {
                let over = if self.line_len > self.limit {
                    Some(Over::Size)
                } else if self.scan.depth > self.depth_limit {
                    Some(Over::Depth)
                } else {
                    None
                };
                if over.is_some() {
                    // Pass on what came before this byte; the rest of the line is dropped.
                    self.over = over;
                    return (i + 1, i, false);
                }
            }
        }
        let passed = if self.over.is_some() { 0 } else { avail };
        (avail, passed, false)
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Capped<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.pending_at < this.pending.len() {
                let n = out.remaining().min(this.pending.len() - this.pending_at);
                out.put_slice(&this.pending[this.pending_at..this.pending_at + n]);
                this.pending_at += n;
                if this.pending_at == this.pending.len() {
                    this.pending.clear();
                    this.pending_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.start == this.end {
                let mut read = ReadBuf::new(&mut this.buf);
                match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Ready(Ok(())) => {
                        let n = read.filled().len();
                        if n == 0 {
                            return Poll::Ready(Ok(()));
                        }
                        this.start = 0;
                        this.end = n;
                    }
                }
            }
            let was_over = this.over.is_some();
            let (used, passed, line_end) = this.step(out.remaining());
            out.put_slice(&this.buf[this.start..this.start + passed]);
            this.start += used;
            if !was_over && this.over.is_some() {
                // The partial line passed on must not parse: a NUL makes it invalid JSON
                // whatever it held, and the newline ends it.
                this.pending.extend_from_slice(b"\0\n");
            }
            if line_end {
                if let Some(over) = this.over {
                    let line = this.replacement(over);
                    this.pending.extend(line);
                }
                this.scan = Scan::new();
                this.line_len = 0;
                this.over = None;
            }
            if passed > 0 {
                return Poll::Ready(Ok(()));
            }
        }
    }
}

/// The transport of a stdio server: its output through [`Capped`] into rmcp's line reader
/// (whose own limit is set just above ours, so what [`Capped`] passes always fits).
pub(crate) fn stdio_transport(
    stdout: ChildStdout,
    stdin: ChildStdin,
    server: &str,
    limit: usize,
) -> AsyncRwTransport<RoleClient, Capped<ChildStdout>, ChildStdin> {
    AsyncRwTransport::new_client(Capped::new(stdout, server, limit, MAX_MESSAGE_DEPTH), stdin)
        .with_max_line_length(limit.saturating_add(1024))
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncReadExt;

    use super::*;

    /// What `input` becomes through a [`Capped`] with `limit` bytes and `depth` levels,
    /// read with a buffer of `chunk` bytes.
    async fn through(input: &[u8], limit: usize, depth: usize, chunk: usize) -> Vec<u8> {
        let mut capped = Capped::new(input, "demo", limit, depth);
        let mut out = Vec::new();
        let mut buf = vec![0; chunk];
        loop {
            let n = capped.read(&mut buf).await.unwrap();
            if n == 0 {
                return out;
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    fn lines(out: &[u8]) -> Vec<String> {
        String::from_utf8_lossy(out)
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[tokio::test]
    async fn messages_within_the_limits_pass_unchanged() {
        let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":[1,2,{\"b\":\"}\\\"]\"}]}}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\n";
        for chunk in [1, 3, 7, 4096] {
            assert_eq!(through(input, 100, 10, chunk).await, input);
        }
    }

    #[tokio::test]
    async fn an_oversized_response_becomes_an_error_for_its_id() {
        // The id after the big part, as the TypeScript SDK writes responses.
        let big = format!(
            "{{\"result\":{{\"text\":\"{}\"}},\"jsonrpc\":\"2.0\",\"id\":\"req-7\"}}\n{{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{{}}}}\n",
            "x".repeat(5000)
        );
        for chunk in [1, 64, 100_000] {
            let out = through(big.as_bytes(), 1000, 10, chunk).await;
            let lines = lines(&out);
            assert_eq!(lines.len(), 3, "{lines:?}");
            assert!(lines[0].ends_with('\0') && lines[0].len() <= 1001);
            let error: serde_json::Value = serde_json::from_str(&lines[1]).unwrap();
            assert_eq!(error["id"], "req-7");
            let message = error["error"]["message"].as_str().unwrap();
            assert!(message.contains("\"demo\"") && message.contains("1000 bytes"));
            assert_eq!(lines[2], "{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}");
        }
    }

    #[tokio::test]
    async fn deep_nesting_and_oversized_requests() {
        let deep = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}{}}}\n",
            "[".repeat(50),
            "]".repeat(50)
        );
        let out = through(deep.as_bytes(), 10_000, 20, 7).await;
        let got = lines(&out);
        assert_eq!(got.len(), 2);
        let error: serde_json::Value = serde_json::from_str(&got[1]).unwrap();
        assert_eq!(error["id"], 3);
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("20 levels")
        );
        // At the limit it passes.
        let at = format!(
            "{{\"id\":4,\"result\":{}{}}}\n",
            "[".repeat(19),
            "]".repeat(19)
        );
        assert_eq!(through(at.as_bytes(), 10_000, 20, 5).await, at.as_bytes());
        // A request from the server (it has a method) is dropped, not answered as ours.
        let request = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"roots/list\",\"params\":{{\"p\":\"{}\"}}}}\n",
            "y".repeat(3000)
        );
        let out = through(request.as_bytes(), 1000, 20, 64).await;
        assert_eq!(lines(&out).len(), 1);
        // A key that only looks like "id" deeper down is not the message's id.
        let nested = format!(
            "{{\"result\":{{\"id\":99,\"t\":\"{}\"}},\"id\":6}}\n",
            "z".repeat(3000)
        );
        let out = through(nested.as_bytes(), 1000, 20, 64).await;
        let error: serde_json::Value = serde_json::from_str(&lines(&out)[1]).unwrap();
        assert_eq!(error["id"], 6);
    }
}
