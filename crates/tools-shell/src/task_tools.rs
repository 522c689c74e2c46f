//! TaskOutput (aliases AgentOutputTool, BashOutputTool) and TaskStop (alias KillShell):
//! read and stop background tasks of every kind through the context's task manager.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    TaskInfo, TaskKind, ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult, TypedTool,
    ValidationResult,
};

use crate::tasks::{ShellTasks, read_tail, status_name};

/// TaskOutput keeps at most this many characters of a task's output: the tail.
pub const TASK_OUTPUT_CHARS: usize = 32_000;
/// Default and longest blocking wait of TaskOutput.
pub const TASK_OUTPUT_TIMEOUT: Duration = Duration::from_secs(30);
const TASK_OUTPUT_MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// Input of TaskOutput.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskOutputInput {
    /// The task ID to get output from
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub task_id: String,
    /// Whether to wait for completion (default true)
    #[serde(default)]
    pub block: Option<bool>,
    /// Max wait time in ms (default 30000, max 600000)
    #[serde(default)]
    pub timeout: Option<u64>,
}

/// What a TaskOutput call got: serialized (and shown) as `success`, `timeout` or
/// `not_ready`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RetrievalStatus {
    /// The task had finished
    Success,
    /// Still running after a blocking wait
    Timeout,
    /// Still running, and the call did not wait
    NotReady,
}

impl RetrievalStatus {
    /// The name the result's text and data use.
    pub fn as_str(self) -> &'static str {
        match self {
            RetrievalStatus::Success => "success",
            RetrievalStatus::Timeout => "timeout",
            RetrievalStatus::NotReady => "not_ready",
        }
    }
}

/// Output of TaskOutput.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskOutputData {
    /// Whether the task had finished, or the wait ended first
    pub retrieval_status: RetrievalStatus,
    /// The task
    pub task: TaskInfo,
    /// The output (its tail, for long output; new lines only, for a monitor)
    pub output: String,
    /// Whether the output was cut
    pub truncated: bool,
}

/// The TaskOutput tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskOutput;

fn kind_name(kind: TaskKind) -> &'static str {
    match kind {
        TaskKind::LocalBash => "local_bash",
        TaskKind::LocalAgent => "local_agent",
        TaskKind::Monitor => "monitor",
    }
}

