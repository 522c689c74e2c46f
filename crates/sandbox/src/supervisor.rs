//! The supervisor that runs a session's commands: the host binary started again (the
//! `inside` module), in bubblewrap, under Landlock, or unsandboxed, reading requests from a
//! socket and running each command in its own process group. A session keeps one per kind
//! of launch and policy, started on first use (a background task gets one of its own).
//!
//! Starting bubblewrap costs several milliseconds (namespaces, mounts); a Bash call of
//! `true` costs about one. The supervisor keeps the sandbox and spawns per command instead.
//! It is also what makes sure nothing a command starts outlives it: inside bubblewrap it
//! holds the sandbox's pid namespace; elsewhere it is a child subreaper, so whatever a
//! command starts stays in its subtree (`setsid` and double forks included).
//!
//! # Protocol
//!
//! Requests are NUL-terminated fields on the supervisor's stdin, a Unix socket:
//! - `ID run DIR N K=V… COMMAND`, sent with two descriptors attached (`SCM_RIGHTS`): the
//!   write end of the command's output pipe and its stdin (`/dev/null`, or the pipe on which
//!   it reports its working directory). The command starts in a new process group, in DIR,
//!   with the variables set, stdout and stderr to the output pipe, as
//!   `bash -c INLINE bash COMMAND`. When the group's leader has exited and the rest of its
//!   group is gone (TERM, the grace period, KILL for what the command left behind) the
//!   supervisor reports `x ID STATUS`, the only reply a command gets. One that cannot start
//!   gets `x ID 126` (its directory cannot be entered) or `x ID 127`, with the reason in
//!   its output.
//! - `ID kill SIGNAL`: signals the process group of command ID (timeouts, cancellation);
//!   nothing when it is gone. The supervisor knows the group, so no reply has to carry it
//!   (one message per command each way).
//! - `SERIAL prep DIR N K=V…`, with two descriptors as for `run`: the next call's pipe ends
//!   and variables, sent ahead (a session's instance sends them with each command). Once
//!   no command runs and nothing any command started is left, the supervisor starts that
//!   call's bash in DIR with the variables, in a new process group, to run the start-up
//!   code and wait for its command (`command::prepared_script`; the rlimits of
//!   `AGENT_TOOLS_LIMITS` the supervisor sets on it with `prlimit`), before it reports the
//!   end of the command before: bash's start, about a millisecond, then overlaps the
//!   host's work on the result and on the next call. Nothing can reach that bash
//!   before its command arrives, since no command runs while it waits, and every request
//!   but `kill` takes it (`go`) or kills it first; the sweep below never meets it.
//! - `ID go DIR N K=V… COMMAND`: a `run` with the ends sent ahead. The waiting bash runs
//!   COMMAND when it fits (same variables and directory, the directory not replaced since,
//!   COMMAND short and ASCII); otherwise it is killed and COMMAND starts as `run` starts it.
//! - `SERIAL drop`: forget what was sent ahead (the call ran elsewhere, or not at all).
//! - `0 join N`, with N descriptors: the first request of an instance that has a cgroup
//!   under v1. The supervisor writes `0` to each (the group's `tasks` files, opened by the
//!   host), which moves it into the group without the grace period moving another process
//!   waits for, and replies `x 0 0` (moved) or `x 0 1`; everything it starts afterwards is
//!   born inside. Otherwise, or when it could not, the host moves it.
//!
//! No path is exchanged: the host never opens a file the sandbox could have replaced, and
//! the sandbox needs no writable file of the host's (see the `spool` module).
//!
//! When no command is left, before the last exit is reported, the supervisor kills every
//! other process of the sandbox's pid namespace, or every descendant of its own: what a
//! command started outside its group does not outlive it.
//!
//! # Process ids and kills
//!
//! The bubblewrap sandbox keeps its own pid namespace (`--unshare-pid`): without it a
//! sandboxed process could reach every process of the user through `/proc/PID/root` and
//! escape the mount namespace. So process-group ids are the sandbox's, and kills go through
//! the supervisor, by command id.
//!
//! # Lifetime
//!
//! An instance ends when its session ends, when it has been idle for the process's idle
//! timeout, or when another session needs its place (see the `limits` module): the host
//! closes the socket, and the supervisor ends every process of its commands and exits; a
//! bubblewrap instance is also killed outright, which takes its namespace with it. Should
//! this process die, the kernel closes the socket just the same (and bubblewrap's
//! `--die-with-parent` fires). bubblewrap is started from one long-lived thread, since the
//! parent-death signal follows the thread that forked, not the process.

