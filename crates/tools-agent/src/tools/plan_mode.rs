//! EnterPlanMode and ExitPlanMode: switch the session to plan mode and back, with the plan
//! kept in a file under the state directory. A teammate in plan mode asks
//! its team lead to approve the plan through the lead's mailbox instead of asking a person.

use std::path::PathBuf;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tool_core::{
    AskKind, PermissionDecision, PermissionMode, ToolCategory, ToolContext, ToolError, ToolMeta,
    ToolResult, TypedTool, ValidationResult,
};

use crate::stores::plan_requests::plan_file;
use crate::stores::state::{agent_id, blocking, session};
use crate::stores::team_files::{TeamStore, TeammateIdentity, teammate};

/// The first line of a teammate's ExitPlanMode result.
pub const PLAN_SUBMITTED: &str = "Your plan has been submitted to the team lead for approval.";
/// The first line of EnterPlanMode's result.
pub const ENTERED_PLAN_MODE: &str = "Entered plan mode. You should now focus on exploring the codebase and designing an implementation approach.";
/// ExitPlanMode's validation message outside plan mode (validation error code 1).
pub const NOT_IN_PLAN_MODE: &str = "You are not in plan mode. This tool is only for exiting plan mode after writing a plan. If your plan was already approved, continue with implementation.";
/// EnterPlanMode inside a sub-agent.
pub const PLAN_MODE_IN_AGENT: &str = "EnterPlanMode tool cannot be used in agent contexts";
/// The first line of ExitPlanMode's result.
pub const PLAN_APPROVED: &str = "User has approved your plan. You can now start coding. Start with updating your todo list if applicable";

const ENTER_DESCRIPTION: &str = "Use this tool proactively before starting a non-trivial implementation task: it switches the session to plan mode, where you explore the codebase read-only and write a plan for the user to approve before any file is changed.

Use it when the task has several valid approaches, touches many files, needs architectural decisions, or the requirements are unclear. Skip it for small fixes, one-line changes, or pure research.

In plan mode you may only read and search; the one file you may write is the plan file named in this tool's result. When the plan is ready, call ExitPlanMode to ask the user to approve it.";

const EXIT_DESCRIPTION: &str = "Use this tool when you are in plan mode and have finished writing your plan to the plan file: it asks the user to approve the plan and, on approval, leaves plan mode so you can start implementing.

The plan is read from the plan file EnterPlanMode named; write it there first. A teammate in plan mode sends the plan to its team lead instead and stays in plan mode until the lead's answer arrives as a message. Only use this tool for tasks that need code to be written, not for research. Do not use AskUserQuestion to ask \"is this plan okay?\": that is what this tool does.";

/// Input of EnterPlanMode (none).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EnterPlanModeInput {}

/// Output of EnterPlanMode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnterPlanModeOutput {
    /// The mode the session was in (restored by ExitPlanMode)
    pub previous_mode: PermissionMode,
    /// Where to write the plan
    pub plan_file: PathBuf,
}

/// The EnterPlanMode tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnterPlanMode;

#[async_trait]
impl TypedTool for EnterPlanMode {
    type Input = EnterPlanModeInput;
    type Output = EnterPlanModeOutput;
    const META: ToolMeta = ToolMeta::new("EnterPlanMode")
        .describe(ENTER_DESCRIPTION)
        .hint("switch to read-only planning before implementing")
        .category(ToolCategory::PlanMode)
        .deferred()
        .read_only();

