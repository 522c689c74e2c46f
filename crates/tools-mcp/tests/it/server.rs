//! The server adapter in process, over streamable HTTP, driven by the Python client:
//! progress notifications and cancellation reach the tool through the one execution path.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use test_support::mcp::run_client;
use test_support::peers::peer;
use tool_core::{
    CancellationToken, Progress, ServiceType, Summariser, Tool, ToolCategory, ToolContext,
    ToolError, ToolMeta, ToolPool, ToolResult, Typed, TypedTool,
};
use tools_mcp::{ClientHook, HttpOptions, LivePool, SessionFactory, serve_http};

/// Input of the test tools
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Empty {}

/// Reports three progress events, then returns.
struct Tick;

#[async_trait]
impl TypedTool for Tick {
    type Input = Empty;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Tick")
        .category(ToolCategory::Shell)
        .read_only()
        .read_only_hint();
    async fn call(&self, _: Empty, ctx: &ToolContext) -> Result<ToolResult<String>, ToolError> {
        for i in 1..=3 {
            ctx.progress().report_progress(Progress {
                message: format!("step {i}"),
                progress: Some(f64::from(i)),
                total: Some(3.0),
            });
        }
        Ok(ToolResult::ok("ticked".to_owned()))
    }
}

/// Writes a file so the client knows it started, then waits for cancellation and records it.
struct Wait {
    started: std::path::PathBuf,
    cancelled: Arc<AtomicBool>,
}

#[async_trait]
impl TypedTool for Wait {
    type Input = Empty;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Wait")
        .category(ToolCategory::Shell)
        .read_only();
    fn is_concurrency_safe(&self, _: &Empty) -> bool {
        false
    }
    async fn call(&self, _: Empty, ctx: &ToolContext) -> Result<ToolResult<String>, ToolError> {
        std::fs::write(&self.started, "").map_err(|e| ToolError::io(&self.started, e))?;
        tokio::select! {
            () = ctx.cancel_token().cancelled() => {
                self.cancelled.store(true, Ordering::SeqCst);
                Err(ToolError::Cancelled { tool: "Wait".into() })
            }
            () = tokio::time::sleep(Duration::from_secs(120)) => Ok(ToolResult::ok("waited".to_owned())),
        }
    }
}

/// Asks the host's summariser (the MCP client's sampling when it offers it).
struct Summarise;

#[async_trait]
impl TypedTool for Summarise {
    type Input = Empty;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Summarise")
        .category(ToolCategory::Web)
        .read_only();
    async fn call(&self, _: Empty, ctx: &ToolContext) -> Result<ToolResult<String>, ToolError> {
        let Some(summariser) = ctx.services().get::<Arc<dyn Summariser>>() else {
            return Ok(ToolResult::ok("no summariser".to_owned()));
        };
        let text = summariser
            .summarise("<html>page text</html>", "What does the page say?")
            .await?;
        Ok(ToolResult::ok(text))
    }
}

/// The cancellation token of a session's own context, which ends when the session ends.
struct SessionStop(CancellationToken);

impl ServiceType for SessionStop {}

/// Input of [`Sleep`]
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SleepInput {
    /// The command line the `sleep` process gets in place of its name
    marker: String,
    /// How long to sleep (600 s unless given)
    #[serde(default = "ten_minutes")]
    seconds: u64,
    /// Return at once and let the process run until the session ends
    #[serde(default)]
    run_in_background: bool,
    /// In the background, answer only once this file exists (as a background command
    /// answers once it is ready); the call may be cancelled until then
    #[serde(default)]
    ready_file: Option<std::path::PathBuf>,
}

/// Runs `sleep SECONDS` under the marker's name: until it ends or the call is cancelled (the
/// process is killed then) or dropped (it dies with its handle), or in the background until
/// the session ends (its context must hold a [`SessionStop`]), answering once its
/// `ready_file` exists, when it names one.
pub(crate) struct Sleep;

