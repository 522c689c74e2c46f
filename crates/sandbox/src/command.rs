//! One shell command as both ways of running it see it (from this process, the `process`
//! module; under a supervisor, the `supervisor` module): what to run, the pipe ends it gets,
//! the environment and start-up code bash runs it with, how it ended, and the grace period
//! between TERM and KILL.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::resources::{LimitHit, ResourceLimits};

/// After SIGTERM, the group has this long before SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// The start-up code bash runs before the command (see [`inline_script`]): it reports the
/// working directory at exit, so `cd` persists across calls, without touching the command
/// text itself (which is passed to `bash -c` as one argument, never quoted into a string).
///
/// The report goes to a pipe that arrives as stdin (`AGENT_TOOLS_CWD_STDIN=1`), so no file
/// is involved: the start-up code moves it to a descriptor bash picks (10 or above, clear
/// of the ones scripts use) and gives the command `/dev/null` as stdin. The directory is
/// written only when it changed, which keeps the common call cheap.
///
/// In a sandbox it also sets the resource limits (`AGENT_TOOLS_LIMITS`, see the `resources`
/// module), hard and soft, before the command: no sandboxed process can raise them again.
const STARTUP: &str = r#"__agent_tools_start=$PWD
if [ "${AGENT_TOOLS_CWD_STDIN-}" = 1 ]; then
  exec {__agent_tools_cwd}>&0 </dev/null
  trap '[ "$PWD" = "$__agent_tools_start" ] || builtin pwd -P >&"$__agent_tools_cwd" 2>/dev/null' EXIT
fi
"#;

