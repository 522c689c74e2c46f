//! Running one shell command: `bash -c COMMAND` in its own process group, stdin closed,
//! stdout and stderr interleaved into one pipe (see the `spool` module), the working
//! directory reported on a second pipe at exit, and a time limit and cancellation that
//! signal the whole group (TERM, a grace period, KILL) and reap it.
//!
//! Commands normally run under a supervisor (the `supervisor` module). [`spawn`] starts one
//! directly from this process, for hosts that registered no supervisor program: then what
//! a command started outside its group is found by the mark in its environment (see the
//! `reaper` module), or by bubblewrap's pid namespace.

use std::ffi::OsString;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;
use tool_core::{ProcessGroup, ToolError};

use crate::command::{
    ENV, Ending, Finished, Io, KILL_GRACE, RunSpec, bash_path, command_vars, inline_script,
};
use crate::launch::{Filter, Launch};

/// A running command; dropping it kills its process group.
#[derive(Debug)]
pub enum Running {
    /// Started by this process (unsandboxed, Landlock, or a bubblewrap of its own)
    Local(Box<Local>),
    /// Started by the session's persistent bubblewrap sandbox
    #[cfg(target_os = "linux")]
    Supervised(crate::supervisor::Supervised),
}

/// A command this process started itself.
#[derive(Debug)]
pub struct Local {
    child: Child,
    /// Its process group, killed when this is dropped
    group: Option<ProcessGroup>,
    done: bool,
    /// The mark in its environment, when nothing else finds what it left behind
    mark: Option<String>,
    /// The limits it runs under (sandboxed)
    limits: Option<crate::resources::ResourceLimits>,
    /// Started by bubblewrap with flags kept from an earlier process's probe
    kept_flags: bool,
    /// Started by a bubblewrap of its own, whose sandbox (a pid namespace in a session of
    /// its own) is out of the group's reach
    bubblewrap: bool,
}

/// Builds the command line: the launcher's prefix (bubblewrap, or nothing), then
/// `bash -c 'STARTUP; eval "$1"' bash COMMAND`.
///
/// The start-up code travels in the argument, not in a `BASH_ENV` file: under Landlock the
/// temporary directory is writable, so a sandboxed command could have rewritten a shared
/// start-up file and planted code that a later unsandboxed call would run. The command is
/// still one argument of its own, never quoted into the script; `eval` runs it as `-c`
/// would (only a syntax error's prefix reads `eval:` instead of `-c:`).
fn command_line(
    spec: &RunSpec,
    launch: &Launch,
    io: Io,
    mark: Option<&str>,
) -> Result<Command, ToolError> {
    // bubblewrap applies the filter and the start-up code takes its stdin back: see
    // `Filter::SwappedByCommand`.
    let filter = Filter::SwappedByCommand;
    let mut argv: Vec<OsString> = launch.prefix_for(&spec.cwd, &[], filter);
    let swapped = launch.filter_on_stdin(filter);
    argv.push(bash_path().into_os_string());
    argv.push("-c".into());
    argv.push(inline_script(swapped, launch.policy().is_some()).into());
    argv.push("bash".into());
    argv.push(spec.command.clone().into());
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    cmd.current_dir(&spec.cwd);
    let err = io
        .output
        .try_clone()
        .map_err(|e| ToolError::fatal(format!("cannot set up the command's output: {e}")))?;
    let reports_cwd = io.cwd.is_some();
    let stdin = match io.cwd {
        Some(fd) => Stdio::from(fd),
        None => Stdio::null(),
    };
    cmd.stdout(Stdio::from(io.output));
    if swapped {
        // bubblewrap reads the seccomp filter from stdin; the command's stdin goes in as
        // stderr and the start-up code swaps them back (stderr joins the output).
        drop(err);
        cmd.stdin(launch.filter_stdin()?);
        cmd.stderr(stdin);
    } else {
        cmd.stdin(stdin);
        cmd.stderr(Stdio::from(err));
    }
    launch.set_environment(&mut cmd);
    for (k, v) in ENV {
        cmd.env(k, v);
    }
    // An inherited BASH_ENV would be read before the command; the start-up code is inline.
    cmd.env_remove("BASH_ENV");
    cmd.env_remove("AGENT_TOOLS_CWD_STDIN");
    let limits = launch.policy().map(|p| p.limits.rlimits(None));
    for (k, v) in command_vars(spec, reports_cwd, limits) {
        cmd.env(k, v);
    }
    if let Some(mark) = mark {
        cmd.env(crate::reaper::MARK_VAR, mark);
    }
    cmd.process_group(0);
    cmd.kill_on_drop(true);
    Ok(cmd)
}

