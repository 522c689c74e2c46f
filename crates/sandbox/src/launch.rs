//! The sandbox every shell command runs in (Linux): a policy (the read-only jail, or the
//! settings' read-only, workspace-write or full access, each with network on or off; see the
//! `policy` module) enforced with bubblewrap when it is installed and with Landlock plus
//! seccomp otherwise. When the requested sandbox cannot be applied the command is refused,
//! unless the settings allow a degraded mode (never for the jail).
//!
//! Under bubblewrap every command runs in user, pid, IPC and (network off) network
//! namespaces of its own, with every capability dropped (also when the host user is root),
//! further user namespaces disabled, and the `filter` module's seccomp filter applied
//! inside: by the host binary run as a small helper ([`EXEC_ARG`]) when a supervisor program
//! is registered, else by bubblewrap itself from a program handed over on stdin. The
//! protected paths (`protect` module) are bound read-only, missing ones over placeholders
//! (`placeholder` module), and the paths of the session's Read deny rules and the user's
//! credential stores are hidden (`mask` module). The Landlock mechanism is in the
//! `landlock` module.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use tokio::process::{Child, Command};
use tool_core::ToolError;

#[cfg(target_os = "linux")]
use crate::filter::Sockets;
use crate::host_program::EXEC_ARG;
use crate::mask::Mask;
use crate::policy::{Mechanism, Profile, SandboxMode, SandboxPolicy, SandboxSettings};
use crate::protect::Bind;

/// How a command is started.
#[derive(Debug, Clone)]
pub enum Launch {
    /// Directly, unsandboxed
    Direct,
    /// Under bubblewrap with this policy
    Bubblewrap(Arc<SandboxPolicy>),
    /// Under Landlock and seccomp with this policy
    #[cfg(target_os = "linux")]
    Landlock(Arc<SandboxPolicy>),
}

/// A prepared launch with what to tell the model about it.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// How to start commands
    pub launch: Launch,
    /// `bubblewrap (workspace-write, network off)`, `none`, ...
    pub description: String,
    /// A notice for the model (a degraded sandbox), if any
    pub notice: Option<String>,
}

/// What this machine's bubblewrap can do.
#[derive(Debug, Clone)]
struct Bwrap {
    path: PathBuf,
    /// `--unshare-user` works (no user namespaces: a setuid bubblewrap, or root)
    userns: bool,
    /// `--disable-userns` works (bubblewrap 0.8 and later)
    disable_userns: bool,
    /// Whether the flags came from the probe's file (`bwrap_cache`), not a probe of this
    /// process
    cached: bool,
}

/// Finds bubblewrap and checks once that it can start a sandbox here.
pub fn bubblewrap() -> Option<&'static Path> {
    bwrap().map(|b| b.path.as_path())
}

/// Whether the bubblewrap found by [`bubblewrap`] runs its sandboxes in a user namespace
/// (`None` without a working bubblewrap).
pub(crate) fn bubblewrap_user_namespaces() -> Option<bool> {
    bwrap().map(|b| b.userns)
}

/// The state directory whose `bwrap-probe` file keeps the probe's answer across processes;
/// the first one named wins.
static PROBE_DIR: OnceLock<PathBuf> = OnceLock::new();

/// What [`bwrap`] found, once looked for (`None` inside: not yet).
static FOUND: std::sync::Mutex<Option<Option<&'static Bwrap>>> = std::sync::Mutex::new(None);

/// Notes the settings' state directory, where the bubblewrap probe's answer is kept (see
/// the `bwrap_cache` module).
fn note_state_dir(settings: &SandboxSettings) {
    if let Some(dir) = &settings.state_dir {
        let _ = PROBE_DIR.set(dir.clone());
    }
}

/// Finds bubblewrap and learns, once per process, which of the isolation flags it can use
/// here (see [`find_bwrap`]).
fn bwrap() -> Option<&'static Bwrap> {
    let mut found = FOUND
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *found.get_or_insert_with(|| find_bwrap(true).map(|b| &*Box::leak(Box::new(b))))
}

/// Whether bubblewrap's flags came from the probe's file rather than a probe of this
/// process.
pub(crate) fn bwrap_flags_kept() -> bool {
    bwrap().is_some_and(|b| b.cached)
}

