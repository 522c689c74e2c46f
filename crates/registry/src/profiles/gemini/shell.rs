//! `run_shell_command` over Bash.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{Tool, ToolError, ToolResult, shell_quote};

use super::{str_of, with_text};
use crate::profiles::Mapping;

/// Gemini CLI's `run_shell_command` over Bash.
pub(super) struct RunShellCommand;

/// Input of `run_shell_command`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct RunShellCommandInput {
    /// Exact bash command to execute as `bash -c <command>`
    #[schemars(length(max = tool_core::MAX_COMMAND_CHARS))]
    command: String,
    /// Brief description of the command for the user. Be specific and concise. Ideally a
    /// single sentence. Can be up to 3 sentences for clarity. No line breaks.
    #[serde(default)]
    description: Option<String>,
    /// (OPTIONAL) The path of the directory to run the command in. If not provided, the
    /// project root directory is used. Must be a directory within the workspace and must
    /// already exist.
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    dir_path: Option<String>,
    /// Set to true if this command should be run in the background (e.g. for long-running
    /// servers or watchers). The command will be started, allowed to run for a brief moment
    /// to check for immediate errors, and then moved to the background.
    #[serde(default)]
    is_background: Option<bool>,
    /// Optional. Delay in milliseconds to wait after starting the process in the background.
    /// Useful to allow the process to start and generate initial output before returning.
    #[serde(default)]
    #[allow(dead_code)]
    // Bash returns at once with the task's output file; accepted, not used.
    delay_ms: Option<u64>,
}

impl Mapping for RunShellCommand {
    type Input = RunShellCommandInput;

    fn name(&self) -> &'static str {
        "run_shell_command"
    }

    fn description(&self) -> String {
        "This tool executes a given shell command as `bash -c <command>`. To run a command in the background, set the `is_background` parameter to true. Do NOT use `&` to background commands.\n\nThe following information is returned:\n\nOutput: Combined stdout/stderr. Can be `(empty)` or partial on error and for any unwaited background processes.\nExit Code: Only included if non-zero (command failed).\nError: Only included if a process-level error occurred (e.g., spawn failure).\nSignal: Only included if process was terminated by a signal.".to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["Bash"]
    }

    fn inner_input(
        &self,
        input: &RunShellCommandInput,
        _inner: &dyn Tool,
    ) -> Result<Value, ToolError> {
        if input.command.trim().is_empty() {
            return Err(ToolError::respond(
                "`command` is empty: give the bash command to run",
            ));
        }
        // Each call starts in the project root (or dir_path), as Gemini CLI runs each
        // command in a fresh shell: a subshell keeps a `cd` from carrying over.
        let line = match input.dir_path.as_deref().filter(|d| !d.is_empty()) {
            Some(dir) => format!("(cd {} && {}\n)", shell_quote(dir), input.command),
            None => format!("({}\n)", input.command),
        };
        let mut bash = json!({ "command": line });
        if let Some(d) = input.description.as_deref().filter(|d| !d.is_empty()) {
            bash["description"] = json!(d);
        }
        if input.is_background == Some(true) {
            bash["run_in_background"] = json!(true);
        }
        Ok(bash)
    }

    fn render(
        &self,
        _input: &RunShellCommandInput,
        result: ToolResult<Value>,
    ) -> ToolResult<Value> {
        let data = &result.data;
        if !data.is_object() {
            return result;
        }
        if let Some(id) = data.get("backgroundTaskId").and_then(Value::as_str) {
            let mut text = format!("Command moved to background (task ID: {id}).");
            let path = str_of(data, "persistedOutputPath");
            if !path.is_empty() {
                text.push_str(&format!(" Output is being written to: {path}"));
            }
            return with_text(result, text);
        }
        let stdout = str_of(data, "stdout");
        let stderr = str_of(data, "stderr");
        let output = match (stdout.is_empty(), stderr.is_empty()) {
            (true, true) => "(empty)".to_owned(),
            (false, true) => stdout.to_owned(),
            (true, false) => stderr.to_owned(),
            (false, false) => format!("{stdout}\n{stderr}"),
        };
        let mut parts = vec![format!("Output: {output}")];
        if data.get("timedOut").and_then(Value::as_bool) == Some(true) {
            parts.push(
                "Error: Command was automatically cancelled because it exceeded its timeout."
                    .to_owned(),
            );
        } else if data.get("interrupted").and_then(Value::as_bool) == Some(true) {
            parts.push("Error: Command was interrupted before it could complete.".to_owned());
        }
        if let Some(code) = data
            .get("exitCode")
            .and_then(Value::as_i64)
            .filter(|c| *c != 0)
        {
            parts.push(format!("Exit Code: {code}"));
        }
        let text = parts.join("\n");
        let mut result = with_text(result, text);
        // The text says the exit code; the side notes of Bash (such as where a large output
        // was saved) stay.
        if !result.is_error {
            result.error_message = None;
        }
        result
    }
}
