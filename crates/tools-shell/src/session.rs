//! Per-session state of Bash: a pool of reusable output and working-directory files, and the
//! session's persistent bubblewrap sandbox.
//!
//! Creating and unlinking two files per call costs more than the command itself on ext4
//! (allocating an inode scans for recently deleted ones), so a foreground call leases a
//! *slot*: an output file and a working-directory file in the session's `live-*` directory,
//! truncated for each use and returned afterwards. An output that is kept (cut for the model)
//! is renamed out of the slot, so the command's bytes are never copied.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tool_core::{ToolContext, ToolError};

#[cfg(target_os = "linux")]
use crate::sandbox::SandboxPolicy;
#[cfg(target_os = "linux")]
use crate::supervisor::{Key, Supervisor};

static SESSIONS: AtomicU64 = AtomicU64::new(0);

/// What a test can see of a session's persistent sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxInstance {
    /// The process id of its bubblewrap process (outside the sandbox)
    pub pid: u32,
    /// How many instances this session has started, this one included
    pub generation: u64,
}

/// The shell state of one session; stored in the context's services, dropped with it.
#[derive(Debug)]
pub struct ShellSession {
    /// Where kept outputs go
    dir: PathBuf,
    /// Where the slots live
    live: PathBuf,
    free: Mutex<Vec<u64>>,
    next_slot: AtomicU64,
    next_kept: AtomicU64,
    #[cfg(target_os = "linux")]
    sandbox: tokio::sync::Mutex<Option<Arc<Supervisor>>>,
    #[cfg(target_os = "linux")]
    starts: AtomicU64,
    #[cfg(target_os = "linux")]
    current: Mutex<Option<SandboxInstance>>,
}

impl ShellSession {
    /// The session's shell state, created on first use.
    pub fn of(ctx: &ToolContext) -> Arc<ShellSession> {
        static CREATE: Mutex<()> = Mutex::new(());
        if let Some(s) = ctx.services().get::<Arc<ShellSession>>() {
            return s;
        }
        let _guard = CREATE.lock();
        if let Some(s) = ctx.services().get::<Arc<ShellSession>>() {
            return s;
        }
        let dir = crate::bash::output_dir(ctx);
        let live = dir.join(format!(
            "live-{}-{}",
            std::process::id(),
            SESSIONS.fetch_add(1, Ordering::Relaxed)
        ));
        let s = Arc::new(ShellSession {
            dir,
            live,
            free: Mutex::new(Vec::new()),
            next_slot: AtomicU64::new(0),
            next_kept: AtomicU64::new(0),
            #[cfg(target_os = "linux")]
            sandbox: tokio::sync::Mutex::new(None),
            #[cfg(target_os = "linux")]
            starts: AtomicU64::new(0),
            #[cfg(target_os = "linux")]
            current: Mutex::new(None),
        });
        ctx.services().insert(Arc::clone(&s));
        s
    }

    /// Leases a slot: an empty working-directory file and an output file (truncated when the
    /// command starts).
    pub fn lease(self: &Arc<Self>) -> Result<Lease, ToolError> {
        let reused = self.free.lock().ok().and_then(|mut f| f.pop());
        let n = match reused {
            Some(n) => n,
            None => {
                std::fs::create_dir_all(&self.live).map_err(|e| ToolError::io(&self.live, e))?;
                self.next_slot.fetch_add(1, Ordering::Relaxed)
            }
        };
        let lease = Lease {
            session: Arc::clone(self),
            n,
            output: self.live.join(format!("{n}.output")),
            cwd_file: self.live.join(format!("{n}.cwd")),
            released: false,
        };
        if reused.is_none() {
            // Both exist before the command starts, so Landlock can grant writing them.
            for f in [&lease.output, &lease.cwd_file] {
                std::fs::File::create(f).map_err(|e| ToolError::io(f, e))?;
            }
        }
        Ok(lease)
    }

    /// The persistent bubblewrap sandbox for `policy`, started (or restarted: another
    /// policy, a replaced mount source, a dead supervisor) when needed.
    #[cfg(target_os = "linux")]
    pub async fn run_supervised(
        &self,
        policy: &SandboxPolicy,
        spec: &crate::process::RunSpec,
    ) -> Result<crate::supervisor::Supervised, ToolError> {
        // An instance that died since the last call is found out when the request cannot be
        // written: start a new one once.
        match self.supervisor(policy).await?.run(spec) {
            Ok(r) => Ok(r),
            Err(_) => self.supervisor(policy).await?.run(spec),
        }
    }

    #[cfg(target_os = "linux")]
    async fn supervisor(&self, policy: &SandboxPolicy) -> Result<Arc<Supervisor>, ToolError> {
        let key = Key::new(policy, &self.live);
        let mut current = self.sandbox.lock().await;
        if let Some(s) = current.as_ref()
            && s.serves(&key)
        {
            return Ok(Arc::clone(s));
        }
        // The old instance (if any) ends once its last running call lets go of it.
        *current = None;
        let generation = self.starts.fetch_add(1, Ordering::Relaxed) + 1;
        let s = Arc::new(Supervisor::start(key).await?);
        if let Ok(mut c) = self.current.lock() {
            *c = Some(SandboxInstance {
                pid: s.pid(),
                generation,
            });
        }
        *current = Some(Arc::clone(&s));
        Ok(s)
    }

    /// The current persistent sandbox, if one was started.
    pub fn instance(&self) -> Option<SandboxInstance> {
        #[cfg(target_os = "linux")]
        {
            self.current.lock().ok().and_then(|c| *c)
        }
        #[cfg(not(target_os = "linux"))]
        {
            None
        }
    }
}

impl Drop for ShellSession {
    fn drop(&mut self) {
        let free = self.free.get_mut().map(std::mem::take).unwrap_or_default();
        for n in free {
            let _ = std::fs::remove_file(self.live.join(format!("{n}.output")));
            let _ = std::fs::remove_file(self.live.join(format!("{n}.cwd")));
        }
        let _ = std::fs::remove_dir(&self.live);
    }
}

/// The persistent sandbox of the session `ctx` belongs to, if one is running: its
/// bubblewrap process id and how many instances the session started.
pub fn sandbox_instance(ctx: &ToolContext) -> Option<SandboxInstance> {
    ctx.services()
        .get::<Arc<ShellSession>>()
        .and_then(|s| s.instance())
}

/// A leased slot; dropped without [`Lease::release`] (an abandoned call whose command may
/// still be dying) its files are removed rather than reused.
#[derive(Debug)]
pub struct Lease {
    session: Arc<ShellSession>,
    n: u64,
    /// The output file
    pub output: PathBuf,
    /// The working-directory file
    pub cwd_file: PathBuf,
    released: bool,
}

impl Lease {
    /// Keeps the output: renames it out of the slot and returns its new path.
    pub fn keep_output(&self) -> Result<PathBuf, ToolError> {
        let k = self.session.next_kept.fetch_add(1, Ordering::Relaxed);
        let kept =
            self.session
                .dir
                .join(format!("bash-{}-{}-{k}.output", std::process::id(), self.n));
        std::fs::rename(&self.output, &kept).map_err(|e| ToolError::io(&self.output, e))?;
        Ok(kept)
    }

    /// Returns the slot to the pool (the command and everything it started are gone).
    pub fn release(mut self) {
        self.released = true;
        if let Ok(mut f) = self.session.free.lock() {
            f.push(self.n);
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if !self.released {
            let _ = std::fs::remove_file(&self.output);
            let _ = std::fs::remove_file(&self.cwd_file);
        }
    }
}
