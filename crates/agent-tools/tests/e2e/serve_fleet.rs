//! `agent-tools serve --http` as a fleet leans on it: requests that would have frozen it
//! (deep paths, huge arguments) answered with errors while `/healthz` answers; the
//! connection and body limit options reaching the server; background tasks
//! that give back their descriptors in the default context; output files pruned after the
//! retention time; `--session-idle` ending a context with its tasks and files; and the
//! schema fuzz of every tool with a fixed seed.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::Project;
use crate::serve::HttpServer;
use crate::serve_eras::{marker, survivors, wait_for_process};
use crate::serve_http::{Conn, modern};
use test_support::fuzz::{Case, Rng, answer_all};
use test_support::http::{closed_within, healthz, text};

/// A server on a free loopback port, without authentication (`--no-auth`: these tests are
/// about what happens before and beside it), whose standard error is kept to look for
/// panics.
struct Server {
    inner: HttpServer,
    authority: String,
}

impl Server {
    fn start(project: &Project, extra: &[&str]) -> Self {
        let inner = HttpServer::start(project, extra);
        let authority = inner.authority().to_owned();
        Server { inner, authority }
    }

    fn pid(&self) -> u32 {
        self.inner.child.id()
    }

    /// Descriptors the server holds open.
    fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid())).map_or(0, |d| d.count())
    }

    fn stderr(&self) -> String {
        let mut lines = self.inner.notices.clone();
        lines.extend(
            self.inner
                .stderr
                .lock()
                .expect("stderr lines")
                .iter()
                .cloned(),
        );
        lines.join("\n")
    }
}

/// A `tools/call` of protocol 2026-07-28 on a new connection; the answer.
fn call(authority: &str, tool: &str, args: Value, handle: Option<&str>) -> Value {
    test_support::http::call(&mut Conn::open(authority), 1, tool, args, None, handle)
}

/// Runs `work` on a thread and polls `/healthz` until it ends: whether `/healthz`
/// answered 200 every time (each within a generous bound), and what `work` returned.
fn with_healthz<T: Send + 'static>(
    authority: &str,
    work: impl FnOnce() -> T + Send + 'static,
) -> (bool, usize, T) {
    let worker = std::thread::spawn(work);
    let mut healthy = true;
    let mut probes = 0;
    while !worker.is_finished() {
        healthy &= healthz(authority, Duration::from_secs(5)) == Some(200);
        probes += 1;
        std::thread::sleep(Duration::from_millis(20));
    }
    (healthy, probes, worker.join().expect("the worker"))
}

#[test]
fn deep_paths_and_huge_arguments_get_errors_while_healthz_answers() {
    let project = Project::new(&["notes.txt = alpha\\n"]);
    let server = Server::start(&project, &["--mode", "acceptEdits"]);
    let authority = server.authority.clone();
    let deep = "ab/".repeat(87_381);
    let cases: Vec<(&str, Value, &str)> = vec![
        ("Glob", json!({"pattern": "*", "path": deep}), "`path`"),
        (
            "Write",
            json!({"file_path": "a/".repeat(5_461) + "x", "content": "x"}),
            "`file_path`",
        ),
        ("Glob", json!({"pattern": "*".repeat(8 << 20)}), "`pattern`"),
        (
            "Grep",
            json!({"pattern": "(a|b)".repeat(1 << 20)}),
            "`pattern`",
        ),
        (
            "Bash",
            json!({"command": "true ".repeat(1 << 20)}),
            "`command`",
        ),
        (
            "WebFetch",
            json!({"url": format!("http://127.0.0.1/{}", "x".repeat(1 << 20)), "prompt": "p"}),
            "`url`",
        ),
    ];
    for (tool, args, field) in cases {
        let a = authority.clone();
        let started = Instant::now();
        let (healthy, probes, answer) =
            with_healthz(&authority, move || call(&a, tool, args, None));
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "{tool}: no answer within 60 s"
        );
        assert_eq!(answer["result"]["isError"], true, "{tool}: {answer:#}");
        let said = text(&answer);
        assert!(
            said.contains(field) && said.contains("at most"),
            "{tool}: the error names {field} and its bound: {said}"
        );
        assert!(
            healthy,
            "{tool}: /healthz failed during the call ({probes} probes)"
        );
    }
    // A path at the bound, all of it resolved: an answer (the directory does not exist),
    // not a stall.
    let at_bound = "a/".repeat(2_047);
    let a = authority.clone();
    let (healthy, _, answer) = with_healthz(&authority, move || {
        call(&a, "Glob", json!({"pattern": "*", "path": at_bound}), None)
    });
    assert!(healthy);
    assert_eq!(answer["result"]["isError"], true, "{answer:#}");
    // Two deep writes at once (one per core) leave the server answering.
    let threads: Vec<_> = (0..2)
        .map(|i| {
            let a = authority.clone();
            std::thread::spawn(move || {
                let path = format!("d{i}/") + &"a/".repeat(2_040) + "f.txt";
                call(
                    &a,
                    "Write",
                    json!({"file_path": path, "content": "deep"}),
                    None,
                )
            })
        })
        .collect();
    let (healthy, _, ()) = with_healthz(&authority, move || {
        for t in threads {
            let _ = t.join();
        }
    });
    assert!(healthy, "/healthz failed while deep writes ran");
    assert!(!server.stderr().contains("panicked"), "{}", server.stderr());
}

