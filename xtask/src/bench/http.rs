//! The `mcp-http` benchmark: `tools/call` throughput over streamable HTTP with keep-alive
//! connections, 8 sessions at once, through one raw HTTP/1.1 client written here (so client
//! cost is the same on both sides).
//!
//! Ours: `Read` of a 20-line file through `agent-tools serve --http`, as protocol
//! 2026-07-28 requests (stateless, `_meta` per request) and as legacy sessions
//! (`initialize`, `Mcp-Session-Id`, SSE answers). Baseline: server-everything's `echo` over
//! its streamable HTTP transport (legacy sessions, SSE answers). Each timed run makes
//! [`CALLS`] calls per session; the table shows the wall time per call, and the lines
//! before it calls per second, the median and 99th percentile latency, and the server's CPU
//! time per call (which other load on the machine does not inflate).

use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::{Comparison, Ctx, median};
use crate::cmd::Cmd;

/// Sessions (keep-alive connections) at once.
const SESSIONS: usize = 8;
/// Calls per session in a timed run.
const CALLS: usize = 500;
/// Lines of the file Read reads (a small file: the call's cost, not the payload's; the
/// `mcp-read` benchmark reads a large one).
const LINES: usize = 20;

/// The protocol era of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Era {
    /// 2026-07-28: no session, `_meta` on every request
    Stateless,
    /// `initialize`, then `Mcp-Session-Id` on every request
    Session,
}

/// What one call sends: the tool and its arguments as JSON text.
#[derive(Clone)]
struct Workload {
    tool: &'static str,
    /// Arguments by session (cycled), then alternating by call: a context that reads the
    /// same range twice in a row gets a "file unchanged" stub, not the file
    args: Vec<[String; 2]>,
    /// Text the answer must contain
    expect: String,
}

impl Workload {
    fn args(&self, session: usize, id: usize) -> &str {
        &self.args[session % self.args.len()][id % 2]
    }
}

/// One timed run: the wall time and every call's latency.
struct Run {
    wall: Duration,
    latencies: Vec<Duration>,
}

/// A keep-alive connection.
pub(super) struct Conn {
    reader: BufReader<TcpStream>,
    authority: String,
    session: Option<String>,
    token: Option<String>,
}

