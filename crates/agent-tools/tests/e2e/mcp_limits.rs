//! MCP servers' names and replies, through the binary against a small stdio MCP server
//! written here (JSON-RPC by hand, so the test decides every byte it sends): servers whose
//! names would make tool names ambiguous (`_` and `__` collisions) are refused naming both,
//! rules match by server boundary, replies at and over the size cap and the nesting limit
//! either arrive whole or end their call at once with an error naming the server and the
//! limit (the host's memory bounded by the cap), and a flood of `tools/list_changed`
//! notifications costs a few listings.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::{Project, peak_rss_kib, text};

/// A stdio MCP server: tools `ro`, `b__ro`, `big` (a reply of exactly `bytes` bytes, or
/// nested `depth` levels deep counting the envelope), `notify` (sends `count`
/// `tools/list_changed` notifications) and `listed` (how many `tools/list` it answered). It
/// leaves `started-<name>` in its directory when it starts.
const SERVER: &str = r#"
import json, os, sys
name = sys.argv[1]
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "started-" + name), "w").close()
out = sys.stdout
def send(obj):
    out.write(json.dumps(obj, separators=(",", ":")) + "\n"); out.flush()
listed = 0
tools = [{"name": n, "inputSchema": {"type": "object"}} for n in ("ro", "b__ro", "big", "notify", "listed")]
for line in sys.stdin:
    msg = json.loads(line)
    method, i = msg.get("method"), msg.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": i, "result": {"protocolVersion": msg["params"]["protocolVersion"],
              "capabilities": {"tools": {"listChanged": True}}, "serverInfo": {"name": name, "version": "1"}}})
    elif method == "tools/list":
        listed += 1
        send({"jsonrpc": "2.0", "id": i, "result": {"tools": tools}})
    elif method == "tools/call":
        tool, args = msg["params"]["name"], msg["params"].get("arguments") or {}
        if tool == "big" and "bytes" in args:
            head = '{"result":{"content":[{"type":"text","text":"'
            tail = '"}]},"jsonrpc":"2.0","id":' + json.dumps(i) + '}'
            pad = args["bytes"] - len(head) - len(tail)
            out.write(head)
            chunk = "x" * (1 << 20)
            while pad > 0:
                n = min(pad, len(chunk)); out.write(chunk[:n]); pad -= n
            out.write(tail + "\n"); out.flush()
        elif tool == "big":
            deep = "[" * (args["depth"] - 3) + "]" * (args["depth"] - 3)
            out.write('{"jsonrpc":"2.0","id":' + json.dumps(i) + ',"result":{"content":[{"type":"text","text":"deep"}],"_meta":{"deep":' + deep + '}}}\n')
            out.flush()
        elif tool == "notify":
            for _ in range(args["count"]):
                out.write('{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n')
            out.flush()
            send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": "sent"}]}})
        elif tool == "listed":
            send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": str(listed)}]}})
        else:
            send({"jsonrpc": "2.0", "id": i, "result": {"content": [{"type": "text", "text": name + ":" + tool}]}})
    elif i is not None:
        send({"jsonrpc": "2.0", "id": i, "error": {"code": -32601, "message": "no " + str(method)}})
"#;

/// A project whose `.mcp.json` starts the server above once per name in `servers` (with
/// `extra` keys in each entry), approved by a person.
fn project(servers: &[&str], extra: Value) -> Project {
    let project = Project::new(&[]);
    let script = project.root().join("server.py");
    std::fs::write(&script, SERVER).expect("server script");
    let mut entries = serde_json::Map::new();
    for name in servers {
        let mut entry = json!({"command": "python3", "args": [script, name]});
        if let (Some(e), Some(x)) = (entry.as_object_mut(), extra.as_object()) {
            e.extend(x.clone());
        }
        entries.insert((*name).to_owned(), entry);
    }
    std::fs::write(
        project.root().join(".mcp.json"),
        json!({"mcpServers": entries}).to_string(),
    )
    .expect(".mcp.json");
    project.trust();
    project
}

