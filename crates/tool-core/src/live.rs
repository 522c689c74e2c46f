//! The live batch runner: calls that arrive one at a time (a driver's JSON lines, an
//! agent's tool calls as it streams them) start as soon as the concurrency rule allows,
//! while earlier calls still run, and their results come back in call order.
//!
//! The rule is [`ToolPool::batch`]'s, applied to a stream: a concurrency-safe call starts at
//! once unless a call before it that is not concurrency-safe has yet to finish (at most
//! [`MAX_CONCURRENCY`] run at once); any other call starts when every call before it has
//! finished, and the calls after it wait for it. So a TaskStop sent while a TaskOutput
//! waits for that task runs beside the wait and ends it, where running one group after the
//! other would hold the TaskStop until the wait timed out.
//!
//! Each call is prepared (looked up, parsed, classified) with the pool the source gives at
//! the moment it may start, so a call after one that changed the pool (an MCP server's
//! tools) sees the new pool. Consecutive concurrency-safe calls form a group with a
//! cancellation token of its own: an error of a tool that cancels its siblings (Bash)
//! cancels the rest of its group, as in [`ToolPool::batch`]; a call that arrives after that
//! starts a new group.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio::task::{Id, JoinSet};

use crate::exec::{Prepared, error_result, run};
use crate::{CallResult, ContentBlock, MAX_CONCURRENCY, ProgressSink, ToolCall, ToolContext};
use crate::{ToolError, ToolPool};

/// A pool to prepare a call with, once it may start.
pub type PoolFuture = Pin<Box<dyn Future<Output = ToolPool> + Send>>;

/// Where a [`LiveBatch`] takes the pool for a call: the host's pool as it is when the call
/// may start (for a pool that never changes, a clone of it).
pub type PoolSource = Arc<dyn Fn(&ToolCall) -> PoolFuture + Send + Sync>;

/// Runs calls as they arrive; see the module documentation.
///
/// ```
/// use std::sync::Arc;
/// use serde_json::json;
/// use tool_core::{LiveBatch, ToolCall, ToolContext, ToolPool};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let ctx = ToolContext::builder(std::env::temp_dir()).build();
/// let mut live = ToolPool::new(Vec::new()).live(&ctx);
/// live.push(ToolCall::new("Nope", json!({})));
/// let result = live.next().await.expect("one result per call");
/// assert!(result.is_error);
/// assert!(live.next().await.is_none());
/// # }
/// ```
pub struct LiveBatch {
    ctx: ToolContext,
    source: PoolSource,
    /// One per call pushed and not yet taken by [`LiveBatch::next`], in call order
    slots: VecDeque<Slot>,
    /// The number of `slots[0]` (calls pushed before it were taken)
    first: u64,
    tasks: JoinSet<Event>,
    /// Which call each task serves
    owners: HashMap<Id, u64>,
    /// The group concurrency-safe calls join while it is open
    group: Option<Arc<Group>>,
    running_safe: usize,
}

impl std::fmt::Debug for LiveBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveBatch")
            .field("pending", &self.slots.len())
            .field("running_safe", &self.running_safe)
            .finish_non_exhaustive()
    }
}

enum Slot {
    /// Not started. `exclusive` is what the last preparation found (`None`: not prepared
    /// yet); `pool` a pool the source gave for it and not used yet.
    Waiting {
        call: ToolCall,
        exclusive: Option<bool>,
        pool: Option<ToolPool>,
    },
    /// Waiting for the source to give its pool
    Resolving(ToolCall),
    Running {
        exclusive: bool,
    },
    Done(CallResult),
}

/// Consecutive concurrency-safe calls, sharing a cancellation token.
struct Group {
    ctx: ToolContext,
    /// The tool whose error cancelled the group
    errored: Mutex<Option<String>>,
}

enum Event {
    Resolved(ToolPool),
    Finished {
        result: CallResult,
        exclusive: bool,
        cancelled: bool,
        group: Option<Arc<Group>>,
    },
}

