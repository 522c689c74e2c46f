//! The server over streamable HTTP stopping, in process: once its shutdown token fires,
//! `/healthz` answers 503 on a new connection and a request on a kept-alive one gets a
//! JSON-RPC error saying the server is shutting down, while the call in flight finishes
//! within the grace period and the server then returns.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use test_support::http::{Conn, call, modern, text};
use tool_core::{
    Tool, ToolCategory, ToolContext, ToolError, ToolMeta, ToolPool, ToolResult, Typed, TypedTool,
};
use tools_mcp::HttpOptions;

use crate::http_errors::authority;
use crate::server::{contexts_in, serve_options};

/// Input of [`Pause`]
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PauseInput {
    /// How long to wait, in milliseconds
    millis: u64,
}

/// Waits, then says it finished.
struct Pause;

#[async_trait]
impl TypedTool for Pause {
    type Input = PauseInput;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Pause")
        .category(ToolCategory::Shell)
        .read_only();
    async fn call(
        &self,
        input: PauseInput,
        _: &ToolContext,
    ) -> Result<ToolResult<String>, ToolError> {
        tokio::time::sleep(Duration::from_millis(input.millis)).await;
        Ok(ToolResult::ok("finished".to_owned()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_with_503_on_healthz_and_on_kept_alive_connections() {
    let dir = tempfile::tempdir().unwrap();
    let factory = contexts_in(dir.path());
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Typed::new(Pause))];
    let mut options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    options.grace = Duration::from_secs(10);
    let (url, shutdown, server) = serve_options(factory, ToolPool::new(tools), options).await;
    let authority = authority(&url);
    // A kept-alive connection that has been used.
    let mut kept = {
        let authority = authority.clone();
        tokio::task::spawn_blocking(move || {
            let mut kept = Conn::open(&authority);
            assert_eq!(kept.send("GET", "/healthz", &[], "").status, 200);
            kept
        })
        .await
        .unwrap()
    };
    // A call in flight when the shutdown comes.
    let inflight = {
        let authority = authority.clone();
        std::thread::spawn(move || {
            call(
                &mut Conn::open(&authority),
                1,
                "Pause",
                json!({"millis": 3000}),
                None,
                None,
            )
        })
    };
    tokio::time::sleep(Duration::from_millis(800)).await;
    shutdown.cancel();
    tokio::time::sleep(Duration::from_millis(200)).await;
    tokio::task::spawn_blocking(move || {
        // A new connection: /healthz says stopping.
        let mut stopping = Conn::open(&authority);
        let health = stopping.send("GET", "/healthz", &[], "");
        assert_eq!(health.status, 503, "{health:#?}");
        assert!(health.body.contains("stopping"), "{health:#?}");
        // The kept-alive connection: a JSON-RPC error saying the server is stopping.
        let (headers, body) = modern(
            7,
            "tools/call",
            json!({"name": "Pause", "arguments": {"millis": 0}}),
            None,
            None,
        );
        let refused = kept.send("POST", "/mcp", &headers, &body);
        assert_eq!(refused.status, 503, "{refused:#?}");
        let message: Value = serde_json::from_str(&refused.body).expect("a JSON-RPC body");
        assert!(
            message["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("shutting down")),
            "{message:#}"
        );
        // The call in flight finishes.
        let answer = inflight.join().expect("the call in flight");
        assert!(text(&answer).contains("finished"), "{answer:#}");
    })
    .await
    .unwrap();
    // Then the server returns, cleanly.
    let outcome = tokio::time::timeout(Duration::from_secs(60), server)
        .await
        .expect("the server did not stop within 60 s of its shutdown");
    outcome.unwrap().unwrap();
}
