//! Agent: a scripted conversation from an in-process server speaking the Messages API wire
//! format, in which the sub-agent calls Read and Grep; the command runner; a background
//! agent read through TaskOutput; agent types, filters and errors.

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tool_core::{CallResult, Tool, ToolContext, ToolPool};
use tools_agent::testing::{builtin_agents, tools_for_agent};
use tools_agent::{AgentRunner, AgentSettings, ApiRunner, CommandRunner, ToolCatalog};

use crate::{Fixture, assert_error};

/// A tiny HTTP/1.1 server on 127.0.0.1 that answers each request with what `reply` makes of
/// it (given how many requests came before) and records the request bodies.
pub(crate) struct Script {
    pub(crate) base: String,
    pub(crate) requests: Arc<Mutex<Vec<(String, Value)>>>,
}

type Reply = dyn Fn(usize, &Value) -> Value + Send + Sync;

/// Answers with the scripted responses in order, then with an API error.
pub(crate) async fn serve(responses: Vec<Value>) -> Script {
    serve_with(move |n, _| {
        responses.get(n).cloned().unwrap_or_else(|| json!({"type": "error", "error": {"type": "invalid_request_error", "message": "script exhausted"}}))
    })
    .await
}

pub(crate) async fn serve_with(
    reply: impl Fn(usize, &Value) -> Value + Send + Sync + 'static,
) -> Script {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let requests = Arc::new(Mutex::new(Vec::new()));
    let reply: Arc<Reply> = Arc::new(reply);
    let recorded = Arc::clone(&requests);
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            let reply = Arc::clone(&reply);
            let recorded = Arc::clone(&recorded);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                loop {
                    // Headers.
                    let end = loop {
                        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            break p + 4;
                        }
                        let mut chunk = [0u8; 4096];
                        let n = socket.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    };
                    let head = String::from_utf8_lossy(&buf[..end]).to_string();
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap_or(0);
                    while buf.len() < end + len {
                        let mut chunk = [0u8; 4096];
                        let n = socket.read(&mut chunk).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    let body: Value =
                        serde_json::from_slice(&buf[end..end + len]).unwrap_or(Value::Null);
                    buf.drain(..end + len);
                    let answer = {
                        let mut recorded = recorded.lock().unwrap();
                        let answer = reply(recorded.len(), &body);
                        recorded.push((head, body));
                        answer
                    };
                    let status = if answer["type"] == "error" {
                        "400 Bad Request"
                    } else {
                        "200 OK"
                    };
                    let text = answer.to_string();
                    let response = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
                        text.len()
                    );
                    if socket.write_all(response.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Script { base, requests }
}

pub(crate) fn message(content: Value, stop: &str) -> Value {
    json!({
        "id": "msg_01", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": content, "stop_reason": stop, "stop_sequence": null,
        "usage": {"input_tokens": 100, "output_tokens": 20}
    })
}

pub(crate) fn all_tools() -> Vec<Arc<dyn Tool>> {
    let mut tools = tools_fs::tools();
    tools.extend(tools_shell::tools());
    tools.extend(tools_agent::tools());
    tools
}

pub(crate) fn ctx_with_runner(f: &Fixture, runner: Arc<dyn AgentRunner>) -> ToolContext {
    runner_builder(f, runner).build()
}

/// A context builder with real background tasks, `runner` and every tool in the catalog.
pub(crate) fn runner_builder(
    f: &Fixture,
    runner: Arc<dyn AgentRunner>,
) -> tool_core::ToolContextBuilder {
    let tasks = Arc::new(tools_shell::ShellTasks::new(
        &f.state,
        tools_shell::SandboxSettings::default(),
        vec![f.root.clone()],
    ));
    f.builder()
        .tasks(tasks as Arc<dyn tool_core::TaskManager>)
        .service(runner)
        .service(ToolCatalog::new(all_tools))
}

/// The Messages API runner against a scripted server.
pub(crate) fn api_runner(server: &Script) -> Arc<dyn AgentRunner> {
    Arc::new(ApiRunner::new(&server.base, "k", AgentSettings::default()).unwrap())
}

/// TaskOutput of background task `task_id`, waiting up to a minute for it to finish.
pub(crate) async fn task_output(ctx: &ToolContext, task_id: &str) -> CallResult {
    pool()
        .call(
            "TaskOutput",
            json!({"task_id": task_id, "block": true, "timeout": 60000}),
            ctx,
        )
        .await
}

pub(crate) fn pool() -> ToolPool {
    ToolPool::new(all_tools())
}

#[tokio::test]
async fn api_runner_scripted_conversation_uses_read_and_grep() {
    let f = Fixture::new();
    std::fs::write(f.path("notes.txt"), "the answer is 42\n").unwrap();
    std::fs::write(f.path("code.rs"), "fn main() { let needle = 1; }\n").unwrap();
    let read_path = f.path("notes.txt").display().to_string();
    let server = serve(vec![
        message(json!([
            {"type": "text", "text": "Let me look."},
            {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": read_path}},
            {"type": "tool_use", "id": "toolu_2", "name": "Grep", "input": {"pattern": "needle"}}
        ]), "tool_use"),
        message(json!([{"type": "text", "text": "The answer is 42, and needle is in code.rs."}]), "end_turn"),
    ])
    .await;
    let settings = AgentSettings {
        models: [("haiku".to_owned(), "claude-haiku-test".to_owned())].into(),
        ..AgentSettings::default()
    };
    let runner: Arc<dyn AgentRunner> =
        Arc::new(ApiRunner::new(&server.base, "sk-test", settings).unwrap());
    let ctx = ctx_with_runner(&f, runner);
    let r = pool().call("Task", json!({"description": "find the answer", "prompt": "What is the answer?", "subagent_type": "Explore"}), &ctx).await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.tool, "Agent");
    // Explore is one-shot: no trailer.
    assert_eq!(r.text(), "The answer is 42, and needle is in code.rs.");
    assert_eq!(r.data["toolUses"], 2);
    assert_eq!(r.data["totalTokens"], 240);
    let requests = server.requests.lock().unwrap().clone();
    assert_eq!(requests.len(), 2);
    let (head, first) = &requests[0];
    assert!(head.starts_with("POST /v1/messages HTTP/1.1"), "{head}");
    assert!(head.to_ascii_lowercase().contains("x-api-key: sk-test"));
    assert!(
        head.to_ascii_lowercase()
            .contains("anthropic-version: 2023-06-01")
    );
    assert_eq!(first["model"], "claude-haiku-test");
    assert_eq!(
        first["messages"][0],
        json!({"role": "user", "content": "What is the answer?"})
    );
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"Read") && names.contains(&"Grep") && names.contains(&"Bash"),
        "{names:?}"
    );
    for forbidden in [
        "Edit",
        "Write",
        "Agent",
        "AskUserQuestion",
        "TaskOutput",
        "ExitPlanMode",
    ] {
        assert!(
            !names.contains(&forbidden),
            "Explore must not get {forbidden}"
        );
    }
    let (_, second) = &requests[1];
    assert_eq!(second["messages"][1]["role"], "assistant");
    let results = &second["messages"][2]["content"];
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(results[0]["tool_use_id"], "toolu_1");
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .contains("the answer is 42"),
        "{results}"
    );
    assert_eq!(results[1]["tool_use_id"], "toolu_2");
    assert!(
        results[1]["content"].as_str().unwrap().contains("code.rs"),
        "{results}"
    );
    assert_eq!(results[1]["is_error"], false);
}

