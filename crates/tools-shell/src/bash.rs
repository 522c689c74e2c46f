//! Bash: runs a command with `bash -c` in its own process group, in the sandbox, with the
//! working directory persisting across calls, a time limit, a capped output that spills
//! whole to a file, semantic exit codes, and background tasks with readiness conditions.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    ApprovedBy, PermissionDecision, Progress, ToolCategory, ToolContext, ToolError, ToolMeta,
    ToolResult, TypedTool, ValidationResult, format_size,
};

use crate::output::{MAX_OUTPUT_CHARS, read_head, truncation_marker};
use crate::permissions;
use crate::session::ShellSession;
use crate::spool::{Caps, OUTPUT_CAP, Spool, Summary};
use crate::tasks::{Readiness, ShellTaskSpec, ShellTasks};
use sandbox::{Ending, Profile, RunSpec, SandboxSettings};
use shell_analysis::parse;
use tool_core::TaskKind;

/// Default time limit of a command.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest time limit a call may ask for; longer requests are clamped.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Default time a readiness condition is waited for.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(60);

const DESCRIPTION: &str = "Executes a bash command with an optional timeout and returns its output (stdout and stderr interleaved).

- The command runs as `bash -c COMMAND` in the session's working directory, which persists between calls (a `cd` carries over; shell variables do not). If it leaves the working directories it is reset, with a notice.
- Commands run in a sandbox unless the settings disable it: by default they may write only inside the working directories and the temporary directory (never .git/hooks, .git/config or shell start-up files) and have no network. If a command fails with \"Operation not permitted\", \"Read-only file system\" or a network error because of the sandbox, and only then, retry with dangerouslyDisableSandbox: true (this needs approval and may be refused by the settings).
- Timeout: default 120000 ms, at most 600000 ms. On timeout the whole process group gets SIGTERM, then SIGKILL; the output so far is returned.
- Output longer than 30000 characters is cut, and the full output is saved to a file whose path is given; read it with Read.
- Exit status 1 of grep, rg, find, diff and test is not an error.
- Use run_in_background for long-running commands (servers, watchers); you get a task id and an output file at once. Jobs a foreground command leaves running with `&` are stopped when it returns. Add ready_pattern (a regular expression matched against output lines) or ready_port (a TCP port on 127.0.0.1) to return as soon as the command is ready. Read the output with TaskOutput or Read, stop it with TaskStop.
- Prefer the dedicated tools over shell equivalents: Glob (not find or ls), Grep (not grep or rg), Read (not cat, head or tail), Edit (not sed or awk), Write (not echo > file).
- Quote paths that contain spaces. Chain dependent commands with &&; run independent ones as separate parallel calls.
- Git: never change git config, never skip hooks (--no-verify), never force-push to main, prefer new commits over --amend; pass commit messages with a here-document.";

/// Input of Bash.
///
/// # JSON names
///
/// The model sends these fields under JSON names that differ from the Rust ones:
///
/// | JSON name | Rust field |
/// | --- | --- |
/// | `dangerouslyDisableSandbox` | [`dangerously_disable_sandbox`](Self::dangerously_disable_sandbox) |
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BashInput {
    /// The command to execute
    #[schemars(length(max = tool_core::MAX_COMMAND_CHARS))]
    pub command: String,
    /// Optional timeout in milliseconds (max 600000; longer values are clamped)
    #[serde(default)]
    pub timeout: Option<u64>,
    /// Clear, concise description of what this command does in 5-10 words, in active voice
    #[serde(default)]
    pub description: Option<String>,
    /// Set to true to run this command in the background; read its output later with TaskOutput or Read
    #[serde(default)]
    pub run_in_background: Option<bool>,
    /// With run_in_background: wait until a line of output matches this regular expression before returning
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATTERN_CHARS))]
    pub ready_pattern: Option<String>,
    /// With run_in_background: wait until 127.0.0.1:ready_port accepts TCP connections before returning
    #[serde(default)]
    pub ready_port: Option<u16>,
    /// How long to wait for the readiness condition, in milliseconds (default 60000, max 600000); the command keeps running either way
    #[serde(default)]
    pub ready_timeout: Option<u64>,
    /// Set this to true to dangerously override sandbox mode and run commands without sandboxing
    #[serde(default, rename = "dangerouslyDisableSandbox")]
    pub dangerously_disable_sandbox: Option<bool>,
    /// What the permission check found allows the command (not part of the input: the same
    /// parsed input goes from the check to the call)
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) grounds: Grounds,
}

