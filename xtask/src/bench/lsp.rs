//! The `lsp` benchmark: `agent-tools call LSP` hover on a small project, for pyright and
//! typescript-language-server, against a minimal raw LSP client in python3 that goes through
//! the same protocol steps (initialize, initialized, didOpen, wait for the file's first
//! diagnostics, hover, shutdown, exit).
//!
//! - **first hover**: one process per run, so the server's start is included.
//! - **warm hover**: a batch of 1 + 20 hovers against a batch of 1, per extra hover: the
//!   cost of a hover once the server runs. Our 20 calls run concurrently (LSP is
//!   concurrency-safe); the raw client pipelines its 20 requests.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};

use super::{Comparison, Ctx};
use crate::cmd::Cmd;

/// Extra hovers of the warm case.
const WARM_HOVERS: u32 = 20;

const PY_MODELS: &str = "class Dog:\n    def speak(self) -> str:\n        return \"woof\"\n\n\ndef make_dog(name: str) -> Dog:\n    \"\"\"Builds a dog.\"\"\"\n    return Dog()\n";
const PY_MAIN: &str = "from models import make_dog\n\n\ndef greet(count: int) -> str:\n    dog = make_dog(\"rex\")\n    return dog.speak() * count\n";
const TS_SHAPES: &str = "export class Square {\n  constructor(private side: number) {}\n  area(): number {\n    return this.side * this.side;\n  }\n}\n\nexport function makeSquare(side: number): Square {\n  return new Square(side);\n}\n";
const TS_MAIN: &str = "import { makeSquare } from \"./shapes\";\n\nexport function main(): number {\n  const sq = makeSquare(2);\n  return sq.area();\n}\n";
const TSCONFIG: &str = "{\"compilerOptions\": {\"strict\": true, \"target\": \"es2020\", \"module\": \"commonjs\"}, \"include\": [\"*.ts\"]}\n";

/// The raw client: `raw_client.py ROOT FILE LINE CHAR COUNT -- SERVER ARGS...` (0-based
/// position; COUNT hovers).
const RAW_CLIENT: &str = r#"import json, os, subprocess, sys, time
sep = sys.argv.index("--")
root, file, line, char, count = sys.argv[1:sep]
server = sys.argv[sep + 1:]
line, char, count = int(line), int(char), int(count)
p = subprocess.Popen(server, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                     stderr=subprocess.DEVNULL, cwd=root, start_new_session=True)
def send(msg):
    body = json.dumps(msg).encode()
    p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    p.stdin.flush()
def read():
    length = None
    while True:
        h = p.stdout.readline()
        if not h:
            raise SystemExit("server closed its output")
        h = h.strip()
        if not h:
            break
        if h.lower().startswith(b"content-length:"):
            length = int(h.split(b":")[1])
    return json.loads(p.stdout.read(length))
uri = "file://" + os.path.join(root, file)
def until(pred):
    while True:
        m = read()
        if "method" in m and "id" in m:
            result = None
            if m["method"] == "workspace/configuration":
                result = [None for _ in m["params"]["items"]]
            send({"jsonrpc": "2.0", "id": m["id"], "result": result})
        elif pred(m):
            return m
root_uri = "file://" + root
send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "processId": os.getpid(), "rootUri": root_uri,
    "workspaceFolders": [{"uri": root_uri, "name": "bench"}],
    "capabilities": {"workspace": {"configuration": True, "workspaceFolders": True},
                     "textDocument": {"publishDiagnostics": {}, "hover": {"contentFormat": ["markdown"]}}}}})
until(lambda m: m.get("id") == 0)
send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
lang = "python" if file.endswith(".py") else "typescript"
send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
    "uri": uri, "languageId": lang, "version": 1, "text": open(os.path.join(root, file)).read()}}})
deadline = time.time() + 15
until(lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri)
for i in range(count):
    send({"jsonrpc": "2.0", "id": 100 + i, "method": "textDocument/hover", "params": {
        "textDocument": {"uri": uri}, "position": {"line": line, "character": char}}})
left = set(range(100, 100 + count))
while left:
    m = until(lambda m: m.get("id") in left)
    if not m.get("result"):
        raise SystemExit("empty hover: %r" % m)
    left.discard(m["id"])
send({"jsonrpc": "2.0", "id": 1, "method": "shutdown", "params": None})
until(lambda m: m.get("id") == 1)
send({"jsonrpc": "2.0", "method": "exit", "params": None})
try:
    p.wait(timeout=2)
except subprocess.TimeoutExpired:
    os.killpg(p.pid, 9)
"#;

/// One server's case.
struct Case {
    label: &'static str,
    binary: &'static str,
    files: &'static [(&'static str, &'static str)],
    ext: &'static str,
    file: &'static str,
    /// 1-based line and character of the hovered name
    at: (u32, u32),
}

const CASES: &[Case] = &[
    Case {
        label: "pyright",
        binary: "pyright-langserver",
        files: &[
            ("pyproject.toml", "[project]\nname = \"bench\"\n"),
            ("models.py", PY_MODELS),
            ("main.py", PY_MAIN),
        ],
        ext: "py",
        file: "main.py",
        at: (5, 11),
    },
    Case {
        label: "typescript-language-server",
        binary: "typescript-language-server",
        files: &[
            ("tsconfig.json", TSCONFIG),
            ("shapes.ts", TS_SHAPES),
            ("main.ts", TS_MAIN),
        ],
        ext: "ts",
        file: "main.ts",
        at: (4, 14),
    },
];

