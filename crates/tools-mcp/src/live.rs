//! A pool that follows the MCP servers: rebuilt (by the host's assembly rule) whenever a
//! server's tool list changes, published through a watch channel so `agent-tools serve` can
//! tell its clients and answer from the new pool, and read between calls by batch hosts.

use std::sync::{Arc, Mutex, Weak};

use tokio::sync::watch;
use tool_core::{Tool, ToolPool};

use crate::manager::McpManager;

/// Builds the pool from the MCP tools of the moment (the registry's assembly rule).
type Build = dyn Fn(Vec<Arc<dyn Tool>>) -> ToolPool + Send + Sync;

struct Source {
    manager: Arc<McpManager>,
    build: Box<Build>,
    /// The manager generation the current pool was built from
    built: Mutex<u64>,
}

struct Inner {
    pools: watch::Sender<ToolPool>,
    source: Option<Source>,
}

/// The pool of a session, kept current with its MCP servers.
///
/// [`LivePool::fixed`] never changes; [`LivePool::following`] rebuilds itself from
/// [`McpManager::tools`] whenever the manager announces a change (a follower task, when a
/// tokio runtime is running) or when [`LivePool::refresh`] / [`LivePool::settled`] finds the
/// manager ahead of it. Tools already offered keep their first definition (see
/// [`McpManager::tools`]), so a rebuild adds new tools and drops removed ones but never
/// makes a changed definition callable. Cheap to clone.
#[derive(Clone)]
pub struct LivePool {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LivePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LivePool")
            .field("tools", &self.current().len())
            .field("follows_changes", &self.follows_changes())
            .finish()
    }
}

impl From<ToolPool> for LivePool {
    fn from(pool: ToolPool) -> Self {
        LivePool::fixed(pool)
    }
}

impl LivePool {
    /// A pool that never changes.
    pub fn fixed(pool: ToolPool) -> Self {
        LivePool {
            inner: Arc::new(Inner {
                pools: watch::Sender::new(pool),
                source: None,
            }),
        }
    }

    /// A pool built now by `build` from `manager`'s tools and rebuilt whenever they change.
    pub fn following(
        manager: Arc<McpManager>,
        build: impl Fn(Vec<Arc<dyn Tool>>) -> ToolPool + Send + Sync + 'static,
    ) -> Self {
        let mut changes = manager.subscribe();
        let generation = manager.generation();
        let pool = build(manager.tools());
        let live = LivePool {
            inner: Arc::new(Inner {
                pools: watch::Sender::new(pool),
                source: Some(Source {
                    manager,
                    build: Box::new(build),
                    built: Mutex::new(generation),
                }),
            }),
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let weak: Weak<Inner> = Arc::downgrade(&live.inner);
            runtime.spawn(async move {
                // Ends when the manager or the pool goes away.
                while changes.changed().await.is_ok() {
                    let Some(inner) = weak.upgrade() else {
                        break;
                    };
                    LivePool { inner }.refresh();
                }
            });
        }
        live
    }

    /// The MCP manager this pool follows, if it follows one.
    pub fn manager(&self) -> Option<Arc<McpManager>> {
        self.inner.source.as_ref().map(|s| Arc::clone(&s.manager))
    }

    /// The pool as it is now.
    pub fn current(&self) -> ToolPool {
        self.inner.pools.borrow().clone()
    }

    /// Whether this pool can change (it follows an MCP manager).
    pub fn follows_changes(&self) -> bool {
        self.inner.source.is_some()
    }

    /// A receiver of every new pool; its current value is [`Self::current`].
    pub fn subscribe(&self) -> watch::Receiver<ToolPool> {
        self.inner.pools.subscribe()
    }

    /// Rebuilds the pool when the manager's tools changed since the last build. Returns
    /// whether the pool changed (subscribers are woken only then).
    pub fn refresh(&self) -> bool {
        let Some(source) = &self.inner.source else {
            return false;
        };
        let Ok(mut built) = source.built.lock() else {
            return false;
        };
        let generation = source.manager.generation();
        if generation == *built {
            return false;
        }
        *built = generation;
        let pool = (source.build)(source.manager.tools());
        self.inner.pools.send_if_modified(|current| {
            let same = current.len() == pool.len()
                && current
                    .tools()
                    .iter()
                    .zip(pool.tools())
                    .all(|(a, b)| Arc::ptr_eq(a, b));
            if !same {
                *current = pool;
            }
            !same
        })
    }

    /// The pool once the refreshes announced so far have finished: what a host uses
    /// between calls, so a call sees the tools a previous call added.
    pub async fn settled(&self) -> ToolPool {
        if let Some(source) = &self.inner.source {
            source.manager.settle().await;
        }
        self.refresh();
        self.current()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_fixed_pool_never_changes() {
        let live = LivePool::from(ToolPool::new(Vec::new()));
        assert!(!live.follows_changes());
        assert!(!live.refresh());
        assert!(live.settled().await.is_empty());
        let rx = live.subscribe();
        assert!(!rx.has_changed().unwrap_or(true));
    }
}