#[async_trait]
impl TypedTool for Sleep {
    type Input = SleepInput;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Sleep").category(ToolCategory::Shell);
    async fn call(
        &self,
        input: SleepInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<String>, ToolError> {
        let mut child = tokio::process::Command::new("sleep")
            .arg0(&input.marker)
            .arg(input.seconds.to_string())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| ToolError::fatal(format!("cannot start sleep: {e}")))?;
        if input.run_in_background {
            let stop = ctx
                .services()
                .require::<Arc<SessionStop>>("the session's token")?;
            if let Some(ready) = &input.ready_file {
                while !ready.exists() {
                    tokio::select! {
                        () = ctx.cancel_token().cancelled() => {
                            let _ = child.kill().await;
                            return Err(ToolError::Cancelled { tool: "Sleep".into() });
                        }
                        () = tokio::time::sleep(Duration::from_millis(20)) => {}
                    }
                }
            }
            tokio::spawn(async move {
                tokio::select! {
                    () = stop.0.cancelled() => {
                        let _ = child.kill().await;
                    }
                    _ = child.wait() => {}
                }
            });
            return Ok(ToolResult::ok(format!("started {}", input.marker)));
        }
        tokio::select! {
            () = ctx.cancel_token().cancelled() => {
                let _ = child.kill().await;
                Err(ToolError::Cancelled { tool: "Sleep".into() })
            }
            _ = child.wait() => Ok(ToolResult::ok(format!("slept {}", input.marker))),
        }
    }
}

fn ten_minutes() -> u64 {
    600
}

/// Contexts in `root` with their state in `root/state`.
pub(crate) fn contexts_in(root: &std::path::Path) -> SessionFactory {
    let root = root.to_path_buf();
    Arc::new(move |_: &tools_mcp::Principal| {
        Ok(ToolContext::builder(&root)
            .state_dir(root.join("state"))
            .build())
    })
}

/// Contexts in `root` that allow Sleep and hold their own [`SessionStop`].
pub(crate) fn sleepers(root: &std::path::Path) -> SessionFactory {
    let root = root.to_path_buf();
    Arc::new(move |_: &tools_mcp::Principal| {
        let ctx = ToolContext::builder(&root)
            .state_dir(root.join("state"))
            .allow("Sleep")
            .build();
        let stop = SessionStop(ctx.cancel_token().clone());
        ctx.services().insert(Arc::new(stop));
        Ok(ctx)
    })
}

/// Serves `tools` over HTTP on 127.0.0.1 in this process; returns the URL and the token
/// that stops the server.
pub async fn serve(
    tools: Vec<Arc<dyn Tool>>,
    root: &std::path::Path,
) -> (
    String,
    CancellationToken,
    tokio::task::JoinHandle<Result<(), ToolError>>,
) {
    serve_with(contexts_in(root), ToolPool::new(tools)).await
}

/// Serves `pool` over streamable HTTP on a free loopback port: the URL, the token that
/// stops the server, and the server's task.
pub async fn serve_with(
    factory: SessionFactory,
    pool: impl Into<LivePool>,
) -> (
    String,
    CancellationToken,
    tokio::task::JoinHandle<Result<(), ToolError>>,
) {
    serve_options(
        factory,
        pool,
        HttpOptions::new("127.0.0.1:0".parse().unwrap()),
    )
    .await
}

