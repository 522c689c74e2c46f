//! Which [`ToolContext`] a request runs in, on every protocol version.
//!
//! A legacy client (protocol 2025-11-25 and earlier) opens a session with `initialize`, and
//! the session gets its own context ([`Contexts::session`]). Protocol 2026-07-28 has no
//! handshake and no session: each request stands alone, so a request finds its context by
//! who sent it and what it names ([`Contexts::resolve`]):
//!
//! - the principal: the bearer token that authenticated the request over HTTP, or the one
//!   local client (stdio, or HTTP on loopback without tokens);
//! - the handle in the request's `_meta` under [`CONTEXT_META_KEY`]: absent (or
//!   `"default"`) is the principal's default context, `"new"` mints a fresh context with a
//!   random handle, any other value names a handle minted before for the same principal.
//!
//! Every `tools/call` result names the context that served it under the same `_meta` key.
//! Over HTTP every context — a principal's default one, a minted one, a legacy session's —
//! ends after an idle time without a request and without a call in flight
//! ([`DEFAULT_IDLE`] unless the server sets another, [`Contexts::expire`]); a principal
//! holds at most [`MAX_MINTED`] minted contexts. The one context of a stdio connection
//! lives as long as the connection. A context that ends has its calls cancelled, its
//! background tasks stopped and the files kept for it deleted ([`ToolContext::close`]).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::ErrorData;
use tokio::sync::Notify;
use tool_core::{PermissionPrompter, ToolContext, ToolError};

use crate::mrtr::RoutingPrompter;
use crate::principal::Principal;
use crate::random::random_bytes;

/// The `_meta` key of a request (and of a `tools/call` result) that names its context.
pub const CONTEXT_META_KEY: &str = "agent-tools/context";

/// How long a context (or a legacy session) lives without a request and without a call in
/// flight, unless the server sets another time.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(30 * 60);

/// How many minted contexts one principal may hold at once.
pub const MAX_MINTED: usize = 32;

/// The handle of a principal's default context.
const DEFAULT_HANDLE: &str = "default";

/// Builds the context of a new session (a legacy MCP session, a principal's default
/// context, or a minted one) for a principal: a host gives each its own private state
/// directory ([`Principal::state_dir_name`], under `<state>/principals/`).
pub type SessionFactory = Arc<dyn Fn(&Principal) -> Result<ToolContext, ToolError> + Send + Sync>;

/// One context kept for protocol 2026-07-28 requests.
struct Slot {
    ctx: ToolContext,
    last_used: Instant,
    /// Never ends for want of requests (the one context of a stdio connection)
    pinned: bool,
}

/// The contexts of a server: per principal and handle for stateless requests, per session
/// for legacy ones, and the count of calls in flight (for a graceful shutdown).
pub struct Contexts {
    factory: Option<SessionFactory>,
    slots: Mutex<HashMap<(Principal, String), Slot>>,
    /// Contexts of legacy sessions, by session id, until the session ends
    sessions: Mutex<HashMap<String, ToolContext>>,
    /// Calls in flight per context (by session id)
    busy: Mutex<HashMap<String, usize>>,
    in_flight: AtomicUsize,
    settled: Notify,
    /// How long a context may go without a request
    idle: Duration,
}

