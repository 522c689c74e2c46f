//! Bad input for the MCP server over streamable HTTP (tools-mcp's in process, the binary's
//! `serve --http`): a fixed-seed generator ([`Rng`]), the protocol-level bodies no server
//! should choke on ([`bad_bodies`]), and [`answer_all`], which sends requests from a few
//! threads and says which were not answered as a bad input should be ([`acceptable`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::http::{Conn, Response};

/// A fixed-seed generator (xorshift64*).
pub struct Rng(pub u64);

impl Rng {
    /// The next number.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// A string of `len` characters from a mix of ASCII, path punctuation, controls and
    /// wider characters (never a shell's space, so no generated text is a runnable
    /// command line with arguments).
    pub fn text(&mut self, len: usize) -> String {
        const PIECES: &[&str] = &[
            "a", "Z", "0", "/", ".", "..", "*", "?", "[", "{", "}", "\\", "\"", "'", "$", "é",
            "日", "🙂", "\u{0}", "\u{7}", "\n", "-", "~", "%s", "(", "|",
        ];
        (0..len).map(|_| PIECES[self.below(PIECES.len())]).collect()
    }
}

/// One generated request: a label, the headers and the body.
pub type Case = (String, Vec<(&'static str, String)>, Vec<u8>);

/// Bodies that are not well-formed requests, each with a label: 100 of random bytes (from
/// `rng`), deep and oversized (5 MB) ones, deep arguments, and malformed JSON-RPC.
pub fn bad_bodies(rng: &mut Rng) -> Vec<(String, Vec<u8>)> {
    let mut bodies = Vec::new();
    for i in 0..100 {
        let len = rng.below(2_000);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
        bodies.push((format!("random #{i}"), bytes));
    }
    let deep = "[".repeat(100_000);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"Read","arguments":{{"file_path":"{}"}}}}}}"#,
        "a".repeat(5 << 20)
    );
    let deep_args = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"Read","arguments":{{"file_path":{}"x"{}}}}}}}"#,
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    for (label, body) in [
        ("deep", deep),
        ("oversized", big),
        ("deep arguments", deep_args),
        ("empty", String::new()),
        (
            "batch",
            "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]".to_owned(),
        ),
        ("no method", r#"{"jsonrpc":"2.0","id":1}"#.to_owned()),
        (
            "wrong version",
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#.to_owned(),
        ),
        (
            "params not an object",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}"#.to_owned(),
        ),
    ] {
        bodies.push((label.to_owned(), body.into_bytes()));
    }
    bodies
}

/// Sends `body` (bytes) as a POST to /mcp on a new connection and reads the answer with a
/// 10 s bound: the response, or why there was none.
pub fn post_raw(
    authority: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Result<Response, String> {
    let mut conn = Conn::open(authority);
    conn.set_timeout(Duration::from_secs(10));
    conn.write_bytes("POST", "/mcp", headers, body);
    conn.try_read().map_err(|e| format!("no answer: {e}"))
}

/// Whether `response` is what a bad input may get: a JSON-RPC message (an error, or a
/// result — a tool's error result) under any status that is not a server failure.
pub fn acceptable(response: &Response) -> Result<(), String> {
    if response.status >= 500 && response.status != 503 {
        return Err(format!("status {}", response.status));
    }
    if response.status == 202 {
        // A notification: accepted, no body.
        return Ok(());
    }
    let messages = response.messages();
    if messages.is_empty() {
        return Err(format!(
            "no JSON-RPC body under {}: {:.300}",
            response.status, response.body
        ));
    }
    for m in &messages {
        if m["jsonrpc"] != "2.0" || !(m.get("result").is_some() || m.get("error").is_some()) {
            return Err(format!("not a JSON-RPC answer: {m:.300}"));
        }
    }
    Ok(())
}

/// Sends every case from four threads, each on its own connection: the cases not
/// answered as [`acceptable`] says, with why.
pub fn answer_all(authority: &str, cases: Vec<Case>) -> Vec<String> {
    let queue = Arc::new(Mutex::new(cases));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (queue, failures, authority) = (
                Arc::clone(&queue),
                Arc::clone(&failures),
                authority.to_owned(),
            );
            std::thread::spawn(move || {
                loop {
                    let next = queue.lock().expect("queue").pop();
                    let Some((label, headers, body)) = next else {
                        break;
                    };
                    let outcome =
                        post_raw(&authority, &headers, &body).and_then(|r| acceptable(&r));
                    if let Err(why) = outcome {
                        failures
                            .lock()
                            .expect("failures")
                            .push(format!("{label}: {why}"));
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("a worker");
    }
    failures.lock().expect("failures").clone()
}
