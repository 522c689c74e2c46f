//! Agent (alias Task): runs a sub-agent through the session's runner service in the
//! foreground or as a background task, in a fresh worktree or another directory, or spawns
//! it as a teammate of the team the session leads.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tool_core::{
    CancellationToken, PermissionDecision, PermissionMode, PermissionRule, RuleBehavior, TaskKind,
    TaskRun, TaskSpec, Tool, ToolCategory, ToolContext, ToolError, ToolMeta, ToolResult, TypedTool,
    ValidationResult,
};

use crate::runners::agent_types::{AgentDefinition, builtin_agents, load_agents, tools_for_agent};
use crate::runners::{
    AgentRequest, AgentRunner, NO_OUTPUT, available_tools, finish_task, subagent_context_in,
};
use crate::stores::git_worktrees::{
    ActiveWorktree, create_worktree, pending_work, remove_worktree,
};
use crate::stores::mailbox::{InboxMessage, TeamMessage};
use crate::stores::state::{agent_id, blocking, now_ms, safe_component};
use crate::stores::team_files::{
    TEAM_LEAD_NAME, TeamFile, TeamMember, TeamStore, TeammateIdentity, team_slug, teammate,
};
use crate::stores::transcripts::RunStore;

/// Input of Agent.
///
/// # JSON names
///
/// Every field's JSON name is its Rust name.
///
/// `model` takes the [`AgentModel`] variants in lower case, `mode` the [`AgentMode`] variants
/// in camel case (`acceptEdits`, `bypassPermissions`, ...), `isolation` the [`Isolation`]
/// variants in lower case.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentInput {
    /// A short (3-5 word) description of the task
    #[schemars(length(min = 1))]
    pub description: String,
    /// The task for the agent to perform
    #[schemars(length(min = 1))]
    pub prompt: String,
    /// The type of agent to use (default "general-purpose")
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub subagent_type: Option<String>,
    /// The model for this agent; overrides the agent definition's
    #[serde(default)]
    pub model: Option<AgentModel>,
    /// Run the agent in the background; you will be notified when it completes
    #[serde(default)]
    pub run_in_background: Option<bool>,
    /// A name for the agent. With team_name (or inside the team you lead) it is spawned as a
    /// teammate that others reach with SendMessage
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub name: Option<String>,
    /// The team to spawn the agent into as a teammate (default: the team you lead)
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_NAME_CHARS))]
    pub team_name: Option<String>,
    /// The permission mode the agent's tools run in (no more permissive than yours)
    #[serde(default)]
    pub mode: Option<AgentMode>,
    /// "worktree": the agent works in a fresh git worktree of the repository; kept (and
    /// reported) when it changed something, removed otherwise
    #[serde(default)]
    pub isolation: Option<Isolation>,
    /// The agent's working directory (absolute, or relative to yours); not with isolation
    #[serde(default)]
    #[schemars(length(max = tool_core::MAX_PATH_CHARS))]
    pub cwd: Option<String>,
    /// Where `cwd` resolved when the permission check looked at it: the call runs the agent
    /// exactly there (a link swapped in afterwards fails the call instead of moving it)
    #[serde(skip)]
    #[schemars(skip)]
    checked_cwd: CheckedDir,
}

/// The directory the permission check approved, carried from the check to the call in the
/// same parsed input.
#[derive(Debug, Default)]
pub(crate) struct CheckedDir(std::sync::Mutex<Option<PathBuf>>);

impl Clone for CheckedDir {
    fn clone(&self) -> Self {
        CheckedDir(std::sync::Mutex::new(self.get()))
    }
}

impl CheckedDir {
    pub(crate) fn get(&self) -> Option<PathBuf> {
        self.0.lock().ok().and_then(|g| g.clone())
    }
    pub(crate) fn set(&self, dir: PathBuf) {
        if let Ok(mut g) = self.0.lock() {
            *g = Some(dir);
        }
    }
}