impl Conn {
    pub(super) fn open(authority: &str) -> Result<Self> {
        let stream =
            TcpStream::connect(authority).with_context(|| format!("connect {authority}"))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Conn {
            reader: BufReader::new(stream),
            authority: authority.to_owned(),
            session: None,
            token: None,
        })
    }

    /// The same connection presenting `token` (a principal of its own) on every request.
    pub(super) fn with_token(mut self, token: &str) -> Self {
        self.token = Some(token.to_owned());
        self
    }

    fn line(&mut self) -> Result<String> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            bail!("the server closed the connection");
        }
        Ok(line.trim_end_matches(['\r', '\n']).to_owned())
    }

    /// POSTs `body` to /mcp with `headers`; the status, the session header and the body.
    fn post(&mut self, headers: &str, body: &str) -> Result<(u16, Option<String>, String)> {
        self.send("POST", headers, body)
    }

    /// Ends the legacy session (`DELETE /mcp`).
    pub(super) fn delete(&mut self) -> Result<()> {
        let (status, _, body) = self.send("DELETE", "MCP-Protocol-Version: 2025-11-25\r\n", "")?;
        self.session = None;
        if !(200..300).contains(&status) {
            bail!("DELETE failed ({status}): {body}");
        }
        Ok(())
    }

    /// One `tools/call` of `tool` with `args` (JSON text) at protocol `version` (legacy
    /// versions on this connection's session; 2026-07-28 with `_meta`, in the context
    /// `handle` names); the answer's JSON text, which must not be an error.
    pub(super) fn call_tool(
        &mut self,
        version: &str,
        tool: &str,
        args: &str,
        handle: Option<&str>,
    ) -> Result<String> {
        let (headers, body) = if version >= "2026-07-28" {
            let context = handle
                .map(|h| format!(r#","agent-tools/context":"{h}""#))
                .unwrap_or_default();
            (
                format!(
                    "MCP-Protocol-Version: {version}\r\nMcp-Method: tools/call\r\nMcp-Name: {tool}\r\n"
                ),
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{args},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{version}","io.modelcontextprotocol/clientInfo":{{"name":"bench","version":"1"}},"io.modelcontextprotocol/clientCapabilities":{{}}{context}}}}}}}"#
                ),
            )
        } else {
            (
                format!("MCP-Protocol-Version: {version}\r\n"),
                format!(
                    r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
                ),
            )
        };
        let (status, _, answer) = self.post(&headers, &body)?;
        // A legacy answer comes as server-sent events: the JSON is on a `data:` line.
        let json = answer
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|l| l.starts_with('{'))
            .unwrap_or(answer.trim())
            .to_owned();
        if status != 200 || json.contains("\"isError\":true") || !json.contains("\"result\"") {
            bail!(
                "{tool} failed ({status}): {}",
                json.chars().take(400).collect::<String>()
            );
        }
        Ok(json)
    }

    /// Sends one request to /mcp; the status, the session header and the body.
    fn send(
        &mut self,
        method: &str,
        headers: &str,
        body: &str,
    ) -> Result<(u16, Option<String>, String)> {
        let mut head = format!(
            "{method} /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n{headers}",
            self.authority,
            body.len()
        );
        if let Some(session) = &self.session {
            let _ = write!(head, "Mcp-Session-Id: {session}\r\n");
        }
        if let Some(token) = &self.token {
            let _ = write!(head, "Authorization: Bearer {token}\r\n");
        }
        head.push_str("\r\n");
        head.push_str(body);
        self.reader.get_mut().write_all(head.as_bytes())?;
        let status_line = self.line()?;
        let status: u16 = status_line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .with_context(|| format!("no status in {status_line:?}"))?;
        let (mut length, mut chunked, mut session) = (None, false, None);
        loop {
            let line = self.line()?;
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
                match k.as_str() {
                    "content-length" => length = v.parse::<usize>().ok(),
                    "transfer-encoding" => chunked = v.contains("chunked"),
                    "mcp-session-id" => session = Some(v.to_owned()),
                    _ => {}
                }
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let size =
                    usize::from_str_radix(self.line()?.trim(), 16).context("a chunk size")?;
                if size == 0 {
                    self.line()?;
                    break;
                }
                let mut chunk = vec![0; size];
                self.reader.read_exact(&mut chunk)?;
                body.extend(chunk);
                self.line()?;
            }
        } else if let Some(len) = length {
            body.resize(len, 0);
            self.reader.read_exact(&mut body)?;
        }
        Ok((status, session, String::from_utf8_lossy(&body).into_owned()))
    }

    /// Opens a legacy session on this connection.
    pub(super) fn initialize(&mut self) -> Result<()> {
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
        let (status, session, body) = self.post("", init)?;
        if status != 200 || session.is_none() {
            bail!("initialize failed ({status}): {body}");
        }
        self.session = session;
        let (status, _, body) = self.post(
            "MCP-Protocol-Version: 2025-11-25\r\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        )?;
        if status != 202 {
            bail!("notifications/initialized failed ({status}): {body}");
        }
        Ok(())
    }

    /// One `tools/call`; fails unless the answer is a success containing `expect`.
    fn call(&mut self, era: Era, session: usize, id: usize, work: &Workload) -> Result<()> {
        let args = work.args(session, id);
        let (headers, body) = match era {
            Era::Stateless => (
                format!(
                    "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: {}\r\n",
                    work.tool
                ),
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{}","arguments":{},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{{"name":"bench","version":"1"}},"io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#,
                    work.tool, args
                ),
            ),
            Era::Session => (
                "MCP-Protocol-Version: 2025-11-25\r\n".to_owned(),
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{}","arguments":{}}}}}"#,
                    work.tool, args
                ),
            ),
        };
        let (status, _, answer) = self.post(&headers, &body)?;
        let ok = answer.contains(&format!("\"id\":{id}"))
            && !answer.contains("\"isError\":true")
            && answer.contains(&work.expect);
        if status != 200 || !ok {
            bail!(
                "call {id} failed ({status}): {}",
                answer.chars().take(400).collect::<String>()
            );
        }
        Ok(())
    }
}

/// [`SESSIONS`] sessions at once, each making `calls` calls on its own connection.
fn load(authority: &str, era: Era, work: &Workload, calls: usize) -> Result<Run> {
    let mut conns = Vec::with_capacity(SESSIONS);
    for _ in 0..SESSIONS {
        let mut conn = Conn::open(authority)?;
        if era == Era::Session {
            conn.initialize()?;
        }
        conns.push(conn);
    }
    let started = Instant::now();
    let results: Vec<Result<Vec<Duration>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = conns
            .into_iter()
            .enumerate()
            .map(|(session, mut conn)| {
                scope.spawn(move || {
                    let mut latencies = Vec::with_capacity(calls);
                    for id in 1..=calls {
                        let t = Instant::now();
                        conn.call(era, session, id, work)?;
                        latencies.push(t.elapsed());
                    }
                    Ok(latencies)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("a client thread panicked")))
            })
            .collect()
    });
    let wall = started.elapsed();
    let mut latencies = Vec::with_capacity(SESSIONS * calls);
    for result in results {
        latencies.extend(result?);
    }
    Ok(Run { wall, latencies })
}

