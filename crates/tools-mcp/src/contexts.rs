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
//! Minted contexts end after [`MINTED_IDLE`] without a request; a principal holds at most
//! [`MAX_MINTED`] of them. A context that ends has its calls cancelled and its background
//! tasks stopped.

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

/// How long a minted context lives without a request.
pub const MINTED_IDLE: Duration = Duration::from_secs(60 * 60);

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
}

/// The contexts of a server: per principal and handle for stateless requests, per session
/// for legacy ones, and the count of calls in flight (for a graceful shutdown).
pub struct Contexts {
    factory: Option<SessionFactory>,
    slots: Mutex<HashMap<(Principal, String), Slot>>,
    /// Contexts of legacy sessions, by session id, until the session ends
    sessions: Mutex<HashMap<String, ToolContext>>,
    in_flight: AtomicUsize,
    settled: Notify,
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
    /// Contexts built by `factory`.
    pub fn new(factory: SessionFactory) -> Self {
        Contexts {
            factory: Some(factory),
            slots: Mutex::default(),
            sessions: Mutex::default(),
            in_flight: AtomicUsize::new(0),
            settled: Notify::new(),
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
            in_flight: AtomicUsize::new(0),
            settled: Notify::new(),
        };
        if let Ok(mut slots) = contexts.slots.lock() {
            slots.insert(
                (Principal::local(), DEFAULT_HANDLE.to_owned()),
                Slot {
                    ctx,
                    last_used: Instant::now(),
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

    /// Forgets a legacy session's context and cancels its calls.
    pub fn end_session(&self, ctx: &ToolContext) {
        ctx.cancel_token().cancel();
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.remove(ctx.session_id());
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
        let mut ended = Vec::new();
        let outcome = {
            let mut slots = self
                .slots
                .lock()
                .map_err(|_| ErrorData::internal_error("the context table is poisoned", None))?;
            // Minted contexts that saw no request for MINTED_IDLE end here.
            slots.retain(|(_, h), slot| {
                let keep = h == DEFAULT_HANDLE || now.duration_since(slot.last_used) < MINTED_IDLE;
                if !keep {
                    ended.push(slot.ctx.clone());
                }
                keep
            });
            match handle {
                "new" => {
                    let minted = slots
                        .keys()
                        .filter(|(p, h)| p == principal && h != DEFAULT_HANDLE)
                        .count();
                    if minted >= MAX_MINTED {
                        Err(invalid(format!(
                            "this principal already holds {MAX_MINTED} contexts; reuse one, or wait until one is idle for {} minutes",
                            MINTED_IDLE.as_secs() / 60
                        )))
                    } else {
                        let id = random_handle()?;
                        let ctx = self.build(principal)?;
                        slots.insert(
                            (principal.clone(), id.clone()),
                            Slot {
                                ctx: ctx.clone(),
                                last_used: now,
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
                            },
                        );
                        Ok((handle.to_owned(), ctx))
                    } else {
                        Err(invalid(format!(
                            "_meta `{CONTEXT_META_KEY}`: no context \"{}\" for this client (it ended after {} minutes without a request, or was never created); send \"new\" to start one, or omit the key for the default context",
                            tool_core::cut_middle(handle, 80),
                            MINTED_IDLE.as_secs() / 60
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

    /// Counts a call as in flight until the guard is dropped.
    pub fn call_started(self: &Arc<Self>) -> CallGuard {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        CallGuard(Arc::clone(self))
    }

    /// Calls in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Waits until no call is in flight.
    pub async fn settled(&self) {
        loop {
            let notified = self.settled.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.in_flight() == 0 {
                return;
            }
            notified.await;
        }
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

/// Cancels a context's calls and stops its running background tasks.
pub async fn stop_context(ctx: &ToolContext) {
    ctx.cancel_token().cancel();
    let Ok(tasks) = ctx.tasks().list().await else {
        return;
    };
    for task in tasks {
        if !task.status.is_terminal() {
            let _ = ctx.tasks().stop(&task.id).await;
        }
    }
}

/// A call in flight; dropping it ends the count.
pub struct CallGuard(Arc<Contexts>);

impl Drop for CallGuard {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.settled.notify_waiters();
        }
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
        let contexts = Contexts::new(factory(dir.path()));
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
        let contexts = Contexts::new(factory(dir.path()));
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
    async fn settled_waits_for_calls_in_flight() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let contexts = Arc::new(Contexts::new(factory(dir.path())));
        let guard = contexts.call_started();
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