/// The connection and body limits of `serve --http` reach the server, each checked where it
/// differs from its default (how the limits work is tools-mcp's `tests/it/conns.rs` and
/// `tests/it/http.rs`): `--max-request-bytes`, `--header-timeout`, `--idle-timeout`,
/// `--max-connections`.
#[test]
fn the_connection_and_body_limit_options_reach_the_server() {
    let project = Project::new(&[]);
    let server = Server::start(
        &project,
        &[
            "--max-request-bytes",
            "4096",
            "--header-timeout",
            "1",
            "--idle-timeout",
            "1",
        ],
    );
    let authority = server.authority.clone();
    let headers = [
        ("Content-Type", "application/json".to_owned()),
        ("Accept", "application/json, text/event-stream".to_owned()),
    ];
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","x":"{}"}}"#,
        "x".repeat(5000)
    );
    let response = Conn::open(&authority).send("POST", "/mcp", &headers, &big);
    assert_eq!(response.status, 413, "{response:#?}");
    // A silent connection is closed after one second (the default is ten).
    let mut silent = TcpStream::connect(&authority).expect("connect");
    assert!(
        closed_within(&mut silent, Duration::from_secs(5)),
        "a silent connection stayed open"
    );
    // A kept-alive connection is closed after one idle second (the default is sixty).
    let mut kept = Conn::open(&authority);
    assert_eq!(kept.send("GET", "/healthz", &[], "").status, 200);
    let mut stream = kept.into_stream();
    assert!(
        closed_within(&mut stream, Duration::from_secs(5)),
        "an idle kept-alive connection stayed open"
    );
    drop(server);

    // At two connections, a third closes the one idle longest (long before the default
    // header timeout of ten seconds).
    let server = Server::start(&project, &["--max-connections", "2"]);
    let authority = server.authority.clone();
    let mut first = TcpStream::connect(&authority).expect("connect");
    let _second = TcpStream::connect(&authority).expect("connect");
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(healthz(&authority, Duration::from_secs(5)), Some(200));
    assert!(
        closed_within(&mut first, Duration::from_secs(5)),
        "the connection idle longest stayed open at the cap"
    );
}

