//! Contexts of protocol 2026-07-28 over streamable HTTP ending after their idle time, in
//! process with the stand-in Sleep: a principal's default context and a minted one end
//! with the background commands they started; the default context is made again on the
//! next request, and the minted handle names no context any more.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use test_support::http::{Conn, call, modern, text};
use test_support::procs::{marker, processes_with, survivors};
use tool_core::{Tool, ToolPool, Typed};
use tools_mcp::HttpOptions;

use crate::http_errors::authority;
use crate::server::{Sleep, serve_options, sleepers};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contexts_end_after_their_idle_time_with_their_background_commands() {
    let dir = tempfile::tempdir().unwrap();
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(Typed::new(Sleep))];
    let mut options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    options.session_idle = Duration::from_secs(2);
    let (url, shutdown, server) =
        serve_options(sleepers(dir.path()), ToolPool::new(tools), options).await;
    let authority = authority(&url);
    tokio::task::spawn_blocking(move || {
        let mut conn = Conn::open(&authority);
        let m = marker("idle-context");
        let background = json!({"marker": m, "run_in_background": true});
        let default = call(&mut conn, 1, "Sleep", background.clone(), None, None);
        assert_eq!(default["result"]["isError"], false, "{default:#}");
        let minted = call(&mut conn, 2, "Sleep", background, None, Some("new"));
        assert_eq!(minted["result"]["isError"], false, "{minted:#}");
        let handle = minted["result"]["_meta"]["agent-tools/context"]
            .as_str()
            .expect("a minted handle")
            .to_owned();
        // Both commands run (the process table can lag behind a loaded machine).
        let both = (0..200).any(|_| {
            let n = processes_with(&m).len();
            if n < 2 {
                std::thread::sleep(Duration::from_millis(50));
            }
            n == 2
        });
        assert!(
            both,
            "one command in each context: {:?}",
            processes_with(&m)
        );
        // No request for the idle time: both contexts end, their commands stopped.
        assert_eq!(
            survivors(&m, 30),
            Vec::<u32>::new(),
            "a background command outlived its idle context"
        );
        // The default context is made again; the minted handle is gone.
        let again = call(
            &mut conn,
            3,
            "Sleep",
            json!({"marker": "again", "seconds": 0}),
            None,
            None,
        );
        assert!(text(&again).contains("slept again"), "{again:#}");
        let (headers, body) = modern(
            4,
            "tools/call",
            json!({"name": "Sleep", "arguments": {"marker": "gone", "seconds": 0}}),
            None,
            Some(&handle),
        );
        let stale = conn.send("POST", "/mcp", &headers, &body).answer(4);
        assert_eq!(stale["error"]["code"], -32602, "{stale:#}");
        assert!(
            stale["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("no context"),
            "{stale:#}"
        );
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}
