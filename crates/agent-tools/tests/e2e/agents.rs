//! Sub-agents never have more than their caller, and what a project ships is reviewed
//! before it acts: the binary runs sub-agents against a stand-in Messages API on loopback
//! that answers with scripted `tool_use` blocks, and every check is an outcome — a file
//! written or not, a secret reaching the model or not, the mode a sub-agent's tools ran in.
//!
//! Variants are generated per class: the sub-agent's `cwd` (`/`, `..`, links out, other
//! working directories), every caller × sub-agent mode pair, resuming and running on after
//! each mode change, every key of a project agent or skill definition, approved or not,
//! and project definitions named like every built-in type and the person's own.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use crate::{Project, Run, binary, text};

/// What the stand-in answers a request with, given the request body.
type Reply = dyn Fn(&Value) -> Value + Send + Sync;

/// A stand-in for the Messages API: an HTTP/1.1 server on loopback answering
/// `POST /v1/messages` with what `reply` makes of each request, recording every body.
pub(crate) struct StandIn {
    pub(crate) base: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl StandIn {
    pub(crate) fn start(reply: impl Fn(&Value) -> Value + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the stand-in");
        let base = format!("http://{}", listener.local_addr().expect("an address"));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let reply: Arc<Reply> = Arc::new(reply);
        let recorded = Arc::clone(&requests);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let (reply, recorded) = (Arc::clone(&reply), Arc::clone(&recorded));
                std::thread::spawn(move || serve_connection(stream, &*reply, &recorded));
            }
        });
        StandIn { base, requests }
    }

    /// Every request body so far.
    pub(crate) fn requests(&self) -> Vec<Value> {
        self.requests.lock().expect("requests").clone()
    }

    /// Whether any request carried `needle` (a tool result the model would have read).
    pub(crate) fn saw(&self, needle: &str) -> bool {
        self.requests()
            .iter()
            .any(|r| r.to_string().contains(needle))
    }
}

fn serve_connection(stream: std::net::TcpStream, reply: &Reply, recorded: &Mutex<Vec<Value>>) {
    let mut writer = stream.try_clone().expect("clone the stream");
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap_or(0) == 0 {
                return;
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((k, v)) = header.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let answer = reply(&body);
        recorded.lock().expect("requests").push(body);
        let text = answer.to_string();
        let response = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
            text.len()
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}

/// A Messages API response with `content`.
pub(crate) fn message(content: Value, stop: &str) -> Value {
    json!({"id": "msg", "type": "message", "role": "assistant", "model": "m",
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 1, "output_tokens": 1}})
}

/// How many assistant turns the conversation of `body` has had.
pub(crate) fn turns(body: &Value) -> usize {
    body["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "assistant").count())
        .unwrap_or(0)
}

/// A sub-agent that makes `calls` (tool name, input) in its first turn and then ends with
/// "done".
pub(crate) fn agent_script(calls: Vec<(&str, Value)>) -> impl Fn(&Value) -> Value + 'static {
    let blocks: Vec<Value> = calls
        .into_iter()
        .enumerate()
        .map(|(i, (name, input))| {
            json!({"type": "tool_use", "id": format!("t{i}"), "name": name, "input": input})
        })
        .collect();
    move |body: &Value| {
        if turns(body) == 0 && !blocks.is_empty() {
            message(Value::Array(blocks.clone()), "tool_use")
        } else {
            message(json!([{"type": "text", "text": "done"}]), "end_turn")
        }
    }
}