#[test]
fn background_tasks_give_back_their_descriptors_and_their_output_is_pruned() {
    let project = Project::new(&[]);
    let server = Server::start(&project, &["--allow", "Bash"]);
    let authority = server.authority.clone();
    // The default context of the local principal (no handle), as a 2026-07-28 client.
    call(&authority, "Bash", json!({"command": "true"}), None);
    let baseline = server.fds();
    for i in 0..200 {
        let answer = call(
            &authority,
            "Bash",
            json!({"command": format!("echo task {i}"), "run_in_background": true}),
            None,
        );
        assert_eq!(answer["result"]["isError"], false, "{answer:#}");
    }
    let last = call(
        &authority,
        "TaskOutput",
        json!({"task_id": "b200", "block": true, "timeout": 30000}),
        None,
    );
    assert!(text(&last).contains("task 199"), "{last:#}");
    // Every task ended: their descriptors are closed.
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.fds() > baseline + 10 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        server.fds() <= baseline + 10,
        "{} descriptors after 200 background tasks, {baseline} before",
        server.fds()
    );
    // A finished task's output is read back through its file.
    let first = call(&authority, "TaskOutput", json!({"task_id": "b1"}), None);
    assert!(text(&first).contains("task 0"), "{first:#}");
    drop(server);

    // Until the retention time has passed: then TaskOutput says it was pruned.
    let server = Server::start(&project, &["--allow", "Bash", "--output-retention", "5"]);
    let authority = server.authority.clone();
    let answer = call(
        &authority,
        "Bash",
        json!({"command": "echo kept for a while", "run_in_background": true}),
        None,
    );
    assert_eq!(answer["result"]["isError"], false, "{answer:#}");
    let read = call(
        &authority,
        "TaskOutput",
        json!({"task_id": "b1", "block": true}),
        None,
    );
    assert!(text(&read).contains("kept for a while"), "{read:#}");
    let tasks = project.home().join("tasks");
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut pruned = Value::Null;
    while Instant::now() < deadline {
        pruned = call(&authority, "TaskOutput", json!({"task_id": "b1"}), None);
        if pruned["result"]["isError"] == true {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(text(&pruned).contains("pruned"), "{pruned:#}");
    let left: usize = std::fs::read_dir(&tasks)
        .map(|d| {
            d.flatten()
                .map(|m| std::fs::read_dir(m.path()).map_or(0, |f| f.count()))
                .sum()
        })
        .unwrap_or(0);
    assert_eq!(left, 0, "output files left after the retention time");
}

/// `--session-idle` reaches the server, and an ended context takes the real tools' tasks
/// and files with it (how default and minted contexts end after their idle time is
/// tools-mcp's `tests/it/contexts.rs`).
#[test]
fn contexts_end_after_their_idle_time_with_their_tasks_and_files() {
    let project = Project::new(&[]);
    let server = Server::start(&project, &["--allow", "Bash", "--session-idle", "2"]);
    let authority = server.authority.clone();
    let m = marker("idle-context");
    let answer = call(
        &authority,
        "Bash",
        json!({"command": format!("sleep 600 # {m}"), "run_in_background": true}),
        None,
    );
    assert_eq!(answer["result"]["isError"], false, "{answer:#}");
    let big = call(&authority, "Bash", json!({"command": "seq 1 40000"}), None);
    assert!(
        text(&big).contains("seq") || !text(&big).is_empty(),
        "{big:#}"
    );
    assert!(wait_for_process(&m, 30), "the command never started");
    // No request for the idle time: the context ends, its command stopped.
    assert_eq!(
        survivors(&m, 30),
        Vec::<u32>::new(),
        "a background command outlived its idle context"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    let files = || {
        ["tasks", "tool-results"]
            .iter()
            .map(|d| {
                std::fs::read_dir(project.home().join(d)).map_or(0, |e| {
                    e.flatten()
                        .map(|m| std::fs::read_dir(m.path()).map_or(0, |f| f.count()))
                        .sum::<usize>()
                })
            })
            .sum::<usize>()
    };
    while files() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(files(), 0, "the ended context's files are deleted");
    // The default context is made again on the next request.
    let again = call(&authority, "Bash", json!({"command": "echo back"}), None);
    assert!(text(&again).contains("back"), "{again:#}");
}

/// Values that do not fit `schema`, or fit it at its edges.
fn variants(rng: &mut Rng, schema: &Value) -> Vec<Value> {
    let mut out = vec![
        Value::Null,
        json!(-1),
        json!(1e308),
        json!(true),
        json!([]),
        json!({}),
        json!(rng.text(8)),
    ];
    if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
        out.push(json!("a".repeat(max as usize + 1)));
        out.push(json!(rng.text(max.min(64) as usize)));
    }
    out.push(json!("x".repeat(1 << 20)));
    let mut deep = json!(1);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    out.push(deep);
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        out.extend(values.iter().cloned());
    }
    out
}

