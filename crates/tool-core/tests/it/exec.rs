//! The execution path and the batch runner: lookup, parse errors, panics, cancellation,
//! timeouts, the output budget and the concurrency rule.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{Value, json};
use tool_core::{PermissionMode, ToolCall, ToolPool, TypedTool};

use crate::fixtures::{Probe, Shell, arc, context, tmp};

fn probe_pool(probe: Probe) -> ToolPool {
    ToolPool::new(vec![arc(probe), arc(Shell)])
}

fn probe(label: &str, extra: Value) -> ToolCall {
    let mut input = json!({"label": label});
    if let (Value::Object(a), Value::Object(b)) = (&mut input, extra) {
        a.extend(b);
    }
    ToolCall::new("Probe", input)
}

#[tokio::test]
async fn unknown_tool_and_aliases() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let pool = probe_pool(Probe::default());
    let r = pool.call("Nope", json!({}), &ctx).await;
    assert!(r.is_error);
    assert_eq!(
        r.text(),
        "<tool_use_error>Error: No such tool available: Nope</tool_use_error>"
    );
    let r = pool.call("OldShell", json!({"command": "ls"}), &ctx).await;
    assert_eq!(
        (r.is_error, r.tool.as_str(), r.text().as_str()),
        (false, "Shell", "ran ls")
    );
}

#[tokio::test]
async fn input_errors_never_panic() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let pool = probe_pool(Probe::default());
    let odd = [
        Value::Null,
        json!([]),
        json!("str"),
        json!(1.5),
        json!({"label": null}),
        json!({"label": ["a"]}),
        json!({"label": "x", "sleep_ms": -1}),
        json!({"label": "x", "sleep_ms": "1e999"}),
        json!({"label": "x", "safe": "maybe"}),
        json!({"label": {"deep": {"deeper": [null, {}, []]}}}),
        json!({"label": "x", "unknown": {"a": 1}}),
    ];
    for input in odd {
        let r = pool.call("Probe", input.clone(), &ctx).await;
        assert!(r.is_error, "{input}");
        assert!(r.text().starts_with("<tool_use_error>InputValidationError: Probe failed due to the following issue(s):\n"), "{input}: {}", r.text());
        assert!(r.retryable);
    }
    let r = pool
        .call(
            "Probe",
            json!({"label": "ok", "sleep_ms": "5", "safe": "true"}),
            &ctx,
        )
        .await;
    assert!(!r.is_error, "{}", r.text());
}

#[tokio::test]
async fn a_panicking_tool_becomes_an_error_result() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let r = probe_pool(Probe::default())
        .call("Probe", json!({"label": "p", "panic": true}), &ctx)
        .await;
    assert!(r.is_error);
    assert!(
        r.text().contains("internal error: Probe panicked"),
        "{}",
        r.text()
    );
    assert!(!r.retryable);
}

#[tokio::test]
async fn cancellation_yields_a_well_formed_result() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let pool = probe_pool(Probe::default());
    let token = ctx.cancel_token().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        token.cancel();
    });
    let calls = vec![
        probe("a", json!({"sleep_ms": 60_000, "safe": true})),
        probe("b", json!({"sleep_ms": 60_000, "safe": true})),
        probe("c", json!({"sleep_ms": 60_000})),
    ];
    let results = pool.batch(calls, &ctx).await;
    assert_eq!(results.len(), 3);
    for r in &results {
        assert!(r.is_error);
        assert!(
            r.text().contains("Probe was cancelled before it completed"),
            "{}",
            r.text()
        );
    }
}

#[tokio::test]
async fn timeouts_cancel_the_call() {
    let (_g, dir) = tmp();
    let base = context(&dir, PermissionMode::BypassPermissions, &[]);
    let ctx = tool_core::ToolContext::builder(&dir)
        .mode(PermissionMode::BypassPermissions)
        .state_dir(base.state_dir())
        .call_timeout(Some(Duration::from_millis(50)))
        .build();
    let r = probe_pool(Probe::default())
        .call("Probe", json!({"label": "slow", "sleep_ms": 60_000}), &ctx)
        .await;
    assert!(r.is_error);
    assert!(
        r.text().contains("Probe timed out after 50ms"),
        "{}",
        r.text()
    );
}

#[tokio::test]
async fn concurrency_safe_runs_together_at_most_ten() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let p = Probe::default();
    let max = Arc::clone(&p.max_in_flight);
    let pool = probe_pool(p);
    let calls: Vec<ToolCall> = (0..15)
        .map(|i| probe(&format!("s{i}"), json!({"sleep_ms": 100, "safe": true})))
        .collect();
    let results = pool.batch(calls, &ctx).await;
    let texts: Vec<String> = results.iter().map(|r| r.text()).collect();
    assert_eq!(texts, (0..15).map(|i| format!("s{i}")).collect::<Vec<_>>());
    assert_eq!(max.load(Ordering::SeqCst), 10);
}

