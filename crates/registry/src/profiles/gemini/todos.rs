//! `write_todos` over TodoWrite.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_core::{Tool, ToolError, ToolResult};

use super::with_text;
use crate::profiles::Mapping;

/// Gemini CLI's `write_todos` over TodoWrite.
pub(super) struct WriteTodos;

/// The state of a todo as Gemini CLI names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum GeminiStatus {
    /// Work has not begun
    Pending,
    /// Being worked on; one at a time
    InProgress,
    /// Done
    Completed,
    /// No longer needed
    Cancelled,
    /// Cannot be completed at this time
    Blocked,
}

impl GeminiStatus {
    fn as_str(self) -> &'static str {
        match self {
            GeminiStatus::Pending => "pending",
            GeminiStatus::InProgress => "in_progress",
            GeminiStatus::Completed => "completed",
            GeminiStatus::Cancelled => "cancelled",
            GeminiStatus::Blocked => "blocked",
        }
    }
}

/// A single todo item.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GeminiTodo {
    /// The description of the task.
    description: String,
    /// The current status of the task.
    status: GeminiStatus,
}

/// Input of `write_todos`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WriteTodosInput {
    /// The complete list of todo items. This will replace the existing list.
    todos: Vec<GeminiTodo>,
}

impl Mapping for WriteTodos {
    type Input = WriteTodosInput;

    fn name(&self) -> &'static str {
        "write_todos"
    }

    fn description(&self) -> String {
        "This tool can help you list out the current subtasks that are required to be completed for a given user request. The list of subtasks helps you keep track of the current task, organize complex queries and help ensure that you don't miss any steps. With this list, the user can also see the current progress you are making in executing a given task.\n\nUse this tool for complex queries that require multiple steps. DO NOT use this tool for simple tasks that can be completed in less than 2 steps.\n\n## Task state definitions\n\n- pending: Work has not begun on a given subtask.\n- in_progress: Marked just prior to beginning work on a given subtask. You should only have one subtask as in_progress at a time.\n- completed: Subtask was successfully completed with no errors or issues.\n- cancelled: As you update the todo list, some tasks are not required anymore due to the dynamic nature of the task. In this case, mark the subtasks as cancelled.\n- blocked: Subtask is blocked and cannot be completed at this time.\n\n## Methodology for using this tool\n1. Use this todo list as soon as you receive a user request based on the complexity of the task.\n2. Mark a subtask as in_progress before you begin working on it. You should only have one subtask as in_progress at a time.\n3. Update the subtask list as you proceed; it should reflect your progress and current plans.\n4. Mark a subtask as completed when you have completed it, or cancelled if it is no longer needed.\n5. You must update the todo list as soon as you start, stop or cancel a subtask.".to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["TodoWrite"]
    }

    fn inner_input(&self, input: &WriteTodosInput, _inner: &dyn Tool) -> Result<Value, ToolError> {
        if let Some(i) = input
            .todos
            .iter()
            .position(|t| t.description.trim().is_empty())
        {
            return Err(ToolError::respond(format!(
                "`todos[{i}].description` is empty: each todo must have a non-empty description string"
            )));
        }
        let active = input
            .todos
            .iter()
            .filter(|t| t.status == GeminiStatus::InProgress)
            .count();
        if active > 1 {
            return Err(ToolError::respond(
                "Invalid parameters: Only one task can be \"in_progress\" at a time. Set the other `todos[].status` values to pending.",
            ));
        }
        // TodoWrite has no cancelled or blocked state: a cancelled task is no longer work to
        // do and leaves the host's list; a blocked one waits there as pending.
        let todos: Vec<Value> = input
            .todos
            .iter()
            .filter(|t| t.status != GeminiStatus::Cancelled)
            .map(|t| {
                let status = match t.status {
                    GeminiStatus::Blocked | GeminiStatus::Pending => "pending",
                    GeminiStatus::InProgress => "in_progress",
                    GeminiStatus::Completed | GeminiStatus::Cancelled => "completed",
                };
                json!({
                    "content": t.description,
                    "status": status,
                    "activeForm": t.description,
                })
            })
            .collect();
        Ok(json!({ "todos": todos }))
    }

    fn render(&self, input: &WriteTodosInput, result: ToolResult<Value>) -> ToolResult<Value> {
        if result.is_error {
            return result;
        }
        let text = if input.todos.is_empty() {
            "Successfully cleared the todo list.".to_owned()
        } else {
            let list: Vec<String> = input
                .todos
                .iter()
                .enumerate()
                .map(|(i, t)| format!("{}. [{}] {}", i + 1, t.status.as_str(), t.description))
                .collect();
            format!(
                "Successfully updated the todo list. The current list is now:\n{}",
                list.join("\n")
            )
        };
        with_text(result, text)
    }
}
