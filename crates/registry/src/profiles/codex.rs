//! The codex profile: codex's tool vocabulary for OpenAI's GPT-5 and codex models.

use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{Tool, ToolError, shell_quote};

use super::{Mapping, adapt};

/// Built-ins the codex profile replaces.
pub(crate) const REPLACED: &[&str] = &["Bash", "Edit", "MultiEdit", "Write"];

/// The codex profile's own tools, over the built-ins of `builtins`.
pub(crate) fn tools(builtins: &[Arc<dyn Tool>]) -> Vec<Arc<dyn Tool>> {
    #[allow(unused_mut)]
    let mut tools: Vec<Arc<dyn Tool>> = [adapt(builtins, "Bash", Shell)]
        .into_iter()
        .flatten()
        .collect();
    // codex's patch tool is an implementation of its own (its grammar and matching), over
    // the file tools' writer, checks and ledger.
    #[cfg(feature = "fs")]
    tools.push(Arc::new(tool_core::Typed::new(tools_fs::ApplyPatch)));
    tools
}

/// codex's `shell`: an argv array, run as Bash runs a command line.
struct Shell;

/// Input of `shell`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ShellInput {
    /// The command to execute
    command: Vec<String>,
    /// The working directory to execute the command in
    #[serde(default)]
    workdir: Option<String>,
    /// The timeout for the command in milliseconds
    #[serde(default)]
    timeout_ms: Option<u64>,
    /// Whether to request escalated permissions. Set to true if command needs to be run
    /// without sandbox restrictions
    #[serde(default)]
    with_escalated_permissions: Option<bool>,
    /// Only set if with_escalated_permissions is true. 1-sentence explanation of why we want
    /// to run this command.
    #[serde(default)]
    justification: Option<String>,
}

/// The command line `argv` stands for: the script of `bash -lc SCRIPT` (and `sh -c`, `zsh
/// -lc`), else the words quoted for the shell.
fn command_line(argv: &[String]) -> Option<String> {
    match argv {
        [] => None,
        [shell, flag, script]
            if matches!(
                shell.rsplit('/').next(),
                Some("bash" | "sh" | "zsh" | "dash")
            ) && matches!(flag.as_str(), "-c" | "-lc" | "-cl") =>
        {
            Some(script.clone())
        }
        words => Some(
            words
                .iter()
                .map(|w| shell_quote(w))
                .collect::<Vec<_>>()
                .join(" "),
        ),
    }
}

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

    fn inner_input(&self, input: &ShellInput, _inner: &dyn Tool) -> Result<Value, ToolError> {
        let Some(line) = command_line(&input.command) else {
            return Err(ToolError::respond(
                "`command` is empty: give the program and its arguments, such as [\"bash\", \"-lc\", \"ls\"]",
            ));
        };
        // Each call starts where codex starts it (the workdir, else the session's directory):
        // a subshell keeps a `cd` from carrying over to the next call.
        let line = match &input.workdir {
            Some(dir) if !dir.is_empty() => format!("(cd {} && {line}\n)", shell_quote(dir)),
            _ => format!("({line}\n)"),
        };
        let mut bash = json!({ "command": line });
        if let Some(ms) = input.timeout_ms {
            bash["timeout"] = json!(ms);
        }
        if input.with_escalated_permissions == Some(true) {
            bash["dangerouslyDisableSandbox"] = json!(true);
            if let Some(why) = &input.justification {
                bash["description"] = json!(why);
            }
        }
        Ok(bash)
    }
}
