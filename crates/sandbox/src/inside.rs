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
    /// The scripts of a bash started ahead (`command::prepared_script`), made once: for a
    /// command that reports its working directory, and for one that does not
    prepared: [String; 2],
    grace: Duration,
}

impl Config {
    fn from_args(args: Vec<OsString>) -> Option<Config> {
        let [bash, inline, grace] = <[OsString; 3]>::try_from(args).ok()?;
        let grace = grace.to_str()?.parse().ok().map(Duration::from_millis)?;
        let limits = inline.to_str().is_some_and(crate::command::sets_limits);
        Some(Config {
            bash: bash.into(),
            inline,
            prepared: [
                crate::command::prepared_script(limits, true),
                crate::command::prepared_script(limits, false),
            ],
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
/// The longest command a bash started ahead is given (with its NUL, what a pipe takes in
/// one write, so handing it over never blocks); a longer one starts a bash of its own.
const PREPARED_MAX: usize = 4096;

/// The next command's descriptors and variables, sent ahead (`prep`), and the bash started
/// for it once no command runs.
struct Prep {
    dir: Vec<u8>,
    vars: Vec<Vec<u8>>,
    output: OwnedFd,
    stdin: OwnedFd,
    /// Whether starting its bash was tried
    tried: bool,
    waiting: Option<Waiting>,
}

/// A bash started ahead, waiting for its command.
struct Waiting {
    pid: Pid,
    pidfd: OwnedFd,
    /// Where its command goes (its stdin)
    command: OwnedFd,
}

impl Waiting {
    /// Kills it and collects it.
    fn end(self) {
        let _ = kill_process_group(self.pid, Signal::KILL);
        let _ = waitid(WaitId::PidFd(self.pidfd.as_fd()), WaitIdOptions::EXITED);
    }

    /// Whether it can run `run`: alive, started with the same variables in the same
    /// directory (which was not replaced since and can still be entered), and the command
    /// is short and ASCII (read back by bash whatever the locale).
    fn fits(&self, prep: &Prep, run: &Run) -> bool {
        use rustix::fs::{Access, access, stat};
        if run.vars != prep.vars
            || run.dir != prep.dir
            || run.command.len() >= PREPARED_MAX
            || !run.command.is_ascii()
        {
            return false;
        }
        let dir = Path::new(OsStr::from_bytes(&run.dir));
        let cwd = format!("/proc/{}/cwd", self.pid.as_raw_nonzero());
        let same_dir = match (stat(dir), stat(cwd.as_str())) {
            (Ok(a), Ok(b)) => a.st_dev == b.st_dev && a.st_ino == b.st_ino,
            _ => false,
        };
        same_dir
            && access(dir, Access::EXEC_OK).is_ok()
            && matches!(
                waitid(
                    WaitId::PidFd(self.pidfd.as_fd()),
                    WaitIdOptions::EXITED | WaitIdOptions::NOHANG
                ),
                Ok(None)
            )
    }
}

struct SupervisorLoop {
    config: Config,
    jobs: Vec<Job>,
    cleaners: Vec<Cleaner>,
    /// Commands whose group is gone, not reported yet
    finished: Vec<(Vec<u8>, i32)>,
    /// Requests read and not yet complete
    input: Vec<u8>,
    /// Descriptors received with requests, in order: two per `run` and `prep`
    fds: VecDeque<OwnedFd>,
    /// The next command's, when sent ahead
    prep: Option<Prep>,
    /// Known to have no child, live or zombie: true after a look found none, false again as
    /// soon as anything is started. With no child there is no descendant, and nothing can
    /// be handed to this subreaper, so the look need not be repeated (it is about ten
    /// system calls, and a command's end asked it four times).
    childless: bool,
    /// When exited orphans were last collected
    reaped_at: Instant,
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
            prep: None,
            sweep,
            childless: false,
            reaped_at: Instant::now(),
        }
    }

    fn run(mut self) -> ExitCode {
        let code = self.serve();
        // The host ended the instance or is gone: nothing of any command outlives it, nor
        // the bash waiting for the next one.
        self.discard();
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
            let any_ended = !ended.is_empty();
            for i in ended.into_iter().rev() {
                let job = self.jobs.swap_remove(i);
                let status = exit_status(&job.pidfd);
                self.reap_orphans();
                self.leader_exited(job, status);
            }
            // Orphans are collected when a command ended, while cleaners wait for groups, and
            // now and then; not on every request.
            if any_ended || !self.cleaners.is_empty() || self.reaped_at.elapsed() >= REAP_EVERY {
                self.reap_orphans();
            }
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
            self.prestart();
        }
    }

    /// Starts the bash of the command sent ahead, once no command runs and nothing any
    /// command started is left (so nothing can reach it before its command arrives); tried
    /// once per `prep`.
    fn prestart(&mut self) {
        if !self.jobs.is_empty() || !self.cleaners.is_empty() {
            return;
        }
        if self.prep.as_ref().is_none_or(|p| p.tried) {
            return;
        }
        let alone = match self.sweep {
            // kill(-1, 0): no other process of the namespace but its init.
            Sweep::Namespace => Pid::from_raw(1)
                .is_some_and(|all| test_kill_process_group(all) == Err(rustix::io::Errno::SRCH)),
            Sweep::Descendants => !self.has_children(),
        };
        let Some(prep) = self.prep.as_mut() else {
            return;
        };
        prep.tried = true;
        if alone && !startup_sensitive(&prep.vars) {
            self.childless = false;
            prep.waiting = start_waiting(&self.config, prep);
        }
    }

    /// Ends the bash started ahead, if any, and forgets the descriptors sent ahead.
    fn discard(&mut self) {
        if let Some(w) = self.prep.take().and_then(|p| p.waiting) {
            w.end();
        }
    }

    /// Runs `run` in the bash started ahead when it fits, else starts it as `run` does with
    /// the descriptors sent ahead.
    fn go(&mut self, run: Run, mut prep: Prep) -> bool {
        if let Some(w) = prep.waiting.take() {
            if w.fits(&prep, &run) {
                let mut text = run.command.clone();
                text.push(0);
                if rustix::io::write(&w.command, &text) == Ok(text.len()) {
                    self.jobs.push(Job {
                        id: run.id,
                        pgid: w.pid,
                        pidfd: w.pidfd,
                    });
                    return true;
                }
            }
            w.end();
        }
        self.start(run, prep.output, prep.stdin)
    }

    /// As a subreaper, collects the exited orphans of commands (never a running command's
    /// leader, whose status its pidfd gives): a zombie still counts as a member of its
    /// process group, so an uncollected one would keep a command from ending.
    fn reap_orphans(&mut self) {
        if self.sweep != Sweep::Descendants {
            return;
        }
        self.reaped_at = Instant::now();
        for child in self.children() {
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

    /// Whether this process is known to have no child (see `childless`), after one cheap
    /// look when that is not known yet.
    fn known_childless(&mut self) -> bool {
        self.childless = self.childless || no_child();
        self.childless
    }

    /// This process's children, live or zombie (see `childless`).
    fn children(&mut self) -> Vec<i32> {
        if self.known_childless() {
            return Vec::new();
        }
        let children = crate::reaper::children();
        self.childless = children.is_empty();
        children
    }

    /// Whether this process has a child, live or zombie (see `childless`).
    fn has_children(&mut self) -> bool {
        if self.known_childless() {
            return false;
        }
        let any = crate::reaper::has_children();
        self.childless = !any;
        any
    }

    /// Ends everything commands left behind, and collects it.
    fn sweep_all(&mut self) {
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
                if self.has_children() {
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
                Request::Run(run) => {
                    // What was sent ahead is not for this command (nor for any later one).
                    self.discard();
                    match (self.fds.pop_front(), self.fds.pop_front()) {
                        (Some(output), Some(stdin)) => self.start(run, output, stdin),
                        // A request without its descriptors: it cannot even say why.
                        _ => self.report(&run.id, 127),
                    }
                }
                Request::Go(run) => match self.prep.take() {
                    Some(prep) => self.go(run, prep),
                    None => self.report(&run.id, 127),
                },
                Request::Prep(run) => {
                    self.discard();
                    if let (Some(output), Some(stdin)) =
                        (self.fds.pop_front(), self.fds.pop_front())
                    {
                        self.prep = Some(Prep {
                            dir: run.dir,
                            vars: run.vars,
                            output,
                            stdin,
                            tried: false,
                            waiting: None,
                        });
                    }
                    true
                }
                Request::Drop => {
                    self.discard();
                    true
                }
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
                Request::Join { id, files } => {
                    // Only this thread moves: the supervisor has no other, and what it
                    // starts from now on is born inside. A count beyond the descriptors
                    // that came is a refusal, not a wait for them.
                    let take = files.min(self.fds.len());
                    let mut moved = files > 0 && take == files;
                    for fd in self.fds.drain(..take) {
                        moved &= rustix::io::write(&fd, b"0") == Ok(1);
                    }
                    let code = if moved { "0" } else { "1" };
                    reply(&[b"x ".as_slice(), &id, b" ", code.as_bytes()].concat()).is_ok()
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
        self.childless = false;
        let dir = PathBuf::from(OsString::from_vec(run.dir));
        let mut cmd = Command::new(&self.config.bash);
        cmd.arg("-c")
            .arg(&self.config.inline)
            .arg("bash")
            .arg(OsStr::from_bytes(&run.command))
            .current_dir(&dir)
            .process_group(0);
        set_vars(&mut cmd, &run.vars);
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
        let Some(pidfd) = pidfd_or_kill(pid) else {
            return self.report(&run.id, 128 + 9);
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
    /// of the sandbox (what a command started outside its group does not outlive it), then
    /// starts the next command's bash: started before the report, it runs on its own while
    /// the report wakes the host (which the kernel otherwise puts on the supervisor's CPU,
    /// where the bash would wait for it).
    fn report(&mut self, id: &[u8], status: i32) -> bool {
        if self.jobs.is_empty() && self.cleaners.is_empty() {
            // With a bash waiting, no command ran since the sweep before it was started.
            if self.prep.as_ref().is_none_or(|p| p.waiting.is_none()) {
                self.sweep_all();
            }
            self.prestart();
        }
        reply(&[b"x ".as_slice(), id, format!(" {status}").as_bytes()].concat()).is_ok()
    }
}

/// Whether this process has no child at all, live or zombie, in one system call: `waitid`
/// for any child, without waiting or collecting, fails with `ECHILD` only then. Its
/// children end with SIGCHLD (what `posix_spawn` gives them, and what an orphan handed to
/// this subreaper gets), which is what `waitid` looks for. Any other answer (a child, or an
/// error) says nothing, and the process table is read as before: after a command's end
/// this is the common case, and it replaces about ten system calls between that end and the
/// start of the next command's bash.
fn no_child() -> bool {
    matches!(
        waitid(
            WaitId::All,
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
        ),
        Err(rustix::io::Errno::CHILD)
    )
}

/// The variables that make bash do more at its start than the start-up code (run a file,
/// trace or echo what it runs): their output and reads would meet the descriptors a bash
/// started ahead has before its command (see `command::prepared_script`), so a command
/// whose environment holds one starts a bash of its own.
const STARTUP_VARS: &[&str] = &[
    "BASH_ENV",
    "ENV",
    "SHELLOPTS",
    "BASHOPTS",
    "POSIXLY_CORRECT",
    "BASH_XTRACEFD",
    "PS4",
];

/// Whether `vars`, or this process's environment, which commands inherit, set one of
/// [`STARTUP_VARS`].
fn startup_sensitive(vars: &[Vec<u8>]) -> bool {
    STARTUP_VARS.iter().any(|name| {
        std::env::var_os(name).is_some()
            || vars.iter().any(|kv| {
                kv.strip_prefix(name.as_bytes())
                    .is_some_and(|rest| rest.first() == Some(&b'='))
            })
    })
}

/// Sets `K=V` variables, and removes `K` ones.
fn set_vars(cmd: &mut Command, vars: &[Vec<u8>]) {
    for kv in vars {
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
}

/// Starts bash for the command `prep` was sent for, with its variables, in its directory and
/// process group, waiting for the command on a pipe (see `command::prepared_script`).
fn start_waiting(config: &Config, prep: &Prep) -> Option<Waiting> {
    use rustix::pipe::{PipeFlags, pipe_with};
    let (read, write) = pipe_with(PipeFlags::CLOEXEC).ok()?;
    // Ours only: bash's end blocks.
    rustix::fs::fcntl_setfl(&write, rustix::fs::OFlags::NONBLOCK).ok()?;
    let cwd_pipe = prep
        .vars
        .iter()
        .rev()
        .find(|kv| kv.starts_with(b"AGENT_TOOLS_CWD_STDIN=") || **kv == b"AGENT_TOOLS_CWD_STDIN")
        .is_some_and(|kv| kv.as_slice() == b"AGENT_TOOLS_CWD_STDIN=1");
    let (stdout, stderr) = if cwd_pipe {
        (prep.stdin.try_clone().ok()?, prep.output.try_clone().ok()?)
    } else {
        (prep.output.try_clone().ok()?, prep.output.try_clone().ok()?)
    };
    let mut cmd = Command::new(&config.bash);
    cmd.arg("-c")
        .arg(&config.prepared[usize::from(!cwd_pipe)])
        .arg("bash")
        .arg(&config.inline)
        .current_dir(OsStr::from_bytes(&prep.dir))
        .process_group(0)
        .stdin(Stdio::from(read))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr));
    set_vars(&mut cmd, &prep.vars);
    for name in crate::command::STARTUP_ONLY {
        cmd.env_remove(name);
    }
    let child = cmd.spawn().ok()?;
    let pid = Pid::from_raw(child.id() as i32)?;
    let waiting = pidfd_or_kill(pid).map(|pidfd| Waiting {
        pid,
        pidfd,
        command: write,
    })?;
    if apply_limits(pid, &prep.vars) {
        Some(waiting)
    } else {
        waiting.end();
        None
    }
}

/// Sets on the bash `pid`, started ahead and not yet given its command, the resource limits
/// the start-up code of a command's own bash sets from `AGENT_TOOLS_LIMITS` (the last of
/// `vars`): no core files, the address space (KiB), CPU seconds (soft, and hard one more)
/// and processes, each hard and soft. As there, a limit the kernel must refuse (a soft
/// limit above the hard one, or a hard limit above the one this process, and so that bash,
/// has) is left as it is. Any other failure, whatever its error, returns false: that bash
/// must not run a command.
fn apply_limits(pid: Pid, vars: &[Vec<u8>]) -> bool {
    use rustix::process::{Resource, Rlimit, getrlimit, prlimit};
    let Some(value) = vars
        .iter()
        .rev()
        .find_map(|kv| kv.strip_prefix(b"AGENT_TOOLS_LIMITS=".as_slice()))
        .filter(|v| !v.is_empty())
    else {
        return true;
    };
    // Each field empty (no limit) or a number. Anything else, which the host never sends,
    // gets no guess: that bash is not used.
    let field = |p: &[u8]| -> Option<Option<u64>> {
        if p.is_empty() {
            return Some(None);
        }
        std::str::from_utf8(p).ok()?.parse().ok().map(Some)
    };
    let fields: Option<Vec<Option<u64>>> = value.split(|&b| b == b':').map(field).collect();
    let Some(&[memory, cpu, nproc]) = fields.as_deref() else {
        return false;
    };
    let set = |resource: Resource, current: u64, maximum: u64| -> bool {
        let limit = Rlimit {
            current: Some(current),
            maximum: Some(maximum),
        };
        prlimit(Some(pid), resource, limit).is_ok() || {
            // Refused: fine only where `ulimit` would have been refused too.
            let inherited = getrlimit(resource).maximum.unwrap_or(u64::MAX);
            current > maximum || maximum > inherited
        }
    };
    let mut ok = set(Resource::Core, 0, 0);
    if let Some(kib) = memory {
        let bytes = kib.saturating_mul(1024);
        ok &= set(Resource::As, bytes, bytes);
    }
    if let Some(seconds) = cpu {
        // `ulimit -S -t T` under the inherited hard limit, then `ulimit -H -t T+1`.
        let hard = getrlimit(Resource::Cpu).maximum.unwrap_or(u64::MAX);
        ok &= set(Resource::Cpu, seconds, hard);
        ok &= set(Resource::Cpu, seconds, seconds.saturating_add(1));
    }
    if let Some(n) = nproc {
        ok &= set(Resource::Nproc, n, n);
    }
    ok
}

/// The pidfd of the child `pid`, just started (not reaped before its pidfd exists, so its id
/// cannot have been reused); when none can be had, the child's group is killed and the
/// child collected.
fn pidfd_or_kill(pid: Pid) -> Option<OwnedFd> {
    match pidfd_open(pid, PidfdFlags::empty()) {
        Ok(fd) => Some(fd),
        Err(_) => {
            let _ = kill_process_group(pid, Signal::KILL);
            let _ = waitid(WaitId::Pid(pid), WaitIdOptions::EXITED);
            None
        }
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
    /// A command for the bash started ahead (`go`: a `run` without descriptors)
    Go(Run),
    /// The next command's descriptors and variables, ahead (`prep`: no command)
    Prep(Run),
    /// Forget what was sent ahead
    Drop,
    Kill {
        id: Vec<u8>,
        signal: Signal,
    },
    /// Move this process into a cgroup: write `0` to each of the `files` descriptors sent
    /// with it (see `resources::Cgroup::own_move_files`)
    Join {
        id: Vec<u8>,
        files: usize,
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
        op @ (b"run" | b"go" | b"prep") => {
            let dir = fields.next()?.to_vec();
            let n: usize = std::str::from_utf8(fields.next()?)
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            // The count is the host's word: room for what a request can hold, no more.
            let mut vars = Vec::with_capacity(n.min(256));
            for _ in 0..n {
                vars.push(fields.next()?.to_vec());
            }
            let command = match op {
                b"prep" => Vec::new(),
                _ => fields.next()?.to_vec(),
            };
            let run = Run {
                id,
                dir,
                vars,
                command,
            };
            match op {
                b"go" => Request::Go(run),
                b"prep" => Request::Prep(run),
                _ => Request::Run(run),
            }
        }
        b"drop" => Request::Drop,
        b"join" => Request::Join {
            id,
            files: std::str::from_utf8(fields.next()?)
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0),
        },
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

    /// `/proc/PID/limits` as a bash shows it after the start-up code set `limits`, and as a
    /// bash waiting for its command shows it once `apply_limits` set them.
    fn limits_both_ways(limits: &str) -> (String, String) {
        let show = "cat /proc/$$/limits";
        let inline = crate::command::inline_script(false, true);
        let theirs = Command::new("bash")
            .args(["-c", &inline, "bash", show])
            .env("AGENT_TOOLS_LIMITS", limits)
            .output()
            .unwrap();
        let mut child = Command::new("bash")
            .args(["-c", &format!("read -r _; {show}")])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(child.id() as i32).unwrap();
        let vars = vec![
            b"AGENT_TOOLS_LIMITS=ignored".to_vec(),
            format!("AGENT_TOOLS_LIMITS={limits}").into_bytes(),
        ];
        let applied = apply_limits(pid, &vars);
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), b"go\n").unwrap();
        let ours = child.wait_with_output().unwrap();
        assert!(applied, "{limits}");
        (
            String::from_utf8_lossy(&theirs.stdout).into_owned(),
            String::from_utf8_lossy(&ours.stdout).into_owned(),
        )
    }

    #[test]
    fn a_waiting_bash_gets_the_limits_its_start_up_code_would_set() {
        let hard = |r| {
            rustix::process::getrlimit(r)
                .maximum
                .map_or(u64::MAX, |m| m)
        };
        let above_cpu = hard(rustix::process::Resource::Cpu).saturating_add(5);
        let cases = [
            "".to_owned(),
            "::".to_owned(),
            "1048576:7:500".to_owned(),
            "4194304::".to_owned(),
            ":3:".to_owned(),
            "::100000".to_owned(),
            format!(":{above_cpu}:"),
        ];
        for limits in cases {
            let (theirs, ours) = limits_both_ways(&limits);
            assert!(theirs.contains("Max core file size"), "{limits}: {theirs}");
            assert_eq!(ours, theirs, "AGENT_TOOLS_LIMITS={limits}");
        }
    }

    #[test]
    fn a_child_alive_or_exited_and_not_collected_is_a_child() {
        // The supervisor takes "no child" for "nothing of any command is left": a live child
        // and a zombie must both count. (That a process without children gets `true` is not
        // asserted here: other tests of this process may have children of their own.)
        let mut live = Command::new("sleep").arg("5").spawn().unwrap();
        assert!(!no_child());
        live.kill().unwrap();
        live.wait().unwrap();
        let mut exited = Command::new("true").spawn().unwrap();
        let pid = Pid::from_raw(exited.id() as i32).unwrap();
        // Exited, not collected: a zombie, until `wait` below.
        while std::fs::read_to_string(format!("/proc/{}/stat", pid.as_raw_nonzero()))
            .map(|s| !s.contains(") Z "))
            .unwrap_or(false)
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!no_child());
        exited.wait().unwrap();
    }

    #[test]
    fn a_limit_that_is_no_number_gets_no_waiting_bash() {
        let mut child = Command::new("sleep").arg("5").spawn().unwrap();
        let pid = Pid::from_raw(child.id() as i32).unwrap();
        for bad in ["x::", "1:2", ":-1:", "1:2:3:4"] {
            let vars = vec![format!("AGENT_TOOLS_LIMITS={bad}").into_bytes()];
            assert!(!apply_limits(pid, &vars), "{bad}");
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }

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
        let (req, _) = parse(&run_request(&["0", "join", "2"])).unwrap();
        assert!(matches!(req, Request::Join { ref id, files: 2 } if id == b"0"));
        assert!(parse(&run_request(&["0", "join"])).is_none(), "incomplete");
        // A count no request could hold is incomplete, not an allocation of that size.
        let huge = usize::MAX.to_string();
        assert!(parse(&run_request(&["1", "run", "/", &huge, "A=1"])).is_none());
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
