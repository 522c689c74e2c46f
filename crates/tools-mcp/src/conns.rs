//! The HTTP server's connections, before any request is read: accepted one by one, each
//! served by hyper (HTTP/1.1) under three limits that hold before the gate checks a token,
//! so silent or slow clients cannot hold descriptors.
//!
//! - **Header timeout**: a new connection must send its first request's headers within
//!   [`Limits::header_timeout`] of being accepted, and a request that has started to arrive
//!   on a kept-alive connection must be whole within the same time of its first byte
//!   (slowloris).
//! - **Idle timeout**: a kept-alive connection waits at most [`Limits::idle_timeout`] for
//!   its next request.
//! - **A cap on connections**: at [`Limits::max_connections`] the connection idle longest
//!   is closed to make room for the new one; when every connection is busy (inside a
//!   request or streaming a response), the new one is closed instead.
//!
//! A connection is busy from the moment its request's headers are read until its
//! response's body has been sent (or dropped). [`on_drop`] gives a response body an action
//! to run when it is done, which the gate uses for legacy calls.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use hyper::body::{Frame, Incoming, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long a client may take to send a request's headers, unless configured.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a kept-alive connection may wait for its next request, unless configured.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How many connections are served at once, unless configured.
pub const DEFAULT_MAX_CONNECTIONS: usize = 512;

/// The limits every connection is served under (see the module documentation).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub header_timeout: Duration,
    pub idle_timeout: Duration,
    pub max_connections: usize,
}

/// What is known of one connection.
struct Conn {
    /// Requests inside the service or streaming their response
    busy: AtomicUsize,
    /// Requests begun
    served: AtomicU64,
    /// Since when no request has been busy (the accept, or the end of the last response)
    idle_since: Mutex<Instant>,
    /// The first byte received while idle: a request has started to arrive
    first_byte: Mutex<Option<Instant>>,
    /// Woken whenever the above change
    changed: Notify,
    /// Closes the connection (a timeout, the cap, the server's end)
    close: CancellationToken,
}

impl Conn {
    fn new() -> Self {
        Conn {
            busy: AtomicUsize::new(0),
            served: AtomicU64::new(0),
            idle_since: Mutex::new(Instant::now()),
            first_byte: Mutex::new(None),
            changed: Notify::new(),
            close: CancellationToken::new(),
        }
    }

    fn is_idle(&self) -> bool {
        self.busy.load(Ordering::SeqCst) == 0
    }

    fn idle_since(&self) -> Instant {
        self.idle_since
            .lock()
            .map(|t| *t)
            .unwrap_or_else(|_| Instant::now())
    }

    /// When the connection is to be closed if nothing changes; `None` while busy.
    fn deadline(&self, limits: &Limits) -> Option<Instant> {
        if !self.is_idle() {
            return None;
        }
        if let Some(first) = self.first_byte.lock().ok().and_then(|f| *f) {
            return Some(first + limits.header_timeout);
        }
        let wait = if self.served.load(Ordering::SeqCst) == 0 {
            limits.header_timeout
        } else {
            limits.idle_timeout
        };
        Some(self.idle_since() + wait)
    }

    /// A request's headers were read.
    fn begin(self: &Arc<Self>) -> Busy {
        self.busy.fetch_add(1, Ordering::SeqCst);
        self.served.fetch_add(1, Ordering::SeqCst);
        if let Ok(mut first) = self.first_byte.lock() {
            *first = None;
        }
        self.changed.notify_one();
        Busy(Arc::clone(self))
    }

    /// Bytes arrived.
    fn received(&self) {
        if self.is_idle()
            && let Ok(mut first) = self.first_byte.lock()
            && first.is_none()
        {
            *first = Some(Instant::now());
            self.changed.notify_one();
        }
    }
}

/// A request being served; dropped when its response is done.
struct Busy(Arc<Conn>);

impl Drop for Busy {
    fn drop(&mut self) {
        if let Ok(mut since) = self.0.idle_since.lock() {
            *since = Instant::now();
        }
        self.0.busy.fetch_sub(1, Ordering::SeqCst);
        self.0.changed.notify_one();
    }
}

/// The socket, noting when bytes arrive.
struct Watched {
    stream: TcpStream,
    conn: Arc<Conn>,
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.stream).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.conn.received();
        }
        polled
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// A response body that runs an action once it is done: sent whole (the action gets
/// `true`), or dropped before its end because the client went away (`false`).
pub(crate) struct OnDrop {
    body: Body,
    ended: bool,
    action: Option<Box<dyn FnOnce(bool) + Send>>,
}

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(action) = self.action.take() {
            action(self.ended || hyper::body::Body::is_end_stream(&self.body));
        }
    }
}

impl hyper::body::Body for OnDrop {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) {
            this.ended = true;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// `body` with `action` run once it is done (with whether it was sent whole).
pub(crate) fn on_drop(body: Body, action: impl FnOnce(bool) + Send + 'static) -> OnDrop {
    OnDrop {
        body,
        ended: false,
        action: Some(Box::new(action)),
    }
}

/// Put in a legacy `tools/call`'s extensions by the gate: `gone` is cancelled when the
/// client went away before the answer (and did not resume the stream) or the session was
/// deleted, `answered` by the handler once the call has its answer.
#[derive(Debug, Clone, Default)]
pub(crate) struct ClientGone {
    pub(crate) gone: CancellationToken,
    pub(crate) answered: CancellationToken,
}

/// The router as hyper's service for one connection: each request marks the connection
/// busy until its response is done.
#[derive(Clone)]
struct Served {
    router: axum::Router,
    conn: Arc<Conn>,
}

type Answer = axum::http::Response<OnDrop>;

impl hyper::service::Service<axum::http::Request<Incoming>> for Served {
    type Response = Answer;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Answer, Infallible>> + Send>>;