impl std::fmt::Debug for Contexts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contexts")
            .field("in_flight", &self.in_flight.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// Installs what every context of the server needs: the prompter that turns permission
/// questions into multi round-trip requests (or the headless rule).
fn prepare(ctx: &ToolContext) {
    ctx.services()
        .get_or_insert_with::<Arc<dyn PermissionPrompter>>(|| Arc::new(RoutingPrompter));
}

fn invalid(message: String) -> ErrorData {
    ErrorData::invalid_params(message, None)
}

impl Contexts {
    /// Contexts built by `factory` that end after `idle` without a request (and without a
    /// call in flight).
    pub fn with_idle(factory: SessionFactory, idle: Duration) -> Self {
        Contexts {
            factory: Some(factory),
            slots: Mutex::default(),
            sessions: Mutex::default(),
            busy: Mutex::default(),
            in_flight: AtomicUsize::new(0),
            settled: Notify::new(),
            idle,
        }
    }

    /// Contexts whose local principal's default context is `ctx`; `factory` (when given)
    /// builds minted ones.
    pub fn with_default(ctx: ToolContext, factory: Option<SessionFactory>) -> Self {
        prepare(&ctx);
        let contexts = Contexts {
            factory,
            slots: Mutex::default(),
            sessions: Mutex::default(),
            busy: Mutex::default(),
            in_flight: AtomicUsize::new(0),
            settled: Notify::new(),
            idle: DEFAULT_IDLE,
        };
        if let Ok(mut slots) = contexts.slots.lock() {
            slots.insert(
                (Principal::local(), DEFAULT_HANDLE.to_owned()),
                Slot {
                    ctx,
                    last_used: Instant::now(),
                    pinned: true,
                },
            );
        }
        contexts
    }

    fn build(&self, principal: &Principal) -> Result<ToolContext, ErrorData> {
        let Some(factory) = &self.factory else {
            return Err(invalid(format!(
                "this server has one context; omit `{CONTEXT_META_KEY}` from _meta"
            )));
        };
        let ctx = factory(principal)
            .map_err(|e| ErrorData::internal_error(format!("cannot start a context: {e}"), None))?;
        prepare(&ctx);
        Ok(ctx)
    }

    /// A new context for a legacy session; it is kept (for shutdown) until
    /// [`Contexts::end_session`].
    pub fn session(&self, principal: &Principal) -> Result<ToolContext, ErrorData> {
        let ctx = self.build(principal)?;
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.insert(ctx.session_id().to_owned(), ctx.clone());
        }
        Ok(ctx)
    }

    /// Forgets a legacy session's context and ends it: its calls cancelled at once, its
    /// background tasks stopped and its files deleted in the background.
    pub fn end_session(&self, ctx: &ToolContext) {
        ctx.cancel_token().cancel();
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.remove(ctx.session_id());
        }
        let ctx = ctx.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move { ctx.close().await });
        }
    }

    /// The context of a stateless request from `principal` naming `handle` (see the module
    /// documentation), and the handle the result reports.
    pub fn resolve(
        &self,
        principal: &Principal,
        handle: Option<&str>,
    ) -> Result<(String, ToolContext), ErrorData> {
        let now = Instant::now();
        let handle = handle.unwrap_or(DEFAULT_HANDLE);
        let ended = self.idle_slots(now);
        let outcome = {
            let mut slots = self
                .slots
                .lock()
                .map_err(|_| ErrorData::internal_error("the context table is poisoned", None))?;
            match handle {
                "new" => {
                    let minted = slots
                        .keys()
                        .filter(|(p, h)| p == principal && h != DEFAULT_HANDLE)
                        .count();
                    if minted >= MAX_MINTED {
                        Err(invalid(format!(
                            "this principal already holds {MAX_MINTED} contexts; reuse one, or wait until one is idle for {}",
                            minutes(self.idle)
                        )))
                    } else {
                        let id = random_handle()?;
                        let ctx = self.build(principal)?;
                        slots.insert(
                            (principal.clone(), id.clone()),
                            Slot {
                                ctx: ctx.clone(),
                                last_used: now,
                                pinned: false,
                            },
                        );
                        Ok((id, ctx))
                    }
                }
                handle => {
                    let key = (principal.clone(), handle.to_owned());
                    if let Some(slot) = slots.get_mut(&key) {
                        slot.last_used = now;
                        Ok((handle.to_owned(), slot.ctx.clone()))
                    } else if handle == DEFAULT_HANDLE {
                        let ctx = self.build(principal)?;
                        slots.insert(
                            key,
                            Slot {
                                ctx: ctx.clone(),
                                last_used: now,
                                pinned: false,
                            },
                        );
                        Ok((handle.to_owned(), ctx))
                    } else {
                        Err(invalid(format!(
                            "_meta `{CONTEXT_META_KEY}`: no context \"{}\" for this client (it ended after {} without a request, or was never created); send \"new\" to start one, or omit the key for the default context",
                            tool_core::cut_middle(handle, 80),
                            minutes(self.idle)
                        )))
                    }
                }
            }
        };
        for ctx in ended {
            tokio::spawn(async move { stop_context(&ctx).await });
        }
        outcome
    }

    /// Takes out of the table the contexts that saw no request for the idle time and have
    /// no call in flight.
    fn idle_slots(&self, now: Instant) -> Vec<ToolContext> {
        let busy: Vec<String> = self
            .busy
            .lock()
            .map(|b| b.keys().cloned().collect())
            .unwrap_or_default();
        let mut ended = Vec::new();
        if let Ok(mut slots) = self.slots.lock() {
            slots.retain(|_, slot| {
                let keep = slot.pinned
                    || now.duration_since(slot.last_used) < self.idle
                    || busy.iter().any(|id| id == slot.ctx.session_id());
                if !keep {
                    ended.push(slot.ctx.clone());
                }
                keep
            });
        }
        ended
    }

    /// Ends the contexts that saw no request for the idle time and have no call in flight
    /// (their calls cancelled, background tasks stopped, files deleted); returns how many
    /// ended. The HTTP server calls it periodically.
    pub async fn expire(&self) -> usize {
        let ended = self.idle_slots(Instant::now());
        let count = ended.len();
        // All at once: one context slow to end (a task that takes its grace period) does not
        // hold back the others, nor the next sweep.
        let mut ending = tokio::task::JoinSet::new();
        for ctx in ended {
            ending.spawn(async move { stop_context(&ctx).await });
        }
        while ending.join_next().await.is_some() {}
        count
    }

    /// Counts a call of `ctx` as in flight until the guard is dropped: the server does not
    /// stop before it ends (within the grace period), and `ctx` does not end for want of
    /// requests while it runs; its idle time starts again when the call ends.
    pub fn call_started(self: &Arc<Self>, ctx: &ToolContext) -> CallGuard {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        let id = ctx.session_id().to_owned();
        if let Ok(mut busy) = self.busy.lock() {
            *busy.entry(id.clone()).or_default() += 1;
        }
        CallGuard(Arc::clone(self), id)
    }

    /// The end of a call of the context `id`.
    fn call_ended(&self, id: &str) {
        if let Ok(mut busy) = self.busy.lock()
            && let Some(n) = busy.get_mut(id)
        {
            *n -= 1;
            if *n == 0 {
                busy.remove(id);
            }
        }
        let now = Instant::now();
        if let Ok(mut slots) = self.slots.lock()
            && let Some(slot) = slots.values_mut().find(|s| s.ctx.session_id() == id)
        {
            slot.last_used = now;
        }
        if self.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.settled.notify_waiters();
        }
    }

    /// Calls in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Waits until no call is in flight.
    pub async fn settled(&self) {
        wait_until(&self.settled, || self.in_flight() == 0).await;
    }

    /// Ends every context: cancels its calls and stops its background tasks (their process
    /// groups are killed and reaped before this returns).
    pub async fn shutdown(&self) {
        let mut all: Vec<ToolContext> = Vec::new();
        if let Ok(mut slots) = self.slots.lock() {
            all.extend(slots.drain().map(|(_, slot)| slot.ctx));
        }
        if let Ok(mut sessions) = self.sessions.lock() {
            all.extend(sessions.drain().map(|(_, ctx)| ctx));
        }
        for ctx in &all {
            ctx.cancel_token().cancel();
        }
        for ctx in &all {
            stop_context(ctx).await;
        }
    }
}