/// Permission modes a sub-agent may be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AgentMode {
    /// Ask on first use of anything not allowed by a rule
    Default,
    /// File writes inside the working directories are allowed
    AcceptEdits,
    /// Read-only exploration
    Plan,
    /// Everything allowed except deny rules and protected paths
    BypassPermissions,
    /// Anything that would ask is denied
    DontAsk,
}

impl AgentMode {
    /// The permission mode.
    pub fn permission_mode(self) -> PermissionMode {
        match self {
            AgentMode::Default => PermissionMode::Default,
            AgentMode::AcceptEdits => PermissionMode::AcceptEdits,
            AgentMode::Plan => PermissionMode::Plan,
            AgentMode::BypassPermissions => PermissionMode::BypassPermissions,
            AgentMode::DontAsk => PermissionMode::DontAsk,
        }
    }
}

/// Where a sub-agent works.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// A fresh git worktree on its own branch
    Worktree,
}

/// Model names Agent accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AgentModel {
    /// Balanced
    Sonnet,
    /// Most capable
    Opus,
    /// Fastest
    Haiku,
}

impl AgentModel {
    fn as_str(self) -> &'static str {
        match self {
            AgentModel::Sonnet => "sonnet",
            AgentModel::Opus => "opus",
            AgentModel::Haiku => "haiku",
        }
    }
}

/// Output of Agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentOutput {
    /// The sub-agent's id (the task id when in the background)
    pub agent_id: String,
    /// The agent type
    pub agent_type: String,
    /// How the call ended: the agent ran, was launched in the background, or joined the team
    pub status: AgentStatus,
    /// The final answer (empty when launched in the background)
    pub content: String,
    /// Tokens used
    pub total_tokens: u64,
    /// Tool calls made
    pub tool_uses: u64,
    /// How long it ran
    pub duration_ms: u64,
    /// The background task's output file
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_file: Option<PathBuf>,
    /// The worktree the agent changed (kept for you to review or merge)
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<PathBuf>,
}

/// How an Agent call ended (`status` of [`AgentOutput`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// The agent ran to its answer in the foreground
    Completed,
    /// The agent runs in the background as a task
    AsyncLaunched,
    /// The agent was spawned as a teammate
    TeammateSpawned,
}

/// The Agent tool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Agent;

fn agent_type(input: &AgentInput) -> String {
    input
        .subagent_type
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or("general-purpose")
        .to_owned()
}

/// A new sub-agent id: 128 random bits, so no other session can guess the names of its
/// transcript and plan files or address it with SendMessage.
fn new_agent_id() -> String {
    format!("a{}", tool_core::unguessable_id())
}

/// Where a sub-agent asked to work in `dir` (the model's `cwd`) would work: the canonical
/// directory, every link followed.
fn agent_dir(ctx: &ToolContext, dir: &str) -> PathBuf {
    tool_core::path::canonicalize_lenient(&ctx.resolve_path(dir))
}

/// Whether a sub-agent may work in the canonical directory `dir`, checked like any path a
/// call names: inside the caller's working directories (or a directory an Edit allow rule
/// gives the caller) it goes ahead; elsewhere it asks like a read outside them, suggesting
/// the Edit rule that would allow it — a sub-agent's working directory is where its file
/// tools, its shell and its sandbox may write, so a Read rule does not allow it.
pub(crate) fn check_agent_dir(dir: &Path, what: &str, ctx: &ToolContext) -> PermissionDecision {
    if ctx.is_in_working_dirs(dir) {
        return PermissionDecision::Allow;
    }
    if let PermissionDecision::Deny { reason } = ctx.permissions().check_read_path(dir, ctx) {
        return PermissionDecision::deny(format!("{what}: {reason}"));
    }
    if ctx.permission_mode() != PermissionMode::Plan
        && ctx.permissions().check_write_path(dir, ctx) == PermissionDecision::Allow
    {
        return PermissionDecision::Allow;
    }
    let dirs: Vec<String> = ctx
        .working_dirs()
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    let text = dir.to_string_lossy();
    let trimmed = text.trim_start_matches('/');
    let rule = if trimmed.is_empty() {
        "//**".to_owned()
    } else {
        format!("//{trimmed}/**")
    };
    PermissionDecision::ask(
        format!(
            "{what}: {} is outside this session's working directories ({}); a sub-agent works only where its caller may",
            dir.display(),
            dirs.join(", ")
        ),
        Some(PermissionRule::with_content("Edit", rule)),
    )
}