/// What Bash's (or Monitor's) permission check found allows an allowed command: a person's
/// choice (an allow rule, acceptEdits) or only its read-only classification. The call reads
/// it to choose the sandbox (see [`profile_for`]).
#[derive(Debug, Default)]
pub(crate) struct Grounds(std::sync::Mutex<Option<bool>>);

impl Clone for Grounds {
    fn clone(&self) -> Self {
        Grounds(std::sync::Mutex::new(self.by_person()))
    }
}

impl Grounds {
    fn set(&self, by_person: bool) {
        if let Ok(mut g) = self.0.lock() {
            *g = Some(by_person);
        }
    }

    /// Whether a person's choice allowed it; `None` when no check ran.
    fn by_person(&self) -> Option<bool> {
        self.0.lock().ok().and_then(|g| *g)
    }
}

/// The permission check of a command (Bash and Monitor): the shell permissions, and, for a
/// command allowed only because it reads, whether a jail can be made to run it in (else it
/// asks: nothing runs unasked outside the jail).
pub(crate) fn check_command(
    command: &str,
    unsandboxed: bool,
    grounds: &Grounds,
    ctx: &ToolContext,
    tool: &str,
) -> PermissionDecision {
    let decision = permissions::check_with(command, ctx, tool, unsandboxed);
    if !matches!(decision, PermissionDecision::Allow) {
        return decision;
    }
    let by_person = permissions::allowed_by_person(command, ctx, tool);
    grounds.set(by_person);
    if by_person {
        return decision;
    }
    let settings = SandboxSettings::from_context(ctx).unwrap_or_default();
    match sandbox::jail_available(&settings) {
        Ok(()) => decision,
        Err(why) => PermissionDecision::Ask {
            reason: format!(
                "{tool} command `{}` only reads, and commands that only read run unasked in a read-only jail, but {why}; without a jail it needs approval",
                command.trim().chars().take(200).collect::<String>()
            ),
            suggestions: vec![permissions::exact_rule(command)],
            kind: tool_core::AskKind::Default,
        },
    }
}

/// The sandbox a call runs in, from what allowed it: what a person approved (an answer, an
/// allow rule, the permission mode, acceptEdits) runs in the workspace sandbox; what only
/// the read-only classification allowed runs in the jail, and so does a call whose grounds
/// are unknown (no permission step ran).
pub(crate) fn profile_for(ctx: &ToolContext, grounds: &Grounds) -> Profile {
    match ctx.approved_by() {
        ApprovedBy::Person | ApprovedBy::Rule | ApprovedBy::Mode => Profile::Workspace,
        ApprovedBy::Tool if grounds.by_person() == Some(true) => Profile::Workspace,
        ApprovedBy::Tool | ApprovedBy::Unchecked => Profile::Jail,
    }
}

/// Output of Bash.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BashOutput {
    /// The output (stdout and stderr interleaved), cut at 30,000 characters
    pub stdout: String,
    /// Notices from the tool (a working-directory reset)
    pub stderr: String,
    /// The exit code; 128 + N when signal N ended the command
    pub exit_code: Option<i32>,
    /// Whether the call was cancelled and the command killed
    pub interrupted: bool,
    /// Whether the time limit killed the command
    pub timed_out: bool,
    /// What a non-zero exit that is not an error means ("No matches found")
    #[serde(skip_serializing_if = "Option::is_none")]
    pub return_code_interpretation: Option<String>,
    /// The task id of a background command
    #[serde(skip_serializing_if = "Option::is_none")]
    pub background_task_id: Option<String>,
    /// The file holding the output, when it was cut (or for a background command); outputs
    /// over 64 MiB keep their first and last 32 MiB
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persisted_output_path: Option<String>,
    /// The whole output's size in bytes, when it was cut
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persisted_output_size: Option<u64>,
    /// Bytes dropped from the middle of an output over 64 MiB (the saved file keeps its
    /// first and last 32 MiB)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persisted_output_dropped: Option<u64>,
    /// Whether a background command's readiness condition was met
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// How the command was sandboxed
    pub sandbox: String,
    /// Whether the sandbox was disabled for this call
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub dangerously_disable_sandbox: bool,
    /// The resource limit the command ran into: "killed: memory limit 8 GiB
    /// (sandbox.limits.memory)"
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<String>,
}