/// Ends a context: cancels its calls, stops its background tasks (their process groups
/// killed and reaped) and deletes the files kept for it.
pub async fn stop_context(ctx: &ToolContext) {
    ctx.close().await;
}

/// Waits until `done()` holds, checking again each time `notify` wakes its waiters (whoever
/// makes `done()` true calls `notify_waiters` after): the wait for calls in flight, and for
/// answers still on their way out at shutdown (`http.rs`, `server.rs`).
pub(crate) async fn wait_until(notify: &Notify, done: impl Fn() -> bool) {
    loop {
        let notified = notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if done() {
            return;
        }
        notified.await;
    }
}

/// A call in flight; dropping it ends the count.
pub struct CallGuard(Arc<Contexts>, String);

impl Drop for CallGuard {
    fn drop(&mut self) {
        self.0.call_ended(&self.1);
    }
}

/// `d` in minutes (or seconds, below one), for messages.
fn minutes(d: Duration) -> String {
    match d.as_secs() {
        s if s < 60 => format!("{s} seconds"),
        60..=119 => "1 minute".to_owned(),
        s => format!("{} minutes", s / 60),
    }
}

/// 128 random bits as hex.
fn random_handle() -> Result<String, ErrorData> {
    let bytes = random_bytes::<16>()
        .map_err(|e| ErrorData::internal_error(format!("no randomness: {e}"), None))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn factory(root: &std::path::Path) -> SessionFactory {
        let root = root.to_path_buf();
        Arc::new(move |_: &Principal| {
            Ok(ToolContext::builder(&root)
                .state_dir(root.join("state"))
                .build())
        })
    }

    #[tokio::test]
    async fn a_request_finds_its_principals_context() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let contexts = Contexts::with_idle(factory(dir.path()), DEFAULT_IDLE);
        let alice = Principal::named("alice");
        let bob = Principal::named("bob");
        let check = |p: &Principal, handle: Option<&str>| {
            contexts
                .resolve(p, handle)
                .map(|(h, ctx)| (h, ctx.session_id().to_owned()))
                .map_err(|e| e.message.to_string())
        };
        let (h, a1) = check(&alice, None).unwrap_or_default();
        assert_eq!(h, "default");
        let (_, a2) = check(&alice, Some("default")).unwrap_or_default();
        assert_eq!(a1, a2, "the default context is kept");
        let (_, b1) = check(&bob, None).unwrap_or_default();
        assert_ne!(a1, b1, "each principal has its own");
        let (minted, m1) = check(&alice, Some("new")).unwrap_or_default();
        assert_eq!(minted.len(), 32);
        assert_ne!(m1, a1);
        assert_eq!(check(&alice, Some(&minted)).map(|r| r.1), Ok(m1));
        // Another principal cannot use alice's handle; an unknown handle says what to do.
        let err = check(&bob, Some(&minted)).err().unwrap_or_default();
        assert!(err.contains("send \"new\""), "{err}");
        let err = check(&alice, Some("nope")).err().unwrap_or_default();
        assert!(err.contains("no context \"nope\""), "{err}");
    }

    #[tokio::test]
    async fn minted_contexts_are_capped_per_principal() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let contexts = Contexts::with_idle(factory(dir.path()), DEFAULT_IDLE);
        let p = Principal::local();
        for _ in 0..MAX_MINTED {
            assert!(contexts.resolve(&p, Some("new")).is_ok());
        }
        let err = contexts.resolve(&p, Some("new")).err().map(|e| e.message);
        assert!(err.is_some_and(|m| m.contains("already holds")));
        // Another principal is not affected.
        assert!(
            contexts
                .resolve(&Principal::named("x"), Some("new"))
                .is_ok()
        );
    }

    #[tokio::test]
    async fn a_single_context_server_refuses_new_handles() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let ctx = ToolContext::builder(dir.path()).build();
        let id = ctx.session_id().to_owned();
        let contexts = Contexts::with_default(ctx, None);
        let found = contexts.resolve(&Principal::local(), None).map(|r| r.1);
        assert_eq!(found.map(|c| c.session_id().to_owned()).ok(), Some(id));
        assert!(contexts.resolve(&Principal::local(), Some("new")).is_err());
    }

    #[tokio::test]
    async fn idle_contexts_end_unless_a_call_is_in_flight() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let contexts = Arc::new(Contexts::with_idle(
            factory(dir.path()),
            Duration::from_millis(50),
        ));
        let p = Principal::local();
        let id = |handle: Option<&str>| {
            contexts
                .resolve(&p, handle)
                .unwrap_or_else(|e| panic!("{e:?}"))
        };
        let (_, default) = id(None);
        let (minted, busy) = id(Some("new"));
        let guard = contexts.call_started(&busy);
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert_eq!(contexts.expire().await, 1, "the idle default context ends");
        assert!(default.cancel_token().is_cancelled());
        assert!(
            !busy.cancel_token().is_cancelled(),
            "a call in flight keeps its context"
        );
        drop(guard);
        // The idle time starts again when the call ends.
        assert_eq!(contexts.expire().await, 0);
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert_eq!(contexts.expire().await, 1);
        assert!(busy.cancel_token().is_cancelled());
        let err = contexts.resolve(&p, Some(&minted)).err().map(|e| e.message);
        assert!(err.is_some_and(|m| m.contains("without a request")));
        // A request for the default context makes a new one.
        let (_, again) = id(None);
        assert_ne!(again.session_id(), default.session_id());
    }

    /// A service every context of [`marked`] holds, to learn when the context is gone.
    struct Marker;
    impl tool_core::ServiceType for Marker {}

    /// A factory whose contexts each hold a [`Marker`]; the markers, to watch them go.
    fn marked(
        root: &std::path::Path,
    ) -> (SessionFactory, Arc<Mutex<Vec<std::sync::Weak<Marker>>>>) {
        let root = root.to_path_buf();
        let markers: Arc<Mutex<Vec<std::sync::Weak<Marker>>>> = Arc::default();
        let kept = Arc::clone(&markers);
        let factory: SessionFactory = Arc::new(move |_: &Principal| {
            let ctx = ToolContext::builder(&root)
                .state_dir(root.join("state"))
                .build();
            let marker = Arc::new(Marker);
            if let Ok(mut m) = kept.lock() {
                m.push(Arc::downgrade(&marker));
            }
            ctx.services().insert(marker);
            Ok(ctx)
        });
        (factory, markers)
    }

    fn alive(markers: &Mutex<Vec<std::sync::Weak<Marker>>>) -> usize {
        markers.lock().map_or(usize::MAX, |m| {
            m.iter().filter(|w| w.strong_count() > 0).count()
        })
    }

    #[tokio::test]
    async fn ended_contexts_leave_nothing_behind() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (factory, markers) = marked(dir.path());
        let contexts = Arc::new(Contexts::with_idle(factory, Duration::from_millis(50)));
        // Many principals, each with its default context and a minted one that ran a call,
        // and legacy sessions.
        for i in 0..20 {
            let p = Principal::named(&format!("p{i}"));
            let _ = contexts.resolve(&p, None).map_err(|e| panic!("{e:?}"));
            let (_, minted) = contexts
                .resolve(&p, Some("new"))
                .unwrap_or_else(|e| panic!("{e:?}"));
            drop(contexts.call_started(&minted));
            let session = contexts.session(&p).unwrap_or_else(|e| panic!("{e:?}"));
            drop(contexts.call_started(&session));
            contexts.end_session(&session);
        }
        assert_eq!(alive(&markers), 60);
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert_eq!(contexts.expire().await, 40);
        // The legacy sessions end in the background.
        for _ in 0..100 {
            if alive(&markers) == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(alive(&markers), 0, "every ended context is dropped");
        let held = |m: &Mutex<HashMap<String, usize>>| m.lock().map_or(usize::MAX, |m| m.len());
        assert_eq!(held(&contexts.busy), 0);
        assert_eq!(contexts.slots.lock().map_or(usize::MAX, |s| s.len()), 0);
        assert_eq!(contexts.sessions.lock().map_or(usize::MAX, |s| s.len()), 0);
        assert_eq!(contexts.in_flight(), 0);
    }

    #[tokio::test]
    async fn settled_waits_for_calls_in_flight() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let contexts = Arc::new(Contexts::with_idle(factory(dir.path()), DEFAULT_IDLE));
        let ctx = ToolContext::builder(dir.path()).build();
        let guard = contexts.call_started(&ctx);
        assert_eq!(contexts.in_flight(), 1);
        let waiter = {
            let contexts = Arc::clone(&contexts);
            tokio::spawn(async move { contexts.settled().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(guard);
        assert!(waiter.await.is_ok());
        assert_eq!(contexts.in_flight(), 0);
    }
}
