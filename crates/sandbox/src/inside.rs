//! The supervisor's side: a small loop, run by the host binary itself (inside bubblewrap,
//! under Landlock, or unsandboxed), that starts each command in a process group of its own
//! and reports when the group is gone (the protocol is in the `supervisor` module).
//!
//! Inside bubblewrap it is pid 2 of the sandbox's pid namespace and ends what commands left
//! behind with `kill(-1)`. Elsewhere it makes itself a child subreaper, so nothing a command
//! starts can leave its subtree (`setsid` and double forks included), and ends that subtree
//! instead. Either way it does so when no command runs, and when its request socket closes:
//! the host ended the instance, or died (even by SIGKILL, since the kernel closes the
//! host's end then).
//!
//! It is Rust rather than a bash script because a Bash call of `true` costs about a
//! millisecond, and a bash supervisor added most of another: bash reads a pipe one byte per
//! system call, forks its whole address space per command (then takes copy-on-write faults
//! on both sides), and needs a signal to leave `wait -n` when a request arrives. Here one
//! `poll` covers the request pipe and a pidfd per command, a request is read in one go, and
//! `posix_spawn` starts `bash` without copying the supervisor.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::process::{
    Pid, PidfdFlags, Signal, WaitId, WaitIdOptions, getpid, kill_process_group, pidfd_open,
    test_kill_process_group, waitid,
};

use crate::host_program::{EXEC_ARG, SUPERVISOR_ARG, set_supervisor_program};

/// Call first in `main`. When this process was started as the sandbox's supervisor (its
/// first argument is [`SUPERVISOR_ARG`]), runs the supervisor and returns its exit code;
/// when it was started as the sandbox's helper (its first argument is [`EXEC_ARG`]), applies the sandbox's seccomp filter to itself and
/// executes the command that follows (returning only when that fails); otherwise registers
/// the running executable as the supervisor program and returns `None`.
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     if let Some(code) = sandbox::sandbox_supervisor_entry() {
///         return code;
///     }
///     // ... the program itself
///     std::process::ExitCode::SUCCESS
/// }
/// ```
pub fn sandbox_supervisor_entry() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    let first = args.next();
    if first.as_deref() == Some(OsStr::new(EXEC_ARG)) {
        return Some(exec_filtered(args.collect()));
    }
    if first.as_deref() != Some(OsStr::new(SUPERVISOR_ARG)) {
        if let Ok(exe) = std::env::current_exe() {
            set_supervisor_program(exe);
        }
        return None;
    }
    Some(match Config::from_args(args.collect()) {
        Some(config) => SupervisorLoop::new(config).run(),
        None => {
            eprintln!(
                "usage: {SUPERVISOR_ARG} BASH INLINE GRACE_MS (requests on a socket as stdin)"
            );
            ExitCode::from(2)
        }
    })
}

/// The helper inside bubblewrap: `SOCKETS -- PROGRAM ARGS...`. Applies the seccomp filter
/// to this process (bubblewrap has set up the namespaces and mounts and dropped every
/// capability), then becomes PROGRAM, which inherits the filter, as does everything it
/// starts (the supervisor and its commands, or a command of its own).
fn exec_filtered(args: Vec<OsString>) -> ExitCode {
    let mut it = args.into_iter();
    let sockets = it
        .next()
        .and_then(|s| s.to_str().and_then(crate::filter::Sockets::from_arg));
    let separated = it.next().as_deref() == Some(OsStr::new("--"));
    let rest: Vec<OsString> = it.collect();
    let (Some(sockets), true, Some(program)) = (sockets, separated, rest.first()) else {
        eprintln!("usage: {EXEC_ARG} private|none|host -- PROGRAM [ARGS...]");
        return ExitCode::from(2);
    };
    if let Err(e) = crate::filter::apply(sockets) {
        eprintln!("agent-tools sandbox: {e}");
        return ExitCode::from(126);
    }
    let e = Command::new(program).args(&rest[1..]).exec();
    eprintln!(
        "agent-tools sandbox: cannot run {}: {e}",
        Path::new(program).display()
    );
    ExitCode::from(127)
}

/// The supervisor's arguments.
struct Config {
    bash: PathBuf,
    inline: OsString,
    grace: Duration,
}

