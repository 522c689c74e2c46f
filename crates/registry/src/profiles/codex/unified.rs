//! codex's unified exec: `exec_command` starts a command over Bash as a background task and
//! waits up to `yield_time_ms` for it; one still running is a session whose id is the task's,
//! polled with `write_stdin` over TaskOutput.
//!
//! Our background commands have no stdin: `write_stdin` with non-empty `chars` is refused
//! with an error that says so; an empty `chars` polls the output written since the last
//! read.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{
    ContentBlock, Tool, ToolContext, ToolError, ToolResult, ValidationResult, shell_quote,
};

use super::exec::{
    Justification, PrefixRule, SandboxPermissions, check_workdir, escalated, in_subshell,
    with_justification,
};
use crate::profiles::Mapping;

/// How long `exec_command` waits for output by default, and its bounds.
const EXEC_YIELD_MS: (u64, u64, u64) = (10_000, 250, 30_000);
/// How long `write_stdin` waits by default, and its bounds.
const POLL_YIELD_MS: (u64, u64, u64) = (5_000, 250, 300_000);
/// Default of `max_output_tokens`; a token is taken as four bytes.
const MAX_OUTPUT_TOKENS: u64 = 10_000;
/// The most output one call reads, whatever `max_output_tokens` says.
const MAX_OUTPUT_BYTES: u64 = 256 * 1024;

fn yield_time(ms: Option<u64>, (default, min, max): (u64, u64, u64)) -> Duration {
    Duration::from_millis(ms.unwrap_or(default).clamp(min, max))
}

fn output_cap(max_output_tokens: Option<u64>) -> usize {
    let bytes = max_output_tokens
        .unwrap_or(MAX_OUTPUT_TOKENS)
        .max(1)
        .saturating_mul(4)
        .min(MAX_OUTPUT_BYTES);
    usize::try_from(bytes).unwrap_or(64 * 1024)
}

/// A short hex id for one chunk of output, as codex reports one.
fn chunk_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    format!("{:06x}", nanos & 0x00ff_ffff)
}

/// `text` cut to `cap` bytes in the middle, with codex's marker.
fn truncate_middle(text: &str, cap: usize) -> String {
    if text.len() <= cap {
        return text.to_owned();
    }
    let mut head = cap / 2;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (cap - cap / 2);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    let removed = text[head..tail].chars().count();
    format!(
        "Total output lines: {}\n\n{}…{removed} chars truncated…{}",
        text.lines().count(),
        &text[..head],
        &text[tail..]
    )
}

/// Output of the task `id` written since the last read, at most `cap` bytes (the rest
/// waits for the next poll, unless the task finished: then the middle is cut).
#[cfg(feature = "shell")]
fn new_output(ctx: &ToolContext, id: &str, cap: usize, finished: bool) -> Option<String> {
    let tasks = ctx
        .services()
        .get::<std::sync::Arc<tools_shell::ShellTasks>>()?;
    let read_cap = if finished {
        usize::try_from(MAX_OUTPUT_BYTES * 4).unwrap_or(cap)
    } else {
        cap
    };
    let text = tasks.read_new(id, read_cap).ok()?;
    Some(truncate_middle(&text, cap))
}

#[cfg(not(feature = "shell"))]
fn new_output(_ctx: &ToolContext, _id: &str, _cap: usize, _finished: bool) -> Option<String> {
    None
}

/// codex's text for a unified exec call.
fn session_text(
    id: &str,
    exit_code: Option<i64>,
    running: bool,
    output: &str,
    elapsed: Duration,
) -> String {
    let state = match (running, exit_code) {
        (true, _) => format!("Process running with session ID {id}"),
        (false, Some(code)) => format!("Process exited with code {code}"),
        (false, None) => "Process exited".to_owned(),
    };
    format!(
        "Chunk ID: {}\nWall time: {:.4} seconds\n{state}\nOriginal token count: {}\nOutput:\n{output}",
        chunk_id(),
        elapsed.as_secs_f64(),
        output.len().div_ceil(4)
    )
}

