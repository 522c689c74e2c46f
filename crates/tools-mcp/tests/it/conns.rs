//! The connections of the server over streamable HTTP, in process: silent and slow clients
//! are closed by the header timeout, the connection cap makes room for the health check,
//! an idle kept-alive connection is closed, and every descriptor is given back.

use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use test_support::http::{Conn, closed_within, healthz};
use tool_core::ToolPool;
use tools_mcp::HttpOptions;

use crate::http_errors::authority;
use crate::server::{contexts_in, serve_options};

/// Descriptors this process (the server and the test's clients) holds open.
fn fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_and_slow_connections_are_closed_and_cannot_exhaust_descriptors() {
    let dir = tempfile::tempdir().unwrap();
    let factory = contexts_in(dir.path());
    let mut options = HttpOptions::new("127.0.0.1:0".parse().unwrap());
    options.header_timeout = Duration::from_secs(1);
    options.idle_timeout = Duration::from_secs(2);
    options.max_connections = 40;
    let (url, shutdown, server) = serve_options(factory, ToolPool::new(Vec::new()), options).await;
    let authority = authority(&url);
    tokio::task::spawn_blocking(move || {
        let authority = authority.as_str();
        assert_eq!(healthz(authority, Duration::from_secs(5)), Some(200));
        let baseline = fds();
        // More silent connections than the cap, and a few that send a byte now and then.
        let mut silent: Vec<TcpStream> = (0..60)
            .map(|_| TcpStream::connect(authority).expect("connect"))
            .collect();
        let slow: Vec<TcpStream> = (0..5)
            .map(|_| {
                let mut s = TcpStream::connect(authority).expect("connect");
                s.write_all(b"POST /mcp HTTP/1.1\r\n").expect("write");
                s
            })
            .collect();
        let dripping = std::thread::spawn(move || {
            let mut slow = slow;
            let mut closed = vec![false; slow.len()];
            for _ in 0..40 {
                for (s, c) in slow.iter_mut().zip(closed.iter_mut()) {
                    if !*c && s.write_all(b"X").is_err() {
                        *c = true;
                    }
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            slow.iter_mut()
                .all(|s| closed_within(s, Duration::from_secs(1)))
        });
        // The health check gets through at the cap (the connection idle longest makes room).
        assert_eq!(healthz(authority, Duration::from_secs(5)), Some(200));
        for s in &mut silent {
            assert!(
                closed_within(s, Duration::from_secs(15)),
                "a silent connection stayed open"
            );
        }
        assert!(
            dripping.join().expect("dripping"),
            "a connection that drips one byte at a time stayed open"
        );
        // A kept-alive connection serves several requests, then is closed when idle.
        let mut kept = Conn::open(authority);
        for _ in 0..3 {
            let response = kept.send("GET", "/healthz", &[], "");
            assert_eq!(response.status, 200);
        }
        let mut stream = kept.into_stream();
        assert!(
            closed_within(&mut stream, Duration::from_secs(15)),
            "an idle kept-alive connection stayed open"
        );
        // Everything given back (the clients' own ends closed first).
        drop(silent);
        drop(stream);
        let deadline = Instant::now() + Duration::from_secs(10);
        while fds() > baseline + 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            fds() <= baseline + 2,
            "{} descriptors after, {baseline} before",
            fds()
        );
    })
    .await
    .unwrap();
    shutdown.cancel();
    server.await.unwrap().unwrap();
}