#[async_trait]
impl TypedTool for Agent {
    type Input = AgentInput;
    type Output = AgentOutput;
    const META: ToolMeta = ToolMeta::new("Agent")
        .aliases(&["Task"])
        .hint("delegate a task to a sub-agent")
        .category(ToolCategory::Agent)
        .concurrency_safe();

    /// Read-only when it only delegates: the sub-agent's tools go through the permission
    /// engine themselves. Not with `cwd`, `mode` or `isolation`, which the permission check
    /// looks at (a worktree is a change to the repository).
    fn is_read_only(&self, input: &AgentInput) -> bool {
        input.cwd.is_none() && input.mode.is_none() && input.isolation.is_none()
    }

    async fn description(&self, _input: Option<&AgentInput>) -> String {
        let mut text = String::from(
            "Launch a new agent to handle complex, multi-step tasks autonomously. The agent works with its own context and tools and returns one final report, which the user does not see: summarise it for them.\n\nAvailable agent types (subagent_type):",
        );
        for a in builtin_agents() {
            text.push_str(&format!("\n- {}: {}", a.name, a.description));
        }
        text.push_str("\nCustom agents from .agent-tools/agents/*.md are available by their name too.\n\nUsage notes:\n- Give the agent a complete, self-contained task: it does not see this conversation. Say exactly what it should return.\n- Launch several agents at once (several calls in one message) when the tasks are independent.\n- Set run_in_background to true to keep working while it runs; you will be notified when it completes.\n- Do not use it for a task you can do with one or two direct tool calls.\n- isolation: \"worktree\" runs the agent in a new git worktree (kept and reported only if it changed something); cwd runs it in another directory; mode gives it a stricter permission mode.\n- With name (and team_name, after TeamCreate) the agent joins your team as a teammate: it runs in the background, talks through SendMessage, and stays until you send it a shutdown_request.");
        text
    }
    async fn validate(&self, input: &AgentInput, ctx: &ToolContext) -> ValidationResult {
        let wants_teammate = input.name.is_some() || input.team_name.is_some();
        if teammate(ctx).is_some() && wants_teammate {
            return ValidationResult::invalid(TEAMMATES_CANNOT_SPAWN);
        }
        if agent_id(ctx).is_some() {
            return ValidationResult::invalid(
                "Sub-agents cannot launch other agents: do the work yourself or return to the caller",
            );
        }
        if input.cwd.is_some() && input.isolation.is_some() {
            return ValidationResult::invalid(CWD_WITH_ISOLATION);
        }
        if let Some(dir) = &input.cwd {
            let path = ctx.resolve_path(dir);
            if !path.is_dir() {
                return ValidationResult::invalid(format!(
                    "cwd: {} is not a directory: give an existing directory for the agent to work in",
                    path.display()
                ));
            }
        }
        if let Some(mode) = input.mode {
            let (asked, own) = (mode.permission_mode(), ctx.permission_mode());
            if asked.allows_more_than(own) {
                let stricter: Vec<&str> = PermissionMode::ALL
                    .iter()
                    .filter(|m| !m.allows_more_than(own))
                    .map(|m| m.as_str())
                    .collect();
                return ValidationResult::invalid(format!(
                    "mode: \"{asked}\" allows more than this session's mode \"{own}\": a sub-agent cannot get more permissions than its caller (modes from strictest: plan, dontAsk, default, acceptEdits, bypassPermissions). Leave mode out, or choose one of {}.",
                    stricter.join(", ")
                ));
            }
        }
        if wants_teammate && let Err(message) = resolve_team(input, ctx) {
            return ValidationResult::invalid(message);
        }
        let wanted = agent_type(input);
        let (agents, errors) = load_agents(ctx);
        if !agents.iter().any(|a| a.name == wanted) {
            let names: Vec<&str> = agents.iter().map(|a| a.name.as_str()).collect();
            let mut message = format!(
                "Agent type '{wanted}' not found. Available agents: {}",
                names.join(", ")
            );
            if !errors.is_empty() {
                message.push_str(&format!(
                    " (agent files with errors: {})",
                    errors.join("; ")
                ));
            }
            return ValidationResult::invalid(message);
        }
        if let Some(rule) = ctx.permissions().match_content("Agent", |content, r| {
            r.behavior == RuleBehavior::Deny && content == wanted
        }) {
            return ValidationResult::invalid(format!(
                "Agent type '{wanted}' has been denied by permission rule 'Agent({wanted})' from {}.",
                rule.source
            ));
        }
        if ctx.services().get::<Arc<dyn AgentRunner>>().is_none() {
            return ValidationResult::invalid(
                "No sub-agent runner is configured: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another endpoint), or set `agent.command` in .agent-tools/settings.json to a command that reads the prompt on standard input.",
            );
        }
        ValidationResult::Valid
    }
    async fn check_permission(&self, input: &AgentInput, ctx: &ToolContext) -> PermissionDecision {
        if input.isolation.is_some() && ctx.permission_mode() == PermissionMode::Plan {
            return PermissionDecision::deny(
                "Plan mode is read-only: isolation: \"worktree\" creates a git worktree and branch, so it waits until the plan is approved. Leave out isolation to explore.",
            );
        }
        if let Some(dir) = &input.cwd {
            let resolved = agent_dir(ctx, dir);
            let decision = check_agent_dir(&resolved, "cwd", ctx);
            input.checked_cwd.set(resolved);
            return decision;
        }
        PermissionDecision::Allow
    }
    async fn call(
        &self,
        input: AgentInput,
        ctx: &ToolContext,
    ) -> Result<ToolResult<AgentOutput>, ToolError> {
        let runner = ctx
            .services()
            .require::<Arc<dyn AgentRunner>>("No sub-agent runner is configured")?;
        let wanted = agent_type(&input);
        let (agents, _) = load_agents(ctx);
        let definition = agents
            .into_iter()
            .find(|a| a.name == wanted)
            .ok_or_else(|| ToolError::respond(format!("Agent type '{wanted}' not found")))?;
        let team = resolve_team(&input, ctx).map_err(ToolError::respond)?;
        let background = input.run_in_background.unwrap_or(false) || team.is_some();
        // Neither `mode` nor a definition's permissionMode widens the caller's mode: both are
        // capped at it, and the sub-agent's context follows the caller's mode from here on
        // (into plan mode too).
        let mode = input
            .mode
            .map(AgentMode::permission_mode)
            .or(definition.permission_mode)
            .map(|m| m.capped_at(ctx.permission_mode()));
        let tools = agent_tools(ctx, &definition, background, team.is_some(), mode);
        let agent_id = match &team {
            Some((t, name)) => format!("{name}@{}", t.name),
            None => new_agent_id(),
        };
        let worktree = match input.isolation {
            Some(Isolation::Worktree) => {
                let (cwd, name) = (ctx.cwd(), format!("agent-{}", safe_component(&agent_id)));
                Some(
                    create_worktree(ctx.original_cwd(), &cwd, &name, "isolation: \"worktree\"")
                        .await?,
                )
            }
            None => None,
        };
        let cwd = agent_cwd(&input, worktree.as_ref(), ctx)?;
        let sub_ctx = subagent_context_in(ctx, &agent_id, mode, &cwd);
        if sub_ctx.cwd() != cwd {
            return Err(ToolError::respond(format!(
                "cwd: {} changed after the permission check (a link was put in its path): call Agent again",
                cwd.display()
            )));
        }
        let request = AgentRequest {
            agent_id: agent_id.clone(),
            definition: definition.clone(),
            prompt: input.prompt.clone(),
            model: input.model.map(|m| m.as_str().to_owned()),
            tools,
            context: sub_ctx,
            cancel: ctx.cancel_token().child_token(),
            history: Vec::new(),
            parent_session_id: ctx.session_id().to_owned(),
        };
        if let Some((team, name)) = team {
            return spawn_teammate(runner, request, team, name, worktree, &input, ctx).await;
        }
        if background {
            return launch_in_background(runner, request, worktree, &input, definition, ctx).await;
        }
        run_in_foreground(runner, request, worktree, definition, ctx).await
    }
}