/// The `q` quantile of `times` (sorted in place).
fn quantile(times: &mut [Duration], q: f64) -> Duration {
    if times.is_empty() {
        return Duration::ZERO;
    }
    times.sort_unstable();
    let index = ((times.len() - 1) as f64 * q).round() as usize;
    times[index.min(times.len() - 1)]
}

/// A server process, killed on drop.
pub(super) struct Server(pub(super) Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `authority` accepts connections.
pub(super) fn wait_listening(authority: &str, child: &mut Child) -> Result<()> {
    for _ in 0..600 {
        if TcpStream::connect(authority).is_ok() {
            return Ok(());
        }
        if let Some(status) = child.try_wait()? {
            bail!("the server exited before listening ({status})");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    bail!("nothing listens at {authority} after 30 s")
}

/// A free loopback port.
pub(super) fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// CPU time (user and system) process `pid` has used so far (Linux; zero elsewhere).
fn cpu_time(pid: u32) -> Duration {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name (which may contain spaces) start at state (3rd).
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15, here at 11 and 12; clock ticks are 1/100 s.
    Duration::from_millis((ticks(11) + ticks(12)) * 10)
}

/// Timed runs of one side: one warm-up, then `runs`; the median wall time per call, and
/// every latency of the timed runs.
fn measure(
    authority: &str,
    era: Era,
    work: &Workload,
    runs: usize,
) -> Result<(Duration, Vec<Duration>)> {
    load(authority, era, work, CALLS / 5)?;
    let mut walls = Vec::with_capacity(runs);
    let mut latencies = Vec::new();
    for _ in 0..runs {
        let run = load(authority, era, work, CALLS)?;
        walls.push(run.wall / (SESSIONS * CALLS) as u32);
        latencies.extend(run.latencies);
    }
    Ok((median(walls), latencies))
}

fn describe(label: &str, per_call: Duration, latencies: &mut [Duration]) -> String {
    let rate = if per_call.is_zero() {
        f64::INFINITY
    } else {
        1.0 / per_call.as_secs_f64()
    };
    format!(
        "  {label}: {rate:.0} calls/s, p50 {:.2} ms, p99 {:.2} ms",
        quantile(latencies, 0.5).as_secs_f64() * 1000.0,
        quantile(latencies, 0.99).as_secs_f64() * 1000.0
    )
}

/// Our Read over HTTP (both eras) against server-everything's echo over HTTP.
pub fn mcp_http(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let everything = crate::peers::peers_dir()?.join("node_modules/.bin/mcp-server-everything");
    if !everything.is_file() {
        bail!(
            "mcp-server-everything is not installed at {}: run `cargo xtask peers`",
            everything.display()
        );
    }
    let root = ctx.scratch.join("mcp-http");
    let home = ctx.scratch.join("mcp-http-home");
    fs::create_dir_all(&root).context("cannot create the scratch dir")?;
    fs::create_dir_all(&home).context("cannot create the state dir")?;
    let root = root
        .canonicalize()
        .context("cannot resolve the scratch dir")?;
    let mut text = String::new();
    for i in 0..LINES {
        let _ = writeln!(
            text,
            "fn line_{i}(x: u64) -> u64 {{ x.wrapping_mul({i}).rotate_left(7) ^ 0x5eed }}"
        );
    }
    // A file per session, read whole by each call (two limits alternate).
    let mut read_args = Vec::with_capacity(SESSIONS);
    for session in 0..SESSIONS {
        let file = root.join(format!("sample-{session}.rs"));
        fs::write(&file, &text).context("cannot write a sample file")?;
        let path = super::mcp::serde_quote(&file.display().to_string());
        read_args
            .push([1000, 2000].map(|limit| format!("{{\"file_path\":{path},\"limit\":{limit}}}")));
    }
    let read = Workload {
        tool: "Read",
        args: read_args,
        expect: format!("line_{}", LINES - 1),
    };
    let message = r#"{"message":"hello from the benchmark"}"#.to_owned();
    let echo = Workload {
        tool: "echo",
        args: vec![[message.clone(), message]],
        expect: "hello from the benchmark".to_owned(),
    };

    let port = free_port()?;
    let ours_addr = format!("127.0.0.1:{port}");
    let mut ours = Cmd::new(&ctx.bin)
        .arg("--cwd")
        .arg(&root)
        // No token: the server compared against has none, so both do the same work.
        .args(["serve", "--http", &ours_addr, "--no-auth"])
        .env("AGENT_TOOLS_HOME", &home)
        .to_command()?;
    let mut ours = Server(
        ours.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start agent-tools serve --http")?,
    );
    wait_listening(&ours_addr, &mut ours.0)?;

    let port = free_port()?;
    let theirs_addr = format!("127.0.0.1:{port}");
    let mut theirs = Cmd::new(&everything)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .to_command()?;
    let mut theirs = Server(
        theirs
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot start mcp-server-everything")?,
    );
    wait_listening(&theirs_addr, &mut theirs.0)?;

    let calls = (SESSIONS * CALLS * ctx.runs + SESSIONS * (CALLS / 5)) as u32;
    let cpu = |pid: u32, before: Duration| (cpu_time(pid).saturating_sub(before)) / calls;
    let before = cpu_time(ours.0.id());
    let (stateless, mut stateless_lat) = measure(&ours_addr, Era::Stateless, &read, ctx.runs)?;
    let stateless_cpu = cpu(ours.0.id(), before);
    let before = cpu_time(ours.0.id());
    let (session, mut session_lat) = measure(&ours_addr, Era::Session, &read, ctx.runs)?;
    let session_cpu = cpu(ours.0.id(), before);
    let before = cpu_time(theirs.0.id());
    let (baseline, mut baseline_lat) = measure(&theirs_addr, Era::Session, &echo, ctx.runs)?;
    let baseline_cpu = cpu(theirs.0.id(), before);
    println!("mcp-http: {SESSIONS} keep-alive sessions × {CALLS} calls per run");
    let lines = [
        (
            "Read, 2026-07-28",
            stateless,
            &mut stateless_lat,
            stateless_cpu,
        ),
        (
            "Read, legacy sessions",
            session,
            &mut session_lat,
            session_cpu,
        ),
        (
            "server-everything echo",
            baseline,
            &mut baseline_lat,
            baseline_cpu,
        ),
    ];
    for (label, per_call, latencies, cpu) in lines {
        println!(
            "{}, server CPU {} µs per call",
            describe(label, per_call, latencies),
            cpu.as_micros()
        );
    }
    println!(
        "  ratio ours/baseline per call: {:.2} (2026-07-28), {:.2} (legacy sessions)",
        stateless.as_secs_f64() / baseline.as_secs_f64().max(f64::MIN_POSITIVE),
        session.as_secs_f64() / baseline.as_secs_f64().max(f64::MIN_POSITIVE)
    );
    let case = |era: &str| {
        format!("tools/call Read ({era}) vs echo, {SESSIONS} keep-alive sessions (wall per call)")
    };
    Ok(vec![
        Comparison {
            case: case("2026-07-28"),
            ours: stateless,
            baseline,
            baseline_label: "server-everything".to_owned(),
            baseline_command: "server-everything's `echo` over its streamable HTTP, 8 legacy sessions, the same raw client".to_owned(),
        },
        Comparison {
            case: case("legacy sessions"),
            ours: session,
            baseline,
            baseline_label: "server-everything".to_owned(),
            baseline_command: "server-everything's `echo` over its streamable HTTP, 8 legacy sessions, the same raw client".to_owned(),
        },
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_latencies() {
        let mut times: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(quantile(&mut times, 0.5), Duration::from_millis(51));
        assert_eq!(quantile(&mut times, 0.99), Duration::from_millis(99));
        assert_eq!(quantile(&mut [], 0.5), Duration::ZERO);
    }

    #[test]
    fn the_description_names_rate_and_latencies() {
        let mut lat = vec![Duration::from_micros(500); 10];
        let text = describe("x", Duration::from_micros(200), &mut lat);
        assert!(text.contains("5000 calls/s"), "{text}");
        assert!(text.contains("p50 0.50 ms"), "{text}");
    }

    #[test]
    fn the_stateless_request_is_one_json_rpc_message() {
        let work = Workload {
            tool: "Read",
            args: vec![[
                r#"{"file_path":"/x"}"#.to_owned(),
                r#"{"file_path":"/y"}"#.to_owned(),
            ]],
            expect: String::new(),
        };
        assert_eq!(work.args(5, 3), r#"{"file_path":"/y"}"#);
        // The body a stateless call sends, rebuilt as `call` builds it.
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"{}","arguments":{},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{{"name":"bench","version":"1"}},"io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#,
            3,
            work.tool,
            work.args(0, 0)
        );
        let opens = body.matches('{').count();
        let closes = body.matches('}').count();
        assert_eq!(opens, closes, "{body}");
        assert!(body.ends_with("}}}}"), "{body}");
    }
}
