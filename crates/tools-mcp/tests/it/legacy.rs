//! Calls in legacy sessions (protocol 2025-11-25) over streamable HTTP, in process with a
//! stand-in Sleep tool: a call whose client goes away is cancelled without a DELETE, one
//! that asked to run in the background outlives its connection, a call longer than the
//! idle time keeps its session, a session without requests ends with what it started, and
//! a `DELETE` of a session ends its calls at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::http::{Conn, legacy_headers, legacy_session};
use test_support::procs::{marker, survivors, wait_for_process};
use tool_core::{Tool, ToolPool, Typed};
use tools_mcp::HttpOptions;

use crate::http_errors::authority;
use crate::server::{Sleep, serve_options, sleepers};

fn legacy_call(id: u64, args: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "Sleep", "arguments": args}})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn legacy_calls_follow_their_client_and_keep_their_session_alive() {
    let dir = tempfile::tempdir().unwrap();
    let factory = sleepers(dir.path());
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Typed::new(Sleep))];
    let mut options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    options.session_idle = Duration::from_secs(2);
    let (url, shutdown, server) = serve_options(factory, ToolPool::new(tools), options).await;
    let authority = authority(&url);
    let ready = dir.path().join("ready");
    tokio::task::spawn_blocking(move || {
        let authority = authority.as_str();
        let mut conn = Conn::open(authority);
        let session = legacy_session(&mut conn, None).expect("a session");
        let headers = legacy_headers(&session, None);

        // A call that asked for the background loses its connection before its answer
        // (its command is not ready yet).
        let bg = marker("legacy-background");
        let mut early = Conn::open(authority);
        early.write(
            "POST",
            "/mcp",
            &headers,
            &legacy_call(
                1,
                json!({"marker": bg, "seconds": 600, "run_in_background": true,
                       "ready_file": ready}),
            ),
        );
        assert!(
            wait_for_process(&bg, 30),
            "the background command never started"
        );
        drop(early);

        // Then a client goes away mid-call: the command ends, without a DELETE.
        let m = marker("legacy-drop");
        let mut gone = Conn::open(authority);
        gone.write(
            "POST",
            "/mcp",
            &headers,
            &legacy_call(2, json!({"marker": m, "seconds": 600})),
        );
        assert!(wait_for_process(&m, 30), "the command never started");
        drop(gone);
        assert_eq!(
            survivors(&m, 20),
            Vec::<u32>::new(),
            "the call outlived its connection"
        );

        // The background call, whose connection went first, is not cancelled: its command
        // runs on, and after its answer too.
        std::thread::sleep(Duration::from_millis(500));
        assert!(
            wait_for_process(&bg, 1),
            "the background call was cancelled with its connection"
        );
        std::fs::write(&ready, "").unwrap();

        // A call longer than the idle time keeps its session: its answer arrives.
        let response = conn.send(
            "POST",
            "/mcp",
            &headers,
            &legacy_call(3, json!({"marker": "still-here", "seconds": 4})),
        );
        assert_eq!(response.status, 200, "{response:#?}");
        assert!(
            response.answer(3).to_string().contains("slept still-here"),
            "{response:#?}"
        );
        assert!(
            wait_for_process(&bg, 1),
            "the background command ended with its call"
        );
        // Then, without requests, the session ends (and its background command with it).
        std::thread::sleep(Duration::from_secs(4));
        let response = conn.send(
            "POST",
            "/mcp",
            &headers,
            &legacy_call(4, json!({"marker": "late", "seconds": 0})),
        );
        assert_eq!(response.status, 404, "{response:#?}");
        assert_eq!(
            survivors(&bg, 20),
            Vec::<u32>::new(),
            "a background command outlived its session"
        );
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delete_ends_the_sessions_calls_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Typed::new(Sleep))];
    let options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    let (url, shutdown, server) =
        serve_options(sleepers(dir.path()), ToolPool::new(tools), options).await;
    let authority = authority(&url);
    tokio::task::spawn_blocking(move || {
        let authority = authority.as_str();
        // The call's connection dropped just before the DELETE, or still open: either way
        // the session is gone and no client can resume its stream.
        for drop_first in [true, false] {
            let mut conn = Conn::open(authority);
            let session = legacy_session(&mut conn, None).expect("a session");
            let m = marker("legacy-delete");
            let mut call = Conn::open(authority);
            call.write(
                "POST",
                "/mcp",
                &legacy_headers(&session, None),
                &legacy_call(1, json!({"marker": m, "seconds": 600})),
            );
            assert!(wait_for_process(&m, 30), "the command never started");
            let call = if drop_first {
                drop(call);
                None
            } else {
                Some(call)
            };
            let response = conn.send("DELETE", "/mcp", &legacy_headers(&session, None), "");
            assert_eq!(response.status, 204, "{response:#?}");
            let deleted = Instant::now();
            assert_eq!(
                survivors(&m, 20),
                Vec::<u32>::new(),
                "the call outlived its session"
            );
            // Well under the 5 s a client that went away has to resume its stream.
            assert!(
                deleted.elapsed() < Duration::from_secs(3),
                "the call ended {:?} after its session's DELETE (connection dropped first: {drop_first})",
                deleted.elapsed()
            );
            drop(call);
        }
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}