use std::collections::HashMap;
use std::ffi::OsString;
use std::io::IoSlice;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use tokio::process::{Child, ChildStderr, Command};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tool_core::ToolError;

use crate::command::{
    ENV, Ending, Finished, Holder, Io, KILL_GRACE, Pipes, RunSpec, Ticket, bash_path, inline_script,
};
use crate::launch::Launch;
use crate::policy::SandboxPolicy;
use crate::resources::{Cgroup, Events, LimitHit, ResourceLimits};

/// How long a supervisor may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the supervisor has to answer `join`; a program that does not know the request
/// skips it, and the host then moves the processes itself, as it does after a refusal.
const JOIN_TIMEOUT: Duration = Duration::from_secs(2);

/// The launch an instance runs its commands under.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LaunchKey {
    Direct,
    Bubblewrap(SandboxPolicy),
    #[cfg(target_os = "linux")]
    Landlock(SandboxPolicy),
}

/// A file's identity: device, inode, and (for directories Landlock grants entry by entry)
/// its modification time.
type Identity = Option<(u64, u64, i64, i64)>;

/// What decides whether an instance can serve a call: the launch and its policy, and the
/// identity of every bound or granted path, since a bind mount keeps showing a file that
/// was replaced outside (git rewrites `.git/config` by renaming), and Landlock holds the
/// inodes and the entries it saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key {
    launch: LaunchKey,
    identity: Vec<Identity>,
}

fn identity(p: &Path, with_time: bool) -> Identity {
    std::fs::metadata(p).ok().map(|m| {
        if with_time {
            (m.dev(), m.ino(), m.mtime(), m.mtime_nsec())
        } else {
            (m.dev(), m.ino(), 0, 0)
        }
    })
}

impl Key {
    /// The key of `launch`.
    pub fn new(launch: &Launch) -> Key {
        let bound = |policy: &SandboxPolicy, with_time: bool| -> Vec<Identity> {
            let mut paths: Vec<PathBuf> = policy
                .writable_roots
                .iter()
                .chain(&policy.protected)
                .cloned()
                .collect();
            if with_time {
                // Landlock grants a root that holds protected paths entry by entry, down to
                // them: a new entry in one of those directories changes the grants.
                for p in &policy.protected {
                    if let Some(root) = policy.writable_roots.iter().find(|r| p.starts_with(r)) {
                        let mut a = p.parent();
                        while let Some(dir) = a {
                            if !dir.starts_with(root) {
                                break;
                            }
                            paths.push(dir.to_path_buf());
                            a = dir.parent();
                        }
                    }
                }
            }
            paths.iter().map(|p| identity(p, with_time)).collect()
        };
        match launch {
            Launch::Direct => Key {
                launch: LaunchKey::Direct,
                identity: Vec::new(),
            },
            Launch::Bubblewrap(policy) => Key {
                launch: LaunchKey::Bubblewrap((**policy).clone()),
                identity: bound(policy, false),
            },
            #[cfg(target_os = "linux")]
            Launch::Landlock(policy) => Key {
                launch: LaunchKey::Landlock((**policy).clone()),
                identity: bound(policy, true),
            },
        }
    }

    /// Whether this and `other` are the same kind of launch for the same profile (their
    /// policies may differ): a session keeps one instance of each.
    pub fn same_kind(&self, other: &Key) -> bool {
        std::mem::discriminant(&self.launch) == std::mem::discriminant(&other.launch)
            && self.policy().map(|p| p.profile) == other.policy().map(|p| p.profile)
    }

    /// Whether the instance runs in bubblewrap (its own pid namespace).
    pub fn is_bubblewrap(&self) -> bool {
        matches!(self.launch, LaunchKey::Bubblewrap(_))
    }

    /// The policy of a sandboxed launch.
    fn policy(&self) -> Option<&SandboxPolicy> {
        match &self.launch {
            LaunchKey::Direct => None,
            LaunchKey::Bubblewrap(p) => Some(p),
            #[cfg(target_os = "linux")]
            LaunchKey::Landlock(p) => Some(p),
        }
    }