fn project(ctx: &Ctx, case: &Case, server: &Path) -> Result<PathBuf> {
    let root = ctx.scratch.join(format!("lsp-{}", case.label));
    let _ = fs::remove_dir_all(&root);
    fs::create_dir_all(root.join(".agent-tools"))
        .with_context(|| format!("cannot create {}", root.display()))?;
    for (name, text) in case.files {
        fs::write(root.join(name), text).with_context(|| format!("cannot write {name}"))?;
    }
    let settings = format!(
        "{{\"lsp\": {{\"{}\": {{\"command\": \"{}\", \"args\": [\"--stdio\"]}}}}}}\n",
        case.ext,
        server.display()
    );
    fs::write(root.join(".agent-tools/settings.json"), settings)
        .context("cannot write the project settings")?;
    root.canonicalize()
        .with_context(|| format!("cannot resolve {}", root.display()))
}

fn hover_json(case: &Case) -> String {
    format!(
        "{{\"operation\":\"hover\",\"filePath\":\"{}\",\"line\":{},\"character\":{}}}",
        case.file, case.at.0, case.at.1
    )
}

/// `agent-tools batch` with `count` hovers, fed from a file through `sh`.
fn ours_batch(ctx: &Ctx, case: &Case, root: &Path, home: &Path, count: u32) -> Result<Cmd> {
    let input = ctx
        .scratch
        .join(format!("lsp-{}-{count}.jsonl", case.label));
    let line = format!("{{\"tool\":\"LSP\",\"input\":{}}}\n", hover_json(case));
    fs::write(&input, line.repeat(count as usize)).context("cannot write the batch input")?;
    Ok(Cmd::new("sh")
        .arg("-c")
        .arg("exec \"$0\" batch --cwd \"$1\" < \"$2\"")
        .arg(&ctx.bin)
        .arg(root)
        .arg(&input)
        .env("AGENT_TOOLS_HOME", home))
}

fn raw(client: &Path, case: &Case, root: &Path, server: &Path, count: u32) -> Cmd {
    Cmd::new("python3")
        .arg(client)
        .arg(root)
        .arg(case.file)
        .arg((case.at.0 - 1).to_string())
        .arg((case.at.1 - 1).to_string())
        .arg(count.to_string())
        .arg("--")
        .arg(server)
        .arg("--stdio")
}

fn per_extra(many: Duration, one: Duration) -> Duration {
    many.saturating_sub(one) / WARM_HOVERS
}

/// First and warm hover for each server.
pub fn lsp(ctx: &Ctx) -> Result<Vec<Comparison>> {
    let bin_dir = crate::peers::peers_dir()?.join("node_modules/.bin");
    if crate::peers::which("python3").is_none() {
        bail!("python3 is needed for the raw-client baseline");
    }
    let client = ctx.scratch.join("lsp-raw-client.py");
    fs::create_dir_all(&ctx.scratch).context("cannot create the scratch dir")?;
    fs::write(&client, RAW_CLIENT).context("cannot write the raw client")?;
    let home = ctx.scratch.join("lsp-home");
    fs::create_dir_all(&home).context("cannot create the state dir")?;
    let mut out = Vec::new();
    for case in CASES {
        let server = bin_dir.join(case.binary);
        if !server.is_file() {
            bail!(
                "{} is not installed at {}: run `cargo xtask peers`",
                case.binary,
                server.display()
            );
        }
        let root = project(ctx, case, &server)?;
        // The server comes from the project's settings, which apply once a person approves
        // them, as `agent-tools trust` records.
        Cmd::new(&ctx.bin)
            .args(["trust", "--yes", "--cwd"])
            .arg(&root)
            .env("AGENT_TOOLS_HOME", &home)
            .stdout_string()
            .context("cannot approve the benchmark project's settings")?;
        let first = Cmd::new(&ctx.bin)
            .args(["call", "LSP"])
            .arg(hover_json(case))
            .arg("--cwd")
            .arg(&root)
            .env("AGENT_TOOLS_HOME", &home);
        out.push(ctx.compare(
            &format!("{}: first hover (server start)", case.label),
            &first,
            &raw(&client, case, &root, &server, 1),
            "raw client",
        )?);
        let one = ctx.compare(
            "one",
            &ours_batch(ctx, case, &root, &home, 1)?,
            &raw(&client, case, &root, &server, 1),
            "raw client",
        )?;
        let many = ctx.compare(
            "many",
            &ours_batch(ctx, case, &root, &home, 1 + WARM_HOVERS)?,
            &raw(&client, case, &root, &server, 1 + WARM_HOVERS),
            "raw client",
        )?;
        out.push(Comparison {
            case: format!(
                "{}: warm hover (per hover, {WARM_HOVERS} after the first)",
                case.label
            ),
            ours: per_extra(many.ours, one.ours),
            baseline: per_extra(many.baseline, one.baseline),
            baseline_label: "raw client".to_owned(),
            baseline_command: format!(
                "{} (the same server through a minimal python3 LSP client)",
                many.baseline_command
            ),
        });
    }
    Ok(out)
}