impl Config {
    fn from_args(args: Vec<OsString>) -> Option<Config> {
        let [bash, inline, grace] = <[OsString; 3]>::try_from(args).ok()?;
        let grace = grace.to_str()?.parse().ok().map(Duration::from_millis)?;
        Some(Config {
            bash: bash.into(),
            inline,
            grace,
        })
    }
}

/// How the supervisor ends what commands left behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sweep {
    /// `kill(-1)`: the sandbox's pid namespace holds nothing else
    Namespace,
    /// Every descendant: this process is their subreaper
    Descendants,
}

/// A command whose group leader runs.
struct Job {
    id: Vec<u8>,
    pgid: Pid,
    pidfd: OwnedFd,
}

/// A command whose leader exited while others of its group lived on: TERM, the grace
/// period, then KILL until the group is gone (or five more seconds pass).
struct Cleaner {
    id: Vec<u8>,
    pgid: Pid,
    status: i32,
    killed_at: Option<Instant>,
    started: Instant,
}

/// How often a cleaner looks at its group.
const CLEAN_EVERY: Duration = Duration::from_millis(10);
/// How long a cleaner keeps sending KILL.
const KILL_FOR: Duration = Duration::from_secs(5);
/// How often a subreaper with commands running collects exited orphans.
const REAP_EVERY: Duration = Duration::from_secs(1);

struct SupervisorLoop {
    config: Config,
    jobs: Vec<Job>,
    cleaners: Vec<Cleaner>,
    /// Commands whose group is gone, not reported yet
    finished: Vec<(Vec<u8>, i32)>,
    /// Requests read and not yet complete
    input: Vec<u8>,
    /// Descriptors received with requests, in order: two per `run`
    fds: VecDeque<OwnedFd>,
    /// `kill(-1)` only as the sandbox's supervisor (pid 2 under bubblewrap's init), where
    /// it reaches nothing else; anywhere else it would kill every process of the user
    sweep: Sweep,
}

impl SupervisorLoop {
    fn new(config: Config) -> SupervisorLoop {
        let init = std::fs::read_to_string("/proc/1/comm").unwrap_or_default();
        let sweep = if getpid().as_raw_nonzero().get() == 2 && init.trim_end() == "bwrap" {
            Sweep::Namespace
        } else {
            // Orphans of commands come here, not to init: they stay findable.
            let _ = rustix::process::set_child_subreaper(Some(getpid()));
            Sweep::Descendants
        };
        SupervisorLoop {
            config,
            jobs: Vec::new(),
            cleaners: Vec::new(),
            finished: Vec::new(),
            input: Vec::new(),
            fds: VecDeque::new(),
            sweep,
        }
    }

    fn run(mut self) -> ExitCode {
        let code = self.serve();
        // The host ended the instance or is gone: nothing of any command outlives it.
        for job in &self.jobs {
            let _ = kill_process_group(job.pgid, Signal::KILL);
        }
        for c in &self.cleaners {
            let _ = kill_process_group(c.pgid, Signal::KILL);
        }
        self.sweep_all();
        code
    }

