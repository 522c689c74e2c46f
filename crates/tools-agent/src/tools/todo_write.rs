//! TodoWrite: the session's todo list, replaced whole on every call.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult, TypedTool, ValidationResult,
};

use crate::stores::state::{read_json, session_file, write_json};

/// What the model reads after a successful TodoWrite.
pub const TODOS_MODIFIED: &str = "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable";

const DESCRIPTION: &str = "Use this tool to create and manage a structured task list for your current coding session. This helps you track progress, organize complex tasks, and demonstrate thoroughness to the user.

When to use it:
- Complex multi-step tasks (3 or more distinct steps)
- When the user provides multiple tasks, or asks for a todo list
- After receiving new instructions: capture the requirements as todos
- When you start a task, mark it in_progress BEFORE beginning work; ideally only one task is in_progress at a time
- After completing a task, mark it completed at once and add any follow-up tasks you found

When NOT to use it: a single, trivial task, or a purely conversational request.

Every call sends the WHOLE list: it replaces the previous one. Each item has `content` (imperative: \"Run tests\"), `activeForm` (present continuous: \"Running tests\") and `status` (pending, in_progress or completed). Only mark a task completed when it is fully done: not when tests fail, the implementation is partial, or errors are unresolved. When every item is completed the list is cleared.";

/// The state of one todo item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started
    Pending,
    /// Being worked on
    InProgress,
    /// Done
    Completed,
}

/// One todo item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TodoItem {
    /// What to do, in the imperative form ("Run tests")
    #[schemars(length(min = 1))]
    pub content: String,
    /// pending, in_progress or completed
    pub status: TodoStatus,
    /// The present continuous form shown while it runs ("Running tests")
    #[schemars(length(min = 1))]
    pub active_form: String,
}

/// Input of TodoWrite.
///
/// # JSON names
///
/// The model sends these fields under JSON names that differ from the Rust ones:
///
/// | JSON name | Rust field |
/// | --- | --- |
/// | `todos[].activeForm` | [`TodoItem::active_form`] |
///
/// `todos[].status` takes the [`TodoStatus`] variants in snake case (`pending`, `in_progress`,
/// `completed`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoWriteInput {
    /// The updated todo list (replaces the previous one)
    pub todos: Vec<TodoItem>,
}

/// Output of TodoWrite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TodoWriteOutput {
    /// The list before this call
    pub old_todos: Vec<TodoItem>,
    /// The list as sent (the stored list is empty when every item is completed)
    pub new_todos: Vec<TodoItem>,
}

/// The TodoWrite tool. The list is kept per session (or per sub-agent) in
/// `<state>/todos/<id>.json`, so a batch of calls, and a host reading the file, see it.
#[derive(Debug, Clone, Copy, Default)]
pub struct TodoWrite;

#[cfg(any(test, feature = "testing"))]
/// The stored todo list of this context's session (or sub-agent).
pub fn current_todos(ctx: &ToolContext) -> Result<Vec<TodoItem>, ToolError> {
    Ok(read_json(&session_file(ctx, "todos", "json"))?.unwrap_or_default())
}

#[async_trait]
impl TypedTool for TodoWrite {
    type Input = TodoWriteInput;
    type Output = TodoWriteOutput;
    const META: ToolMeta = ToolMeta::new("TodoWrite")
        .describe(DESCRIPTION)
        .hint("manage the session task checklist")
        .category(ToolCategory::Todo)
        .deferred();

    async fn validate(&self, input: &TodoWriteInput, _ctx: &ToolContext) -> ValidationResult {
        for (i, item) in input.todos.iter().enumerate() {
            if item.content.trim().is_empty() {
                return ValidationResult::invalid(format!(
                    "todos[{i}].content must not be empty: say what the task is"
                ));
            }
            if item.active_form.trim().is_empty() {
                return ValidationResult::invalid(format!(
                    "todos[{i}].activeForm must not be empty: give the present continuous form, such as \"Running tests\""
                ));
            }
        }
        ValidationResult::Valid
    }
    async fn call(
        &self,
        input: TodoWriteInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<TodoWriteOutput>, ToolError> {
        let path = session_file(ctx, "todos", "json");
        let old_todos: Vec<TodoItem> = read_json(&path)?.unwrap_or_default();
        let all_done = input
            .todos
            .iter()
            .all(|t| t.status == TodoStatus::Completed);
        let stored: &[TodoItem] = if all_done { &[] } else { &input.todos };
        write_json(&path, &stored)?;
        Ok(ToolResult::ok(TodoWriteOutput {
            old_todos,
            new_todos: input.todos,
        })
        .with_text(TODOS_MODIFIED))
    }
}