#[tokio::test]
async fn general_purpose_result_has_the_trailer_and_api_errors_are_reported() {
    let f = Fixture::new();
    let server = serve(vec![message(
        json!([{"type": "text", "text": "done"}]),
        "end_turn",
    )])
    .await;
    let runner = api_runner(&server);
    let ctx = ctx_with_runner(&f, runner);
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "p", "model": "opus"}),
            &ctx,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    let text = r.text();
    assert!(text.starts_with("done\n\nagentId: "), "{text}");
    assert!(
        text.contains("<usage>total_tokens: 120\ntool_uses: 0\nduration_ms: "),
        "{text}"
    );
    assert_eq!(
        server.requests.lock().unwrap()[0].1["model"],
        "claude-opus-4-1"
    );
    // The script is exhausted: the API's error message is reported.
    let r = pool()
        .call("Agent", json!({"description": "d", "prompt": "p"}), &ctx)
        .await;
    assert_error(
        &r,
        "The Messages API answered 400 Bad Request: script exhausted",
    );
}

#[tokio::test]
async fn command_runner_and_background_agent_through_task_output() {
    let f = Fixture::new();
    let runner: Arc<dyn AgentRunner> = Arc::new(CommandRunner::new(vec![
        "sh".into(),
        "-c".into(),
        "echo \"agent $AGENT_TOOLS_AGENT_TYPE read: $(tail -n 1)\"".into(),
    ]));
    let ctx = ctx_with_runner(&f, runner);
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "hello there", "subagent_type": "Plan"}),
            &ctx,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    assert_eq!(r.text(), "agent Plan read: hello there");
    let r = pool()
        .call(
            "Agent",
            json!({"description": "bg", "prompt": "in background", "run_in_background": true}),
            &ctx,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    assert!(
        r.text()
            .starts_with("Async agent launched successfully.\nagentId: "),
        "{}",
        r.text()
    );
    let id = r.data["agentId"].as_str().unwrap().to_owned();
    let out = task_output(&ctx, &id).await;
    assert!(!out.is_error, "{}", out.text());
    let text = out.text();
    assert!(text.contains("<status>completed</status>"), "{text}");
    assert!(
        text.contains("agent general-purpose read: in background"),
        "{text}"
    );
    assert!(
        text.contains("<task_type>local_agent</task_type>"),
        "{text}"
    );
    // A failing command is reported with its stderr.
    let failing: Arc<dyn AgentRunner> = Arc::new(CommandRunner::new(vec![
        "sh".into(),
        "-c".into(),
        "echo broken >&2; exit 3".into(),
    ]));
    let ctx = ctx_with_runner(&f, failing);
    let r = pool()
        .call("Agent", json!({"description": "d", "prompt": "p"}), &ctx)
        .await;
    assert_error(&r, "exited with exit status: 3: broken");
}

