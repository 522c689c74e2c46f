//! Agent tools for agent-tools: sub-agents, skills, todos, plan mode, worktrees, questions
//! to the user, messages to the user, project settings and tool search; with feature
//! `v2-todo`, shared task lists.
//!
//! # Overview
//!
//! - [`TodoWrite`]: the session's todo list, replaced whole on every call and cleared when
//!   every item is completed; kept in `<state>/todos/`.
//! - [`EnterPlanMode`] / [`ExitPlanMode`]: switch the session's [`tool_core::PermissionMode`]
//!   to plan and back (ExitPlanMode asks the user), with the plan in [`plan_file`].
//! - [`AskUserQuestion`]: 1–4 multiple-choice questions, answered by the host's
//!   [`tool_core::QuestionPrompter`] (for example [`tool_core::LinePrompter`] on a terminal) or by `answers` in the
//!   input; refused clearly when nobody can answer.
//! - [`SendUserMessage`] (alias `Brief`): a message with checked attachments, delivered to the
//!   host's [`UserMessageSink`].
//! - [`Config`]: reads and writes this project's `.agent-tools/settings.json` keys
//!   ([`SETTINGS`]); reads are allowed, writes ask.
//! - [`ToolSearch`]: finds deferred tools in the session's [`ToolCatalog`] by `select:`,
//!   scored keywords, `+required` words or an `mcp__server` prefix.
//! - With feature `v2-todo`: `TaskCreate`, `TaskGet`, `TaskUpdate`, `TaskList` over a
//!   `TaskStore`, one JSON file per task with a high-water mark and a lock file, so several
//!   processes share one list; dependencies (blocks / blockedBy) and owners.
//! - [`Skill`]: skills from `<state dir>/skills/` (the person's) and
//!   `.agent-tools/skills/<name>/SKILL.md` (the project's; one whose name the person's own
//!   skill has is `project:<name>`) — front matter name, description, allowed-tools, model,
//!   disable-model-invocation; the result carries the instructions for the host to inject,
//!   and the skill's allowed-tools become session allow rules after a question that lists
//!   them. A project file no person approved loads without allowed-tools and model
//!   ([`review_project_definitions`] is what `agent-tools trust` shows of skills, agents and
//!   cron jobs). [`skill_listing`] gives hosts the budgeted listing.
//! - [`EnterWorktree`] / [`ExitWorktree`]: a real `git worktree add` under
//!   `.agent-tools/worktrees/<name>` on branch `worktree-<name>`, the session's working
//!   directory switched; `keep` or `remove`, refusing to remove uncommitted or new commits
//!   unless `discard_changes`.
//! - [`Agent`] (alias `Task`): runs a sub-agent through the session's [`AgentRunner`]:
//!   [`ApiRunner`] (an Anthropic Messages API tool-use loop over the session's tools, filtered
//!   by the sub-agent rules: no nesting, a background agent's allow-list) or [`CommandRunner`] (a configured command);
//!   built-in types general-purpose, Explore and Plan plus the person's `<state>/agents/*.md`
//!   and the project's `.agent-tools/agents/*.md` (never under a taken name);
//!   `run_in_background` through the context's task manager. [`runner_from_settings`] picks
//!   the runner from the `agent` settings section and `ANTHROPIC_API_KEY`. `isolation:
//!   "worktree"` runs the agent in a fresh worktree (removed when it changed nothing, else
//!   named in the result), `cwd` elsewhere (inside the caller's working directories, else it
//!   asks), `mode` in a permission mode no more permissive than the caller's; the sub-agent's
//!   mode follows the caller's (into plan mode too) for as long as it runs. With `name` (and `team_name`) the agent is spawned as a **teammate**:
//!   an active member of the team, run in the background with a [`TeammateIdentity`] in its
//!   context; the API runner hands it its mailbox between turns (as user messages), lets it
//!   idle until a message arrives when it ends a turn (telling the lead with an
//!   `idle_notification`), and ends it after it approves a `shutdown_request`; it is then
//!   marked inactive and the lead gets a `teammate_terminated` message. Teammates cannot
//!   spawn teammates.
//! - **Continuation:** the API runner keeps every other sub-agent's conversation in
//!   `<state>/agent-runs/<agentId>.json`; SendMessage to that id (or to a
//!   background agent's task id) queues the message for the agent's next tool round while it
//!   runs, and resumes a stopped agent in the background from its transcript plus the
//!   message. The sync result's `agentId: X (use SendMessage with to: 'X' to continue this
//!   agent)` is offered only when a transcript exists (not with the command runner).
//! - [`SendMessage`], [`TeamCreate`], [`TeamDelete`] (deferred): teams and mailboxes — `<state>/teams/<team>/config.json` and one `inboxes/<name>.json` per
//!   member, written atomically under file locks so several processes share them. A session
//!   leads at most one team (its members start with `team-lead`); SendMessage goes to a
//!   member's name or agent id, `*` (every member but the sender), with plain text and a
//!   `summary`, or structured `shutdown_request` / `shutdown_response` / `plan_approval_response`
//!   messages. **The lead's inbox:** a host calls [`take_inbox`] between turns (and renders
//!   the messages with [`render_messages`]); the team tools also attach the lead's unread
//!   messages to their own results as a side message. TeamDelete refuses while a teammate
//!   runs (a member whose process is gone no longer counts).
//! - **Plan approval:** a teammate in plan mode calling ExitPlanMode sends its plan to the lead as
//!   a `plan_approval_request` (pending in `plan_requests.json`) and stays in plan
//!   mode; the lead's `plan_approval_response` must name a pending request_id, rejecting needs
//!   feedback, and approval switches the teammate to the mode it should have.
//! - With feature `cron`: `CronCreate`, `CronDelete`, `CronList` (5-field expressions checked
//!   with `croner`, one-shot and recurring, at most 50 jobs, 7-day expiry, durable jobs in
//!   `.agent-tools/scheduled_tasks.json`, firing times jittered per job id) and the
//!   `CronScheduler` that hands due prompts to a callback of the host.
//! - [`tools()`] returns the tools ready for a pool.
//!
//! Host services are looked up in the context's [`tool_core::Services`] as
//! `Arc<dyn QuestionPrompter>`, `Arc<dyn UserMessageSink>`, `Arc<dyn AgentRunner>`,
//! [`ToolCatalog`]; a sub-agent's context carries an `Arc<AgentIdentity>`, a teammate's also
//! an `Arc<TeammateIdentity>`.
//!
//! # Example
//!
//! ```
//! use serde_json::json;
//! use tool_core::{PermissionMode, ToolContext, ToolPool};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! let dir = tempfile::tempdir()?;
//! let ctx = ToolContext::builder(dir.path()).state_dir(dir.path().join("state")).build();
//! let pool = ToolPool::new(tools_agent::tools());
//! let todos = json!({"todos": [{"content": "Run tests", "status": "in_progress", "activeForm": "Running tests"}]});
//! let result = pool.call("TodoWrite", todos, &ctx).await;
//! assert!(result.text().starts_with("Todos have been modified successfully."));
//! let result = pool.call("EnterPlanMode", json!({}), &ctx).await;
//! assert!(!result.is_error);
//! assert_eq!(ctx.permission_mode(), PermissionMode::Plan);
//! # Ok(())
//! # }
//! ```

