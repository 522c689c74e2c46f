//! The server over streamable HTTP stopping, in process: once its shutdown token fires,
//! `/healthz` answers 503 on a new connection and a request on a kept-alive one gets a
//! JSON-RPC error saying the server is shutting down, while the call in flight finishes
//! within the grace period and the server then returns. The answers of many calls that end
//! together — finishing within the grace, or cancelled at its end — each reach their
//! client whole, in legacy sessions and on protocol 2026-07-28 alike, before the MCP layer
//! is stopped.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use test_support::http::{
    Conn, Response, call, healthz, legacy_headers, legacy_session, modern, text,
};
use tokio::sync::Semaphore;
use tool_core::{
    CancellationToken, Tool, ToolCategory, ToolContext, ToolError, ToolMeta, ToolPool, ToolResult,
    Typed, TypedTool,
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

/// How large each answer of [`Hold`] is: large enough that sending the answers of many
/// calls ending together takes a while.
const ANSWER_BYTES: usize = 2 << 20;

/// Input of [`Hold`]
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct HoldInput {
    /// Named in the answer
    tag: u64,
}

/// Says it started, holds until released or cancelled, then answers with its tag and
/// [`ANSWER_BYTES`] of padding (as a command stopped by a cancellation still reports the
/// output it had).
struct Hold {
    started: Arc<Semaphore>,
    release: CancellationToken,
}

#[async_trait]
impl TypedTool for Hold {
    type Input = HoldInput;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Hold")
        .category(ToolCategory::Shell)
        .read_only()
        .max_result_chars(usize::MAX);
    async fn call(
        &self,
        input: HoldInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<String>, ToolError> {
        self.started.add_permits(1);
        tokio::select! {
            () = self.release.cancelled() => {}
            () = ctx.cancel_token().cancelled() => {}
        }
        let mut text = format!("held {}\n", input.tag);
        text.push_str(&"x".repeat(ANSWER_BYTES));
        Ok(ToolResult::ok(text))
    }
}

/// How many calls of protocol 2026-07-28 are in flight when the server stops.
const MODERN_CALLS: u64 = 4;

/// How many calls of a legacy session are in flight when the server stops (more: their
/// answers go out one after the other through the session, each written as an SSE event).
const LEGACY_CALLS: u64 = 12;

/// Starts [`MODERN_CALLS`] calls of [`Hold`] on protocol 2026-07-28 and [`LEGACY_CALLS`]
/// in a legacy session, each on its own connection; stops the server once all are in
/// flight; ends them together (`release`d once the server is stopping, or cancelled at the
/// end of `grace`); and checks that every call got its answer whole and that the server
/// then returned. Before the shutdown waited for the answers to go out, most runs lost
/// some: legacy ones as an SSE stream without the answer, 2026-07-28 ones as a 500.
async fn answers_of_calls_ending_together_reach_their_clients(grace: Duration, release: bool) {
    let dir = tempfile::tempdir().unwrap();
    let factory = contexts_in(dir.path());
    let started = Arc::new(Semaphore::new(0));
    let released = CancellationToken::new();
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Typed::new(Hold {
        started: Arc::clone(&started),
        release: released.clone(),
    }))];
    let mut options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    options.grace = grace;
    let (url, shutdown, server) = serve_options(factory, ToolPool::new(tools), options).await;
    let authority = authority(&url);
    let session = {
        let authority = authority.clone();
        tokio::task::spawn_blocking(move || legacy_session(&mut Conn::open(&authority), None))
            .await
            .unwrap()
            .expect("a legacy session")
    };
    let mut calls = Vec::new();
    for tag in 1..=MODERN_CALLS + LEGACY_CALLS {
        let authority = authority.clone();
        let (headers, body) = if tag <= MODERN_CALLS {
            modern(
                tag,
                "tools/call",
                json!({"name": "Hold", "arguments": {"tag": tag}}),
                None,
                None,
            )
        } else {
            let body = json!({"jsonrpc": "2.0", "id": tag, "method": "tools/call",
                "params": {"name": "Hold", "arguments": {"tag": tag}}});
            (legacy_headers(&session, None), body.to_string())
        };
        calls.push(std::thread::spawn(move || {
            let mut conn = Conn::open(&authority);
            conn.write("POST", "/mcp", &headers, &body);
            (tag, conn.try_read())
        }));
    }
    let all = u32::try_from(MODERN_CALLS + LEGACY_CALLS).unwrap();
    tokio::time::timeout(Duration::from_secs(60), started.acquire_many(all))
        .await
        .expect("the calls did not all start within 60 s")
        .unwrap()
        .forget();
    shutdown.cancel();
    if release {
        // Once the server is stopping, every call finishes at once, well within the grace.
        let health = authority.clone();
        tokio::task::spawn_blocking(move || {
            while healthz(&health, Duration::from_secs(10)) != Some(503) {
                std::thread::yield_now();
            }
        })
        .await
        .unwrap();
        released.cancel();
    }
    let answers = tokio::task::spawn_blocking(move || {
        calls
            .into_iter()
            .map(|c| c.join().expect("a call's thread"))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let wrong: Vec<String> = answers
        .iter()
        .filter_map(|(tag, response)| what_is_wrong(*tag, response))
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} calls lost their answer:\n{}",
        wrong.len(),
        answers.len(),
        wrong.join("\n")
    );
    let outcome = tokio::time::timeout(Duration::from_secs(60), server)
        .await
        .expect("the server did not stop within 60 s of its shutdown");
    outcome.unwrap().unwrap();
}

/// What is wrong with the response to call `tag`, if anything: it must be a 200 holding
/// the call's whole answer.
fn what_is_wrong(tag: u64, response: &std::io::Result<Response>) -> Option<String> {
    let response = match response {
        Ok(response) => response,
        Err(e) => return Some(format!("call {tag}: no response ({e})")),
    };
    let found = response
        .messages()
        .into_iter()
        .find(|m| m["id"] == json!(tag));
    let complete = found.as_ref().is_some_and(|answer| {
        let text = text(answer);
        text.starts_with(&format!("held {tag}\n")) && text.len() > ANSWER_BYTES
    });
    if response.status == 200 && complete {
        return None;
    }
    let mut body = response.body.clone();
    body.truncate(300);
    Some(format!("call {tag}: {} {body:?}", response.status))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_of_calls_finishing_within_the_grace_reach_their_clients() {
    answers_of_calls_ending_together_reach_their_clients(Duration::from_secs(60), true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_of_calls_cancelled_at_the_end_of_the_grace_reach_their_clients() {
    answers_of_calls_ending_together_reach_their_clients(Duration::from_secs(1), false).await;
}