/// The part of the start-up code that sets the resource limits (`AGENT_TOOLS_LIMITS`:
/// `AS_KIB:CPU_SECONDS:NPROC`, each may be empty). Left out where no limits can apply (an
/// unsandboxed instance) and in a bash started ahead, whose supervisor sets the same limits
/// on it before its command arrives (`inside::apply_limits`): bash parses and runs it at
/// every start, about 50 microseconds of a call that costs about a millisecond.
const LIMITS: &str = r#"if [ -n "${AGENT_TOOLS_LIMITS-}" ]; then
  __agent_tools_l=$AGENT_TOOLS_LIMITS
  __agent_tools_a=${__agent_tools_l%%:*}; __agent_tools_l=${__agent_tools_l#*:}
  __agent_tools_t=${__agent_tools_l%%:*}; __agent_tools_n=${__agent_tools_l#*:}
  ulimit -c 0 2>/dev/null
  [ -z "$__agent_tools_a" ] || ulimit -v "$__agent_tools_a" 2>/dev/null
  [ -z "$__agent_tools_t" ] || { ulimit -S -t "$__agent_tools_t"; ulimit -H -t "$((__agent_tools_t + 1))"; } 2>/dev/null
  [ -z "$__agent_tools_n" ] || ulimit -u "$__agent_tools_n" 2>/dev/null
  unset __agent_tools_l __agent_tools_a __agent_tools_t __agent_tools_n
fi
"#;

/// The last line of the start-up code: nothing of it reaches the command.
const UNSET: &str = "unset BASH_ENV AGENT_TOOLS_CWD_STDIN AGENT_TOOLS_LIMITS\n";

/// The environment every command gets on top of the inherited one: no editor, no pager.
pub(crate) const ENV: &[(&str, &str)] = &[
    ("GIT_EDITOR", "true"),
    ("GIT_PAGER", "cat"),
    ("PAGER", "cat"),
    ("MANPAGER", "cat"),
    ("SYSTEMD_PAGER", ""),
    ("LESS", "-FRX"),
    ("AGENT_TOOLS", "1"),
];

/// What to run.
#[derive(Debug, Clone)]
pub struct RunSpec {
    /// The command, passed to `bash -c` as one argument
    pub command: String,
    /// The working directory
    pub cwd: PathBuf,
    /// Extra environment variables
    pub env: Vec<(String, String)>,
}

/// The pipe ends a command gets.
#[derive(Debug)]
pub struct Io {
    /// Its stdout and stderr: a spool's pipe
    pub output: OwnedFd,
    /// Where it reports its working directory at exit, if wanted
    pub cwd: Option<OwnedFd>,
    /// Which supervisor has these ends already, with a bash started for them
    pub(crate) ticket: Option<Ticket>,
}

/// A supervisor that was sent a command's pipe ends ahead (see the `supervisor` module).
pub(crate) trait Holder: Send + Sync + std::fmt::Debug {
    /// Forgets the ends sent ahead as `serial`, if it still holds them.
    fn discard(&self, serial: u64);
}

/// Pipe ends sent ahead to a supervisor: a call that runs there with them sends only its
/// command; dropped unused, they are forgotten there.
#[derive(Debug)]
pub(crate) struct Ticket {
    pub(crate) holder: std::sync::Weak<dyn Holder>,
    pub(crate) serial: u64,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        if let Some(holder) = self.holder.upgrade() {
            holder.discard(self.serial);
        }
    }
}

impl Io {
    /// The ends `output` and `cwd`.
    pub fn new(output: OwnedFd, cwd: Option<OwnedFd>) -> Io {
        Io {
            output,
            cwd,
            ticket: None,
        }
    }
}

/// A command's pipes: the ends it gets and ours (see `Instances::pipes`).
#[derive(Debug)]
pub struct Pipes {
    /// The read end of its output pipe
    pub output: OwnedFd,
    /// The read end of its working-directory pipe, when asked for
    pub cwd: Option<OwnedFd>,
    /// Its ends
    pub io: Io,
}

impl Pipes {
    /// New pipes (close-on-exec), with a working-directory pipe when `reports_cwd`.
    pub fn new(reports_cwd: bool) -> Result<Pipes, tool_core::ToolError> {
        use rustix::pipe::{PipeFlags, pipe_with};
        let fail = |e: rustix::io::Errno| {
            tool_core::ToolError::fatal(format!("cannot create the command's pipes: {e}"))
        };
        let (output, write) = pipe_with(PipeFlags::CLOEXEC).map_err(fail)?;
        let (cwd, cwd_end) = if reports_cwd {
            let (r, w) = pipe_with(PipeFlags::CLOEXEC).map_err(fail)?;
            (Some(r), Some(w))
        } else {
            (None, None)
        };
        Ok(Pipes {
            output,
            cwd,
            io: Io::new(write, cwd_end),
        })
    }
}

/// The variables a command gets on top of the environment: the spec's, the flag that tells
/// the start-up code its stdin is the working-directory pipe, and the rlimits it sets.
pub(crate) fn command_vars(
    spec: &RunSpec,
    reports_cwd: bool,
    limits: Option<String>,
) -> Vec<(String, String)> {
    let mut vars = spec.env.clone();
    if reports_cwd {
        vars.push(("AGENT_TOOLS_CWD_STDIN".into(), "1".into()));
    }
    if let Some(limits) = limits {
        vars.push(("AGENT_TOOLS_LIMITS".into(), limits));
    }
    vars
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// It exited by itself
    Exited,
    /// The time limit passed and the group was killed
    TimedOut,
    /// The call was cancelled and the group was killed
    Cancelled,
    /// The persistent sandbox ended while the command ran (the command died with it)
    SandboxLost,
}

/// The status bash reports for a command SIGXCPU ended (its CPU time limit).
const SIGXCPU_STATUS: i32 = 128 + 24;

impl Finished {
    /// A finish with no limit hit.
    pub(crate) fn new(ending: Ending, code: i32) -> Finished {
        Finished {
            ending,
            code,
            limit: None,
        }
    }

    /// Notes the CPU limit of `policy` when the command ended as SIGXCPU ends one.
    pub(crate) fn with_cpu_limit(mut self, limits: Option<&ResourceLimits>) -> Finished {
        if self.limit.is_none()
            && self.code == SIGXCPU_STATUS
            && let Some(cpu) = limits.and_then(|l| l.cpu)
        {
            self.limit = Some(LimitHit::Cpu(cpu));
        }
        self
    }
}

/// The end of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finished {
    /// How it ended
    pub ending: Ending,
    /// The exit code; `128 + signal` when a signal ended it
    pub code: i32,
    /// The resource limit it ran into, when one was hit
    pub limit: Option<LimitHit>,
}

/// The script bash runs with `-c`: the start-up code (with the part that sets the resource
/// limits when `limits`), then the command, which arrives as the next argument (`$1`) and
/// is run with `eval`. With `swap`, it first takes its stdin back
/// from stderr and joins stderr to the output (bubblewrap read the seccomp filter from
/// stdin: see `launch::Filter::SwappedByCommand`).
pub(crate) fn inline_script(swap: bool, limits: bool) -> String {
    let swap = if swap { "exec 0<&2 2>&1\n" } else { "" };
    let limits = if limits { LIMITS } else { "" };
    format!("{swap}{STARTUP}{limits}{UNSET}__agent_tools_c=$1; shift; eval \"$__agent_tools_c\"")
}