#[tokio::test]
async fn unsafe_calls_run_alone_in_order() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let p = Probe::default();
    let log = Arc::clone(&p.log);
    let max = Arc::clone(&p.max_in_flight);
    let pool = probe_pool(p);
    let calls = vec![
        probe("a", json!({"sleep_ms": 30, "safe": true})),
        probe("b", json!({"sleep_ms": 30, "safe": true})),
        probe("w", json!({"sleep_ms": 10})),
        probe("c", json!({"sleep_ms": 30, "safe": true})),
    ];
    let results = pool.batch(calls, &ctx).await;
    assert!(results.iter().all(|r| !r.is_error));
    let log = log.lock().unwrap().clone();
    let pos = |s: &str| log.iter().position(|l| l == s).unwrap();
    assert!(pos("end a") < pos("start w") && pos("end b") < pos("start w"));
    assert!(pos("end w") < pos("start c"));
    assert_eq!(max.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn an_error_of_a_sibling_cancelling_tool_cancels_its_group() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let pool = probe_pool(Probe {
        cancels_siblings: true,
        ..Probe::default()
    });
    let calls = vec![
        probe("slow", json!({"sleep_ms": 60_000, "safe": true})),
        probe("bad", json!({"sleep_ms": 10, "safe": true, "fail": "boom"})),
    ];
    let results = pool.batch(calls, &ctx).await;
    assert_eq!(
        results[0].text(),
        "<tool_use_error>Cancelled: parallel tool call Probe errored</tool_use_error>"
    );
    assert_eq!(results[1].text(), "<tool_use_error>boom</tool_use_error>");
}

#[tokio::test]
async fn errors_of_other_tools_do_not_cancel_siblings() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let pool = probe_pool(Probe::default());
    let calls = vec![
        probe("slow", json!({"sleep_ms": 50, "safe": true})),
        probe("bad", json!({"safe": true, "fail": "boom"})),
    ];
    let results = pool.batch(calls, &ctx).await;
    assert_eq!(results[0].text(), "slow");
    assert!(results[1].is_error);
}

#[tokio::test]
async fn large_results_spill_to_the_state_dir() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let r = probe_pool(Probe::default())
        .call(
            "Probe",
            json!({"label": "big", "output_chars": 40_000}),
            &ctx,
        )
        .await;
    let text = r.text();
    assert!(
        text.starts_with("<persisted-output>\nOutput too large (39.1KB). Full output saved to: "),
        "{}",
        &text[..200]
    );
    let path = text
        .lines()
        .nth(1)
        .unwrap()
        .rsplit("saved to: ")
        .next()
        .unwrap();
    assert!(path.starts_with(&dir.join(".state/tool-results/test").display().to_string()));
    assert_eq!(std::fs::read_to_string(path).unwrap().len(), 40_000);
    assert_eq!(
        r.data,
        json!("x".repeat(40_000)),
        "structured data stays whole"
    );

    // A tool that bounds its own output (max = usize::MAX, like Read) is never spilled.
    let r = probe_pool(Probe {
        unlimited_output: true,
        ..Probe::default()
    })
    .call(
        "Probe",
        json!({"label": "big", "output_chars": 60_000}),
        &ctx,
    )
    .await;
    assert_eq!(r.text().len(), 60_000);
}

#[tokio::test]
async fn long_errors_keep_head_and_tail() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::BypassPermissions, &[]);
    let message = format!("HEAD{}TAIL", "m".repeat(30_000));
    let r = probe_pool(Probe::default())
        .call("Probe", json!({"label": "e", "fail": message}), &ctx)
        .await;
    let text = r.text();
    assert!(text.starts_with("<tool_use_error>HEAD") && text.ends_with("TAIL</tool_use_error>"));
    assert!(text.contains("characters truncated"));
    assert!(text.len() < 10_200);
}

#[tokio::test]
async fn typed_defaults_follow_the_design() {
    let (_g, dir) = tmp();
    let ctx = context(&dir, PermissionMode::Default, &[]);
    // ToolBase's default description is "Execute {name}"; Probe does not override it.
    assert_eq!(
        TypedTool::description(&Probe::default(), None).await,
        "Execute Probe"
    );
    // The default permission is allow, so Probe runs in default mode without rules.
    let r = probe_pool(Probe::default())
        .call("Probe", json!({"label": "d"}), &ctx)
        .await;
    assert!(!r.is_error, "{}", r.text());
}