/// Starts a command as a child of this process (no supervisor program is registered).
/// Outside bubblewrap its processes carry a mark, by which what leaves its group is found.
pub async fn spawn(spec: &RunSpec, launch: &Launch, io: Io) -> Result<Running, ToolError> {
    let mark = (!matches!(launch, Launch::Bubblewrap(_))).then(crate::reaper::new_mark);
    let cmd = command_line(spec, launch, io, mark.as_deref())?;
    let bubblewrap = matches!(launch, Launch::Bubblewrap(_));
    let kept_flags = bubblewrap && crate::launch::bwrap_flags_kept();
    let child = launch.spawn(cmd, &[]).await?;
    let group = child.id().and_then(ProcessGroup::adopt);
    Ok(Running::Local(Box::new(Local {
        child,
        group,
        done: false,
        mark,
        limits: launch.policy().map(|p| p.limits),
        kept_flags,
        bubblewrap,
    })))
}

fn code_of(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(-1)
}

impl Running {
    /// Waits for the command to exit, for `limit` to pass or for `cancel`; whatever happens
    /// its group is gone when this returns.
    pub async fn wait(&mut self, limit: Option<Duration>, cancel: &CancellationToken) -> Finished {
        match self {
            Running::Local(l) => l.wait(limit, cancel).await,
            #[cfg(target_os = "linux")]
            Running::Supervised(s) => s.wait(limit, cancel).await,
        }
    }

    /// Where the command's memory limit comes from: its sandbox instance's cgroup (`cgroup
    /// v2`, `cgroup v1`), or `rlimits` (a command started on its own, an instance without a
    /// cgroup), under which an allocation past the limit fails inside the command.
    pub fn memory_limited_by(&self) -> &'static str {
        match self {
            Running::Local(_) => "rlimits",
            #[cfg(target_os = "linux")]
            Running::Supervised(s) => s.instance().memory_limited_by(),
        }
    }

    /// Why the command's sandbox instance runs without the cgroup the machine offers, if it
    /// does (its memory and process limits are then the rlimits).
    pub fn cgroup_missing(&self) -> Option<String> {
        match self {
            Running::Local(_) => None,
            #[cfg(target_os = "linux")]
            Running::Supervised(s) => s.instance().cgroup_missing().map(str::to_owned),
        }
    }
}

impl Local {
    /// Waits for the command to exit, for `limit` to pass (then kills the group: TERM,
    /// [`KILL_GRACE`], KILL) or for `cancel` (likewise). Whatever happens the group is gone
    /// when this returns.
    pub async fn wait(&mut self, limit: Option<Duration>, cancel: &CancellationToken) -> Finished {
        let sleep = tool_core::sleep_or_never(limit);
        let ending = tokio::select! {
            status = self.child.wait() => {
                let code = status.map(code_of).unwrap_or(-1);
                self.done = true;
                // Background jobs the command left in its group do not outlive the call.
                self.kill_group().await;
                self.kill_marked().await;
                // Bubblewrap fails to set a sandbox up with status 1, which a command may
                // also give: with flags kept from an earlier probe, probing again says
                // whether they still work, so the next launch does not fail the same way.
                if code == 1 && std::mem::take(&mut self.kept_flags) {
                    let _ = tokio::task::spawn_blocking(crate::launch::bwrap_failed).await;
                }
                return Finished::new(Ending::Exited, code).with_cpu_limit(self.limits.as_ref());
            }
            () = sleep => Ending::TimedOut,
            () = cancel.cancelled() => Ending::Cancelled,
        };
        let code = self.kill_group().await.unwrap_or(128 + 15);
        self.kill_marked().await;
        Finished::new(ending, code)
    }

    /// Kills what the command left outside its group, found by its mark.
    async fn kill_marked(&mut self) {
        if let Some(mark) = self.mark.take() {
            if crate::host_program::nothing_left() {
                return;
            }
            let _ = tokio::task::spawn_blocking(move || crate::reaper::kill_marked(&mark)).await;
        }
    }