mod runners;
mod stores;
mod tools;

use std::sync::Arc;

// The tools, each with its input and output types.
#[cfg(feature = "cron")]
pub use stores::cron_jobs::CronJob;
pub use stores::git_worktrees::ActiveWorktree;
#[cfg(feature = "v2-todo")]
pub use stores::task_records::{TaskRecord, TaskState, TaskUpdateInput};
pub use tools::agent::{
    Agent, AgentInput, AgentMode, AgentModel, AgentOutput, AgentStatus, Isolation,
};
pub use tools::ask_user_question::{
    AskUserQuestion, AskUserQuestionInput, AskUserQuestionOutput, DECLINED, QuestionMetadata,
};
pub use tools::config::{
    Config, ConfigInput, ConfigOperation, ConfigOutput, ConfigValue, SETTINGS, SettingKind,
    SettingSpec,
};
#[cfg(feature = "cron")]
pub use tools::cron::{
    CronCreate, CronCreateInput, CronDelete, CronDeleteInput, CronList, CronListEntry,
    CronListInput,
};
pub use tools::plan_mode::{
    AllowedPrompt, AllowedPromptTool, EnterPlanMode, EnterPlanModeInput, EnterPlanModeOutput,
    ExitPlanMode, ExitPlanModeInput, ExitPlanModeOutput,
};
pub use tools::send_message::{
    MessageBody, SendMessage, SendMessageInput, SendMessageOutput, StructuredMessage,
};
pub use tools::send_user_message::{
    Attachment, MessageStatus, SendUserMessage, SendUserMessageInput, UserMessage,
};
pub use tools::skill::{Skill, SkillInput, SkillOutput};
#[cfg(feature = "v2-todo")]
pub use tools::task_list::{
    TaskCreate, TaskCreateInput, TaskGet, TaskGetInput, TaskList, TaskListInput, TaskUpdate,
};
pub use tools::team::{
    TeamCreate, TeamCreateInput, TeamCreateOutput, TeamDelete, TeamDeleteInput, TeamDeleteOutput,
};
pub use tools::todo_write::{TodoItem, TodoStatus, TodoWrite, TodoWriteInput, TodoWriteOutput};
pub use tools::tool_search::{ToolSearch, ToolSearchInput, ToolSearchOutput};
pub use tools::worktree::{
    EnterWorktree, EnterWorktreeInput, ExitAction, ExitWorktree, ExitWorktreeInput,
    ExitWorktreeOutput,
};

