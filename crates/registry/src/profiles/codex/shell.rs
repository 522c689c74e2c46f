//! codex's `shell` (an argv array) and `shell_command` (a script) over Bash.

use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tool_core::{Tool, ToolContext, ToolError, ToolResult, ValidationResult};

use super::exec::{
    Justification, PrefixRule, SandboxPermissions, argv_line, bash_input, check_workdir, escalated,
    render_exec, with_justification,
};
use crate::profiles::Mapping;

/// codex's `shell`: an argv array, run as Bash runs a command line.
pub(super) struct Shell;

/// Input of `shell`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ShellInput {
    /// The command to execute
    #[schemars(inner(length(max = tool_core::MAX_COMMAND_CHARS)))]
    command: Vec<String>,
    /// The working directory to execute the command in
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    workdir: Option<String>,
    /// The timeout for the command in milliseconds
    #[serde(default)]
    timeout_ms: Option<u64>,
    #[serde(default)]
    sandbox_permissions: Option<SandboxPermissions>,
    /// Whether to request escalated permissions. Set to true if command needs to be run
    /// without sandbox restrictions
    #[serde(default)]
    with_escalated_permissions: Option<bool>,
    #[serde(default)]
    justification: Option<Justification>,
    #[serde(default)]
    prefix_rule: Option<PrefixRule>,
}

#[async_trait]
impl Mapping for Shell {
    type Input = ShellInput;

    fn name(&self) -> &'static str {
        "shell"
    }

    fn description(&self) -> String {
        "Runs a shell command and returns its output.\n- The arguments to `shell` will be passed to execvp(). Most terminal commands should be prefixed with [\"bash\", \"-lc\"].\n- Always set the `workdir` param when using the shell function. Do not use `cd` unless absolutely necessary.".to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["Bash"]
    }

    // codex 0.171 no longer declares `shell` (it still runs calls to it): found through
    // ToolSearch, callable by name.
    fn deferred(&self, _inner: bool) -> bool {
        true
    }

    fn inner_input(&self, input: &ShellInput, _inner: &dyn Tool) -> Result<Value, ToolError> {
        let Some(line) = argv_line(&input.command) else {
            return Err(ToolError::respond(
                "`command` is empty: give the program and its arguments, such as [\"bash\", \"-lc\", \"ls\"]",
            ));
        };
        // codex's `prefix_rule` proposes a rule to the person; here rules come from the
        // settings only, so it is read and left aside.
        let _ = &input.prefix_rule;
        let escalate = escalated(
            input.sandbox_permissions.as_ref(),
            input.with_escalated_permissions,
        )?;
        bash_input(
            &line,
            input.workdir.as_deref(),
            input.timeout_ms,
            escalate,
            input.justification.as_ref(),
        )
    }

    async fn check(&self, input: &ShellInput, ctx: &ToolContext) -> ValidationResult {
        check_workdir(input.workdir.as_deref(), ctx)
    }

    fn ask_reason(&self, input: &ShellInput, reason: String) -> String {
        with_justification(reason, input.justification.as_ref())
    }

    async fn finish(
        &self,
        input: &ShellInput,
        result: ToolResult<Value>,
        elapsed: Duration,
        _ctx: &ToolContext,
    ) -> Result<ToolResult<Value>, ToolError> {
        Ok(render_exec(result, elapsed, input.timeout_ms))
    }
}

/// codex's `shell_command`: a script for the user's shell, run as Bash runs it.
pub(super) struct ShellCommand;

/// Input of `shell_command`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ShellCommandInput {
    /// The shell script to execute in the user's default shell
    #[schemars(length(max = tool_core::MAX_COMMAND_CHARS))]
    command: String,
    /// The working directory to execute the command in
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    workdir: Option<String>,
    /// The timeout for the command in milliseconds
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// Whether to run the shell with login shell semantics. Defaults to true.
    #[serde(default)]
    login: Option<bool>,
    #[serde(default)]
    sandbox_permissions: Option<SandboxPermissions>,
    #[serde(default)]
    justification: Option<Justification>,
    #[serde(default)]
    prefix_rule: Option<PrefixRule>,
}

#[async_trait]
impl Mapping for ShellCommand {
    type Input = ShellCommandInput;

    fn name(&self) -> &'static str {
        "shell_command"
    }

    fn description(&self) -> String {
        "Runs a shell command and returns its output.\n- Always set the `workdir` param when using the shell_command function. Do not use `cd` unless absolutely necessary.".to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["Bash"]
    }

    // codex 0.171 declares `shell_command` only where unified exec is off (Windows, or
    // `features.unified_exec = false`): found through ToolSearch, callable by name.
    fn deferred(&self, _inner: bool) -> bool {
        true
    }

    fn inner_input(
        &self,
        input: &ShellCommandInput,
        _inner: &dyn Tool,
    ) -> Result<Value, ToolError> {
        if input.command.trim().is_empty() {
            return Err(ToolError::respond(
                "`command` is empty: give the shell script to run, such as \"ls -la\"",
            ));
        }
        // Bash runs `bash -c` (no login shell) and takes no rule from the model.
        let _ = (input.login, &input.prefix_rule);
        let escalate = escalated(input.sandbox_permissions.as_ref(), None)?;
        bash_input(
            &input.command,
            input.workdir.as_deref(),
            input.timeout_ms,
            escalate,
            input.justification.as_ref(),
        )
    }

    async fn check(&self, input: &ShellCommandInput, ctx: &ToolContext) -> ValidationResult {
        check_workdir(input.workdir.as_deref(), ctx)
    }

    fn ask_reason(&self, input: &ShellCommandInput, reason: String) -> String {
        with_justification(reason, input.justification.as_ref())
    }

    async fn finish(
        &self,
        input: &ShellCommandInput,
        result: ToolResult<Value>,
        elapsed: Duration,
        _ctx: &ToolContext,
    ) -> Result<ToolResult<Value>, ToolError> {
        Ok(render_exec(result, elapsed, input.timeout_ms))
    }
}
