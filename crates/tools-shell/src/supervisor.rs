//! The persistent bubblewrap sandbox of a session: one `bwrap` per session and policy,
//! started on first use, running the supervisor (the `inside` module, run by the host binary
//! itself) that reads commands from a pipe and runs each in its own process group inside
//! the sandbox.
//!
//! Starting bubblewrap costs several milliseconds (namespaces, mounts); a Bash call of
//! `true` costs about one. The supervisor keeps the sandbox and spawns per command instead.
//!
//! # Protocol
//!
//! Requests are NUL-terminated fields on the supervisor's stdin:
//! - `ID run DIR OUTPUT CWD_FILE N K=V… COMMAND`: the command starts in a new process group,
//!   in DIR, with the variables set, stdin from `/dev/null` and stdout and stderr to OUTPUT
//!   (OUTPUT and CWD_FILE are relative to the slot directory unless absolute), as
//!   `bash -c INLINE bash COMMAND`. When the group's leader has exited and the rest of its
//!   group is gone (TERM, the grace period, KILL for what the command left behind) the
//!   supervisor reports `x ID STATUS`, the only reply a command gets. One that cannot start
//!   gets `x ID 126` (its directory cannot be entered) or `x ID 127`, with the reason in
//!   its output.
//! - `ID kill SIGNAL`: signals the process group of command ID (timeouts, cancellation);
//!   nothing when it is gone. The supervisor knows the group, so no reply has to carry it
//!   (one message per command each way).
//!
//! When no command is left, before the last exit is reported, the supervisor kills every
//! other process of the sandbox but its init: what a command started outside its group
//! (`setsid`, a double fork) does not outlive it, as when each command had a sandbox of its
//! own.
//!
//! # Process ids and kills
//!
//! The sandbox keeps its own pid namespace (`--unshare-pid`): without it a sandboxed process
//! could reach every process of the user through `/proc/PID/root` and escape the mount
//! namespace. So process-group ids are the sandbox's, and kills go through the supervisor,
//! by command id.
//! Should the supervisor die, bubblewrap's init ends and the kernel kills every process of
//! the namespace; a call that was waiting learns it from the closed pipe, and the session
//! starts a new instance for the next call.
//!
//! # Lifetime
//!
//! Dropping the [`Supervisor`] closes its stdin (the supervisor exits at end of input) and
//! kills bubblewrap, whose init takes the namespace with it; `--die-with-parent` does the
//! same should this process die. bubblewrap is started from one long-lived thread, since
//! the parent-death signal follows the thread that forked, not the process.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tool_core::ToolError;

use crate::process::{ENV, Ending, Finished, KILL_GRACE, RunSpec, bash_path, inline_script};
use crate::sandbox::{Launch, SandboxPolicy};

/// How long bubblewrap and the supervisor may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(10);

/// What decides whether an instance can serve a call: the policy, the slot directory, and
/// the identity (device, inode) of every bound path, since a bind mount keeps showing a
/// file or directory that was replaced outside (git rewrites `.git/config` by renaming).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    policy: SandboxPolicy,
    live: PathBuf,
    identity: Vec<Option<(u64, u64)>>,
}

impl Key {
    /// The key of `policy` with the slots in `live`.
    pub fn new(policy: &SandboxPolicy, live: &Path) -> Key {
        let identity = policy
            .writable_roots
            .iter()
            .chain(&policy.protected)
            .map(PathBuf::as_path)
            .chain([live])
            .map(|p| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino())))
            .collect();
        Key {
            policy: policy.clone(),
            live: live.to_path_buf(),
            identity,
        }
    }
}

/// Where each command's exit status goes.
type Pending = Mutex<HashMap<u64, oneshot::Sender<i32>>>;

#[derive(Debug, Default)]
struct Shared {
    pending: Pending,
    dead: AtomicBool,
}

/// A running persistent sandbox.
#[derive(Debug)]
pub struct Supervisor {
    key: Key,
    pid: u32,
    child: Mutex<Option<Child>>,
    /// The request pipe (`None` once closed)
    stdin: Mutex<Option<ChildStdin>>,
    shared: Arc<Shared>,
    next: AtomicU64,
    /// Kept open so a late message of bubblewrap cannot end it with SIGPIPE
    _stderr: Option<ChildStderr>,
}

/// Spawns `cmd` from a thread that lives as long as the process: bubblewrap's
/// `--die-with-parent` fires when the *thread* that forked it ends.
fn spawn_from_keeper(cmd: Command) -> Result<Child, ToolError> {
    type Job = (Command, mpsc::Sender<std::io::Result<Child>>);
    static KEEPER: OnceLock<Option<Mutex<mpsc::Sender<Job>>>> = OnceLock::new();
    let keeper = KEEPER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("agent-tools-sandbox-keeper".into())
            .spawn(move || {
                for (mut cmd, reply) in rx {
                    let _ = reply.send(cmd.spawn());
                }
            })
            .ok()
            .map(|_| Mutex::new(tx))
    });
    let fail = |e: &dyn std::fmt::Display| {
        ToolError::fatal(format!("cannot start the bubblewrap sandbox: {e}"))
    };
    let keeper = keeper
        .as_ref()
        .ok_or_else(|| fail(&"no thread to start it from"))?;
    let (tx, rx) = mpsc::channel();
    keeper
        .lock()
        .map_err(|_| fail(&"the starter thread is gone"))?
        .send((cmd, tx))
        .map_err(|_| fail(&"the starter thread is gone"))?;
    rx.recv()
        .map_err(|_| fail(&"the starter thread is gone"))?
        .map_err(|e| fail(&e))
}