/// Waits up to `wait` for the task `id`, then renders what it wrote since the last read.
async fn poll(
    id: &str,
    wait: Duration,
    cap: usize,
    elapsed_before: Duration,
    fallback_output: Option<&str>,
    ctx: &ToolContext,
) -> Result<ToolResult<Value>, ToolError> {
    let started = std::time::Instant::now();
    let info = ctx.tasks().wait(id, wait, ctx.cancel_token()).await?;
    let finished = info.status.is_terminal();
    let output = new_output(ctx, id, cap, finished)
        .or_else(|| fallback_output.map(|o| truncate_middle(o, cap)))
        .unwrap_or_default();
    let running = !finished;
    let text = session_text(
        id,
        info.exit_code.map(i64::from),
        running,
        &output,
        elapsed_before + started.elapsed(),
    );
    let data = json!({
        "session_id": running.then(|| id.to_owned()),
        "exit_code": info.exit_code,
        "output": output,
        "wall_time_seconds": (elapsed_before + started.elapsed()).as_secs_f64(),
        "output_path": info.output_path.display().to_string(),
    });
    Ok(ToolResult::ok(data).with_block(ContentBlock::text(text)))
}

/// codex's `exec_command`.
pub(super) struct ExecCommand;

/// Input of `exec_command`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ExecCommandInput {
    /// Shell command to execute.
    #[schemars(length(max = tool_core::MAX_COMMAND_CHARS))]
    cmd: String,
    /// Optional working directory to run the command in; defaults to the turn cwd.
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    workdir: Option<String>,
    /// Shell binary to launch. Defaults to the user's default shell.
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    shell: Option<String>,
    /// Whether to allocate a TTY for the command. Defaults to false (plain pipes); set to
    /// true to open a PTY and access TTY process.
    #[serde(default)]
    tty: Option<bool>,
    /// How long to wait (in milliseconds) for output before yielding.
    #[serde(default)]
    yield_time_ms: Option<u64>,
    /// Maximum number of tokens to return. Excess output will be truncated.
    #[serde(default)]
    max_output_tokens: Option<u64>,
    /// Whether to run the shell with -l/-i semantics. Defaults to true.
    #[serde(default)]
    login: Option<bool>,
    #[serde(default)]
    sandbox_permissions: Option<SandboxPermissions>,
    #[serde(default)]
    justification: Option<Justification>,
    #[serde(default)]
    prefix_rule: Option<PrefixRule>,
}

/// The command line of `cmd` for `shell`: bash and sh run it as it is; another shell gets
/// it with `-c`.
fn exec_line(cmd: &str, shell: Option<&str>) -> String {
    match shell.map(str::trim).filter(|s| !s.is_empty()) {
        None => cmd.to_owned(),
        Some(s) if matches!(s.rsplit('/').next(), Some("bash" | "sh")) => cmd.to_owned(),
        Some(s) => format!("{} -c {}", shell_quote(s), shell_quote(cmd)),
    }
}

#[async_trait]
impl Mapping for ExecCommand {
    type Input = ExecCommandInput;

