//! The `mcp-read` benchmark: a `tools/call` round trip of our `Read` (through
//! `agent-tools serve`) against `@modelcontextprotocol/server-filesystem`'s `read_text_file`,
//! on the same files, through the same minimal raw JSON-RPC client in python3 (so client cost
//! is equal on both sides). Every call reads another file of the same size (call `i` reads
//! `sample-i.rs` on both sides): repeating one Read would measure our "unchanged since last
//! read" note against the peer's whole file. The per-call time is (time of 1 + N calls −
//! time of 1 call) / N, which leaves out process and server start-up.

use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::{Comparison, Ctx};
use crate::cmd::Cmd;

/// Calls after the first, per measured run.
const CALLS: u32 = 200;

/// The raw client: starts the server (argv after `--`), initializes, then sends `count`
/// `tools/call` requests one after another, each waiting for its answer; call `i` takes the
/// `i`-th arguments of the JSON array given (cycled).
const RAW_CLIENT: &str = r#"
import json, subprocess, sys
tool, args_json, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
server = sys.argv[sys.argv.index("--") + 1:]
p = subprocess.Popen(server, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
def send(m):
    p.stdin.write((json.dumps(m) + "\n").encode()); p.stdin.flush()
def answer(i):
    while True:
        line = p.stdout.readline()
        if not line:
            sys.exit("the server closed its output")
        m = json.loads(line)
        if m.get("id") == i:
            return m
send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
answer(0)
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
args = json.loads(args_json)
for i in range(1, count + 1):
    send({"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": tool, "arguments": args[(i - 1) % len(args)]}})
    m = answer(i)
    r = m.get("result") or {}
    if "error" in m or r.get("isError"):
        sys.exit("call failed: " + json.dumps(m)[:500])
p.stdin.close(); p.wait(timeout=10)
"#;

fn client(script: &Path, tool: &str, args: &str, count: u32) -> Cmd {
    Cmd::new("python3")
        .arg(script)
        .arg(tool)
        .arg(args)
        .arg(count.to_string())
        .arg("--")
}

fn per_call(many: Duration, one: Duration) -> Duration {
    many.saturating_sub(one) / CALLS
}

/// Our `Read` against server-filesystem's `read_text_file`, per warm call.
pub fn mcp_read(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let fs_server = crate::peers::peers_dir()?.join("node_modules/.bin/mcp-server-filesystem");
    if !fs_server.is_file() {
        bail!(
            "mcp-server-filesystem is not installed at {}: run `cargo xtask peers`",
            fs_server.display()
        );
    }
    if crate::peers::which("python3").is_none() {
        bail!("python3 is needed for the raw MCP client");
    }
    let root = ctx.scratch.join("mcp-read");
    let home = ctx.scratch.join("mcp-read-home");
    fs::create_dir_all(&root).context("cannot create the scratch dir")?;
    fs::create_dir_all(&home).context("cannot create the state dir")?;
    let root = root
        .canonicalize()
        .context("cannot resolve the scratch dir")?;
    let script = ctx.scratch.join("mcp-raw-client.py");
    fs::write(&script, RAW_CLIENT).context("cannot write the raw client")?;
    let mut text = String::new();
    for i in 0..1000 {
        let _ = writeln!(
            text,
            "fn line_{i}(x: u64) -> u64 {{ x.wrapping_mul({i}).rotate_left(7) ^ 0x5eed }}"
        );
    }
    // One file per call, all of the same size.
    let mut ours_args = Vec::new();
    let mut theirs_args = Vec::new();
    for n in 0..=CALLS {
        let file = root.join(format!("sample-{n:03}.rs"));
        fs::write(&file, format!("// sample {n:03}\n{text}"))
            .context("cannot write the sample files")?;
        let path = serde_quote(&file.display().to_string());
        ours_args.push(format!("{{\"file_path\": {path}}}"));
        theirs_args.push(format!("{{\"path\": {path}}}"));
    }
    let ours_args = format!("[{}]", ours_args.join(","));
    let theirs_args = format!("[{}]", theirs_args.join(","));
    let ours = |count| {
        client(&script, "Read", &ours_args, count)
            .arg(&ctx.bin)
            .arg("--cwd")
            .arg(&root)
            .arg("serve")
            .env("AGENT_TOOLS_HOME", &home)
    };
    let theirs = |count| {
        client(&script, "read_text_file", &theirs_args, count)
            .arg(&fs_server)
            .arg(&root)
    };
    let one = ctx.compare("one", &ours(1), &theirs(1), "server-filesystem")?;
    let many = ctx.compare(
        "many",
        &ours(1 + CALLS),
        &theirs(1 + CALLS),
        "server-filesystem",
    )?;
    Ok(vec![Comparison {
        case: format!(
            "tools/call Read vs read_text_file, a different 1,000-line file each call (per call, {CALLS} after the first)"
        ),
        ours: per_call(many.ours, one.ours),
        baseline: per_call(many.baseline, one.baseline),
        baseline_label: "server-filesystem".to_owned(),
        baseline_command: "server-filesystem's `read_text_file` of the same files, in the same order, through the same raw client".to_owned(),
    }])
}

/// A JSON string literal for `text` (xtask has no serde).
pub(super) fn serde_quote(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
