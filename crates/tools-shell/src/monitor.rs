//! Monitor: a background command whose new output lines arrive as progress events (about
//! once a second) and can be read incrementally with TaskOutput; at most 30 minutes; the
//! same permissions and sandbox as Bash.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    PermissionDecision, TaskKind, ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult,
    TypedTool, ValidationResult,
};

use crate::bash::{Grounds, check_command, profile_for, validate_command};
use crate::tasks::{ShellTaskSpec, ShellTasks};
use sandbox::SandboxSettings;

/// A monitor is stopped after this long.
pub const MONITOR_LIMIT: Duration = Duration::from_secs(30 * 60);

/// Input of Monitor.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MonitorInput {
    /// The command whose output to watch (a log tail, a test watcher, a polling loop)
    #[schemars(length(max = tool_core::MAX_COMMAND_CHARS))]
    pub command: String,
    /// Clear, concise description of what is watched, in 5-10 words
    #[serde(default)]
    pub description: Option<String>,
    /// What the permission check found allows the command (see Bash's)
    #[serde(skip)]
    #[schemars(skip)]
    pub(crate) grounds: Grounds,
}

/// Output of Monitor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MonitorOutput {
    /// The task id for TaskOutput and TaskStop
    pub task_id: String,
    /// The file the output is written to
    pub output_file: String,
    /// How the command is sandboxed
    pub sandbox: String,
}

/// The Monitor tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Monitor;

#[async_trait]
impl TypedTool for Monitor {
    type Input = MonitorInput;
    type Output = MonitorOutput;
    const META: ToolMeta = ToolMeta::new("Monitor")
        .describe("Starts a background command and streams its new output lines as progress events, about once a second (for example `tail -f log`, a test watcher, or a loop that polls a status). Returns at once with a task ID and the output file. Read new lines with TaskOutput (each read returns the lines since the previous one) and stop it with TaskStop; it is stopped after 30 minutes. Use it instead of sleeping in a loop. Permissions and sandbox are those of Bash.")
        .hint("watch a command's output in the background")
        .category(ToolCategory::Shell)
        .deferred();

    async fn validate(&self, input: &MonitorInput, _ctx: &ToolContext) -> ValidationResult {
        validate_command(&input.command)
    }
    async fn check_permission(
        &self,
        input: &MonitorInput,
        ctx: &ToolContext,
    ) -> PermissionDecision {
        check_command(&input.command, false, &input.grounds, ctx, "Monitor")
    }

    async fn call(
        &self,
        input: MonitorInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<MonitorOutput>, ToolError> {
        let Some(tasks) = ctx.services().get::<Arc<ShellTasks>>() else {
            return Err(ToolError::respond(
                "Monitor needs the shell task manager, which this session does not have (the host program wires it with `tools_shell::install`).",
            ));
        };
        let settings = SandboxSettings::from_context(ctx)?;
        let cwd = ctx.cwd();
        let profile = profile_for(ctx, &input.grounds);
        let prepared =
            sandbox::prepare_profile(profile, &settings, &ctx.working_dirs(), &cwd, false)?;
        let description = input
            .description
            .clone()
            .unwrap_or_else(|| input.command.chars().take(80).collect());
        let info = tasks
            .start_shell(ShellTaskSpec {
                kind: TaskKind::Monitor,
                description,
                command: input.command,
                cwd,
                launch: prepared.launch,
                time_limit: Some(MONITOR_LIMIT),
                progress: Some(ctx.progress().clone()),
            })
            .await?;
        let text = format!(
            "Monitor started with ID: {}. Output is being written to: {}. New lines arrive as progress events; read them with TaskOutput (task_id {}) and stop it with TaskStop. It stops by itself after 30 minutes.",
            info.id,
            info.output_path.display(),
            info.id
        );
        Ok(ToolResult::ok(MonitorOutput {
            task_id: info.id,
            output_file: info.output_path.display().to_string(),
            sandbox: prepared.description,
        })
        .with_text(text))
    }
}