    fn name(&self) -> &'static str {
        "exec_command"
    }

    fn description(&self) -> String {
        "Runs a command in a PTY, returning output or a session ID for ongoing interaction."
            .to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["Bash"]
    }

    fn inner_input(&self, input: &ExecCommandInput, _inner: &dyn Tool) -> Result<Value, ToolError> {
        if input.cmd.trim().is_empty() {
            return Err(ToolError::respond(
                "`cmd` is empty: give the shell command to run, such as \"cargo test\"",
            ));
        }
        if input.max_output_tokens == Some(0) {
            return Err(ToolError::respond(
                "`max_output_tokens` is 0: give the most tokens of output to return, or leave it out for 10000",
            ));
        }
        // No PTY and no login shell here; `prefix_rule` proposes a rule, and rules come from
        // the settings only.
        let _ = (input.tty, input.login, &input.prefix_rule);
        let escalate = escalated(input.sandbox_permissions.as_ref(), None)?;
        let line = exec_line(&input.cmd, input.shell.as_deref());
        let mut bash = json!({
            "command": in_subshell(&line, input.workdir.as_deref()),
            "run_in_background": true,
            "description": input.cmd.chars().take(80).collect::<String>(),
        });
        if escalate {
            bash["dangerouslyDisableSandbox"] = json!(true);
        }
        Ok(bash)
    }

    async fn check(&self, input: &ExecCommandInput, ctx: &ToolContext) -> ValidationResult {
        check_workdir(input.workdir.as_deref(), ctx)
    }

    fn ask_reason(&self, input: &ExecCommandInput, reason: String) -> String {
        with_justification(reason, input.justification.as_ref())
    }

    async fn finish(
        &self,
        input: &ExecCommandInput,
        result: ToolResult<Value>,
        elapsed: Duration,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Value>, ToolError> {
        let Some(id) = result.data["backgroundTaskId"].as_str().map(str::to_owned) else {
            return Ok(result);
        };
        poll(
            &id,
            yield_time(input.yield_time_ms, EXEC_YIELD_MS),
            output_cap(input.max_output_tokens),
            elapsed,
            None,
            ctx,
        )
        .await
    }
}

/// codex's `write_stdin`: polls a running `exec_command` session.
pub(super) struct WriteStdin;

/// A session id: codex sends a number; ours are task ids.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(super) enum SessionId {
    /// A numeric id
    Number(u64),
    /// A task id
    Text(String),
}

impl SessionId {
    fn as_string(&self) -> String {
        match self {
            SessionId::Number(n) => n.to_string(),
            SessionId::Text(s) => s.trim().to_owned(),
        }
    }
}

/// Input of `write_stdin`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WriteStdinInput {
    /// Identifier of the running unified exec session.
    session_id: SessionId,
    /// Bytes to write to stdin (may be empty to poll).
    #[serde(default)]
    chars: Option<String>,
    /// How long to wait (in milliseconds) for output before yielding.
    #[serde(default)]
    yield_time_ms: Option<u64>,
    /// Maximum number of tokens to return. Excess output will be truncated.
    #[serde(default)]
    max_output_tokens: Option<u64>,
}

#[async_trait]
impl Mapping for WriteStdin {
    type Input = WriteStdinInput;

    fn name(&self) -> &'static str {
        "write_stdin"
    }

    fn description(&self) -> String {
        "Writes characters to an existing unified exec session and returns recent output."
            .to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["TaskOutput", "Bash"]
    }

    fn deferred(&self, _inner: bool) -> bool {
        false
    }

    fn inner_input(&self, input: &WriteStdinInput, _inner: &dyn Tool) -> Result<Value, ToolError> {
        let id = input.session_id.as_string();
        if id.is_empty() {
            return Err(ToolError::respond(
                "`session_id` is empty: give the session ID that exec_command reported (\"Process running with session ID ...\")",
            ));
        }
        if input.chars.as_deref().is_some_and(|c| !c.is_empty()) {
            return Err(ToolError::respond(
                "`chars` must be empty here: commands started by exec_command have no stdin in this tool set, so nothing can be written to them; call write_stdin with empty `chars` to poll the output, or run the command again with its input given up front (a pipe or a here-document)",
            ));
        }
        // The wait is done after TaskOutput's call, which must not block.
        Ok(json!({ "task_id": id, "block": false }))
    }

    async fn finish(
        &self,
        input: &WriteStdinInput,
        result: ToolResult<Value>,
        elapsed: Duration,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Value>, ToolError> {
        let id = input.session_id.as_string();
        let fallback = result.data["output"].as_str().map(str::to_owned);
        poll(
            &id,
            yield_time(input.yield_time_ms, POLL_YIELD_MS),
            output_cap(input.max_output_tokens),
            elapsed,
            fallback.as_deref(),
            ctx,
        )
        .await
    }
}