/// Messages of programs whose memory allocation failed (what an address-space limit
/// looks like from outside).
const OUT_OF_MEMORY: &[&str] = &[
    "Cannot allocate memory",
    "MemoryError",
    "out of memory",
    "Out of memory",
    "memory exhausted",
    "memory allocation of",
    "std::bad_alloc",
    "heap out of memory",
];

/// The resource limit a sandboxed command ran into: what the sandbox saw (its cgroup's
/// counters, SIGXCPU), or, where its memory was limited by address space (`rlimits`: no
/// cgroup), a failed command whose output says an allocation failed.
fn limit_hit(
    prepared: &sandbox::Prepared,
    finished: &sandbox::Finished,
    memory_limited_by: &str,
    output: &str,
) -> Option<sandbox::LimitHit> {
    if finished.limit.is_some() {
        return finished.limit;
    }
    let memory = prepared.launch.policy()?.limits.memory?;
    (finished.code != 0
        && memory_limited_by == "rlimits"
        && OUT_OF_MEMORY.iter().any(|m| output.contains(m)))
    .then_some(sandbox::LimitHit::Memory(memory))
}

/// What a result says when its command's sandbox runs without the cgroup the machine
/// offers (`why`).
fn no_cgroup_notice(why: &str) -> String {
    format!(
        "Note: this command's sandbox runs without its cgroup ({why}), under rlimits alone: \
         sandbox.limits.memory caps each process's address space, not the sandbox's memory, \
         and sandbox.limits.processes the user's processes (not root's)"
    )
}

/// The Bash tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bash;

/// The reference's non-error exits: status 1 of these commands means something else.
pub fn interpret_exit(last_command: Option<&str>, code: i32) -> Option<&'static str> {
    if code != 1 {
        return None;
    }
    let name = last_command?;
    let base = Path::new(name).file_name()?.to_str()?;
    match base {
        "grep" | "egrep" | "fgrep" | "rg" => Some("No matches found"),
        "find" => Some("Some directories were inaccessible"),
        "diff" => Some("Files differ"),
        "test" | "[" | "[[" => Some("Condition is false"),
        _ => None,
    }
}

fn clamp_ms(ms: Option<u64>, default: Duration) -> Duration {
    match ms {
        Some(0) | None => default,
        Some(ms) => Duration::from_millis(ms).min(MAX_TIMEOUT),
    }
}

fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// Validation shared by Bash and Monitor: not empty, and it parses.
pub fn validate_command(command: &str) -> ValidationResult {
    if command.trim().is_empty() {
        return ValidationResult::invalid_code(
            "The command is empty: pass the shell command to run in `command`.",
            1,
        );
    }
    match parse(command) {
        Ok(_) => ValidationResult::Valid,
        Err(e) => ValidationResult::invalid_code(e.0, 1),
    }
}

/// The working directory to start in: the session's, or the original one (with a notice)
/// if it no longer exists.
fn start_dir(ctx: &ToolContext) -> (PathBuf, Option<String>) {
    let cwd = ctx.cwd();
    if cwd.is_dir() {
        return (cwd, None);
    }
    let orig = ctx.original_cwd().to_path_buf();
    ctx.set_cwd(&orig);
    let notice = format!(
        "The working directory {} no longer exists; the shell cwd was reset to {}",
        cwd.display(),
        orig.display()
    );
    (orig, Some(notice))
}