/// The tools a sub-agent gets: its definition's, and for a teammate also the team's (and
/// ExitPlanMode when it starts in plan mode, to send its plan to the lead).
fn agent_tools(
    ctx: &ToolContext,
    definition: &AgentDefinition,
    background: bool,
    teammate: bool,
    mode: Option<PermissionMode>,
) -> Vec<Arc<dyn Tool>> {
    let all = available_tools(ctx);
    let mut tools = tools_for_agent(definition, &all, background);
    if teammate {
        // Teammates also talk to the team and share its task list; one that starts in
        // plan mode sends its plan to the lead with ExitPlanMode.
        let plans = mode.unwrap_or_else(|| ctx.permission_mode()) == PermissionMode::Plan;
        let extra: Vec<Arc<dyn Tool>> = all
            .iter()
            .filter(|t| TEAMMATE_TOOLS.contains(&t.name()) || (plans && t.name() == "ExitPlanMode"))
            .filter(|t| !tools.iter().any(|have| have.name() == t.name()))
            .filter(|t| !definition.disallowed_tools.iter().any(|d| d == t.name()))
            .cloned()
            .collect();
        tools.extend(extra);
    }
    tools
}

/// The directory the sub-agent works in: its worktree, else `cwd` as the permission check
/// saw it (refused when a link changed it since), else the caller's.
fn agent_cwd(
    input: &AgentInput,
    worktree: Option<&ActiveWorktree>,
    ctx: &ToolContext,
) -> Result<PathBuf, ToolError> {
    let checked = input.checked_cwd.get();
    let cwd = match (worktree, &input.cwd) {
        (Some(wt), _) => wt.path.clone(),
        (None, Some(dir)) => {
            let now = agent_dir(ctx, dir);
            match checked {
                Some(checked) if checked == now => checked,
                Some(checked) => {
                    return Err(ToolError::respond(format!(
                        "cwd: {dir} resolved to {} at the permission check and to {} now (a link changed in between): call Agent again",
                        checked.display(),
                        now.display()
                    )));
                }
                // Called without the execution path's check: hold it to the same rule.
                None => match check_agent_dir(&now, "cwd", ctx) {
                    PermissionDecision::Allow => now,
                    PermissionDecision::Deny { reason }
                    | PermissionDecision::Ask { reason, .. } => {
                        return Err(ToolError::PermissionDenied {
                            tool: "Agent".to_owned(),
                            reason,
                        });
                    }
                },
            }
        }
        (None, None) => ctx.cwd(),
    };
    Ok(cwd)
}