/// The generated inputs of one tool: each property replaced by each variant in an
/// otherwise empty or plausible input, missing required keys, unknown keys, and a few
/// random objects.
fn tool_inputs(rng: &mut Rng, schema: &Value) -> Vec<Value> {
    let props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut inputs = vec![json!({}), json!({"not-a-parameter": 1}), json!([1, 2])];
    let plausible: serde_json::Map<String, Value> = props
        .iter()
        .map(|(k, s)| {
            let v = match s["type"].as_str().or_else(|| s["type"][0].as_str()) {
                Some("string") => json!("x"),
                Some("integer" | "number") => json!(1),
                Some("boolean") => json!(false),
                Some("array") => json!([]),
                _ => json!({}),
            };
            (k.clone(), v)
        })
        .collect();
    for (key, prop) in &props {
        for v in variants(rng, prop) {
            let mut input = plausible.clone();
            input.insert(key.clone(), v);
            inputs.push(Value::Object(input));
        }
    }
    for _ in 0..3 {
        let mut input = serde_json::Map::new();
        for key in props.keys() {
            if rng.below(2) == 0 {
                let len = rng.below(40);
                input.insert(key.clone(), json!(rng.text(len)));
            }
        }
        inputs.push(Value::Object(input));
    }
    inputs
}

/// Every real tool's schema fuzzed (the protocol-level bad bodies, random bytes, deep and
/// oversized ones, are tools-mcp's `tests/it/http_errors.rs`).
#[test]
fn generated_bad_inputs_over_http_get_json_rpc_answers() {
    let project = Project::new(&["notes.txt = alpha\\n"]);
    let server = Server::start(&project, &["--max-request-bytes", "4194304"]);
    let authority = server.authority.clone();
    let mut rng = Rng(0x5eed_f1ee7);
    // Every tool, from its own schema.
    let (headers, body) = modern(1, "tools/list", json!({}), None, None);
    let list = Conn::open(&authority).send("POST", "/mcp", &headers, &body);
    let tools = list.answer(1)["result"]["tools"]
        .as_array()
        .cloned()
        .expect("a tool list");
    assert!(tools.len() > 20, "{tools:#?}");
    let mut cases: Vec<Case> = Vec::new();
    let mut id = 10;
    for tool in &tools {
        let name = tool["name"].as_str().expect("a name");
        // Tools that talk to a person or start agents wait for answers nobody gives here.
        for input in tool_inputs(&mut rng, &tool["inputSchema"]) {
            id += 1;
            let (headers, body) = modern(
                id,
                "tools/call",
                json!({"name": name, "arguments": input}),
                None,
                None,
            );
            cases.push((format!("{name} #{id}"), headers, body.into_bytes()));
        }
    }
    let total = cases.len();
    let failures = answer_all(&authority, cases);
    assert!(
        failures.is_empty(),
        "{} of {total} bad inputs were not answered as they should be:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert_eq!(healthz(&authority, Duration::from_secs(5)), Some(200));
    let stderr = server.stderr();
    assert!(!stderr.contains("panicked"), "a panic: {stderr}");
}

/// A server sets its allocator's options itself, so that the memory of ended sessions goes
/// back: it starts again (same process, same descriptors) with jemalloc's configuration in
/// its environment, and jemalloc took it: its background thread, which exists only when
/// the configuration asks for it, runs in the server.
#[test]
fn serve_configures_its_allocator_itself() {
    let project = Project::new(&[]);
    let server = Server::start(&project, &[]);
    let environ = std::fs::read(format!("/proc/{}/environ", server.pid())).expect("environ");
    let wanted =
        &b"_RJEM_MALLOC_CONF=background_thread:true,narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0"
            [..];
    assert!(
        environ.split(|b| *b == 0).any(|v| v == wanted),
        "{}",
        String::from_utf8_lossy(&environ).replace('\0', "\n")
    );
    assert_eq!(
        healthz(&server.authority, Duration::from_secs(10)),
        Some(200)
    );
    let threads = || -> Vec<String> {
        std::fs::read_dir(format!("/proc/{}/task", server.pid()))
            .map(|tasks| {
                tasks
                    .flatten()
                    .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
                    .map(|c| c.trim().to_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !threads().iter().any(|c| c.starts_with("jemalloc_bg")) {
        assert!(
            std::time::Instant::now() < deadline,
            "no jemalloc background thread among {:?}",
            threads()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