    fn serve(&mut self) -> ExitCode {
        if reply(b"ready").is_err() {
            return ExitCode::FAILURE;
        }
        let stdin = std::io::stdin();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let ready: Vec<bool> = {
                let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(self.jobs.len() + 1);
                fds.push(PollFd::new(&stdin, PollFlags::IN));
                fds.extend(
                    self.jobs
                        .iter()
                        .map(|j| PollFd::new(&j.pidfd, PollFlags::IN)),
                );
                // Cleaners look at their groups often; a subreaper with commands running
                // collects its orphans now and then.
                let timeout = if !self.cleaners.is_empty() {
                    Some(Timespec {
                        tv_sec: 0,
                        tv_nsec: CLEAN_EVERY.as_nanos() as _,
                    })
                } else if self.sweep == Sweep::Descendants && !self.jobs.is_empty() {
                    Some(Timespec {
                        tv_sec: REAP_EVERY.as_secs() as _,
                        tv_nsec: 0,
                    })
                } else {
                    None
                };
                match poll(&mut fds, timeout.as_ref()) {
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(_) => return ExitCode::FAILURE,
                }
                fds.iter().map(|f| !f.revents().is_empty()).collect()
            };
            // Exits first: a request may concern a command that just ended.
            let ended: Vec<usize> = (0..self.jobs.len())
                .filter(|i| ready.get(i + 1).copied().unwrap_or(false))
                .collect();
            for i in ended.into_iter().rev() {
                let job = self.jobs.swap_remove(i);
                let status = exit_status(&job.pidfd);
                self.reap_orphans();
                self.leader_exited(job, status);
            }
            self.reap_orphans();
            if !self.clean() {
                return ExitCode::FAILURE;
            }
            if ready.first().copied().unwrap_or(false) {
                match receive(stdin.as_fd(), &mut buf, &mut self.fds) {
                    Ok(0) => return ExitCode::SUCCESS,
                    Ok(n) => self.input.extend_from_slice(&buf[..n]),
                    Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
                    Err(_) => return ExitCode::FAILURE,
                }
                if !self.requests() {
                    return ExitCode::FAILURE;
                }
            }
        }
    }

    /// As a subreaper, collects the exited orphans of commands (never a running command's
    /// leader, whose status its pidfd gives): a zombie still counts as a member of its
    /// process group, so an uncollected one would keep a command from ending.
    fn reap_orphans(&self) {
        if self.sweep != Sweep::Descendants {
            return;
        }
        for child in crate::reaper::children() {
            if self
                .jobs
                .iter()
                .any(|j| j.pgid.as_raw_nonzero().get() == child)
            {
                continue;
            }
            if let Some(pid) = Pid::from_raw(child) {
                let _ = waitid(
                    WaitId::Pid(pid),
                    WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
                );
            }
        }
    }

    /// Ends everything commands left behind, and collects it.
    fn sweep_all(&self) {
        match self.sweep {
            Sweep::Namespace => {
                // kill(-1), which in a pid namespace reaches only that namespace's
                // processes (rustix signals the group `-pid`, so group 1 means -1).
                if let Some(all) = Pid::from_raw(1) {
                    let _ = kill_process_group(all, Signal::KILL);
                }
            }
            Sweep::Descendants => {
                // Usually nothing is left, which one small read tells.
                if crate::reaper::has_children() {
                    crate::reaper::kill_descendants(getpid().as_raw_nonzero().get(), true);
                }
            }
        }
    }

    /// Handles every complete request read so far; false when the host is gone.
    fn requests(&mut self) -> bool {
        loop {
            let Some((request, used)) = parse(&self.input) else {
                return true;
            };
            self.input.drain(..used);
            let ok = match request {
                Request::Run(run) => match (self.fds.pop_front(), self.fds.pop_front()) {
                    (Some(output), Some(stdin)) => self.start(run, output, stdin),
                    // A request without its descriptors: it cannot even say why.
                    _ => self.report(&run.id, 127),
                },
                Request::Kill { id, signal } => {
                    let pgid = self
                        .jobs
                        .iter()
                        .map(|j| (&j.id, j.pgid))
                        .chain(self.cleaners.iter().map(|c| (&c.id, c.pgid)))
                        .find(|(job, _)| **job == id)
                        .map(|(_, pgid)| pgid);
                    if let Some(pgid) = pgid {
                        let _ = kill_process_group(pgid, signal);
                    }
                    true
                }
                Request::Invalid => true,
            };
            if !ok {
                return false;
            }
        }
    }

    /// Starts one command with `output` as its stdout and stderr and `stdin` as its stdin
    /// (`/dev/null`, or the pipe for its working directory, which its start-up code moves
    /// away from stdin); false when the host is gone.
    fn start(&mut self, run: Run, output: OwnedFd, stdin: OwnedFd) -> bool {
        let dir = PathBuf::from(OsString::from_vec(run.dir));
        let mut cmd = Command::new(&self.config.bash);
        cmd.arg("-c")
            .arg(&self.config.inline)
            .arg("bash")
            .arg(OsStr::from_bytes(&run.command))
            .current_dir(&dir)
            .process_group(0);
        for kv in &run.vars {
            match kv.iter().position(|&b| b == b'=') {
                Some(eq) => {
                    cmd.env(
                        OsStr::from_bytes(&kv[..eq]),
                        OsStr::from_bytes(&kv[eq + 1..]),
                    );
                }
                None => {
                    cmd.env_remove(OsStr::from_bytes(kv));
                }
            }
        }
        let note = output.try_clone().ok();
        let started = output
            .try_clone()
            .map(|err| {
                cmd.stdin(Stdio::from(stdin))
                    .stdout(Stdio::from(output))
                    .stderr(Stdio::from(err))
            })
            .and_then(Command::spawn);
        let child = match started {
            Ok(child) => child,
            Err(e) => return self.refuse(&run.id, note, &dir, &e),
        };
        let Some(pid) = Pid::from_raw(child.id() as i32) else {
            return self.report(&run.id, 127);
        };
        // The child is not reaped before its pidfd exists, so the id cannot be reused.
        let pidfd = match pidfd_open(pid, PidfdFlags::empty()) {
            Ok(fd) => fd,
            Err(_) => {
                let _ = kill_process_group(pid, Signal::KILL);
                let _ = waitid(WaitId::Pid(pid), WaitIdOptions::EXITED);
                return self.report(&run.id, 128 + 9);
            }
        };
        self.jobs.push(Job {
            id: run.id,
            pgid: pid,
            pidfd,
        });
        true
    }

    /// A command that could not start: says why in its output, as bash would have.
    fn refuse(
        &mut self,
        id: &[u8],
        output: Option<OwnedFd>,
        dir: &Path,
        e: &std::io::Error,
    ) -> bool {
        let enterable = std::fs::read_dir(dir).is_ok();
        let (message, code) = if enterable {
            (
                format!(
                    "The command could not start inside the sandbox: {}: {e}\n",
                    self.config.bash.display()
                ),
                127,
            )
        } else {
            (
                format!(
                    "The working directory {} cannot be entered inside the sandbox.\n",
                    dir.display()
                ),
                126,
            )
        };
        if let Some(fd) = output {
            let _ = File::from(fd).write_all(message.as_bytes());
        }
        self.report(id, code)
    }

    /// The group leader of `job` exited with `status`: the command is done when nothing else
    /// of its group lives, otherwise its cleaner starts.
    fn leader_exited(&mut self, job: Job, status: i32) {
        if kill_process_group(job.pgid, Signal::TERM).is_ok() {
            self.cleaners.push(Cleaner {
                id: job.id,
                pgid: job.pgid,
                status,
                killed_at: None,
                started: Instant::now(),
            });
        } else {
            self.finished.push((job.id, status));
        }
    }

    /// Advances every cleaner and reports what is done; false when the host is gone.
    fn clean(&mut self) -> bool {
        let now = Instant::now();
        let grace = self.config.grace;
        let mut done = std::mem::take(&mut self.finished);
        self.cleaners.retain_mut(|c| {
            if test_kill_process_group(c.pgid).is_err() {
                done.push((std::mem::take(&mut c.id), c.status));
                return false;
            }
            match c.killed_at {
                None if now.duration_since(c.started) >= grace => {
                    c.killed_at = Some(now);
                    let _ = kill_process_group(c.pgid, Signal::KILL);
                    true
                }
                None => true,
                Some(at) if now.duration_since(at) >= KILL_FOR => {
                    done.push((std::mem::take(&mut c.id), c.status));
                    false
                }
                Some(_) => {
                    let _ = kill_process_group(c.pgid, Signal::KILL);
                    true
                }
            }
        });
        done.into_iter()
            .all(|(id, status)| self.report(&id, status))
    }

    /// Reports a command's end; when it was the last one, first kills every other process
    /// of the sandbox (what a command started outside its group does not outlive it).
    fn report(&mut self, id: &[u8], status: i32) -> bool {
        if self.jobs.is_empty() && self.cleaners.is_empty() {
            self.sweep_all();
        }
        reply(&[b"x ".as_slice(), id, format!(" {status}").as_bytes()].concat()).is_ok()
    }
}

