//! TaskCreate, TaskGet, TaskUpdate and TaskList ("Todo V2") over a shared
//! [`TaskStore`].

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use tool_core::{
    ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult, TypedTool, ValidationResult,
};

use crate::stores::state::blocking;
use crate::stores::task_records::{TaskRecord, TaskState, TaskStore, TaskUpdateInput};

fn blocker_ids(task: &TaskRecord, all: &[TaskRecord]) -> Vec<String> {
    task.blocked_by
        .iter()
        .filter(|b| {
            all.iter()
                .find(|t| &t.id == *b)
                .is_some_and(|t| t.status != TaskState::Completed)
        })
        .map(|b| format!("#{b}"))
        .collect()
}

fn hashes(ids: &[String]) -> String {
    ids.iter()
        .map(|i| format!("#{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Input of TaskCreate.
///
/// # JSON names
///
/// The model sends these fields under JSON names that differ from the Rust ones:
///
/// | JSON name | Rust field |
/// | --- | --- |
/// | `activeForm` | [`active_form`](Self::active_form) |
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TaskCreateInput {
    /// A brief title for the task, in the imperative form ("Fix login bug")
    #[schemars(length(min = 1))]
    pub subject: String,
    /// What needs to be done, with the detail another agent would need
    pub description: String,
    /// Present continuous form shown while the task is in progress ("Fixing login bug")
    #[serde(default)]
    pub active_form: Option<String>,
    /// Arbitrary data to attach to the task
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// Input of TaskGet.
///
/// # JSON names
///
/// The model sends these fields under JSON names that differ from the Rust ones:
///
/// | JSON name | Rust field |
/// | --- | --- |
/// | `taskId` | [`task_id`](Self::task_id) |
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TaskGetInput {
    /// The id of the task
    #[schemars(length(min = 1, max = tool_core::MAX_NAME_CHARS))]
    pub task_id: String,
}

/// Input of TaskList (none).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskListInput {}

/// The TaskCreate tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskCreate;
/// The TaskGet tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskGet;
/// The TaskList tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskList;
/// The TaskUpdate tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TaskUpdate;

#[async_trait]
impl TypedTool for TaskCreate {
    type Input = TaskCreateInput;
    type Output = TaskRecord;
    const META: ToolMeta = ToolMeta::new("TaskCreate")
        .describe("Create a task in the task list shared by this session and its agents. Use it to plan and track multi-step work: give a short imperative `subject`, a `description` with what needs to be done, and optionally `activeForm` (\"Running tests\") shown while it is in progress. New tasks start as pending with no owner; use TaskUpdate to set dependencies, the owner and the status.")
        .hint("create a task in the shared task list")
        .category(ToolCategory::Task)
        .deferred()
        .concurrency_safe();

    async fn validate(&self, input: &TaskCreateInput, _ctx: &ToolContext) -> ValidationResult {
        if input.subject.trim().is_empty() {
            return ValidationResult::invalid(
                "subject must not be empty: give the task a short title",
            );
        }
        ValidationResult::Valid
    }
    async fn call(
        &self,
        input: TaskCreateInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<TaskRecord>, ToolError> {
        let store = TaskStore::for_context(ctx);
        let task = blocking(move || {
            store.create(
                input.subject.trim().to_owned(),
                input.description,
                input.active_form,
                input.metadata,
            )
        })
        .await?;
        let text = format!("Task #{} created successfully: {}", task.id, task.subject);
        Ok(ToolResult::ok(task).with_text(text))
    }
}

#[async_trait]
impl TypedTool for TaskGet {
    type Input = TaskGetInput;
    type Output = Option<TaskRecord>;
    const META: ToolMeta = ToolMeta::new("TaskGet")
        .describe("Get a task from the task list by id: its subject, status, description, owner and dependencies (the tasks blocking it and the tasks it blocks). Read a task before starting work on it.")
        .hint("read one task of the task list")
        .category(ToolCategory::Task)
        .deferred()
        .read_only();

    async fn call(
        &self,
        input: TaskGetInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Option<TaskRecord>>, ToolError> {
        let store = TaskStore::for_context(ctx);
        let id = input.task_id.clone();
        let task = blocking(move || store.get(&id)).await?;
        let Some(task) = task else {
            return Ok(ToolResult::ok(None).with_text("Task not found"));
        };
        let mut text = format!(
            "Task #{}: {}\nStatus: {}\nDescription: {}",
            task.id,
            task.subject,
            task.status.as_str(),
            task.description
        );
        if let Some(owner) = &task.owner {
            text.push_str(&format!("\nOwner: {owner}"));
        }
        if !task.blocked_by.is_empty() {
            text.push_str(&format!("\nBlocked by: {}", hashes(&task.blocked_by)));
        }
        if !task.blocks.is_empty() {
            text.push_str(&format!("\nBlocks: {}", hashes(&task.blocks)));
        }
        Ok(ToolResult::ok(Some(task)).with_text(text))
    }
}

#[async_trait]
impl TypedTool for TaskList {
    type Input = TaskListInput;
    type Output = Vec<TaskRecord>;
    const META: ToolMeta = ToolMeta::new("TaskList")
        .describe("List every task of the task list: id, status, subject, owner and the unfinished tasks blocking it. Use it to find the next task to work on (pending, no owner, not blocked) and to check overall progress.")
        .hint("list the tasks of the task list")
        .category(ToolCategory::Task)
        .deferred()
        .read_only();

    async fn call(
        &self,
        _input: TaskListInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Vec<TaskRecord>>, ToolError> {
        let store = TaskStore::for_context(ctx);
        let tasks = blocking(move || store.list()).await?;
        if tasks.is_empty() {
            return Ok(ToolResult::ok(tasks).with_text("No tasks found"));
        }
        let lines: Vec<String> = tasks
            .iter()
            .map(|t| {
                let mut line = format!("#{} [{}] {}", t.id, t.status.as_str(), t.subject);
                if let Some(owner) = &t.owner {
                    line.push_str(&format!(" ({owner})"));
                }
                let blockers = blocker_ids(t, &tasks);
                if !blockers.is_empty() {
                    line.push_str(&format!(" [blocked by {}]", blockers.join(", ")));
                }
                line
            })
            .collect();
        Ok(ToolResult::ok(tasks).with_text(lines.join("\n")))
    }
}

#[async_trait]
impl TypedTool for TaskUpdate {
    type Input = TaskUpdateInput;
    type Output = Option<TaskRecord>;
    const META: ToolMeta = ToolMeta::new("TaskUpdate")
        .describe("Update a task of the task list: mark it in_progress when you start it and completed when it is fully done (not when tests fail or work is partial), change its subject or description, set its owner, merge metadata (a null value removes a key), or add dependencies: `addBlocks` lists tasks that cannot start until this one is completed, `addBlockedBy` tasks that must be completed first. Status \"deleted\" removes the task.")
        .hint("update a task's status, owner or dependencies")
        .category(ToolCategory::Task)
        .deferred()
        .concurrency_safe();

    async fn validate(&self, input: &TaskUpdateInput, _ctx: &ToolContext) -> ValidationResult {
        if let Some(s) = &input.subject
            && s.trim().is_empty()
        {
            return ValidationResult::invalid("subject must not be empty when given");
        }
        ValidationResult::Valid
    }
    async fn call(
        &self,
        input: TaskUpdateInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<Option<TaskRecord>>, ToolError> {
        let store = TaskStore::for_context(ctx);
        let shown = input.task_id.trim().trim_start_matches('#').to_owned();
        let outcome = blocking(move || store.update(&input)).await?;
        // A missing task is an ordinary result, not an error, so it never reads as a failure
        // of sibling calls.
        let Some(outcome) = outcome else {
            return Ok(ToolResult::ok(None).with_text(format!("Task #{shown} not found")));
        };
        let text = if outcome.deleted {
            format!("Task #{shown} deleted")
        } else if outcome.fields.is_empty() {
            format!("Task #{shown} unchanged: the values given are the current ones")
        } else {
            format!("Updated task #{shown} {}", outcome.fields.join(", "))
        };
        Ok(ToolResult::ok(outcome.task).with_text(text))
    }
}