/// The script of a bash started before its command is known (see the `inside` module): the
/// start-up code, run with the environment and working directory the command gets, then a
/// wait for the command on stdin, NUL-terminated. The fds it is started with differ from a
/// command's: stdin is the pipe the command arrives on, and with `AGENT_TOOLS_CWD_STDIN=1`
/// stdout is the working-directory pipe (stderr the output), so the start-up code moves that
/// one instead; once the command is read, stdin becomes `/dev/null`. What the command then
/// sees is what [`inline_script`] gives it: the same descriptors, variables, line number
/// (the last line is the same line), `$_`, `$SECONDS` and `$BASH_EXECUTION_STRING` (that
/// script, passed as `$1`). Only its argument list (`ps`) differs.
///
/// It never sets the resource limits: where the command's script does (`limits`), the
/// supervisor sets them on the bash before handing it the command. Nor does it test
/// `AGENT_TOOLS_CWD_STDIN` or unset variables: the supervisor, which knows whether the
/// command reports its directory (`reports_cwd`), picks the script and leaves those
/// variables out of this bash's environment. Blank lines stand in for what is left out,
/// which keeps the line number. Each part left out is bash parsing less at every start.
pub(crate) fn prepared_script(limits: bool, reports_cwd: bool) -> String {
    let mut startup = String::new();
    for line in STARTUP.lines() {
        let inside = line.starts_with("  ");
        let kept = if line.starts_with("if ") || line == "fi" || (inside && !reports_cwd) {
            ""
        } else if line.contains("exec {__agent_tools_cwd}>&0 </dev/null") {
            "  exec {__agent_tools_cwd}>&1 1>&2"
        } else {
            line
        };
        startup.push_str(kept);
        startup.push('\n');
    }
    let blank = if limits {
        "\n".repeat(LIMITS.lines().count())
    } else {
        String::new()
    };
    format!(
        "{startup}{blank}\n__agent_tools_s=$SECONDS; IFS= read -r -d '' __agent_tools_c || exit 125; \
         exec </dev/null; SECONDS=$__agent_tools_s; unset __agent_tools_s; \
         BASH_EXECUTION_STRING=$1; shift; eval \"$__agent_tools_c\""
    )
}

/// The variables the start-up code reads and then unsets, which a bash started ahead is
/// not given (see [`prepared_script`]).
pub(crate) const STARTUP_ONLY: &[&str] =
    &["BASH_ENV", "AGENT_TOOLS_CWD_STDIN", "AGENT_TOOLS_LIMITS"];

/// Whether `inline` (an [`inline_script`]) sets the resource limits.
pub(crate) fn sets_limits(inline: &str) -> bool {
    inline.contains(LIMITS)
}

/// Finds `bash`: `/bin/bash` or `/usr/bin/bash`, else the first on `PATH`.
pub fn bash_path() -> PathBuf {
    for p in ["/bin/bash", "/usr/bin/bash"] {
        if Path::new(p).is_file() {
            return PathBuf::from(p);
        }
    }
    PathBuf::from("bash")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bash_started_ahead_moves_its_stdout_to_the_cwd_report_not_its_stdin() {
        // The start-up code is rewritten line by line: a rewrite that no longer matches
        // would leave the waiting bash taking its command pipe for the report.
        assert!(STARTUP.contains("exec {__agent_tools_cwd}>&0 </dev/null"));
        for limits in [false, true] {
            let prepared = prepared_script(limits, true);
            assert!(prepared.contains("\n  exec {__agent_tools_cwd}>&1 1>&2\n"));
            assert!(prepared.contains("\n  trap '"));
            assert!(!prepared.contains("exec {__agent_tools_cwd}>&0"));
            let plain = prepared_script(limits, false);
            assert!(!plain.contains("__agent_tools_cwd") && !plain.contains("trap"));
            for p in [&prepared, &plain] {
                assert!(!sets_limits(p), "the supervisor sets them");
                assert!(!p.contains("AGENT_TOOLS") && !p.contains("unset BASH_ENV"));
            }
        }
        assert_eq!(
            UNSET,
            format!("unset {}\n", STARTUP_ONLY.join(" ")),
            "the supervisor leaves out what the start-up code unsets"
        );
    }

    #[test]
    fn a_command_runs_on_the_same_line_either_way() {
        // `$LINENO` in the command is the line of the `eval`: the script a bash started ahead
        // runs must put it on the line the command's own script does.
        let cases = [(false, false), (false, true), (true, false), (true, true)];
        for (limits, reports_cwd) in cases {
            let inline = inline_script(false, limits);
            assert_eq!(sets_limits(&inline), limits);
            let eval_line = |s: &str| {
                s.lines()
                    .position(|l| l.contains("eval \"$__agent_tools_c\""))
            };
            assert_eq!(
                eval_line(&prepared_script(limits, reports_cwd)),
                eval_line(&inline),
                "limits: {limits}, reports_cwd: {reports_cwd}"
            );
        }
    }
}