/// Starts the sub-agent as a background task; its worktree is settled when it ends.
async fn launch_in_background(
    runner: Arc<dyn AgentRunner>,
    request: AgentRequest,
    worktree: Option<ActiveWorktree>,
    input: &AgentInput,
    definition: AgentDefinition,
    ctx: &ToolContext,
) -> Result<ToolResult<AgentOutput>, ToolError> {
    let agent_id = request.agent_id.clone();
    let started = Instant::now();
    let spec = TaskSpec {
        kind: TaskKind::LocalAgent,
        description: input.description.clone(),
        run: TaskRun::Future(Box::new(move |token: CancellationToken| {
            Box::pin(async move {
                let request = AgentRequest {
                    cancel: token.clone(),
                    ..request
                };
                let result = runner.run(request).await;
                let trailer = finish_worktree(worktree).await;
                finish_task(result, started, &trailer)
            })
        })),
    };
    let info = ctx.tasks().start(spec).await?;
    let runs = RunStore::for_context(ctx);
    let (task_id, id) = (info.id.clone(), agent_id.clone());
    blocking(move || runs.alias(&task_id, &id)).await?;
    let text = format!(
        "Async agent launched successfully.\nagentId: {} (an internal id: use it with TaskOutput or TaskStop, do not mention it to the user)\nThe agent is working in the background. You will be notified automatically when it completes.\noutput_file: {}\nIf asked, you can check its progress by reading the output file or with TaskOutput.",
        info.id,
        info.output_path.display()
    );
    Ok(ToolResult::ok(AgentOutput {
        agent_id: info.id,
        agent_type: definition.name,
        status: AgentStatus::AsyncLaunched,
        content: String::new(),
        total_tokens: 0,
        tool_uses: 0,
        duration_ms: 0,
        output_file: Some(info.output_path),
        worktree: None,
    })
    .with_text(text))
}

