//! TeamCreate and TeamDelete: a session creates the one team it leads (its name in the
//! team is `team-lead`) and deletes it with its mailboxes and task list once no teammate
//! runs. The team tools (and SendMessage) show the lead its unread messages as a side
//! message of their results.

use std::path::PathBuf;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult, TypedTool, ValidationResult,
};

use crate::stores::mailbox::render_messages;
use crate::stores::state::{agent_id, blocking, safe_component};
use crate::stores::team_files::{TEAM_LEAD_NAME, TeamStore, teammate};

/// Attaches the lead's unread messages to a result as one side message; `me` is the
/// context's [`sender`](crate::stores::team_files::sender), which the caller has looked up already.
pub(crate) async fn with_inbox<T>(
    result: ToolResult<T>,
    ctx: &ToolContext,
    me: Option<(String, String)>,
) -> ToolResult<T> {
    // A teammate's runner delivers its inbox between turns.
    let (Some((team, name)), None) = (me, teammate(ctx)) else {
        return result;
    };
    let store = TeamStore::for_context(ctx);
    match blocking(move || store.take_unread(&team, &name)).await {
        Ok(messages) if !messages.is_empty() => result.with_side_message(format!(
            "New messages from your teammates:\n{}",
            render_messages(&messages)
        )),
        _ => result,
    }
}

/// Input of TeamCreate.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeamCreateInput {
    /// A name for the team (letters, digits and "-"; another team's name gets a suffix)
    #[schemars(length(min = 1, max = tool_core::MAX_NAME_CHARS))]
    pub team_name: String,
    /// What the team is for
    #[serde(default)]
    pub description: Option<String>,
    /// The lead's agent type (default "team-lead")
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub agent_type: Option<String>,
}

/// Output of TeamCreate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TeamCreateOutput {
    /// The team's name (a new slug when the one asked for was taken)
    pub team_name: String,
    /// The team file
    pub team_file_path: PathBuf,
    /// The lead's agent id
    pub lead_agent_id: String,
}

/// The TeamCreate tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TeamCreate;

#[async_trait]
impl TypedTool for TeamCreate {
    type Input = TeamCreateInput;
    type Output = TeamCreateOutput;
    const META: ToolMeta = ToolMeta::new("TeamCreate")
        .describe("Create a team that you lead, for work that several agents do in parallel and coordinate by messages. Then spawn teammates with the Agent tool (give `name` and `team_name`): each runs in the background with its own mailbox; talk to them with SendMessage, and their messages reach you automatically. One team per leader: use TeamDelete when the work is done (after every teammate has shut down) before creating another. The result gives the team's name (changed when the name was taken), its team file and your agent id.")
        .hint("create a team of agents that message each other")
        .category(ToolCategory::AgentSwarm)
        .deferred();

    async fn validate(&self, input: &TeamCreateInput, ctx: &ToolContext) -> ValidationResult {
        if input.team_name.trim().is_empty() {
            return ValidationResult::invalid("team_name must not be empty: name the team");
        }
        if agent_id(ctx).is_some() {
            return ValidationResult::invalid(
                "Only the main session can create a team: teammates and sub-agents cannot lead one",
            );
        }
        ValidationResult::Valid
    }
    async fn call(
        &self,
        input: TeamCreateInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<TeamCreateOutput>, ToolError> {
        let store = TeamStore::for_context(ctx);
        let session = ctx.session_id().to_owned();
        let cwd = ctx.cwd();
        let team = {
            let store = store.clone();
            blocking(move || {
                store.create(
                    &input.team_name,
                    input.description.filter(|d| !d.trim().is_empty()),
                    &session,
                    input.agent_type.as_deref().unwrap_or(TEAM_LEAD_NAME),
                    &cwd,
                )
            })
            .await?
        };
        let out = TeamCreateOutput {
            team_file_path: store.team_file(&team.name),
            team_name: team.name,
            lead_agent_id: team.lead_agent_id,
        };
        let text = serde_json::to_string(&out)
            .map_err(|e| ToolError::fatal(format!("internal error: {e}")))?;
        let me = Some((out.team_name.clone(), TEAM_LEAD_NAME.to_owned()));
        Ok(with_inbox(ToolResult::ok(out).with_text(text), ctx, me).await)
    }
}

/// Input of TeamDelete (none).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeamDeleteInput {}

/// Output of TeamDelete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TeamDeleteOutput {
    /// Whether a team was deleted
    pub success: bool,
    /// What happened
    pub message: String,
    /// The team, if there was one
    #[serde(skip_serializing_if = "Option::is_none")]
    pub team_name: Option<String>,
}

/// The TeamDelete tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct TeamDelete;

#[async_trait]
impl TypedTool for TeamDelete {
    type Input = TeamDeleteInput;
    type Output = TeamDeleteOutput;
    const META: ToolMeta = ToolMeta::new("TeamDelete")
        .describe("Delete the team you lead: its team file and every mailbox. It refuses while teammates are still running: first ask each to finish with SendMessage {\"type\": \"shutdown_request\"} and wait for their shutdown_response.")
        .hint("delete the team and its mailboxes when the work is done")
        .category(ToolCategory::AgentSwarm)
        .deferred();

    async fn validate(&self, _input: &TeamDeleteInput, ctx: &ToolContext) -> ValidationResult {
        if agent_id(ctx).is_some() {
            return ValidationResult::invalid(
                "Only the team lead can delete the team: teammates and sub-agents cannot",
            );
        }
        ValidationResult::Valid
    }
    async fn call(
        &self,
        _input: TeamDeleteInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<TeamDeleteOutput>, ToolError> {
        let store = TeamStore::for_context(ctx);
        let session = ctx.session_id().to_owned();
        let Some(team) = ({
            let store = store.clone();
            blocking(move || Ok(store.led_by(&session))).await?
        }) else {
            let message = "No team to delete: this session does not lead a team.".to_owned();
            return Ok(ToolResult::ok(TeamDeleteOutput {
                success: true,
                message: message.clone(),
                team_name: None,
            })
            .with_text(message));
        };
        // The lead's unread messages are shown before they are deleted with the team. They
        // are read, not taken: when the deletion is refused they stay unread for later.
        let pending = {
            let (store, name) = (store.clone(), team.name.clone());
            blocking(move || store.inbox(&name, TEAM_LEAD_NAME))
                .await
                .unwrap_or_default()
                .into_iter()
                .filter(|m| !m.read)
                .collect::<Vec<_>>()
        };
        let name = team.name.clone();
        let tasks = ctx
            .private_state_dir()
            .join("tasks")
            .join(safe_component(&team.name));
        let inboxes = blocking(move || {
            let inboxes = store.delete(&name)?;
            // The team's shared task list goes with it.
            if tasks.is_dir() {
                std::fs::remove_dir_all(&tasks).map_err(|e| ToolError::io(&tasks, e))?;
            }
            Ok(inboxes)
        })
        .await?;
        let message = format!(
            "Cleaned up team \"{}\": its team file, {inboxes} mailbox(es) and its task list were deleted.",
            team.name
        );
        let mut result = ToolResult::ok(TeamDeleteOutput {
            success: true,
            message: message.clone(),
            team_name: Some(team.name),
        })
        .with_text(message);
        if !pending.is_empty() {
            result = result.with_side_message(format!(
                "New messages from your teammates:\n{}",
                render_messages(&pending)
            ));
        }
        Ok(result)
    }
}