    async fn validate(&self, _input: &EnterPlanModeInput, ctx: &ToolContext) -> ValidationResult {
        if agent_id(ctx).is_some() {
            return ValidationResult::invalid(PLAN_MODE_IN_AGENT);
        }
        // Entering again would overwrite the mode to restore on exit; refuse instead.
        if ctx.permission_mode() == PermissionMode::Plan {
            return ValidationResult::invalid(format!(
                "You are already in plan mode. Write your plan to {} and call ExitPlanMode when it is ready.",
                plan_file(ctx).display()
            ));
        }
        ValidationResult::Valid
    }
    async fn call(
        &self,
        _input: EnterPlanModeInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<EnterPlanModeOutput>, ToolError> {
        let previous_mode = ctx.permission_mode();
        let state = session(ctx);
        if let Ok(mut pre) = state.pre_plan_mode.lock() {
            *pre = Some(previous_mode);
        }
        ctx.set_permission_mode(PermissionMode::Plan);
        let plan_file = plan_file(ctx);
        let text = format!(
            "{ENTERED_PLAN_MODE}

In plan mode, you should:
1. Thoroughly explore the codebase to understand existing patterns
2. Identify similar features and architectural approaches
3. Consider multiple approaches and their trade-offs
4. Use AskUserQuestion if you need to clarify the approach
5. Design a concrete implementation strategy and write it to the plan file: {}
6. When ready, use ExitPlanMode to present your plan for approval

Remember: DO NOT write or edit any files yet, except the plan file. This is a read-only exploration and planning phase.",
            plan_file.display()
        );
        Ok(ToolResult::ok(EnterPlanModeOutput {
            previous_mode,
            plan_file,
        })
        .with_text(text))
    }
}

/// A permission the plan needs, described by its effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AllowedPrompt {
    /// The tool the permission applies to
    pub tool: AllowedPromptTool,
    /// A semantic description of the action, such as "run tests" or "install dependencies"
    pub prompt: String,
}

/// Tools an [`AllowedPrompt`] may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AllowedPromptTool {
    /// Shell commands
    Bash,
}

/// Input of ExitPlanMode. Other keys are accepted and passed through.
///
/// # JSON names
///
/// The model sends these fields under JSON names that differ from the Rust ones:
///
/// | JSON name | Rust field |
/// | --- | --- |
/// | `allowedPrompts` | [`allowed_prompts`](Self::allowed_prompts) |
/// | `any other key` | [`other`](Self::other) (kept as given) |
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ExitPlanModeInput {
    /// Prompt-based permissions the plan needs to be carried out
    #[serde(default, rename = "allowedPrompts")]
    pub allowed_prompts: Option<Vec<AllowedPrompt>>,
    /// Other keys (passed through)
    #[serde(flatten)]
    #[schemars(skip)]
    pub other: Map<String, Value>,
}

/// Output of ExitPlanMode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitPlanModeOutput {
    /// The approved plan
    pub plan: String,
    /// The plan file
    pub file_path: PathBuf,
    /// The mode restored
    pub mode: PermissionMode,
    /// Permissions the plan asked for
    pub allowed_prompts: Vec<AllowedPrompt>,
    /// For a teammate: the plan_approval_request sent to the team lead (it stays in plan
    /// mode until the lead approves)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// The ExitPlanMode tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExitPlanMode;

#[async_trait]
impl TypedTool for ExitPlanMode {
    type Input = ExitPlanModeInput;
    type Output = ExitPlanModeOutput;
    const META: ToolMeta = ToolMeta::new("ExitPlanMode")
        .describe(EXIT_DESCRIPTION)
        .hint("present the plan for approval and start coding")
        .category(ToolCategory::PlanMode)
        .concurrency_safe()
        .requires_user_interaction();