/// A bubblewrap launch failed: when its flags came from the probe's file, the file is
/// dropped and bubblewrap probed again. True when the probe now says something else (a
/// launch with the new flags may work: worth one retry).
pub(crate) fn bwrap_failed() -> bool {
    let mut found = FOUND
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(Some(old)) = *found else {
        return false;
    };
    if !old.cached {
        return false;
    }
    if let Some(dir) = PROBE_DIR.get() {
        crate::bwrap_cache::forget(&crate::bwrap_cache::file(dir));
    }
    let new = find_bwrap(false);
    let changed = new
        .as_ref()
        .is_none_or(|n| (n.userns, n.disable_userns) != (old.userns, old.disable_userns));
    *found = Some(new.map(|b| &*Box::leak(Box::new(b))));
    changed
}

/// Finds bubblewrap and learns which of the isolation flags it can use here: the full set,
/// then without `--disable-userns` (bubblewrap before 0.8), then without a user namespace
/// (none available: a setuid bubblewrap, or root on a kernel without them). Starting
/// bubblewrap to find out costs as much as a short command, so the answer is kept in the
/// state directory and read from there while nothing it depends on changed
/// (`use_cache`; see the `bwrap_cache` module).
fn find_bwrap(use_cache: bool) -> Option<Bwrap> {
    let candidates = ["/usr/bin/bwrap", "/bin/bwrap", "/usr/local/bin/bwrap"];
    let path = candidates
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .or_else(|| {
            std::env::var_os("PATH").and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join("bwrap"))
                    .find(|p| p.is_file())
            })
        })?;
    let file = PROBE_DIR.get().map(|d| crate::bwrap_cache::file(d));
    let key = file.as_ref().and_then(|_| crate::bwrap_cache::key(&path));
    if use_cache
        && let (Some(file), Some(key)) = (&file, &key)
        && let Some(flags) = crate::bwrap_cache::read(file, key)
    {
        return Some(Bwrap {
            path,
            userns: flags.userns,
            disable_userns: flags.disable_userns,
            cached: true,
        });
    }
    let works = |flags: &[&str]| {
        std::process::Command::new(&path)
            .args([
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--perms",
                "0700",
                "--tmpfs",
                "/tmp",
                "--unshare-pid",
                "--unshare-net",
                "--unshare-ipc",
                "--die-with-parent",
                "--new-session",
                "--cap-drop",
                "ALL",
            ])
            .args(flags)
            .args(["--", "true"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let (userns, disable_userns) = if works(&["--unshare-user", "--disable-userns"]) {
        (true, true)
    } else if works(&["--unshare-user"]) {
        (true, false)
    } else if works(&[]) {
        (false, false)
    } else {
        return None;
    };
    if let (Some(file), Some(key)) = (&file, &key) {
        let flags = crate::bwrap_cache::Flags {
            userns,
            disable_userns,
        };
        crate::bwrap_cache::write(file, key, flags);
    }
    Some(Bwrap {
        path,
        userns,
        disable_userns,
        cached: false,
    })
}

/// Whether Landlock can be enforced here (checked once, in a throw-away thread).
pub fn landlock_available() -> bool {
    #[cfg(target_os = "linux")]
    {
        crate::landlock::available()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// Chooses how to start commands a person approved (the workspace profile) for `settings`
/// in a session whose working directories are `dirs`. `disable` is the call's
/// `dangerouslyDisableSandbox`, honoured only when the settings allow unsandboxed commands.
pub fn prepare(
    settings: &SandboxSettings,
    dirs: &[PathBuf],
    cwd: &Path,
    disable: bool,
) -> Result<Prepared, ToolError> {
    prepare_profile(Profile::Workspace, settings, dirs, cwd, disable)
}

/// Chooses how to start commands of `profile`: [`prepare`] for the workspace; for the jail,
/// bubblewrap or Landlock (`sandbox.mechanism` chooses, as for the workspace) and never
/// anything else: neither `dangerouslyDisableSandbox`, `sandbox.enabled: false` nor
/// `sandbox.allowDegraded` let a jailed command out. Without a mechanism the error says so
/// (see [`jail_available`], which a permission check asks first).
pub fn prepare_profile(
    profile: Profile,
    settings: &SandboxSettings,
    dirs: &[PathBuf],
    cwd: &Path,
    disable: bool,
) -> Result<Prepared, ToolError> {
    note_state_dir(settings);
    // Probed only when a mechanism is needed: starting bubblewrap to check it costs more
    // than an unsandboxed command.
    let available = || Available {
        bubblewrap: matches!(settings.mechanism, Mechanism::Auto | Mechanism::Bubblewrap)
            && bubblewrap().is_some(),
        landlock: matches!(settings.mechanism, Mechanism::Auto | Mechanism::Landlock)
            && landlock_available(),
    };
    if profile == Profile::Jail {
        return prepare_jail(settings, dirs, cwd, available);
    }
    prepare_with(settings, dirs, cwd, disable, available)
}

/// Whether a jail can be made for `settings` here; the reason when not.
pub fn jail_available(settings: &SandboxSettings) -> Result<(), String> {
    note_state_dir(settings);
    let bubblewrap = matches!(settings.mechanism, Mechanism::Auto | Mechanism::Bubblewrap)
        && bubblewrap().is_some();
    let landlock =
        matches!(settings.mechanism, Mechanism::Auto | Mechanism::Landlock) && landlock_available();
    if bubblewrap || landlock {
        return Ok(());
    }
    Err(match settings.mechanism {
        Mechanism::Auto => "neither bubblewrap (install the `bubblewrap` package) nor Landlock is available here, so no read-only jail can be made".to_owned(),
        Mechanism::Bubblewrap => "bubblewrap is not installed or cannot create a sandbox here and sandbox.mechanism is \"bubblewrap\", so no read-only jail can be made".to_owned(),
        Mechanism::Landlock => "Landlock is not available in this kernel and sandbox.mechanism is \"landlock\", so no read-only jail can be made".to_owned(),
    })
}

fn prepare_jail(
    settings: &SandboxSettings,
    dirs: &[PathBuf],
    cwd: &Path,
    available: impl FnOnce() -> Available,
) -> Result<Prepared, ToolError> {
    let available = available();
    if available.bubblewrap {
        #[cfg(target_os = "linux")]
        let policy = SandboxPolicy::for_bubblewrap(Profile::Jail, settings, dirs, cwd)?;
        #[cfg(not(target_os = "linux"))]
        let policy = SandboxPolicy::for_profile(Profile::Jail, settings, dirs, cwd);
        return Ok(Prepared {
            description: format!("bubblewrap ({})", policy.describe()),
            launch: Launch::Bubblewrap(Arc::new(policy)),
            notice: None,
        });
    }
    #[cfg(target_os = "linux")]
    if available.landlock {
        let policy = SandboxPolicy::for_profile(Profile::Jail, settings, dirs, cwd);
        return Ok(Prepared {
            description: format!("landlock+seccomp ({})", policy.describe()),
            launch: Launch::Landlock(Arc::new(policy)),
            notice: None,
        });
    }
    let _ = (dirs, cwd);
    let why = jail_available(settings)
        .err()
        .unwrap_or_else(|| "no sandbox mechanism is available".to_owned());
    Err(ToolError::respond(format!(
        "The command was not run: it was approved only because it reads, and such commands run in a read-only jail, but {why}. Approve the command with an allow rule to run it in the workspace sandbox."
    )))
}

/// Which mechanisms can be used.
#[derive(Debug, Clone, Copy)]
struct Available {
    bubblewrap: bool,
    landlock: bool,
}

fn prepare_with(
    settings: &SandboxSettings,
    dirs: &[PathBuf],
    cwd: &Path,
    disable: bool,
    available: impl FnOnce() -> Available,
) -> Result<Prepared, ToolError> {
    let direct = |description: &str, notice: Option<String>| Prepared {
        launch: Launch::Direct,
        description: description.to_owned(),
        notice,
    };
    if !settings.enabled {
        return Ok(direct("none (sandbox disabled in settings)", None));
    }
    if disable {
        if settings.allow_unsandboxed_commands {
            return Ok(direct("none (dangerouslyDisableSandbox)", None));
        }
        return Err(ToolError::respond(
            "dangerouslyDisableSandbox is not allowed: the settings set sandbox.allowUnsandboxedCommands to false. Run the command inside the sandbox.",
        ));
    }
    if settings.mode == SandboxMode::FullAccess && settings.network && settings.deny_read.is_empty()
    {
        return Ok(direct("none (full-access, network on)", None));
    }
    let available = available();
    if available.bubblewrap {
        #[cfg(target_os = "linux")]
        let policy = SandboxPolicy::for_bubblewrap(Profile::Workspace, settings, dirs, cwd)?;
        #[cfg(not(target_os = "linux"))]
        let policy = SandboxPolicy::new(settings, dirs, cwd);
        let described = policy.describe();
        let userns = bwrap().is_none_or(|b| b.userns);
        let description = if userns {
            format!("bubblewrap ({described})")
        } else {
            format!("bubblewrap without user namespaces ({described})")
        };
        return Ok(Prepared {
            launch: Launch::Bubblewrap(Arc::new(policy)),
            description,
            notice: None,
        });
    }
    let policy = SandboxPolicy::new(settings, dirs, cwd);
    let described = policy.describe();
    #[cfg(target_os = "linux")]
    if available.landlock {
        return Ok(Prepared {
            launch: Launch::Landlock(Arc::new(policy)),
            description: format!("landlock+seccomp ({described})"),
            notice: None,
        });
    }
    let wanted = match settings.mechanism {
        Mechanism::Auto => {
            "neither bubblewrap (install the `bubblewrap` package) nor Landlock is available"
        }
        Mechanism::Bubblewrap => {
            "bubblewrap is not installed or cannot create a sandbox here (install the `bubblewrap` package)"
        }
        Mechanism::Landlock => "Landlock is not available in this kernel",
    };
    if settings.allow_degraded {
        return Ok(direct(
            "none (degraded: no sandbox mechanism available)",
            Some(format!(
                "Note: the command ran without a sandbox because {wanted}; sandbox.allowDegraded is true."
            )),
        ));
    }
    Err(ToolError::fatal(format!(
        "The command was not run: the sandbox ({described}) cannot be applied because {wanted}. Set sandbox.allowDegraded to true in the settings to run commands unsandboxed, or sandbox.enabled to false."
    )))
}

/// Builds bubblewrap's command line.
struct Args(Vec<OsString>);

impl Args {
    fn push(&mut self, items: &[&OsStr]) {
        self.0.extend(items.iter().map(|s| s.to_os_string()));
    }

    fn flag(&mut self, flag: &str) {
        self.0.push(flag.into());
    }

    fn bind(&mut self, flag: &str, src: &Path, dest: &Path) {
        self.push(&[flag.as_ref(), src.as_os_str(), dest.as_os_str()]);
    }
}

impl Launch {
    /// What goes before `bash -c COMMAND`: bubblewrap's command line and the helper that
    /// applies the seccomp filter inside, or nothing. `writable_files` are files the command
    /// must be able to write (its output file, the session's slot directory).
    pub fn prefix(&self, cwd: &Path, writable_files: &[PathBuf]) -> Vec<OsString> {
        self.prefix_for(
            cwd,
            writable_files,
            Filter::Helper {
                stderr_to_output: true,
            },
        )
    }

    /// [`Launch::prefix`], with the filter brought in as `filter` says.
    pub(crate) fn prefix_for(
        &self,
        cwd: &Path,
        writable_files: &[PathBuf],
        filter: Filter,
    ) -> Vec<OsString> {
        let Launch::Bubblewrap(policy) = self else {
            return Vec::new();
        };
        let mut a = namespaces();
        let root = Path::new("/");
        if policy.mode == SandboxMode::FullAccess {
            a.bind("--bind", root, root);
        } else {
            a.bind("--ro-bind", root, root);
        }
        a.push(&[
            "--dev".as_ref(),
            "/dev".as_ref(),
            "--proc".as_ref(),
            "/proc".as_ref(),
        ]);
        filesystem(&mut a, policy, writable_files);
        if !policy.network {
            a.flag("--unshare-net");
        }
        inner_command(&mut a, policy, cwd, filter);
        a.0
    }

    /// Spawns the prepared command.
    pub async fn spawn(
        &self,
        #[allow(unused_mut)] mut cmd: Command,
        writable_files: &[PathBuf],
    ) -> Result<Child, ToolError> {
        let start = |mut cmd: Command| {
            cmd.spawn()
                .map_err(|e| ToolError::fatal(format!("cannot start bash: {e}")))
        };
        match self {
            Launch::Direct => start(cmd),
            Launch::Bubblewrap(policy) => {
                // Without the helper, bubblewrap reads the filter from stdin: the caller set
                // it up with `filter_stdin` (see `process::command_line`).
                #[cfg(target_os = "linux")]
                policy.leases.restore();
                let child = start(cmd)?;
                #[cfg(target_os = "linux")]
                hold_until_exit(policy, &child);
                #[cfg(not(target_os = "linux"))]
                let _ = (policy, writable_files);
                Ok(child)
            }
            #[cfg(target_os = "linux")]
            Launch::Landlock(policy) => crate::landlock::spawn(policy, writable_files, cmd).await,
        }
    }
}

impl Launch {
    /// The policy, for a sandboxed launch.
    pub fn policy(&self) -> Option<&SandboxPolicy> {
        match self {
            Launch::Direct => None,
            Launch::Bubblewrap(p) => Some(p),
            #[cfg(target_os = "linux")]
            Launch::Landlock(p) => Some(p),
        }
    }

    /// Gives `cmd` the environment of this launch: for a sandboxed one, only the policy's
    /// (the host's allow-listed variables, see the `env` module); unsandboxed, the host's.
    pub(crate) fn set_environment(&self, cmd: &mut Command) {
        if let Some(policy) = self.policy() {
            cmd.env_clear();
            cmd.envs(policy.env.iter().map(|(k, v)| (k, v)));
        }
    }

    /// Whether bubblewrap reads the seccomp filter from stdin for this launch, its prefix
    /// made with `filter`: the command's own stdin then goes in as stderr, and is put back
    /// inside (see [`Filter`]).
    pub(crate) fn filter_on_stdin(&self, filter: Filter) -> bool {
        #[cfg(target_os = "linux")]
        {
            matches!(self, Launch::Bubblewrap(_)) && filter.helper().is_none()
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = filter;
            false
        }
    }

    /// The seccomp filter for bubblewrap's stdin (see [`Launch::filter_on_stdin`]).
    pub(crate) fn filter_stdin(&self) -> Result<std::process::Stdio, ToolError> {
        match self {
            #[cfg(target_os = "linux")]
            Launch::Bubblewrap(policy) => seccomp_stdin(policy.sockets(true)),
            _ => Ok(std::process::Stdio::null()),
        }
    }
}

/// Runs `job` on a thread that lives as long as the process, and returns what it returns
/// (blocking the caller until then): bubblewrap's `--die-with-parent` fires when the
/// *thread* that forked it ends, so every bubblewrap is started from there.
pub(crate) fn on_keeper<T: Send + 'static>(
    job: impl FnOnce() -> T + Send + 'static,
) -> Result<T, ToolError> {
    type Job = Box<dyn FnOnce() + Send>;
    static KEEPER: OnceLock<Option<std::sync::Mutex<std::sync::mpsc::Sender<Job>>>> =
        OnceLock::new();
    let keeper = KEEPER.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("agent-tools-sandbox-keeper".into())
            .spawn(move || {
                for job in rx {
                    job();
                }
            })
            .ok()
            .map(|_| std::sync::Mutex::new(tx))
    });
    let gone = || ToolError::fatal("cannot start the sandbox: its starter thread is gone");
    let keeper = keeper.as_ref().ok_or_else(gone)?;
    let (tx, rx) = std::sync::mpsc::channel();
    keeper
        .lock()
        .map_err(|_| gone())?
        .send(Box::new(move || {
            let _ = tx.send(job());
        }))
        .map_err(|_| gone())?;
    rx.recv().map_err(|_| gone())
}

/// The program that applies the seccomp filter inside bubblewrap: the registered supervisor
/// program (the host binary), when there is one.
fn helper() -> Option<&'static Path> {
    #[cfg(target_os = "linux")]
    {
        crate::host_program::supervisor_program()
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// The seccomp program, on a memory file positioned at its start, for bubblewrap's
/// `--seccomp 0`.
#[cfg(target_os = "linux")]
fn seccomp_stdin(sockets: Sockets) -> Result<std::process::Stdio, ToolError> {
    use rustix::fs::{MemfdFlags, SeekFrom, memfd_create, seek};
    let fail = |e: &dyn std::fmt::Display| {
        ToolError::fatal(format!("cannot hand the seccomp filter to bubblewrap: {e}"))
    };
    let bytes = crate::filter::program_bytes(sockets)?;
    let fd = memfd_create("agent-tools-seccomp", MemfdFlags::CLOEXEC).map_err(|e| fail(&e))?;
    let mut written = 0;
    while written < bytes.len() {
        written += rustix::io::write(&fd, &bytes[written..]).map_err(|e| fail(&e))?;
    }
    seek(&fd, SeekFrom::Start(0)).map_err(|e| fail(&e))?;
    Ok(std::process::Stdio::from(fd))
}

/// Keeps `policy` (and the placeholders it binds) until bubblewrap has exited: a small
/// thread waits on the process's pidfd.
#[cfg(target_os = "linux")]
fn hold_until_exit(policy: &Arc<SandboxPolicy>, child: &Child) {
    use rustix::event::{PollFd, PollFlags, poll};
    if policy.leases.is_empty() {
        return;
    }
    let Some(pid) = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32))
    else {
        return;
    };
    let Ok(pidfd) = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) else {
        return;
    };
    let policy = Arc::clone(policy);
    let hold = Hold::start();
    let spawned = std::thread::Builder::new()
        .name("agent-tools-sandbox-hold".into())
        .spawn(move || {
            let mut fds = [PollFd::new(&pidfd, PollFlags::IN)];
            while matches!(poll(&mut fds, None), Err(rustix::io::Errno::INTR)) {}
            drop(policy);
            drop(hold);
        });
    // A thread that could not start dropped its closure, and with it the hold.
    drop(spawned);
}