    fn call(&self, request: axum::http::Request<Incoming>) -> Self::Future {
        use tower_service::Service;
        let busy = self.conn.begin();
        let mut router = self.router.clone();
        Box::pin(async move {
            let response = match router.call(request.map(Body::new)).await {
                Ok(response) => response,
                Err(never) => match never {},
            };
            Ok(response.map(|body| on_drop(body, move |_| drop(busy))))
        })
    }
}

/// Serves one connection until it ends, is closed, or times out.
async fn serve_one(stream: TcpStream, router: axum::Router, conn: Arc<Conn>, limits: Limits) {
    let io = hyper_util::rt::TokioIo::new(Watched {
        stream,
        conn: Arc::clone(&conn),
    });
    let service = Served {
        router,
        conn: Arc::clone(&conn),
    };
    let connection = hyper::server::conn::http1::Builder::new().serve_connection(io, service);
    tokio::pin!(connection);
    loop {
        let deadline = conn.deadline(&limits);
        let changed = conn.changed.notified();
        tokio::select! {
            _ = connection.as_mut() => return,
            () = conn.close.cancelled() => return,
            () = changed => {}
            () = sleep_until(deadline) => {
                if conn.deadline(&limits).is_some_and(|d| d <= Instant::now()) {
                    return;
                }
            }
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// The connections being served, to make room at the cap and to close them all at the end.
#[derive(Default)]
struct Table {
    conns: HashMap<u64, Arc<Conn>>,
    next: u64,
}

impl Table {
    /// Room for one more connection: at the cap, the connection idle longest is closed;
    /// `false` when every connection is busy.
    fn make_room(&mut self, max: usize) -> bool {
        if self.conns.len() < max {
            return true;
        }
        let victim = self
            .conns
            .iter()
            .filter(|(_, c)| c.is_idle())
            .min_by_key(|(_, c)| c.idle_since())
            .map(|(id, _)| *id);
        match victim.and_then(|id| self.conns.remove(&id)) {
            Some(conn) => {
                conn.close.cancel();
                true
            }
            None => false,
        }
    }
}

/// Accepts and serves connections on `listener` with `router` until `stop` fires, then
/// closes every connection and returns.
pub(crate) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: Limits,
    stop: CancellationToken,
) {
    let table = Arc::new(Mutex::new(Table::default()));
    let tasks = tokio_util::task::TaskTracker::new();
    let max = limits.max_connections.max(1);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(_) => {
                    // Out of descriptors, or a connection reset before it was accepted:
                    // try again shortly (idle connections time out meanwhile).
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = stop.cancelled() => break,
        };
        // A reused connection must not wait for the peer's delayed ACK on every response.
        let _ = stream.set_nodelay(true);
        let conn = Arc::new(Conn::new());
        let id = {
            let Ok(mut table) = table.lock() else {
                continue;
            };
            if !table.make_room(max) {
                continue;
            }
            table.next += 1;
            let id = table.next;
            table.conns.insert(id, Arc::clone(&conn));
            id
        };
        let router = router.clone();
        let table = Arc::clone(&table);
        tasks.spawn(async move {
            serve_one(stream, router, conn, limits).await;
            if let Ok(mut table) = table.lock() {
                table.conns.remove(&id);
            }
        });
    }
    drop(listener);
    if let Ok(table) = table.lock() {
        for conn in table.conns.values() {
            conn.close.cancel();
        }
    }
    tasks.close();
    let _ = tokio::time::timeout(Duration::from_secs(2), tasks.wait()).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 2,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn deadlines_follow_the_connection_state() {
        let conn = Arc::new(Conn::new());
        let l = limits();
        let start = Instant::now();
        // A new connection: headers within the header timeout of the accept.
        assert_eq!(conn.deadline(&l), Some(start + l.header_timeout));
        let busy = conn.begin();
        assert_eq!(conn.deadline(&l), None, "no deadline while busy");
        tokio::time::advance(Duration::from_secs(100)).await;
        drop(busy);
        let idle = Instant::now();
        // Kept alive: the idle timeout, until a request starts to arrive.
        assert_eq!(conn.deadline(&l), Some(idle + l.idle_timeout));
        tokio::time::advance(Duration::from_secs(5)).await;
        conn.received();
        assert_eq!(
            conn.deadline(&l),
            Some(Instant::now() + l.header_timeout),
            "a request that started must be whole within the header timeout"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_cap_closes_the_connection_idle_longest() {
        let mut table = Table::default();
        let old = Arc::new(Conn::new());
        tokio::time::advance(Duration::from_secs(1)).await;
        let young = Arc::new(Conn::new());
        table.conns.insert(1, Arc::clone(&old));
        table.conns.insert(2, Arc::clone(&young));
        assert!(table.make_room(2));
        assert!(old.close.is_cancelled() && !young.close.is_cancelled());
        // Every connection busy: no room.
        let busy = young.begin();
        let third = Arc::new(Conn::new());
        let _busy_too = third.begin();
        table.conns.insert(3, third);
        assert!(!table.make_room(2));
        drop(busy);
        assert!(table.make_room(2));
        assert!(young.close.is_cancelled());
    }
}