/// Reads what the host sent: bytes into `buf`, descriptors onto `fds` (each `run` request
/// carries two, attached to its first byte). Works on a pipe too, without descriptors.
fn receive(
    input: std::os::fd::BorrowedFd<'_>,
    buf: &mut [u8],
    fds: &mut VecDeque<OwnedFd>,
) -> Result<usize, rustix::io::Errno> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, ReturnFlags, recvmsg};
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(8))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let received = {
        let mut iov = [std::io::IoSliceMut::new(&mut *buf)];
        recvmsg(input, &mut iov, &mut control, RecvFlags::CMSG_CLOEXEC)
    };
    let msg = match received {
        Ok(msg) => msg,
        Err(rustix::io::Errno::NOTSOCK) => return rustix::io::read(input, buf),
        Err(e) => return Err(e),
    };
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(received) = message {
            fds.extend(received);
        }
    }
    if msg.flags.contains(ReturnFlags::CTRUNC) {
        // Descriptors were lost: requests and descriptors no longer pair up.
        return Err(rustix::io::Errno::PROTO);
    }
    Ok(msg.bytes)
}

/// Reaps the process behind `pidfd`: its exit code, or 128 + the signal that ended it.
fn exit_status(pidfd: &OwnedFd) -> i32 {
    match waitid(WaitId::PidFd(pidfd.as_fd()), WaitIdOptions::EXITED) {
        Ok(Some(st)) => st
            .exit_status()
            .or_else(|| st.terminating_signal().map(|s| 128 + s))
            .unwrap_or(128 + 9),
        _ => 128 + 9,
    }
}

