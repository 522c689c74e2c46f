//! A long-running program started inside a sandbox with pipes to talk to it: a language
//! server, which runs project code by design (build scripts, proc macros, `go list`,
//! plugins), so it gets the workspace sandbox a person's approved command gets — writes only
//! in the working directories and the temporary directory, no network, the scrubbed
//! environment, the resource limits.
//!
//! Under bubblewrap the program runs behind the sandbox's helper (the seccomp filter), or,
//! without a helper program, behind bubblewrap's own `--seccomp` with its stdin handed over
//! as stderr (its stderr is then lost). The rlimits are set by a small `sh` step before the
//! program. bubblewrap is started from the process's keeper thread (its `--die-with-parent`
//! follows the thread that forked it); under Landlock, from a restricted thread.

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

use tool_core::{ProcessGroup, ToolError};

use crate::launch::{Filter, Launch, Prepared};
use crate::policy::SandboxPolicy;

/// The `sh` step that sets the rlimits (`$1`: `AS_KIB:CPU:NPROC`) and runs the rest.
const LIMITS_SCRIPT: &str = r#"l=$1; shift
a=${l%%:*}; l=${l#*:}; t=${l%%:*}; n=${l#*:}
ulimit -c 0 2>/dev/null
[ -z "$a" ] || ulimit -v "$a" 2>/dev/null
[ -z "$t" ] || { ulimit -S -t "$t"; ulimit -H -t "$((t + 1))"; } 2>/dev/null
[ -z "$n" ] || ulimit -u "$n" 2>/dev/null
exec "$@""#;

/// A program running in a sandbox.
#[derive(Debug)]
pub struct SandboxedProgram {
    /// The process started (bubblewrap, or the program itself)
    pub child: Child,
    /// Its process group, which holds everything it starts outside bubblewrap (under
    /// bubblewrap its pid namespace ends with it)
    pub group: ProcessGroup,
    /// The program's standard input
    pub stdin: File,
    /// The program's standard output
    pub stdout: File,
    /// The program's standard error, when it is kept
    pub stderr: Option<File>,
    /// How it is sandboxed: `bubblewrap (workspace-write, network off)`, `none`, ...
    pub description: String,
    /// What the sandbox needs kept while the program runs: hold it as long as the child
    pub hold: SandboxHold,
}

/// The policy of a running sandboxed program, and the placeholders over missing protected
/// names it binds: removed once this is dropped and no other sandbox binds them.
#[derive(Debug)]
pub struct SandboxHold(#[allow(dead_code)] Option<Arc<SandboxPolicy>>);

/// A program keeps its stdin (its protocol): our helper applies the filter when there is
/// one, and its stderr goes to `/dev/null`.
const FILTER: Filter = Filter::Helper {
    stderr_to_output: false,
};

/// Starts `program` with `args` in `cwd` under `prepared`, with `env` set on top of the
/// sandbox's environment.
pub fn spawn_program(
    prepared: &Prepared,
    program: &Path,
    args: &[String],
    cwd: &Path,
    env: &[(String, String)],
) -> Result<SandboxedProgram, ToolError> {
    let fail = |e: &dyn std::fmt::Display| {
        ToolError::respond(format!("could not start {}: {e}", program.display()))
    };
    let launch = &prepared.launch;
    let mut argv: Vec<OsString> = launch.prefix_for(cwd, &[], FILTER);
    if let Some(policy) = launch.policy() {
        argv.extend(
            ["/bin/sh", "-c", LIMITS_SCRIPT, "sh"]
                .iter()
                .map(OsString::from),
        );
        argv.push(policy.limits.rlimits(None).into());
    }
    argv.push(program.as_os_str().to_owned());
    argv.extend(args.iter().map(OsString::from));
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..]).current_dir(cwd);
    if let Some(policy) = launch.policy() {
        cmd.env_clear();
        cmd.envs(policy.env.iter().map(|(k, v)| (k, v)));
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd.stdout(Stdio::piped());
    // Without a helper program bubblewrap reads the filter from stdin: the program's stdin
    // goes in as stderr (the prefix's shell puts it back).
    let mut stdin_writer: Option<File> = None;
    if launch.filter_on_stdin(FILTER) {
        let (read, write) =
            rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| fail(&e))?;
        cmd.stdin(launch.filter_stdin()?);
        cmd.stderr(Stdio::from(read));
        stdin_writer = Some(File::from(write));
    } else {
        cmd.stdin(Stdio::piped());
        cmd.stderr(Stdio::piped());
    }
    let spawned = match launch {
        Launch::Direct => ProcessGroup::spawn_std(&mut cmd),
        Launch::Bubblewrap(_) => crate::launch::on_keeper(move || {
            let spawned = ProcessGroup::spawn_std(&mut cmd);
            drop(cmd);
            spawned
        })?,
        #[cfg(target_os = "linux")]
        Launch::Landlock(policy) => crate::landlock::run_restricted(policy, move || {
            let spawned = ProcessGroup::spawn_std(&mut cmd);
            drop(cmd);
            spawned
        })?,
    };
    let (mut child, group) = spawned.map_err(|e| fail(&e))?;
    let stdin = match (stdin_writer, child.stdin.take()) {
        (Some(w), _) => Some(w),
        (None, Some(s)) => Some(File::from(OwnedFd::from(s))),
        (None, None) => None,
    };
    let stdout = child.stdout.take().map(|s| File::from(OwnedFd::from(s)));
    let stderr = child.stderr.take().map(|s| File::from(OwnedFd::from(s)));
    let (Some(stdin), Some(stdout)) = (stdin, stdout) else {
        group.kill();
        let _ = child.kill();
        let _ = child.wait();
        return Err(ToolError::fatal(
            "internal error: the program's pipes are missing",
        ));
    };
    Ok(SandboxedProgram {
        child,
        group,
        stdin,
        stdout,
        stderr,
        description: prepared.description.clone(),
        hold: SandboxHold(match launch {
            Launch::Bubblewrap(p) => Some(Arc::clone(p)),
            _ => None,
        }),
    })
}