    fn to_launch(&self) -> Launch {
        match &self.launch {
            LaunchKey::Direct => Launch::Direct,
            LaunchKey::Bubblewrap(p) => Launch::Bubblewrap(Arc::new(p.clone())),
            #[cfg(target_os = "linux")]
            LaunchKey::Landlock(p) => Launch::Landlock(Arc::new(p.clone())),
        }
    }
}

/// A cgroup for an instance whose process is `pid`, with the supervisor in it before it
/// runs anything: `None` where the machine offers none or no limit needs one. An error says
/// why one it offers could not be made or joined; the instance's commands then run under
/// the rlimits alone.
///
/// Under cgroup v1 the supervisor moves itself (the `join` request): moving another
/// process waits for an RCU grace period in the kernel, about 9 ms on a small VM, which
/// every sandboxed instance's first command waited for. Bubblewrap's own two processes then
/// stay outside (they run no command). Otherwise the host moves `pid` and everything it
/// started so far (bubblewrap's processes and the supervisor).
async fn join_cgroup(
    limits: &ResourceLimits,
    pid: u32,
    direct_child: bool,
    socket: &OwnedFd,
    shared: &ExitStatuses,
) -> Result<Option<Cgroup>, String> {
    let Some(group) = Cgroup::create(limits).map_err(|e| format!("it could not be made: {e}"))?
    else {
        return Ok(None);
    };
    if let Some(files) = group.own_move_files() {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = shared.pending.lock() {
            p.insert(0, tx);
        }
        let fds: Vec<std::os::fd::BorrowedFd<'_>> = files.iter().map(|f| f.as_fd()).collect();
        let req = format!("0\0join\0{}\0", files.len());
        let moved = send_on(socket, req.as_bytes(), &fds).is_ok()
            && matches!(tokio::time::timeout(JOIN_TIMEOUT, rx).await, Ok(Ok(0)));
        if let Ok(mut p) = shared.pending.lock() {
            p.remove(&0);
        }
        // Where the supervisor is the process itself (no bubblewrap around it), the kernel
        // confirms what it said.
        if moved && (!direct_child || group.holds(pid)) {
            return Ok(Some(group));
        }
    }
    let root = i32::try_from(pid).map_err(|_| format!("no process {pid} to move into it"))?;
    // Nothing moved: the group goes (empty). Once the instance's first process is in, the
    // group stays with it (dropping it would kill what it holds).
    group
        .add(pid)
        .map_err(|e| format!("the sandbox's process {pid} could not join it: {e}"))?;
    for p in crate::reaper::descendants(root) {
        if let Ok(p) = u32::try_from(p) {
            let _ = group.add(p);
        }
    }
    Ok(Some(group))
}

/// Whether a failed [`Supervisor::start`] set the supervisor program aside (it does not
/// answer the handshake): the command then runs as it would without a program, one sandbox
/// per command.
pub fn fell_back() -> bool {
    crate::host_program::supervisor_program().is_none()
}

/// Where each command's exit status goes.
type Pending = Mutex<HashMap<u64, oneshot::Sender<i32>>>;

#[derive(Debug, Default)]
struct ExitStatuses {
    pending: Pending,
    dead: AtomicBool,
}

/// Whether an instance runs commands, since when it is idle, and whether it was ended.
#[derive(Debug)]
struct Use {
    in_flight: usize,
    idle_since: Instant,
    retired: bool,
}

/// A running supervisor.
#[derive(Debug)]
pub struct Supervisor {
    key: Key,
    pid: u32,
    child: Mutex<Option<Child>>,
    /// The request socket (`None` once closed)
    socket: Mutex<Option<OwnedFd>>,
    shared: Arc<ExitStatuses>,
    next: AtomicU64,
    usage: Mutex<Use>,
    /// The instance's cgroup (memory and process limits), when the machine offers one
    cgroup: Option<Cgroup>,
    /// Why the instance has no cgroup where the machine offers one
    no_cgroup: Option<String>,
    /// The rlimits each command's start-up code sets (`None` unsandboxed)
    rlimits: Option<String>,
    /// Kept open so a late message of bubblewrap cannot end it with SIGPIPE
    _stderr: Option<ChildStderr>,
    /// Whether each command's successor is sent ahead (a session's instance)
    prestarting: AtomicBool,
    /// The `prep` the supervisor holds (0: none), locked while a request is written
    sent: Mutex<u64>,
    /// The pipes of that `prep`, for the next call
    ready: Mutex<Option<Pipes>>,
}