#[tokio::test]
async fn agent_types_rules_and_errors() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.path(".agent-tools/agents")).unwrap();
    std::fs::write(f.path(".agent-tools/agents/reviewer.md"), "---\nname: reviewer\ndescription: Reviews code\ntools: Read, Grep\nmodel: haiku\n---\nYou review code.\n").unwrap();
    std::fs::write(
        f.path(".agent-tools/agents/bad.md"),
        "---\nname: bad\npermissionMode: yolo\n---\nx\n",
    )
    .unwrap();
    let runner: Arc<dyn AgentRunner> = Arc::new(CommandRunner::new(vec!["cat".into()]));
    let ctx = ctx_with_runner(&f, runner);
    // Unapproved, the file's permissionMode is not even read.
    assert!(tools_agent::testing::load_agents(&ctx).1.is_empty());
    f.approve_project();
    let (agents, errors) = tools_agent::testing::load_agents(&ctx);
    let reviewer = agents.iter().find(|a| a.name == "reviewer").unwrap();
    assert_eq!(
        reviewer.tools.as_deref(),
        Some(&["Read".to_owned(), "Grep".to_owned()][..])
    );
    assert_eq!(reviewer.system_prompt, "You review code.");
    assert!(
        errors[0].contains("permissionMode: unknown permission mode `yolo`"),
        "{errors:?}"
    );
    let names: Vec<String> = tools_for_agent(reviewer, &all_tools(), false)
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert_eq!(names, ["Read", "Grep"]);
    // Background agents get only the async allow-list.
    let gp = &builtin_agents()[0];
    let bg: Vec<String> = tools_for_agent(gp, &all_tools(), true)
        .iter()
        .map(|t| t.name().to_owned())
        .collect();
    assert!(
        bg.contains(&"Bash".to_owned())
            && !bg.contains(&"Config".to_owned())
            && !bg.contains(&"TaskOutput".to_owned()),
        "{bg:?}"
    );
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "review this", "subagent_type": "reviewer"}),
            &ctx,
        )
        .await;
    assert!(
        r.text().starts_with("You review code.\n\nreview this"),
        "{}",
        r.text()
    );
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "p", "subagent_type": "nope"}),
            &ctx,
        )
        .await;
    assert_error(
        &r,
        "Agent type 'nope' not found. Available agents: general-purpose, Explore, Plan, reviewer",
    );
    // Denied by rule.
    let rule = tool_core::SourcedRule {
        rule: tool_core::PermissionRule::parse("Agent(Explore)").unwrap(),
        behavior: tool_core::RuleBehavior::Deny,
        source: tool_core::RuleSource {
            kind: tool_core::RuleSourceKind::CliArg,
            file: None,
            root: f.root.clone(),
        },
    };
    let denied = f
        .builder()
        .permissions(tool_core::PermissionEngine::new(vec![rule]))
        .service(Arc::new(CommandRunner::new(vec!["cat".into()])) as Arc<dyn AgentRunner>)
        .build();
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": "p", "subagent_type": "Explore"}),
            &denied,
        )
        .await;
    assert_error(
        &r,
        "Agent type 'Explore' has been denied by permission rule 'Agent(Explore)' from",
    );
    // No runner.
    let bare = f.ctx();
    assert_error(
        &pool()
            .call("Agent", json!({"description": "d", "prompt": "p"}), &bare)
            .await,
        "No sub-agent runner is configured",
    );
    // Sub-agents cannot nest.
    let sub = tools_agent::testing::subagent_context(&ctx, "a1", None);
    assert_error(
        &pool()
            .call("Agent", json!({"description": "d", "prompt": "p"}), &sub)
            .await,
        "Sub-agents cannot launch other agents",
    );
}