/// [`serve_with`] with `options` (whose address should be a free loopback port).
pub async fn serve_options(
    factory: SessionFactory,
    pool: impl Into<LivePool>,
    options: HttpOptions,
) -> (
    String,
    CancellationToken,
    tokio::task::JoinHandle<Result<(), ToolError>>,
) {
    let shutdown = CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let server = tokio::spawn(serve_http(
        pool.into(),
        factory,
        options,
        shutdown.clone(),
        move |addr| {
            let _ = tx.send(addr);
        },
    ));
    let addr = rx.await.unwrap();
    (format!("http://{addr}/mcp"), shutdown, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summariser_uses_the_clients_sampling_when_offered() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (url, shutdown, server) = serve(vec![Arc::new(Typed::new(Summarise))], dir.path()).await;
    let steps = json!([{"op": "call", "tool": "Summarise", "args": {}}]);
    let with = json!({"transport": {"http": url}, "sample": "It says hello.", "steps": steps});
    let without = json!({"transport": {"http": url}, "steps": steps});
    let lines = tokio::task::spawn_blocking(move || {
        (run_client(&peers, &with), run_client(&peers, &without))
    })
    .await
    .unwrap();
    assert_eq!(lines.0[0]["text"], "It says hello.", "{:#?}", lines.0);
    let sampled = &lines.0[1]["sampled"][0];
    assert!(
        sampled["system"].as_str().unwrap().contains("untrusted"),
        "{sampled}"
    );
    assert_eq!(lines.1[0]["text"], "no summariser", "{:#?}", lines.1);
    shutdown.cancel();
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_cancellation_reach_the_tool_over_http() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let started = root.join("started");
    let cancelled = Arc::new(AtomicBool::new(false));
    let tools: Vec<Arc<dyn Tool>> = vec![
        Arc::new(Typed::new(Tick)),
        Arc::new(Typed::new(Wait {
            started: started.clone(),
            cancelled: Arc::clone(&cancelled),
        })),
    ];
    let (url, shutdown, server) = serve(tools, &root).await;
    let scenario = json!({
        "transport": {"http": url},
        "steps": [
            {"op": "list"},
            {"op": "call", "tool": "Tick", "args": {}},
            {"op": "call", "tool": "Wait", "args": {}, "cancel_when_file": started},
            {"op": "call", "tool": "Tick", "args": {}},
        ],
    });
    let lines = tokio::task::spawn_blocking(move || run_client(&peers, &scenario))
        .await
        .unwrap();
    let names: Vec<&str> = lines[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names, ["Tick", "Wait"]);
    assert_eq!(lines[0]["tools"][0]["annotations"]["readOnlyHint"], true);
    assert_eq!(lines[1]["text"], "ticked");
    let progress = lines[1]["progress"].as_array().unwrap();
    assert_eq!(progress.len(), 3, "{progress:#?}");
    assert_eq!(progress[2]["message"], "step 3");
    assert_eq!(progress[2]["total"], 3.0);
    assert_eq!(lines[2]["cancelled"], true, "{lines:#?}");
    assert_eq!(
        lines[3]["text"], "ticked",
        "the session goes on after a cancel"
    );
    // The cancellation reached the tool's token (polled: the notification is asynchronous).
    let mut seen = false;
    for _ in 0..200 {
        if cancelled.load(Ordering::SeqCst) {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(seen, "the tool never saw the client's cancellation");
    shutdown.cancel();
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_hook_sees_each_session_and_its_client_capabilities() {
    let Some(peers) = peer("py/mcp") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let seen: Arc<std::sync::Mutex<Vec<(String, bool)>>> = Arc::default();
    let record = Arc::clone(&seen);
    let hook = ClientHook(Arc::new(move |ctx: &ToolContext, _peer, caps| {
        record
            .lock()
            .unwrap()
            .push((ctx.session_id().to_owned(), caps.elicitation.is_some()));
    }));
    let factory: SessionFactory = Arc::new(move |_: &tools_mcp::Principal| {
        let ctx = ToolContext::builder(&root)
            .state_dir(root.join("state"))
            .build();
        ctx.services().insert(hook.clone());
        Ok(ctx)
    });
    let pool = ToolPool::new(vec![Arc::new(Typed::new(Tick))]);
    let (url, shutdown, server) = serve_with(factory, pool).await;
    let steps = json!([{"op": "call", "tool": "Tick", "args": {}}]);
    let with = json!({"transport": {"http": url}, "elicit": "accept", "steps": steps});
    let without = json!({"transport": {"http": url}, "steps": steps});
    tokio::task::spawn_blocking(move || (run_client(&peers, &with), run_client(&peers, &without)))
        .await
        .unwrap();
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_ne!(seen[0].0, seen[1].0, "each MCP session has its own context");
    assert_eq!((seen[0].1, seen[1].1), (true, false));
    shutdown.cancel();
    server.await.unwrap().unwrap();
}