/// Whether `ticket` is for the `prep` that `sup` holds (`sent`).
fn ticket_is_for(ticket: &Ticket, sup: &Arc<Supervisor>, sent: u64) -> bool {
    ticket.serial == sent && std::ptr::addr_eq(ticket.holder.as_ptr(), Arc::as_ptr(sup))
}

/// Spawns `cmd` from a thread that lives as long as the process: bubblewrap's
/// `--die-with-parent` fires when the *thread* that forked it ends.
fn spawn_from_keeper(mut cmd: Command) -> Result<Child, ToolError> {
    let handle = tokio::runtime::Handle::current();
    crate::launch::on_keeper(move || {
        let _guard = handle.enter();
        cmd.spawn()
    })?
    .map_err(|e| ToolError::fatal(format!("cannot start the bubblewrap sandbox: {e}")))
}

/// Writes one request on the supervisor's socket, with `fds` (two at most) attached to its
/// first byte.
fn send_on(
    socket: &OwnedFd,
    request: &[u8],
    fds: &[std::os::fd::BorrowedFd<'_>],
) -> Result<(), ToolError> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags, sendmsg};
    let lost = || ToolError::fatal("the command supervisor is gone; retry the command");
    let mut sent = 0;
    while sent < request.len() {
        let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(2))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        if sent == 0 && !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
            return Err(ToolError::fatal(
                "internal error: no room for the command's descriptors",
            ));
        }
        match sendmsg(
            socket,
            &[IoSlice::new(&request[sent..])],
            &mut control,
            SendFlags::NOSIGNAL,
        ) {
            Ok(n) => sent += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(_) => return Err(lost()),
        }
    }
    Ok(())
}