#[async_trait]
impl TypedTool for TaskOutput {
    type Input = TaskOutputInput;
    type Output = TaskOutputData;
    const META: ToolMeta = ToolMeta::new("TaskOutput")
        .aliases(&["AgentOutputTool", "BashOutputTool"])
        .describe("Retrieves the output of a background task (a background Bash command, a Monitor, or a background agent).
- With block (default true) it waits until the task finishes or the timeout (default 30000 ms, max 600000) passes; with block: false it returns at once.
- Returns the status, exit code and output; long output keeps its last 32000 characters with the path of the full output file. For a Monitor task, only the output written since the previous read is returned.
- You can also read the output file directly with Read.")
        .hint("read the output of a background task")
        .category(ToolCategory::Shell)
        .deferred()
        .read_only()
        .read_only_hint();

    async fn validate(&self, input: &TaskOutputInput, ctx: &ToolContext) -> ValidationResult {
        if input.task_id.trim().is_empty() {
            return ValidationResult::invalid_code("Task ID is required", 1);
        }
        match ctx.tasks().get(&input.task_id).await {
            Ok(_) => ValidationResult::Valid,
            Err(e) => ValidationResult::invalid_code(e.to_string(), 2),
        }
    }

    async fn call(
        &self,
        input: TaskOutputInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<TaskOutputData>, ToolError> {
        let id = input.task_id.trim();
        let mut info = ctx.tasks().get(id).await?;
        let block = input.block.unwrap_or(true);
        let timeout = match input.timeout {
            None => TASK_OUTPUT_TIMEOUT,
            Some(ms) => Duration::from_millis(ms).min(TASK_OUTPUT_MAX_TIMEOUT),
        };
        if block && !info.status.is_terminal() {
            info = ctx.tasks().wait(id, timeout, ctx.cancel_token()).await?;
        }
        let finished = info.status.is_terminal();
        let retrieval = match (finished, block) {
            (true, _) => RetrievalStatus::Success,
            (false, true) => RetrievalStatus::Timeout,
            (false, false) => RetrievalStatus::NotReady,
        };
        let shell_tasks = ctx.services().get::<Arc<ShellTasks>>();
        let held = match (&shell_tasks, info.kind) {
            (Some(tasks), TaskKind::Monitor) => {
                Some((tasks.read_new(id, TASK_OUTPUT_CHARS)?, false))
            }
            // Through the task's own descriptor when this manager ran it.
            (Some(tasks), _) => tasks.tail(id, TASK_OUTPUT_CHARS)?,
            (None, _) => None,
        };
        let (output, truncated) = match held {
            Some(t) => t,
            None => match read_tail(&info.output_path, TASK_OUTPUT_CHARS) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => (String::new(), false),
                Err(e) => return Err(ToolError::io(&info.output_path, e)),
            },
        };
        let mut text = format!(
            "<retrieval_status>{}</retrieval_status>\n\n<task_id>{}</task_id>\n\n<task_type>{}</task_type>\n\n<status>{}</status>",
            retrieval.as_str(),
            info.id,
            kind_name(info.kind),
            status_name(info.status)
        );
        if let Some(code) = info.exit_code {
            text.push_str(&format!("\n\n<exit_code>{code}</exit_code>"));
        }
        let shown = output.trim_end();
        if !shown.is_empty() {
            let header = if truncated {
                format!("[Truncated. Full output: {}]\n", info.output_path.display())
            } else {
                String::new()
            };
            text.push_str(&format!("\n\n<output>\n{header}{shown}\n</output>"));
        }
        Ok(ToolResult::ok(TaskOutputData {
            retrieval_status: retrieval,
            task: info,
            output: shown.to_owned(),
            truncated,
        })
        .with_text(text))
    }
}

/// Input of TaskStop.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskStopInput {
    /// The ID of the background task to stop
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub task_id: Option<String>,
    /// Deprecated: use task_id instead
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub shell_id: Option<String>,
}

/// Output of TaskStop.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TaskStopData {
    /// `Successfully stopped task: ID (command)`
    pub message: String,
    /// The task
    pub task_id: String,
    /// Its kind
    pub task_type: String,
    /// Its command or description
    pub command: String,
}

/// The TaskStop tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskStop;

impl TaskStopInput {
    fn id(&self) -> Option<&str> {
        self.task_id
            .as_deref()
            .or(self.shell_id.as_deref())
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }
}

#[async_trait]
impl TypedTool for TaskStop {
    type Input = TaskStopInput;
    type Output = TaskStopData;
    const META: ToolMeta = ToolMeta::new("TaskStop")
        .aliases(&["KillShell"])
        .describe("Stops a running background task by its ID (a background Bash command, a Monitor or a background agent), killing its whole process tree. Returns a success or failure status.")
        .hint("stop a running background task")
        .category(ToolCategory::Shell)
        .deferred()
        .concurrency_safe();

    async fn validate(&self, input: &TaskStopInput, ctx: &ToolContext) -> ValidationResult {
        let Some(id) = input.id() else {
            return ValidationResult::invalid_code("Missing required parameter: task_id", 1);
        };
        match ctx.tasks().get(id).await {
            Err(e) => ValidationResult::invalid_code(e.to_string(), 1),
            Ok(info) if info.status.is_terminal() => ValidationResult::invalid_code(
                format!(
                    "Task {} is not running (status: {})",
                    info.id,
                    status_name(info.status)
                ),
                3,
            ),
            Ok(_) => ValidationResult::Valid,
        }
    }

    async fn call(
        &self,
        input: TaskStopInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<TaskStopData>, ToolError> {
        let id = input
            .id()
            .ok_or_else(|| ToolError::respond("Missing required parameter: task_id"))?;
        let info = ctx.tasks().stop(id).await?;
        let command = info
            .command
            .clone()
            .unwrap_or_else(|| info.description.clone());
        let data = TaskStopData {
            message: format!("Successfully stopped task: {} ({command})", info.id),
            task_id: info.id.clone(),
            task_type: kind_name(info.kind).to_owned(),
            command,
        };
        Ok(ToolResult::ok(data))
    }
}