impl ToolPool {
    /// A [`LiveBatch`] that runs calls with this pool in `ctx`.
    pub fn live(&self, ctx: &ToolContext) -> LiveBatch {
        let pool = self.clone();
        LiveBatch::new(
            ctx,
            Arc::new(move |_: &ToolCall| -> PoolFuture {
                let pool = pool.clone();
                Box::pin(async move { pool })
            }),
        )
    }
}

/// The value of a future that is ready at once (most pool sources), without a task.
fn now_or_never<T>(
    mut fut: Pin<Box<dyn Future<Output = T> + Send>>,
) -> Result<T, Pin<Box<dyn Future<Output = T> + Send>>> {
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    match fut.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => Ok(v),
        std::task::Poll::Pending => Err(fut),
    }
}

impl LiveBatch {
    /// A runner of calls in `ctx`, each prepared with the pool `source` gives for it.
    pub fn new(ctx: &ToolContext, source: PoolSource) -> Self {
        LiveBatch {
            ctx: ctx.clone(),
            source,
            slots: VecDeque::new(),
            first: 0,
            tasks: JoinSet::new(),
            owners: HashMap::new(),
            group: None,
            running_safe: 0,
        }
    }

    /// Adds a call; it starts now if the rule allows, else when it does.
    pub fn push(&mut self, call: ToolCall) {
        self.slots.push_back(Slot::Waiting {
            call,
            exclusive: None,
            pool: None,
        });
        self.schedule();
    }

    /// Adds a result in a call's place (a line that was not a call): it comes back in
    /// order like any other.
    pub fn push_result(&mut self, result: CallResult) {
        self.slots.push_back(Slot::Done(result));
    }

    /// Whether every call pushed has been taken by [`LiveBatch::next`].
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The next result in call order, once it is there; `None` when no call is left.
    /// Cancel-safe: dropping the future loses nothing.
    pub async fn next(&mut self) -> Option<CallResult> {
        loop {
            if matches!(self.slots.front(), Some(Slot::Done(_))) {
                self.first += 1;
                return match self.slots.pop_front() {
                    Some(Slot::Done(result)) => Some(result),
                    _ => None,
                };
            }
            if self.slots.is_empty() {
                return None;
            }
            let Some(joined) = self.tasks.join_next_with_id().await else {
                // Nothing runs, yet the first call has no result: cannot happen while the
                // scheduler starts what it may; answer rather than hang.
                self.fail_front("internal error: a call was never started");
                continue;
            };
            match joined {
                Ok((id, event)) => {
                    if let Some(n) = self.owners.remove(&id) {
                        self.handle(n, event);
                    }
                }
                Err(e) => {
                    // A task of ours panicked outside the call (which catches tool panics).
                    if let Some(n) = self.owners.remove(&e.id()) {
                        if matches!(self.slot_mut(n), Some(Slot::Running { exclusive: false })) {
                            self.running_safe = self.running_safe.saturating_sub(1);
                        }
                        let err =
                            ToolError::fatal(format!("internal error in the batch runner: {e}"));
                        if let Some(slot) = self.slot_mut(n) {
                            *slot = Slot::Done(error_result("batch", &err));
                        }
                    }
                }
            }
            self.schedule();
        }
    }

    fn slot_mut(&mut self, n: u64) -> Option<&mut Slot> {
        let i = usize::try_from(n.checked_sub(self.first)?).ok()?;
        self.slots.get_mut(i)
    }

    fn fail_front(&mut self, message: &str) {
        if let Some(slot) = self.slots.front_mut() {
            let tool = match slot {
                Slot::Waiting { call, .. } | Slot::Resolving(call) => call.tool.clone(),
                _ => String::new(),
            };
            *slot = Slot::Done(error_result(&tool, &ToolError::fatal(message)));
        }
    }

    fn handle(&mut self, n: u64, event: Event) {
        match event {
            Event::Resolved(pool) => {
                if let Some(slot) = self.slot_mut(n)
                    && let Slot::Resolving(call) =
                        std::mem::replace(slot, Slot::Running { exclusive: true })
                {
                    *slot = Slot::Waiting {
                        call,
                        exclusive: None,
                        pool: Some(pool),
                    };
                }
            }
            Event::Finished {
                mut result,
                exclusive,
                cancelled,
                group,
            } => {
                if !exclusive {
                    self.running_safe = self.running_safe.saturating_sub(1);
                }
                if cancelled
                    && let Some(name) = group
                        .as_ref()
                        .and_then(|g| g.errored.lock().ok().and_then(|e| e.clone()))
                {
                    result.content = vec![ContentBlock::text(format!(
                        "<tool_use_error>Cancelled: parallel tool call {name} errored</tool_use_error>"
                    ))];
                }
                if let Some(slot) = self.slot_mut(n) {
                    *slot = Slot::Done(result);
                }
            }
        }
    }

