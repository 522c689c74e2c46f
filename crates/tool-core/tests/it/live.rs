//! The live batch runner: calls start as they arrive under the concurrency rule, results
//! come back in call order. Every wait is bounded by a generous guard; no timing is
//! asserted.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::watch;
use tool_core::{
    CallResult, LiveBatch, PermissionMode, PoolFuture, ToolCall, ToolContext, ToolError, ToolMeta,
    ToolPool, ToolResult, TypedTool,
};

use crate::fixtures::{Probe, arc, context, tmp};

/// Far longer than any step takes: a hang fails the test instead of stalling it.
const GUARD: Duration = Duration::from_secs(30);

/// A concurrency-safe call that waits until [`Open`] is called (a blocking TaskOutput).
struct Wait(Arc<watch::Sender<bool>>);
/// A concurrency-safe call that ends every [`Wait`] (a TaskStop).
struct Open(Arc<watch::Sender<bool>>);

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

#[async_trait]
impl TypedTool for Wait {
    type Input = Nothing;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Wait").read_only();
    async fn call(&self, _: Nothing, ctx: &ToolContext) -> Result<ToolResult<String>, ToolError> {
        let mut open = self.0.subscribe();
        tokio::select! {
            _ = open.wait_for(|o| *o) => Ok(ToolResult::ok("waited".to_owned())),
            () = ctx.cancel_token().cancelled() => Err(ToolError::Cancelled { tool: "Wait".into() }),
        }
    }
}

#[async_trait]
impl TypedTool for Open {
    type Input = Nothing;
    type Output = String;
    const META: ToolMeta = ToolMeta::new("Open").concurrency_safe();
    async fn call(&self, _: Nothing, _: &ToolContext) -> Result<ToolResult<String>, ToolError> {
        self.0.send_replace(true);
        Ok(ToolResult::ok("opened".to_owned()))
    }
}

fn probe(label: &str, extra: Value) -> ToolCall {
    let mut input = json!({"label": label});
    if let (Value::Object(a), Value::Object(b)) = (&mut input, extra) {
        a.extend(b);
    }
    ToolCall::new("Probe", input)
}

/// Takes `n` results, each within the guard.
async fn take(live: &mut LiveBatch, n: usize) -> Vec<CallResult> {
    let mut out = Vec::new();
    for _ in 0..n {
        let r = tokio::time::timeout(GUARD, live.next())
            .await
            .expect("a result within the guard")
            .expect("a result for every call");
        out.push(r);
    }
    out
}

fn texts(results: &[CallResult]) -> Vec<String> {
    results.iter().map(CallResult::text).collect()
}

#[tokio::test]
async fn a_safe_call_sent_during_a_wait_runs_beside_it_and_ends_it() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let gate = Arc::new(watch::Sender::new(false));
    let pool = ToolPool::new(vec![
        arc(Wait(Arc::clone(&gate))),
        arc(Open(Arc::clone(&gate))),
    ]);
    let mut live = pool.live(&ctx);
    // Two waits, then (after they started) the call that ends both.
    live.push(ToolCall::new("Wait", json!({})));
    live.push(ToolCall::new("Wait", json!({})));
    tokio::time::sleep(Duration::from_millis(20)).await;
    live.push(ToolCall::new("Open", json!({})));
    let results = take(&mut live, 3).await;
    assert_eq!(texts(&results), ["waited", "waited", "opened"]);
    assert!(live.is_empty());
    assert!(live.next().await.is_none());
}