/// Servers with every kind of name collision: the later one of an ambiguous pair is
/// refused naming both and never starts; rules for one server never cover another's tools.
#[test]
fn ambiguous_server_names_are_refused_and_rules_stop_at_the_server() {
    // (servers, refused, [(allow rule, tool called, allowed)])
    type Case = (
        &'static [&'static str],
        &'static [&'static str],
        &'static [(&'static str, &'static str, bool)],
    );
    let cases: &[Case] = &[
        (
            &["a", "a__b"],
            &["a__b"],
            &[
                ("mcp__a", "mcp__a__b__ro", true),
                ("mcp__a", "mcp__a__ro", true),
            ],
        ),
        (
            &["a__b"],
            &[],
            &[
                ("mcp__a", "mcp__a__b__ro", false),
                ("mcp__a__*", "mcp__a__b__ro", false),
                ("mcp__a__b", "mcp__a__b__ro", true),
                ("mcp__a__b__*", "mcp__a__b__b__ro", true),
            ],
        ),
        (&["a", "a_"], &["a_"], &[("mcp__a", "mcp__a___ro", false)]),
        (
            &["a_", "a__"],
            &["a__"],
            &[("mcp__a_", "mcp__a___ro", true)],
        ),
        (
            &["my.server", "my_server"],
            &["my_server"],
            &[("mcp__my_server", "mcp__my_server__ro", true)],
        ),
        (
            &["a", "a_b"],
            &[],
            &[
                ("mcp__a", "mcp__a__ro", true),
                ("mcp__a", "mcp__a_b__ro", false),
                ("mcp__a_b", "mcp__a_b__ro", true),
            ],
        ),
        (
            &["a", "a___b"],
            &["a___b"],
            &[("mcp__a", "mcp__a___b__ro", false)],
        ),
        (
            &["x__y__z", "x"],
            &["x__y__z"],
            &[("mcp__x__y", "mcp__x__y__z__ro", false)],
        ),
    ];
    let mut count = 0;
    for (servers, refused, calls) in cases {
        let project = project(servers, json!({}));
        let list = project.run(&["list"], None);
        for name in *servers {
            let started = project.root().join(format!("started-{name}")).exists();
            assert_eq!(
                started,
                !refused.contains(name),
                "{servers:?}: {name} {list:#?}"
            );
        }
        for name in *refused {
            assert!(
                list.stderr
                    .contains(&format!("mcpServers.{name}: not started"))
                    && list.stderr.contains("rename one of"),
                "{servers:?}: {list:#?}"
            );
        }
        for (rule, tool, allowed) in *calls {
            count += 1;
            let run = project.run(&["--allow", rule, "call", tool, "{}"], None);
            let line = run.result();
            if *allowed {
                assert!(
                    line["is_error"] == false,
                    "{servers:?} {rule} {tool}: {line}"
                );
            } else {
                assert!(
                    line["is_error"] == true,
                    "{servers:?} {rule} {tool}: {line}"
                );
                let message = text(&line);
                assert!(
                    message.contains("MCP tools need approval")
                        || message.contains("Unknown tool")
                        || message.contains("rename one of"),
                    "{servers:?} {rule} {tool}: {message}"
                );
            }
        }
    }
    eprintln!(
        "MCP name variants: {} server sets, {count} calls",
        cases.len()
    );
}

/// Replies at and over the size cap (set per server with `maxMessageBytes`, and the 64 MiB
/// default) and the nesting limit: within, they arrive whole; over, the call ends with an
/// error naming the server and the limit, and the next call of the same server works.
#[test]
fn replies_at_and_over_the_limits() {
    let cap = 200_000_u64;
    let project = project(&["lim"], json!({"maxMessageBytes": cap}));
    let depth = 100_u64; // MAX_MESSAGE_DEPTH
    // (input of `big`, whether it arrives)
    let cases = [
        (json!({"bytes": cap - 1}), true),
        (json!({"bytes": cap}), true),
        (json!({"bytes": cap + 1}), false),
        (json!({"bytes": cap * 2}), false),
        (json!({"bytes": cap * 50}), false),
        (json!({"depth": depth - 1}), true),
        (json!({"depth": depth}), true),
        (json!({"depth": depth + 1}), false),
        (json!({"depth": 130}), false),
        (json!({"depth": 5000}), false),
    ];
    let calls: String = cases
        .iter()
        .flat_map(|(input, _)| {
            [
                json!({"tool": "mcp__lim__big", "input": input}),
                json!({"tool": "mcp__lim__ro", "input": {}}),
            ]
        })
        .map(|c| format!("{c}\n"))
        .collect();
    let run = project.run(&["--allow", "mcp__lim", "batch"], Some(&calls));
    let lines = run.lines();
    assert_eq!(lines.len(), cases.len() * 2, "{run:#?}");
    for (i, (input, arrives)) in cases.iter().enumerate() {
        let (big, next) = (&lines[2 * i], &lines[2 * i + 1]);
        if *arrives {
            assert!(big["is_error"] == false, "{input}: {big}");
        } else {
            assert!(big["is_error"] == true, "{input}: {big}");
            let message = text(big);
            let limit = if input.get("bytes").is_some() {
                format!("larger than {cap} bytes")
            } else {
                format!("more than {depth} levels")
            };
            assert!(
                message.contains("MCP server \"lim\"") && message.contains(&limit),
                "{input}: {message}"
            );
        }
        assert!(
            next["is_error"] == false && text(next).contains("lim:ro"),
            "{input}: {next}"
        );
    }
    eprintln!("reply limit variants: {}", cases.len());
}