/// Writes one reply line.
fn reply(line: &[u8]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(line)?;
    out.write_all(b"\n")?;
    out.flush()
}

struct Run {
    id: Vec<u8>,
    dir: Vec<u8>,
    vars: Vec<Vec<u8>>,
    command: Vec<u8>,
}

enum Request {
    Run(Run),
    Kill {
        id: Vec<u8>,
        signal: Signal,
    },
    /// Well-formed but meaningless (an unknown operation or signal): skipped
    Invalid,
}

/// Parses the first complete request of `input`: the request and the bytes it used, or
/// `None` while it is incomplete.
fn parse(input: &[u8]) -> Option<(Request, usize)> {
    let mut fields = Fields { input, at: 0 };
    let id = fields.next()?.to_vec();
    let request = match fields.next()? {
        b"run" => {
            let dir = fields.next()?.to_vec();
            let n: usize = std::str::from_utf8(fields.next()?)
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let mut vars = Vec::with_capacity(n);
            for _ in 0..n {
                vars.push(fields.next()?.to_vec());
            }
            let command = fields.next()?.to_vec();
            Request::Run(Run {
                id,
                dir,
                vars,
                command,
            })
        }
        b"kill" => match fields.next()? {
            b"TERM" => Request::Kill {
                id,
                signal: Signal::TERM,
            },
            b"KILL" => Request::Kill {
                id,
                signal: Signal::KILL,
            },
            _ => Request::Invalid,
        },
        _ => Request::Invalid,
    };
    Some((request, fields.at))
}

/// NUL-terminated fields.
struct Fields<'a> {
    input: &'a [u8],
    at: usize,
}

impl<'a> Fields<'a> {
    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = &self.input[self.at..];
        let end = rest.iter().position(|&b| b == 0)?;
        self.at += end + 1;
        Some(&rest[..end])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_request(fields: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        for f in fields {
            out.extend_from_slice(f.as_bytes());
            out.push(0);
        }
        out
    }

    #[test]
    fn requests_parse_only_when_complete() {
        let full = run_request(&["7", "run", "/w", "1", "A=b", "echo hi"]);
        for cut in 0..full.len() {
            assert!(parse(&full[..cut]).is_none(), "cut at {cut}");
        }
        let (req, used) = parse(&full).unwrap();
        assert_eq!(used, full.len());
        let Request::Run(run) = req else {
            panic!("not a run request")
        };
        assert_eq!(run.id, b"7");
        assert_eq!(run.dir, b"/w");
        assert_eq!(run.vars, vec![b"A=b".to_vec()]);
        assert_eq!(run.command, b"echo hi");
    }

    #[test]
    fn kill_requests_and_unknown_ones() {
        let two = [
            run_request(&["12", "kill", "TERM"]),
            run_request(&["0", "dance", "x"]),
        ]
        .concat();
        let (req, used) = parse(&two).unwrap();
        assert!(
            matches!(req, Request::Kill { ref id, signal } if id == b"12" && signal == Signal::TERM)
        );
        let (req, _) = parse(&two[used..]).unwrap();
        assert!(matches!(req, Request::Invalid));
        let (req, _) = parse(&run_request(&["3", "kill", "HUP"])).unwrap();
        assert!(matches!(req, Request::Invalid));
    }

    #[test]
    fn arguments() {
        let args = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let c = Config::from_args(args(&["/bin/bash", "x", "2000"])).unwrap();
        assert_eq!(c.grace, Duration::from_secs(2));
        assert!(Config::from_args(args(&["/bin/bash", "x", "soon"])).is_none());
        assert!(Config::from_args(args(&["/bin/bash", "x", "2000", "/slots"])).is_none());
        assert!(Config::from_args(args(&["/bin/bash"])).is_none());
    }
}