/// Runs the sub-agent to its answer, settles its worktree, and reports its id (to continue
/// it), the kept worktree and its usage.
async fn run_in_foreground(
    runner: Arc<dyn AgentRunner>,
    request: AgentRequest,
    worktree: Option<ActiveWorktree>,
    definition: AgentDefinition,
    ctx: &ToolContext,
) -> Result<ToolResult<AgentOutput>, ToolError> {
    let agent_id = request.agent_id.clone();
    let started = Instant::now();
    let result = runner.run(request).await;
    let worktree_trailer = finish_worktree(worktree).await;
    let outcome = result?;
    let duration_ms = started.elapsed().as_millis() as u64;
    let content = if outcome.output.is_empty() {
        NO_OUTPUT.to_owned()
    } else {
        outcome.output.clone()
    };
    let mut text = content.clone();
    if !definition.one_shot || worktree_trailer.is_some() {
        text.push('\n');
    }
    if !definition.one_shot {
        // SendMessage continues an agent whose runner kept its transcript (the API
        // runner); the trailer offers it only then.
        if RunStore::for_context(ctx).exists(&agent_id) {
            text.push_str(&format!(
                "\nagentId: {agent_id} (use SendMessage with to: '{agent_id}' to continue this agent)"
            ));
        } else {
            text.push_str(&format!("\nagentId: {agent_id}"));
        }
    }
    if let Some((path, branch)) = &worktree_trailer {
        text.push_str(&format!(
            "\nworktreePath: {}\nworktreeBranch: {branch}",
            path.display()
        ));
    }
    if !definition.one_shot {
        text.push_str(&format!(
            "\n<usage>total_tokens: {}\ntool_uses: {}\nduration_ms: {duration_ms}</usage>",
            outcome.total_tokens, outcome.tool_uses
        ));
    }
    Ok(ToolResult::ok(AgentOutput {
        agent_id,
        agent_type: definition.name,
        status: AgentStatus::Completed,
        content,
        total_tokens: outcome.total_tokens,
        tool_uses: outcome.tool_uses,
        duration_ms,
        output_file: None,
        worktree: worktree_trailer.map(|(path, _)| path),
    })
    .with_text(text))
}

