//! The supervisors of one session: one per kind of launch (bubblewrap, Landlock, none) and
//! policy, started on first use and restarted when the policy changes or the instance died.
//! A host keeps one [`Instances`] per session and starts its foreground commands through it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tool_core::ToolError;

use crate::command::{Finished, Io, Pipes, RunSpec};
use crate::launch::Launch;
use crate::process::Running;
#[cfg(target_os = "linux")]
use crate::supervisor::{Key, Supervisor};

/// What a test can see of a session's supervisor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxInstance {
    /// The process id of its bubblewrap process (outside the sandbox), or of the
    /// supervisor itself when it is not in bubblewrap
    pub pid: u32,
    /// How many instances this session has started, this one included
    pub generation: u64,
    /// Where its commands' memory limit comes from: its cgroup (`cgroup v2`, `cgroup v1`)
    /// or `rlimits` (see [`Running::cgroup_missing`](crate::Running::cgroup_missing))
    pub memory_limited_by: &'static str,
}

/// A session's supervisors; ending with it (dropping it ends every instance it started).
#[derive(Debug, Default)]
pub struct Instances {
    #[cfg(target_os = "linux")]
    live: tokio::sync::Mutex<Vec<Arc<Supervisor>>>,
    #[cfg(target_os = "linux")]
    starts: AtomicU64,
    #[cfg(target_os = "linux")]
    current: Mutex<Option<SandboxInstance>>,
    /// The supervisor that ran the last command (its pipes for the next one are ready)
    #[cfg(target_os = "linux")]
    last: Mutex<std::sync::Weak<Supervisor>>,
}

impl Instances {
    /// The pipes for the next command (with a working-directory pipe when `reports_cwd`):
    /// those the supervisor of the last command was sent ahead, with a bash already
    /// started for them, if that is where [`Instances::start`] runs it; otherwise new ones.
    pub fn pipes(&self, reports_cwd: bool) -> Result<Pipes, ToolError> {
        #[cfg(target_os = "linux")]
        if let Some(ready) = self
            .last
            .lock()
            .ok()
            .and_then(|l| l.upgrade())
            .and_then(|s| s.take_ready(reports_cwd))
        {
            return Ok(ready);
        }
        Pipes::new(reports_cwd)
    }

    /// Starts `spec` with `io`: under the session's supervisor for `launch` (started or
    /// restarted as needed) when a supervisor program is registered, else, or when the
    /// program turns out not to answer as a supervisor, as a child of this process.
    pub async fn start(
        &self,
        spec: &RunSpec,
        launch: &Launch,
        io: Io,
    ) -> Result<Running, ToolError> {
        #[cfg(target_os = "linux")]
        if crate::host_program::command_supervisor().is_some() {
            let key = Key::new(launch);
            // An instance that died since the last call is found out when the request
            // cannot be written: start a new one once. A program found not to answer as a
            // supervisor is set aside, and the command runs as without one.
            for attempt in 0..2 {
                let ran = self.supervisor(&key).await.and_then(|s| {
                    if let Ok(mut last) = self.last.lock() {
                        *last = Arc::downgrade(&s);
                    }
                    s.run(spec, &io)
                });
                match ran {
                    Ok(running) => return Ok(Running::Supervised(running)),
                    Err(_) if crate::supervisor::fell_back() => break,
                    Err(e) if attempt == 1 => return Err(e),
                    Err(_) => {}
                }
            }
        }
        crate::process::spawn(spec, launch, io).await
    }

    #[cfg(target_os = "linux")]
    async fn supervisor(&self, key: &Key) -> Result<Arc<Supervisor>, ToolError> {
        let mut instances = self.live.lock().await;
        if let Some(s) = instances.iter().find(|s| s.serves(key)) {
            return Ok(Arc::clone(s));
        }

        // The old instance of this kind and profile (if any) ends once its last call lets
        // go of it.
        instances.retain(|s| !s.key().same_kind(key) && s.is_live());
        let admission = crate::instances::admit().await?;
        let generation = self.starts.fetch_add(1, Ordering::Relaxed) + 1;
        let s = Arc::new(Supervisor::start(key.clone()).await?);
        s.set_prestarting();
        admission.register(&s);
        if let Ok(mut c) = self.current.lock() {
            *c = Some(SandboxInstance {
                pid: s.pid(),
                generation,
                memory_limited_by: s.memory_limited_by(),
            });
        }
        instances.push(Arc::clone(&s));
        Ok(s)
    }

    /// The supervisor started last, if one was started.
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

/// What [`Instances::run`] gives back: how the command ended and what it printed (stdout
/// and stderr interleaved, at most [`CAPTURE_CAP`] bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// How it ended
    pub finished: Finished,
    /// Its output
    pub output: Vec<u8>,
}

impl Captured {
    /// The output as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.output).into_owned()
    }
}

/// The most output [`Instances::run`] keeps.
pub const CAPTURE_CAP: usize = 16 << 20;

impl Instances {
    /// Runs `spec` under `launch` to its end (or `limit`), collecting its output in memory:
    /// the simple way to run one command in a sandbox.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), tool_core::ToolError> {
    /// use sandbox::{Instances, Launch, RunSpec};
    /// let spec = RunSpec {
    ///     command: "echo $((6 * 7))".to_owned(),
    ///     cwd: std::env::temp_dir(),
    ///     env: Vec::new(),
    /// };
    /// let ran = Instances::default().run(&spec, &Launch::Direct, None).await?;
    /// assert_eq!(ran.text(), "42\n");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run(
        &self,
        spec: &RunSpec,
        launch: &Launch,
        limit: Option<std::time::Duration>,
    ) -> Result<Captured, ToolError> {
        use std::io::Read as _;
        let pipes = self.pipes(false)?;
        let read = pipes.output;
        let reader = std::thread::Builder::new()
            .name("agent-tools-sandbox-capture".into())
            .spawn(move || {
                let mut out = Vec::new();
                let mut file = std::fs::File::from(read);
                let mut buf = [0u8; 64 * 1024];
                loop {
                    match file.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => {
                            let room = CAPTURE_CAP.saturating_sub(out.len());
                            out.extend_from_slice(&buf[..n.min(room)]);
                        }
                    }
                }
                out
            })
            .map_err(|e| ToolError::fatal(format!("cannot start the output reader: {e}")))?;
        let mut running = self.start(spec, launch, pipes.io).await?;
        let finished = running
            .wait(limit, &tokio_util::sync::CancellationToken::new())
            .await;
        drop(running);
        let output = tokio::task::spawn_blocking(move || reader.join().unwrap_or_default())
            .await
            .unwrap_or_default();
        Ok(Captured { finished, output })
    }
}

/// Starts `spec` under a supervisor of its own (a background command: the supervisor, and
/// everything the command started, end with it) when a supervisor program is registered,
/// else, or when the program turns out not to answer as a supervisor, as a child of this
/// process.
pub async fn start_alone(spec: &RunSpec, launch: &Launch, io: Io) -> Result<Running, ToolError> {
    #[cfg(target_os = "linux")]
    if crate::host_program::command_supervisor().is_some() {
        match Supervisor::start(Key::new(launch)).await {
            Ok(sup) => {
                let running = Arc::new(sup).run(spec, &io)?;
                return Ok(Running::Supervised(running));
            }
            // A program that does not answer was set aside: run the command as without one.
            Err(_) if crate::supervisor::fell_back() => {}
            Err(e) => return Err(e),
        }
    }
    crate::process::spawn(spec, launch, io).await
}