/// Runs `agent-tools --cwd <cwd> ARGS` in `project` with the stand-in as the Messages API.
pub(crate) fn run_with(
    project: &Project,
    cwd: &Path,
    standin: &StandIn,
    args: &[&str],
    stdin: Option<&str>,
) -> Run {
    let mut child = Command::new(binary())
        .arg("--cwd")
        .arg(cwd)
        .args(args)
        .current_dir(project.root())
        .env("AGENT_TOOLS_HOME", project.home())
        .env("HOME", project.home())
        .env("ANTHROPIC_API_KEY", "stand-in")
        .env("ANTHROPIC_BASE_URL", &standin.base)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn agent-tools");
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().expect("stdin pipe");
        pipe.write_all(text.as_bytes()).expect("write stdin");
    }
    let output = child.wait_with_output().expect("wait for agent-tools");
    Run {
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        code: output.status.code().expect("exited by a signal"),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// One `call Agent INPUT` with `flags`; the result line.
fn call_agent(project: &Project, standin: &StandIn, flags: &[&str], input: Value) -> Value {
    let input = input.to_string();
    let mut args: Vec<&str> = flags.to_vec();
    args.extend(["call", "Agent", &input]);
    let run = run_with(project, project.root(), standin, &args, None);
    let lines = run.lines();
    assert_eq!(lines.len(), 1, "{run:#?}");
    lines.into_iter().next().expect("a line")
}

/// A secret outside the project, and the project.
struct Place {
    project: Project,
    outside: tempfile::TempDir,
    secret: String,
}

impl Place {
    fn new() -> Self {
        let project = Project::new(&["src/", "src/lib.rs = fn f() {}\n"]);
        let outside = tempfile::tempdir().expect("a temporary directory");
        let secret = format!("SECRET-{}", std::process::id());
        std::fs::write(outside.path().join("secret.txt"), &secret).expect("the secret");
        Place {
            project,
            outside,
            secret,
        }
    }

    fn outside(&self) -> std::path::PathBuf {
        self.outside.path().canonicalize().expect("canonical")
    }
}

/// The sub-agent's `cwd` values, each run in default, acceptEdits and dontAsk: a directory
/// outside the caller's working directories is refused before the sub-agent starts (with
/// the rule that would allow it), one inside runs; the sub-agent reads the secret and
/// writes a file in its working directory either way.
#[test]
fn a_sub_agent_works_only_where_its_caller_may() {
    let place = Place::new();
    let root = place.project.root().to_path_buf();
    let outside = place.outside();
    // Links out of the project, a link that stays inside, and an extra working directory
    // given by the person's own settings.
    std::os::unix::fs::symlink(&outside, root.join("out-link")).expect("link");
    std::os::unix::fs::symlink("/", root.join("root-link")).expect("link");
    std::os::unix::fs::symlink(root.join("src"), root.join("in-link")).expect("link");
    let extra = tempfile::tempdir().expect("extra dir");
    let extra = extra.path().canonicalize().expect("canonical");
    std::fs::write(extra.join("secret.txt"), &place.secret).expect("secret");
    std::fs::write(
        place.project.home().join("settings.json"),
        json!({"permissions": {"additionalDirectories": [extra]}}).to_string(),
    )
    .expect("user settings");
    let outside_s = outside.display().to_string();
    let extra_s = extra.display().to_string();
    // (cwd, where it resolves, whether the caller may work there)
    let cases: Vec<(String, std::path::PathBuf, bool)> = vec![
        ("/".into(), "/".into(), false),
        ("..".into(), root.parent().expect("a parent").into(), false),
        ("../..".into(), "/".into(), false),
        (outside_s.clone(), outside.clone(), false),
        ("out-link".into(), outside.clone(), false),
        ("out-link/.".into(), outside.clone(), false),
        ("root-link".into(), "/".into(), false),
        ("src/../out-link".into(), outside.clone(), false),
        // The binary's own working directory is the project.
        ("/proc/self/cwd".into(), root.clone(), true),
        (".".into(), root.clone(), true),
        ("src".into(), root.join("src"), true),
        ("in-link".into(), root.join("src"), true),
        (extra_s.clone(), extra.clone(), true),
    ];
    let mut count = 0;
    for (cwd, resolved, inside) in &cases {
        for mode in ["default", "acceptEdits", "dontAsk"] {
            count += 1;
            let marker = format!("written-{count}.txt");
            let standin = StandIn::start(agent_script(vec![
                ("Read", json!({"file_path": "secret.txt"})),
                ("Write", json!({"file_path": marker, "content": "x"})),
            ]));
            let line = call_agent(
                &place.project,
                &standin,
                &["--mode", mode],
                json!({"description": "probe", "prompt": "go", "cwd": cwd}),
            );
            let written = resolved.join(&marker).exists();
            if !inside {
                assert!(line["is_error"] == true, "{cwd} {mode}: {line}");
                let message = text(&line);
                assert!(
                    message.contains("outside this session's working directories")
                        && message.contains("--allow 'Edit(//"),
                    "{cwd} {mode}: {message}"
                );
                assert!(standin.requests().is_empty(), "{cwd} {mode}: it started");
                assert!(!standin.saw(&place.secret), "{cwd} {mode}");
                assert!(!written, "{cwd} {mode}: wrote {}", resolved.display());
            } else {
                assert!(line["is_error"] == false, "{cwd} {mode}: {line}");
                assert_eq!(written, mode == "acceptEdits", "{cwd} {mode}");
                let _ = std::fs::remove_file(resolved.join(&marker));
            }
        }
    }
    // An Edit allow rule gives the caller the directory: the sub-agent may work there.
    let standin = StandIn::start(agent_script(vec![(
        "Write",
        json!({"file_path": "by-rule.txt", "content": "x"}),
    )]));
    let rule = format!("Edit(/{outside_s}/**)");
    let line = call_agent(
        &place.project,
        &standin,
        &["--allow", &rule],
        json!({"description": "probe", "prompt": "go", "cwd": outside_s}),
    );
    assert!(line["is_error"] == false, "{line}");
    assert!(outside.join("by-rule.txt").exists());
    eprintln!("cwd variants: {}", count + 1);
}

/// Every caller × sub-agent mode pair, through `call`: a sub-agent asked for a mode that
/// allows more than its caller's is refused; otherwise it writes a file only where its mode
/// (capped at the caller's) and the rules allow: `allowed/` has an Edit allow rule,
/// `other/` none.
#[test]
fn every_mode_pair_caller_by_sub_agent() {
    let place = Place::new();
    let root = place.project.root().to_path_buf();
    let order = [
        "plan",
        "dontAsk",
        "default",
        "acceptEdits",
        "bypassPermissions",
    ];
    let rule = format!("Edit(/{}/allowed/**)", root.display());
    let mut count = 0;
    for (ci, caller) in order.iter().enumerate() {
        for (si, sub) in order.iter().enumerate() {
            count += 1;
            let (a, b) = (format!("allowed/{count}.txt"), format!("other/{count}.txt"));
            let standin = StandIn::start(agent_script(vec![
                ("Write", json!({"file_path": a, "content": "x"})),
                ("Write", json!({"file_path": b, "content": "x"})),
            ]));
            let line = call_agent(
                &place.project,
                &standin,
                &["--mode", caller, "--allow", &rule],
                json!({"description": "probe", "prompt": "go", "mode": sub}),
            );
            let (wrote_a, wrote_b) = (root.join(&a).exists(), root.join(&b).exists());
            if si > ci {
                assert!(line["is_error"] == true, "{caller} × {sub}: {line}");
                assert!(
                    text(&line).contains("allows more than this session's mode"),
                    "{line}"
                );
                assert!(standin.requests().is_empty());
                assert!(!wrote_a && !wrote_b, "{caller} × {sub}");
                continue;
            }
            assert!(line["is_error"] == false, "{caller} × {sub}: {line}");
            let effective = order[si.min(ci)];
            let expect_a = effective != "plan";
            let expect_b = matches!(effective, "acceptEdits" | "bypassPermissions");
            assert_eq!(
                (wrote_a, wrote_b),
                (expect_a, expect_b),
                "{caller} × {sub} (in effect {effective})"
            );
        }
    }
    eprintln!("mode pairs: {count}");
}

/// The next result line of a live `batch` (event lines, such as a background task's end,
/// are skipped).
fn next_result(out: &mut impl Iterator<Item = std::io::Result<String>>) -> Value {
    loop {
        let line = out.next().expect("a result").expect("readable");
        let value: Value = serde_json::from_str(&line).expect("JSON");
        if value.get("event").is_none() {
            return value;
        }
    }
}

/// Resuming a stopped sub-agent after the caller entered plan mode, from every starting
/// mode: the resumed agent runs in plan mode and writes nothing. Without the mode change it
/// writes where its mode allows. And a background agent that is still running when its
/// caller enters plan mode follows it at its next call.
#[test]
fn resume_and_background_agents_follow_the_callers_mode() {
    let place = Place::new();
    let root = place.project.root().to_path_buf();
    let mut count = 0;
    for mode in ["dontAsk", "default", "acceptEdits", "bypassPermissions"] {
        for enter_plan in [false, true] {
            count += 1;
            let file = format!("resumed-{count}.txt");
            // First run: ends at once. Resumed: writes the file.
            let write = json!({"type": "tool_use", "id": "w", "name": "Write",
                "input": {"file_path": file, "content": "x"}});
            let standin = StandIn::start(move |body: &Value| match turns(body) {
                0 => message(json!([{"type": "text", "text": "first"}]), "end_turn"),
                1 => message(json!([write.clone()]), "tool_use"),
                _ => message(json!([{"type": "text", "text": "done"}]), "end_turn"),
            });
            // The agent id comes back from the first call: a batch reads the lines as they
            // come, so the test talks to it through a pipe.
            let mut child = Command::new(binary())
                .args(["--cwd", place.project.root_str(), "--mode", mode, "batch"])
                .env("AGENT_TOOLS_HOME", place.project.home())
                .env("HOME", place.project.home())
                .env("ANTHROPIC_API_KEY", "stand-in")
                .env("ANTHROPIC_BASE_URL", &standin.base)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("batch");
            let mut stdin = child.stdin.take().expect("stdin");
            let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();
            let mut send = |call: Value| -> Value {
                writeln!(stdin, "{call}").expect("write a call");
                next_result(&mut out)
            };
            let first =
                send(json!({"tool": "Agent", "input": {"description": "d", "prompt": "go"}}));
            let id = first["data"]["agentId"]
                .as_str()
                .expect("an agent id")
                .to_owned();
            if enter_plan {
                let entered = send(json!({"tool": "EnterPlanMode", "input": {}}));
                assert!(entered["is_error"] == false, "{entered}");
            }
            let resumed = send(json!({"tool": "SendMessage",
                "input": {"to": id, "summary": "more", "message": "write it"}}));
            assert!(resumed["is_error"] == false, "{resumed}");
            let task = text(&resumed)
                .lines()
                .find_map(|l| l.strip_prefix("task_id: "))
                .expect("a task id")
                .to_owned();
            let output = send(json!({"tool": "TaskOutput",
                "input": {"task_id": task, "block": true, "timeout": 60000}}));
            assert!(output["is_error"] == false, "{output}");
            drop(stdin);
            let _ = child.wait();
            let expect = !enter_plan && matches!(mode, "acceptEdits" | "bypassPermissions");
            assert_eq!(
                root.join(&file).exists(),
                expect,
                "{mode} plan={enter_plan}"
            );
            let answered = standin.requests();
            let result = answered
                .last()
                .expect("the resumed run reported back")
                .to_string();
            if enter_plan {
                assert!(result.contains("Plan mode"), "{mode}: {result}");
            }
        }
    }
    // Running in the background while the caller enters plan mode: the stand-in holds the
    // agent's first turn until the caller is in plan mode.
    for mode in ["acceptEdits", "bypassPermissions"] {
        count += 1;
        let file = format!("background-{count}.txt");
        let gate = place.project.home().join(format!("gate-{count}"));
        let gate_seen = gate.clone();
        let write = json!({"type": "tool_use", "id": "w", "name": "Write",
            "input": {"file_path": file, "content": "x"}});
        let standin = StandIn::start(move |body: &Value| {
            if turns(body) == 0 {
                while !gate_seen.exists() {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                message(json!([write.clone()]), "tool_use")
            } else {
                message(json!([{"type": "text", "text": "done"}]), "end_turn")
            }
        });
        let mut child = Command::new(binary())
            .args(["--cwd", place.project.root_str(), "--mode", mode, "batch"])
            .env("AGENT_TOOLS_HOME", place.project.home())
            .env("HOME", place.project.home())
            .env("ANTHROPIC_API_KEY", "stand-in")
            .env("ANTHROPIC_BASE_URL", &standin.base)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("batch");
        let mut stdin = child.stdin.take().expect("stdin");
        let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut send = |call: Value| -> Value {
            writeln!(stdin, "{call}").expect("write a call");
            next_result(&mut out)
        };
        let started = send(json!({"tool": "Agent", "input": {"description": "d",
            "prompt": "go", "run_in_background": true}}));
        let task = started["data"]["agentId"]
            .as_str()
            .expect("a task id")
            .to_owned();
        let entered = send(json!({"tool": "EnterPlanMode", "input": {}}));
        assert!(entered["is_error"] == false, "{entered}");
        std::fs::write(&gate, "").expect("open the gate");
        let output = send(json!({"tool": "TaskOutput",
            "input": {"task_id": task, "block": true, "timeout": 60000}}));
        assert!(output["is_error"] == false, "{output}");
        drop(stdin);
        let _ = child.wait();
        assert!(
            !root.join(&file).exists(),
            "{mode}: the background agent wrote"
        );
        assert!(standin.saw("Plan mode"), "{mode}");
    }
    eprintln!("resume and background variants: {count}");
}