#[async_trait]
impl TypedTool for Bash {
    type Input = BashInput;
    type Output = BashOutput;
    const META: ToolMeta = ToolMeta::new("Bash")
        .describe(DESCRIPTION)
        .hint("run shell commands, scripts, builds and tests")
        .category(ToolCategory::Shell)
        .cancels_siblings_on_error()
        // Bash caps its own output at 30,000 characters and saves the whole of it; the
        // generic budget only needs room for the notices around the cut text.
        .max_result_chars(MAX_OUTPUT_CHARS + 2_000)
        .destructive_hint()
        .open_world_hint();

    fn is_read_only(&self, input: &BashInput) -> bool {
        !input.run_in_background.unwrap_or(false) && permissions::is_read_only(&input.command)
    }
    fn is_concurrency_safe(&self, input: &BashInput) -> bool {
        self.is_read_only(input)
    }

    async fn validate(&self, input: &BashInput, _ctx: &ToolContext) -> ValidationResult {
        if let ValidationResult::Invalid {
            message,
            error_code,
        } = validate_command(&input.command)
        {
            return ValidationResult::Invalid {
                message,
                error_code,
            };
        }
        let background = input.run_in_background.unwrap_or(false);
        if !background && (input.ready_pattern.is_some() || input.ready_port.is_some()) {
            return ValidationResult::invalid_code(
                "ready_pattern and ready_port only apply with run_in_background: true",
                1,
            );
        }
        if let Some(p) = &input.ready_pattern
            && let Err(e) = regex::Regex::new(p)
        {
            return ValidationResult::invalid_code(
                format!("ready_pattern is not a valid regular expression: {e}"),
                1,
            );
        }
        if input.ready_port == Some(0) {
            return ValidationResult::invalid_code("ready_port must be between 1 and 65535", 1);
        }
        ValidationResult::Valid
    }

    async fn check_permission(&self, input: &BashInput, ctx: &ToolContext) -> PermissionDecision {
        let unsandboxed = input.dangerously_disable_sandbox.unwrap_or(false);
        check_command(&input.command, unsandboxed, &input.grounds, ctx, "Bash")
    }