    async fn validate(&self, _input: &ExitPlanModeInput, ctx: &ToolContext) -> ValidationResult {
        if ctx.permission_mode() != PermissionMode::Plan {
            return ValidationResult::invalid_code(NOT_IN_PLAN_MODE, 1);
        }
        // Asking the user to approve nothing helps no one, so the plan file must exist and
        // say something.
        let path = plan_file(ctx);
        match std::fs::read_to_string(&path) {
            Ok(text) if !text.trim().is_empty() => ValidationResult::Valid,
            _ => ValidationResult::invalid(format!(
                "No plan found at {}. Write your plan to that file, then call ExitPlanMode again.",
                path.display()
            )),
        }
    }
    async fn check_permission(
        &self,
        input: &ExitPlanModeInput,
        ctx: &ToolContext,
    ) -> PermissionDecision {
        // A teammate asks its lead, through the mailbox, not a person.
        if teammate(ctx).is_some() {
            return PermissionDecision::Allow;
        }
        PermissionDecision::Ask {
            reason: exit_question(input, ctx),
            suggestions: Vec::new(),
            kind: AskKind::Interaction,
        }
    }
    async fn call(
        &self,
        input: ExitPlanModeInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<ExitPlanModeOutput>, ToolError> {
        let path = plan_file(ctx);
        let plan = std::fs::read_to_string(&path).map_err(|e| ToolError::io(&path, e))?;
        if let Some(mate) = teammate(ctx) {
            return submit_to_lead(&mate, plan, path, input, ctx).await;
        }
        let state = session(ctx);
        let previous = state
            .pre_plan_mode
            .lock()
            .ok()
            .and_then(|mut p| p.take())
            .unwrap_or_default();
        // Never restore plan itself (a session that started in plan mode goes to default).
        let mode = if previous == PermissionMode::Plan {
            PermissionMode::Default
        } else {
            previous
        };
        ctx.set_permission_mode(mode);
        let allowed_prompts = input.allowed_prompts.unwrap_or_default();
        let mut text = format!(
            "{PLAN_APPROVED}\n\nYour plan has been saved to: {}\nYou can refer back to it if needed during implementation.\n\n## Approved Plan:\n{}",
            path.display(),
            plan.trim_end()
        );
        if !allowed_prompts.is_empty() {
            text.push_str("\n\nPermissions requested for this plan:");
            for p in &allowed_prompts {
                text.push_str(&format!("\n- {:?}: {}", p.tool, p.prompt));
            }
        }
        Ok(ToolResult::ok(ExitPlanModeOutput {
            plan,
            file_path: path,
            mode,
            allowed_prompts,
            request_id: None,
        })
        .with_text(text))
    }
}

/// The plan lines a question to approve a plan shows; the rest is named by its file.
pub const PLAN_QUESTION_LINES: usize = 40;

/// The question ExitPlanMode asks: what approving it does, the plan itself (its first
/// [`PLAN_QUESTION_LINES`] lines and where the rest is) and the permissions it asks for.
fn exit_question(input: &ExitPlanModeInput, ctx: &ToolContext) -> String {
    let path = plan_file(ctx);
    let plan = std::fs::read_to_string(&path).unwrap_or_default();
    let restored = session(ctx)
        .pre_plan_mode
        .lock()
        .ok()
        .and_then(|p| *p)
        .filter(|m| *m != PermissionMode::Plan)
        .unwrap_or_default();
    let lines: Vec<&str> = plan.trim_end().lines().collect();
    let mut text = format!(
        "Exit plan mode and start implementing this plan? Approving returns the session to the {restored} permission mode, so it can change files again.\n\nPlan ({}):\n",
        path.display()
    );
    for line in lines.iter().take(PLAN_QUESTION_LINES) {
        text.push_str(line);
        text.push('\n');
    }
    if lines.len() > PLAN_QUESTION_LINES {
        text.push_str(&format!(
            "… ({} more lines: read the whole plan in {})\n",
            lines.len() - PLAN_QUESTION_LINES,
            path.display()
        ));
    }
    if let Some(prompts) = input.allowed_prompts.as_ref().filter(|p| !p.is_empty()) {
        text.push_str("\nThe plan also asks for permission to:");
        for p in prompts {
            text.push_str(&format!("\n- {:?}: {}", p.tool, p.prompt));
        }
    }
    text.trim_end().to_owned()
}

/// A teammate's ExitPlanMode: the plan goes to the team lead's inbox as a
/// `plan_approval_request`; the teammate stays in plan mode until the lead's
/// plan_approval_response arrives (its runner switches the mode on approval).
async fn submit_to_lead(
    mate: &TeammateIdentity,
    plan: String,
    path: PathBuf,
    input: ExitPlanModeInput,
    ctx: &ToolContext,
) -> Result<ToolResult<ExitPlanModeOutput>, ToolError> {
    let allowed_prompts = input.allowed_prompts.unwrap_or_default();
    let prompts = if allowed_prompts.is_empty() {
        None
    } else {
        serde_json::to_value(&allowed_prompts).ok()
    };
    let store = TeamStore::for_context(ctx);
    let (team, name, text, file) = (
        mate.team_name.clone(),
        mate.name.clone(),
        plan.clone(),
        path.clone(),
    );
    let request_id =
        blocking(move || store.request_plan_approval(&team, &name, &text, &file, prompts)).await?;
    let text = format!(
        "{PLAN_SUBMITTED}\n\nRequest ID: {request_id}\nPlan file: {}\n\nYou are still in plan mode: do not change any file except the plan file. End your turn and wait: the lead's plan_approval_response arrives as a message. If it approves, you leave plan mode and can implement the plan; if it rejects, revise the plan with its feedback and call ExitPlanMode again.",
        path.display()
    );
    Ok(ToolResult::ok(ExitPlanModeOutput {
        plan,
        file_path: path,
        mode: PermissionMode::Plan,
        allowed_prompts,
        request_id: Some(request_id),
    })
    .with_text(text))
}