#[tokio::test]
async fn command_runner_streams_long_prompts_and_caps_output() {
    let f = Fixture::new();
    // `cat` echoes while it reads: writing the whole prompt before reading would deadlock.
    let runner: Arc<dyn AgentRunner> = Arc::new(CommandRunner::new(vec!["cat".into()]));
    let ctx = ctx_with_runner(&f, runner);
    let prompt = "x".repeat(300_000);
    let r = pool()
        .call(
            "Agent",
            json!({"description": "d", "prompt": prompt, "subagent_type": "Plan"}),
            &ctx,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
    let content = r.data["content"].as_str().unwrap();
    assert!(content.chars().count() < 101_000, "{}", content.len());
    assert!(
        content.contains("characters truncated"),
        "cut in the middle"
    );
}

/// Whether a process is gone (a zombie waiting for a reaper counts as gone).
fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
    }
}

async fn wait_until(mut ready: impl FnMut() -> bool) {
    for _ in 0..600 {
        if ready() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("condition never became true");
}

/// An aborted foreground Agent with the command runner kills the runner's whole process
/// group: the grandchild the command started does not survive — whether the call is
/// cancelled or its future dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborting_a_command_agent_kills_its_grandchildren() {
    let proc_found = std::path::Path::new("/proc/self/stat").exists();
    if !test_support::peers::require("/proc (to find the grandchild)", proc_found) {
        return;
    }
    for drop_future in [false, true] {
        let f = Fixture::new();
        let pid_file = f.path("grandchild.pid");
        let runner: Arc<dyn AgentRunner> = Arc::new(CommandRunner::new(vec![
            "sh".into(),
            "-c".into(),
            format!("sleep 300 & echo $! > '{}'; wait", pid_file.display()),
        ]));
        let ctx = ctx_with_runner(&f, runner);
        let tools = pool();
        let call = tools.call("Agent", json!({"description": "d", "prompt": "p"}), &ctx);
        let started = async {
            wait_until(|| {
                std::fs::read_to_string(&pid_file).is_ok_and(|t| t.trim().parse::<u32>().is_ok())
            })
            .await;
        };
        let grandchild: u32;
        if drop_future {
            tokio::select! {
                r = call => panic!("the agent finished: {}", r.text()),
                () = started => {}
            }
            grandchild = std::fs::read_to_string(&pid_file)
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            // The call's future is dropped here.
        } else {
            let cancel = ctx.cancel_token().clone();
            let pid_file = pid_file.clone();
            let aborter = tokio::spawn(async move {
                wait_until(|| {
                    std::fs::read_to_string(&pid_file)
                        .is_ok_and(|t| t.trim().parse::<u32>().is_ok())
                })
                .await;
                cancel.cancel();
            });
            let r = call.await;
            aborter.await.unwrap();
            assert!(r.is_error, "{}", r.text());
            grandchild = std::fs::read_to_string(f.path("grandchild.pid"))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
        }
        // A bounded wait for SIGKILL to take effect: it panics if the grandchild lives on.
        wait_until(|| gone(grandchild)).await;
    }
}