/// A 300 MB reply against a 1 MiB cap, and one just over the 64 MiB default: the call ends
/// with the limit named, and the host's memory stays far below the reply's size.
#[test]
fn an_oversized_reply_is_never_held_whole() {
    for (cap, bytes) in [(Some(1u64 << 20), 300_000_000u64), (None, (64 << 20) + 1)] {
        let extra = cap.map_or(json!({}), |c| json!({"maxMessageBytes": c}));
        let project = project(&["huge"], extra);
        let mut child = project
            .command(&["--allow", "mcp__huge", "batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("batch");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let call = json!({"tool": "mcp__huge__big", "input": {"bytes": bytes}});
        writeln!(stdin, "{call}").expect("a call");
        let line: Value =
            serde_json::from_str(&out.next().expect("a result").expect("readable")).expect("JSON");
        let peak_mib = peak_rss_kib(child.id()) / 1024;
        drop(stdin);
        let _ = child.wait();
        assert!(line["is_error"] == true, "{line}");
        let limit = cap.unwrap_or(64 << 20);
        assert!(
            text(&line).contains(&format!("larger than {limit} bytes")),
            "{line}"
        );
        eprintln!("peak {peak_mib} MiB for a {bytes}-byte reply with a {limit}-byte cap");
        let bound = limit / (1 << 20) + 200;
        assert!(
            peak_mib < bound,
            "peak {peak_mib} MiB for a {bytes}-byte reply with a {limit}-byte cap"
        );
    }
}

/// Twenty thousand `tools/list_changed` notifications cost at most a few listings.
#[test]
fn list_changed_notifications_are_coalesced() {
    let project = project(&["chatty"], json!({}));
    let calls = [
        json!({"tool": "mcp__chatty__notify", "input": {"count": 20000}}),
        json!({"tool": "mcp__chatty__listed", "input": {}}),
    ]
    .iter()
    .map(|c| format!("{c}\n"))
    .collect::<String>();
    let run = project.run(&["--allow", "mcp__chatty", "batch"], Some(&calls));
    let lines = run.lines();
    assert_eq!(lines.len(), 2, "{run:#?}");
    let listed: u64 = text(&lines[1]).trim().parse().expect("a count");
    // The listing at start-up, then one listing at a time while notifications arrive, each
    // answering all that came while the one before ran: on a quiet machine 2 to 4, under
    // heavy load (the flood arrives more slowly than a listing takes) a few more. A handler
    // that listed per notification would list thousands of times.
    assert!(
        (2..=50).contains(&listed),
        "{listed} listings for 20000 notifications"
    );
}

/// A streamable HTTP MCP server (the Python SDK's) with a tool `big` returning `n` bytes of
/// text, answering with JSON bodies or with SSE streams.
const HTTP_SERVER: &str = r#"
import sys
import uvicorn
from mcp.server.mcpserver import MCPServer
server = MCPServer("big")
@server.tool()
def big(n: int) -> str:
    return "x" * n
kwargs = {"json_response": True} if sys.argv[2] == "json" else {}
app = server.streamable_http_app(host="127.0.0.1", **kwargs)
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
"#;

/// The same cap holds for HTTP servers, whether they answer with a JSON body or an SSE
/// event: within it the reply arrives, over it the call ends at once naming the limit.
#[test]
fn http_servers_are_held_to_the_same_cap() {
    let Some(peers) = test_support::peers::peer("py/mcp") else {
        return;
    };
    let project = Project::new(&[]);
    let script = project.root().join("http_server.py");
    std::fs::write(&script, HTTP_SERVER).expect("script");
    let cap = 100_000_u64;
    let mut servers = serde_json::Map::new();
    let mut children = Vec::new();
    for kind in ["json", "sse"] {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("python3")
            .arg(&script)
            .arg(port.to_string())
            .arg(kind)
            .env("PYTHONPATH", peers.join("py"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the HTTP server");
        children.push(KillOnDrop(child));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the {kind} server never listened"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        servers.insert(
            kind.to_owned(),
            json!({"type": "http", "url": format!("http://127.0.0.1:{port}/mcp"),
                "maxMessageBytes": cap}),
        );
    }
    std::fs::write(
        project.root().join(".mcp.json"),
        json!({"mcpServers": servers}).to_string(),
    )
    .expect(".mcp.json");
    project.trust();
    for kind in ["json", "sse"] {
        for (n, arrives) in [(1000, true), (cap * 3, false), (cap * 100, false)] {
            let tool = format!("mcp__{kind}__big");
            let input = json!({"n": n}).to_string();
            let rule = format!("mcp__{kind}");
            let line = project
                .run(&["--allow", &rule, "call", &tool, &input], None)
                .result();
            assert_eq!(line["is_error"] == false, arrives, "{kind} {n}: {line}");
            if !arrives {
                let message = text(&line);
                assert!(
                    message.contains(&format!("MCP server \"{kind}\""))
                        && message.contains(&format!("larger than {cap} bytes")),
                    "{kind} {n}: {message}"
                );
            }
        }
    }
}

/// Kills a child process when the test ends, however it ends.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
