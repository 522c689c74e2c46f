//! Per-session state of Bash: a pool of reusable output files, and the session's
//! supervisors (`sandbox::Instances`: one per kind of launch and profile).
//!
//! Creating and unlinking a file per call costs more than the command itself on ext4
//! (allocating an inode scans for recently deleted ones), so a foreground call leases an
//! output file from the session's pool: emptied after each use (through the descriptor
//! kept open, never by path) and returned. An output that is kept (cut for the model)
//! leaves the pool under the name it has. The files live in
//! `<state>/tool-results/<session>/`, opened as an [`OutputDir`]; no command writes them
//! (commands write into pipes), and none of them is ever opened by path again.

use std::fs::File;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tool_core::{ToolContext, ToolError};

#[cfg(any(test, feature = "testing"))]
use sandbox::SandboxInstance;
use sandbox::{Instances, Io, Launch, RunSpec, Running};

use crate::spool::{Caps, OutputDir, Spool};

static SESSIONS: AtomicU64 = AtomicU64::new(0);

/// An output file of the pool: the file and its name in the session's directory.
#[derive(Debug)]
struct PoolFile {
    file: File,
    name: String,
}

/// The shell state of one session; stored in the context's services, dropped with it.
#[derive(Debug)]
pub struct ShellSession {
    /// Where outputs go, opened on first use
    state_dir: PathBuf,
    session_dir: String,
    dir: Mutex<Option<Arc<OutputDir>>>,
    /// Output files ready for reuse
    free: Mutex<Vec<PoolFile>>,
    /// Distinguishes this session's files from other sessions' of the same process
    serial: u64,
    next_file: AtomicU64,
    /// The session's supervisors
    instances: Instances,
}
impl tool_core::ServiceType for ShellSession {}

impl ShellSession {
    /// The session's shell state, created on first use.
    pub fn of(ctx: &ToolContext) -> Arc<ShellSession> {
        ctx.services().get_or_insert_with(|| {
            Arc::new(ShellSession {
                state_dir: ctx.private_state_dir().to_path_buf(),
                session_dir: ctx.session_id().to_owned(),
                dir: Mutex::new(None),
                free: Mutex::new(Vec::new()),
                serial: SESSIONS.fetch_add(1, Ordering::Relaxed),
                next_file: AtomicU64::new(0),
                instances: Instances::default(),
            })
        })
    }

    /// The session's output directory, opened (and created) on first use.
    fn dir(&self) -> Result<Arc<OutputDir>, ToolError> {
        let mut dir = self
            .dir
            .lock()
            .map_err(|_| ToolError::fatal("internal error: the output directory is poisoned"))?;
        if let Some(d) = dir.as_ref() {
            return Ok(Arc::clone(d));
        }
        let opened = Arc::new(OutputDir::open(
            &self.state_dir,
            &["tool-results", &self.session_dir],
        )?);
        *dir = Some(Arc::clone(&opened));
        Ok(opened)
    }

    /// Leases an empty output file.
    pub fn lease(self: &Arc<Self>) -> Result<Lease, ToolError> {
        let dir = self.dir()?;
        let reused = self.free.lock().ok().and_then(|mut f| f.pop());
        let pooled = match reused {
            Some(p) => p,
            None => {
                let n = self.next_file.fetch_add(1, Ordering::Relaxed);
                let stem = format!("bash-{}-{}-{n}", std::process::id(), self.serial);
                let (file, path) = dir.create_unique(&stem, "output")?;
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                PoolFile { file, name }
            }
        };
        Ok(Lease {
            session: Arc::clone(self),
            dir,
            pooled: Some(pooled),
        })
    }

    /// The pipes for the next command (see [`Instances::pipes`]).
    pub fn pipes(&self, reports_cwd: bool) -> Result<sandbox::Pipes, ToolError> {
        self.instances.pipes(reports_cwd)
    }

    /// Starts `spec` with `io` under the session's supervisor for `launch` (see
    /// [`Instances::start`]).
    pub async fn start(
        &self,
        spec: &RunSpec,
        launch: &Launch,
        io: Io,
    ) -> Result<Running, ToolError> {
        self.instances.start(spec, launch, io).await
    }

    #[cfg(any(test, feature = "testing"))]
    /// The supervisor started last, if one was started.
    pub fn instance(&self) -> Option<SandboxInstance> {
        self.instances.instance()
    }
}

impl Drop for ShellSession {
    fn drop(&mut self) {
        let free = self.free.get_mut().map(std::mem::take).unwrap_or_default();
        let dir = self.dir.get_mut().ok().and_then(|d| d.take());
        if let Some(dir) = dir {
            for p in free {
                dir.remove(&p.name, &p.file);
            }
        }
    }
}

#[cfg(any(test, feature = "testing"))]
/// The persistent supervisor the session `ctx` started last, if any: its process id and
/// how many instances the session started.
pub fn sandbox_instance(ctx: &ToolContext) -> Option<SandboxInstance> {
    ctx.services()
        .get::<Arc<ShellSession>>()
        .and_then(|s| s.instance())
}

/// A leased output file; dropped without [`Lease::release`] or [`Lease::keep`] (an
/// abandoned call whose command may still be dying) it is removed rather than reused.
#[derive(Debug)]
pub struct Lease {
    session: Arc<ShellSession>,
    dir: Arc<OutputDir>,
    pooled: Option<PoolFile>,
}

impl Lease {
    /// Starts the capped copy of a command's output (the pipe whose read end is `reader`)
    /// into this file.
    pub fn spool(&self, reader: std::os::fd::OwnedFd) -> Result<Spool, ToolError> {
        let pooled = self
            .pooled
            .as_ref()
            .ok_or_else(|| ToolError::fatal("internal error: the output file is gone"))?;
        let file = pooled
            .file
            .try_clone()
            .map_err(|e| ToolError::io(self.path(), e))?;
        Spool::start_from(file, Arc::clone(&self.dir), Caps::OUTPUT, reader)
    }

    /// The file's path.
    pub fn path(&self) -> PathBuf {
        let name = self.pooled.as_ref().map(|p| p.name.as_str()).unwrap_or("");
        self.dir.path().join(name)
    }

    /// Keeps the output: the file leaves the pool; returns a path to it (to a copy, if
    /// its name was taken over meanwhile).
    pub fn keep(mut self) -> Result<PathBuf, ToolError> {
        let Some(p) = self.pooled.take() else {
            return Err(ToolError::fatal("internal error: the output file is gone"));
        };
        self.dir.claim(&p.name, &p.file).map(|(path, _)| path)
    }

    /// Empties the file and returns it to the pool.
    pub fn release(mut self) {
        if let Some(p) = self.pooled.take() {
            if p.file.set_len(0).is_ok()
                && let Ok(mut f) = self.session.free.lock()
            {
                f.push(p);
                return;
            }
            self.dir.remove(&p.name, &p.file);
        }
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(p) = self.pooled.take() {
            self.dir.remove(&p.name, &p.file);
        }
    }
}