    async fn call(
        &self,
        input: BashInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<BashOutput>, ToolError> {
        let disable = input.dangerously_disable_sandbox.unwrap_or(false);
        let settings = SandboxSettings::from_context(ctx)?;
        let (cwd, mut notice) = start_dir(ctx);
        let profile = profile_for(ctx, &input.grounds);
        let prepared =
            sandbox::prepare_profile(profile, &settings, &ctx.working_dirs(), &cwd, disable)?;
        if input.run_in_background.unwrap_or(false) {
            return background(input, ctx, cwd, prepared).await;
        }
        let session = ShellSession::of(ctx);
        let lease = session.lease()?;
        let (spool, cwd_pipe, io) = command_pipes(&session, &lease)?;
        let spec = RunSpec {
            command: input.command.clone(),
            cwd: cwd.clone(),
            env: Vec::new(),
        };
        let timeout = clamp_ms(input.timeout, DEFAULT_TIMEOUT);
        // Foreground commands share the session's supervisor (see the crate documentation);
        // background ones get one of their own.
        let started = session.start(&spec, &prepared.launch, io).await;
        let mut running = match started {
            Ok(r) => r,
            Err(e) => {
                spool.close();
                return Err(e);
            }
        };
        let finished = wait_reporting(&mut running, timeout, ctx, &spool).await;
        let memory_limited_by = running.memory_limited_by();
        let cgroup_missing = running.cgroup_missing();
        drop(running);
        let summary = spool.finish().await;

        let shown = read_output(&spool).await?;
        let mut data = BashOutput {
            stdout: shown.text.clone(),
            exit_code: Some(finished.code),
            interrupted: finished.ending == Ending::Cancelled,
            timed_out: finished.ending == Ending::TimedOut,
            sandbox: prepared.description.clone(),
            dangerously_disable_sandbox: disable,
            ..BashOutput::default()
        };
        let mut text = shown.text.clone();
        let new_cwd = cwd_pipe.read();
        keep_or_release(lease, &shown, &summary, &spool, &mut text, &mut data).await?;

        // The working directory the command ended in.
        if let Some(new_cwd) = new_cwd
            && new_cwd != cwd
        {
            if ctx.is_in_working_dirs(&new_cwd) {
                ctx.set_cwd(&new_cwd);
            } else {
                let orig = ctx.original_cwd().to_path_buf();
                ctx.set_cwd(&orig);
                notice = Some(format!("Shell cwd was reset to {}", orig.display()));
            }
        }
        if let Some(n) = &prepared.notice {
            text.push_str(&format!("\n{n}"));
        }
        // Once per process: the host's supervisor program was set aside (see
        // `host_program::unanswered`); whoever reads this result can pass it on.
        if let Some(n) = sandbox::take_supervisor_notice() {
            text.push_str(&format!("\nNote for the host program: {n}"));
        }
        if let Some(why) = &cgroup_missing {
            text.push_str(&format!("\n{}", no_cgroup_notice(why)));
        }
        if let Some(n) = notice {
            text.push_str(&format!("\n{n}"));
            data.stderr = n;
        }

        let last = parse(&input.command).ok().and_then(|s| s.last_command);
        // A resource limit it ran into is named whatever else is said.
        let limit = limit_hit(&prepared, &finished, memory_limited_by, &shown.text);
        if let Some(hit) = limit {
            data.limit = Some(hit.to_string());
        }
        let error = ending_error(limit, &finished, timeout, last.as_deref(), &mut data);
        Ok(into_result(data, &text, error))
    }
}

/// The command's pipes (maybe those the supervisor already started its bash with): the
/// spool of its output into the leased file, its working-directory channel, its ends.
fn command_pipes(
    session: &crate::session::ShellSession,
    lease: &crate::session::Lease,
) -> Result<(Spool, crate::spool::CwdPipe, sandbox::Io), ToolError> {
    let pipes = session.pipes(true)?;
    let spool = lease.spool(pipes.output)?;
    let cwd_pipe = pipes
        .cwd
        .ok_or_else(|| ToolError::fatal("internal error: no working-directory pipe"))
        .and_then(crate::spool::CwdPipe::new);
    match cwd_pipe {
        Ok(c) => Ok((spool, c, pipes.io)),
        Err(e) => {
            spool.close();
            Err(e)
        }
    }
}

/// Keeps the output file of a cut output (noting where in `text` and `data`), or gives the
/// file back to the session when the whole output was shown.
async fn keep_or_release(
    lease: crate::session::Lease,
    shown: &crate::output::Shown,
    summary: &Summary,
    spool: &Spool,
    text: &mut String,
    data: &mut BashOutput,
) -> Result<(), ToolError> {
    if !(shown.truncated || summary.dropped > 0 || summary.lost > 0) {
        lease.release();
        return Ok(());
    }
    // Keeping the file may copy it whole (see `OutputDir::claim`): a blocking thread's work.
    let kept = tokio::task::spawn_blocking(move || lease.keep())
        .await
        .map_err(|e| ToolError::fatal(format!("internal error keeping the output: {e}")))??;
    text.push_str(&truncation_marker(shown.lines_cut));
    text.push_str(&saved_note(&kept, summary, spool.failure()));
    data.persisted_output_path = Some(kept.display().to_string());
    data.persisted_output_size = Some(summary.total);
    if summary.dropped > 0 {
        data.persisted_output_dropped = Some(summary.dropped);
    }
    Ok(())
}

/// The error a call's ending makes, if any: a resource limit it ran into, the sandbox
/// lost, a cancellation, the time limit, or a non-zero exit that is not a known non-error
/// (whose meaning goes into `data`).
fn ending_error(
    limit: Option<sandbox::LimitHit>,
    finished: &sandbox::Finished,
    timeout: Duration,
    last: Option<&str>,
    data: &mut BashOutput,
) -> Option<String> {
    match (limit, finished.ending) {
        (Some(hit), Ending::Exited | Ending::SandboxLost) => Some(format!(
            "<error>{hit}; exit code {}</error>",
            finished.code
        )),
        (_, Ending::SandboxLost) => Some(
            "<error>The sandbox ended while the command ran, and the command with it; it will be restarted for the next command</error>"
                .to_owned(),
        ),
        (_, Ending::Cancelled) => {
            Some("<error>Command was aborted before completion</error>".to_owned())
        }
        (_, Ending::TimedOut) => Some(format!(
            "<error>Command timed out after {}: its process group was terminated (SIGTERM, then SIGKILL after {}s for anything left; exit code {})</error>",
            format_duration(timeout),
            sandbox::KILL_GRACE.as_secs(),
            finished.code
        )),
        (_, Ending::Exited) if finished.code == 0 => None,
        (_, Ending::Exited) => match interpret_exit(last, finished.code) {
            Some(meaning) => {
                data.return_code_interpretation = Some(meaning.to_owned());
                None
            }
            None => Some(format!("Exit code {}", finished.code)),
        },
    }
}

/// The call's result: the error (before the text) or the text, which says so when empty.
fn into_result(data: BashOutput, text: &str, error: Option<String>) -> ToolResult<BashOutput> {
    let text = text.trim_start_matches('\n').to_owned();
    match error {
        Some(err) => {
            let message = if text.is_empty() {
                err
            } else {
                format!("{err}\n{text}")
            };
            ToolResult::error(data, message)
        }
        None => {
            let text = match (&data.return_code_interpretation, text.is_empty()) {
                (Some(m), true) => format!("({m})"),
                (None, true) => "(no output)".to_owned(),
                (_, false) => text,
            };
            ToolResult::ok(data).with_text(text)
        }
    }
}

/// How often a running foreground command's new output lines are reported as progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// At most this much of a command's new output is read for one progress report.
const PROGRESS_READ_CAP: u64 = 64 * 1024;

/// Waits for a foreground command like [`process::Running::wait`], reporting the complete
/// lines it wrote since the last report as progress (a host that shows progress, such as an
/// MCP client, sees a long command's output as it comes). The lines are read from the
/// output's spool, never from a path.
async fn wait_reporting(
    running: &mut sandbox::Running,
    timeout: Duration,
    ctx: &ToolContext,
    output: &Spool,
) -> sandbox::Finished {
    let wait = running.wait(Some(timeout), ctx.cancel_token());
    tokio::pin!(wait);
    let mut ticker =
        tokio::time::interval_at(tokio::time::Instant::now() + PROGRESS_EVERY, PROGRESS_EVERY);
    let (mut offset, mut lines) = (0u64, 0u64);
    loop {
        tokio::select! {
            finished = &mut wait => return finished,
            _ = ticker.tick() => report_new_lines(output, &mut offset, &mut lines, ctx),
        }
    }
}

/// Reports the complete lines written to `output` after `offset` (at most
/// [`PROGRESS_READ_CAP`] bytes at a time); `lines` counts the lines reported so far.
fn report_new_lines(output: &Spool, offset: &mut u64, lines: &mut u64, ctx: &ToolContext) {
    let Ok(chunk) = output.read_from(*offset, PROGRESS_READ_CAP as usize) else {
        return;
    };
    let buf = chunk.data;
    let start = chunk.next - buf.len() as u64;
    let Some(end) = buf.iter().rposition(|&b| b == b'\n') else {
        // A line longer than the cap is reported in pieces.
        if buf.len() as u64 == PROGRESS_READ_CAP {
            *offset = chunk.next;
        }
        return;
    };
    let new = &buf[..=end];
    *offset = start + new.len() as u64;
    *lines += memchr::memchr_iter(b'\n', new).count() as u64;
    let text = String::from_utf8_lossy(new);
    ctx.progress().report_progress(Progress {
        message: tool_core::cut_middle(text.trim_end(), 2_000),
        progress: Some(*lines as f64),
        total: None,
    });
}

/// What the model is told about the saved output: where it is, its size, and what the cap
/// dropped or a write failure lost.
fn saved_note(path: &Path, summary: &Summary, failure: Option<String>) -> String {
    let size = format_size(usize::try_from(summary.total).unwrap_or(usize::MAX));
    let mut note = if summary.dropped > 0 {
        format!(
            "\n\nOutput ({size}) saved to: {} — capped at {}: its first {} and last {} are kept, with \"… [{} bytes dropped] …\" between them",
            path.display(),
            format_size(OUTPUT_CAP as usize),
            format_size(Caps::OUTPUT.head as usize),
            format_size(Caps::OUTPUT.tail as usize),
            summary.dropped
        )
    } else {
        format!("\n\nFull output ({size}) saved to: {}", path.display())
    };
    if summary.lost > 0 {
        note.push_str(&format!(
            "\n{} bytes of output were lost: {}",
            summary.lost,
            failure.unwrap_or_else(|| "the output file could not be written".to_owned())
        ));
    }
    note
}

/// Reads what the model sees of a finished output: small files inline, large ones on a
/// blocking thread (counting the lines of 64 MiB takes a moment).
async fn read_output(spool: &Spool) -> Result<crate::output::Shown, ToolError> {
    let fail =
        |e: std::io::Error| ToolError::fatal(format!("cannot read the command's output: {e}"));
    let small = spool.file().metadata().is_ok_and(|m| m.len() <= 64 * 1024);
    if small {
        return read_head(spool.file(), MAX_OUTPUT_CHARS).map_err(fail);
    }
    let spool = spool.clone();
    tokio::task::spawn_blocking(move || read_head(spool.file(), MAX_OUTPUT_CHARS))
        .await
        .map_err(|e| ToolError::fatal(format!("internal error reading the output: {e}")))?
        .map_err(fail)
}

/// `run_in_background`: starts the command as a task and returns its id and output file,
/// after its readiness condition when one was given.
async fn background(
    input: BashInput,
    ctx: &ToolContext,
    cwd: PathBuf,
    prepared: sandbox::Prepared,
) -> Result<ToolResult<BashOutput>, ToolError> {
    let Some(tasks) = ctx.services().get::<Arc<ShellTasks>>() else {
        return Err(ToolError::respond(
            "Background commands need the shell task manager, which this session does not have (the host program wires it with `tools_shell::install`); run the command in the foreground instead.",
        ));
    };
    let readiness = Readiness::from_input(
        input.ready_pattern.as_deref(),
        input.ready_port,
        clamp_ms(input.ready_timeout, DEFAULT_READY_TIMEOUT),
    )?;
    let description = input
        .description
        .clone()
        .unwrap_or_else(|| input.command.chars().take(80).collect());
    let info = tasks
        .start_shell(ShellTaskSpec {
            kind: TaskKind::LocalBash,
            description,
            command: input.command.clone(),
            cwd,
            launch: prepared.launch.clone(),
            time_limit: None,
            progress: None,
        })
        .await?;
    let mut data = BashOutput {
        background_task_id: Some(info.id.clone()),
        persisted_output_path: Some(info.output_path.display().to_string()),
        sandbox: prepared.description.clone(),
        dangerously_disable_sandbox: input.dangerously_disable_sandbox.unwrap_or(false),
        ..BashOutput::default()
    };
    let mut text = format!(
        "Command running in background with ID: {}. Output is being written to: {}",
        info.id,
        info.output_path.display()
    );
    if let Some(readiness) = readiness {
        let outcome = tasks
            .wait_ready(&info.id, &readiness, ctx.cancel_token())
            .await?;
        data.ready = Some(outcome.ready);
        text.push_str(&format!("\n{}", outcome.message));
        if !outcome.output.is_empty() {
            text.push_str(&format!("\nOutput so far:\n{}", outcome.output));
        }
        data.stdout = outcome.output;
        if !outcome.ready {
            return Ok(ToolResult::error(data, text));
        }
    }
    Ok(ToolResult::ok(data).with_text(text))
}