// The services a host installs (see `install`) and the identities a sub-agent's context
// carries.
pub use runners::command::CommandRunner;
pub use runners::from_settings::runner_from_settings;
pub use runners::{AgentOutcome, AgentRequest, AgentRunner, AgentSettings, api::ApiRunner};
pub use stores::catalog::ToolCatalog;
pub use stores::state::AgentIdentity;
#[cfg(feature = "v2-todo")]
pub use stores::task_records::TaskListId;
pub use stores::team_files::TeammateIdentity;
pub use tools::send_user_message::UserMessageSink;

// What a host calls around the tools: the lead's inbox between turns, the cron scheduler,
// the plan file, the skill listing, what `trust` reviews.
#[cfg(feature = "cron")]
pub use stores::cron_jobs::{CronFire, CronScheduler, cron_scheduler};
pub use stores::mailbox::{InboxMessage, render_messages, take_inbox};
pub use stores::plan_requests::plan_file;
pub use stores::project::review_project_definitions;
pub use tools::skill::{SKILL_LISTING_BUDGET, skill_listing};

/// What the crate's integration tests reach beyond the API: the stores underneath the tools,
/// the helpers the tools compute with, and the exact texts of their refusals. Not part of
/// the API; nothing outside tests uses it.
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing {
    pub use crate::runners::agent_types::{
        AgentDefinition, builtin_agents, load_agents, tools_for_agent,
    };
    pub use crate::runners::subagent_context;
    #[cfg(feature = "cron")]
    pub use crate::stores::cron_jobs::{
        MAX_RECURRING_JITTER, ONE_SHOT_EARLY, TOO_MANY_JOBS, fire_time, jitter, parse_cron,
    };
    #[cfg(feature = "v2-todo")]
    pub use crate::stores::task_records::{HIGH_WATER_MARK, TaskStore};
    pub use crate::stores::team_files::{TeamFile, TeamMember, TeamStore};
    pub use crate::tools::agent::{CWD_WITH_ISOLATION, TEAMMATES_CANNOT_SPAWN};
    pub use crate::tools::ask_user_question::{ASK_IN_AGENT, NOT_UNIQUE};
    pub use crate::tools::plan_mode::{
        ENTERED_PLAN_MODE, NOT_IN_PLAN_MODE, PLAN_APPROVED, PLAN_MODE_IN_AGENT, PLAN_SUBMITTED,
    };
    pub use crate::tools::send_message::{
        EMPTY_RECIPIENT, NO_CROSS_SESSION, NO_STRUCTURED_BROADCAST, PLAN_REJECTION_NEEDS_FEEDBACK,
        PLAN_REQUEST_ID_REQUIRED, REJECTION_NEEDS_REASON, SHUTDOWN_RESPONSE_TO_LEAD,
        SUMMARY_REQUIRED,
    };
    pub use crate::tools::skill::{SkillInfo, SkillSource, list_skills};
    pub use crate::tools::todo_write::{TODOS_MODIFIED, current_todos};
    pub use crate::tools::tool_search::{NO_MATCH, name_parts};
    pub use crate::tools::worktree::{ALREADY_IN_WORKTREE, NO_WORKTREE_SESSION};
}