    /// Starts every call the rule allows now, in order.
    fn schedule(&mut self) {
        // Whether a call before the one looked at has not finished.
        let mut unfinished_before = false;
        let mut i = 0;
        while i < self.slots.len() {
            let n = self.first + i as u64;
            match &mut self.slots[i] {
                Slot::Done(_) => {}
                Slot::Running { exclusive: true } | Slot::Resolving(_) => return,
                Slot::Running { exclusive: false } => unfinished_before = true,
                // Known to run alone: it waits until everything before it has finished.
                Slot::Waiting {
                    exclusive: Some(true),
                    ..
                } if unfinished_before => return,
                Slot::Waiting { call, pool, .. } => {
                    let pool = match pool.take() {
                        Some(pool) => pool,
                        None => match now_or_never((self.source)(call)) {
                            Ok(pool) => pool,
                            Err(pending) => {
                                let call = std::mem::replace(
                                    call,
                                    ToolCall::new("", serde_json::Value::Null),
                                );
                                self.slots[i] = Slot::Resolving(call);
                                let handle = self
                                    .tasks
                                    .spawn(async move { Event::Resolved(pending.await) });
                                self.owners.insert(handle.id(), n);
                                return;
                            }
                        },
                    };
                    let call = std::mem::replace(call, ToolCall::new("", serde_json::Value::Null));
                    match pool.prepare(call) {
                        Prepared::Done(result) => self.slots[i] = Slot::Done(result),
                        Prepared::Ready(tool, input, call) => {
                            let safe = tool.is_concurrency_safe(&input);
                            let startable = if safe {
                                self.running_safe < MAX_CONCURRENCY
                            } else {
                                !unfinished_before
                            };
                            if !startable {
                                // Prepared again, with the pool of that moment, when it may
                                // start.
                                self.slots[i] = Slot::Waiting {
                                    call,
                                    exclusive: Some(!safe),
                                    pool: None,
                                };
                                return;
                            }
                            self.start(n, i, tool, input, call, !safe);
                            if !safe {
                                return;
                            }
                            unfinished_before = true;
                        }
                    }
                }
            }
            i += 1;
        }
    }

    fn start(
        &mut self,
        n: u64,
        i: usize,
        tool: Arc<dyn crate::Tool>,
        input: crate::ParsedInput,
        call: ToolCall,
        exclusive: bool,
    ) {
        let group = if exclusive {
            // A call that runs alone closes the group before it.
            self.group = None;
            None
        } else {
            let open = self
                .group
                .as_ref()
                .filter(|g| !g.ctx.is_cancelled())
                .cloned();
            let group = open.unwrap_or_else(|| {
                Arc::new(Group {
                    ctx: self.ctx.child(),
                    errored: Mutex::new(None),
                })
            });
            self.group = Some(Arc::clone(&group));
            self.running_safe += 1;
            Some(group)
        };
        let ctx = group
            .as_ref()
            .map(|g| g.ctx.clone())
            .unwrap_or_else(|| self.ctx.clone());
        self.slots[i] = Slot::Running { exclusive };
        let handle = self.tasks.spawn(async move {
            let name = tool.name().to_owned();
            let cancels = tool.cancels_siblings_on_error();
            let (result, cancelled) = run(tool, input, call, &ctx, ProgressSink::default()).await;
            if let Some(g) = &group
                && result.is_error
                && cancels
                && !cancelled
            {
                if let Ok(mut e) = g.errored.lock() {
                    e.get_or_insert(name);
                }
                g.ctx.cancel_token().cancel();
            }
            Event::Finished {
                result,
                exclusive,
                cancelled,
                group,
            }
        });
        self.owners.insert(handle.id(), n);
    }
}