/// The error of a teammate that tries to spawn one (the roster is flat).
pub const TEAMMATES_CANNOT_SPAWN: &str = "Teammates cannot spawn other teammates: the team roster is flat. Leave out name and team_name, or ask the team lead to spawn one.";
/// Agent with both `cwd` and `isolation`.
pub const CWD_WITH_ISOLATION: &str = "cwd and isolation cannot be used together: with isolation: \"worktree\" the agent works in a new worktree. Leave out cwd or isolation.";
/// Tools a teammate gets beyond a background agent's.
pub const TEAMMATE_TOOLS: &[&str] = &[
    "SendMessage",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskUpdate",
];

/// The team and name an Agent call spawns a teammate as, `None` for a plain sub-agent.
fn resolve_team(
    input: &AgentInput,
    ctx: &ToolContext,
) -> Result<Option<(TeamFile, String)>, String> {
    if input.name.is_none() && input.team_name.is_none() {
        return Ok(None);
    }
    let store = TeamStore::for_context(ctx);
    let team = match input.team_name.as_deref().map(str::trim) {
        Some(wanted) => {
            let loaded = match store.load(wanted).map_err(|e| e.to_string())? {
                Some(t) => Some(t),
                None => store
                    .load(&team_slug(wanted))
                    .map_err(|e| e.to_string())?,
            };
            let Some(team) = loaded else {
                return Err(format!(
                    "team_name: team \"{wanted}\" does not exist: create it with TeamCreate first"
                ));
            };
            if team.lead_session_id != ctx.session_id() {
                return Err(format!(
                    "team_name: team \"{}\" is led by another session: only its lead spawns teammates into it",
                    team.name
                ));
            }
            team
        }
        None => store.led_by(ctx.session_id()).ok_or_else(|| {
            "name makes the agent a teammate, and this session leads no team: create one with TeamCreate first (or leave out name)".to_owned()
        })?,
    };
    let Some(name) = input
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
    else {
        return Err(
            "name is required to spawn a teammate: it is how SendMessage reaches the teammate"
                .to_owned(),
        );
    };
    if name == TEAM_LEAD_NAME
        || name.len() > 64
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "name: \"{name}\" is not a valid teammate name: use up to 64 letters, digits, \"-\" and \"_\" (and not \"{}\")",
            TEAM_LEAD_NAME
        ));
    }
    if team.member(name).is_some_and(|m| m.is_running()) {
        return Err(format!(
            "name: a teammate named \"{name}\" is already running in team \"{}\": choose another name",
            team.name
        ));
    }
    Ok(Some((team, name.to_owned())))
}

/// Removes an agent's worktree when it changed nothing; otherwise keeps it and returns its
/// path and branch for the result.
async fn finish_worktree(wt: Option<ActiveWorktree>) -> Option<(PathBuf, String)> {
    let wt = wt?;
    if let Ok((0, 0)) = pending_work(&wt).await
        && remove_worktree(&wt).await.is_ok()
    {
        return None;
    }
    // Changes, or a state that cannot be verified: keep it.
    Some((wt.path.clone(), wt.branch.clone()))
}

/// Adds `member` to its team as `name`, refused while a teammate of that name runs.
async fn join_team(
    store: &TeamStore,
    team_name: &str,
    name: &str,
    member: TeamMember,
) -> Result<(), ToolError> {
    let (store, team_name, name) = (store.clone(), team_name.to_owned(), name.to_owned());
    blocking(move || {
        store.update(&team_name, |t| {
            if t.member(&name).is_some_and(TeamMember::is_running) {
                return Err(ToolError::respond(format!(
                    "name: a teammate named \"{name}\" is already running in team \"{team_name}\": choose another name"
                )));
            }
            t.members.retain(|m| m.name != name);
            t.members.push(member);
            Ok(())
        })
    })
    .await
}