/// How many threads still hold a sandbox's placeholders until its bubblewrap exits.
#[cfg(target_os = "linux")]
static HOLDS: (std::sync::Mutex<usize>, std::sync::Condvar) =
    (std::sync::Mutex::new(0), std::sync::Condvar::new());

/// One thread holding placeholders; counted in [`HOLDS`] while it lives.
#[cfg(target_os = "linux")]
struct Hold;

#[cfg(target_os = "linux")]
impl Hold {
    fn start() -> Hold {
        if let Ok(mut n) = HOLDS.0.lock() {
            *n += 1;
        }
        Hold
    }
}

#[cfg(target_os = "linux")]
impl Drop for Hold {
    fn drop(&mut self) {
        if let Ok(mut n) = HOLDS.0.lock() {
            *n = n.saturating_sub(1);
        }
        HOLDS.1.notify_all();
    }
}

/// For a process about to exit: waits, up to `limit`, until every sandbox that ended has
/// released its placeholders. Their holders are threads, which the process's exit would
/// otherwise stop half-way, leaving empty placeholder files in the project. A sandbox still
/// running (a background command) is not waited for beyond `limit`.
pub fn settle(limit: std::time::Duration) {
    #[cfg(target_os = "linux")]
    {
        let deadline = std::time::Instant::now() + limit;
        let Ok(mut n) = HOLDS.0.lock() else { return };
        while *n > 0 {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            match HOLDS.1.wait_timeout(n, left) {
                Ok((guard, _)) => n = guard,
                Err(_) => return,
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = limit;
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::path::Path;

    use tool_core::SettingsLayer;

    use super::*;
    use crate::mask::DenyRead;

    #[test]
    fn fails_closed_unless_degraded_mode_is_allowed() {
        let none = Available {
            bubblewrap: false,
            landlock: false,
        };
        let dir = std::env::temp_dir();
        let dirs = [dir.clone()];
        let s = SandboxSettings::default();
        let err = prepare_with(&s, &dirs, &dir, false, || none)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("The command was not run"), "{err}");
        assert!(err.contains("sandbox.allowDegraded"), "{err}");
        let degraded = SandboxSettings {
            allow_degraded: true,
            ..SandboxSettings::default()
        };
        let p = prepare_with(&degraded, &dirs, &dir, false, || none).ok();
        assert!(
            p.as_ref()
                .is_some_and(|p| matches!(p.launch, Launch::Direct))
        );
        assert!(
            p.and_then(|p| p.notice)
                .is_some_and(|n| n.contains("without a sandbox"))
        );
        // dangerouslyDisableSandbox only when the settings allow unsandboxed commands.
        let strict = SandboxSettings {
            allow_unsandboxed_commands: false,
            ..SandboxSettings::default()
        };
        assert!(prepare_with(&strict, &dirs, &dir, true, || none).is_err());
        assert!(matches!(
            prepare_with(&s, &dirs, &dir, true, || none).map(|p| p.launch),
            Ok(Launch::Direct)
        ));
        // The jail never degrades: without a mechanism it is refused, whatever the settings
        // allow the workspace.
        let lax = SandboxSettings {
            allow_degraded: true,
            enabled: false,
            ..SandboxSettings::default()
        };
        let err = prepare_jail(&lax, &dirs, &dir, || none)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.contains("read-only jail") && err.contains("allow rule"),
            "{err}"
        );
        let jailed = prepare_jail(&lax, &dirs, &dir, || Available {
            bubblewrap: false,
            landlock: true,
        });
        assert!(matches!(jailed.map(|p| p.launch), Ok(Launch::Landlock(_))));
        // Full access with network needs no mechanism.
        let open = SandboxSettings {
            mode: SandboxMode::FullAccess,
            network: true,
            ..SandboxSettings::default()
        };
        assert!(prepare_with(&open, &dirs, &dir, false, || none).is_ok());
    }

    #[test]
    fn read_deny_rules_reach_the_policy() -> Result<(), ToolError> {
        let dir = tempfile::tempdir().map_err(|e| ToolError::io(Path::new("tmp"), e))?;
        let root = dir
            .path()
            .canonicalize()
            .map_err(|e| ToolError::io(dir.path(), e))?;
        std::fs::write(root.join(".env"), "TOKEN=1").map_err(|e| ToolError::io(&root, e))?;
        let layer = SettingsLayer::parse(
            tool_core::RuleSourceKind::ProjectSettings,
            &root.join(".agent-tools/settings.json"),
            r#"{"permissions": {"deny": ["Read(./.env)", "Edit(/x)", "Bash(rm *)"]}, "sandbox": {"hideSecrets": false}}"#,
        )?;
        let s = SandboxSettings::from_layers(&[layer])?;
        assert!(!s.hide_secrets);
        assert_eq!(
            s.deny_read,
            vec![DenyRead {
                pattern: "./.env".to_owned(),
                root: root.clone()
            }]
        );
        let policy = SandboxPolicy::new(&s, std::slice::from_ref(&root), &root);
        assert_eq!(policy.masks(), &[Mask::File(root.join(".env"))]);
        assert!(policy.protected.contains(&root.join(".env")));
        // Full access with the network on still gets a sandbox when rules hide something.
        let none = || Available {
            bubblewrap: false,
            landlock: false,
        };
        let open = SandboxSettings {
            mode: SandboxMode::FullAccess,
            network: true,
            ..s
        };
        let dirs = std::slice::from_ref(&root);
        assert!(prepare_with(&open, dirs, &root, false, none).is_err());
        let open = SandboxSettings {
            deny_read: Vec::new(),
            ..open
        };
        assert!(matches!(
            prepare_with(&open, dirs, &root, false, none).map(|p| p.launch),
            Ok(Launch::Direct)
        ));
        Ok(())
    }
}

/// Bubblewrap's program and the namespaces and capabilities of every launch.
fn namespaces() -> Args {
    let bwrap = bwrap();
    let mut a = Args(Vec::new());
    a.push(&[bwrap.map_or(OsStr::new("bwrap"), |b| b.path.as_os_str())]);
    for f in [
        "--new-session",
        "--die-with-parent",
        "--unshare-pid",
        "--unshare-ipc",
    ] {
        a.flag(f);
    }
    if bwrap.is_none_or(|b| b.userns) {
        a.flag("--unshare-user");
        if bwrap.is_none_or(|b| b.disable_userns) {
            a.flag("--disable-userns");
        }
    }
    a.push(&["--cap-drop".as_ref(), "ALL".as_ref()]);
    a
}

/// The policy's file system after the root: the jail's /tmp, the writable roots, the
/// protection's binds, the masks and the files the command must write.
fn filesystem(a: &mut Args, policy: &SandboxPolicy, writable_files: &[PathBuf]) {
    let jail = policy.profile == Profile::Jail;
    let tmp = Path::new("/tmp");
    // What of the host's /tmp the jail keeps (see `policy::kept_in_tmp`), and our own
    // binary when it lives there: the helper and the supervisor run from it, and without it
    // no jailed command would start.
    let mut kept: Vec<&Path> = policy.kept_in_tmp().iter().map(PathBuf::as_path).collect();
    if let Some(program) =
        helper().filter(|p| jail && p.starts_with(tmp) && !kept.iter().any(|d| p.starts_with(d)))
    {
        kept.push(program);
    }
    if jail {
        // The jail's own empty /tmp, gone with it.
        a.push(&["--tmpfs".as_ref(), tmp.as_os_str()]);
        for d in &kept {
            a.bind("--ro-bind", d, d);
        }
    }
    // In the jail, what lies in the host's /tmp outside what it keeps is not there.
    let absent = |p: &Path| jail && p.starts_with(tmp) && !kept.iter().any(|d| p.starts_with(d));
    for r in &policy.writable_roots {
        a.bind("--bind", r, r);
    }
    for b in policy.binds() {
        match b {
            // An entry protected when the policy was made may be gone at a later launch:
            // another process removed it (sessions sharing a home or a project share its
            // placeholders, and the last one out removes them). Bubblewrap must still
            // start. Placeholders are made again just before each launch; one removed in
            // the moment between is not bound in that launch.
            Bind::ReadOnly(p) | Bind::Missing(p, _) => a.bind("--ro-bind-try", p, p),
            Bind::Pinned(p) | Bind::Writable(p) => a.bind("--bind", p, p),
        }
    }
    // A masked path gone since the policy was made (another user's home removed) hides
    // nothing, and bubblewrap could not make its mount point on the read-only root.
    let gone = |p: &Path| std::fs::symlink_metadata(p).is_err();
    for m in policy
        .masks()
        .iter()
        .filter(|m| !absent(m.path()) && !gone(m.path()))
    {
        match m {
            Mask::File(p) => a.bind("--ro-bind", Path::new("/dev/null"), p),
            Mask::Dir(p) => {
                a.push(&[
                    "--perms".as_ref(),
                    "0000".as_ref(),
                    "--tmpfs".as_ref(),
                    p.as_os_str(),
                    "--remount-ro".as_ref(),
                    p.as_os_str(),
                ]);
            }
        }
    }
    if policy.mode != SandboxMode::FullAccess {
        for f in writable_files {
            a.bind("--bind", f, f);
        }
    }
}

/// The command after bubblewrap's options: our helper that applies the seccomp filter, or
/// bubblewrap's own `--seccomp` with a shell that puts the descriptors back.
fn inner_command(a: &mut Args, policy: &SandboxPolicy, cwd: &Path, filter: Filter) {
    #[cfg(target_os = "linux")]
    let sockets = policy.sockets(true).as_arg();
    #[cfg(not(target_os = "linux"))]
    let sockets = {
        let _ = policy;
        "private"
    };
    if let Some(program) = filter.helper() {
        a.push(&["--chdir".as_ref(), cwd.as_os_str(), "--".as_ref()]);
        a.push(&[
            program.as_os_str(),
            EXEC_ARG.as_ref(),
            sockets.as_ref(),
            "--".as_ref(),
        ]);
        return;
    }
    // bubblewrap applies the filter, read from stdin (see `Launch::spawn`). What the
    // command's stdin would have been arrives as stderr: a shell, or the command's own
    // start-up code, makes it the command's stdin again and its stderr the output.
    a.push(&[
        "--seccomp".as_ref(),
        "0".as_ref(),
        "--chdir".as_ref(),
        cwd.as_os_str(),
        "--".as_ref(),
    ]);
    let swap: Option<&str> = match filter {
        Filter::SwappedByCommand => None,
        Filter::Helper { stderr_to_output } => Some(if stderr_to_output {
            "exec \"$@\" 0<&2 2>&1"
        } else {
            "exec \"$@\" 0<&2 2>/dev/null"
        }),
    };
    if let Some(swap) = swap {
        a.push(&[
            "/bin/sh".as_ref(),
            "-c".as_ref(),
            swap.as_ref(),
            "sh".as_ref(),
        ]);
    }
}

/// How the seccomp filter reaches what a bubblewrap launch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Filter {
    /// Our helper program applies it, when one is registered (for what must keep its
    /// stdin: the supervisor, a server); otherwise bubblewrap reads it from stdin and a
    /// `/bin/sh` puts the program's stdin back.
    Helper {
        /// Whether the program's stderr joins its stdout (a shell command) or goes to
        /// `/dev/null` (a program speaking a protocol on stdout)
        stderr_to_output: bool,
    },
    /// bubblewrap reads it from stdin; the command puts its stdin back itself (our bash
    /// start-up code, see `command::inline_script`). A one-shot command goes this way: no
    /// second start of our binary (about 2.5 ms) and no shell in front (about 1 ms).
    SwappedByCommand,
}

impl Filter {
    /// The helper program this route runs, if any.
    fn helper(self) -> Option<&'static Path> {
        match self {
            Filter::Helper { .. } => helper(),
            Filter::SwappedByCommand => None,
        }
    }
}