/// A `run`, `go` or `prep` request (the last without a command).
fn request(
    id: u64,
    op: &str,
    dir: &Path,
    vars: &[(String, String)],
    command: Option<&str>,
) -> Result<Vec<u8>, ToolError> {
    let mut req = Vec::with_capacity(command.map_or(0, str::len) + 256);
    field(&mut req, id.to_string().as_bytes())?;
    field(&mut req, op.as_bytes())?;
    field(&mut req, dir.as_os_str().as_bytes())?;
    field(&mut req, vars.len().to_string().as_bytes())?;
    for (k, v) in vars {
        let mut kv = k.as_bytes().to_vec();
        kv.push(b'=');
        kv.extend_from_slice(v.as_bytes());
        field(&mut req, &kv)?;
    }
    if let Some(command) = command {
        field(&mut req, command.as_bytes())?;
    }
    Ok(req)
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
    /// Starts the supervisor for `key` and waits until it is ready.
    ///
    /// When it does not start, the registered program is started again unsandboxed: a
    /// program that does not answer that either ignores [`SUPERVISOR_ARG`] (its `main` does
    /// not call `sandbox_supervisor_entry` first), so it is set aside with a warning (see
    /// `host_program::unanswered`) and the caller runs the command one sandbox per command
    /// (see [`fell_back`]). One that answers unsandboxed leaves the failure to the sandbox,
    /// and the error stands.
    ///
    /// [`SUPERVISOR_ARG`]: crate::host_program::SUPERVISOR_ARG
    pub async fn start(key: Key) -> Result<Supervisor, ToolError> {
        let program = crate::host_program::supervisor_program().ok_or_else(|| {
            ToolError::fatal("no supervisor program is registered to run shell commands")
        })?;
        let direct = key.launch == LaunchKey::Direct;
        let bubblewrap = key.is_bubblewrap();
        let mut started = Supervisor::launch(key.clone(), program).await;
        // Bubblewrap's flags kept from an earlier process's probe that no longer work: the
        // probe runs again, and with a different answer the launch is tried once more.
        if started.is_err() && bubblewrap && crate::launch::bwrap_failed() {
            started = Supervisor::launch(key, program).await;
        }
        match started {
            Ok(s) => Ok(s),
            Err(e) => {
                let direct_key = Key {
                    launch: LaunchKey::Direct,
                    identity: Vec::new(),
                };
                if direct || Supervisor::launch(direct_key, program).await.is_err() {
                    crate::host_program::unanswered(program);
                }
                Err(e)
            }
        }
    }

    /// Starts `program` as the supervisor for `key` and waits for its handshake.
    async fn launch(key: Key, program: &Path) -> Result<Supervisor, ToolError> {
        use rustix::net::{AddressFamily, SocketFlags, SocketType, socketpair};
        let launch = key.to_launch();
        let mut argv: Vec<OsString> = launch.prefix(Path::new("/"), &[]);
        argv.push(program.as_os_str().to_owned());
        argv.push(crate::host_program::SUPERVISOR_ARG.into());
        argv.push(bash_path().into_os_string());
        argv.push(inline_script(false, key.policy().is_some()).into());
        argv.push(KILL_GRACE.as_millis().to_string().into());
        let (ours, theirs) = socketpair(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| ToolError::fatal(format!("cannot create the supervisor's socket: {e}")))?;
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .current_dir("/")
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env_remove("BASH_ENV")
            .env_remove("AGENT_TOOLS_CWD_STDIN")
            .process_group(0)
            .kill_on_drop(false);
        launch.set_environment(&mut cmd);
        for (k, v) in ENV {
            cmd.env(k, v);
        }
        let mut child = match &launch {
            Launch::Bubblewrap(_) => spawn_from_keeper(cmd)?,
            Launch::Direct => cmd
                .spawn()
                .map_err(|e| ToolError::fatal(format!("cannot start the supervisor: {e}")))?,
            #[cfg(target_os = "linux")]
            Launch::Landlock(_) => launch.spawn(cmd, &[]).await?,
        };
        let pid = child.id().unwrap_or(0);
        let stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let shared = Arc::new(ExitStatuses::default());
        let (ready_tx, ready_rx) = oneshot::channel();
        if let Some(stdout) = stdout {
            // A task, not a thread: the reply wakes the waiting call on the same worker.
            let shared = Arc::clone(&shared);
            tokio::spawn(async move { read_replies(stdout, &shared, ready_tx).await });
        }
        let ready = tokio::time::timeout(START_TIMEOUT, ready_rx).await;
        // The supervisor joins the instance's cgroup before it runs anything (see
        // `join_cgroup`): it starts commands only on request, so everything they start is
        // inside.
        let direct_child = !matches!(launch, Launch::Bubblewrap(_));
        let (cgroup, no_cgroup) = match (&ready, launch.policy()) {
            (Ok(Ok(())), Some(policy)) => {
                match join_cgroup(&policy.limits, pid, direct_child, &ours, &shared).await {
                    Ok(group) => (group, None),
                    Err(why) => (None, Some(why)),
                }
            }
            _ => (None, None),
        };
        if !matches!(ready, Ok(Ok(()))) {
            drop(ours);
            let _ = child.start_kill();
            let _ = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
            let mut message = String::new();
            if let Some(e) = stderr.as_mut() {
                use tokio::io::AsyncReadExt as _;
                let mut buf = Vec::new();
                let _ = tokio::time::timeout(
                    Duration::from_secs(1),
                    e.take(64 * 1024).read_to_end(&mut buf),
                )
                .await;
                message = String::from_utf8_lossy(&buf).into_owned();
            }
            let what = if key.is_bubblewrap() {
                "the bubblewrap sandbox"
            } else {
                "the command supervisor"
            };
            return Err(ToolError::fatal(format!(
                "The command was not run: {what} did not start{}",
                if message.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", message.trim())
                }
            )));
        }
        let rlimits = key.policy().map(|p| p.limits.rlimits(cgroup.as_ref()));
        Ok(Supervisor {
            key,
            pid,
            child: Mutex::new(Some(child)),
            socket: Mutex::new(Some(ours)),
            shared,
            next: AtomicU64::new(1),
            usage: Mutex::new(Use {
                in_flight: 0,
                idle_since: Instant::now(),
                retired: false,
            }),
            rlimits,
            cgroup,
            no_cgroup,
            _stderr: stderr,
            prestarting: AtomicBool::new(false),
            sent: Mutex::new(0),
            ready: Mutex::new(None),
        })
    }

    fn usage(&self) -> MutexGuard<'_, Use> {
        self.usage.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The instance's key.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// Whether the instance is alive and not ended.
    pub fn is_live(&self) -> bool {
        if self.shared.dead.load(Ordering::Relaxed) || self.usage().retired {
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

    /// Whether this instance can run a call whose key is `key`.
    pub fn serves(&self, key: &Key) -> bool {
        self.key == *key && self.is_live()
    }

    /// Since when the instance runs no command, if it runs none.
    pub fn idle_since(&self) -> Option<Instant> {
        let u = self.usage();
        (u.in_flight == 0 && !u.retired).then_some(u.idle_since)
    }

    /// Ends the instance if it has run no command for `idle_for`; returns whether it did.
    pub fn retire_if_idle(&self, idle_for: Duration) -> bool {
        {
            let mut u = self.usage();
            if u.retired || u.in_flight > 0 || u.idle_since.elapsed() < idle_for {
                return false;
            }
            u.retired = true;
        }
        self.shutdown();
        true
    }

    /// Waits (at most `limit`) until the instance's process has exited, and collects it.
    pub async fn wait_exited(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            let exited = self
                .child
                .lock()
                .map(|mut c| c.as_mut().is_none_or(|c| !matches!(c.try_wait(), Ok(None))))
                .unwrap_or(true);
            if exited || Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The supervisor's process id (bubblewrap's, for a sandbox).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Where the memory limit of the instance's commands comes from: its cgroup (`cgroup
    /// v2`, `cgroup v1`) or `rlimits`.
    pub fn memory_limited_by(&self) -> &'static str {
        match &self.cgroup {
            Some(c) if c.limits_memory() => crate::resources::mechanism(),
            _ => "rlimits",
        }
    }

    /// Why the instance runs without the cgroup the machine offers, if it does: its
    /// commands then get the rlimits alone (memory per process, by address space).
    pub fn cgroup_missing(&self) -> Option<&str> {
        self.no_cgroup.as_deref()
    }

    /// Writes a `run` or `prep` request with the command's two ends attached: its output,
    /// and as its stdin the working-directory pipe, or `/dev/null`.
    fn send_with_ends(&self, request: &[u8], io: &Io) -> Result<(), ToolError> {
        match &io.cwd {
            Some(cwd) => self.send(request, &[io.output.as_fd(), cwd.as_fd()]),
            None => {
                let null = std::fs::File::open("/dev/null")
                    .map_err(|e| ToolError::io(Path::new("/dev/null"), e))?;
                self.send(request, &[io.output.as_fd(), null.as_fd()])
            }
        }
    }

    /// Writes one request, with `fds` attached to its first byte.
    fn send(&self, request: &[u8], fds: &[std::os::fd::BorrowedFd<'_>]) -> Result<(), ToolError> {
        let lost = || ToolError::fatal("the command supervisor is gone; retry the command");
        let socket = self.socket.lock().map_err(|_| lost())?;
        let socket = socket.as_ref().ok_or_else(lost)?;
        send_on(socket, request, fds).inspect_err(|_| {
            self.shared.dead.store(true, Ordering::Relaxed);
        })
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

    /// Counts a command in, unless the instance was ended.
    fn enter(&self) -> Result<(), ToolError> {
        let mut u = self.usage();
        if u.retired || self.shared.dead.load(Ordering::Relaxed) {
            return Err(ToolError::fatal(
                "the command supervisor has ended; retry the command",
            ));
        }
        u.in_flight += 1;
        Ok(())
    }

    fn leave(&self) {
        let mut u = self.usage();
        u.in_flight = u.in_flight.saturating_sub(1);
        if u.in_flight == 0 {
            u.idle_since = Instant::now();
        }
    }

    /// Starts `spec` with `io`'s descriptors (the caller closes its copies afterwards): with
    /// only its command when they were sent ahead (`io` came from [`Supervisor::take_ready`]).
    /// On a prestarting instance the next call's pipes are sent ahead then.
    pub fn run(self: &Arc<Self>, spec: &RunSpec, io: &Io) -> Result<Supervised, ToolError> {
        self.enter()?;
        let (id, rx) = self.register();
        // The counters before the request goes: read after it, a fork bomb could reach the
        // limit first (a loaded machine can hold this thread back for milliseconds), and
        // the hit would never show as a change.
        let events = self.cgroup.as_ref().map(Cgroup::events);
        let vars = crate::command::command_vars(spec, io.cwd.is_some(), self.rlimits.clone());
        let mut replaced = None;
        let result = (|| {
            let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
            let go = io
                .ticket
                .as_ref()
                .is_some_and(|t| ticket_is_for(t, self, *sent));
            let op = if go { "go" } else { "run" };
            let req = request(id, op, &spec.cwd, &vars, Some(&spec.command))?;
            if go {
                self.send(&req, &[])?;
            } else {
                self.send_with_ends(&req, io)?;
            }
            // Either way the supervisor no longer holds what was sent ahead.
            *sent = 0;
            if self.prestarting.load(Ordering::Relaxed) {
                replaced = self.send_ahead(&mut sent, &spec.cwd, &vars, io.cwd.is_some());
            }
            Ok(())
        })();
        drop(replaced);
        if let Err(e) = result {
            self.unregister(id);
            self.leave();
            return Err(e);
        }
        Ok(Supervised {
            sup: Arc::clone(self),
            id,
            rx,
            finished: false,
            events,
        })
    }

    /// Sends the next call's pipe ends ahead (`prep`), with the variables and directory of
    /// this one: the supervisor starts its bash once nothing runs. Returns the pipes this
    /// replaces, for the caller to drop once `sent` is unlocked.
    fn send_ahead(
        self: &Arc<Self>,
        sent: &mut u64,
        dir: &Path,
        vars: &[(String, String)],
        reports_cwd: bool,
    ) -> Option<Pipes> {
        let mut pipes = Pipes::new(reports_cwd).ok()?;
        let serial = self.next.fetch_add(1, Ordering::Relaxed);
        let req = request(serial, "prep", dir, vars, None).ok()?;
        self.send_with_ends(&req, &pipes.io).ok()?;
        *sent = serial;
        let holder: Weak<Supervisor> = Arc::downgrade(self);
        let holder: Weak<dyn Holder> = holder;
        pipes.io.ticket = Some(Ticket { holder, serial });
        self.ready
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(pipes)
    }

    /// Makes each command send the next call's pipes ahead (a session's instance; a
    /// background task's runs one command).
    pub fn set_prestarting(&self) {
        self.prestarting.store(true, Ordering::Relaxed);
    }

    /// The pipes sent ahead for the next call, if they are of its kind (`reports_cwd`).
    pub fn take_ready(&self, reports_cwd: bool) -> Option<Pipes> {
        let mut ready = self.ready.lock().unwrap_or_else(|p| p.into_inner());
        if ready.as_ref()?.cwd.is_some() != reports_cwd {
            return None;
        }
        ready.take()
    }

    /// Signals the process group of command `id` (nothing when it is gone already).
    fn signal(&self, id: u64, signal: &str) {
        let mut req = Vec::new();
        let _ = field(&mut req, id.to_string().as_bytes());
        let _ = field(&mut req, b"kill");
        let _ = field(&mut req, signal.as_bytes());
        let _ = self.send(&req, &[]);
    }

    /// Closes the request socket: the supervisor ends every process of its commands and
    /// exits. A bubblewrap instance is killed as well, which takes its namespace with it.
    fn shutdown(&self) {
        self.shared.dead.store(true, Ordering::Relaxed);
        if let Ok(mut s) = self.socket.lock() {
            s.take();
        }
        if self.key.is_bubblewrap()
            && let Ok(mut c) = self.child.lock()
            && let Some(child) = c.as_mut()
        {
            let _ = child.start_kill();
        }
    }

    /// Ends the instance at once (the supervisor does not answer): bubblewrap with its
    /// namespace; an unsandboxed or Landlock supervisor after every process below it.
    fn kill(&self) {
        self.shared.dead.store(true, Ordering::Relaxed);
        if let Ok(mut s) = self.socket.lock() {
            s.take();
        }
        if !self.key.is_bubblewrap()
            && let Ok(pid) = i32::try_from(self.pid)
        {
            // As long as it lives, orphans go to it: its subtree is everything.
            crate::reaper::kill_descendants(pid, false);
        }
        if let Ok(mut c) = self.child.lock()
            && let Some(child) = c.as_mut()
        {
            let _ = child.start_kill();
        }
    }
}

/// Tells the supervisor to forget the pipes sent ahead as `serial`, if it still holds them
/// (a call took them and ran elsewhere, or not at all).
impl Holder for Supervisor {
    fn discard(&self, serial: u64) {
        let mut sent = self.sent.lock().unwrap_or_else(|p| p.into_inner());
        if *sent == serial {
            let mut req = Vec::new();
            let _ = field(&mut req, serial.to_string().as_bytes());
            let _ = field(&mut req, b"drop");
            let _ = self.send(&req, &[]);
            *sent = 0;
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// Reads the supervisor's replies and hands each to the call it belongs to; at end of input
/// (the supervisor died) every waiting call learns it through its closed channel.
async fn read_replies(
    stdout: tokio::process::ChildStdout,
    shared: &ExitStatuses,
    ready: oneshot::Sender<()>,
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

/// How often a running command's cgroup is looked at for its process limit.
const LIMIT_EVERY: Duration = Duration::from_millis(200);

/// A command running under a supervisor.
#[derive(Debug)]
pub struct Supervised {
    sup: Arc<Supervisor>,
    id: u64,
    rx: oneshot::Receiver<i32>,
    finished: bool,
    /// The cgroup's counters when it started
    events: Option<Events>,
}

impl Supervised {
    /// The instance the command runs in.
    pub(crate) fn instance(&self) -> &Supervisor {
        &self.sup
    }

    /// Waits for the command's end (its whole group gone), for `limit` or for `cancel`
    /// (then TERM through the supervisor, the grace period, KILL). A command whose sandbox
    /// reaches its process limit is ended the same way (a fork bomb would otherwise wait for
    /// the time limit), and the limit is named in the result.
    pub async fn wait(&mut self, limit: Option<Duration>, cancel: &CancellationToken) -> Finished {
        let sleep = tool_core::sleep_or_never(limit);
        tokio::pin!(sleep);
        let watch_pids = self.sup.cgroup.as_ref().is_some_and(|c| c.limits_pids());
        // The first look is one period in: the counters were just read at the start.
        let mut ticker =
            tokio::time::interval_at(tokio::time::Instant::now() + LIMIT_EVERY, LIMIT_EVERY);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut hit = None;
        let ending = loop {
            tokio::select! {
                reply = &mut self.rx => {
                    self.done();
                    let finished = match reply {
                        Ok(code) => Finished::new(Ending::Exited, code),
                        Err(_) => Finished::new(Ending::SandboxLost, 128 + 9),
                    };
                    return self.with_limit(finished);
                }
                () = &mut sleep => break Ending::TimedOut,
                () = cancel.cancelled() => break Ending::Cancelled,
                _ = ticker.tick(), if watch_pids => {
                    if let (Some(c), Some(before)) = (&self.sup.cgroup, self.events)
                        && let Some(h @ LimitHit::Processes(_)) = c.hit_since(before)
                    {
                        hit = Some(h);
                        break Ending::Exited;
                    }
                }
            }
        };
        let code = self.stop().await;
        let mut finished = self.with_limit(Finished::new(ending, code));
        finished.limit = hit.or(finished.limit);
        finished
    }

    /// Notes the limit the command ran into, from its instance's cgroup and its status.
    fn with_limit(&self, mut finished: Finished) -> Finished {
        if let (Some(c), Some(before)) = (&self.sup.cgroup, self.events) {
            finished.limit = c.hit_since(before);
        }
        finished.with_cpu_limit(self.sup.key.policy().map(|p| &p.limits))
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
            // The supervisor did not answer: end the instance and all it runs.
            self.sup.kill();
        }
        self.done();
        exit.unwrap_or(128 + 9)
    }

    fn done(&mut self) {
        if !self.finished {
            self.finished = true;
            self.sup.unregister(self.id);
            self.sup.leave();
        }
    }
}

impl Drop for Supervised {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // The call was abandoned: kill the group; the supervisor sweeps once nothing else
        // runs.
        self.sup.signal(self.id, "KILL");
        self.done();
    }
}
