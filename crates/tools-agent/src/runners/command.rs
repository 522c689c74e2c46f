//! The command runner: hands the prompt (with the agent's system prompt) to a configured
//! command on standard input and returns what it prints; the command's process group is
//! killed when the run is cancelled or dropped.

use async_trait::async_trait;
use tool_core::{ProcessGroup, ToolError};

use crate::runners::{AgentOutcome, AgentRequest, AgentRunner};
use crate::stores::team_files::teammate;

/// A command runner's output is cut to this many characters (head and tail).
pub const MAX_COMMAND_OUTPUT: usize = 100_000;

/// The command runner: hands the prompt (with the agent's system prompt) to a configured
/// command on standard input and returns what it prints.
#[derive(Debug, Clone)]
pub struct CommandRunner {
    argv: Vec<String>,
}

impl CommandRunner {
    /// A runner for `argv` (program and arguments).
    pub fn new(argv: Vec<String>) -> Self {
        CommandRunner { argv }
    }
}

#[async_trait]
impl AgentRunner for CommandRunner {
    async fn run(&self, request: AgentRequest) -> Result<AgentOutcome, ToolError> {
        use tokio::io::AsyncWriteExt;
        let Some((program, args)) = self.argv.split_first() else {
            return Err(ToolError::respond("agent.command is empty"));
        };
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .current_dir(request.context.cwd())
            .env("AGENT_TOOLS_AGENT_ID", &request.agent_id)
            .env("AGENT_TOOLS_AGENT_TYPE", &request.definition.name)
            .envs(
                teammate(&request.context)
                    .map(|m| {
                        [
                            ("AGENT_TOOLS_TEAM_NAME", m.team_name.clone()),
                            ("AGENT_TOOLS_AGENT_NAME", m.name.clone()),
                        ]
                    })
                    .into_iter()
                    .flatten(),
            )
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        if let Some(model) = request
            .model
            .clone()
            .or_else(|| request.definition.model.clone())
        {
            command.env("AGENT_TOOLS_AGENT_MODEL", model);
        }
        // The command leads a process group of its own; stopping it (cancelled, or this
        // future dropped) kills the whole group, so nothing it started survives.
        let (mut child, group) = ProcessGroup::spawn(&mut command).map_err(|e| {
            ToolError::respond(format!("Cannot start the agent command `{program}`: {e}"))
        })?;
        let input = format!("{}\n\n{}", request.definition.system_prompt, request.prompt);
        if let Some(mut stdin) = child.stdin.take() {
            // Written from its own task, so a command that prints before reading all of a
            // long prompt cannot deadlock against us; one that never reads it is no error.
            tokio::spawn(async move {
                let _ = stdin.write_all(input.as_bytes()).await;
            });
        }
        let waited = tokio::select! {
            out = child.wait_with_output() => out.map_err(|e| ToolError::respond(format!("The agent command `{program}` failed: {e}")))?,
            () = request.cancel.cancelled() => {
                group.kill();
                return Err(ToolError::Cancelled { tool: "Agent".to_owned() });
            }
        };
        // It exited by itself: what it left running in its group may stay.
        group.release();
        let stdout = String::from_utf8_lossy(&waited.stdout).trim().to_owned();
        if !waited.status.success() {
            let stderr = String::from_utf8_lossy(&waited.stderr);
            return Err(ToolError::respond(format!(
                "The agent command `{program}` exited with {}: {}",
                waited.status,
                tool_core::cut_middle(stderr.trim(), 4_000)
            )));
        }
        Ok(AgentOutcome {
            output: tool_core::cut_middle(&stdout, MAX_COMMAND_OUTPUT),
            total_tokens: 0,
            tool_uses: 0,
        })
    }
}
