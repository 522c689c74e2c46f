//! Bounds on the persistent supervisors of this process (each a bubblewrap sandbox, a
//! Landlock-restricted process, or an unsandboxed reaper, kept per session): at most
//! [`SandboxLimits::max_instances`] live at once, and each ends after
//! [`SandboxLimits::idle_timeout`] without a command.
//!
//! A session that needs a new instance at the limit first ends the instance idle the
//! longest (of any session: its next call starts one again); when every instance runs a
//! command, the call gets a retryable error saying so. A thread wakes a few times per idle
//! timeout to end idle instances; it exits when no instance is left.

use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use tool_core::ToolError;

use crate::supervisor::Supervisor;

/// Bounds on the persistent sandbox instances of this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxLimits {
    /// Instances alive at once (default 32)
    pub max_instances: usize,
    /// How long an instance lives without a command (default 30 s)
    pub idle_timeout: Duration,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        SandboxLimits {
            max_instances: 32,
            idle_timeout: Duration::from_secs(30),
        }
    }
}

#[derive(Debug)]
struct Registry {
    limits: SandboxLimits,
    live: Vec<Weak<Supervisor>>,
    /// Places taken by instances still starting
    reserved: usize,
    /// Whether the idle thread runs
    ticking: bool,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    limits: SandboxLimits {
        max_instances: 32,
        idle_timeout: Duration::from_secs(30),
    },
    live: Vec::new(),
    reserved: 0,
    ticking: false,
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// Sets the bounds for this process (instances already running keep going; an idle one
/// ends at the next check, and a lower maximum is reached as instances end). A maximum of
/// 0 counts as 1.
pub fn set_sandbox_limits(limits: SandboxLimits) {
    let mut r = registry();
    r.limits = SandboxLimits {
        max_instances: limits.max_instances.max(1),
        ..limits
    };
}

/// The bounds in force.
pub fn sandbox_limits() -> SandboxLimits {
    registry().limits
}

/// How many persistent sandbox instances this process has running.
pub fn live_sandbox_instances() -> usize {
    let mut r = registry();
    r.live.retain(|w| w.upgrade().is_some_and(|s| s.is_live()));
    r.live.len()
}

/// A place for one more instance; given back when dropped unless the instance was
/// [`Admission::register`]ed.
#[derive(Debug)]
pub struct Admission {
    held: bool,
}

/// Takes a place for a new instance: at once below the limit, else by ending the instance
/// idle the longest (and waiting until its process is gone, so the limit holds in the
/// process table too); an error the model can act on when all are busy.
pub async fn admit() -> Result<Admission, ToolError> {
    loop {
        let idle = {
            let mut r = registry();
            r.live.retain(|w| w.upgrade().is_some_and(|s| s.is_live()));
            let max = r.limits.max_instances;
            if r.live.len() + r.reserved < max {
                r.reserved += 1;
                return Ok(Admission { held: true });
            }
            let mut idle: Vec<(std::time::Instant, Arc<Supervisor>)> = r
                .live
                .iter()
                .filter_map(Weak::upgrade)
                .filter_map(|s| s.idle_since().map(|t| (t, s)))
                .collect();
            if idle.is_empty() {
                return Err(ToolError::respond(format!(
                    "The command was not run: all {max} sandbox instances this process allows are running commands (of this or other sessions). Retry when one finishes, or run fewer commands at once."
                )));
            }
            idle.sort_by_key(|(t, _)| *t);
            idle
        };
        // Outside the lock: ending an instance waits for its process.
        match idle
            .into_iter()
            .find(|(_, s)| s.retire_if_idle(Duration::ZERO))
        {
            Some((_, ended)) => ended.wait_exited(EVICT_WAIT).await,
            // Each became busy meanwhile; look again.
            None => tokio::task::yield_now().await,
        }
    }
}

/// How long an evicted instance's process may take to go before its place is reused.
const EVICT_WAIT: Duration = Duration::from_secs(5);

impl Admission {
    /// Counts `instance` in the place taken.
    pub fn register(mut self, instance: &Arc<Supervisor>) {
        self.held = false;
        let mut r = registry();
        r.reserved = r.reserved.saturating_sub(1);
        r.live.push(Arc::downgrade(instance));
        if !r.ticking {
            r.ticking = true;
            let started = std::thread::Builder::new()
                .name("agent-tools-sandbox-idle".into())
                .spawn(tick);
            if started.is_err() {
                r.ticking = false;
            }
        }
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        if self.held {
            let mut r = registry();
            r.reserved = r.reserved.saturating_sub(1);
        }
    }
}

/// Ends instances idle for the timeout, a few times per timeout, while any is left.
fn tick() {
    loop {
        let (every, timeout, instances) = {
            let mut r = registry();
            r.live.retain(|w| w.upgrade().is_some_and(|s| s.is_live()));
            if r.live.is_empty() {
                r.ticking = false;
                return;
            }
            let timeout = r.limits.idle_timeout;
            let every = (timeout / 4).clamp(Duration::from_millis(50), Duration::from_secs(1));
            let instances: Vec<Arc<Supervisor>> = r.live.iter().filter_map(Weak::upgrade).collect();
            (every, timeout, instances)
        };
        for s in instances {
            s.retire_if_idle(timeout);
        }
        std::thread::sleep(every);
    }
}
