//! codex's `update_plan` over TodoWrite: the plan is the session's todo list.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_core::{ContentBlock, Tool, ToolError, ToolResult};

use crate::profiles::Mapping;

/// codex's `update_plan`.
pub(super) struct UpdatePlan;

/// One step of the plan.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct PlanItem {
    step: String,
    /// One of: pending, in_progress, completed
    status: String,
}

/// Input of `update_plan`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct UpdatePlanInput {
    #[serde(default)]
    explanation: Option<String>,
    /// The list of steps
    plan: Vec<PlanItem>,
}

impl Mapping for UpdatePlan {
    type Input = UpdatePlanInput;

    fn name(&self) -> &'static str {
        "update_plan"
    }

    fn description(&self) -> String {
        "Updates the task plan.\nProvide an optional explanation and a list of plan items, each with a step and status.\nAt most one step can be in_progress at a time.\n".to_owned()
    }

    fn checked_as(&self) -> &'static [&'static str] {
        &["TodoWrite"]
    }

    // codex always declares its plan tool.
    fn deferred(&self, _inner: bool) -> bool {
        false
    }

    fn inner_input(&self, input: &UpdatePlanInput, _inner: &dyn Tool) -> Result<Value, ToolError> {
        let _ = &input.explanation;
        let mut todos = Vec::with_capacity(input.plan.len());
        for (i, item) in input.plan.iter().enumerate() {
            let step = item.step.trim();
            if step.is_empty() {
                return Err(ToolError::respond(format!(
                    "`plan[{i}].step` is empty: say what the step is, such as \"Run the tests\""
                )));
            }
            let status = item.status.trim();
            if !matches!(status, "pending" | "in_progress" | "completed") {
                return Err(ToolError::respond(format!(
                    "`plan[{i}].status` is {:?}: use one of pending, in_progress, completed",
                    item.status
                )));
            }
            todos.push(json!({ "content": step, "status": status, "activeForm": step }));
        }
        Ok(json!({ "todos": todos }))
    }

    fn render(&self, _input: &UpdatePlanInput, result: ToolResult<Value>) -> ToolResult<Value> {
        if result.is_error {
            return result;
        }
        ToolResult {
            content: vec![ContentBlock::text("Plan updated")],
            ..result
        }
    }
}