fn field(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), ToolError> {
    if bytes.contains(&0) {
        return Err(ToolError::respond(
            "The command contains a NUL byte, which a shell command cannot hold; remove it.",
        ));
    }
    out.extend_from_slice(bytes);
    out.push(0);
    Ok(())
}

impl Supervisor {
    /// Starts bubblewrap with `key`'s policy and the supervisor in it, and waits until the
    /// supervisor is ready.
    pub async fn start(key: Key) -> Result<Supervisor, ToolError> {
        let launch = Launch::Bubblewrap(Arc::new(key.policy.clone()));
        let mut argv: Vec<OsString> =
            launch.prefix(Path::new("/"), std::slice::from_ref(&key.live));
        let program = crate::inside::supervisor_program().ok_or_else(|| {
            ToolError::fatal("no supervisor program is registered for the bubblewrap sandbox")
        })?;
        argv.push(program.as_os_str().to_owned());
        argv.push(crate::inside::SUPERVISOR_ARG.into());
        argv.push(bash_path().into_os_string());
        argv.push(inline_script().into());
        argv.push(KILL_GRACE.as_millis().to_string().into());
        argv.push(key.live.as_os_str().to_owned());
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_remove("BASH_ENV")
            .env_remove("AGENT_TOOLS_CWD_FILE")
            .process_group(0);
        for (k, v) in ENV {
            cmd.env(k, v);
        }
        let mut child = spawn_from_keeper(cmd)?;
        let pid = child.id();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let shared = Arc::new(Shared::default());
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        if let Some(stdout) = stdout {
            // A task, not a thread: the reply wakes the waiting call on the same worker.
            let stdout = tokio::process::ChildStdout::from_std(stdout).map_err(|e| {
                ToolError::fatal(format!("cannot read the sandbox's supervisor: {e}"))
            })?;
            let shared = Arc::clone(&shared);
            tokio::spawn(async move { read_replies(stdout, &shared, ready_tx).await });
        }
        let ready = tokio::time::timeout(START_TIMEOUT, ready_rx).await;
        if !matches!(ready, Ok(Ok(()))) {
            let _ = child.kill();
            let _ = child.wait();
            let mut message = String::new();
            if let Some(e) = stderr.as_mut() {
                let _ = std::io::Read::read_to_string(e, &mut message);
            }
            return Err(ToolError::fatal(format!(
                "The command was not run: the bubblewrap sandbox did not start{}",
                if message.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", message.trim())
                }
            )));
        }
        Ok(Supervisor {
            key,
            pid,
            child: Mutex::new(Some(child)),
            stdin: Mutex::new(stdin),
            shared,
            next: AtomicU64::new(1),
            _stderr: stderr,
        })
    }

    /// Whether this instance can run a call whose key is `key`.
    pub fn serves(&self, key: &Key) -> bool {
        if self.shared.dead.load(Ordering::Relaxed) || self.key != *key {
            return false;
        }
        let exited = self
            .child
            .lock()
            .map(|mut c| c.as_mut().is_none_or(|c| !matches!(c.try_wait(), Ok(None))))
            .unwrap_or(true);
        if exited {
            self.shared.dead.store(true, Ordering::Relaxed);
        }
        !exited
    }

    /// bubblewrap's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Writes one request.
    fn send(&self, request: &[u8]) -> Result<(), ToolError> {
        let lost = || ToolError::fatal("the sandbox's supervisor is gone; retry the command");
        let mut stdin = self.stdin.lock().map_err(|_| lost())?;
        let stdin = stdin.as_mut().ok_or_else(lost)?;
        if stdin.write_all(request).is_err() {
            self.shared.dead.store(true, Ordering::Relaxed);
            return Err(lost());
        }
        Ok(())
    }

    fn register(&self) -> (u64, oneshot::Receiver<i32>) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.shared.pending.lock() {
            p.insert(id, tx);
        }
        (id, rx)
    }

    fn unregister(&self, id: u64) {
        if let Ok(mut p) = self.shared.pending.lock() {
            p.remove(&id);
        }
    }

    /// Starts `spec` in the sandbox.
    pub fn run(self: &Arc<Self>, spec: &RunSpec) -> Result<Supervised, ToolError> {
        let (id, rx) = self.register();
        let mut req = Vec::with_capacity(spec.command.len() + 256);
        let result = (|| {
            field(&mut req, id.to_string().as_bytes())?;
            field(&mut req, b"run")?;
            field(&mut req, spec.cwd.as_os_str().as_bytes())?;
            // Files in the slot directory go by their name (shorter requests).
            let short = |p: &Path| -> Vec<u8> {
                let rel = p.strip_prefix(&self.key.live).unwrap_or(p);
                rel.as_os_str().as_bytes().to_vec()
            };
            field(&mut req, &short(&spec.output))?;
            let cwd_file = spec.cwd_file.as_deref().map(short).unwrap_or_default();
            field(&mut req, &cwd_file)?;
            field(&mut req, spec.env.len().to_string().as_bytes())?;
            for (k, v) in &spec.env {
                field(&mut req, format!("{k}={v}").as_bytes())?;
            }
            field(&mut req, spec.command.as_bytes())?;
            self.send(&req)
        })();
        if let Err(e) = result {
            self.unregister(id);
            return Err(e);
        }
        Ok(Supervised {
            sup: Arc::clone(self),
            id,
            rx,
            finished: false,
        })
    }

    /// Signals the process group of command `id` (nothing when it is gone already).
    fn signal(&self, id: u64, signal: &str) {
        let mut req = Vec::new();
        let _ = field(&mut req, id.to_string().as_bytes());
        let _ = field(&mut req, b"kill");
        let _ = field(&mut req, signal.as_bytes());
        let _ = self.send(&req);
    }

    /// Ends the instance at once (the supervisor does not answer).
    fn kill(&self) {
        self.shared.dead.store(true, Ordering::Relaxed);
        if let Ok(mut c) = self.child.lock()
            && let Some(child) = c.as_mut()
        {
            let _ = child.kill();
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        if let Ok(mut stdin) = self.stdin.lock() {
            *stdin = None;
        }
        if let Ok(mut c) = self.child.lock()
            && let Some(mut child) = c.take()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Reads the supervisor's replies and hands each to the call it belongs to; at end of input
/// (the supervisor died) every waiting call learns it through its closed channel.
async fn read_replies(
    stdout: tokio::process::ChildStdout,
    shared: &Shared,
    ready: tokio::sync::oneshot::Sender<()>,
) {
    use tokio::io::AsyncBufReadExt as _;
    let mut ready = Some(ready);
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if line == "ready" {
            if let Some(r) = ready.take() {
                let _ = r.send(());
            }
            continue;
        }
        let mut parts = line.split(' ');
        let (Some("x"), Some(id), Some(code)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let (Ok(id), Ok(code)) = (id.parse::<u64>(), code.parse::<i32>()) else {
            continue;
        };
        let tx = shared.pending.lock().ok().and_then(|mut p| p.remove(&id));
        if let Some(tx) = tx {
            let _ = tx.send(code);
        }
    }
    shared.dead.store(true, Ordering::Relaxed);
    if let Ok(mut p) = shared.pending.lock() {
        p.clear();
    }
}

/// A command running in the persistent sandbox.
#[derive(Debug)]
pub struct Supervised {
    sup: Arc<Supervisor>,
    id: u64,
    rx: oneshot::Receiver<i32>,
    finished: bool,
}

impl Supervised {
    /// Waits for the command's end (its whole group gone), for `limit` or for `cancel`
    /// (then TERM through the supervisor, the grace period, KILL).
    pub async fn wait(&mut self, limit: Option<Duration>, cancel: &CancellationToken) -> Finished {
        let sleep = async {
            match limit {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending::<()>().await,
            }
        };
        let ending = tokio::select! {
            reply = &mut self.rx => {
                self.done();
                return match reply {
                    Ok(code) => Finished { ending: Ending::Exited, code },
                    Err(_) => Finished { ending: Ending::SandboxLost, code: 128 + 9 },
                };
            }
            () = sleep => Ending::TimedOut,
            () = cancel.cancelled() => Ending::Cancelled,
        };
        let code = self.stop().await;
        Finished { ending, code }
    }

    /// TERM to the group, the grace period, KILL; returns the leader's exit code.
    async fn stop(&mut self) -> i32 {
        let mut exit = None;
        for (signal, limit) in [("TERM", KILL_GRACE), ("KILL", Duration::from_secs(5))] {
            self.sup.signal(self.id, signal);
            match tokio::time::timeout(limit, &mut self.rx).await {
                Ok(Ok(code)) => {
                    exit = Some(code);
                    break;
                }
                // The supervisor is gone.
                Ok(Err(_)) => break,
                Err(_) => {}
            }
        }
        if exit.is_none() {
            // The supervisor did not answer: end the instance, and the namespace with it.
            self.sup.kill();
        }
        self.done();
        exit.unwrap_or(128 + 9)
    }

    fn done(&mut self) {
        self.finished = true;
        self.sup.unregister(self.id);
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // The call was abandoned: kill the group; the supervisor sweeps once nothing else
        // runs.
        self.sup.unregister(self.id);
        self.sup.signal(self.id, "KILL");
    }
}