/// What a host gives the agent tools; every part is optional.
#[derive(Clone, Default)]
pub struct AgentServices {
    /// The session's tools, for ToolSearch and for sub-agents (else ToolSearch finds nothing
    /// and sub-agents get no tools)
    pub catalog: Option<ToolCatalog>,
    /// What runs a sub-agent (`ApiRunner`, `CommandRunner`, or your own; else Agent and
    /// SendMessage refuse)
    pub runner: Option<Arc<dyn AgentRunner>>,
    /// Where SendUserMessage delivers (else it refuses)
    pub user_messages: Option<Arc<dyn UserMessageSink>>,
}

/// Wires the agent tools' services into a session being built, each under the type the
/// tools read. AskUserQuestion's person is `ToolContextBuilder::question_prompter`.
pub fn install(
    mut builder: tool_core::ToolContextBuilder,
    services: AgentServices,
) -> tool_core::ToolContextBuilder {
    if let Some(catalog) = services.catalog {
        builder = builder.service(catalog);
    }
    if let Some(runner) = services.runner {
        builder = builder.service(runner);
    }
    if let Some(sink) = services.user_messages {
        builder = builder.service(sink);
    }
    builder
}

/// Every finished tool of this crate compiled in, ready for a pool.
pub fn tools() -> Vec<Arc<dyn tool_core::Tool>> {
    #[allow(unused_mut)]
    let mut tools: Vec<Arc<dyn tool_core::Tool>> = vec![
        Arc::new(tool_core::Typed::new(TodoWrite)),
        Arc::new(tool_core::Typed::new(EnterPlanMode)),
        Arc::new(tool_core::Typed::new(ExitPlanMode)),
        Arc::new(tool_core::Typed::new(AskUserQuestion)),
        Arc::new(tool_core::Typed::new(SendUserMessage)),
        Arc::new(tool_core::Typed::new(Config)),
        Arc::new(tool_core::Typed::new(ToolSearch)),
        Arc::new(tool_core::Typed::new(Skill)),
        Arc::new(tool_core::Typed::new(EnterWorktree)),
        Arc::new(tool_core::Typed::new(ExitWorktree)),
        Arc::new(tool_core::Typed::new(Agent)),
        Arc::new(tool_core::Typed::new(SendMessage)),
        Arc::new(tool_core::Typed::new(TeamCreate)),
        Arc::new(tool_core::Typed::new(TeamDelete)),
    ];
    #[cfg(feature = "cron")]
    tools.extend([
        Arc::new(tool_core::Typed::new(CronCreate)) as Arc<dyn tool_core::Tool>,
        Arc::new(tool_core::Typed::new(CronDelete)),
        Arc::new(tool_core::Typed::new(CronList)),
    ]);
    #[cfg(feature = "v2-todo")]
    tools.extend([
        Arc::new(tool_core::Typed::new(TaskCreate)) as Arc<dyn tool_core::Tool>,
        Arc::new(tool_core::Typed::new(TaskGet)),
        Arc::new(tool_core::Typed::new(TaskList)),
        Arc::new(tool_core::Typed::new(TaskUpdate)),
    ]);
    tools
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{AgentServices, ToolCatalog, install};

    #[test]
    fn install_puts_each_service_under_the_type_the_tools_read() {
        let dir = std::env::temp_dir();
        let services = AgentServices {
            catalog: Some(ToolCatalog::new(Vec::new)),
            ..AgentServices::default()
        };
        let ctx = install(tool_core::ToolContext::builder(&dir), services).build();
        assert!(ctx.services().get::<ToolCatalog>().is_some());
        assert!(
            ctx.services()
                .get::<Arc<dyn super::AgentRunner>>()
                .is_none()
        );
    }
}