/// The background task of a teammate: its run, then its worktree settled, the member marked
/// inactive and the lead told how it ended.
fn teammate_task(
    runner: Arc<dyn AgentRunner>,
    request: AgentRequest,
    worktree: Option<ActiveWorktree>,
    description: String,
    (store, team_name, name): (TeamStore, String, String),
) -> TaskSpec {
    let started = Instant::now();
    TaskSpec {
        kind: TaskKind::LocalAgent,
        description,
        run: TaskRun::Future(Box::new(move |token: CancellationToken| {
            Box::pin(async move {
                let request = AgentRequest {
                    cancel: token.clone(),
                    ..request
                };
                let result = runner.run(request).await;
                let trailer = finish_worktree(worktree).await;
                let notice = match &result {
                    Ok(_) => "finished".to_owned(),
                    Err(ToolError::Cancelled { .. }) => "was stopped".to_owned(),
                    Err(e) => format!("failed: {e}"),
                };
                let _ = blocking(move || {
                    let _ = store.set_active(&team_name, &name, false);
                    store.deliver(
                        &team_name,
                        TEAM_LEAD_NAME,
                        InboxMessage::typed(
                            name.clone(),
                            TeamMessage::TeammateTerminated {
                                message: format!("{name} {notice}"),
                            },
                        ),
                    )
                })
                .await;
                finish_task(result, started, &trailer)
            })
        })),
    }
}

/// Registers a teammate as an active member of its team and runs it in the background; when
/// it ends (its run finished, failed, was stopped, or it approved a shutdown request) it is
/// marked inactive and the lead is told.
async fn spawn_teammate(
    runner: Arc<dyn AgentRunner>,
    request: AgentRequest,
    team: TeamFile,
    name: String,
    worktree: Option<ActiveWorktree>,
    input: &AgentInput,
    ctx: &ToolContext,
) -> Result<ToolResult<AgentOutput>, ToolError> {
    let store = TeamStore::for_context(ctx);
    let team_name = team.name.clone();
    let identity = Arc::new(TeammateIdentity {
        team_name: team_name.clone(),
        name: name.clone(),
        agent_id: request.agent_id.clone(),
        exit: CancellationToken::new(),
        after_plan: match ctx.permission_mode() {
            PermissionMode::Plan => PermissionMode::Default,
            mode => mode,
        },
    });
    request.context.services().insert(Arc::clone(&identity));
    let member = TeamMember {
        agent_id: request.agent_id.clone(),
        name: name.clone(),
        agent_type: request.definition.name.clone(),
        joined_at: now_ms(),
        cwd: request.context.cwd(),
        is_active: true,
        pid: Some(std::process::id()),
        task_id: None,
    };
    join_team(&store, &team_name, &name, member).await?;
    let agent_type = request.definition.name.clone();
    let agent_id = request.agent_id.clone();
    let spec = teammate_task(
        runner,
        request,
        worktree,
        input.description.clone(),
        (store.clone(), team_name.clone(), name.clone()),
    );
    let info = match ctx.tasks().start(spec).await {
        Ok(info) => info,
        Err(e) => {
            let (store, team_name, name) = (store.clone(), team_name.clone(), name.clone());
            let _ = blocking(move || store.set_active(&team_name, &name, false)).await;
            return Err(e);
        }
    };
    {
        let (store, team_name, name, id) =
            (store, team_name.clone(), name.clone(), info.id.clone());
        let _ = blocking(move || {
            store.update(&team_name, |t| {
                if let Some(m) = t.members.iter_mut().find(|m| m.name == name) {
                    m.task_id = Some(id);
                }
                Ok(())
            })
        })
        .await;
    }
    let text = format!(
        "Spawned successfully.\nagent_id: {agent_id}\nname: {name}\nteam_name: {team_name}\nThe agent is now running in the background (task {}) and will receive instructions via its mailbox: use SendMessage to talk to it, and send it a shutdown_request when its work is done.",
        info.id
    );
    Ok(ToolResult::ok(AgentOutput {
        agent_id,
        agent_type,
        status: AgentStatus::TeammateSpawned,
        content: String::new(),
        total_tokens: 0,
        tool_uses: 0,
        duration_ms: 0,
        output_file: Some(info.output_path),
        worktree: None,
    })
    .with_text(text))
}