#[tokio::test]
async fn an_exclusive_call_waits_for_those_before_and_holds_those_after() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let p = Probe::default();
    let log = Arc::clone(&p.log);
    let max = Arc::clone(&p.max_in_flight);
    let mut live = ToolPool::new(vec![arc(p)]).live(&ctx);
    live.push(probe("a", json!({"sleep_ms": 30, "safe": true})));
    live.push(probe("b", json!({"sleep_ms": 30, "safe": true})));
    live.push(probe("w", json!({"sleep_ms": 10})));
    live.push(probe("c", json!({"sleep_ms": 30, "safe": true})));
    let results = take(&mut live, 4).await;
    assert_eq!(texts(&results), ["a", "b", "w", "c"]);
    let log = log.lock().unwrap().clone();
    let pos = |s: &str| log.iter().position(|l| l == s).unwrap();
    assert!(pos("end a") < pos("start w") && pos("end b") < pos("start w"));
    assert!(pos("end w") < pos("start c"));
    assert_eq!(max.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn at_most_ten_safe_calls_run_at_once_and_results_keep_call_order() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let p = Probe::default();
    let max = Arc::clone(&p.max_in_flight);
    let mut live = ToolPool::new(vec![arc(p)]).live(&ctx);
    // Later calls sleep less, so finishing order differs from call order.
    for i in 0..15 {
        live.push(probe(
            &format!("s{i}"),
            json!({"sleep_ms": 150 - i * 10, "safe": true}),
        ));
    }
    let results = take(&mut live, 15).await;
    assert_eq!(
        texts(&results),
        (0..15).map(|i| format!("s{i}")).collect::<Vec<_>>()
    );
    assert_eq!(max.load(Ordering::SeqCst), 10);
}

#[tokio::test]
async fn a_sibling_error_cancels_its_group_and_a_later_call_starts_a_new_one() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let mut live = ToolPool::new(vec![arc(Probe {
        cancels_siblings: true,
        ..Probe::default()
    })])
    .live(&ctx);
    live.push(probe("slow", json!({"sleep_ms": 60_000, "safe": true})));
    live.push(probe(
        "bad",
        json!({"sleep_ms": 10, "safe": true, "fail": "boom"}),
    ));
    let results = take(&mut live, 2).await;
    assert_eq!(
        texts(&results),
        [
            "<tool_use_error>Cancelled: parallel tool call Probe errored</tool_use_error>",
            "<tool_use_error>boom</tool_use_error>"
        ]
    );
    live.push(probe("after", json!({"sleep_ms": 10, "safe": true})));
    assert_eq!(texts(&take(&mut live, 1).await), ["after"]);
}

#[tokio::test]
async fn a_call_after_an_exclusive_one_is_prepared_with_the_pool_of_its_start() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let gate = Arc::new(watch::Sender::new(false));
    let first = ToolPool::new(vec![arc(Probe::default())]);
    let second = ToolPool::new(vec![arc(Probe::default()), arc(Open(Arc::clone(&gate)))]);
    let current = Arc::new(Mutex::new(first));
    let source = Arc::clone(&current);
    // A source that is not ready at once, like a pool waiting for an MCP server.
    let mut live = LiveBatch::new(
        &ctx,
        Arc::new(move |_: &ToolCall| -> PoolFuture {
            let pool = source.lock().unwrap().clone();
            Box::pin(async move {
                tokio::task::yield_now().await;
                pool
            })
        }),
    );
    live.push(probe("w", json!({"sleep_ms": 200})));
    // Not in the pool yet: prepared once `w` has finished, with the pool of that moment.
    live.push(ToolCall::new("Open", json!({})));
    tokio::time::sleep(Duration::from_millis(50)).await;
    *current.lock().unwrap() = second;
    let results = take(&mut live, 2).await;
    assert_eq!(texts(&results), ["w", "opened"]);
}

#[tokio::test]
async fn results_in_place_of_calls_keep_their_order() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let mut live = ToolPool::new(vec![arc(Probe::default())]).live(&ctx);
    live.push(probe("a", json!({"sleep_ms": 50, "safe": true})));
    live.push_result(tool_core::error_result(
        "",
        &ToolError::respond("line 2: not JSON"),
    ));
    live.push(ToolCall::new("Nope", json!({})));
    live.push(probe("b", json!({"safe": true})));
    let results = take(&mut live, 4).await;
    assert_eq!(results[0].text(), "a");
    assert!(results[1].text().contains("line 2"));
    assert!(results[2].text().contains("Nope"));
    assert_eq!(results[3].text(), "b");
}