    /// Stops the whole group: SIGTERM, up to [`KILL_GRACE`] for it to go, SIGKILL; reaps the
    /// leader. Returns the leader's exit code if it had not been reaped before.
    pub async fn kill_group(&mut self) -> Option<i32> {
        let mut code = None;
        let Some(group) = &self.group else {
            return code;
        };
        if !group.is_alive() {
            if !self.done {
                code = self.child.wait().await.ok().map(code_of);
                self.done = true;
            }
            return code;
        }
        if self.bubblewrap && !self.done {
            // The command runs in bubblewrap's pid namespace, in a session of its own: the
            // group's signals reach only bubblewrap, and `--die-with-parent` alone left the
            // sandbox running when bubblewrap was signalled early. Its sandbox is ended
            // directly, then bubblewrap; the exit code reads as a SIGTERM's, as before.
            if let Some(leader) = group.id() {
                let _ = tokio::task::spawn_blocking(move || end_bubblewrap(leader)).await;
            }
            group.kill();
            let _ = self.child.wait().await;
            self.done = true;
            return None;
        }
        // Children of the leader that left its group (bubblewrap's sandbox init, in a new
        // session and pid namespace) die with it; note them to wait until they are gone.
        let detached = match group.id() {
            Some(leader) if !self.done => children_outside_group(leader),
            _ => Vec::new(),
        };
        // Members of the group other than the leader are reaped by their parents (or by
        // init once orphaned); `terminate` waits until none is left so callers see a clean
        // slate.
        let killed = group.terminate(KILL_GRACE).await;
        if !self.done {
            code = self.child.wait().await.ok().map(code_of);
            self.done = true;
        }
        if killed {
            for _ in 0..200 {
                if detached.iter().all(|p| !is_alive(*p)) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
        code
    }
}

/// The fields of `/proc/PID/stat` after the command name: state, ppid, pgrp, ...
fn stat_fields(pid: i32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// Whether a process exists and is not a zombie.
fn is_alive(pid: i32) -> bool {
    stat_fields(pid).is_some_and(|f| f.first().is_some_and(|s| s != "Z" && s != "X"))
}

/// Ends a bubblewrap started by this process and its sandbox, at any point of its start:
/// stops bubblewrap (so it starts nothing more), kills each of its children (the sandbox's
/// pid 1, whose death ends every process of the namespace, whatever session or group they
/// moved to; or a child that has not yet moved) and then bubblewrap itself. The caller
/// reaps bubblewrap.
fn end_bubblewrap(leader: u32) {
    let Some(pid) = i32::try_from(leader).ok().and_then(Pid::from_raw) else {
        return;
    };
    let _ = kill_process(pid, Signal::STOP);
    // A signal takes effect when its target next runs: wait until bubblewrap has stopped
    // (or gone) before listing its children, so none is forked after the list.
    for _ in 0..STOP_ROUNDS {
        let state = stat_fields(pid.as_raw_nonzero().get()).and_then(|f| f.into_iter().next());
        if !matches!(state.as_deref(), Some("R" | "S" | "D")) {
            break;
        }
        std::thread::sleep(STOP_PAUSE);
    }
    for child in children_of(leader) {
        if let Some(child) = Pid::from_raw(child) {
            let _ = kill_process(child, Signal::KILL);
        }
    }
    let _ = kill_process(pid, Signal::KILL);
}

/// How many times [`end_bubblewrap`] looks whether bubblewrap has stopped, and how long it
/// pauses between looks.
const STOP_ROUNDS: usize = 200;
const STOP_PAUSE: Duration = Duration::from_millis(1);

/// The live direct children of `parent`.
fn children_of(parent: u32) -> Vec<i32> {
    children_where(parent, |_, zombie, _| !zombie)
}

/// Direct children of the group leader `leader` that are in another process group.
fn children_outside_group(leader: u32) -> Vec<i32> {
    children_where(leader, |leader, _, pgrp| pgrp != leader)
}

/// Direct children of `parent` for which `keep(parent, zombie, pgrp)` holds, from the
/// reaper's process table.
fn children_where(parent: u32, keep: impl Fn(i32, bool, i32) -> bool) -> Vec<i32> {
    let Ok(parent) = i32::try_from(parent) else {
        return Vec::new();
    };
    crate::reaper::processes()
        .into_iter()
        .filter(|&(_, ppid, zombie, pgrp)| ppid == parent && keep(parent, zombie, pgrp))
        .map(|(pid, ..)| pid)
        .collect()
}

impl Drop for Local {
    fn drop(&mut self) {
        // The call was abandoned (its future dropped): kill the group at once. The leader is
        // reaped by tokio's orphan reaper (`kill_on_drop`).
        if let Some(group) = &self.group {
            if let Some(leader) = group.id().filter(|_| self.bubblewrap && !self.done) {
                end_bubblewrap(leader);
            }
            group.kill();
        }
        if let Some(mark) = self.mark.take() {
            let _ = std::thread::Builder::new()
                .name("agent-tools-reaper".into())
                .spawn(move || crate::reaper::kill_marked(&mark));
        }
    }
}