/// Records the permission mode each sub-agent's tools run in.
struct ModeRecorder(Mutex<Vec<tool_core::PermissionMode>>);

#[async_trait::async_trait]
impl AgentRunner for ModeRecorder {
    async fn run(
        &self,
        request: tools_agent::AgentRequest,
    ) -> Result<tools_agent::AgentOutcome, tool_core::ToolError> {
        self.0
            .lock()
            .unwrap()
            .push(request.context.permission_mode());
        Ok(tools_agent::AgentOutcome {
            output: "done".into(),
            total_tokens: 0,
            tool_uses: 0,
        })
    }
}

/// An agent file (which anyone may have put in the project) never gives a sub-agent a mode
/// that allows more than its caller's; a stricter one applies.
#[tokio::test]
async fn an_agent_file_never_widens_the_callers_mode() {
    use tool_core::PermissionMode;
    let f = Fixture::new();
    std::fs::create_dir_all(f.path(".agent-tools/agents")).unwrap();
    for mode in PermissionMode::ALL {
        std::fs::write(
            f.path(&format!(".agent-tools/agents/m-{mode}.md")),
            format!("---\nname: m-{mode}\ndescription: d\npermissionMode: {mode}\n---\nx\n"),
        )
        .unwrap();
    }
    f.approve_project();
    let mut cases = 0;
    for caller in PermissionMode::ALL {
        for file in PermissionMode::ALL {
            let recorder = Arc::new(ModeRecorder(Mutex::new(Vec::new())));
            let runner: Arc<dyn AgentRunner> = recorder.clone();
            let ctx = runner_builder(&f, runner).mode(caller).build();
            let r = pool()
                .call(
                    "Agent",
                    json!({"description": "d", "prompt": "p", "subagent_type": format!("m-{file}")}),
                    &ctx,
                )
                .await;
            assert!(!r.is_error, "{caller}/{file}: {}", r.text());
            // One order, plan strictest: a plan-mode caller starts plan-mode agents only.
            let expected = file.capped_at(caller);
            assert_eq!(
                recorder.0.lock().unwrap().as_slice(),
                [expected],
                "caller {caller}, file {file}"
            );
            cases += 1;
        }
    }
    assert_eq!(cases, 25);
}
